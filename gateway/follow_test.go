package gateway

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
)

// The follower catches up on what is stored, then follows new events; an
// event an applier cannot decode is reported and skipped, and the feed
// goes on past it. When the store closes under it, Run says so.
func TestFollowerCatchesUpFollowsAndSkipsBadEvents(t *testing.T) {
	store, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			store.Close()
		}
	}()
	ctx := context.Background()
	budget := func(tenant string, daily float64) eventstore.EventData {
		b, _ := json.Marshal(BudgetSet{Tenant: tenant, Limits: Limits{DailyUSD: &daily}})
		return eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: EventBudgetSet, Data: b}
	}
	if _, err := store.Append(ctx, BudgetStream("a"), eventstore.NoStream(), budget("a", 1)); err != nil {
		t.Fatal(err)
	}
	b := NewBudgets(nil)
	var bad []uuid.UUID
	f := &Follower{Store: store, Appliers: []Applier{b}, OnError: func(ev eventstore.RecordedEvent, err error) { bad = append(bad, ev.ID) }}
	if err := f.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if l := b.Status("a").Limits.DailyUSD; l == nil || *l != 1 {
		t.Fatalf("after catching up: %+v", b.Status("a"))
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(runCtx) }()
	broken := eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: EventBudgetSet, Data: []byte(`{"tenant": 5}`)}
	if _, err := store.Append(ctx, BudgetStream("b"), eventstore.NoStream(), broken); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(ctx, BudgetStream("c"), eventstore.NoStream(), budget("c", 3)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.Status("c").Limits.DailyUSD == nil {
		if time.Now().After(deadline) {
			t.Fatal("the follower did not apply the event after the bad one")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(bad) != 1 || bad[0] != broken.ID {
		t.Fatalf("reported bad events %v, want the broken one", bad)
	}
	// The store closing under a live follower is an error, not a quiet stop.
	store.Close()
	closed = true
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Run returned nil when its feed closed under it")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return when the store closed")
	}
	cancel()
}

// An event delivered without readable metadata (written around Baton) is
// applied like any other: a usage event's spending is in its data, and a
// budget must not let calls through because the metadata could not be read.
func TestUnreadableUsageStillCounts(t *testing.T) {
	b := NewBudgets(nil)
	one, spent, call := 1.0, 0.9, 0.5
	set, _ := json.Marshal(BudgetSet{Tenant: "a", Limits: Limits{DailyUSD: &one}})
	usage, _ := json.Marshal(UsageRecord{Tenant: "a", Model: "x:y", CostUSD: &spent, Outcome: "ok"})
	f := &Follower{Appliers: []Applier{b}, OnError: func(ev eventstore.RecordedEvent, err error) { t.Errorf("%s: %v", ev.Type, err) }}
	f.apply([]eventstore.RecordedEvent{
		{StreamID: BudgetStream("a"), EventData: eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: EventBudgetSet, Data: set}, Unreadable: "metadata: not JSON"},
		{StreamID: UsageStream("a"), EventData: eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: EventUsageRecorded, Data: usage}, Unreadable: "metadata: not JSON"},
	})
	if _, err := b.Reserve(t.Context(), "a", "x:y", &call); err == nil {
		t.Fatal("a $0.50 call got through a $1 budget with $0.90 spent by an event whose metadata was unreadable")
	}
}

// openStore opens an embedded store in a temporary folder, closed when the
// test ends.
func openStore(t testing.TB) *bolt.Store {
	t.Helper()
	store, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}
