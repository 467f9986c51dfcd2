package ledger

import (
	"context"
	"sync"
)

// turns lets the commands of one handoff in this process take turns:
// run at once, all but one would lose the append race and decide again,
// each loss a whole load, until the conflict retries ran out (200
// concurrent proofs left half of them "busy"). Other processes on the same
// store still race it; the retries are for them.
type turns struct {
	mu    sync.Mutex
	slots map[string]*turn
}

type turn struct {
	ch      chan struct{}
	waiting int // holders and waiters: the slot goes when none is left
}

// take waits for key's turn; the returned func gives it back.
func (t *turns) take(ctx context.Context, key string) (func(), error) {
	t.mu.Lock()
	if t.slots == nil {
		t.slots = map[string]*turn{}
	}
	s := t.slots[key]
	if s == nil {
		s = &turn{ch: make(chan struct{}, 1)}
		t.slots[key] = s
	}
	s.waiting++
	t.mu.Unlock()
	select {
	case s.ch <- struct{}{}:
		return func() { <-s.ch; t.leave(key, s) }, nil
	case <-ctx.Done():
		t.leave(key, s)
		return nil, ctx.Err()
	}
}

func (t *turns) leave(key string, s *turn) {
	t.mu.Lock()
	if s.waiting--; s.waiting == 0 {
		delete(t.slots, key)
	}
	t.mu.Unlock()
}
