package eventstore

import (
	"context"
	"sync"
	"time"
)

// SharedHead reads a store's head for many callers at once: each waits for
// a read that began after it was called (the one in flight may miss what
// was just committed), so however many call, one read is in flight and one
// more is due. What the callers without a key reach (authentication of a
// key not known yet, the health check) read the head so: one read each made
// a flood of them as many KurrentDB reads of $all.
type SharedHead struct {
	Store Store

	mu       sync.Mutex
	inFlight bool
	next     *headRead // what the callers since the read in flight began wait for
}

// headRead is one read of the head; done is closed once pos and err are
// set.
type headRead struct {
	done    chan struct{}
	pos     Position
	err     error
	callers int
}

// Head returns the store's head as a read begun after the call read it,
// within timeout (the read's own bound too: a caller that gives up does
// not cut the read the others wait for).
func (s *SharedHead) Head(ctx context.Context, timeout time.Duration) (Position, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	h := s.join(timeout)
	select {
	case <-h.done:
		return h.pos, h.err
	case <-ctx.Done():
		return Start, ctx.Err()
	}
}

// Waiting is how many callers wait for the read due after the one in
// flight.
func (s *SharedHead) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == nil {
		return 0
	}
	return s.next.callers
}

// join returns the read that answers a caller arriving now: the next one,
// begun now when none is in flight.
func (s *SharedHead) join(timeout time.Duration) *headRead {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == nil {
		s.next = &headRead{done: make(chan struct{})}
	}
	h := s.next
	h.callers++
	if !s.inFlight {
		s.inFlight, s.next = true, nil
		go s.read(h, timeout)
	}
	return h
}

// read reads the head for h, then for the callers that came meanwhile.
func (s *SharedHead) read(h *headRead, timeout time.Duration) {
	for h != nil {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		h.pos, h.err = s.Store.Head(ctx)
		cancel()
		close(h.done)
		s.mu.Lock()
		h, s.next = s.next, nil
		s.inFlight = h != nil
		s.mu.Unlock()
	}
}
