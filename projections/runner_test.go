package projections

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	bbolt "go.etcd.io/bbolt"

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

// At start, quarantined handoffs are folded again from the store: one that
// folds now (here: quarantined by hand, as an older Baton that did not know
// an event type would have) is rebuilt and released; one that still does
// not fold stays quarantined.
func TestRecheckReleasesHandoffsThatFoldNow(t *testing.T) {
	dir := t.TempDir()
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	put := func(stream string, evs ...eventstore.RecordedEvent) {
		for _, ev := range evs {
			if ev.ID == uuid.Nil {
				ev.ID = uuid.Must(uuid.NewV7())
			}
			exp := eventstore.Revision(ev.Revision - 1)
			if ev.Revision == 0 {
				exp = eventstore.NoStream()
			}
			if _, err := store.Append(ctx, stream, exp, ev.EventData); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, b := handoffEvents(t, "A", "acme"), handoffEvents(t, "B", "beta")
	put(domain.StreamID("A"), a[:3]...)
	bad := a[4] // ProofReviewed: not allowed right after the contract
	bad.EventData.ID, bad.Revision = uuid.Must(uuid.NewV7()), 1
	put(domain.StreamID("B"), b[0], bad)

	h := NewHandoffs()
	var logged []string
	h.OnQuarantine = func(id string, q Quarantine) { logged = append(logged, id) }
	r, err := Open(filepath.Join(dir, "readmodel.db"), store, h, Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if _, n, _ := r.Quarantined(0); n != 1 || len(logged) != 1 || logged[0] != "B" {
		t.Fatalf("%d quarantined, logged %v", n, logged)
	}
	want, _, _, err := r.Contract("A")
	if err != nil {
		t.Fatal(err)
	}
	q, _ := json.Marshal(Quarantine{Seq: 2, Type: "Unknown", Reason: "an older version did not know it"})
	if err := r.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketQuarantine).Put([]byte("A"), q) }); err != nil {
		t.Fatal(err)
	}
	released, err := r.Recheck(ctx, h)
	if err != nil || len(released) != 1 || released[0] != "A" {
		t.Fatalf("released %v, %v", released, err)
	}
	got, _, _, err := r.Contract("A")
	if err != nil || string(got) != string(want) {
		t.Fatalf("A after the recheck: %v\n%s\nwant %s", err, got, want)
	}
	if entries, err := r.Ledger("A"); err != nil || len(entries) != 3 {
		t.Fatalf("A's ledger after the recheck: %d entries, %v", len(entries), err)
	}
	var qe *QuarantinedError
	if _, _, _, err := r.Contract("B"); !errors.As(err, &qe) || qe.Seq != 2 {
		t.Fatalf("B after the recheck: %v", err)
	}
}
