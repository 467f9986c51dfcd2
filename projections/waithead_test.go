package projections

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/domain"
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

// StreamChanged wakes the reads waiting on one stream when an event of that
// stream is applied, not when another's is; the reads of one stream share
// its channel, and a watch given back leaves nothing behind.
func TestStreamChangedWakesThatStreamOnly(t *testing.T) {
	_, store := tempStore(t)
	ctx := context.Background()
	r, err := Open(filepath.Join(t.TempDir(), "rm.db"), store, NewHandoffs(), Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	mine, unwatchMine := r.StreamChanged(domain.StreamID("h1"))
	keys, unwatchKeys := r.StreamChanged(domain.KeysStream)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch, unwatch := r.StreamChanged(domain.StreamID("h1"))
			if ch != mine {
				t.Error("two reads of one stream got different channels")
			}
			unwatch()
		}()
	}
	wg.Wait()
	_, ev, _ := domain.NewKey("a", false, "")
	b, _ := json.Marshal(ev)
	if _, err := store.Append(ctx, domain.KeysStream, eventstore.NoStream(), eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: domain.EventKeyCreated, Data: b}); err != nil {
		t.Fatal(err)
	}
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-keys:
	default:
		t.Fatal("the keys stream's event did not wake its reads")
	}
	select {
	case <-mine:
		t.Fatal("another stream's event woke a handoff's reads")
	default:
	}
	unwatchKeys()
	unwatchMine()
	r.watchMu.Lock()
	defer r.watchMu.Unlock()
	if len(r.watches) != 0 {
		t.Fatalf("watches left behind: %v", r.watches)
	}
}
