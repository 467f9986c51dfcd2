package http

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
)

// gatedHead is a store whose Head counts its calls and answers only once
// its gate is open.
type gatedHead struct {
	eventstore.Store
	gate  chan struct{}
	calls atomic.Int32
}

func (s *gatedHead) Head(ctx context.Context) (eventstore.Position, error) {
	s.calls.Add(1)
	select {
	case <-s.gate:
	case <-ctx.Done():
		return eventstore.Start, ctx.Err()
	}
	return s.Store.Head(ctx)
}

// Health checks at once share the store's head reads: /healthz takes no
// key, and a read each made a flood of checks as many store round trips.
// While one read is in flight, the checks that come wait for one more.
func TestHealthSharesTheHeadReads(t *testing.T) {
	store, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	gated := &gatedHead{Store: store, gate: make(chan struct{})}
	s := NewServer(Config{Store: gated})
	defer s.Close()
	const checks = 20
	statuses := make(chan int, checks)
	check := func() {
		w := httptest.NewRecorder()
		s.health(w, httptest.NewRequest("GET", "/healthz", nil))
		statuses <- w.Code
	}
	go check()
	for gated.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for range checks - 1 {
		go check()
	}
	for s.heads.Waiting() != checks-1 && gated.calls.Load() != checks {
		time.Sleep(time.Millisecond)
	}
	if n := gated.calls.Load(); n != 1 {
		t.Fatalf("%d checks at once made %d reads of the head while one was in flight, want 1", checks, n)
	}
	close(gated.gate)
	for range checks {
		if code := <-statuses; code != http.StatusOK {
			t.Fatalf("a check: %d", code)
		}
	}
	if n := gated.calls.Load(); n != 2 {
		t.Fatalf("%d checks: %d reads of the head, want 2", checks, n)
	}
}
