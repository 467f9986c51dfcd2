package domain

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/looplab/fsm"
)

// Machine transitions. One looplab/fsm machine, built at the handoff's
// current state, guards every step a command takes; a command is a sequence
// of these steps and is refused whole if any step is not allowed.
const (
	stepApprove = "approve"
	stepReject  = "reject"
	stepStart   = "start"
	stepProof   = "proof"
	stepReview  = "review"
	stepResult  = "result"
	stepClose   = "close"
	// A timer's steps: approval that never came, and a run whose lease or
	// result deadline passed (back to approved-and-unstarted; close follows
	// unless the run is released to another).
	stepExpire  = "expire"
	stepTimeout = "timeout"
)

var transitions = fsm.Events{
	{Name: stepApprove, Src: []string{string(StateContractCreated)}, Dst: string(StateApprovalDecided)},
	{Name: stepReject, Src: []string{string(StateContractCreated)}, Dst: string(StateApprovalDecided)},
	{Name: stepStart, Src: []string{string(StateApprovalDecided)}, Dst: string(StateExecutorStarted)},
	{Name: stepProof, Src: []string{string(StateExecutorStarted), string(StateProofReceived), string(StateProofReviewed)}, Dst: string(StateProofReceived)},
	{Name: stepReview, Src: []string{string(StateProofReceived), string(StateProofReviewed), string(StateResultReceived)}, Dst: string(StateProofReviewed)},
	{Name: stepResult, Src: []string{string(StateExecutorStarted), string(StateProofReceived), string(StateProofReviewed)}, Dst: string(StateResultReceived)},
	{Name: stepClose, Src: []string{string(StateApprovalDecided), string(StateResultReceived), string(StateProofReviewed)}, Dst: string(StateLedgerClosed)},
	{Name: stepExpire, Src: []string{string(StateContractCreated)}, Dst: string(StateApprovalDecided)},
	{Name: stepTimeout, Src: []string{string(StateApprovalDecided), string(StateExecutorStarted), string(StateProofReceived), string(StateProofReviewed)}, Dst: string(StateApprovalDecided)},
}

// eventFrom is, for each event type, the states it may follow: the
// sources of the machine's step that records it (a contract is created
// from no state).
var eventFrom = func() map[string]map[State]bool {
	stepOf := map[string]string{
		EventApprovalDecided: stepApprove, EventExecutorStarted: stepStart, EventProofReceived: stepProof,
		EventProofReviewed: stepReview, EventResultReceived: stepResult, EventLedgerClosed: stepClose,
		EventApprovalExpired: stepExpire, EventExecutorTimedOut: stepTimeout,
	}
	m := map[string]map[State]bool{EventContractCreated: {"": true},
		// Neither changes the state: an approval of several, an escalation.
		EventApprovalGranted: {StateContractCreated: true}, EventApprovalEscalated: {StateContractCreated: true},
		// A heartbeat changes no state: it renews a started run's lease.
		EventExecutorHeartbeat: {StateExecutorStarted: true, StateProofReceived: true, StateProofReviewed: true}}
	for ev, step := range stepOf {
		m[ev] = map[State]bool{}
		for _, t := range transitions {
			if t.Name == step {
				for _, src := range t.Src {
					m[ev][State(src)] = true
				}
			}
		}
	}
	return m
}()

// Transition is one row of the machine, for the protocol description.
type Transition struct {
	Step string   `json:"step"`
	From []string `json:"from"`
	To   string   `json:"to"`
}

// Transitions returns the machine's transitions.
func Transitions() []Transition {
	out := make([]Transition, len(transitions))
	for i, t := range transitions {
		out[i] = Transition{Step: t.Name, From: slices.Clone(t.Src), To: t.Dst}
	}
	return out
}

// machine walks steps from a state.
type machine struct{ f *fsm.FSM }

func newMachine(s State) machine { return machine{fsm.NewFSM(string(s), transitions, nil)} }

func (m machine) step(op, name string) error {
	if !m.f.Can(name) {
		return E(op, KindConflict, "transition_not_allowed", "step %q is not allowed in state %s", name, m.f.Current())
	}
	err := m.f.Event(context.Background(), name)
	var same fsm.NoTransitionError
	if errors.As(err, &same) {
		return nil // a self-transition (more proof, another review) is allowed
	}
	return err
}

// Command kinds, also the callback names.
const (
	KindApproval = "approval"
	KindProof    = "proof"
	KindResult   = "result"
	KindReview   = "review"
)

// Command is a callback or operator action on a handoff.
type Command interface {
	kind() string
	request() RequestRef
	validate(op string) error
}

// ApprovalCommand is POST /v1/executions/{id}/approval.
type ApprovalCommand struct {
	Status     string
	ApprovedBy string
	Reason     string
	Request    RequestRef
}

// ProofCommand is POST /v1/executions/{id}/proof.
type ProofCommand struct {
	ExecutorType  string
	ExecutorRunID string
	Status        string
	Proof         *Proof
	Request       RequestRef
}

// ResultCommand is POST /v1/executions/{id}/result; Proof may come with it.
type ResultCommand struct {
	ExecutorType  string
	ExecutorRunID string
	Status        string
	Result        *Result
	Proof         *Proof
	Request       RequestRef
}

// ReviewCommand is POST /v1/executions/{id}/review (verifiers only).
type ReviewCommand struct {
	Verdict  string
	Reviewer string
	Notes    string
	Request  RequestRef
}

func (c ApprovalCommand) kind() string { return KindApproval }
func (c ProofCommand) kind() string    { return KindProof }
func (c ResultCommand) kind() string   { return KindResult }
func (c ReviewCommand) kind() string   { return KindReview }

func (c ApprovalCommand) request() RequestRef { return c.Request }
func (c ProofCommand) request() RequestRef    { return c.Request }
func (c ResultCommand) request() RequestRef   { return c.Request }
func (c ReviewCommand) request() RequestRef   { return c.Request }

// Limits on free text, so a ledger stays a ledger.
const (
	maxShort     = 200
	maxText      = 4000
	maxOutput    = 256 << 10
	maxArtifacts = 100
	maxArtifact  = 64 << 10
)

type fieldCheck struct{ errs []FieldError }

func (c *fieldCheck) add(ptr, code, format string, args ...any) {
	c.errs = append(c.errs, FieldError{Pointer: ptr, Code: code, Message: fmt.Sprintf(format, args...)})
}

func (c *fieldCheck) required(ptr, v string, max int) {
	switch {
	case Blank(v):
		c.add(ptr, "required", "is required")
	case utf8.RuneCountInString(v) > max:
		c.add(ptr, "too_long", "is longer than %d characters", max)
	case max <= maxShort:
		c.plain(ptr, v)
	}
}

func (c *fieldCheck) optional(ptr, v string, max int) {
	if utf8.RuneCountInString(v) > max {
		c.add(ptr, "too_long", "is longer than %d characters", max)
	} else if max <= maxShort {
		c.plain(ptr, v)
	}
}

// plain refuses, in a name or an id, the characters that would be recorded
// for ever in the hash-chained ledger to mean something else where it is
// shown: control characters (a NUL, a bell, an escape) and the
// bidirectional overrides, embeddings and isolates that make "alice" read
// as another name in the console.
func (c *fieldCheck) plain(ptr, v string) {
	if r, ok := NotPlain(v); ok {
		c.add(ptr, "control_character", "holds the control character %U; names and ids are plain text", r)
	}
}

// Blank reports whether v shows nothing: only white space, invisible
// format characters (a zero-width space, a joiner, a byte-order mark) and
// the Hangul fillers, which render as nothing. A required text or name
// that is blank says nothing to whoever reads it.
func Blank(v string) bool {
	for _, r := range v {
		if !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r) && r != 0x115F && r != 0x1160 && r != 0x3164 && r != 0xFFA0 {
			return false
		}
	}
	return true
}

// NotPlain is the first character of v that a name, an id or a key may
// not hold (plain's), and whether there is one.
func NotPlain(v string) (rune, bool) {
	for _, r := range v {
		if unicode.IsControl(r) || r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 {
			return r, true
		}
	}
	return 0, false
}

func (c *fieldCheck) oneOf(ptr, v string, allowed []string) {
	if v == "" {
		c.add(ptr, "required", "is required; one of %s", strings.Join(allowed, ", "))
	} else if !slices.Contains(allowed, v) {
		c.add(ptr, "invalid_enum", "must be one of %s", strings.Join(allowed, ", "))
	}
}

func (c *fieldCheck) proof(ptr string, p *Proof) {
	if p == nil {
		c.add(ptr, "required", "is required")
		return
	}
	c.optional(ptr+"/summary", p.Summary, maxText)
	if Blank(p.Summary) && len(p.Artifacts) == 0 {
		c.add(ptr, "empty_proof", "needs a summary or at least one artifact")
	}
	if len(p.Artifacts) > maxArtifacts {
		c.add(ptr+"/artifacts", "too_many", "holds more than %d artifacts", maxArtifacts)
	}
	for i, a := range p.Artifacts {
		ap := fmt.Sprintf("%s/artifacts/%d", ptr, i)
		c.required(ap+"/type", a.Type, 64)
		c.required(ap+"/text", a.Text, maxArtifact)
	}
}

func (c *fieldCheck) err(op string) error {
	if len(c.errs) == 0 {
		return nil
	}
	return Invalid(op, c.errs...)
}

func (c ApprovalCommand) validate(op string) error {
	var v fieldCheck
	switch c.Status {
	case ApprovalApproved, ApprovalRejected:
	case ApprovalPending:
		v.add("/status", "invalid_enum", "an approval callback decides: APPROVED or REJECTED; a handoff starts as PENDING_APPROVAL")
	default:
		v.oneOf("/status", c.Status, []string{ApprovalApproved, ApprovalRejected})
	}
	v.required("/approvedBy", c.ApprovedBy, maxShort)
	if c.Status == ApprovalRejected && Blank(c.Reason) {
		v.add("/reason", "reason_required", "a rejection needs a reason")
	}
	v.optional("/reason", c.Reason, maxText)
	return v.err(op)
}

func (c ProofCommand) validate(op string) error {
	var v fieldCheck
	v.required("/executorRunId", c.ExecutorRunID, maxShort)
	v.optional("/executorType", c.ExecutorType, maxShort)
	v.oneOf("/status", c.Status, ProofStatuses)
	v.proof("/proof", c.Proof)
	return v.err(op)
}

func (c ResultCommand) validate(op string) error {
	var v fieldCheck
	v.required("/executorRunId", c.ExecutorRunID, maxShort)
	v.optional("/executorType", c.ExecutorType, maxShort)
	v.oneOf("/status", c.Status, ResultStatuses)
	if c.Result == nil {
		v.add("/result", "required", "is required")
	} else {
		v.required("/result/summary", c.Result.Summary, maxText)
		v.optional("/result/output", c.Result.Output, maxOutput)
	}
	if c.Proof != nil {
		v.proof("/proof", c.Proof)
	}
	return v.err(op)
}

func (c ReviewCommand) validate(op string) error {
	var v fieldCheck
	v.oneOf("/verdict", c.Verdict, ReviewVerdicts)
	v.required("/reviewer", c.Reviewer, maxShort)
	v.optional("/notes", c.Notes, maxText)
	return v.err(op)
}

// Replay looks for an earlier accepted callback that this one repeats. It
// returns the seq whose state answers it, or an error when the idempotency
// key was used with another body.
func (h *Handoff) Replay(op string, kind string, ref RequestRef) (uint64, bool, error) {
	return h.ReplayAs(op, kind, ref, "")
}

// ReplayAs is Replay for a callback sent by actor. Under a policy of
// several approvers, an approval repeats only the same approver's: two
// approvers may well send byte-identical bodies.
func (h *Handoff) ReplayAs(op string, kind string, ref RequestRef, actor string) (uint64, bool, error) {
	// Who may not make the callback may not have it replayed either: the
	// answer would tell a key separation of duties refuses that it acted.
	// The creator's gate is on approving only: it may reject (DecideAs
	// says which this is), and have its own rejection replayed, never
	// another key's approval.
	gate := h.dutyGate(op, kind, actor)
	if gate != nil && kind != KindApproval {
		return 0, false, gate
	}
	mine := func(a AnsweredRequest) bool {
		if gate != nil {
			return a.Kind == kind && SameActor(a.Actor, actor)
		}
		return a.Kind == kind && (kind != KindApproval || h.required() < 2 || actor == "" || SameActor(a.Actor, actor))
	}
	for _, a := range h.Answered {
		if !mine(a) {
			continue
		}
		if ref.IdempotencyKey != "" && a.IdempotencyKey == ref.IdempotencyKey {
			if !a.RequestRef.sameBody(ref) {
				return 0, false, E(op, KindInvalid, "idempotency_key_reused",
					"Idempotency-Key %q was already used on this handoff's %s callback with a different body", ref.IdempotencyKey, kind)
			}
			return a.Seq, true, nil
		}
	}
	if ref.IdempotencyKey != "" {
		return 0, false, nil // a key not seen before: a new callback, whatever its body
	}
	// Without a key, a byte-identical body is a retry of the last accepted
	// callback only. The same body after other callbacks is a new one: a
	// verifier may send the same review again, an executor the same
	// progress proof.
	if n := len(h.Answered); n > 0 {
		if a := h.Answered[n-1]; mine(a) && a.BodySHA256 == ref.BodySHA256 {
			return a.Seq, true, nil
		}
	}
	return 0, false, nil
}

// Decide checks cmd against the handoff and returns the events it records.
// It does not change h.
func (h *Handoff) Decide(cmd Command) ([]Event, error) { return h.DecideAs(cmd, "") }

// DecideAs is Decide for a command sent by actor (how the ledger names
// the key or person): approval policies count distinct approvers and
// separate duties by it.
// ValidateCommand checks cmd on its own, whatever the handoff's state: a
// body that could never be recorded is refused as such (422), not with the
// state's refusal (a deadline passed, the ledger closed), which would send
// the client to fix the wrong thing.
func ValidateCommand(cmd Command) error { return cmd.validate("handoff." + cmd.kind()) }

func (h *Handoff) DecideAs(cmd Command, actor string) ([]Event, error) {
	op := "handoff." + cmd.kind()
	if err := cmd.validate(op); err != nil {
		return nil, err
	}
	if h.State == StateLedgerClosed {
		return nil, E(op, KindConflict, "ledger_closed", "handoff %s is closed (%s); a closed ledger never reopens", h.ID, h.ClosedReason)
	}
	m := newMachine(h.State)
	req := cmd.request()
	req.Kind = cmd.kind()
	if cmd.kind() != KindApproval || approves(cmd) {
		if err := h.dutyGate(op, cmd.kind(), actor); err != nil {
			return nil, err
		}
	}
	switch c := cmd.(type) {
	case ApprovalCommand:
		return h.decideApproval(op, m, c, &req, actor)
	case ProofCommand:
		return h.decideProof(op, m, c, &req)
	case ResultCommand:
		return h.decideResult(op, m, c, &req)
	case ReviewCommand:
		return h.decideReview(op, m, c, &req)
	case HeartbeatCommand:
		return h.decideHeartbeat(op, m, c)
	}
	return nil, E(op, KindInvalid, "unknown_command", "unknown command")
}

func approves(cmd Command) bool {
	c, ok := cmd.(ApprovalCommand)
	return ok && c.Status == ApprovalApproved
}

func (h *Handoff) decideApproval(op string, m machine, c ApprovalCommand, req *RequestRef, actor string) ([]Event, error) {
	if h.Approval.Status != ApprovalPending {
		if c.Status == ApprovalApproved && h.required() > 1 && h.approvedBy(actor) {
			// One of the approvals that decided it (a retry without a key
			// after another approver's, say): told that it stands, not
			// only who decided last.
			return nil, E(op, KindConflict, "duplicate_approver", "%s already approved this contract, one of the %d distinct approvers whose approvals decided it (%s); nothing more was recorded", actor, h.required(), h.Approval.Status)
		}
		return nil, E(op, KindConflict, "approval_already_decided", "approval was already decided: %s by %s", h.Approval.Status, h.Approval.DecidedBy)
	}
	ev := ApprovalDecided{Status: c.Status, DecidedBy: c.ApprovedBy, Reason: c.Reason, Request: req}
	// Under a policy the approver is recorded: approvals are counted by
	// it, and separation of duties checks it later.
	if c.Status == ApprovalApproved && (h.required() > 1 || h.Approval.SeparationOfDuties) {
		evs, granted, err := h.grant(op, c, actor, req)
		if err != nil || granted {
			return evs, err
		}
		ev.Approver = actor
	}
	if c.Status == ApprovalApproved {
		if err := m.step(op, stepApprove); err != nil {
			return nil, err
		}
		return []Event{{EventApprovalDecided, ev}}, nil
	}
	if err := m.step(op, stepReject); err != nil {
		return nil, err
	}
	if err := m.step(op, stepClose); err != nil {
		return nil, err
	}
	return []Event{{EventApprovalDecided, ev}, {EventLedgerClosed, LedgerClosed{Reason: "approval_rejected", FinalStatus: ApprovalRejected}}}, nil
}

// executorGate holds the checks proof and result callbacks share.
func (h *Handoff) executorGate(op, runID string) error {
	switch h.Approval.Status {
	case ApprovalPending:
		return E(op, KindConflict, "approval_pending", "approval is PENDING_APPROVAL: the executor must not act, and nothing was recorded")
	case ApprovalRejected:
		return E(op, KindConflict, "approval_rejected", "approval was REJECTED: the executor must not act")
	case ApprovalExpiredStatus:
		return E(op, KindConflict, "approval_expired", "approval EXPIRED before anyone decided: the executor must not act")
	}
	if slices.Contains(h.ReleasedRuns, runID) {
		return E(op, KindConflict, "executor_run_released", "executorRunId %q missed its lease and was released; another run may take the handoff over, this one may not report on it", runID)
	}
	if h.Result != nil {
		return E(op, KindConflict, "result_already_received", "the result was already received (%s)", h.Result.Status)
	}
	if h.ExecutorRunID != "" && h.ExecutorRunID != runID {
		return E(op, KindConflict, "executor_run_mismatch", "this handoff belongs to executorRunId %q; another run may not report on it", h.ExecutorRunID)
	}
	return nil
}

func (h *Handoff) start(op string, m machine, runID, typ string) ([]Event, error) {
	if h.State != StateApprovalDecided {
		return nil, nil
	}
	if err := m.step(op, stepStart); err != nil {
		return nil, err
	}
	return []Event{{EventExecutorStarted, ExecutorStarted{ExecutorRunID: runID, ExecutorType: typ}}}, nil
}

func (h *Handoff) decideProof(op string, m machine, c ProofCommand, req *RequestRef) ([]Event, error) {
	if err := h.executorGate(op, c.ExecutorRunID); err != nil {
		return nil, err
	}
	evs, err := h.start(op, m, c.ExecutorRunID, c.ExecutorType)
	if err != nil {
		return nil, err
	}
	if err := m.step(op, stepProof); err != nil {
		return nil, err
	}
	return append(evs, Event{EventProofReceived, ProofReceived{ExecutorRunID: c.ExecutorRunID, Status: c.Status, Proof: *c.Proof, Request: req}}), nil
}

func (h *Handoff) decideResult(op string, m machine, c ResultCommand, req *RequestRef) ([]Event, error) {
	if err := h.executorGate(op, c.ExecutorRunID); err != nil {
		return nil, err
	}
	evs, err := h.start(op, m, c.ExecutorRunID, c.ExecutorType)
	if err != nil {
		return nil, err
	}
	lastProofSeq := uint64(0)
	if n := len(h.Proofs); n > 0 {
		lastProofSeq = h.Proofs[n-1].Seq
	}
	if c.Proof != nil {
		if err := m.step(op, stepProof); err != nil {
			return nil, err
		}
		status := RunSucceeded
		if c.Status != RunSucceeded {
			status = RunFailed
		}
		evs = append(evs, Event{EventProofReceived, ProofReceived{ExecutorRunID: c.ExecutorRunID, Status: status, Proof: *c.Proof}})
		lastProofSeq = ^uint64(0) // newer than any review
	}
	if c.Status == RunSucceeded && h.ProofPolicy.Required {
		seen := h.ProofTypesSeen()
		if c.Proof != nil {
			for _, a := range c.Proof.Artifacts {
				seen[a.Type] = true
			}
		}
		if len(h.Proofs) == 0 && c.Proof == nil {
			return nil, E(op, KindConflict, "proof_required", "the proof policy requires proof (%s) before or with a SUCCEEDED result", strings.Join(h.ProofPolicy.ArtifactTypes, ", "))
		}
		var missing []string
		for _, t := range h.ProofPolicy.ArtifactTypes {
			if !seen[t] {
				missing = append(missing, t)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return nil, E(op, KindConflict, "proof_incomplete", "the proof policy requires artifacts of type %s, not received yet", strings.Join(missing, ", "))
		}
	}
	if err := m.step(op, stepResult); err != nil {
		return nil, err
	}
	evs = append(evs, Event{EventResultReceived, ResultReceived{ExecutorRunID: c.ExecutorRunID, Status: c.Status, Result: *c.Result, Request: req}})

	reviewed := h.Review != nil && h.Review.Verdict != VerdictNeedsReview && h.Review.Seq > lastProofSeq
	var closing *LedgerClosed
	switch {
	case c.Status != RunSucceeded:
		closing = &LedgerClosed{Reason: "result_received", FinalStatus: c.Status}
	case !h.ProofPolicy.Required:
		closing = &LedgerClosed{Reason: "result_received", FinalStatus: c.Status}
	case reviewed:
		closing = &LedgerClosed{Reason: "result_and_review_in", FinalStatus: c.Status, ReviewVerdict: h.Review.Verdict}
	}
	if closing != nil {
		if err := m.step(op, stepClose); err != nil {
			return nil, err
		}
		evs = append(evs, Event{EventLedgerClosed, *closing})
	}
	return evs, nil
}

func (h *Handoff) decideReview(op string, m machine, c ReviewCommand, req *RequestRef) ([]Event, error) {
	if len(h.Proofs) == 0 {
		return nil, E(op, KindConflict, "no_proof", "there is no proof to review yet")
	}
	if err := m.step(op, stepReview); err != nil {
		return nil, err
	}
	evs := []Event{{EventProofReviewed, ProofReviewed{Verdict: c.Verdict, Reviewer: c.Reviewer, Notes: c.Notes, Request: req}}}
	if h.Result != nil && c.Verdict != VerdictNeedsReview {
		if err := m.step(op, stepClose); err != nil {
			return nil, err
		}
		evs = append(evs, Event{EventLedgerClosed, LedgerClosed{Reason: "result_and_review_in", FinalStatus: h.Result.Status, ReviewVerdict: c.Verdict}})
	}
	return evs, nil
}

// CreateContract is POST /v1/handoff/contracts.
type CreateContract struct {
	HandoffID        string
	Tenant           string
	Objective        string
	TargetExecutor   string
	ExecutorProtocol string
	RiskLevel        string
	ApprovalMode     string
	ProofRequired    []string
	PlanID           string
	Timing           Timing
	ApprovalRules    ApprovalRules
}

var (
	executorProtocolRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}\.v[1-9][0-9]{0,3}$`)
	artifactTypeRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)
)

// Validate checks a contract request; it also fills the default approval
// mode (manual).
func (c *CreateContract) Validate() error {
	var v fieldCheck
	v.required("/objective", c.Objective, maxText)
	v.required("/targetExecutor", c.TargetExecutor, maxShort)
	if c.ExecutorProtocol == "" {
		v.add("/executorProtocol", "required", "is required, of the form <executor_name>.v<N>, e.g. ops_bot.v1")
	} else if !executorProtocolRE.MatchString(c.ExecutorProtocol) {
		v.add("/executorProtocol", "invalid_format", "must have the form <executor_name>.v<N>, e.g. browser_agent.v1")
	}
	v.oneOf("/riskLevel", c.RiskLevel, RiskLevels)
	if c.ApprovalMode == "" {
		c.ApprovalMode = ApprovalModeManual
	}
	if !slices.Contains(ApprovalModes, c.ApprovalMode) {
		v.add("/approvalMode", "invalid_enum", "must be one of %s", strings.Join(ApprovalModes, ", "))
	}
	if len(c.ProofRequired) > 20 {
		v.add("/proofRequired", "too_many", "lists more than 20 artifact types")
	}
	seen := map[string]bool{}
	for i, t := range c.ProofRequired {
		if !artifactTypeRE.MatchString(t) {
			v.add(fmt.Sprintf("/proofRequired/%d", i), "invalid_format", "artifact types are 1-64 lowercase letters, digits, '_', '.', '-'")
		}
		if seen[t] {
			v.add(fmt.Sprintf("/proofRequired/%d", i), "duplicate", "%q is listed twice", t)
		}
		seen[t] = true
	}
	v.timing(&c.Timing)
	v.approvalRules(&c.ApprovalRules, c.ApprovalMode)
	if t, e := c.Timing.ApprovalTimeoutSeconds, c.ApprovalRules.EscalateAfterSeconds; t > 0 && e >= t {
		// The approval expires (and the ledger closes) first: the
		// escalation asked for would never happen.
		v.add("/escalateAfterSeconds", "out_of_range", "must be less than approvalTimeoutSeconds (%d): the approval expires first, so it would never escalate", t)
	}
	return v.err("handoff.create")
}

// DecideCreate returns the events that open a handoff: the contract and,
// under the auto policy for low and medium risk, the automatic approval.
func DecideCreate(c CreateContract) ([]Event, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	types := slices.Clone(c.ProofRequired)
	if types == nil {
		types = []string{}
	}
	evs := []Event{{EventContractCreated, ContractCreated{
		HandoffID: c.HandoffID, Tenant: c.Tenant, Objective: c.Objective, TargetExecutor: c.TargetExecutor,
		ExecutorProtocol: c.ExecutorProtocol, RiskLevel: c.RiskLevel, ApprovalMode: c.ApprovalMode,
		ProofPolicy: ProofPolicy{Required: len(types) > 0, ArtifactTypes: types}, PlanID: c.PlanID,
		Timing: c.Timing, ApprovalRules: c.ApprovalRules,
	}}}
	if c.ApprovalMode == ApprovalModeAuto && autoApprovableRisks[c.RiskLevel] {
		m := newMachine(StateContractCreated)
		if err := m.step("handoff.create", stepApprove); err != nil {
			return nil, err
		}
		evs = append(evs, Event{EventApprovalDecided, ApprovalDecided{
			Status: ApprovalApproved, DecidedBy: AutoApprovalPolicy, Automatic: true,
			Reason: fmt.Sprintf("risk %s is within the automatic approval policy (low and medium)", c.RiskLevel),
		}})
	}
	return evs, nil
}
