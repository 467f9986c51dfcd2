package domain

import (
	"encoding/json"
	"testing"
)

func TestBuildPlanAppliesTheRiskPolicy(t *testing.T) {
	out := json.RawMessage(`{"summary":"s","steps":[
		{"title":"look","description":"read the logs","kind":"analysis","requiresApproval":false,"proof":[]},
		{"title":"deploy","description":"ship it","kind":"external_action","requiresApproval":false,"proof":[]},
		{"title":"pay","description":"refund","kind":"external_action","requiresApproval":true,"proof":["transaction_reference"]}]}`)
	for _, c := range []struct {
		risk, mode string
		approvals  []bool
	}{
		{"low", "manual", []bool{false, false, true}},     // a step asks for approval
		{"critical", "manual", []bool{false, true, true}}, // every external action needs it
	} {
		p, err := BuildPlan("id", "o", nil, "x", c.risk, out)
		if err != nil {
			t.Fatal(err)
		}
		if p.ApprovalPolicy.Mode != c.mode || !p.ProofPolicy.Required || len(p.ProofPolicy.ArtifactTypes) != 2 {
			t.Fatalf("%s: %+v %+v", c.risk, p.ApprovalPolicy, p.ProofPolicy)
		}
		for i, s := range p.Steps {
			if s.RequiresApproval != c.approvals[i] || s.Index != i+1 {
				t.Fatalf("%s step %d: %+v", c.risk, i, s)
			}
		}
		if p.Steps[1].Proof[0] != "log" {
			t.Fatalf("an external action without proof gets a log: %+v", p.Steps[1])
		}
	}
	analysis := json.RawMessage(`{"summary":"s","steps":[{"title":"t","description":"d","kind":"analysis","requiresApproval":false,"proof":[]}]}`)
	p, _ := BuildPlan("id", "o", nil, "x", "medium", analysis)
	if p.ApprovalPolicy.Mode != "auto" || p.ProofPolicy.Required {
		t.Fatalf("analysis only: %+v %+v", p.ApprovalPolicy, p.ProofPolicy)
	}
	if _, err := BuildPlan("id", "o", nil, "x", "extreme", analysis); err == nil {
		t.Fatal("bad risk accepted")
	}
}
