package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/projections"
)

// fakeClock is a settable clock shared by a test's services and loops.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.ns.Store(t.UnixNano())
	return c
}
func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// replica is one replica's ledger service, read models and timer loop on a
// shared store.
type replica struct {
	h     *ledger.Handoffs
	proj  *projections.Runner
	loop  *ledger.TimerLoop
	fired atomic.Int64
}

func newReplica(t *testing.T, store eventstore.Store, clock *fakeClock, name string) *replica {
	t.Helper()
	proj, err := projections.Open(filepath.Join(t.TempDir(), name+".db"), store, projections.NewHandoffs())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { proj.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; proj.Close() })
	r := &replica{h: ledger.NewHandoffs(store, clock.Now), proj: proj}
	r.loop = &ledger.TimerLoop{
		Handoffs: r.h,
		Due:      proj.DueHandoffs,
		Changed:  proj.Changed,
		Now:      clock.Now,
		OnFired:  func(string, string) { r.fired.Add(1) },
		OnError:  func(id string, err error) { t.Errorf("timer of %s: %v", id, err) },
	}
	return r
}

func countTypes(t *testing.T, store eventstore.Store, id string) map[string]int {
	t.Helper()
	evs, err := eventstore.ReadWholeStream(context.Background(), store, domain.StreamID(id))
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, ev := range evs {
		n[ev.Type]++
	}
	return n
}

// TestTimersFireOnceAcrossReplicas runs three replicas' timer loops, each
// over its own read models, on one store, all firing at once: every
// deadline is recorded exactly once.
func TestTimersFireOnceAcrossReplicas(t *testing.T) {
	store := openStore(t)
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	clock := newFakeClock(t0)
	reps := []*replica{newReplica(t, store, clock, "r1"), newReplica(t, store, clock, "r2"), newReplica(t, store, clock, "r3")}
	ctx := context.Background()

	const n = 20
	var ids []string
	for i := 0; i < n; i++ {
		c := contract()
		switch i % 3 {
		case 0:
			c.Timing = domain.Timing{ApprovalTimeoutSeconds: 20}
		case 1:
			c.Timing = domain.Timing{HeartbeatSeconds: 10}
		case 2:
			c.Timing = domain.Timing{ResultTimeoutSeconds: 15}
		}
		out, err := reps[i%3].h.Create(ctx, tenantA, c)
		if err != nil {
			t.Fatal(err)
		}
		id := out.Handoff.ID
		if i%3 != 0 {
			if _, err := reps[0].h.Handle(ctx, tenantA, id, domain.ApprovalCommand{Status: domain.ApprovalApproved, ApprovedBy: "ann"}); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, id)
	}
	catchUp(t, store, reps)
	for _, r := range reps {
		if due, next, err := r.proj.DueTimers(clock.Now(), 100); err != nil || len(due) != 0 || !next.Equal(t0.Add(10*time.Second)) {
			t.Fatalf("before any deadline: due %v, next %s, err %v", due, next, err)
		}
	}
	clock.Advance(time.Minute)
	for round := 0; round < 3; round++ {
		var wg sync.WaitGroup
		for _, r := range reps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := r.loop.FireDue(ctx); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		catchUp(t, store, reps)
	}
	var fired int64
	for _, r := range reps {
		fired += r.fired.Load()
	}
	if fired != n {
		t.Fatalf("the replicas recorded %d timers for %d deadlines", fired, n)
	}
	for i, id := range ids {
		got := countTypes(t, store, id)
		want := domain.EventExecutorTimedOut
		if i%3 == 0 {
			want = domain.EventApprovalExpired
		}
		if got[want] != 1 || got[domain.EventLedgerClosed] != 1 {
			t.Fatalf("handoff %d: %v, want one %s and one close", i, got, want)
		}
	}
	for _, r := range reps {
		if due, next, err := r.proj.DueTimers(clock.Now().Add(time.Hour), 100); err != nil || len(due) != 0 || !next.IsZero() {
			t.Fatalf("after the timers: due %v, next %s, err %v", due, next, err)
		}
	}
}

// TestTimerRacesCallbacks races a heartbeat against the lease's timer at
// the deadline, many times: the timer wins (a heartbeat after the lease ran
// out is refused), and exactly one ExecutorTimedOut is recorded.
func TestTimerRacesCallbacks(t *testing.T) {
	store := openStore(t)
	clock := newFakeClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	reps := []*replica{newReplica(t, store, clock, "r1"), newReplica(t, store, clock, "r2")}
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		c := contract()
		c.Timing = domain.Timing{HeartbeatSeconds: 5, OnExecutorTimeout: domain.OnTimeoutRelease}
		out, err := reps[0].h.Create(ctx, tenantA, c)
		if err != nil {
			t.Fatal(err)
		}
		id := out.Handoff.ID
		if _, err := reps[0].h.Handle(ctx, tenantA, id, domain.ApprovalCommand{Status: domain.ApprovalApproved, ApprovedBy: "ann"}); err != nil {
			t.Fatal(err)
		}
		if _, err := reps[1].h.Handle(ctx, tenantA, id, domain.HeartbeatCommand{ExecutorRunID: "run-1"}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(5 * time.Second)
		var wg sync.WaitGroup
		var accepted atomic.Int64
		for j := 0; j < 4; j++ {
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, err := reps[j%2].h.Handle(ctx, tenantA, id, domain.HeartbeatCommand{ExecutorRunID: "run-1"})
				if err == nil {
					accepted.Add(1)
				} else if de := (*domain.Error)(nil); !errors.As(err, &de) || de.Code != "lease_expired" && de.Code != "executor_run_released" {
					t.Errorf("heartbeat after the lease: %v", err)
				}
			}()
			go func() {
				defer wg.Done()
				if _, err := reps[j%2].h.Fire(ctx, id, clock.Now()); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if accepted.Load() != 0 {
			t.Fatalf("%d heartbeats after the lease ran out were recorded", accepted.Load())
		}
		if got := countTypes(t, store, id); got[domain.EventExecutorTimedOut] != 1 {
			t.Fatalf("%v, want one ExecutorTimedOut", got)
		}
		// Released: another run takes over, and its lease runs anew.
		if _, err := reps[1].h.Handle(ctx, tenantA, id, domain.HeartbeatCommand{ExecutorRunID: "run-2"}); err != nil {
			t.Fatalf("run-2 cannot take over: %v", err)
		}
	}
}

// TestTimerLoopRunsOnItsOwn starts loops with Run on a real clock and a
// one-second approval deadline, and a restart: a deadline that passed while
// no replica ran is recorded when one starts.
func TestTimerLoopRunsOnItsOwn(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	h := ledger.NewHandoffs(store, nil)
	c := contract()
	c.Timing = domain.Timing{ApprovalTimeoutSeconds: 1}
	out, err := h.Create(ctx, tenantA, c)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the deadline passes with no loop running

	proj, err := projections.Open(filepath.Join(t.TempDir(), "r.db"), store, projections.NewHandoffs())
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	fired := make(chan string, 4)
	loop := &ledger.TimerLoop{Handoffs: h, Changed: proj.Changed, Now: time.Now,
		Due:     proj.DueHandoffs,
		OnFired: func(id, kind string) { fired <- kind },
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); proj.Run(runCtx) }()
	go func() { defer wg.Done(); loop.Run(runCtx) }()
	defer func() { cancel(); wg.Wait() }()
	select {
	case kind := <-fired:
		if kind != domain.TimerApproval {
			t.Fatalf("fired %s", kind)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the passed deadline was not recorded after the start")
	}
	if got := countTypes(t, store, out.Handoff.ID); got[domain.EventApprovalExpired] != 1 {
		t.Fatalf("%v", got)
	}
}

func catchUp(t *testing.T, store eventstore.Store, reps []*replica) {
	t.Helper()
	head, err := store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := r.proj.WaitFor(ctx, head)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A callback let through just before a deadline is recorded at the time
// that let it through, not a moment later, past the deadline it beat: the
// ledger never shows an approval after its approvalTimeoutSeconds. The
// deadline was checked on one reading of the clock and the events dated
// by another.
func TestCallbackBeforeDeadlineIsRecordedBeforeIt(t *testing.T) {
	store := openStore(t)
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	readings := []time.Time{t0, t0.Add(time.Second - time.Millisecond), t0.Add(time.Second + time.Millisecond)}
	clock := func() time.Time { // each reading a moment after the last
		mu.Lock()
		defer mu.Unlock()
		now := readings[0]
		if len(readings) > 1 {
			readings = readings[1:]
		}
		return now
	}
	h := ledger.NewHandoffs(store, clock)
	c := contract()
	c.Timing = domain.Timing{ApprovalTimeoutSeconds: 1}
	out, err := h.Create(context.Background(), tenantA, c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.Handle(context.Background(), tenantA, out.Handoff.ID, domain.ApprovalCommand{Status: domain.ApprovalApproved, ApprovedBy: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	if at := got.Handoff.Approval.DecidedAt; at == nil || !at.Before(t0.Add(time.Second)) {
		t.Fatalf("the approval let through at %v is recorded at %v, past its deadline %v", t0.Add(time.Second-time.Millisecond), at, t0.Add(time.Second))
	}
}

// fullStore refuses appends as a store whose disk is full does, while
// reads go on.
type fullStore struct {
	eventstore.Store
	full atomic.Bool
}

func (s *fullStore) Append(ctx context.Context, stream string, expected eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if s.full.Load() {
		return eventstore.AppendResult{}, eventstore.ErrFull
	}
	return s.Store.Append(ctx, stream, expected, evs...)
}

// TestTimerLoopWaitsAfterFailures: with a full batch of deadlines due and
// a store that refuses their events (a full disk), the loop tries again
// after a second, not at once: it went round as fast as it could, one
// failed Fire and one logged error per handoff each time, for as long as
// the disk stayed full.
func TestTimerLoopWaitsAfterFailures(t *testing.T) {
	store := &fullStore{Store: openStore(t)}
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	clock := newFakeClock(t0)
	r := newReplica(t, store, clock, "r1")
	ctx := context.Background()
	for range 120 { // more than one batch
		c := contract()
		c.Timing = domain.Timing{ApprovalTimeoutSeconds: 1}
		if _, err := r.h.Create(ctx, tenantA, c); err != nil {
			t.Fatal(err)
		}
	}
	catchUp(t, store, []*replica{r})
	store.full.Store(true)
	clock.Advance(time.Minute)
	var failed atomic.Int64
	r.loop.OnError = func(string, error) { failed.Add(1) }
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.loop.Run(runCtx); close(done) }()
	time.Sleep(500 * time.Millisecond)
	cancel()
	<-done
	// One round of 100 failures, perhaps a second if a round began just
	// before the read models moved; never one round after another.
	if n := failed.Load(); n > 2*100 {
		t.Fatalf("%d failed Fires in half a second: the loop does not wait after a failure", n)
	}
}

// TestTimerLoopFiresAfterItsReadModelsCaughtUp: a replica whose read
// models lag behind the store finds nothing due for a handoff its read
// models call due (a heartbeat renewed the lease meanwhile); once they
// catch up, the renewed lease may have run out too, so that the handoff
// never left the due list. Its timer is recorded all the same: the loop
// skipped such an entry until it left the due list, which it never did,
// and the lease was never recorded as missed by this replica.
func TestTimerLoopFiresAfterItsReadModelsCaughtUp(t *testing.T) {
	store := openStore(t)
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	clock := newFakeClock(t0)
	h := ledger.NewHandoffs(store, clock.Now)
	ctx := context.Background()
	c := contract()
	c.Timing = domain.Timing{HeartbeatSeconds: 10}
	out, err := h.Create(ctx, tenantA, c)
	if err != nil {
		t.Fatal(err)
	}
	id := out.Handoff.ID
	if _, err := h.Handle(ctx, tenantA, id, domain.ApprovalCommand{Status: domain.ApprovalApproved, ApprovedBy: "ann"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(9 * time.Second)
	if _, err := h.Handle(ctx, tenantA, id, domain.HeartbeatCommand{ExecutorRunID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	var fired []string
	loop := &ledger.TimerLoop{Handoffs: h, Now: clock.Now,
		// Read models behind the store: the lease of the approval (t0+10s)
		// is due, then the renewed one (t0+19s), never one still to come.
		Due: func(now time.Time, limit int) ([]string, time.Time, error) {
			if now.Before(t0.Add(10 * time.Second)) {
				return nil, t0.Add(10 * time.Second), nil
			}
			return []string{id}, time.Time{}, nil
		},
		OnFired: func(id, kind string) { fired = append(fired, kind) },
		OnError: func(id string, err error) { t.Errorf("timer of %s: %v", id, err) },
	}
	clock.Advance(time.Second) // t0+10s: due by the read models, not by the store
	if next, err := loop.FireDue(ctx); err != nil || len(fired) != 0 || next.IsZero() || next.After(clock.Now().Add(2*time.Second)) {
		t.Fatalf("before the renewed lease ran out: fired %v, next %v, err %v", fired, next, err)
	}
	clock.Advance(10 * time.Second) // t0+20s: the renewed lease ran out too
	next, err := loop.FireDue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(fired) != 1 || fired[0] != domain.TimerHeartbeat {
		t.Fatalf("after the renewed lease ran out: fired %v (next %v)", fired, next)
	}
	if got := countTypes(t, store, id); got[domain.EventExecutorTimedOut] != 1 {
		t.Fatalf("%v, want one ExecutorTimedOut", got)
	}
}

// A body that could never be recorded is refused as such (422 naming the
// field) on a handoff whose deadline has passed, as on a closed one: the
// deadline's 409 told the executor its lease was the trouble.
func TestInvalidCallbackAfterADeadlineIsInvalid(t *testing.T) {
	store := openStore(t)
	clock := newFakeClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	rep := newReplica(t, store, clock, "r1")
	ctx := context.Background()
	c := contract()
	c.Timing = domain.Timing{HeartbeatSeconds: 5}
	out, err := rep.h.Create(ctx, tenantA, c)
	if err != nil {
		t.Fatal(err)
	}
	id := out.Handoff.ID
	if _, err := rep.h.Handle(ctx, tenantA, id, domain.ApprovalCommand{Status: domain.ApprovalApproved, ApprovedBy: "ann"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(6 * time.Second)
	_, err = rep.h.Handle(ctx, tenantA, id, domain.ProofCommand{ExecutorRunID: "run-1", Status: "NOT_A_STATUS"})
	if de := (*domain.Error)(nil); !errors.As(err, &de) || de.Kind != domain.KindInvalid {
		t.Fatalf("an invalid proof after the lease ran out: %v, want a validation error", err)
	}
	if _, err := rep.h.Handle(ctx, tenantA, id, domain.HeartbeatCommand{ExecutorRunID: "run-1"}); err == nil || !strings.Contains(err.Error(), "lease") {
		t.Fatalf("a valid heartbeat after the lease ran out: %v, want lease_expired", err)
	}
}

// A command the handoff as it is refuses (an approval of a decided one, a
// result already received, a closed ledger) gets that refusal after a
// deadline too: it holds whatever the clock says, where the deadline's 409
// sent an operator looking at a lease for an approval that was decided
// long ago. A command the handoff would take is still refused by the
// deadline.
func TestStateRefusalBeforeDeadline(t *testing.T) {
	store := openStore(t)
	clock := newFakeClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	rep := newReplica(t, store, clock, "r1")
	ctx := context.Background()
	code := func(err error) string {
		if de := (*domain.Error)(nil); errors.As(err, &de) {
			return de.Code
		}
		return fmt.Sprint(err)
	}
	c := contract()
	c.ProofRequired = nil
	c.Timing = domain.Timing{HeartbeatSeconds: 5, ResultTimeoutSeconds: 60}
	out, err := rep.h.Create(ctx, tenantA, c)
	if err != nil {
		t.Fatal(err)
	}
	id := out.Handoff.ID
	if _, err := rep.h.Handle(ctx, tenantA, id, approve("ann", "k1")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(6 * time.Second) // the lease ran out; no timer recorded it
	before := countTypes(t, store, id)
	if _, err := rep.h.Handle(ctx, tenantA, id, approve("bob", "k2")); code(err) != "approval_already_decided" {
		t.Fatalf("an approval of a decided handoff after its lease ran out: %v, want approval_already_decided", err)
	}
	reject := domain.ApprovalCommand{Status: domain.ApprovalRejected, ApprovedBy: "bob", Reason: "late", Request: domain.RequestRef{Kind: domain.KindApproval, IdempotencyKey: "k3"}}
	if _, err := rep.h.Handle(ctx, tenantA, id, reject); code(err) != "approval_already_decided" {
		t.Fatalf("a rejection of a decided handoff after its lease ran out: %v, want approval_already_decided", err)
	}
	if _, err := rep.h.Handle(ctx, tenantA, id, domain.HeartbeatCommand{ExecutorRunID: "run-1"}); code(err) != "lease_expired" {
		t.Fatalf("a heartbeat after the lease ran out: %v, want lease_expired", err)
	}
	if got := countTypes(t, store, id); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("refusals appended: %v, was %v", got, before)
	}

	// A pending approval whose deadline passed: a proof is refused for the
	// pending approval, an approval for the deadline.
	c.Timing = domain.Timing{ApprovalTimeoutSeconds: 5}
	out, err = rep.h.Create(ctx, tenantA, c)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(6 * time.Second)
	if _, err := rep.h.Handle(ctx, tenantA, out.Handoff.ID, runningProof(1)); code(err) != "approval_pending" {
		t.Fatalf("a proof before approval, after the approval deadline: %v, want approval_pending", err)
	}
	if _, err := rep.h.Handle(ctx, tenantA, out.Handoff.ID, approve("ann", "k4")); code(err) != "approval_expired" {
		t.Fatalf("an approval after its deadline: %v, want approval_expired", err)
	}
}

// Another run's callback after the lease of the run holding the handoff
// ran out under onExecutorTimeout release is refused for the lease, not
// as another run's: the release, once recorded, lets that run in.
func TestAnotherRunAfterALeaseToBeReleased(t *testing.T) {
	store := openStore(t)
	clock := newFakeClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	rep := newReplica(t, store, clock, "r1")
	ctx := context.Background()
	c := contract()
	c.Timing = domain.Timing{HeartbeatSeconds: 5, OnExecutorTimeout: domain.OnTimeoutRelease}
	out, err := rep.h.Create(ctx, tenantA, c)
	if err != nil {
		t.Fatal(err)
	}
	id := out.Handoff.ID
	if _, err := rep.h.Handle(ctx, tenantA, id, approve("ann", "k1")); err != nil {
		t.Fatal(err)
	}
	if _, err := rep.h.Handle(ctx, tenantA, id, domain.HeartbeatCommand{ExecutorRunID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := rep.h.Handle(ctx, tenantA, id, domain.HeartbeatCommand{ExecutorRunID: "run-2"}); !isCode(err, "executor_run_mismatch") {
		t.Fatalf("another run within the lease: %v, want executor_run_mismatch", err)
	}
	clock.Advance(6 * time.Second)
	if _, err := rep.h.Handle(ctx, tenantA, id, domain.HeartbeatCommand{ExecutorRunID: "run-2"}); !isCode(err, "lease_expired") {
		t.Fatalf("another run after the lease ran out: %v, want lease_expired", err)
	}
	if _, err := rep.h.Handle(ctx, tenantA, id, approve("bob", "k2")); !isCode(err, "approval_already_decided") {
		t.Fatalf("an approval after the lease ran out: %v, want approval_already_decided", err)
	}
}
