package http

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/gateway"
)

// The server's own usage writer takes the configured window, and the
// gateway's default when none is set.
func TestUsageLingerReachesTheWriter(t *testing.T) {
	store, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, c := range []struct{ set, want time.Duration }{{0, gateway.DefaultUsageLinger}, {3 * time.Millisecond, 3 * time.Millisecond}} {
		s := NewServer(Config{Store: store, UsageLinger: c.set})
		if got := s.usage.Linger; got != c.want {
			t.Errorf("UsageLinger %v: the writer lingers %v, want %v", c.set, got, c.want)
		}
		s.Close()
	}
}

// failingStore refuses every append.
type failingStore struct{ eventstore.Store }

func (failingStore) Append(context.Context, string, eventstore.ExpectedRevision, ...eventstore.EventData) (eventstore.AppendResult, error) {
	return eventstore.AppendResult{}, errors.New("disk on fire")
}

// A usage event that could not be appended will never come back through the
// follower: what settling noted for it is dropped, so the set of events
// waiting for the follower does not grow with failures.
func TestFailedUsageAppendIsForgotten(t *testing.T) {
	store, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	budgets := gateway.NewBudgets(nil)
	s := NewServer(Config{Store: failingStore{store}, Budgets: budgets, UsageLinger: time.Millisecond})
	for range 3 {
		hold, err := budgets.Reserve("t", "m", nil)
		if err != nil {
			t.Fatal(err)
		}
		id, cost := uuid.New(), 0.5
		hold.Settle(&cost, id, budgets.Now())
		s.usage.Record(id, gateway.UsageRecord{Tenant: "t", Outcome: "ok"})
	}
	s.Close() // drains the writer: every append has failed by now
	if n := budgets.Waiting(); n != 0 {
		t.Fatalf("%d settled events still wait for a follower after their appends failed", n)
	}
	if got := budgets.Status("t").DaySpent; got != 1.5 {
		t.Fatalf("spending %v, want 1.5 (the calls stay counted)", got)
	}
}
