package domain_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/domain"
)

// TestDecideCreate checks the creation policies: which approval a contract
// opens with, and which proof policy it records.
func TestDecideCreate(t *testing.T) {
	with := func(change func(*domain.CreateContract)) domain.CreateContract {
		c := contract("log")
		change(&c)
		return c
	}
	tests := []struct {
		name         string
		contract     domain.CreateContract
		wantEvents   []string
		wantState    domain.State
		wantMode     string
		wantApproval string
		wantBy       string
		wantProof    domain.ProofPolicy
	}{
		{
			name: "manual by default", contract: with(func(c *domain.CreateContract) { c.ApprovalMode = "" }),
			wantEvents: []string{domain.EventContractCreated}, wantState: domain.StateContractCreated,
			wantMode: domain.ApprovalModeManual, wantApproval: domain.ApprovalPending,
			wantProof: domain.ProofPolicy{Required: true, ArtifactTypes: []string{"log"}},
		},
		{
			name: "manual waits whatever the risk", contract: with(func(c *domain.CreateContract) { c.RiskLevel = "low" }),
			wantEvents: []string{domain.EventContractCreated}, wantState: domain.StateContractCreated,
			wantMode: domain.ApprovalModeManual, wantApproval: domain.ApprovalPending,
			wantProof: domain.ProofPolicy{Required: true, ArtifactTypes: []string{"log"}},
		},
		{
			name: "auto approves low risk", contract: autoContract("low"),
			wantEvents: []string{domain.EventContractCreated, domain.EventApprovalDecided}, wantState: domain.StateApprovalDecided,
			wantMode: domain.ApprovalModeAuto, wantApproval: domain.ApprovalApproved, wantBy: domain.AutoApprovalPolicy,
			wantProof: domain.ProofPolicy{Required: true, ArtifactTypes: []string{"log"}},
		},
		{
			name: "auto approves medium risk", contract: autoContract("medium"),
			wantEvents: []string{domain.EventContractCreated, domain.EventApprovalDecided}, wantState: domain.StateApprovalDecided,
			wantMode: domain.ApprovalModeAuto, wantApproval: domain.ApprovalApproved, wantBy: domain.AutoApprovalPolicy,
			wantProof: domain.ProofPolicy{Required: true, ArtifactTypes: []string{"log"}},
		},
		{
			name: "auto leaves high risk to a person", contract: autoContract("high"),
			wantEvents: []string{domain.EventContractCreated}, wantState: domain.StateContractCreated,
			wantMode: domain.ApprovalModeAuto, wantApproval: domain.ApprovalPending,
			wantProof: domain.ProofPolicy{Required: true, ArtifactTypes: []string{"log"}},
		},
		{
			name: "auto leaves critical risk to a person", contract: autoContract("critical"),
			wantEvents: []string{domain.EventContractCreated}, wantState: domain.StateContractCreated,
			wantMode: domain.ApprovalModeAuto, wantApproval: domain.ApprovalPending,
			wantProof: domain.ProofPolicy{Required: true, ArtifactTypes: []string{"log"}},
		},
		{
			name: "proof of several types required", contract: contract("log", "screenshot"),
			wantEvents: []string{domain.EventContractCreated}, wantState: domain.StateContractCreated,
			wantMode: domain.ApprovalModeManual, wantApproval: domain.ApprovalPending,
			wantProof: domain.ProofPolicy{Required: true, ArtifactTypes: []string{"log", "screenshot"}},
		},
		{
			name: "no proof required", contract: contract(),
			wantEvents: []string{domain.EventContractCreated}, wantState: domain.StateContractCreated,
			wantMode: domain.ApprovalModeManual, wantApproval: domain.ApprovalPending,
			wantProof: domain.ProofPolicy{Required: false, ArtifactTypes: []string{}},
		},
		{
			name: "an empty list requires no proof", contract: contract([]string{}...),
			wantEvents: []string{domain.EventContractCreated}, wantState: domain.StateContractCreated,
			wantMode: domain.ApprovalModeManual, wantApproval: domain.ApprovalPending,
			wantProof: domain.ProofPolicy{Required: false, ArtifactTypes: []string{}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := domain.DecideCreate(tc.contract)
			if err != nil {
				t.Fatal(err)
			}
			if got := eventTypes(evs); !slices.Equal(got, tc.wantEvents) {
				t.Fatalf("events %v, want %v", got, tc.wantEvents)
			}
			l := open(t, tc.contract)
			h := l.h
			if h.State != tc.wantState || h.Approval.Mode != tc.wantMode || h.Approval.Status != tc.wantApproval || h.Approval.DecidedBy != tc.wantBy {
				t.Fatalf("state %s, approval %+v; want %s, %s %s by %q", h.State, h.Approval, tc.wantState, tc.wantMode, tc.wantApproval, tc.wantBy)
			}
			if h.ProofPolicy.Required != tc.wantProof.Required || !slices.Equal(h.ProofPolicy.ArtifactTypes, tc.wantProof.ArtifactTypes) || h.ProofPolicy.ArtifactTypes == nil {
				t.Fatalf("proof policy %+v, want %+v", h.ProofPolicy, tc.wantProof)
			}
			if tc.wantBy != "" {
				d := evs[1].Data.(domain.ApprovalDecided)
				if !d.Automatic || d.Request != nil || !strings.Contains(d.Reason, tc.contract.RiskLevel) {
					t.Fatalf("the automatic approval: %+v", d)
				}
			}
		})
	}
}

// TestDecideCreateRefusesInvalidContracts checks that a contract breaking a
// rule is refused as KindInvalid naming each field by JSON pointer.
func TestDecideCreateRefusesInvalidContracts(t *testing.T) {
	with := func(change func(*domain.CreateContract)) domain.CreateContract {
		c := contract("log")
		change(&c)
		return c
	}
	tests := []struct {
		name       string
		contract   domain.CreateContract
		wantFields []string // pointer, code, ...
	}{
		{"missing objective", with(func(c *domain.CreateContract) { c.Objective = " " }), []string{"/objective", "required"}},
		{"invisible objective", with(func(c *domain.CreateContract) { c.Objective = "\u200b\u00a0\ufeff\u3164" }), []string{"/objective", "required"}},
		{"missing target executor", with(func(c *domain.CreateContract) { c.TargetExecutor = "" }), []string{"/targetExecutor", "required"}},
		{"missing executor protocol", with(func(c *domain.CreateContract) { c.ExecutorProtocol = "" }), []string{"/executorProtocol", "required"}},
		{"executor protocol without a version", with(func(c *domain.CreateContract) { c.ExecutorProtocol = "ops_bot" }), []string{"/executorProtocol", "invalid_format"}},
		{"missing risk level", with(func(c *domain.CreateContract) { c.RiskLevel = "" }), []string{"/riskLevel", "required"}},
		{"unknown risk level", with(func(c *domain.CreateContract) { c.RiskLevel = "extreme" }), []string{"/riskLevel", "invalid_enum"}},
		{"unknown approval mode", with(func(c *domain.CreateContract) { c.ApprovalMode = "sometimes" }), []string{"/approvalMode", "invalid_enum"}},
		{"bad artifact type", with(func(c *domain.CreateContract) { c.ProofRequired = []string{"log", "Screen Shot"} }), []string{"/proofRequired/1", "invalid_format"}},
		{"artifact type twice", with(func(c *domain.CreateContract) { c.ProofRequired = []string{"log", "log"} }), []string{"/proofRequired/1", "duplicate"}},
		{"too many artifact types", with(func(c *domain.CreateContract) {
			c.ProofRequired = nil
			for i := range 21 {
				c.ProofRequired = append(c.ProofRequired, "t"+strings.Repeat("x", i))
			}
		}), []string{"/proofRequired", "too_many"}},
		{"every missing field at once", domain.CreateContract{HandoffID: "h-1"},
			[]string{"/objective", "required", "/targetExecutor", "required", "/executorProtocol", "required", "/riskLevel", "required"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := domain.DecideCreate(tc.contract)
			wantFields(tc.wantFields...)(t, nil, refusal(t, evs, err, domain.KindInvalid, "validation_failed"))
		})
	}
}

// TestDecideRefusesInvalidCommands checks that a callback breaking a rule
// is refused as KindInvalid naming each field by JSON pointer, in every
// resting state: validation comes before the lifecycle.
func TestDecideRefusesInvalidCommands(t *testing.T) {
	long := strings.Repeat("é", 201)
	withProof := func(change func(*domain.ProofCommand)) domain.Command {
		c := proof("run-1")
		change(&c)
		return c
	}
	withResult := func(change func(*domain.ResultCommand)) domain.Command {
		c := result("run-1", domain.RunSucceeded)
		change(&c)
		return c
	}
	tests := []struct {
		name       string
		cmd        domain.Command
		wantFields []string // pointer, code, ...
	}{
		{"approval without status", domain.ApprovalCommand{ApprovedBy: "ann"}, []string{"/status", "required"}},
		{"approval status not a decision", domain.ApprovalCommand{Status: domain.ApprovalPending, ApprovedBy: "ann"}, []string{"/status", "invalid_enum"}},
		{"approval status unknown", domain.ApprovalCommand{Status: "MAYBE", ApprovedBy: "ann"}, []string{"/status", "invalid_enum"}},
		{"approval without approver", domain.ApprovalCommand{Status: domain.ApprovalApproved}, []string{"/approvedBy", "required"}},
		{"approver name too long", domain.ApprovalCommand{Status: domain.ApprovalApproved, ApprovedBy: long}, []string{"/approvedBy", "too_long"}},
		{"rejection without reason", domain.ApprovalCommand{Status: domain.ApprovalRejected, ApprovedBy: "ann"}, []string{"/reason", "reason_required"}},
		{"rejection with an invisible reason", domain.ApprovalCommand{Status: domain.ApprovalRejected, ApprovedBy: "ann", Reason: "\u200b"}, []string{"/reason", "reason_required"}},
		{"invisible approver", domain.ApprovalCommand{Status: domain.ApprovalApproved, ApprovedBy: "\u200d\u2060"}, []string{"/approvedBy", "required"}},

		{"proof without run id", withProof(func(c *domain.ProofCommand) { c.ExecutorRunID = "" }), []string{"/executorRunId", "required"}},
		{"proof status unknown", withProof(func(c *domain.ProofCommand) { c.Status = "DONE" }), []string{"/status", "invalid_enum"}},
		{"proof status of a result", withProof(func(c *domain.ProofCommand) { c.Status = domain.RunCanceled }), []string{"/status", "invalid_enum"}},
		{"proof without proof", withProof(func(c *domain.ProofCommand) { c.Proof = nil }), []string{"/proof", "required"}},
		{"empty proof", withProof(func(c *domain.ProofCommand) { c.Proof = &domain.Proof{} }), []string{"/proof", "empty_proof"}},
		{"artifact without type", withProof(func(c *domain.ProofCommand) {
			c.Proof.Artifacts = append(c.Proof.Artifacts, domain.Artifact{Text: "x"})
		}), []string{"/proof/artifacts/1/type", "required"}},
		{"artifact without text", withProof(func(c *domain.ProofCommand) { c.Proof.Artifacts[0].Text = "" }), []string{"/proof/artifacts/0/text", "required"}},
		{"executor type too long", withProof(func(c *domain.ProofCommand) { c.ExecutorType = long }), []string{"/executorType", "too_long"}},
		{"an empty proof callback", domain.ProofCommand{}, []string{"/executorRunId", "required", "/status", "required", "/proof", "required"}},

		{"result without result", withResult(func(c *domain.ResultCommand) { c.Result = nil }), []string{"/result", "required"}},
		{"result without summary", withResult(func(c *domain.ResultCommand) { c.Result.Summary = "" }), []string{"/result/summary", "required"}},
		{"result status of a proof", withResult(func(c *domain.ResultCommand) { c.Status = domain.RunRunning }), []string{"/status", "invalid_enum"}},
		{"result without run id", withResult(func(c *domain.ResultCommand) { c.ExecutorRunID = " " }), []string{"/executorRunId", "required"}},
		{"empty proof with the result", withResult(func(c *domain.ResultCommand) { c.Proof = &domain.Proof{} }), []string{"/proof", "empty_proof"}},

		{"review verdict unknown", domain.ReviewCommand{Verdict: "ok", Reviewer: "vic"}, []string{"/verdict", "invalid_enum"}},
		{"review without verdict", domain.ReviewCommand{Reviewer: "vic"}, []string{"/verdict", "required"}},
		{"review without reviewer", domain.ReviewCommand{Verdict: domain.VerdictVerified}, []string{"/reviewer", "required"}},
		{"review notes too long", domain.ReviewCommand{Verdict: domain.VerdictVerified, Reviewer: "vic", Notes: strings.Repeat("n", 4001)}, []string{"/notes", "too_long"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, s := range []domain.State{domain.StateContractCreated, domain.StateApprovalDecided, domain.StateProofReceived,
				domain.StateProofReviewed, domain.StateResultReceived, domain.StateLedgerClosed} {
				t.Run(string(s), func(t *testing.T) {
					l := reach(t, s)
					evs, err := l.decide(tc.cmd)
					wantFields(tc.wantFields...)(t, nil, refusal(t, evs, err, domain.KindInvalid, "validation_failed"))
				})
			}
		})
	}
}
