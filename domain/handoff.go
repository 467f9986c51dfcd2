package domain

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Protocol identifiers, exactly as the specification spells them.
const (
	ProtocolVersion = "svc.agent_os.v1"
	SchemaVersion   = "svc.handoff.v1"
)

// State is a handoff lifecycle stage.
type State string

// The lifecycle stages in the specification's order.
const (
	StateContractCreated State = "contract_created"
	StateApprovalDecided State = "approval_decided"
	StateExecutorStarted State = "executor_started"
	StateProofReceived   State = "proof_received"
	StateProofReviewed   State = "proof_reviewed"
	StateResultReceived  State = "result_received"
	StateLedgerClosed    State = "ledger_closed"
)

// States lists every stage in order.
var States = []State{StateContractCreated, StateApprovalDecided, StateExecutorStarted,
	StateProofReceived, StateProofReviewed, StateResultReceived, StateLedgerClosed}

// Event types of a handoff stream, one per lifecycle step.
const (
	EventContractCreated = "ContractCreated"
	EventApprovalDecided = "ApprovalDecided"
	EventExecutorStarted = "ExecutorStarted"
	EventProofReceived   = "ProofReceived"
	EventProofReviewed   = "ProofReviewed"
	EventResultReceived  = "ResultReceived"
	EventLedgerClosed    = "LedgerClosed"
)

// Status sets.
const (
	ApprovalPending  = "PENDING_APPROVAL"
	ApprovalApproved = "APPROVED"
	ApprovalRejected = "REJECTED"

	RunRunning   = "RUNNING"
	RunSucceeded = "SUCCEEDED"
	RunFailed    = "FAILED"
	RunCanceled  = "CANCELED"

	VerdictVerified    = "verified"
	VerdictNeedsReview = "needs_review"
	VerdictRejected    = "rejected"

	ApprovalModeManual = "manual"
	ApprovalModeAuto   = "auto"
)

// Status sets as the protocol description publishes them.
var (
	ApprovalStatuses    = []string{ApprovalPending, ApprovalApproved, ApprovalRejected, ApprovalExpiredStatus}
	ProofStatuses       = []string{RunRunning, RunSucceeded, RunFailed}
	ResultStatuses      = []string{RunSucceeded, RunFailed, RunCanceled}
	ReviewVerdicts      = []string{VerdictVerified, VerdictNeedsReview, VerdictRejected}
	RiskLevels          = []string{"low", "medium", "high", "critical"}
	ApprovalModes       = []string{ApprovalModeManual, ApprovalModeAuto}
	AutoApprovalPolicy  = "policy:auto-approve-up-to-medium"
	autoApprovableRisks = map[string]bool{"low": true, "medium": true}
)

// StreamID is the event stream of a handoff.
func StreamID(handoffID string) string { return "handoff-" + handoffID }

// ApprovalPolicy is the approval part of a contract.
type ApprovalPolicy struct {
	Mode      string     `json:"mode"`
	Status    string     `json:"status"`
	DecidedBy string     `json:"decidedBy,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	DecidedAt *time.Time `json:"decidedAt,omitempty"`
	// The opt-in policy and its progress, each omitted when unused.
	ApprovalRules
	Approvals   []ApprovalRecord `json:"approvals,omitempty"`
	EscalatedAt *time.Time       `json:"escalatedAt,omitempty"`
}

// ProofPolicy says whether proof is required and of which artifact types.
type ProofPolicy struct {
	Required      bool     `json:"required"`
	ArtifactTypes []string `json:"artifactTypes"`
}

// Artifact is one piece of proof.
type Artifact struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Proof is what an executor sends to show its work.
type Proof struct {
	Summary   string     `json:"summary"`
	Artifacts []Artifact `json:"artifacts"`
}

// Result is the executor's final outcome.
type Result struct {
	Summary string `json:"summary"`
	Output  string `json:"output"`
}

// RequestRef identifies the callback that caused an event, so a retried
// callback is recognised and answered from the ledger.
type RequestRef struct {
	Kind           string `json:"kind"` // approval, proof, result, review
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	BodySHA256     string `json:"bodySha256"`
	// BodyJSONSHA256 is the hash of the body's canonical JSON, when it has
	// one (docs/idempotency.md, Comparing bodies): a retry under the same
	// key whose encoder orders keys or spaces differently is the same
	// request. Absent on callbacks recorded before 2026-11-28.
	BodyJSONSHA256 string `json:"bodyJsonSha256,omitempty"`
}

// sameBody reports whether two requests carry the same body: the same
// bytes, or the same canonical JSON where both have one.
func (r RequestRef) sameBody(o RequestRef) bool {
	return r.BodySHA256 == o.BodySHA256 || (r.BodyJSONSHA256 != "" && r.BodyJSONSHA256 == o.BodyJSONSHA256)
}

// Event payloads. Field names are part of the hash chain: renaming one is a
// schema change.
type (
	ContractCreated struct {
		HandoffID        string         `json:"handoffId"`
		Tenant           string         `json:"tenant"`
		Objective        string         `json:"objective"`
		TargetExecutor   string         `json:"targetExecutor"`
		ExecutorProtocol string         `json:"executorProtocol"`
		RiskLevel        string         `json:"riskLevel"`
		ApprovalMode     string         `json:"approvalMode"`
		ProofPolicy      ProofPolicy    `json:"proofPolicy"`
		PlanID           string         `json:"planId,omitempty"`
		Metadata         map[string]any `json:"metadata,omitempty"`
		// Timing's and ApprovalRules' fields sit at the top level, each
		// omitted when zero: a contract without them hashes as it always did.
		Timing
		ApprovalRules
	}
	ApprovalDecided struct {
		Status    string      `json:"status"`
		DecidedBy string      `json:"decidedBy"`
		Reason    string      `json:"reason,omitempty"`
		Automatic bool        `json:"automatic,omitempty"`
		Request   *RequestRef `json:"request,omitempty"`
		// Approver is the key or person whose approval completed a policy
		// of several approvers.
		Approver string `json:"approver,omitempty"`
	}
	ExecutorStarted struct {
		ExecutorRunID string `json:"executorRunId"`
		ExecutorType  string `json:"executorType,omitempty"`
	}
	ProofReceived struct {
		ExecutorRunID string      `json:"executorRunId"`
		Status        string      `json:"status"`
		Proof         Proof       `json:"proof"`
		Request       *RequestRef `json:"request,omitempty"`
	}
	ProofReviewed struct {
		Verdict  string      `json:"verdict"`
		Reviewer string      `json:"reviewer"`
		Notes    string      `json:"notes,omitempty"`
		Request  *RequestRef `json:"request,omitempty"`
	}
	ResultReceived struct {
		ExecutorRunID string      `json:"executorRunId"`
		Status        string      `json:"status"`
		Result        Result      `json:"result"`
		Request       *RequestRef `json:"request,omitempty"`
	}
	LedgerClosed struct {
		Reason      string `json:"reason"`
		FinalStatus string `json:"finalStatus"`
		// ReviewVerdict is the verdict that closed a reviewed ledger
		// (verified or rejected): finalStatus is the executor's word, the
		// verdict the verifier's, and an auditor needs both.
		ReviewVerdict string `json:"reviewVerdict,omitempty"`
	}
)

// Event is a domain event about to be recorded: a type and its payload.
type Event struct {
	Type string
	Data any
}

// Recorded is a handoff event as stored, with its place in the ledger.
type Recorded struct {
	Seq        uint64          `json:"seq"` // 1-based; the stream revision + 1
	Type       string          `json:"type"`
	Data       json.RawMessage `json:"data"`
	Actor      string          `json:"actor"`
	RecordedAt time.Time       `json:"recordedAt"`
	PrevHash   string          `json:"prevHash"`
	Hash       string          `json:"hash"`
}

// LedgerHead is the receipt every callback answer carries.
type LedgerHead struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// ProofRecord is one proof callback as folded.
type ProofRecord struct {
	Seq        uint64    `json:"seq"`
	Status     string    `json:"status"`
	Proof      Proof     `json:"proof"`
	ReceivedAt time.Time `json:"receivedAt"`
}

// Review is the verifier's latest verdict.
type Review struct {
	Seq        uint64    `json:"seq"`
	Verdict    string    `json:"verdict"`
	Reviewer   string    `json:"reviewer"`
	Notes      string    `json:"notes,omitempty"`
	ReviewedAt time.Time `json:"reviewedAt"`
}

// ResultRecord is the executor's result as folded.
type ResultRecord struct {
	Seq        uint64    `json:"seq"`
	Status     string    `json:"status"`
	Result     Result    `json:"result"`
	ReceivedAt time.Time `json:"receivedAt"`
}

// AnsweredRequest remembers a callback the ledger accepted: which events it
// produced, so a retry gets the same answer.
type AnsweredRequest struct {
	RequestRef
	Seq   uint64 // the last event the callback appended
	Actor string // who sent it
}

// Handoff is the aggregate folded from a handoff stream.
type Handoff struct {
	ID               string
	Tenant           string
	Objective        string
	TargetExecutor   string
	ExecutorProtocol string
	RiskLevel        string
	PlanID           string
	Metadata         map[string]any
	Approval         ApprovalPolicy
	ProofPolicy      ProofPolicy
	Timing           Timing
	CreatedBy        string // the actor of the contract's event
	// LeaseFrom is when the executor's lease was last renewed (approval,
	// any executor callback, a heartbeat, a release).
	LeaseFrom time.Time
	// ReleasedRuns are runs that missed their lease under release: their
	// callbacks are refused.
	ReleasedRuns  []string
	State         State
	ExecutorRunID string
	ExecutorType  string
	Proofs        []ProofRecord
	Review        *Review
	Result        *ResultRecord
	ClosedReason  string
	FinalStatus   string
	ClosedVerdict string // the review verdict a reviewed ledger closed on
	CreatedAt     time.Time
	UpdatedAt     time.Time
	ClosedAt      *time.Time
	Head          LedgerHead
	// Changed is the seq of the last event a person deciding on the
	// handoff has to have seen: not a heartbeat, nor, on a pending
	// approval, another approver's approval or an escalation (none shows
	// anything new to decide on).
	Changed  uint64
	Answered []AnsweredRequest
	// StateAfter[i] is the state after event seq i+1, for the ledger view.
	StateAfter []State
}

// actsOnApproval are the executor's events, which Decide records only on
// an approved handoff (executorGate).
var actsOnApproval = map[string]bool{EventExecutorStarted: true, EventProofReceived: true, EventExecutorHeartbeat: true, EventResultReceived: true}

// noNews are the events that change nothing a person decides on: a
// heartbeat renews a lease; an approval of several before the last, and an
// escalation, leave the same contract pending (counted, two approvers at a
// quorum's edge, both approving, left it pending: the second was refused
// as drawn on a changed handoff).
var noNews = map[string]bool{EventExecutorHeartbeat: true, EventApprovalGranted: true, EventApprovalEscalated: true}

// Clone is a copy of h that Apply may carry on without changing h: the
// lists Apply appends to are clipped to their length, so that an append
// copies them, and Apply changes nothing else in place (it sets fields and
// pointers anew). TestCloneIsIndependent holds every list and pointer of
// Handoff to that.
func (h *Handoff) Clone() *Handoff {
	c := *h
	c.ReleasedRuns = slices.Clip(h.ReleasedRuns)
	c.Proofs = slices.Clip(h.Proofs)
	c.Answered = slices.Clip(h.Answered)
	c.StateAfter = slices.Clip(h.StateAfter)
	c.Approval.Approvals = slices.Clip(h.Approval.Approvals)
	c.ProofPolicy.ArtifactTypes = slices.Clip(h.ProofPolicy.ArtifactTypes)
	return &c
}

// Fold builds a handoff from its recorded events, in order.
func Fold(events []Recorded) (*Handoff, error) {
	h := &Handoff{}
	for _, ev := range events {
		if err := h.Apply(ev); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// Apply folds one recorded event into h. The event must be one the state
// machine allows from h's state: a ledger written by anything else than
// Baton's own decisions (a shared store, a tampered file) does not fold
// into a state Baton would never have reached.
func (h *Handoff) Apply(ev Recorded) error {
	if ev.Seq != h.Head.Seq+1 {
		return fmt.Errorf("handoff %s: event seq %d follows %d", h.ID, ev.Seq, h.Head.Seq)
	}
	if from, known := eventFrom[ev.Type]; known && !from[h.State] {
		return fmt.Errorf("handoff %s: event %s at seq %d is not allowed in state %q", h.ID, ev.Type, ev.Seq, h.State)
	}
	if actsOnApproval[ev.Type] && h.Approval.Status != ApprovalApproved {
		// What Decide guards beyond the machine's states, held on replay:
		// a ledger rewritten around Baton, its approval made a rejection
		// and chained again, must not fold into work done unapproved.
		return fmt.Errorf("handoff %s: event %s at seq %d follows approval %s: an executor acts only once approved", h.ID, ev.Type, ev.Seq, h.Approval.Status)
	}
	at := ev.RecordedAt
	var req *RequestRef
	switch ev.Type {
	case EventContractCreated:
		var d ContractCreated
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		if len(d.Tenant) > 255 || strings.ContainsFunc(d.Tenant, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			// Baton's tenants are short names; this one could not even be
			// a read-model key.
			return fmt.Errorf("handoff %s: contract tenant is over 255 bytes or holds a control character", d.HandoffID)
		}
		h.ID, h.Tenant, h.Objective = d.HandoffID, d.Tenant, d.Objective
		h.TargetExecutor, h.ExecutorProtocol, h.RiskLevel = d.TargetExecutor, d.ExecutorProtocol, d.RiskLevel
		h.PlanID, h.Metadata = d.PlanID, d.Metadata
		h.Approval = ApprovalPolicy{Mode: d.ApprovalMode, Status: ApprovalPending, ApprovalRules: d.ApprovalRules}
		h.CreatedBy = ev.Actor
		h.ProofPolicy = d.ProofPolicy
		h.Timing = d.Timing
		if h.ProofPolicy.ArtifactTypes == nil {
			h.ProofPolicy.ArtifactTypes = []string{}
		}
		h.State = StateContractCreated
		h.CreatedAt = at
	case EventApprovalDecided:
		var d ApprovalDecided
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		h.Approval.Status, h.Approval.DecidedBy, h.Approval.Reason = d.Status, d.DecidedBy, d.Reason
		if d.Approver != "" && d.Status == ApprovalApproved {
			h.Approval.Approvals = append(h.Approval.Approvals, ApprovalRecord{Approver: d.Approver, ApprovedBy: d.DecidedBy, Reason: d.Reason, ApprovedAt: at})
		}
		t := at
		h.Approval.DecidedAt = &t
		h.State = StateApprovalDecided
		h.LeaseFrom = at
		req = d.Request
	case EventApprovalGranted:
		var d ApprovalGranted
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		h.Approval.Approvals = append(h.Approval.Approvals, ApprovalRecord{Approver: d.Approver, ApprovedBy: d.ApprovedBy, Reason: d.Reason, ApprovedAt: at})
		req = d.Request
	case EventApprovalEscalated:
		var d ApprovalEscalated
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		t := at
		h.Approval.EscalatedAt = &t
	case EventApprovalExpired:
		var d ApprovalExpired
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		t := at
		h.Approval.Status, h.Approval.DecidedAt = ApprovalExpiredStatus, &t
		h.Approval.Reason = fmt.Sprintf("no decision within approvalTimeoutSeconds (%d)", d.TimeoutSeconds)
		h.State = StateApprovalDecided
	case EventExecutorHeartbeat:
		var d ExecutorHeartbeat
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		h.LeaseFrom = at
	case EventExecutorTimedOut:
		var d ExecutorTimedOut
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		if d.Action == OnTimeoutRelease && d.ExecutorRunID != "" {
			h.ReleasedRuns = append(h.ReleasedRuns, d.ExecutorRunID)
		}
		h.ExecutorRunID, h.ExecutorType = "", ""
		h.LeaseFrom = at
		h.State = StateApprovalDecided
	case EventExecutorStarted:
		var d ExecutorStarted
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		h.ExecutorRunID, h.ExecutorType = d.ExecutorRunID, d.ExecutorType
		h.LeaseFrom = at
		h.State = StateExecutorStarted
	case EventProofReceived:
		var d ProofReceived
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		h.Proofs = append(h.Proofs, ProofRecord{Seq: ev.Seq, Status: d.Status, Proof: d.Proof, ReceivedAt: at})
		h.LeaseFrom = at
		h.State = StateProofReceived
		req = d.Request
	case EventProofReviewed:
		var d ProofReviewed
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		h.Review = &Review{Seq: ev.Seq, Verdict: d.Verdict, Reviewer: d.Reviewer, Notes: d.Notes, ReviewedAt: at}
		h.State = StateProofReviewed
		req = d.Request
	case EventResultReceived:
		var d ResultReceived
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		h.Result = &ResultRecord{Seq: ev.Seq, Status: d.Status, Result: d.Result, ReceivedAt: at}
		h.State = StateResultReceived
		req = d.Request
	case EventLedgerClosed:
		var d LedgerClosed
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		h.ClosedReason, h.FinalStatus, h.ClosedVerdict = d.Reason, d.FinalStatus, d.ReviewVerdict
		t := at
		h.ClosedAt = &t
		h.State = StateLedgerClosed
	default:
		return fmt.Errorf("handoff %s: unknown event type %q at seq %d", h.ID, ev.Type, ev.Seq)
	}
	if req != nil {
		// A callback may append several events; its answer is the state
		// after the last of them, so later events of the same append
		// update the seq below.
		h.Answered = append(h.Answered, AnsweredRequest{RequestRef: *req, Seq: ev.Seq, Actor: ev.Actor})
	} else if n := len(h.Answered); n > 0 && h.Answered[n-1].Seq == ev.Seq-1 && ev.Type == EventLedgerClosed {
		// A new list, not a change in place: a clone shares the old one.
		last := h.Answered[n-1]
		last.Seq = ev.Seq
		h.Answered = append(slices.Clip(h.Answered[:n-1]), last)
	}
	h.UpdatedAt = at
	h.Head = LedgerHead{Seq: ev.Seq, Hash: ev.Hash}
	if !noNews[ev.Type] {
		h.Changed = ev.Seq
	}
	h.StateAfter = append(h.StateAfter, h.State)
	return nil
}

// ProofTypesSeen returns the artifact types of every proof received.
func (h *Handoff) ProofTypesSeen() map[string]bool {
	seen := map[string]bool{}
	for _, p := range h.Proofs {
		for _, a := range p.Proof.Artifacts {
			seen[a.Type] = true
		}
	}
	return seen
}
