package ledger_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore/ledger"
)

func scheduledDelivery(t *testing.T, s *ledger.Webhooks, now time.Time) string {
	t.Helper()
	id := domain.WebhookDeliveryID("wh_0123456789abcdef", "event-1")
	e := domain.WebhookDeliveryScheduled{DeliveryID: id, WebhookID: "wh_0123456789abcdef", Tenant: "a", EventID: "event-1",
		EventType: "ContractCreated", HandoffID: "h", Seq: 1, DueAt: now}
	for i := range 3 {
		ok, err := s.Schedule(context.Background(), e)
		if err != nil || ok != (i == 0) {
			t.Fatalf("schedule %d: %v %v; want only the first to append", i, ok, err)
		}
	}
	return id
}

// Of many claimants racing for a due attempt, exactly one wins it.
func TestWebhookClaimHasOneWinner(t *testing.T) {
	store := openStore(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	s := ledger.NewWebhooks(store, ledger.WebhookOptions{Now: func() time.Time { return now }})
	id := scheduledDelivery(t, s, now)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := s.Claim(context.Background(), id, "claimant", time.Minute)
			if err != nil {
				t.Errorf("claimant %d: %v", i, err)
			}
			if ok {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d claims won, want 1", wins.Load())
	}
}

// A claim whose outcome never comes (its replica died) may be claimed
// again once its lease has run out, and not before; the late outcome of
// the first attempt is still recorded, without undoing the second.
func TestWebhookClaimLeaseRunsOut(t *testing.T) {
	store := openStore(t)
	var mu sync.Mutex
	now := time.Now().UTC().Truncate(time.Microsecond)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s := ledger.NewWebhooks(store, ledger.WebhookOptions{Now: clock})
	ctx := context.Background()
	id := scheduledDelivery(t, s, now)
	first, ok, err := s.Claim(ctx, id, "replica-1", 30*time.Second)
	if err != nil || !ok || first.Attempt != 1 {
		t.Fatalf("first claim: %+v %v %v", first, ok, err)
	}
	advance(29 * time.Second)
	if _, ok, _ := s.Claim(ctx, id, "replica-2", 30*time.Second); ok {
		t.Fatal("claimed again within the lease")
	}
	advance(time.Second)
	second, ok, err := s.Claim(ctx, id, "replica-2", 30*time.Second)
	if err != nil || !ok || second.Attempt != 2 {
		t.Fatalf("claim after the lease: %+v %v %v", second, ok, err)
	}
	if err := s.Record(ctx, second, domain.WebhookAttemptRecorded{Outcome: domain.WebhookSucceeded, StatusCode: 200, At: clock()}); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, first, domain.WebhookAttemptRecorded{Outcome: domain.WebhookRetrying, StatusCode: 500, At: clock()}); err != nil {
		t.Fatal(err)
	}
	d, _, err := s.Delivery(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != domain.DeliverySucceeded || len(d.Attempts) != 2 || d.Attempts[0].StatusCode != 500 || d.Attempts[1].Outcome != domain.WebhookSucceeded {
		t.Fatalf("delivery %+v", d)
	}
	if _, ok, _ := s.Claim(ctx, id, "replica-3", time.Minute); ok {
		t.Fatal("a succeeded delivery was claimed")
	}
}
