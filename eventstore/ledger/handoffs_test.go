package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/ledger"
)

// The services run on a real store with no HTTP in between: what the CLI
// and the server share.
func openStore(t *testing.T) *bolt.Store {
	t.Helper()
	st, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

var (
	tenantA = ledger.Call{Principal: domain.Principal{KeyID: "a1", Tenant: "a"}, RequestID: "req-a"}
	tenantB = ledger.Call{Principal: domain.Principal{KeyID: "b1", Tenant: "b"}, RequestID: "req-b"}
	admin   = ledger.Call{Principal: domain.Principal{KeyID: "ops", Tenant: "ops", Admin: true}, RequestID: "req-ops"}
)

func contract() domain.CreateContract {
	return domain.CreateContract{Objective: "Rotate the staging TLS certificate", TargetExecutor: "ops-bot", ExecutorProtocol: "ops_bot.v1",
		RiskLevel: "medium", ApprovalMode: domain.ApprovalModeManual, ProofRequired: []string{"log"}}
}

func approve(by, key string) domain.ApprovalCommand {
	return domain.ApprovalCommand{Status: domain.ApprovalApproved, ApprovedBy: by,
		Request: domain.RequestRef{Kind: domain.KindApproval, IdempotencyKey: key, BodySHA256: "body-" + by}}
}

// atOnce runs f for 0 to n-1, each on a goroutine of its own, and
// returns their errors in that order.
func atOnce(n int, f func(i int) error) []error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errs
}

func streamLen(t *testing.T, st eventstore.Store, id string) int {
	t.Helper()
	evs, err := eventstore.ReadWholeStream(context.Background(), st, domain.StreamID(id))
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}

// Racing approvals on one handoff: exactly one is recorded, every other is
// refused by the lifecycle (409 approval_already_decided), none is lost to
// a conflict.
func TestRacingCallbacksMakeOneTransition(t *testing.T) {
	st := openStore(t)
	s := ledger.NewHandoffs(st, nil)
	ctx := context.Background()
	out, err := s.Create(ctx, tenantA, contract())
	if err != nil {
		t.Fatal(err)
	}
	id := out.Handoff.ID
	errs := atOnce(16, func(i int) error {
		_, err := s.Handle(ctx, tenantA, id, approve(fmt.Sprintf("approver-%d", i), ""))
		return err
	})
	won := 0
	for _, err := range errs {
		var de *domain.Error
		switch {
		case err == nil:
			won++
		case errors.As(err, &de) && de.Kind == domain.KindConflict && de.Code == "approval_already_decided":
		default:
			t.Errorf("approval: %v", err)
		}
	}
	if won != 1 || streamLen(t, st, id) != 2 {
		t.Fatalf("%d approvals won, %d events; want 1 and 2", won, streamLen(t, st, id))
	}
}

// The same callback sent by many at once (one Idempotency-Key, one body)
// is recorded once; every answer is that callback's.
func TestRacingRetriesRecordOnce(t *testing.T) {
	st := openStore(t)
	s := ledger.NewHandoffs(st, nil)
	ctx := context.Background()
	out, err := s.Create(ctx, tenantA, contract())
	if err != nil {
		t.Fatal(err)
	}
	id := out.Handoff.ID
	const n = 12
	var wg sync.WaitGroup
	outs := make([]ledger.Outcome, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = s.Handle(ctx, tenantA, id, approve("alice", "approve-1"))
		}()
	}
	wg.Wait()
	replays := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("retry %d: %v", i, errs[i])
		}
		if outs[i].Handoff.Head != outs[0].Handoff.Head {
			t.Fatalf("answers differ: %+v and %+v", outs[i].Handoff.Head, outs[0].Handoff.Head)
		}
		if outs[i].Replayed {
			replays++
		}
	}
	if replays != n-1 || streamLen(t, st, id) != 2 {
		t.Fatalf("%d replays of %d, %d events; want %d and 2", replays, n, streamLen(t, st, id), n-1)
	}
}

// The tenant rule: another tenant's handoff is not found, for a callback
// as for anything else; an admin may act on it. Nothing is appended for a
// refused command.
func TestHandoffsTenantRule(t *testing.T) {
	st := openStore(t)
	s := ledger.NewHandoffs(st, nil)
	ctx := context.Background()
	out, err := s.Create(ctx, tenantA, contract())
	if err != nil {
		t.Fatal(err)
	}
	id := out.Handoff.ID
	if _, err := s.Handle(ctx, tenantB, id, approve("mallory", "")); domain.KindOf(err) != domain.KindNotFound {
		t.Fatalf("another tenant's approval: %v", err)
	}
	if n := streamLen(t, st, id); n != 1 {
		t.Fatalf("a refused command appended: %d events", n)
	}
	if _, err := s.Handle(ctx, admin, id, approve("ops", "")); err != nil {
		t.Fatalf("admin approval: %v", err)
	}
	for _, bad := range []string{string(make([]byte, 300)), "x\x00y", "unknown"} {
		if _, err := s.Handle(ctx, tenantA, bad, approve("a", "")); domain.KindOf(err) != domain.KindNotFound {
			t.Errorf("handoff %q: %v", bad, err)
		}
	}
}

// A contract from a plan takes the plan's policy and may not loosen it;
// another tenant's plan is an unknown planId.
func TestCreateFromPlan(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	plans := ledger.NewPlans(st)
	plan := &domain.Plan{PlanID: "0193a000-0000-7000-8000-000000000001", Objective: "o", TargetExecutor: "t", RiskLevel: "high",
		ApprovalPolicy: domain.PlanApprovalPolicy{Mode: domain.ApprovalModeManual}, ProofPolicy: domain.ProofPolicy{ArtifactTypes: []string{"log"}},
		CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	if err := plans.Create(ctx, tenantA, plan); err != nil {
		t.Fatal(err)
	}
	s := ledger.NewHandoffs(st, nil)
	out, err := s.Create(ctx, tenantA, domain.CreateContract{PlanID: plan.PlanID, ExecutorProtocol: "x.v1"})
	if err != nil {
		t.Fatal(err)
	}
	if h := out.Handoff; h.Objective != "o" || h.RiskLevel != "high" {
		t.Fatalf("contract from plan: %+v", h)
	}
	var de *domain.Error
	if _, err := s.Create(ctx, tenantA, domain.CreateContract{PlanID: plan.PlanID, ExecutorProtocol: "x.v1", ApprovalMode: domain.ApprovalModeAuto}); !errors.As(err, &de) || de.Fields[0].Code != "below_plan" {
		t.Fatalf("a looser contract: %v", err)
	}
	if _, err := s.Create(ctx, tenantB, domain.CreateContract{PlanID: plan.PlanID, ExecutorProtocol: "x.v1"}); !errors.As(err, &de) || de.Fields[0].Code != "unknown_plan" {
		t.Fatalf("another tenant's plan: %v", err)
	}
	if _, err := plans.Get(ctx, tenantB.Principal, plan.PlanID); domain.KindOf(err) != domain.KindNotFound {
		t.Fatalf("another tenant read the plan: %v", err)
	}
}

// Keys: the first admin key is made once however many start together;
// revoking twice records one revocation.
func TestKeys(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	keys := ledger.NewKeys(st)
	var wg sync.WaitGroup
	created := make([]bool, 8)
	for i := range created {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := keys.Bootstrap(ctx)
			if err != nil {
				t.Error(err)
			}
			created[i] = ok
		}()
	}
	wg.Wait()
	n := 0
	for _, ok := range created {
		if ok {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d first keys created", n)
	}
	k, err := keys.Create(ctx, "test", "", "acme", false, "ci")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Create(ctx, "test", "", "acme", false, string(make([]byte, 201))); domain.KindOf(err) != domain.KindInvalid {
		t.Fatalf("a 201-byte label: %v", err)
	}
	r1, err := keys.Revoke(ctx, admin, k.KeyID)
	if err != nil || !r1.Recorded {
		t.Fatalf("revoke: %+v %v", r1, err)
	}
	r2, err := keys.Revoke(ctx, admin, k.KeyID)
	if err != nil || r2.Recorded || r2.Position != r1.Position {
		t.Fatalf("revoke again: %+v %v (first %+v)", r2, err, r1)
	}
	if _, err := keys.Revoke(ctx, admin, "key_unknown"); domain.KindOf(err) != domain.KindNotFound {
		t.Fatalf("revoke an unknown key: %v", err)
	}
	evs, err := eventstore.ReadWholeStream(ctx, st, domain.KeysStream)
	if err != nil || len(evs) != 3 {
		t.Fatalf("keys stream: %d events, %v; want 3", len(evs), err)
	}
}

// A proof's "<" and "&" are stored as one byte each: a proof of a
// megabyte of them fits an event (escaped, six bytes each, it did not, and
// the append failed as an internal error). One past the event limit is
// refused as too large, with nothing recorded.
func TestProofNearTheEventLimit(t *testing.T) {
	st, s, id := approvedHandoff(t)
	ctx := context.Background()
	before := streamLen(t, st, id)
	proof := func(n int) domain.ProofCommand { // n bytes of text, in artifacts as long as allowed
		p := &domain.Proof{Summary: "s"}
		for ; n > 0; n -= 65535 {
			p.Artifacts = append(p.Artifacts, domain.Artifact{Type: "log", Text: strings.Repeat("<&>", min(n, 65535)/3)})
		}
		return domain.ProofCommand{ExecutorRunID: "run-1", Status: "RUNNING", Proof: p}
	}
	_, err := s.Handle(ctx, tenantA, id, proof(eventstore.MaxEventSize+1))
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindTooLarge || de.Code != "event_too_large" {
		t.Fatalf("a proof over the event limit: %v, want event_too_large", err)
	}
	if n := streamLen(t, st, id); n != before {
		t.Fatalf("the refused proof left %d events, want %d", n, before)
	}
	if _, err := s.Handle(ctx, tenantA, id, proof(1<<20)); err != nil {
		t.Fatalf("a proof of 1 MiB of \"<&>\": %v", err)
	}
	if n := streamLen(t, st, id); n <= before {
		t.Fatalf("the proof left %d events, want more than %d", n, before)
	}
}

// Many callbacks that each make a transition (proofs, which may repeat),
// sent at once to one handoff through one process, are all recorded: they
// take their turns instead of losing the append race to each other until
// the retries run out (200 proofs at once ended in 503 busy for about half).
func TestManyConcurrentProofsAllRecorded(t *testing.T) {
	st, s, id := approvedHandoff(t)
	ctx := context.Background()
	before := streamLen(t, st, id)
	const n = 200
	errs := atOnce(n, func(i int) error {
		_, err := s.Handle(ctx, tenantA, id, runningProof(i))
		return err
	})
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			if failed == 1 {
				t.Errorf("proof: %v", err)
			}
		}
	}
	if failed > 0 || streamLen(t, st, id) < before+n {
		t.Fatalf("%d of %d proofs failed; %d events after %d", failed, n, streamLen(t, st, id), before)
	}
}

// approvedHandoff is a handoff approved on creation (auto approval), on a
// store of its own.
func approvedHandoff(t *testing.T) (*bolt.Store, *ledger.Handoffs, string) {
	t.Helper()
	st := openStore(t)
	s := ledger.NewHandoffs(st, nil)
	c := contract()
	c.ApprovalMode = domain.ApprovalModeAuto
	out, err := s.Create(context.Background(), tenantA, c)
	if err != nil {
		t.Fatal(err)
	}
	return st, s, out.Handoff.ID
}

// Under separation of duties the key that created a contract cannot
// approve it but may reject it (docs/protocol.md). Its rejection was
// refused all the same, 409 separation_of_duties: the check for a replay
// ran the duty gate before anything said the command was a rejection.
// Its retry is a replay; its approval, even under another approver's key
// and body, is refused.
func TestCreatorMayRejectUnderSeparationOfDuties(t *testing.T) {
	st := openStore(t)
	s := ledger.NewHandoffs(st, nil)
	ctx := context.Background()
	c := contract()
	c.ApprovalRules = domain.ApprovalRules{RequiredApprovals: 2}
	ann := ledger.Call{Principal: domain.Principal{KeyID: "ann", Tenant: "a"}, RequestID: "req-ann"}
	create := func() string {
		out, err := s.Create(ctx, tenantA, c)
		if err != nil {
			t.Fatal(err)
		}
		return out.Handoff.ID
	}
	reject := domain.ApprovalCommand{Status: domain.ApprovalRejected, ApprovedBy: "creator", Reason: "changed my mind",
		Request: domain.RequestRef{Kind: domain.KindApproval, IdempotencyKey: "rej-1", BodySHA256: "body-rej"}}

	id := create()
	out, err := s.Handle(ctx, tenantA, id, reject)
	if err != nil || out.Handoff.State != domain.StateLedgerClosed || out.Handoff.Approval.Status != domain.ApprovalRejected {
		t.Fatalf("the creator's rejection: %v", err)
	}
	again, err := s.Handle(ctx, tenantA, id, reject)
	if err != nil || !again.Replayed || again.Handoff.Head != out.Handoff.Head {
		t.Fatalf("its retry: replayed %v, err %v", again.Replayed, err)
	}
	n := streamLen(t, st, id)

	id = create()
	mustRefuse := func(err error) {
		t.Helper()
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != "separation_of_duties" {
			t.Fatalf("the creator's approval: %v, want separation_of_duties", err)
		}
	}
	_, err = s.Handle(ctx, tenantA, id, approve("creator", "app-1"))
	mustRefuse(err)
	if _, err := s.Handle(ctx, ann, id, approve("ann", "app-ann")); err != nil {
		t.Fatal(err)
	}
	_, err = s.Handle(ctx, tenantA, id, approve("ann", "app-ann")) // ann's key and body
	mustRefuse(err)
	if got := streamLen(t, st, id); got != 2 || streamLen(t, st, out.Handoff.ID) != n {
		t.Fatalf("refused approvals left events: %d", got)
	}
}
