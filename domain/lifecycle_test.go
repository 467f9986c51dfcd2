package domain_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
)

// These tests run the lifecycle rules where they live: against Decide,
// DecideCreate and Replay, with no HTTP and no store. Every handoff is built
// from events the domain itself decided, chained and folded as the ledger
// records them.

// t0 is the time of a test ledger's first event; each next one is a second
// later.
var t0 = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// ledger is one handoff's stream under test and the handoff folded from it.
type ledger struct {
	t    *testing.T
	id   string
	h    *domain.Handoff
	recs []domain.Recorded
}

// open starts a ledger with the events DecideCreate returns for c.
func open(t *testing.T, c domain.CreateContract) *ledger {
	t.Helper()
	evs, err := domain.DecideCreate(c)
	if err != nil {
		t.Fatalf("DecideCreate: %v", err)
	}
	l := &ledger{t: t, id: c.HandoffID, h: &domain.Handoff{}}
	l.record(evs)
	return l
}

// record chains evs onto the stream and applies them to the handoff.
func (l *ledger) record(evs []domain.Event) { l.t.Helper(); l.recordAs("ops", evs) }

// openAs is open with the contract recorded by actor.
func openAs(t *testing.T, actor string, c domain.CreateContract) *ledger {
	t.Helper()
	evs, err := domain.DecideCreate(c)
	if err != nil {
		t.Fatalf("DecideCreate: %v", err)
	}
	l := &ledger{t: t, id: c.HandoffID, h: &domain.Handoff{}}
	l.recordAs(actor, evs)
	return l
}

// recordAs is record for events sent by actor.
func (l *ledger) recordAs(actor string, evs []domain.Event) {
	l.t.Helper()
	prev := domain.GenesisHash(l.id)
	if n := len(l.recs); n > 0 {
		prev = l.recs[n-1].Hash
	}
	for _, ev := range evs {
		data, err := json.Marshal(ev.Data)
		if err != nil {
			l.t.Fatal(err)
		}
		seq := uint64(len(l.recs)) + 1
		at := t0.Add(time.Duration(seq-1) * time.Second)
		c, err := domain.Canonical(l.id, seq, ev.Type, actor, at, data)
		if err != nil {
			l.t.Fatal(err)
		}
		rec := domain.Recorded{Seq: seq, Type: ev.Type, Data: data, Actor: actor, RecordedAt: at, PrevHash: prev, Hash: domain.ChainHash(prev, c)}
		if err := l.h.Apply(rec); err != nil {
			l.t.Fatalf("Apply(%s): %v", ev.Type, err)
		}
		l.recs, prev = append(l.recs, rec), rec.Hash
	}
	if b := domain.VerifyChain(l.id, l.recs); b != nil {
		l.t.Fatalf("the test ledger's chain breaks: %v", b)
	}
}

// decide runs Decide and checks that it left the handoff as the stream
// folds, allowed or refused.
func (l *ledger) decide(cmd domain.Command) ([]domain.Event, error) {
	l.t.Helper()
	evs, err := l.h.Decide(cmd)
	want, ferr := domain.Fold(l.recs)
	if ferr != nil {
		l.t.Fatal(ferr)
	}
	if !reflect.DeepEqual(l.h, want) {
		l.t.Fatalf("Decide(%T) changed the handoff:\n%+v\nwant\n%+v", cmd, l.h, want)
	}
	return evs, err
}

// do decides cmds one by one and records what each decides.
func (l *ledger) do(cmds ...domain.Command) {
	l.t.Helper()
	for _, cmd := range cmds {
		evs, err := l.decide(cmd)
		if err != nil {
			l.t.Fatalf("setup %T in %s: %v", cmd, l.h.State, err)
		}
		l.record(evs)
	}
}

// contract is a manual-approval contract requiring the given artifact types.
func contract(proofTypes ...string) domain.CreateContract {
	return domain.CreateContract{HandoffID: "h-1", Tenant: "acme", Objective: "Rotate the staging TLS certificate",
		TargetExecutor: "ops-bot", ExecutorProtocol: "ops_bot.v1", RiskLevel: "medium",
		ApprovalMode: domain.ApprovalModeManual, ProofRequired: proofTypes}
}

func autoContract(risk string) domain.CreateContract {
	c := contract("log")
	c.ApprovalMode, c.RiskLevel = domain.ApprovalModeAuto, risk
	return c
}

func approve() domain.ApprovalCommand {
	return domain.ApprovalCommand{Status: domain.ApprovalApproved, ApprovedBy: "ann", Request: domain.RequestRef{BodySHA256: "b-approve"}}
}

func reject() domain.ApprovalCommand {
	return domain.ApprovalCommand{Status: domain.ApprovalRejected, ApprovedBy: "ann", Reason: "not this week",
		Request: domain.RequestRef{BodySHA256: "b-reject"}}
}

// proof is a RUNNING proof from run with one artifact of each type (a log
// when none is named).
func proof(run string, types ...string) domain.ProofCommand {
	return domain.ProofCommand{ExecutorType: "ops-bot", ExecutorRunID: run, Status: domain.RunRunning,
		Proof: artifacts(types...), Request: domain.RequestRef{BodySHA256: "b-proof-" + run}}
}

func artifacts(types ...string) *domain.Proof {
	if len(types) == 0 {
		types = []string{"log"}
	}
	p := &domain.Proof{Summary: "renewed"}
	for _, typ := range types {
		p.Artifacts = append(p.Artifacts, domain.Artifact{Type: typ, Text: "certbot renew: ok"})
	}
	return p
}

func result(run, status string) domain.ResultCommand {
	return domain.ResultCommand{ExecutorType: "ops-bot", ExecutorRunID: run, Status: status,
		Result: &domain.Result{Summary: "done", Output: "valid until 2027"}, Request: domain.RequestRef{BodySHA256: "b-result-" + run}}
}

// resultWithProof is a result callback carrying proof of the given types.
func resultWithProof(run, status string, types ...string) domain.ResultCommand {
	c := result(run, status)
	c.Proof = artifacts(types...)
	return c
}

func review(verdict string) domain.ReviewCommand {
	return domain.ReviewCommand{Verdict: verdict, Reviewer: "vic", Request: domain.RequestRef{BodySHA256: "b-review-" + verdict}}
}

// tableCommand is the command of each column of the transition table, as
// the table assumes it: a result without proof, a verified review.
var tableCommand = map[string]func() domain.Command{
	domain.CommandApprove: func() domain.Command { return approve() },
	domain.CommandReject:  func() domain.Command { return reject() },
	domain.CommandProof:   func() domain.Command { return proof("run-1") },
	domain.CommandResult:  func() domain.Command { return result("run-1", domain.RunSucceeded) },
	domain.CommandReview:  func() domain.Command { return review(domain.VerdictVerified) },
}

// reach builds a handoff resting in s under the table's contract (manual
// approval, a log artifact required).
func reach(t *testing.T, s domain.State) *ledger {
	t.Helper()
	steps := map[domain.State][]domain.Command{
		domain.StateContractCreated: nil,
		domain.StateApprovalDecided: {approve()},
		domain.StateExecutorStarted: {approve(), domain.HeartbeatCommand{ExecutorRunID: "run-1"}},
		domain.StateProofReceived:   {approve(), proof("run-1")},
		domain.StateProofReviewed:   {approve(), proof("run-1"), review(domain.VerdictVerified)},
		domain.StateResultReceived:  {approve(), proof("run-1"), result("run-1", domain.RunSucceeded)},
		domain.StateLedgerClosed:    {reject()},
	}
	cmds, ok := steps[s]
	if !ok {
		t.Fatalf("no way to a resting state %s", s)
	}
	l := open(t, contract("log"))
	l.do(cmds...)
	if l.h.State != s {
		t.Fatalf("setup reached %s, want %s", l.h.State, s)
	}
	return l
}

func eventTypes(evs []domain.Event) []string {
	types := []string{}
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	return types
}

// refusal checks that err is a *domain.Error of kind and code.
func refusal(t *testing.T, evs []domain.Event, err error, kind domain.Kind, code string) *domain.Error {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatalf("got events %v and error %v, want a %s refusal %q", eventTypes(evs), err, kind, code)
	}
	if domain.KindOf(err) != kind || de.Code != code {
		t.Fatalf("refused as %s %q (%v), want %s %q", domain.KindOf(err), de.Code, err, kind, code)
	}
	if evs != nil {
		t.Fatalf("a refusal returned events %v", eventTypes(evs))
	}
	return de
}

// TestTransitionTable walks every cell of domain.TransitionTable (the table
// GET /v1/executor-protocol publishes and docs/protocol.md prints) through
// Decide: an allowed command decides the cell's events and, applied, they
// leave the handoff in the cell's state; a refused one fails with the
// cell's kind and code and leaves the handoff unchanged.
func TestTransitionTable(t *testing.T) {
	cells := domain.TransitionTable()
	resting := domain.States // executor_started too: a run's first heartbeat rests there
	if len(cells) != len(resting)*len(domain.TableCommands) {
		t.Fatalf("%d cells for %d resting states × %d commands", len(cells), len(resting), len(domain.TableCommands))
	}
	for i, cell := range cells {
		s, cmd := resting[i/len(domain.TableCommands)], domain.TableCommands[i%len(domain.TableCommands)]
		if cell.State != s || cell.Command != cmd {
			t.Fatalf("cell %d is %s × %s, want %s × %s (rows in state order, columns in command order)", i, cell.State, cell.Command, s, cmd)
		}
		if cell.Allowed != (cell.Code == "") || cell.Allowed != (cell.Next != "") || cell.Allowed != (len(cell.Events) > 0) ||
			cell.Allowed != (cell.Kind == domain.KindOther) {
			t.Fatalf("cell %s × %s mixes an answer and a refusal: %+v", s, cmd, cell)
		}
	}

	for _, cell := range cells {
		t.Run(string(cell.State)+"/"+cell.Command, func(t *testing.T) {
			l := reach(t, cell.State)
			evs, err := l.decide(tableCommand[cell.Command]())
			if !cell.Allowed {
				refusal(t, evs, err, cell.Kind, cell.Code)
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got := eventTypes(evs); !slices.Equal(got, cell.Events) {
				t.Fatalf("events %v, want %v", got, cell.Events)
			}
			l.record(evs)
			if l.h.State != cell.Next {
				t.Fatalf("state %s after the events, want %s", l.h.State, cell.Next)
			}
		})
	}
}

// TestLifecycleRules checks the rules of DESIGN.md's handoff lifecycle and
// docs/protocol.md's variations of the table, each from a handoff built by
// the commands before it.
func TestLifecycleRules(t *testing.T) {
	verified, needsReview, rejected := domain.VerdictVerified, domain.VerdictNeedsReview, domain.VerdictRejected
	succeeded := domain.RunSucceeded
	tests := []struct {
		name     string
		contract domain.CreateContract
		before   []domain.Command
		cmd      domain.Command
		// allowed: the events decided and the state after them
		wantEvents []string
		wantState  domain.State
		// refused: the error's kind and code
		wantKind domain.Kind
		wantCode string
		// more to check on the handoff after the events, or on the refusal
		check func(t *testing.T, h *domain.Handoff, err *domain.Error)
	}{
		// Approval.
		{
			name: "a rejection closes the ledger", contract: contract("log"),
			cmd:        reject(),
			wantEvents: []string{domain.EventApprovalDecided, domain.EventLedgerClosed}, wantState: domain.StateLedgerClosed,
			check: func(t *testing.T, h *domain.Handoff, _ *domain.Error) {
				if h.Approval.Status != domain.ApprovalRejected || h.Approval.Reason != "not this week" ||
					h.ClosedReason != "approval_rejected" || h.FinalStatus != domain.ApprovalRejected {
					t.Fatalf("approval %+v, closed %q %q", h.Approval, h.ClosedReason, h.FinalStatus)
				}
			},
		},
		{
			name: "a rejection needs a reason", contract: contract("log"),
			cmd:      domain.ApprovalCommand{Status: domain.ApprovalRejected, ApprovedBy: "ann", Reason: " "},
			wantKind: domain.KindInvalid, wantCode: "validation_failed",
			check: wantFields("/reason", "reason_required"),
		},
		{
			name: "an approval records who approved", contract: contract("log"),
			cmd:        approve(),
			wantEvents: []string{domain.EventApprovalDecided}, wantState: domain.StateApprovalDecided,
			check: func(t *testing.T, h *domain.Handoff, _ *domain.Error) {
				if h.Approval.Status != domain.ApprovalApproved || h.Approval.DecidedBy != "ann" || h.Approval.DecidedAt == nil {
					t.Fatalf("approval %+v", h.Approval)
				}
			},
		},
		{
			name: "auto approval up to medium lets the executor act", contract: autoContract("low"),
			cmd:        proof("run-1"),
			wantEvents: []string{domain.EventExecutorStarted, domain.EventProofReceived}, wantState: domain.StateProofReceived,
		},
		{
			name: "auto approval above medium waits for a person", contract: autoContract("high"),
			cmd:      result("run-1", domain.RunFailed),
			wantKind: domain.KindConflict, wantCode: "approval_pending",
		},
		{
			name: "an automatic approval is not decided twice", contract: autoContract("medium"),
			cmd:      reject(),
			wantKind: domain.KindConflict, wantCode: "approval_already_decided",
		},

		// The proof policy.
		{
			name: "required proof may come with the result, which then waits for a review", contract: contract("log"),
			before:     []domain.Command{approve()},
			cmd:        resultWithProof("run-1", succeeded),
			wantEvents: []string{domain.EventExecutorStarted, domain.EventProofReceived, domain.EventResultReceived}, wantState: domain.StateResultReceived,
			check: func(t *testing.T, h *domain.Handoff, _ *domain.Error) {
				if len(h.Proofs) != 1 || h.Proofs[0].Status != succeeded || h.Result == nil || h.Result.Status != succeeded {
					t.Fatalf("proofs %+v, result %+v", h.Proofs, h.Result)
				}
			},
		},
		{
			name: "a result's own proof must cover every required type", contract: contract("log", "screenshot"),
			before:   []domain.Command{approve()},
			cmd:      resultWithProof("run-1", succeeded, "log"),
			wantKind: domain.KindConflict, wantCode: "proof_incomplete",
			check: wantMessage("screenshot"),
		},
		{
			name: "earlier proof of other types does not cover a result", contract: contract("log", "screenshot"),
			before:   []domain.Command{approve(), proof("run-1", "log")},
			cmd:      result("run-1", succeeded),
			wantKind: domain.KindConflict, wantCode: "proof_incomplete",
			check: wantMessage("screenshot"),
		},
		{
			name: "earlier proof and the result's proof cover the types together", contract: contract("log", "screenshot"),
			before:     []domain.Command{approve(), proof("run-1", "log")},
			cmd:        resultWithProof("run-1", succeeded, "screenshot"),
			wantEvents: []string{domain.EventProofReceived, domain.EventResultReceived}, wantState: domain.StateResultReceived,
		},
		{
			name: "without a proof policy a result closes at once", contract: contract(),
			before:     []domain.Command{approve()},
			cmd:        result("run-1", succeeded),
			wantEvents: []string{domain.EventExecutorStarted, domain.EventResultReceived, domain.EventLedgerClosed}, wantState: domain.StateLedgerClosed,
			check: wantClosed("result_received", succeeded, ""),
		},
		{
			name: "a FAILED result needs no proof and closes at once", contract: contract("log"),
			before:     []domain.Command{approve()},
			cmd:        result("run-1", domain.RunFailed),
			wantEvents: []string{domain.EventExecutorStarted, domain.EventResultReceived, domain.EventLedgerClosed}, wantState: domain.StateLedgerClosed,
			check: wantClosed("result_received", domain.RunFailed, ""),
		},
		{
			name: "a CANCELED result after proof closes at once", contract: contract("log"),
			before:     []domain.Command{approve(), proof("run-1")},
			cmd:        result("run-1", domain.RunCanceled),
			wantEvents: []string{domain.EventResultReceived, domain.EventLedgerClosed}, wantState: domain.StateLedgerClosed,
			check: wantClosed("result_received", domain.RunCanceled, ""),
		},
		{
			name: "proof with a FAILED result is recorded as FAILED", contract: contract("log"),
			before:     []domain.Command{approve()},
			cmd:        resultWithProof("run-1", domain.RunFailed),
			wantEvents: []string{domain.EventExecutorStarted, domain.EventProofReceived, domain.EventResultReceived, domain.EventLedgerClosed}, wantState: domain.StateLedgerClosed,
			check: func(t *testing.T, h *domain.Handoff, _ *domain.Error) {
				if len(h.Proofs) != 1 || h.Proofs[0].Status != domain.RunFailed {
					t.Fatalf("proofs %+v", h.Proofs)
				}
			},
		},

		// Review and closing.
		{
			name: "a verified review after the result closes", contract: contract("log"),
			before:     []domain.Command{approve(), resultWithProof("run-1", succeeded)},
			cmd:        review(verified),
			wantEvents: []string{domain.EventProofReviewed, domain.EventLedgerClosed}, wantState: domain.StateLedgerClosed,
			check: wantClosed("result_and_review_in", succeeded, verified),
		},
		{
			name: "a rejecting review after the result closes with both words", contract: contract("log"),
			before:     []domain.Command{approve(), proof("run-1"), result("run-1", succeeded)},
			cmd:        review(rejected),
			wantEvents: []string{domain.EventProofReviewed, domain.EventLedgerClosed}, wantState: domain.StateLedgerClosed,
			check: wantClosed("result_and_review_in", succeeded, rejected),
		},
		{
			name: "needs_review after the result keeps the ledger open", contract: contract("log"),
			before:     []domain.Command{approve(), resultWithProof("run-1", succeeded)},
			cmd:        review(needsReview),
			wantEvents: []string{domain.EventProofReviewed}, wantState: domain.StateProofReviewed,
		},
		{
			name: "a final review after needs_review closes", contract: contract("log"),
			before:     []domain.Command{approve(), resultWithProof("run-1", succeeded), review(needsReview)},
			cmd:        review(verified),
			wantEvents: []string{domain.EventProofReviewed, domain.EventLedgerClosed}, wantState: domain.StateLedgerClosed,
			check: wantClosed("result_and_review_in", succeeded, verified),
		},
		{
			name: "a result after a rejecting review closes with both words", contract: contract("log"),
			before:     []domain.Command{approve(), proof("run-1"), review(rejected)},
			cmd:        result("run-1", succeeded),
			wantEvents: []string{domain.EventResultReceived, domain.EventLedgerClosed}, wantState: domain.StateLedgerClosed,
			check: wantClosed("result_and_review_in", succeeded, rejected),
		},
		{
			name: "a result after needs_review waits for a final review", contract: contract("log"),
			before:     []domain.Command{approve(), proof("run-1"), review(needsReview)},
			cmd:        result("run-1", succeeded),
			wantEvents: []string{domain.EventResultReceived}, wantState: domain.StateResultReceived,
		},
		{
			name: "a review older than the latest proof does not close", contract: contract("log"),
			before:     []domain.Command{approve(), proof("run-1"), review(verified), proof("run-1")},
			cmd:        result("run-1", succeeded),
			wantEvents: []string{domain.EventResultReceived}, wantState: domain.StateResultReceived,
		},
		{
			name: "proof with the result is newer than any review", contract: contract("log"),
			before:     []domain.Command{approve(), proof("run-1"), review(verified)},
			cmd:        resultWithProof("run-1", succeeded),
			wantEvents: []string{domain.EventProofReceived, domain.EventResultReceived}, wantState: domain.StateResultReceived,
		},
		{
			name: "a review needs proof", contract: contract(),
			before:   []domain.Command{approve()},
			cmd:      review(verified),
			wantKind: domain.KindConflict, wantCode: "no_proof",
		},

		// The executor run.
		{
			name: "the first proof fixes executorRunId", contract: contract("log"),
			before:     []domain.Command{approve()},
			cmd:        proof("run-1"),
			wantEvents: []string{domain.EventExecutorStarted, domain.EventProofReceived}, wantState: domain.StateProofReceived,
			check: func(t *testing.T, h *domain.Handoff, _ *domain.Error) {
				if h.ExecutorRunID != "run-1" || h.ExecutorType != "ops-bot" {
					t.Fatalf("run %q type %q", h.ExecutorRunID, h.ExecutorType)
				}
				if got := h.StateAfter[len(h.StateAfter)-2:]; !slices.Equal(got, []domain.State{domain.StateExecutorStarted, domain.StateProofReceived}) {
					t.Fatalf("states after the callback's events %v", got)
				}
			},
		},
		{
			name: "the first result fixes executorRunId", contract: contract(),
			before:     []domain.Command{approve()},
			cmd:        result("run-9", domain.RunFailed),
			wantEvents: []string{domain.EventExecutorStarted, domain.EventResultReceived, domain.EventLedgerClosed}, wantState: domain.StateLedgerClosed,
			check: func(t *testing.T, h *domain.Handoff, _ *domain.Error) {
				if h.ExecutorRunID != "run-9" {
					t.Fatalf("run %q", h.ExecutorRunID)
				}
			},
		},
		{
			name: "proof from another run is refused", contract: contract("log"),
			before:   []domain.Command{approve(), proof("run-1")},
			cmd:      proof("run-2"),
			wantKind: domain.KindConflict, wantCode: "executor_run_mismatch",
		},
		{
			name: "a result from another run is refused", contract: contract("log"),
			before:   []domain.Command{approve(), proof("run-1"), review(verified)},
			cmd:      resultWithProof("run-2", succeeded),
			wantKind: domain.KindConflict, wantCode: "executor_run_mismatch",
		},
		{
			name: "the same run reports again", contract: contract("log"),
			before:     []domain.Command{approve(), proof("run-1"), proof("run-1")},
			cmd:        proof("run-1", "log", "screenshot"),
			wantEvents: []string{domain.EventProofReceived}, wantState: domain.StateProofReceived,
			check: func(t *testing.T, h *domain.Handoff, _ *domain.Error) {
				if len(h.Proofs) != 3 || !h.ProofTypesSeen()["screenshot"] {
					t.Fatalf("proofs %+v", h.Proofs)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := open(t, tc.contract)
			l.do(tc.before...)
			evs, err := l.decide(tc.cmd)
			if tc.wantCode != "" {
				de := refusal(t, evs, err, tc.wantKind, tc.wantCode)
				if tc.check != nil {
					tc.check(t, l.h, de)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got := eventTypes(evs); !slices.Equal(got, tc.wantEvents) {
				t.Fatalf("events %v, want %v", got, tc.wantEvents)
			}
			l.record(evs)
			if l.h.State != tc.wantState {
				t.Fatalf("state %s, want %s", l.h.State, tc.wantState)
			}
			if tc.check != nil {
				tc.check(t, l.h, nil)
			}
		})
	}
}

func wantClosed(reason, final, verdict string) func(*testing.T, *domain.Handoff, *domain.Error) {
	return func(t *testing.T, h *domain.Handoff, _ *domain.Error) {
		t.Helper()
		if h.ClosedReason != reason || h.FinalStatus != final || h.ClosedVerdict != verdict || h.ClosedAt == nil {
			t.Fatalf("closed %q %q %q at %v, want %q %q %q", h.ClosedReason, h.FinalStatus, h.ClosedVerdict, h.ClosedAt, reason, final, verdict)
		}
	}
}

func wantMessage(part string) func(*testing.T, *domain.Handoff, *domain.Error) {
	return func(t *testing.T, _ *domain.Handoff, err *domain.Error) {
		t.Helper()
		if !strings.Contains(err.Message, part) {
			t.Fatalf("message %q does not name %q", err.Message, part)
		}
	}
}

func wantFields(pointerCode ...string) func(*testing.T, *domain.Handoff, *domain.Error) {
	return func(t *testing.T, _ *domain.Handoff, err *domain.Error) {
		t.Helper()
		var got []string
		for _, f := range err.Fields {
			got = append(got, f.Pointer, f.Code)
		}
		if !slices.Equal(got, pointerCode) {
			t.Fatalf("fields %v, want %v", got, pointerCode)
		}
	}
}

// TestClosedLedgerNeverReopens tries every command on ledgers closed every
// way one closes.
func TestClosedLedgerNeverReopens(t *testing.T) {
	closings := []struct {
		name     string
		contract domain.CreateContract
		cmds     []domain.Command
	}{
		{"rejected", contract("log"), []domain.Command{reject()}},
		{"result without a proof policy", contract(), []domain.Command{approve(), result("run-1", domain.RunSucceeded)}},
		{"failed result", contract("log"), []domain.Command{approve(), proof("run-1"), result("run-1", domain.RunFailed)}},
		{"result and review in", contract("log"), []domain.Command{approve(), resultWithProof("run-1", domain.RunSucceeded), review(domain.VerdictVerified)}},
	}
	for _, closing := range closings {
		for _, cmd := range domain.TableCommands {
			t.Run(closing.name+"/"+cmd, func(t *testing.T) {
				l := open(t, closing.contract)
				l.do(closing.cmds...)
				if l.h.State != domain.StateLedgerClosed {
					t.Fatalf("setup left the ledger %s", l.h.State)
				}
				evs, err := l.decide(tableCommand[cmd]())
				refusal(t, evs, err, domain.KindConflict, "ledger_closed")
			})
		}
	}
}

// A review that is not final after the result leaves the handoff in
// proof_reviewed with its result in, a row the table does not show: proof
// and result are refused as already received, and only a final review
// closes the ledger (docs/protocol.md, Variations).
func TestNeedsReviewAfterTheResult(t *testing.T) {
	for _, final := range []string{domain.VerdictVerified, domain.VerdictRejected} {
		l := open(t, contract("log"))
		l.do(approve(), proof("run-1", "log"), result("run-1", domain.RunSucceeded), review(domain.VerdictNeedsReview))
		if l.h.State != domain.StateProofReviewed || l.h.Result == nil {
			t.Fatalf("after needs_review following the result: %s", l.h.State)
		}
		evs, err := l.decide(proof("run-1", "log"))
		refusal(t, evs, err, domain.KindConflict, "result_already_received")
		evs, err = l.decide(result("run-1", domain.RunSucceeded))
		refusal(t, evs, err, domain.KindConflict, "result_already_received")
		evs, err = l.decide(approve())
		refusal(t, evs, err, domain.KindConflict, "approval_already_decided")
		l.do(review(domain.VerdictNeedsReview))
		r := review(final)
		r.Request.BodySHA256 += "-final"
		l.do(r)
		if l.h.State != domain.StateLedgerClosed {
			t.Fatalf("a %s review after needs_review and the result: %s", final, l.h.State)
		}
	}
}
