package projections

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
)

// Batches no projector wants move the position without a commit; the
// checkpoint catches up with the next commit, Flush or Close, and a reopen
// resumes from it.
func TestUnwantedBatchesMoveThePositionOnly(t *testing.T) {
	dir := t.TempDir()
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	appendOne := func(stream, typ string, data any) eventstore.Position {
		b, _ := json.Marshal(data)
		res, err := store.Append(ctx, stream, eventstore.NoStream(), eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: typ, Data: b})
		if err != nil {
			t.Fatal(err)
		}
		return res.Position
	}
	path := filepath.Join(dir, "readmodel.db")
	r, err := Open(path, store, NewHandoffs(), Keys{})
	if err != nil {
		t.Fatal(err)
	}
	p1 := appendOne("usage-a", "UsageRecorded", map[string]any{"tenant": "a"})
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Checkpoint() != p1 {
		t.Fatalf("position %+v, want %+v", r.Checkpoint(), p1)
	}
	_, ev, _ := domain.NewKey("a", false, "")
	p2 := appendOne(domain.KeysStream, domain.EventKeyCreated, ev)
	p3 := appendOne("catalog", "ModelHealthChecked", map[string]any{})
	// Applied one by one (as a live subscription might deliver them).
	for _, p := range []eventstore.Position{p2, p3} {
		evs, err := store.ReadAll(ctx, r.Checkpoint(), 1)
		if err != nil || len(evs) != 1 || evs[0].Position != p {
			t.Fatalf("%v %v", evs, err)
		}
		if err := r.apply(evs); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := r.KeyCount(); err != nil || n != 1 || r.Checkpoint() != p3 || !r.dirty.Load() {
		t.Fatalf("keys %d %v, position %+v, dirty %v", n, err, r.Checkpoint(), r.dirty.Load())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r, err = Open(path, store, NewHandoffs(), Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Checkpoint() != p3 {
		t.Fatalf("reopened at %+v, want %+v", r.Checkpoint(), p3)
	}
}
