package http_test

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/domain"
)

// TestRequiredApprovalsOverHTTP: with requiredApprovals 2, the creator's
// key is refused, one approval leaves the contract pending, and a second
// key's approval decides it; approvers count by key, not by name.
func TestRequiredApprovalsOverHTTP(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, map[string]any{"requiredApprovals": 2})
	c := e.must(e.do("GET", "/v1/handoff/contracts/"+id, e.tenantA, nil), 200)
	if c.str("approvalPolicy.requiredApprovals") != "2" || c.str("approvalPolicy.separationOfDuties") != "true" {
		t.Fatalf("policy: %s", c.str("approvalPolicy"))
	}
	before := e.events(id)
	if r := e.post(id, "approval", e.tenantA, approveBody()); r.status != 409 || r.str("code") != "separation_of_duties" {
		t.Fatalf("the creator's approval: %d %s", r.status, r.raw)
	}
	if e.events(id) != before {
		t.Fatal("a refused approval appended events")
	}
	body := map[string]any{"status": "APPROVED", "approvedBy": "ops"}
	r := e.must(e.post(id, "approval", e.tenantA2, body), 200)
	if r.str("approvalPolicy.status") != "PENDING_APPROVAL" || r.str("state") != "contract_created" {
		t.Fatalf("one approval of two: %s", r.raw)
	}
	if r := e.post(id, "proof", e.tenantA, proofBody("run-1")); r.status != 409 || r.str("code") != "approval_pending" {
		t.Fatalf("proof after one approval: %d %s", r.status, r.raw)
	}
	// The same key, another name: still one approver.
	if r := e.post(id, "approval", e.tenantA2, map[string]any{"status": "APPROVED", "approvedBy": "someone else"}); r.status != 409 || r.str("code") != "duplicate_approver" {
		t.Fatalf("second approval by the same key: %d %s", r.status, r.raw)
	}
	// A retry of it is a replay.
	if r := e.post(id, "approval", e.tenantA2, body); r.status != 200 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d %s", r.status, r.raw)
	}
	// Another key with a byte-identical body is a second approver.
	r = e.must(e.post(id, "approval", e.admin, body), 200)
	if r.str("approvalPolicy.status") != "APPROVED" || r.str("state") != "approval_decided" || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("second approver: %s", r.raw)
	}
	var approvals []any
	if m, ok := r.body["approvalPolicy"].(map[string]any); ok {
		approvals, _ = m["approvals"].([]any)
	}
	if len(approvals) != 2 {
		t.Fatalf("approvals listed: %s", r.str("approvalPolicy"))
	}
	// Separation of duties: an approver's key may not act as the executor.
	if r := e.post(id, "proof", e.tenantA2, proofBody("run-1")); r.status != 409 || r.str("code") != "separation_of_duties" {
		t.Fatalf("an approver's proof: %d %s", r.status, r.raw)
	}
	e.must(e.post(id, "proof", e.tenantA, proofBody("run-1")), 200)
	if r := e.post(id, "review", e.admin, reviewBody("verified")); r.status != 409 || r.str("code") != "separation_of_duties" {
		t.Fatalf("an approver's review: %d %s", r.status, r.raw)
	}
	l := e.ledger(id, e.tenantA)
	var types []string
	for _, ev := range l.body["events"].([]any) {
		types = append(types, ev.(map[string]any)["type"].(string))
	}
	want := []string{"ContractCreated", "ApprovalGranted", "ApprovalDecided", "ExecutorStarted", "ProofReceived"}
	if len(types) != len(want) {
		t.Fatalf("trail %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("trail %v, want %v", types, want)
		}
	}
	for _, bad := range []map[string]any{{"requiredApprovals": 11}, {"requiredApprovals": 2, "approvalMode": "auto"}, {"escalateAfterSeconds": 60}} {
		body := map[string]any{"objective": "x", "targetExecutor": "ops-bot", "executorProtocol": "ops_bot.v1", "riskLevel": "high"}
		for k, v := range bad {
			body[k] = v
		}
		if r := e.do("POST", "/v1/handoff/contracts", e.tenantA, body); r.status != 422 {
			t.Fatalf("%v: %d %s", bad, r.status, r.raw)
		}
	}
}

// A contract request with a field it does not have is refused and nothing
// made: a policy field misplaced ({"timing":{...}}) or misspelt was
// ignored, and the handoff had none of the deadline its creator asked for.
func TestContractCreateRefusesUnknownFields(t *testing.T) {
	e := newEnv(t)
	base := `"objective":"Rotate the staging TLS certificate","targetExecutor":"ops-bot","executorProtocol":"ops_bot.v1","riskLevel":"medium"`
	for _, c := range []struct{ body, pointer string }{
		{`{` + base + `,"timing":{"approvalTimeoutSeconds":60}}`, "/timing"},
		{`{` + base + `,"approvalTimeoutSecs":60}`, "/approvalTimeoutSecs"},
		{`{` + base + `,"RequiredApprovals":2}`, "/RequiredApprovals"},
	} {
		r := e.do("POST", "/v1/handoff/contracts", e.tenantA, c.body)
		if r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"`+c.pointer+`","code":"unknown_field"`) {
			t.Fatalf("%s: %d %s", c.body, r.status, r.raw)
		}
	}
	if n := e.countType(domain.EventContractCreated); n != 0 {
		t.Fatalf("%d contracts created", n)
	}
	e.must(e.do("POST", "/v1/handoff/contracts", e.tenantA, `{`+base+`,"approvalTimeoutSeconds":60,"requiredApprovals":1}`), 201)
}

// A preview request with a field it does not read is refused; a create's
// approvalMode is taken: "approvalMode":"auto", ignored, previewed a manual
// approval, and the preview's own approvalRequired was refused by the
// create its nextStep sends the same fields to.
func TestHandoffPreviewTakesWhatACreateTakes(t *testing.T) {
	e := newEnv(t)
	base := `"objective":"Rotate the staging TLS certificate","targetExecutor":"ops-bot"`
	for _, c := range []struct{ body, pointer, code string }{
		{`{` + base + `,"approvalTimeoutSeconds":60}`, "/approvalTimeoutSeconds", "unknown_field"},
		{`{` + base + `,"approvalMode":"auto","approvalRequired":true}`, "/approvalMode", "conflict"},
	} {
		r := e.do("POST", "/v1/handoff/preview", e.tenantA, c.body)
		if r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"`+c.pointer+`","code":"`+c.code+`"`) {
			t.Fatalf("%s: %d %s", c.body, r.status, r.raw)
		}
	}
	for body, want := range map[string]string{
		`{` + base + `,"approvalMode":"auto"}`:    "auto",
		`{` + base + `,"approvalRequired":false}`: "auto",
		`{` + base + `,"approvalRequired":true}`:  "manual",
		`{` + base + `,"approvalMode":"manual"}`:  "manual",
		`{` + base + `}`:                          "manual",
	} {
		r := e.must(e.do("POST", "/v1/handoff/preview", e.tenantA, body), 200)
		if got := r.str("approvalPolicy.mode"); got != want {
			t.Fatalf("%s: approvalPolicy.mode %q, want %q", body, got, want)
		}
	}
	e.must(e.do("POST", "/v1/handoff/contracts", e.tenantA, `{`+base+`,"executorProtocol":"ops_bot.v1","riskLevel":"medium","approvalMode":"auto"}`), 201)
}
