package domain

import (
	"errors"
	"fmt"
	"time"
)

// Deadline and lease events. They are decided by timers, not callbacks,
// except the heartbeat.
const (
	EventApprovalExpired   = "ApprovalExpired"
	EventExecutorHeartbeat = "ExecutorHeartbeat"
	EventExecutorTimedOut  = "ExecutorTimedOut"
)

// Statuses the timers add.
const (
	ApprovalExpiredStatus = "EXPIRED"
	RunTimedOut           = "TIMED_OUT"

	OnTimeoutClose   = "close"
	OnTimeoutRelease = "release"
)

// Timer kinds, also the reasons an ExecutorTimedOut gives.
const (
	TimerApproval  = "approval_timeout"
	TimerHeartbeat = "heartbeat_missed"
	TimerResult    = "result_timeout"
)

// OnTimeoutActions lists what onExecutorTimeout may say.
var OnTimeoutActions = []string{OnTimeoutClose, OnTimeoutRelease}

// Bounds of the timing fields, in seconds.
const (
	maxDeadlineSeconds  = 366 * 24 * 3600
	maxHeartbeatSeconds = 24 * 3600
)

// Timing is a contract's deadlines and lease; every field is optional and
// zero means none (today's behaviour: a handoff may wait for ever).
type Timing struct {
	ApprovalTimeoutSeconds int    `json:"approvalTimeoutSeconds,omitempty"`
	HeartbeatSeconds       int    `json:"heartbeatSeconds,omitempty"`
	OnExecutorTimeout      string `json:"onExecutorTimeout,omitempty"`
	ResultTimeoutSeconds   int    `json:"resultTimeoutSeconds,omitempty"`
}

func (c *fieldCheck) timing(t *Timing) {
	seconds := func(ptr string, v, max int) {
		if v < 0 || v > max {
			c.add(ptr, "out_of_range", "must be from 1 to %d seconds (0 or absent: none)", max)
		}
	}
	seconds("/approvalTimeoutSeconds", t.ApprovalTimeoutSeconds, maxDeadlineSeconds)
	seconds("/heartbeatSeconds", t.HeartbeatSeconds, maxHeartbeatSeconds)
	seconds("/resultTimeoutSeconds", t.ResultTimeoutSeconds, maxDeadlineSeconds)
	switch {
	case t.OnExecutorTimeout != "" && t.HeartbeatSeconds == 0:
		c.add("/onExecutorTimeout", "requires_heartbeat", "says what follows a missed heartbeat: it needs heartbeatSeconds")
	case t.OnExecutorTimeout != "" && t.OnExecutorTimeout != OnTimeoutClose && t.OnExecutorTimeout != OnTimeoutRelease:
		c.add("/onExecutorTimeout", "invalid_enum", "must be one of close, release")
	case t.HeartbeatSeconds > 0 && t.OnExecutorTimeout == "":
		t.OnExecutorTimeout = OnTimeoutClose
	}
}

// Timing events' payloads.
type (
	ApprovalExpired struct {
		Deadline       time.Time `json:"deadline"`
		TimeoutSeconds int       `json:"timeoutSeconds"`
	}
	ExecutorHeartbeat struct {
		ExecutorRunID string `json:"executorRunId"`
	}
	ExecutorTimedOut struct {
		ExecutorRunID string    `json:"executorRunId,omitempty"`
		Reason        string    `json:"reason"` // heartbeat_missed or result_timeout
		Deadline      time.Time `json:"deadline"`
		Action        string    `json:"action"` // close or release
	}
)

// Timer is a deadline a handoff is waiting on.
type Timer struct {
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
}

// Timers returns the deadlines h is waiting on now, earliest first. They
// are a function of the ledger alone (the times its events were recorded),
// so every replica computes the same ones.
func (h *Handoff) Timers() []Timer {
	if h.State == StateLedgerClosed || h.State == "" {
		return nil
	}
	var out []Timer
	add := func(kind string, at time.Time) {
		i := len(out)
		for i > 0 && out[i-1].At.After(at) {
			i--
		}
		out = append(out[:i], append([]Timer{{kind, at}}, out[i:]...)...)
	}
	t := h.Timing
	if h.Approval.Status == ApprovalPending {
		if t.ApprovalTimeoutSeconds > 0 {
			add(TimerApproval, h.CreatedAt.Add(seconds(t.ApprovalTimeoutSeconds)))
		}
		if e, ok := h.escalationTimer(); ok {
			add(e.Kind, e.At)
		}
		return out
	}
	if h.Approval.Status != ApprovalApproved || h.Result != nil || h.Approval.DecidedAt == nil {
		return out
	}
	if t.ResultTimeoutSeconds > 0 {
		add(TimerResult, h.Approval.DecidedAt.Add(seconds(t.ResultTimeoutSeconds)))
	}
	if t.HeartbeatSeconds > 0 {
		// Under release, a lease is held by a run: none is due before a run
		// starts. Under close, the executor has one lease from approval to
		// make its first contact.
		if h.ExecutorRunID != "" || t.OnExecutorTimeout != OnTimeoutRelease {
			add(TimerHeartbeat, h.LeaseFrom.Add(seconds(t.HeartbeatSeconds)))
		}
	}
	return out
}

func seconds(n int) time.Duration { return time.Duration(n) * time.Second }

// Lifts reports whether recording the deadline h has passed at now would
// lift refusal err: a run's lease that ran out under onExecutorTimeout
// release frees the handoff for another run, so another run's callback,
// refused while the run holding the handoff has it, is refused for that
// deadline instead (Overdue), as it is once the release is recorded.
func (h *Handoff) Lifts(err error, now time.Time) bool {
	var de *Error
	if !errors.As(err, &de) || de.Code != "executor_run_mismatch" || h.Timing.OnExecutorTimeout != OnTimeoutRelease {
		return false
	}
	var ts []Timer
	for _, t := range h.Timers() {
		if t.Kind != TimerEscalation {
			ts = append(ts, t)
		}
	}
	t, ok := h.due(ts, now)
	return ok && t.Kind == TimerHeartbeat
}

// Overdue refuses a command arriving after a deadline h has passed: the
// timer's event is what happens next, whichever replica records it, so a
// late approval or a heartbeat after the lease ran out is not recorded.
func (h *Handoff) Overdue(op string, now time.Time) error {
	var ts []Timer
	for _, t := range h.Timers() {
		if t.Kind != TimerEscalation { // an escalation adds approvers, it refuses no one
			ts = append(ts, t)
		}
	}
	t, ok := h.due(ts, now)
	if !ok {
		return nil
	}
	switch t.Kind {
	case TimerApproval:
		return E(op, KindConflict, "approval_expired", "approval timed out at %s (approvalTimeoutSeconds %d): the executor must not act, and nothing was recorded",
			t.At.Format(time.RFC3339), h.Timing.ApprovalTimeoutSeconds)
	case TimerResult:
		return E(op, KindConflict, "result_timed_out", "the result was due by %s (resultTimeoutSeconds %d); nothing was recorded",
			t.At.Format(time.RFC3339), h.Timing.ResultTimeoutSeconds)
	default:
		return E(op, KindConflict, "lease_expired", "the executor's lease ran out at %s (heartbeatSeconds %d); nothing was recorded",
			t.At.Format(time.RFC3339), h.Timing.HeartbeatSeconds)
	}
}

// due is the deadline of ts (h's timers, earliest first) passed at now that
// decides what happens next: the earliest, unless it leaves the handoff
// open and one that closes it has passed too (no replica ran through
// both). An escalation of an approval that expired, or a release of a run
// no other run could follow before its result was overdue, would call on
// people or executors for nothing.
func (h *Handoff) due(ts []Timer, now time.Time) (Timer, bool) {
	if len(ts) == 0 || ts[0].At.After(now) {
		return Timer{}, false
	}
	if h.leavesOpen(ts[0]) {
		for _, t := range ts[1:] {
			if !h.leavesOpen(t) && !t.At.After(now) {
				return t, true
			}
		}
	}
	return ts[0], true
}

// DecideTimers returns the events of the earliest deadline h has passed at
// now, and its kind; none when nothing is due. Whoever records them must
// append at h's revision: a replica that fires the same timer a moment
// later finds the events there and nothing more due.
func (h *Handoff) DecideTimers(now time.Time) ([]Event, string, error) {
	due, ok := h.due(h.Timers(), now)
	if !ok {
		return nil, "", nil
	}
	op := "handoff.timer"
	m := newMachine(h.State)
	switch due.Kind {
	case TimerEscalation:
		return h.decideEscalation(due), due.Kind, nil
	case TimerApproval:
		if err := m.step(op, stepExpire); err != nil {
			return nil, "", err
		}
		if err := m.step(op, stepClose); err != nil {
			return nil, "", err
		}
		return []Event{
			{EventApprovalExpired, ApprovalExpired{Deadline: due.At, TimeoutSeconds: h.Timing.ApprovalTimeoutSeconds}},
			{EventLedgerClosed, LedgerClosed{Reason: "approval_expired", FinalStatus: ApprovalExpiredStatus}},
		}, due.Kind, nil
	case TimerResult, TimerHeartbeat:
		action := OnTimeoutClose
		if due.Kind == TimerHeartbeat && h.Timing.OnExecutorTimeout == OnTimeoutRelease {
			action = OnTimeoutRelease
		}
		if err := m.step(op, stepTimeout); err != nil {
			return nil, "", err
		}
		evs := []Event{{EventExecutorTimedOut, ExecutorTimedOut{ExecutorRunID: h.ExecutorRunID, Reason: due.Kind, Deadline: due.At, Action: action}}}
		if action == OnTimeoutClose {
			if err := m.step(op, stepClose); err != nil {
				return nil, "", err
			}
			evs = append(evs, Event{EventLedgerClosed, LedgerClosed{Reason: "executor_timed_out", FinalStatus: RunTimedOut}})
		}
		return evs, due.Kind, nil
	}
	return nil, "", fmt.Errorf("handoff %s: unknown timer %q", h.ID, due.Kind)
}

// leavesOpen reports whether t's events leave the handoff open: an
// escalation, and a missed lease under release.
func (h *Handoff) leavesOpen(t Timer) bool {
	return t.Kind == TimerEscalation || t.Kind == TimerHeartbeat && h.Timing.OnExecutorTimeout == OnTimeoutRelease
}

// HeartbeatCommand is POST /v1/executions/{id}/heartbeat: it renews the
// run's lease, and starts the run when it is the run's first word.
type HeartbeatCommand struct {
	ExecutorRunID string
	ExecutorType  string
	Request       RequestRef
}

// KindHeartbeat names the heartbeat command.
const KindHeartbeat = "heartbeat"

func (c HeartbeatCommand) kind() string        { return KindHeartbeat }
func (c HeartbeatCommand) request() RequestRef { return c.Request }

func (c HeartbeatCommand) validate(op string) error {
	var v fieldCheck
	v.required("/executorRunId", c.ExecutorRunID, maxShort)
	v.optional("/executorType", c.ExecutorType, maxShort)
	return v.err(op)
}

func (h *Handoff) decideHeartbeat(op string, m machine, c HeartbeatCommand) ([]Event, error) {
	if err := h.executorGate(op, c.ExecutorRunID); err != nil {
		return nil, err
	}
	evs, err := h.start(op, m, c.ExecutorRunID, c.ExecutorType)
	if err != nil || len(evs) > 0 {
		return evs, err // the start is the run's first contact
	}
	return []Event{{EventExecutorHeartbeat, ExecutorHeartbeat{ExecutorRunID: c.ExecutorRunID}}}, nil
}

// LeaseView is a contract's deadlines as the API shows them.
type LeaseView struct {
	Timing
	ApprovalExpiresAt *time.Time `json:"approvalExpiresAt,omitempty"`
	LeaseExpiresAt    *time.Time `json:"leaseExpiresAt,omitempty"`
	ResultDueAt       *time.Time `json:"resultDueAt,omitempty"`
	ReleasedRuns      []string   `json:"releasedRuns,omitempty"`
}

// deadlinesView is nil for a contract without timing, so such contracts
// render as before.
func (h *Handoff) deadlinesView() *LeaseView {
	if h.Timing == (Timing{}) {
		return nil
	}
	v := &LeaseView{Timing: h.Timing, ReleasedRuns: h.ReleasedRuns}
	for _, t := range h.Timers() {
		at := t.At
		switch t.Kind {
		case TimerApproval:
			v.ApprovalExpiresAt = &at
		case TimerHeartbeat:
			v.LeaseExpiresAt = &at
		case TimerResult:
			v.ResultDueAt = &at
		}
	}
	return v
}
