package projections

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
)

// slowHead is a store whose Head answers only when its context ends (a
// KurrentDB that does not answer).
type slowHead struct{ eventstore.Store }

func (s slowHead) Head(ctx context.Context) (eventstore.Position, error) {
	<-ctx.Done()
	return eventstore.Start, ctx.Err()
}

// WaitForHead's bound covers reading the head: a store that does not
// answer holds the caller for the timeout, not for the request's life.
func TestWaitForHeadBoundsTheHeadRead(t *testing.T) {
	dir := t.TempDir()
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r, err := Open(filepath.Join(dir, "rm.db"), slowHead{store}, NewHandoffs(), Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	outer, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = r.WaitForHead(outer, 100*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || outer.Err() != nil {
		t.Fatalf("WaitForHead returned %v; the caller's context: %v", err, outer.Err())
	}
}
