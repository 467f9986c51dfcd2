package domain_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
)

// decideAs decides cmd for actor, checking it left the handoff alone.
func (l *ledger) decideAs(cmd domain.Command, actor string) ([]domain.Event, error) {
	l.t.Helper()
	before := len(l.recs)
	evs, err := l.h.DecideAs(cmd, actor)
	if len(l.recs) != before {
		l.t.Fatal("DecideAs recorded events")
	}
	return evs, err
}

func (l *ledger) doAs(actor string, cmds ...domain.Command) {
	l.t.Helper()
	for _, cmd := range cmds {
		evs, err := l.decideAs(cmd, actor)
		if err != nil {
			l.t.Fatalf("setup %T as %s in %s: %v", cmd, actor, l.h.State, err)
		}
		l.recordAs(actor, evs)
	}
}

func ruled(r domain.ApprovalRules) domain.CreateContract {
	c := contract("log")
	c.ApprovalRules = r
	return c
}

func TestTwoApproversNeeded(t *testing.T) {
	l := openAs(t, "key:creator", ruled(domain.ApprovalRules{RequiredApprovals: 2}))
	if !l.h.Approval.SeparationOfDuties {
		t.Fatal("separation of duties is not on by itself with two approvers")
	}
	// The key that created the contract cannot approve it.
	evs, err := l.decideAs(approve(), "key:creator")
	refusal(t, evs, err, domain.KindConflict, "separation_of_duties")
	// But it may reject it: refusing is always allowed.
	if evs, err := l.decideAs(reject(), "key:creator"); err != nil || len(evs) != 2 {
		t.Fatalf("the creator's rejection: %v %v", eventTypes(evs), err)
	}

	l.doAs("key:ann", approve())
	if l.h.Approval.Status != domain.ApprovalPending || l.h.State != domain.StateContractCreated || len(l.h.Approval.Approvals) != 1 {
		t.Fatalf("one approval of two: %s %s %+v", l.h.Approval.Status, l.h.State, l.h.Approval.Approvals)
	}
	if got := l.recs[len(l.recs)-1].Type; got != domain.EventApprovalGranted {
		t.Fatalf("recorded %s", got)
	}
	// The same key again is not a second approver, whatever name it gives.
	again := approve()
	again.ApprovedBy, again.Request.BodySHA256 = "ann-again", "other"
	evs, err = l.decideAs(again, "key:ann")
	refusal(t, evs, err, domain.KindConflict, "duplicate_approver")
	// A byte-identical body from another approver is theirs, not a retry.
	if _, replay, _ := l.h.ReplayAs("handoff.approval", domain.KindApproval, approve().Request, "key:bob"); replay {
		t.Fatal("another approver's identical body was taken for a retry")
	}
	if seq, replay, _ := l.h.ReplayAs("handoff.approval", domain.KindApproval, approve().Request, "key:ann"); !replay || seq != 2 {
		t.Fatalf("ann's retry: replay %v at %d", replay, seq)
	}
	// The executor cannot act on one approval of two.
	evs, err = l.decideAs(proof("run-1"), "key:exec")
	refusal(t, evs, err, domain.KindConflict, "approval_pending")

	l.doAs("key:bob", approve())
	if l.h.Approval.Status != domain.ApprovalApproved || l.h.State != domain.StateApprovalDecided || len(l.h.Approval.Approvals) != 2 {
		t.Fatalf("two approvals: %s %s %+v", l.h.Approval.Status, l.h.State, l.h.Approval.Approvals)
	}
	// An approver cannot act as the executor, nor review.
	evs, err = l.decideAs(proof("run-1"), "key:ann")
	refusal(t, evs, err, domain.KindConflict, "separation_of_duties")
	l.doAs("key:exec", proof("run-1"))
	evs, err = l.decideAs(review(domain.VerdictVerified), "key:bob")
	refusal(t, evs, err, domain.KindConflict, "separation_of_duties")
	l.doAs("key:verifier", review(domain.VerdictVerified))
}

// An approver whose approval counted is told it stands when it approves
// again, also once the last approval decided: a retry without a key after
// another approver's approval must not read as if only that one counted.
func TestDuplicateApproverAfterTheDecision(t *testing.T) {
	l := openAs(t, "key:creator", ruled(domain.ApprovalRules{RequiredApprovals: 2}))
	l.doAs("key:ann", approve())
	l.doAs("key:bob", approve())
	if l.h.Approval.Status != domain.ApprovalApproved {
		t.Fatalf("after two approvals: %s", l.h.Approval.Status)
	}
	for _, who := range []string{"key:ann", "key:bob"} {
		evs, err := l.decideAs(approve(), who)
		if e := refusal(t, evs, err, domain.KindConflict, "duplicate_approver"); !strings.Contains(e.Message, who) {
			t.Fatalf("%s is told %q", who, e.Message)
		}
	}
	// Another approver, or a rejection, is told the approval was decided.
	evs, err := l.decideAs(approve(), "key:cat")
	refusal(t, evs, err, domain.KindConflict, "approval_already_decided")
	evs, err = l.decideAs(reject(), "key:ann")
	refusal(t, evs, err, domain.KindConflict, "approval_already_decided")
}

func TestOneRejectionRejects(t *testing.T) {
	l := openAs(t, "key:creator", ruled(domain.ApprovalRules{RequiredApprovals: 3}))
	l.doAs("key:ann", approve())
	l.doAs("key:bob", reject())
	if l.h.Approval.Status != domain.ApprovalRejected || l.h.State != domain.StateLedgerClosed {
		t.Fatalf("after a rejection: %s %s", l.h.Approval.Status, l.h.State)
	}
}

func TestSeparationOfDutiesAlone(t *testing.T) {
	l := openAs(t, "key:creator", ruled(domain.ApprovalRules{SeparationOfDuties: true}))
	evs, err := l.decideAs(approve(), "key:creator")
	refusal(t, evs, err, domain.KindConflict, "separation_of_duties")
	l.doAs("key:ann", approve()) // one approver is enough
	if l.h.State != domain.StateApprovalDecided || len(l.h.Approval.Approvals) != 1 {
		t.Fatalf("state %s, approvals %+v", l.h.State, l.h.Approval.Approvals)
	}
	// The one approver may not act as the executor, nor review.
	evs, err = l.decideAs(proof("run-1"), "key:ann")
	refusal(t, evs, err, domain.KindConflict, "separation_of_duties")
	l.doAs("key:exec", proof("run-1"))
	evs, err = l.decideAs(review(domain.VerdictVerified), "key:ann")
	refusal(t, evs, err, domain.KindConflict, "separation_of_duties")
	// Without the policy, the creator approves as before.
	l2 := openAs(t, "key:creator", contract("log"))
	l2.doAs("key:creator", approve())
}

func TestEscalation(t *testing.T) {
	l := openAs(t, "key:creator", ruled(domain.ApprovalRules{EscalateAfterSeconds: 60, EscalateTo: "sre-leads"}))
	at := t0.Add(time.Minute)
	if ts := l.h.Timers(); len(ts) != 1 || ts[0].Kind != domain.TimerEscalation || !ts[0].At.Equal(at) {
		t.Fatalf("timers %+v", ts)
	}
	if err := l.h.Overdue("handoff.approval", at.Add(time.Hour)); err != nil {
		t.Fatalf("an escalation refuses an approval: %v", err)
	}
	kind, evs := l.fire(at)
	if kind != domain.TimerEscalation || !slices.Equal(evs, []string{domain.EventApprovalEscalated}) {
		t.Fatalf("fired %q %v", kind, evs)
	}
	if l.h.Approval.EscalatedAt == nil || l.h.State != domain.StateContractCreated || l.h.Approval.Status != domain.ApprovalPending {
		t.Fatalf("after escalation: %+v %s", l.h.Approval, l.h.State)
	}
	if kind, _ := l.fire(at.Add(time.Hour)); kind != "" {
		t.Fatalf("escalated twice: %s", kind)
	}
	l.doAs("key:lead", approve())
}

// What a pending approval meets before it is decided (other approvers'
// approvals, an escalation) changes nothing an approver decides on: a
// decision drawn before them is not on a handoff that changed.
func TestApprovalsAndEscalationAreNoChangeToDecideOn(t *testing.T) {
	l := openAs(t, "key:creator", ruled(domain.ApprovalRules{RequiredApprovals: 3, EscalateAfterSeconds: 60, EscalateTo: "sre-leads"}))
	drawn := l.h.Changed
	l.doAs("key:ann", approve())
	l.fire(t0.Add(time.Hour))
	l.doAs("key:bob", approve())
	if l.h.Approval.EscalatedAt == nil || len(l.h.Approval.Approvals) != 2 || l.h.Changed != drawn {
		t.Fatalf("after two approvals and an escalation: changed at %d (drawn at %d), escalated %v, approvals %d", l.h.Changed, drawn, l.h.Approval.EscalatedAt, len(l.h.Approval.Approvals))
	}
	l.doAs("key:cat", approve())
	if l.h.Changed != l.h.Head.Seq {
		t.Fatalf("the deciding approval is a change: changed at %d, head %d", l.h.Changed, l.h.Head.Seq)
	}
}

func TestApprovalRulesValidation(t *testing.T) {
	bad := []struct {
		rules domain.ApprovalRules
		mode  string
		ptr   string
		code  string
	}{
		{domain.ApprovalRules{RequiredApprovals: 11}, "", "/requiredApprovals", "out_of_range"},
		{domain.ApprovalRules{RequiredApprovals: 2}, domain.ApprovalModeAuto, "/requiredApprovals", "requires_manual"},
		{domain.ApprovalRules{EscalateAfterSeconds: 30}, "", "/escalateTo", "required"},
		{domain.ApprovalRules{EscalateTo: "leads"}, "", "/escalateAfterSeconds", "required"},
	}
	for _, b := range bad {
		c := ruled(b.rules)
		if b.mode != "" {
			c.ApprovalMode = b.mode
		}
		_, err := domain.DecideCreate(c)
		wantFields(b.ptr, b.code)(t, nil, refusal(t, nil, err, domain.KindInvalid, "validation_failed"))
	}
}

// An escalation due when the approval has already expired would never
// happen: the contract that asks for it is refused, as a deadline out of
// range is. It was taken, and the approval expired without escalating.
func TestEscalationMustComeBeforeTheApprovalTimeout(t *testing.T) {
	for _, after := range []int{60, 120} {
		c := ruled(domain.ApprovalRules{EscalateAfterSeconds: after, EscalateTo: "leads"})
		c.Timing.ApprovalTimeoutSeconds = 60
		_, err := domain.DecideCreate(c)
		wantFields("/escalateAfterSeconds", "out_of_range")(t, nil, refusal(t, nil, err, domain.KindInvalid, "validation_failed"))
	}
	c := ruled(domain.ApprovalRules{EscalateAfterSeconds: 59, EscalateTo: "leads"})
	c.Timing.ApprovalTimeoutSeconds = 60
	if _, err := domain.DecideCreate(c); err != nil {
		t.Fatalf("an escalation before the timeout: %v", err)
	}
}

// An escalation whose approval expired too by the time the timers fire
// (no replica ran through both deadlines) is not recorded: the approval
// is no longer open to anyone, and the escalation's group would be called
// on to approve what expired. The expiry is what is recorded.
func TestNoEscalationOnceTheApprovalExpired(t *testing.T) {
	c := ruled(domain.ApprovalRules{EscalateAfterSeconds: 60, EscalateTo: "leads"})
	c.Timing.ApprovalTimeoutSeconds = 120
	l := openAs(t, "key:creator", c)
	kind, evs := l.fire(t0.Add(3 * time.Minute))
	if kind != domain.TimerApproval || !slices.Equal(evs, []string{domain.EventApprovalExpired, domain.EventLedgerClosed}) {
		t.Fatalf("fired %q %v after both deadlines", kind, evs)
	}
	if l.h.Approval.EscalatedAt != nil || l.h.State != domain.StateLedgerClosed {
		t.Fatalf("after both deadlines: escalated %v, state %s", l.h.Approval.EscalatedAt, l.h.State)
	}
	// Between the two, the escalation is recorded as before.
	l = openAs(t, "key:creator", c)
	if kind, evs := l.fire(t0.Add(90 * time.Second)); kind != domain.TimerEscalation || !slices.Equal(evs, []string{domain.EventApprovalEscalated}) {
		t.Fatalf("fired %q %v between the deadlines", kind, evs)
	}
}

// A replay is no way round separation of duties: an approver sending the
// executor's proof again is refused as the proof itself would be, not
// told it succeeded.
func TestReplayHoldsSeparationOfDuties(t *testing.T) {
	l := openAs(t, "key:creator", ruled(domain.ApprovalRules{RequiredApprovals: 2, SeparationOfDuties: true}))
	l.doAs("key:ann", approve())
	l.doAs("key:bob", approve())
	p := proof("run-1")
	l.doAs("key:exec", p)
	if _, ok, err := l.h.ReplayAs("handoff.proof", domain.KindProof, domain.CommandRequest(p), "key:exec"); err != nil || !ok {
		t.Fatalf("the executor's own retry: %v %v", ok, err)
	}
	_, ok, err := l.h.ReplayAs("handoff.proof", domain.KindProof, domain.CommandRequest(p), "key:ann")
	if ok {
		t.Fatal("an approver's send of the proof replayed it")
	}
	refusal(t, nil, err, domain.KindConflict, "separation_of_duties")
}

// One person under two spellings of their address is one approver: two
// console links, alice@example.com and Alice@Example.com, do not make the
// two approvals a rule needs. Keys stay apart by their ids.
func TestOnePersonInTwoSpellingsIsOneApprover(t *testing.T) {
	l := openAs(t, "key:creator", ruled(domain.ApprovalRules{RequiredApprovals: 2}))
	l.doAs("person:alice@example.com", approve())
	evs, err := l.decideAs(approve(), "person:Alice@Example.com")
	refusal(t, evs, err, domain.KindConflict, "duplicate_approver")
	if domain.SameActor("key:abc", "key:ABC") {
		t.Fatal("key ids compared without case")
	}
}
