package http

import (
	"context"
	"errors"
	"fmt"
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

// failingStore refuses every append with err.
type failingStore struct {
	eventstore.Store
	err error
}

func (f failingStore) Append(context.Context, string, eventstore.ExpectedRevision, ...eventstore.EventData) (eventstore.AppendResult, error) {
	return eventstore.AppendResult{}, f.err
}

// A usage event that certainly was not appended will never come back
// through the follower: what settling noted for it is dropped, so the set
// of events waiting for the follower does not grow with failures. After an
// append of unknown outcome the note stays: the event may still land, and
// the follower must not count it a second time.
func TestFailedUsageAppendIsForgotten(t *testing.T) {
	store, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, c := range []struct {
		err     error
		waiting int
	}{
		{errors.New("disk on fire"), 0},
		{fmt.Errorf("%w: connection reset", eventstore.ErrUnavailable), 3},
		{context.DeadlineExceeded, 3},
	} {
		budgets := gateway.NewBudgets(nil)
		s := NewServer(Config{Store: failingStore{store, c.err}, Budgets: budgets, UsageLinger: time.Millisecond})
		at := budgets.Now()
		for range 3 {
			hold, err := budgets.Reserve(context.Background(), "t", "m", nil)
			if err != nil {
				t.Fatal(err)
			}
			id, cost := uuid.New(), 0.5
			hold.Settle(&cost, id, at)
			s.usage.Record(id, gateway.UsageRecord{Tenant: "t", Outcome: "ok"})
		}
		s.Close() // drains the writer: every append has failed by now
		if n := budgets.Waiting(); n != c.waiting {
			t.Errorf("append error %v: %d settled events wait for the follower, want %d", c.err, n, c.waiting)
		}
		if got := budgets.Status("t"); got.Day == at.Format("2006-01-02") && got.DaySpent != 1.5 {
			t.Errorf("append error %v: spending %v, want 1.5 (the calls stay counted)", c.err, got.DaySpent)
		}
	}
}
