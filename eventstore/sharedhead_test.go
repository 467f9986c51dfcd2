package eventstore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// gatedHead is a store whose Head counts its calls and answers only once
// its gate is open.
type gatedHead struct {
	Store // nil: only Head is called
	gate  chan struct{}
	calls atomic.Int32
}

func (s *gatedHead) Head(ctx context.Context) (Position, error) {
	n := s.calls.Add(1)
	select {
	case <-s.gate:
	case <-ctx.Done():
		return Start, ctx.Err()
	}
	return Position{Commit: uint64(n), Prepare: uint64(n)}, nil
}

// Callers at once share the store's head reads: while one read is in
// flight, every caller that comes waits for one more read, begun after it
// came, not for a read each; a caller that comes later begins its own.
func TestSharedHeadSharesTheReads(t *testing.T) {
	store := &gatedHead{gate: make(chan struct{})}
	heads := &SharedHead{Store: store}
	const callers = 20
	type answer struct {
		pos Position
		err error
	}
	answers := make(chan answer, callers)
	call := func() {
		p, err := heads.Head(context.Background(), time.Minute)
		answers <- answer{p, err}
	}
	go call() // begins the first read, held at the gate
	for store.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for range callers - 1 {
		go call()
	}
	queued := func() int {
		heads.mu.Lock()
		defer heads.mu.Unlock()
		if heads.next == nil {
			return 0
		}
		return heads.next.callers
	}
	for queued() != callers-1 {
		time.Sleep(time.Millisecond)
	}
	close(store.gate)
	got := map[uint64]int{}
	for range callers {
		a := <-answers
		if a.err != nil {
			t.Fatal(a.err)
		}
		got[a.pos.Commit]++
	}
	if n := store.calls.Load(); n != 2 || got[1] != 1 || got[2] != callers-1 {
		t.Fatalf("%d callers: %d reads, answers by read %v; want 2 reads, the first caller's and one for the others", callers, n, got)
	}
	if p, err := heads.Head(context.Background(), time.Minute); err != nil || p.Commit != 3 {
		t.Fatalf("a later caller: %+v %v, want a read of its own", p, err)
	}
}

// A caller that gives up (its context, or its timeout) is answered at once;
// the read it began goes on for the others.
func TestSharedHeadCallerGivesUp(t *testing.T) {
	store := &gatedHead{gate: make(chan struct{})}
	heads := &SharedHead{Store: store}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := heads.Head(ctx, time.Minute)
		done <- err
	}()
	for store.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("a caller that gave up: %v", err)
	}
	other := make(chan error, 1)
	go func() {
		_, err := heads.Head(context.Background(), time.Minute)
		other <- err
	}()
	close(store.gate)
	if err := <-other; err != nil {
		t.Fatal(err)
	}
}
