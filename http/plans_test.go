package http_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/gateway"
)

func TestAgentPlansToContracts(t *testing.T) {
	e := localEnv(t)
	r := e.must(e.do("POST", "/v1/agent-plans", e.tenantA, map[string]any{
		"objective": "rotate the staging TLS certificate", "constraints": []string{"no downtime"},
		"targetExecutor": "ops-bot", "riskLevel": "high"}), 201)
	var plan domain.Plan
	if err := json.Unmarshal(r.raw, &plan); err != nil {
		t.Fatal(err)
	}
	// The local model proposes an external action without approval; the
	// high risk makes Baton require it, and proof of it.
	if plan.PlanID == "" || plan.Object != "agent_plan" || len(plan.Steps) == 0 || plan.Generation.Model != "local:echo" ||
		plan.ApprovalPolicy.Mode != "manual" || !plan.ProofPolicy.Required || strings.Join(plan.ProofPolicy.ArtifactTypes, ",") != "log" ||
		!strings.Contains(plan.ExecutionBoundary, "never performs") {
		t.Fatalf("plan: %s", r.raw)
	}
	for _, s := range plan.Steps {
		if s.Kind == "external_action" && (!s.RequiresApproval || !strings.Contains(s.PolicyNote, "approval required")) {
			t.Fatalf("step: %+v", s)
		}
	}
	if r.header.Get("Location") != "/v1/agent-plans/"+plan.PlanID {
		t.Fatalf("location %q", r.header.Get("Location"))
	}
	// Read back: the tenant and an admin see it, another tenant does not.
	g := e.must(e.do("GET", "/v1/agent-plans/"+plan.PlanID, e.tenantA2, nil), 200)
	if string(g.raw) != string(r.raw) {
		t.Fatalf("read back differs:\n%s\n%s", g.raw, r.raw)
	}
	e.must(e.do("GET", "/v1/agent-plans/"+plan.PlanID, e.admin, nil), 200)
	e.must(e.do("GET", "/v1/agent-plans/"+plan.PlanID, e.tenantB, nil), 404)
	e.must(e.do("GET", "/v1/agent-plans/not-a-uuid", e.tenantA, nil), 404)

	// A contract from the plan takes its objective, executor, risk,
	// approval and proof policy.
	c := e.must(e.do("POST", "/v1/handoff/contracts", e.tenantA, map[string]any{"planId": plan.PlanID, "executorProtocol": "ops_bot.v1"}), 201)
	if c.str("objective") != plan.Objective || c.str("riskLevel") != "high" || c.str("planId") != plan.PlanID ||
		c.str("approvalPolicy.status") != "PENDING_APPROVAL" || c.str("proofPolicy.required") != "true" {
		t.Fatalf("contract: %s", c.raw)
	}
	p := e.must(e.do("POST", "/v1/handoff/preview", e.tenantA, map[string]any{"planId": plan.PlanID}), 200)
	if !strings.Contains(string(p.raw), plan.Objective) {
		t.Fatalf("preview: %s", p.raw)
	}
	e.usageEvents("a", 1) // the plan's generation, recorded in the background
	before, _ := e.store.Head(context.Background())
	for _, who := range []string{e.tenantB} {
		if r := e.do("POST", "/v1/handoff/contracts", who, map[string]any{"planId": plan.PlanID, "executorProtocol": "ops_bot.v1"}); r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"/planId"`) {
			t.Fatalf("foreign plan: %d %s", r.status, r.raw)
		}
	}
	if r := e.do("POST", "/v1/handoff/contracts", e.tenantA, map[string]any{"planId": "0190d1c4-0000-7000-8000-000000000000", "executorProtocol": "ops_bot.v1"}); r.status != 422 {
		t.Fatalf("unknown plan: %d %s", r.status, r.raw)
	}
	// A contract may not loosen its plan's policy (high risk: manual
	// approval, proof of type log).
	for _, c := range []struct {
		extra   map[string]any
		pointer string
	}{
		{map[string]any{"riskLevel": "low"}, "/riskLevel"},
		{map[string]any{"approvalMode": "auto"}, "/approvalMode"},
		{map[string]any{"proofRequired": []string{}}, "/proofRequired"},
	} {
		body := map[string]any{"planId": plan.PlanID, "executorProtocol": "ops_bot.v1"}
		for k, v := range c.extra {
			body[k] = v
		}
		if r := e.do("POST", "/v1/handoff/contracts", e.tenantA, body); r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"`+c.pointer+`","code":"below_plan"`) {
			t.Fatalf("%v: %d %s", c.extra, r.status, r.raw)
		}
	}
	// Nor do another objective or executor than the plan's: the plan's
	// risk, approval and proof were judged for its own, and the contract
	// would name the plan as its ground.
	for _, c := range []struct {
		extra   map[string]any
		pointer string
	}{
		{map[string]any{"objective": "Delete the production database"}, "/objective"},
		{map[string]any{"targetExecutor": "db-bot"}, "/targetExecutor"},
	} {
		body := map[string]any{"planId": plan.PlanID, "executorProtocol": "ops_bot.v1"}
		for k, v := range c.extra {
			body[k] = v
		}
		for _, path := range []string{"/v1/handoff/contracts", "/v1/handoff/preview"} {
			if r := e.do("POST", path, e.tenantA, body); r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"`+c.pointer+`","code":"differs_from_plan"`) {
				t.Fatalf("%s %v: %d %s", path, c.extra, r.status, r.raw)
			}
		}
	}
	// The plan's own values, given again, are the plan's.
	e.must(e.do("POST", "/v1/handoff/preview", e.tenantA, map[string]any{"planId": plan.PlanID, "objective": plan.Objective, "targetExecutor": "ops-bot"}), 200)
	// Tightening is fine: a critical risk on a high plan.
	e.must(e.do("POST", "/v1/handoff/preview", e.tenantA, map[string]any{"planId": plan.PlanID, "riskLevel": "critical"}), 200)
	// Bad plan requests are refused before any generation.
	for _, b := range []map[string]any{
		{"targetExecutor": "x", "riskLevel": "low"},
		{"objective": "do it", "targetExecutor": "x", "riskLevel": "extreme"},
		{"objective": "do it", "riskLevel": "low"},
		{"objective": "do it", "targetExecutor": "x", "riskLevel": "low", "options": "fast"},
		{"objective": "deploy with key btn_sk_" + strings.Repeat("a1B2", 10), "targetExecutor": "x", "riskLevel": "low"},
	} {
		if r := e.do("POST", "/v1/agent-plans", e.tenantA, b); r.status != 422 {
			t.Fatalf("%v: %d %s", b, r.status, r.raw)
		}
	}
	// A plan's own fields are told as a contract's are.
	empty := e.do("POST", "/v1/agent-plans", e.tenantA, map[string]any{})
	for _, want := range []string{`{"pointer":"/objective","code":"required","message":"is required"}`,
		`{"pointer":"/targetExecutor","code":"required","message":"is required"}`,
		`{"pointer":"/riskLevel","code":"required","message":"is required; one of low, medium, high, critical"}`} {
		if empty.status != 422 || !strings.Contains(string(empty.raw), want) {
			t.Fatalf("an empty plan request: %d %s; want %s", empty.status, empty.raw, want)
		}
	}
	if after, _ := e.store.Head(context.Background()); after != before {
		t.Fatal("a refused request appended events")
	}
	// Low risk and no step asking for approval: the contract may be
	// approved by the auto-approval policy.
	low := e.must(e.do("POST", "/v1/agent-plans", e.tenantA, map[string]any{"objective": "summarise the release notes", "targetExecutor": "docs-bot", "riskLevel": "low"}), 201)
	if low.str("approvalPolicy.mode") != "auto" {
		t.Fatalf("low risk plan: %s", low.raw)
	}
	c = e.must(e.do("POST", "/v1/handoff/contracts", e.tenantA, map[string]any{"planId": low.str("planId"), "executorProtocol": "docs_bot.v1"}), 201)
	if c.str("approvalPolicy.status") != "APPROVED" {
		t.Fatalf("auto-approved contract: %s", c.raw)
	}
}

// panicOnPlan is a shared store whose next PlanCreated append panics, as a
// bug in a handler would.
type panicOnPlan struct {
	sharedStore
	armed *atomic.Bool
}

func (p panicOnPlan) Append(ctx context.Context, stream string, expected eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if len(evs) > 0 && evs[0].Type == "PlanCreated" && p.armed.CompareAndSwap(true, false) {
		panic("handler bug")
	}
	return p.sharedStore.Append(ctx, stream, expected, evs...)
}

// A handler that panics under an Idempotency-Key frees the key: the retry
// runs, it is not told for ten minutes that the first is still running.
func TestIdempotencyKeyFreedAfterPanic(t *testing.T) {
	armed := &atomic.Bool{}
	armed.Store(true)
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvStore(t, cat, func(s eventstore.Store) eventstore.Store { return panicOnPlan{sharedStore{s}, armed} })
	body := map[string]any{"objective": "rotate the staging TLS certificate", "targetExecutor": "ops-bot", "riskLevel": "low"}
	if r := e.do("POST", "/v1/agent-plans", e.tenantA, body, "Idempotency-Key", "plan-1"); r.status != 500 {
		t.Fatalf("first (panics): %d %s", r.status, r.raw)
	}
	r := e.do("POST", "/v1/agent-plans", e.tenantA, body, "Idempotency-Key", "plan-1")
	if r.status != 201 || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("retry after the panic: %d %s", r.status, r.raw)
	}
	again := e.do("POST", "/v1/agent-plans", e.tenantA, body, "Idempotency-Key", "plan-1")
	if again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" || string(again.raw) != string(r.raw) ||
		again.header.Get("Location") != r.header.Get("Location") {
		t.Fatalf("replay: %d %v %s", again.status, again.header, again.raw)
	}
}

// A plan whose step title is blank passes the output schema's minLength,
// but not the plan's policy: it is re-asked as an invalid answer, and a
// model that never gets it right is a 422 output_invalid (it was a 500).
func TestAgentPlanBlankTitleIsReasked(t *testing.T) {
	blank := `{"summary":"s","steps":[{"title":"   ","description":"d","kind":"external_action","requiresApproval":false,"proof":[]}]}`
	good := `{"summary":"s","steps":[{"title":"Rotate","description":"d","kind":"external_action","requiresApproval":false,"proof":[]}]}`
	body := map[string]any{"objective": "rotate the cert", "targetExecutor": "ops-bot", "riskLevel": "low",
		"options": map[string]any{"llm": map[string]any{"model": "openai:gpt-4o-mini"}}}

	u := newScripted(t, blank, good)
	e := scriptedEnv(t, u)
	r := e.must(e.do("POST", "/v1/agent-plans", e.tenantA, body), 201)
	var plan domain.Plan
	if err := json.Unmarshal(r.raw, &plan); err != nil || plan.Generation.Attempts != 2 || plan.Steps[0].Title != "Rotate" {
		t.Fatalf("plan after a blank title: %s", r.raw)
	}
	if !strings.Contains(u.bodies[1], "/steps/0/title") {
		t.Fatalf("the re-ask does not name the blank title: %s", u.bodies[1])
	}

	u = newScripted(t, blank)
	e = scriptedEnv(t, u)
	r = e.must(e.do("POST", "/v1/agent-plans", e.tenantA, body), 422)
	if !strings.Contains(string(r.raw), "output_invalid") || e.countType("PlanCreated") != 0 {
		t.Fatalf("a model that never gives a title: %s", r.raw)
	}
}

// An agent plan's options are read by the body's rules: a name that
// differs from an option's only by case is an unknown one, refused, as on
// generate (a ceiling so spelled would otherwise not hold).
func TestAgentPlanOptionsCaseFolded(t *testing.T) {
	e := localEnv(t)
	r := e.must(e.do("POST", "/v1/agent-plans", e.tenantA, map[string]any{
		"objective": "rotate the cert", "targetExecutor": "ops-bot", "riskLevel": "low",
		"options": map[string]any{"llm": map[string]any{"MAXCOSTUSD": 0.000001}}}), 422)
	if !strings.Contains(string(r.raw), `"pointer":"/options/llm/MAXCOSTUSD","code":"unknown_field"`) || e.countType("PlanCreated") != 0 {
		t.Fatalf("a ceiling in another case: %s", r.raw)
	}
	r = e.must(e.do("POST", "/v1/agent-plans", e.tenantA, map[string]any{
		"objective": "rotate the cert", "targetExecutor": "ops-bot", "riskLevel": "low", "options": "fast"}), 422)
	if !strings.Contains(string(r.raw), "/options") {
		t.Fatalf("options not an object: %s", r.raw)
	}
}

// A plan bigger than a plan may be (a model past its output cap) is
// re-asked as an invalid answer, not stored: its append failed after the
// model's work, a 500 that freed the key for a retry billed again.
func TestAgentPlanTooBigIsReasked(t *testing.T) {
	huge := `{"summary":"s","steps":[{"title":"Rotate","description":"` + strings.Repeat("<&", domain.MaxPlanOutput/2) + `","kind":"external_action","requiresApproval":false,"proof":[]}]}`
	good := `{"summary":"s","steps":[{"title":"Rotate","description":"d","kind":"external_action","requiresApproval":false,"proof":[]}]}`
	body := map[string]any{"objective": "rotate the cert", "targetExecutor": "ops-bot", "riskLevel": "low",
		"options": map[string]any{"llm": map[string]any{"model": "openai:gpt-4o-mini"}}}
	u := newScripted(t, huge, good)
	e := scriptedEnv(t, u)
	r := e.must(e.do("POST", "/v1/agent-plans", e.tenantA, body), 201)
	var plan domain.Plan
	if err := json.Unmarshal(r.raw, &plan); err != nil || plan.Generation.Attempts != 2 || plan.Steps[0].Description != "d" {
		t.Fatalf("plan after one too big: %.300s", r.raw)
	}
}

// A constraint that is not a string is refused before the model is
// called: a null decoded as "" and was planned for and stored as an
// empty constraint, where generate's input schema refuses it.
func TestAgentPlanNullConstraintRefused(t *testing.T) {
	u := newScripted(t, validSummary)
	e := scriptedEnv(t, u)
	before, _ := e.store.Head(context.Background())
	r := e.do("POST", "/v1/agent-plans", e.tenantA, map[string]any{"objective": "rotate the staging TLS certificate",
		"constraints": []any{"no downtime", nil}, "targetExecutor": "ops-bot", "riskLevel": "low"})
	if r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"/constraints/1","code":"invalid_type"`) {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if after, _ := e.store.Head(context.Background()); after != before || u.calls.Load() != 0 {
		t.Fatalf("a refused plan called the model %d times or appended events", u.calls.Load())
	}
}
