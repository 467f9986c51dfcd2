package domain

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
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

// A stored plan may list any number of proof types (another writer on a
// shared store): a contract from it checks them in linear time, not in
// one search of its own list per type.
func TestFromPlanManyProofTypes(t *testing.T) {
	types := make([]string, 200000)
	for i := range types {
		types[i] = fmt.Sprintf("t%d", i)
	}
	plan := &Plan{Objective: "o", TargetExecutor: "x", RiskLevel: "high", ProofPolicy: ProofPolicy{ArtifactTypes: types}}
	done := make(chan error, 1)
	var c CreateContract
	go func() { done <- c.FromPlan(plan) }()
	select {
	case err := <-done:
		if err != nil || len(c.ProofRequired) != len(types) {
			t.Fatalf("%v, %d types", err, len(c.ProofRequired))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a contract from a plan of 200,000 proof types took more than 30 s")
	}
	// Still refused when the contract requires less than the plan.
	c = CreateContract{ProofRequired: types[1:]}
	if err := c.FromPlan(plan); err == nil || !strings.Contains(err.Error(), `"t0"`) {
		t.Fatalf("less proof than the plan: %v", err)
	}
}

// A step title of invisible characters only is blank: the plan's reader
// sees a step without a name.
func TestPlanStepTitleNotInvisible(t *testing.T) {
	for _, title := range []string{"   ", "\u200b\u00a0", "\u2060\ufeff", "\u3164"} {
		p := PlanOutputProblems(json.RawMessage(`{"steps":[{"title":"` + title + `","kind":"analysis"}]}`))
		if len(p) != 1 || p[0].Pointer != "/steps/0/title" {
			t.Fatalf("%q: %v", title, p)
		}
	}
	if p := PlanOutputProblems(json.RawMessage(`{"steps":[{"title":"\u200bCheck","kind":"analysis"}]}`)); len(p) != 0 {
		t.Fatalf("a title with words: %v", p)
	}
}

// A name that differs from a plan field's only by case is not the field:
// the output schema reads names as written and passed the plan with it,
// while encoding/json, ignoring case, took its value for the field's. The
// plan was then built from steps the schema never checked (proof types
// outside the enum, no approval where the checked step asked for it).
func TestPlanOutputNamesAsWritten(t *testing.T) {
	checked := `{"title":"t","description":"d","kind":"external_action","requiresApproval":true,"proof":["log"]}`
	for _, c := range []struct{ out, pointer string }{
		{`{"summary":"s","steps":[` + checked + `],"Steps":[{"title":"t","description":"","kind":"analysis","requiresApproval":false,"proof":["Not A Type"]}]}`, "/Steps"},
		{`{"summary":"s","steps":[{"title":"t","description":"d","kind":"external_action","requiresApproval":true,"RequiresApproval":false,"proof":["log"]}]}`, "/steps/0/RequiresApproval"},
		{`{"summary":"s","STEPS":[` + checked + `],"steps":[` + checked + `]}`, "/STEPS"},
	} {
		p := PlanOutputProblems(json.RawMessage(c.out))
		if len(p) != 1 || p[0].Pointer != c.pointer {
			t.Errorf("%s: %v", c.out, p)
		}
		if _, err := BuildPlan("p", "o", nil, "ops-bot", "medium", json.RawMessage(c.out)); err == nil {
			t.Errorf("%s: built", c.out)
		}
	}
	if p := PlanOutputProblems(json.RawMessage(`{"summary":"s","steps":[` + checked + `],"notes":"extra"}`)); len(p) != 0 {
		t.Fatalf("another name: %v", p)
	}
}
