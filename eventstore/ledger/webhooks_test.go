package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
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

// webhookReads counts the events of the webhooks stream its store reads
// give out.
type webhookReads struct {
	eventstore.Store
	n atomic.Int64
}

func (s *webhookReads) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]eventstore.RecordedEvent, error) {
	evs, err := s.Store.ReadStream(ctx, stream, from, limit)
	if stream == domain.WebhooksStream {
		s.n.Add(int64(len(evs)))
	}
	return evs, err
}

// The webhooks stream only grows (a deletion or a rotation is one more
// event): every delivery attempt and every endpoint request read it whole,
// so a tenant registering and deleting endpoints in a loop made each
// attempt of every tenant slower without bound. A process reads each of
// its events once; what another process (a replica) appends is read when
// it is next needed.
func TestWebhooksStreamReadOnce(t *testing.T) {
	store := &webhookReads{Store: openStore(t)}
	s := ledger.NewWebhooks(store, ledger.WebhookOptions{AllowPrivate: true})
	replica := ledger.NewWebhooks(store, ledger.WebhookOptions{AllowPrivate: true})
	ctx := t.Context()
	reg := func(s *ledger.Webhooks) ledger.NewWebhook {
		t.Helper()
		w, err := s.Register(ctx, tenantA, domain.WebhookRegistration{URL: "https://hooks.example.com/x", EventTypes: []string{"*"}})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	kept := reg(s)
	for range 200 {
		w := reg(s)
		if err := s.Delete(ctx, tenantA, w.WebhookID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Get(ctx, tenantA.Principal, kept.WebhookID); err != nil { // reads the last deletion
		t.Fatal(err)
	}
	store.n.Store(0)
	for range 10 {
		w, err := s.Endpoint(ctx, kept.WebhookID)
		if err != nil || w == nil || w.Secret != kept.Secret {
			t.Fatalf("endpoint: %+v %v", w, err)
		}
		if _, err := s.Get(ctx, tenantA.Principal, kept.WebhookID); err != nil {
			t.Fatal(err)
		}
	}
	if n := store.n.Load(); n > 0 {
		t.Fatalf("20 reads of an endpoint read %d events of the webhooks stream (of %d), want none: nothing changed", n, 401)
	}

	// Another process's changes are seen by the next read, and its
	// answers are its own copies.
	rot, err := replica.Rotate(ctx, tenantA, kept.WebhookID)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Endpoint(ctx, kept.WebhookID)
	if err != nil || w.Secret != rot.Secret || w.PreviousSecret != kept.Secret {
		t.Fatalf("after a rotation through another process: %+v %v", w, err)
	}
	w.Status = domain.WebhookStatusDisabled
	if again, _ := s.Endpoint(ctx, kept.WebhookID); again.Status != domain.WebhookStatusActive {
		t.Fatalf("a caller's change to an answer reached the next answer: %q", again.Status)
	}
	other := reg(replica)
	if list, _, err := s.List(ctx, tenantA.Principal, "", 20); err != nil || len(list) != 2 || list[0].WebhookID != kept.WebhookID || list[1].WebhookID != other.WebhookID {
		t.Fatalf("list after a registration through another process: %v %v", list, err)
	}
	if err := replica.Delete(ctx, tenantA, kept.WebhookID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, tenantA.Principal, kept.WebhookID); domain.KindOf(err) != domain.KindNotFound {
		t.Fatalf("get after a deletion through another process: %v", err)
	}
	if w, err := s.Endpoint(ctx, kept.WebhookID); err != nil || (w != nil && w.Status == domain.WebhookStatusActive) {
		t.Fatalf("endpoint after a deletion through another process: %+v %v", w, err)
	}
}

// One delivery keeps at most MaxDeliveryAttempts attempts: a redelivery
// past them is refused, 409 delivery_attempts_exhausted, and appends
// nothing. Without a bound, redeliveries in a loop grew one delivery by
// thousands of attempts, each event of it dearer than the last.
func TestRedeliveriesOfOneDeliveryAreBounded(t *testing.T) {
	store := openStore(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	s := ledger.NewWebhooks(store, ledger.WebhookOptions{Now: func() time.Time { return now }, AllowPrivate: true})
	ctx := t.Context()
	w, err := s.Register(ctx, tenantA, domain.WebhookRegistration{URL: "https://hooks.example.com/x", EventTypes: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	id := domain.WebhookDeliveryID(w.WebhookID, "event-1")
	if _, err := s.Schedule(ctx, domain.WebhookDeliveryScheduled{DeliveryID: id, WebhookID: w.WebhookID, Tenant: tenantA.Principal.Tenant,
		EventID: "event-1", EventType: "ContractCreated", HandoffID: "h", Seq: 1, DueAt: now}); err != nil {
		t.Fatal(err)
	}
	attempt := func() {
		t.Helper()
		c, ok, err := s.Claim(ctx, id, "me", time.Minute)
		if err != nil || !ok {
			t.Fatalf("claim: %v %v", ok, err)
		}
		if err := s.Record(ctx, c, domain.WebhookAttemptRecorded{DeliveryID: id, Attempt: c.Attempt, Outcome: domain.WebhookSucceeded, StatusCode: 200, At: now}); err != nil {
			t.Fatal(err)
		}
	}
	attempt()
	for range ledger.MaxDeliveryAttempts - 1 {
		if _, err := s.Redeliver(ctx, tenantA, w.WebhookID, id); err != nil {
			t.Fatal(err)
		}
		attempt()
	}
	_, last, err := s.Delivery(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Redeliver(ctx, tenantA, w.WebhookID, id)
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindConflict || de.Code != "delivery_attempts_exhausted" {
		t.Fatalf("redelivery past %d attempts: %v", ledger.MaxDeliveryAttempts, err)
	}
	if _, after, _ := s.Delivery(ctx, id); after != last {
		t.Fatalf("the refused redelivery appended: revision %d, then %d", last, after)
	}
}

// webhookEvents is the webhooks stream's events about endpoint id, by type
// in order.
func webhookEvents(t *testing.T, store eventstore.Store, id string) []string {
	t.Helper()
	evs, err := eventstore.ReadWholeStream(context.Background(), store, domain.WebhooksStream)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		var e struct {
			WebhookID string `json:"webhookId"`
		}
		if json.Unmarshal(ev.Data, &e) == nil && e.WebhookID == id {
			out = append(out, ev.Type)
		}
	}
	return out
}

// Updates racing deletions and each other through two processes on one
// store (replicas, which do not take turns) each have one outcome, which
// is what the stream records: an update that answers 200 is recorded once,
// before the deletion; one that answers 404 recorded nothing; of two
// enables racing for the tenant's last place, one lands.
func TestWebhookUpdatesRaceAcrossReplicas(t *testing.T) {
	store := openStore(t)
	s1 := ledger.NewWebhooks(store, ledger.WebhookOptions{})
	s2 := ledger.NewWebhooks(store, ledger.WebhookOptions{})
	ctx := t.Context()
	reg := func() string {
		t.Helper()
		w, err := s1.Register(ctx, tenantA, domain.WebhookRegistration{URL: "https://hooks.example.com/x", EventTypes: []string{"*"}})
		if err != nil {
			t.Fatal(err)
		}
		return w.WebhookID
	}
	yes, no := true, false
	for range 20 {
		id := reg()
		var wg sync.WaitGroup
		var uerr, derr error
		wg.Add(2)
		go func() { defer wg.Done(); _, uerr = s1.Update(ctx, tenantA, id, domain.WebhookUpdate{Disabled: &yes}) }()
		go func() { defer wg.Done(); derr = s2.Delete(ctx, tenantA, id) }()
		wg.Wait()
		got := webhookEvents(t, store, id)
		switch {
		case derr != nil:
			t.Fatalf("delete: %v", derr)
		case uerr == nil && !slices.Equal(got, []string{domain.EventWebhookRegistered, domain.EventWebhookUpdated, domain.EventWebhookDeleted}):
			t.Fatalf("the update answered ok; the stream has %v", got)
		case uerr != nil && (domain.KindOf(uerr) != domain.KindNotFound || !slices.Equal(got, []string{domain.EventWebhookRegistered, domain.EventWebhookDeleted})):
			t.Fatalf("the update answered %v; the stream has %v", uerr, got)
		}
	}
	// Two updates at once: both land, one after the other, and each
	// answers the endpoint as its own event left it.
	id := reg()
	urls := []string{"https://hooks.example.com/one", "https://hooks.example.com/two"}
	answers := make([]*domain.Webhook, 2)
	var wg sync.WaitGroup
	for i, s := range []*ledger.Webhooks{s1, s2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := s.Update(ctx, tenantA, id, domain.WebhookUpdate{URL: &urls[i]})
			if err != nil {
				t.Error(err)
			}
			answers[i] = w
		}()
	}
	wg.Wait()
	if got := webhookEvents(t, store, id); len(got) != 3 {
		t.Fatalf("two updates: %v", got)
	}
	for i, w := range answers {
		if w == nil || w.URL != urls[i] {
			t.Fatalf("update %d answered %+v", i, w)
		}
	}
	w1, _ := s1.Get(ctx, tenantA.Principal, id)
	w2, _ := s2.Get(ctx, tenantA.Principal, id)
	if w1.URL != w2.URL {
		t.Fatalf("the replicas disagree: %q and %q", w1.URL, w2.URL)
	}
	// Disabled endpoints count toward the tenant's bound: with 50, two
	// of them disabled, a registration is refused; enabling adds none.
	var off []string
	for i := 1; i < ledger.MaxWebhooksPerTenant; i++ {
		id := reg()
		if i <= 2 {
			if _, err := s1.Update(ctx, tenantA, id, domain.WebhookUpdate{Disabled: &yes}); err != nil {
				t.Fatal(err)
			}
			off = append(off, id)
		}
	}
	var de *domain.Error
	if _, err := s2.Register(ctx, tenantA, domain.WebhookRegistration{URL: "https://hooks.example.com/y", EventTypes: []string{"*"}}); !errors.As(err, &de) || de.Code != "too_many_webhooks" {
		t.Fatalf("a registration past the bound, two endpoints disabled: %v", err)
	}
	if _, err := s2.Update(ctx, tenantA, off[1], domain.WebhookUpdate{Disabled: &no}); err != nil {
		t.Fatal(err)
	}
	// A refused update appends nothing.
	before := len(webhookEvents(t, store, off[0])) + len(webhookEvents(t, store, off[1]))
	bad := "ftp://hooks.example.com/"
	if _, err := s1.Update(ctx, tenantA, off[0], domain.WebhookUpdate{URL: &bad}); domain.KindOf(err) != domain.KindInvalid {
		t.Fatalf("a bad URL: %v", err)
	}
	if _, err := s1.Update(ctx, tenantB, off[0], domain.WebhookUpdate{Disabled: &no}); domain.KindOf(err) != domain.KindNotFound {
		t.Fatalf("another tenant's: %v", err)
	}
	if after := len(webhookEvents(t, store, off[0])) + len(webhookEvents(t, store, off[1])); after != before {
		t.Fatalf("refused updates appended %d events", after-before)
	}
}
