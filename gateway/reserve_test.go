package gateway

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
)

// replica is one Budgets on a shared store with its follower, as `serve`
// wires them.
type replica struct {
	*Budgets
	f *Follower
}

func newReplica(t *testing.T, store eventstore.Store, now func() time.Time) replica {
	t.Helper()
	b := NewBudgets(now)
	b.UseStore(store, func(err error) { t.Errorf("store write: %v", err) })
	r := replica{b, &Follower{Store: store, Appliers: []Applier{b}, OnError: func(ev eventstore.RecordedEvent, err error) { t.Errorf("%s: %v", ev.Type, err) }}}
	r.catchUp(t)
	return r
}

func (r replica) catchUp(t *testing.T) {
	t.Helper()
	if err := r.f.CatchUp(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// raceCalls makes n concurrent calls of worst case worst for tenant across
// the replicas in turn; each call that passes settles at its worst case
// through w. It returns how many passed on each replica, and the errors
// other than refusals.
func raceCalls(replicas []*Budgets, w *UsageWriter, tenant string, n int, worst float64) (passed []int, errs []error) {
	passed = make([]int, len(replicas))
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for i := range n {
		b := replicas[i%len(replicas)]
		wg.Go(func() {
			<-start
			hold, err := b.Reserve(context.Background(), tenant, "m", &worst)
			if err != nil {
				if !errors.Is(err, ErrBudget) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
				return
			}
			id, at := hold.UsageID(), b.Now()
			hold.Settle(&worst, id, at)
			w.Record(id, UsageRecord{Tenant: tenant, Model: "m", CostUSD: &worst, Outcome: "ok", At: at})
			mu.Lock()
			passed[i%len(replicas)]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return passed, errs
}

// 100 concurrent calls through three Budgets on one bolt store, against a
// budget that covers 10 of them: exactly 10 pass, and once their usage
// events are in, every replica counts 10 calls spent and nothing held.
func TestBudgetSharedHoldsRaceOnOneStore(t *testing.T) {
	store := openStore(t)
	const worst, calls, fit = 0.25, 100, 10
	limit := worst * fit
	var reps []replica
	var books []*Budgets
	for range 3 {
		r := newReplica(t, store, nil)
		reps, books = append(reps, r), append(books, r.Budgets)
	}
	if err := reps[0].SetBudget(t.Context(), store, BudgetSet{Tenant: "t", Limits: Limits{DailyUSD: &limit}}, eventstore.Metadata{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range reps[1:] {
		r.catchUp(t)
	}
	w := NewUsageWriter(store, func(_ uuid.UUID, _ UsageRecord, err error) { t.Error(err) })
	passed, errs := raceCalls(books, w, "t", calls, worst)
	w.Close()
	for _, err := range errs {
		t.Error(err)
	}
	total := passed[0] + passed[1] + passed[2]
	t.Logf("%d of %d calls passed a budget covering %d (per replica %v)", total, calls, fit, passed)
	if total != fit {
		t.Fatalf("%d calls passed, want %d", total, fit)
	}
	for i, r := range reps {
		r.catchUp(t)
		if s := r.Status("t"); s.DaySpent != limit || s.ReservedUSD != 0 {
			t.Errorf("replica %d: %+v, want %v spent and nothing held", i+1, s, limit)
		}
	}
	late := newReplica(t, store, nil) // starts after it all: rebuilt from the events
	if s := late.Status("t"); s.DaySpent != limit || s.ReservedUSD != 0 {
		t.Errorf("a replica started later: %+v", s)
	}
}

// A tenant without a budget, and a call refused on what the replica
// already knows, cost no store write.
func TestBudgetSharedNoWriteWithoutBudget(t *testing.T) {
	store := &countingStore{Store: openStore(t)}
	b := newReplica(t, store, nil)
	for range 50 {
		h, err := b.Reserve(t.Context(), "free", "m", usd(1))
		if err != nil {
			t.Fatal(err)
		}
		h.Settle(usd(1), h.UsageID(), b.Now())
	}
	if n := store.appends.Load(); n != 0 {
		t.Fatalf("%d appends for a tenant without a budget", n)
	}
	if err := b.SetBudget(t.Context(), store, BudgetSet{Tenant: "t", Limits: Limits{DailyUSD: usd(1)}}, eventstore.Metadata{}); err != nil {
		t.Fatal(err)
	}
	before := store.appends.Load()
	for _, worst := range []*float64{usd(2), nil} { // over the limit alone; unpriced
		if _, err := b.Reserve(t.Context(), "t", "m", worst); !errors.Is(err, ErrBudget) {
			t.Fatalf("worst %v: %v", worst, err)
		}
	}
	if n := store.appends.Load() - before; n != 0 {
		t.Fatalf("%d appends for refused calls", n)
	}
	h, err := b.Reserve(t.Context(), "t", "m", usd(0.5))
	if err != nil {
		t.Fatal(err)
	}
	h.Settle(usd(0.5), h.UsageID(), b.Now())
	if n := store.appends.Load() - before; n != 1 {
		t.Fatalf("%d appends for a call under a budget settled with its usage id, want 1 (the hold)", n)
	}
}

// A replica that dies mid-call leaves a hold that every other replica
// counts until it expires, and then no longer; a call still running
// renews its hold.
func TestBudgetSharedHoldExpiresUnlessRenewed(t *testing.T) {
	store := openStore(t)
	var mu sync.Mutex
	clock := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	const ttl = time.Hour // the renewal timer (real time) never fires here; renew is called directly
	a, b := newReplica(t, store, now), newReplica(t, store, now)
	a.holdTTL, b.holdTTL = ttl, ttl
	if err := a.SetBudget(t.Context(), store, BudgetSet{Tenant: "t", Limits: Limits{DailyUSD: usd(1)}}, eventstore.Metadata{}); err != nil {
		t.Fatal(err)
	}
	b.catchUp(t)

	crashed, err := a.Reserve(t.Context(), "t", "m", usd(0.75))
	if err != nil {
		t.Fatal(err)
	}
	crashed.stopRenewal() // the replica is gone: nothing renews or settles it
	refused := func(when string) {
		t.Helper()
		b.catchUp(t)
		var be *BudgetError
		if _, err := b.Reserve(t.Context(), "t", "m", usd(0.5)); !errors.As(err, &be) || !be.HeldOnly {
			t.Fatalf("%s: %v, want a refusal for the hold in flight", when, err)
		}
	}
	refused("hold in flight")
	advance(ttl)
	h, err := b.Reserve(t.Context(), "t", "m", usd(0.5))
	if err != nil {
		t.Fatalf("the dead replica's hold outlived its expiry: %v", err)
	}
	h.Settle(nil, uuid.Nil, time.Time{}) // ended before any usage: released at once

	running, err := a.Reserve(t.Context(), "t", "m", usd(0.75))
	if err != nil {
		t.Fatal(err)
	}
	defer running.stopRenewal()
	advance(ttl / 2)
	running.renew()
	advance(ttl/2 + time.Second) // past the first expiry, before the renewed one
	refused("renewed hold")
	advance(ttl / 2)
	if h, err := b.Reserve(t.Context(), "t", "m", usd(0.5)); err != nil {
		t.Fatalf("after the renewed expiry: %v", err)
	} else {
		h.Settle(nil, uuid.Nil, time.Time{})
	}
}

// A call running past a third of the hold's TTL renews it on a timer;
// Settle stops the renewals.
func TestBudgetSharedHoldRenewsWhileRunning(t *testing.T) {
	store := openStore(t)
	a := newReplica(t, store, nil)
	a.holdTTL = 60 * time.Millisecond
	if err := a.SetBudget(t.Context(), store, BudgetSet{Tenant: "t", Limits: Limits{DailyUSD: usd(1)}}, eventstore.Metadata{}); err != nil {
		t.Fatal(err)
	}
	renewals := func() int {
		evs, err := eventstore.ReadWholeStream(t.Context(), store, BudgetStream("t"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range evs {
			if ev.Type == EventBudgetHoldRenewed {
				n++
			}
		}
		return n
	}
	h, err := a.Reserve(t.Context(), "t", "m", usd(0.5))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for renewals() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the hold was not renewed twice within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.Settle(usd(0.5), h.UsageID(), a.Now())
	h.mu.Lock() // a renewal under way has ended: Settle waited for it
	defer h.mu.Unlock()
	if !h.done || h.renewal.Stop() {
		t.Fatal("the renewal timer is still armed after Settle")
	}
}

// A call settled under another usage event id than the hold named (or
// none) appends a release: other replicas then wait for that event, or
// free the hold at once; they never count neither the hold nor the cost.
func TestBudgetSharedReleaseUnderAnotherID(t *testing.T) {
	store := openStore(t)
	a, b := newReplica(t, store, nil), newReplica(t, store, nil)
	if err := a.SetBudget(t.Context(), store, BudgetSet{Tenant: "t", Limits: Limits{DailyUSD: usd(10)}}, eventstore.Metadata{}); err != nil {
		t.Fatal(err)
	}
	h, err := a.Reserve(t.Context(), "t", "m", usd(4))
	if err != nil {
		t.Fatal(err)
	}
	other, at := uuid.Must(uuid.NewV7()), a.Now()
	h.Settle(usd(1), other, at)
	b.catchUp(t)
	if s := b.Status("t"); s.ReservedUSD != 4 || s.DaySpent != 0 {
		t.Fatalf("released to a usage event not yet in: %+v, want the hold counted", s)
	}
	w := NewUsageWriter(store, nil)
	w.Record(other, UsageRecord{Tenant: "t", CostUSD: usd(1), At: at})
	w.Close()
	b.catchUp(t)
	if s := b.Status("t"); s.ReservedUSD != 0 || s.DaySpent != 1 {
		t.Fatalf("after the usage event: %+v, want $1 spent, nothing held", s)
	}
	// A hold released with no usage event (a call that ended before any)
	// is freed at once.
	h, err = a.Reserve(t.Context(), "t", "m", usd(4))
	if err != nil {
		t.Fatal(err)
	}
	b.catchUp(t)
	if s := b.Status("t"); s.ReservedUSD != 4 {
		t.Fatalf("hold not seen: %+v", s)
	}
	h.Settle(nil, uuid.Nil, time.Time{})
	b.catchUp(t)
	if s := b.Status("t"); s.ReservedUSD != 0 || s.DaySpent != 1 {
		t.Fatalf("after a release without usage: %+v", s)
	}
	if s := a.Status("t"); s.ReservedUSD != 0 || s.DaySpent != 1 {
		t.Fatalf("the settling replica: %+v", s)
	}
}

// A budget lowered on another replica is read before a hold is taken:
// the hold's append expects the revision the check saw.
func TestBudgetSharedHoldSeesANewLimit(t *testing.T) {
	store := openStore(t)
	a, b := newReplica(t, store, nil), newReplica(t, store, nil)
	if err := a.SetBudget(t.Context(), store, BudgetSet{Tenant: "t", Limits: Limits{DailyUSD: usd(10)}}, eventstore.Metadata{}); err != nil {
		t.Fatal(err)
	}
	b.catchUp(t)
	if err := a.SetBudget(t.Context(), store, BudgetSet{Tenant: "t", Limits: Limits{DailyUSD: usd(1)}}, eventstore.Metadata{}); err != nil {
		t.Fatal(err)
	}
	// b has not followed the change; its append conflicts and it reads it.
	if _, err := b.Reserve(t.Context(), "t", "m", usd(2)); !errors.Is(err, ErrBudget) {
		t.Fatalf("a $2 call under a $1 limit set elsewhere: %v", err)
	}
}

// A budget set through one replica shows at once when read through
// another, before that one's follower has reached it.
func TestBudgetCurrentReadsAnotherReplicasSet(t *testing.T) {
	store := openStore(t)
	a, b := newReplica(t, store, nil), newReplica(t, store, nil)
	limit := 3.0
	if err := a.SetBudget(t.Context(), store, BudgetSet{Tenant: "t", Limits: Limits{DailyUSD: &limit}}, eventstore.Metadata{}); err != nil {
		t.Fatal(err)
	}
	if st := b.Status("t"); st.Limits.DailyUSD != nil {
		t.Fatal("the follower applied the budget already; the test shows nothing")
	}
	st, err := b.Current(t.Context(), "t")
	if err != nil || st.Limits.DailyUSD == nil || *st.Limits.DailyUSD != limit {
		t.Fatalf("through the other replica: %+v %v", st, err)
	}
}

// stalledStore is a shared store that has stopped answering appends to
// budget streams (KurrentDB away: its client waits for it, up to about a
// minute, before it gives up): an append returns when its context ends.
type stalledStore struct{ eventstore.Store }

func (s stalledStore) Append(ctx context.Context, stream string, expected eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if stream == BudgetStream("t") {
		<-ctx.Done()
		return eventstore.AppendResult{}, ctx.Err()
	}
	return s.Store.Append(ctx, stream, expected, evs...)
}

// With the store not answering, every call of a tenant with a budget is
// refused as the store being unavailable within the hold's bound, however
// many wait: the holds of one tenant are appended one at a time per
// replica, so calls queued behind a stalled append each waited for the
// ones before to give up (with KurrentDB away, the fourth of four calls
// made together was refused after two minutes).
func TestBudgetSharedHoldGivesUpOnAStalledStore(t *testing.T) {
	defer func(old time.Duration) { holdWait = old }(holdWait)
	holdWait = 300 * time.Millisecond
	inner := openStore(t)
	b := newReplica(t, stalledStore{inner}, nil)
	if err := b.SetBudget(t.Context(), inner, BudgetSet{Tenant: "t", Limits: Limits{DailyUSD: usd(10)}}, eventstore.Metadata{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.Reserve(context.Background(), "t", "m", usd(0.1))
		}()
	}
	wg.Wait()
	if took := time.Since(start); took > holdWait+time.Second {
		t.Errorf("the calls were refused after %v, past the hold's bound of %v", took.Round(time.Millisecond), holdWait)
	}
	for i, err := range errs {
		if !errors.Is(err, eventstore.ErrUnavailable) {
			t.Errorf("call %d: %v, want ErrUnavailable", i, err)
		}
	}
}
