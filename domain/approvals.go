package domain

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Approval policy events.
const (
	// EventApprovalGranted is one approval of several required: the
	// contract stays PENDING_APPROVAL until the last (an ApprovalDecided).
	EventApprovalGranted = "ApprovalGranted"
	// EventApprovalEscalated records that a pending approval was handed
	// to the next group after escalateAfterSeconds.
	EventApprovalEscalated = "ApprovalEscalated"
)

// TimerEscalation is the escalation's timer kind.
const TimerEscalation = "approval_escalation"

const (
	maxRequiredApprovals = 10
	maxGroup             = 200
)

// ApprovalRules are a contract's opt-in approval policy; zero values keep
// one approver's word.
type ApprovalRules struct {
	RequiredApprovals int `json:"requiredApprovals,omitempty"`
	// SeparationOfDuties: the key that created the contract cannot approve
	// it, a key that approved it cannot act as its executor, and a verifier
	// cannot review a handoff they approved. On by itself with two or more
	// required approvals.
	SeparationOfDuties   bool   `json:"separationOfDuties,omitempty"`
	EscalateAfterSeconds int    `json:"escalateAfterSeconds,omitempty"`
	EscalateTo           string `json:"escalateTo,omitempty"`
}

func (c *fieldCheck) approvalRules(r *ApprovalRules, mode string) {
	if r.RequiredApprovals < 0 || r.RequiredApprovals > maxRequiredApprovals {
		c.add("/requiredApprovals", "out_of_range", "must be from 1 to %d", maxRequiredApprovals)
	}
	if r.RequiredApprovals > 1 {
		if mode == ApprovalModeAuto {
			c.add("/requiredApprovals", "requires_manual", "several approvers need approvalMode manual: the automatic policy is one approver")
		}
		r.SeparationOfDuties = true
	}
	if r.RequiredApprovals == 1 {
		r.RequiredApprovals = 0 // one approver is the default: recorded as such
	}
	switch {
	case r.EscalateAfterSeconds < 0 || r.EscalateAfterSeconds > maxDeadlineSeconds:
		c.add("/escalateAfterSeconds", "out_of_range", "must be from 1 to %d seconds (0 or absent: none)", maxDeadlineSeconds)
	case r.EscalateAfterSeconds > 0 && r.EscalateTo == "":
		c.add("/escalateTo", "required", "names the group a pending approval escalates to after escalateAfterSeconds")
	case r.EscalateAfterSeconds == 0 && r.EscalateTo != "":
		c.add("/escalateAfterSeconds", "required", "says when the approval escalates to escalateTo")
	}
	c.optional("/escalateTo", r.EscalateTo, maxGroup)
}

// ApprovalRecord is one approver's approval.
type ApprovalRecord struct {
	Approver   string    `json:"approver"` // the key (key:<id>) or console person that approved
	ApprovedBy string    `json:"approvedBy"`
	Reason     string    `json:"reason,omitempty"`
	ApprovedAt time.Time `json:"approvedAt"`
}

// Payloads.
type (
	ApprovalGranted struct {
		Approver   string      `json:"approver"`
		ApprovedBy string      `json:"approvedBy"`
		Reason     string      `json:"reason,omitempty"`
		Count      int         `json:"count"`
		Required   int         `json:"required"`
		Request    *RequestRef `json:"request,omitempty"`
	}
	ApprovalEscalated struct {
		To       string    `json:"to"`
		Deadline time.Time `json:"deadline"`
	}
)

// required is how many distinct approvers the contract needs.
func (h *Handoff) required() int { return max(h.Approval.ApprovalRules.RequiredApprovals, 1) }

func (h *Handoff) approvedBy(actor string) bool {
	return actor != "" && slices.ContainsFunc(h.Approval.Approvals, func(a ApprovalRecord) bool { return SameActor(a.Approver, actor) })
}

// SameActor reports whether two actors are one: equal, or two people
// (person:<name>) whose names differ only in case, as e-mail addresses
// in practice do (Alice@Example.com is alice@example.com): two console
// links for one person in two spellings must not give two approvals.
func SameActor(a, b string) bool {
	if a == b {
		return true
	}
	const person = "person:"
	return strings.HasPrefix(a, person) && strings.HasPrefix(b, person) && strings.EqualFold(a, b)
}

// dutyGate refuses what separation of duties forbids actor: approving a
// contract it created, acting as the executor or reviewing after it
// approved. Without an actor (the domain's own tests, the timers) there is
// no one to check.
func (h *Handoff) dutyGate(op, kind, actor string) error {
	if !h.Approval.ApprovalRules.SeparationOfDuties || actor == "" {
		return nil
	}
	switch kind {
	case KindApproval:
		if SameActor(actor, h.CreatedBy) {
			return E(op, KindConflict, "separation_of_duties", "separation of duties: %s created this contract and cannot approve it", actor)
		}
	case KindReview:
		if h.approvedBy(actor) {
			return E(op, KindConflict, "separation_of_duties", "separation of duties: %s approved this handoff and cannot review it", actor)
		}
	default:
		if h.approvedBy(actor) {
			return E(op, KindConflict, "separation_of_duties", "separation of duties: %s approved this handoff and cannot act as its executor", actor)
		}
	}
	return nil
}

// grant decides an approval that is not the last one required.
func (h *Handoff) grant(op string, c ApprovalCommand, actor string, req *RequestRef) ([]Event, bool, error) {
	if h.approvedBy(actor) {
		return nil, false, E(op, KindConflict, "duplicate_approver", "%s already approved this contract; it needs %d distinct approvers", actor, h.required())
	}
	n := len(h.Approval.Approvals) + 1
	if n >= h.required() {
		return nil, false, nil
	}
	return []Event{{EventApprovalGranted, ApprovalGranted{Approver: actor, ApprovedBy: c.ApprovedBy, Reason: c.Reason, Count: n, Required: h.required(), Request: req}}}, true, nil
}

func (h *Handoff) escalationTimer() (Timer, bool) {
	r := h.Approval.ApprovalRules
	if r.EscalateAfterSeconds == 0 || h.Approval.EscalatedAt != nil || h.Approval.Status != ApprovalPending {
		return Timer{}, false
	}
	return Timer{TimerEscalation, h.CreatedAt.Add(seconds(r.EscalateAfterSeconds))}, true
}

func (h *Handoff) decideEscalation(due Timer) []Event {
	return []Event{{EventApprovalEscalated, ApprovalEscalated{To: h.Approval.ApprovalRules.EscalateTo, Deadline: due.At}}}
}

func (h *Handoff) describeApprovals() string {
	return fmt.Sprintf("%d of %d approvals", len(h.Approval.Approvals), h.required())
}
