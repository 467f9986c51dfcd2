package domain_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
)

// timed is the table's contract with deadlines.
func timed(t domain.Timing) domain.CreateContract {
	c := contract("log")
	c.Timing = t
	return c
}

// fire decides the timers due at now and records their events.
func (l *ledger) fire(now time.Time) (string, []string) {
	l.t.Helper()
	evs, kind, err := l.h.DecideTimers(now)
	if err != nil {
		l.t.Fatalf("DecideTimers: %v", err)
	}
	l.record(evs)
	return kind, eventTypes(evs)
}

func heartbeat(run string) domain.HeartbeatCommand {
	return domain.HeartbeatCommand{ExecutorRunID: run, Request: domain.RequestRef{BodySHA256: "b-hb-" + run}}
}

func TestApprovalExpires(t *testing.T) {
	l := open(t, timed(domain.Timing{ApprovalTimeoutSeconds: 20}))
	deadline := t0.Add(20 * time.Second)
	if ts := l.h.Timers(); len(ts) != 1 || ts[0].Kind != domain.TimerApproval || !ts[0].At.Equal(deadline) {
		t.Fatalf("timers %+v, want the approval's at %s", ts, deadline)
	}
	if kind, evs := l.fire(deadline.Add(-time.Nanosecond)); kind != "" || len(evs) != 0 {
		t.Fatalf("fired %q %v before the deadline", kind, evs)
	}
	if err := l.h.Overdue("handoff.approval", deadline.Add(-time.Nanosecond)); err != nil {
		t.Fatalf("an approval before the deadline is refused: %v", err)
	}
	// After the deadline, an approval that beat the timer to the ledger is
	// still refused: the deadline decides, not which replica is quicker.
	refusal(t, nil, l.h.Overdue("handoff.approval", deadline), domain.KindConflict, "approval_expired")

	kind, evs := l.fire(deadline)
	if kind != domain.TimerApproval || !slices.Equal(evs, []string{domain.EventApprovalExpired, domain.EventLedgerClosed}) {
		t.Fatalf("fired %q %v", kind, evs)
	}
	if l.h.Approval.Status != domain.ApprovalExpiredStatus || l.h.State != domain.StateLedgerClosed ||
		l.h.FinalStatus != domain.ApprovalExpiredStatus || l.h.ClosedReason != "approval_expired" {
		t.Fatalf("approval %+v, state %s, closed %q %q", l.h.Approval, l.h.State, l.h.ClosedReason, l.h.FinalStatus)
	}
	if ts := l.h.Timers(); len(ts) != 0 {
		t.Fatalf("a closed ledger still waits on %+v", ts)
	}
	// Fired once: a second replica firing the same deadline finds nothing.
	if kind, evs := l.fire(deadline.Add(time.Hour)); kind != "" || len(evs) != 0 {
		t.Fatalf("fired again: %q %v", kind, evs)
	}
	evs2, err := l.decide(proof("run-1"))
	refusal(t, evs2, err, domain.KindConflict, "ledger_closed")
}

func TestApprovalInTimeStopsTheApprovalTimer(t *testing.T) {
	l := open(t, timed(domain.Timing{ApprovalTimeoutSeconds: 20}))
	l.do(approve())
	if ts := l.h.Timers(); len(ts) != 0 {
		t.Fatalf("approved, still waiting on %+v", ts)
	}
}

func TestMissedHeartbeatCloses(t *testing.T) {
	l := open(t, timed(domain.Timing{HeartbeatSeconds: 30}))
	l.do(approve()) // seq 2, at t0+1s
	// Under close, the lease runs from approval: the executor must make
	// its first contact within it.
	if ts := l.h.Timers(); len(ts) != 1 || ts[0].Kind != domain.TimerHeartbeat || !ts[0].At.Equal(t0.Add(31*time.Second)) {
		t.Fatalf("timers %+v", ts)
	}
	l.do(heartbeat("run-1")) // seq 3 at t0+2s: starts the run
	if l.h.ExecutorRunID != "run-1" || l.h.State != domain.StateExecutorStarted {
		t.Fatalf("a first heartbeat did not start the run: %s %q", l.h.State, l.h.ExecutorRunID)
	}
	l.do(heartbeat("run-1")) // seq 4 at t0+3s: renews
	if got := l.recs[3].Type; got != domain.EventExecutorHeartbeat {
		t.Fatalf("recorded %s, want a heartbeat", got)
	}
	lease := t0.Add(33 * time.Second)
	if v := l.h.View().Deadlines; v == nil || v.LeaseExpiresAt == nil || !v.LeaseExpiresAt.Equal(lease) || v.OnExecutorTimeout != domain.OnTimeoutClose {
		t.Fatalf("view deadlines %+v, want the lease to %s under close", v, lease)
	}
	refusal(t, nil, l.h.Overdue("handoff.heartbeat", lease), domain.KindConflict, "lease_expired")
	kind, evs := l.fire(lease)
	if kind != domain.TimerHeartbeat || !slices.Equal(evs, []string{domain.EventExecutorTimedOut, domain.EventLedgerClosed}) {
		t.Fatalf("fired %q %v", kind, evs)
	}
	if l.h.FinalStatus != domain.RunTimedOut || l.h.ClosedReason != "executor_timed_out" {
		t.Fatalf("closed %q %q", l.h.ClosedReason, l.h.FinalStatus)
	}
}

func TestMissedHeartbeatReleasesTheRun(t *testing.T) {
	l := open(t, timed(domain.Timing{HeartbeatSeconds: 30, OnExecutorTimeout: domain.OnTimeoutRelease}))
	l.do(approve())
	if ts := l.h.Timers(); len(ts) != 0 {
		t.Fatalf("under release no lease runs before a run starts: %+v", ts)
	}
	l.do(proof("run-1")) // seqs 3-4 at t0+2s, t0+3s
	kind, evs := l.fire(t0.Add(33 * time.Second))
	if kind != domain.TimerHeartbeat || !slices.Equal(evs, []string{domain.EventExecutorTimedOut}) {
		t.Fatalf("fired %q %v", kind, evs)
	}
	if l.h.State != domain.StateApprovalDecided || l.h.ExecutorRunID != "" || !slices.Equal(l.h.ReleasedRuns, []string{"run-1"}) {
		t.Fatalf("after release: %s %q %v", l.h.State, l.h.ExecutorRunID, l.h.ReleasedRuns)
	}
	// The dead run is refused; another takes the handoff over.
	for _, cmd := range []domain.Command{proof("run-1"), heartbeat("run-1"), result("run-1", domain.RunFailed)} {
		evs, err := l.decide(cmd)
		refusal(t, evs, err, domain.KindConflict, "executor_run_released")
	}
	l.do(heartbeat("run-2"), resultWithProof("run-2", domain.RunSucceeded))
	if l.h.ExecutorRunID != "run-2" || l.h.Result == nil {
		t.Fatalf("run-2 did not take over: %q %+v", l.h.ExecutorRunID, l.h.Result)
	}
	if ts := l.h.Timers(); len(ts) != 0 {
		t.Fatalf("a result in still leaves timers %+v", ts)
	}
}

// A release whose handoff's result deadline has passed too by the time
// the timers fire (no replica ran through both) is not recorded: no run
// could take the handoff over, and executors following releases would be
// sent to one that only closes. The result's timeout is recorded.
func TestNoReleaseOnceTheResultIsOverdue(t *testing.T) {
	c := timed(domain.Timing{HeartbeatSeconds: 30, OnExecutorTimeout: domain.OnTimeoutRelease, ResultTimeoutSeconds: 60})
	l := open(t, c)
	l.do(approve(), heartbeat("run-1"))
	// A callback before the timer fires is refused for what it records.
	refusal(t, nil, l.h.Overdue("handoff.proof", t0.Add(5*time.Minute)), domain.KindConflict, "result_timed_out")
	kind, evs := l.fire(t0.Add(5 * time.Minute))
	if kind != domain.TimerResult || !slices.Equal(evs, []string{domain.EventExecutorTimedOut, domain.EventLedgerClosed}) {
		t.Fatalf("fired %q %v after both deadlines", kind, evs)
	}
	if len(l.h.ReleasedRuns) != 0 || l.h.State != domain.StateLedgerClosed {
		t.Fatalf("after both deadlines: released %v, state %s", l.h.ReleasedRuns, l.h.State)
	}
	// Between the two, the run is released as before.
	l = open(t, c)
	l.do(approve(), heartbeat("run-1"))
	if kind, _ := l.fire(t0.Add(45 * time.Second)); kind != domain.TimerHeartbeat || !slices.Equal(l.h.ReleasedRuns, []string{"run-1"}) {
		t.Fatalf("fired %q between the deadlines, released %v", kind, l.h.ReleasedRuns)
	}
}

func TestResultTimeoutIgnoresHeartbeats(t *testing.T) {
	l := open(t, timed(domain.Timing{HeartbeatSeconds: 30, OnExecutorTimeout: domain.OnTimeoutRelease, ResultTimeoutSeconds: 5}))
	l.do(approve(), heartbeat("run-1"), heartbeat("run-1")) // approved at t0+1s
	due := t0.Add(6 * time.Second)
	if ts := l.h.Timers(); len(ts) != 2 || ts[0].Kind != domain.TimerResult || !ts[0].At.Equal(due) {
		t.Fatalf("timers %+v, want the result's first at %s", ts, due)
	}
	refusal(t, nil, l.h.Overdue("handoff.result", due), domain.KindConflict, "result_timed_out")
	kind, evs := l.fire(due)
	if kind != domain.TimerResult || !slices.Equal(evs, []string{domain.EventExecutorTimedOut, domain.EventLedgerClosed}) {
		t.Fatalf("fired %q %v: a result deadline closes whatever onExecutorTimeout says", kind, evs)
	}
	if l.h.FinalStatus != domain.RunTimedOut {
		t.Fatalf("final status %q", l.h.FinalStatus)
	}
}

func TestHeartbeatRefusals(t *testing.T) {
	l := open(t, timed(domain.Timing{HeartbeatSeconds: 30}))
	evs, err := l.decide(heartbeat("run-1"))
	refusal(t, evs, err, domain.KindConflict, "approval_pending")
	evs, err = l.decide(domain.HeartbeatCommand{})
	refusal(t, evs, err, domain.KindInvalid, "validation_failed")
	l.do(approve(), heartbeat("run-1"))
	evs, err = l.decide(heartbeat("run-2"))
	refusal(t, evs, err, domain.KindConflict, "executor_run_mismatch")
}

func TestTimingValidation(t *testing.T) {
	bad := []struct {
		timing domain.Timing
		ptr    string
		code   string
	}{
		{domain.Timing{ApprovalTimeoutSeconds: -1}, "/approvalTimeoutSeconds", "out_of_range"},
		{domain.Timing{HeartbeatSeconds: 24*3600 + 1}, "/heartbeatSeconds", "out_of_range"},
		{domain.Timing{ResultTimeoutSeconds: 400 * 24 * 3600}, "/resultTimeoutSeconds", "out_of_range"},
		{domain.Timing{OnExecutorTimeout: domain.OnTimeoutClose}, "/onExecutorTimeout", "requires_heartbeat"},
		{domain.Timing{HeartbeatSeconds: 10, OnExecutorTimeout: "retry"}, "/onExecutorTimeout", "invalid_enum"},
	}
	for _, b := range bad {
		c := timed(b.timing)
		_, err := domain.DecideCreate(c)
		wantFields(b.ptr, b.code)(t, nil, refusal(t, nil, err, domain.KindInvalid, "validation_failed"))
	}
	c := timed(domain.Timing{HeartbeatSeconds: 10})
	evs, err := domain.DecideCreate(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := evs[0].Data.(domain.ContractCreated).OnExecutorTimeout; got != domain.OnTimeoutClose {
		t.Fatalf("onExecutorTimeout defaults to %q, want close", got)
	}
}

// A contract without timing records and renders as before: no deadlines in
// its event or view.
func TestNoTimingNoDeadlines(t *testing.T) {
	l := open(t, contract("log"))
	if data := string(l.recs[0].Data); strings.Contains(data, "Seconds") || strings.Contains(data, "onExecutorTimeout") {
		t.Fatalf("the contract event carries timing fields: %s", data)
	}
	l.do(approve(), proof("run-1"))
	if l.h.View().Deadlines != nil || len(l.h.Timers()) != 0 {
		t.Fatalf("deadlines %+v, timers %+v", l.h.View().Deadlines, l.h.Timers())
	}
}

// TestReviewAfterARelease: a released run leaves its proofs on a handoff
// that is approval_decided again; a review waits for the next run's proof
// or result, refused meanwhile with a code docs/protocol.md names (the
// table's row for approval_decided says no_proof, which is not what comes
// when there is proof).
func TestReviewAfterARelease(t *testing.T) {
	l := open(t, timed(domain.Timing{HeartbeatSeconds: 30, OnExecutorTimeout: domain.OnTimeoutRelease}))
	l.do(approve(), proof("run-1"))
	l.fire(t0.Add(time.Hour))
	evs, err := l.decide(review(domain.VerdictVerified))
	refusal(t, evs, err, domain.KindConflict, "transition_not_allowed")
	l.do(heartbeat("run-2"))
	evs, err = l.decide(review(domain.VerdictVerified))
	refusal(t, evs, err, domain.KindConflict, "transition_not_allowed")
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "409 `transition_not_allowed`") {
		t.Fatal("docs/protocol.md does not say what a review after a release is answered")
	}
}
