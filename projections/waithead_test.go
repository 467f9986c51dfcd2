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
	bbolt "go.etcd.io/bbolt"

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

// WaitForKeys waits while a key event is not applied, not while other
// writes are; a file that holds keys but not the keys stream's revision
// (written before it was kept) waits for the head, as authentication did.
func TestWaitForKeysWaitsOnlyForKeyEvents(t *testing.T) {
	dir := t.TempDir()
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r, err := Open(filepath.Join(dir, "rm.db"), store, NewHandoffs(), Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	appendKey := func() {
		_, ev, err := domain.NewKey("a", false, "")
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(ev)
		if _, err := store.Append(context.Background(), domain.KeysStream, eventstore.NoStream(), eventstore.NewEvent(domain.EventKeyCreated, data, eventstore.Metadata{})); err != nil {
			t.Fatal(err)
		}
	}
	catchUp := func() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { r.Run(ctx); close(done) }()
		if err := r.WaitForHead(context.Background(), 5*time.Second); err != nil {
			t.Fatal(err)
		}
		cancel()
		<-done
	}
	// No key event at all: nothing to wait for.
	if err := r.WaitForKeys(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
	appendKey()
	// One not applied: waited for, to the bound.
	if err := r.WaitForKeys(context.Background(), 100*time.Millisecond); !errors.Is(err, ErrBehind) {
		t.Fatalf("a key event not applied: %v", err)
	}
	catchUp()
	if _, err := store.Append(context.Background(), "other-1", eventstore.NoStream(), eventstore.NewEvent("Other", json.RawMessage(`{}`), eventstore.Metadata{})); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := r.WaitForKeys(context.Background(), time.Second); err != nil || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("behind on another stream only: %v after %v", err, time.Since(start))
	}
	// A file without the revision: the head, as before.
	if err := r.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketKeysMeta).Delete(keyNext) }); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitForKeys(context.Background(), 100*time.Millisecond); !errors.Is(err, ErrBehind) {
		t.Fatalf("a file without the revision: %v", err)
	}
}
