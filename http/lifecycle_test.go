package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain"
	batonhttp "github.com/batonhq/baton/http"
	"github.com/batonhq/baton/projections"
)

// reach puts a new handoff in a resting state through the API.
func (e *env) reach(state domain.State) string {
	e.t.Helper()
	id := e.contract(e.tenantA, nil)
	steps := map[domain.State][]func(){
		domain.StateContractCreated: nil,
		domain.StateApprovalDecided: {func() { e.must(e.post(id, "approval", e.tenantA, approveBody()), 200) }},
		domain.StateExecutorStarted: {
			func() { e.must(e.post(id, "approval", e.tenantA, approveBody()), 200) },
			func() { e.must(e.post(id, "heartbeat", e.tenantA, map[string]any{"executorRunId": "run-1"}), 200) },
		},
		domain.StateProofReceived: {
			func() { e.must(e.post(id, "approval", e.tenantA, approveBody()), 200) },
			func() { e.must(e.post(id, "proof", e.tenantA, proofBody("run-1")), 200) },
		},
		domain.StateProofReviewed: {
			func() { e.must(e.post(id, "approval", e.tenantA, approveBody()), 200) },
			func() { e.must(e.post(id, "proof", e.tenantA, proofBody("run-1")), 200) },
			func() { e.must(e.post(id, "review", e.admin, reviewBody("verified")), 200) },
		},
		domain.StateResultReceived: {
			func() { e.must(e.post(id, "approval", e.tenantA, approveBody()), 200) },
			func() { e.must(e.post(id, "proof", e.tenantA, proofBody("run-1")), 200) },
			func() { e.must(e.post(id, "result", e.tenantA, resultBody("run-1")), 200) },
		},
		domain.StateLedgerClosed: {func() { e.must(e.post(id, "approval", e.tenantA, rejectBody()), 200) }},
	}
	for _, step := range steps[state] {
		step()
	}
	got := e.must(e.do("GET", "/v1/handoff/contracts/"+id, e.tenantA, nil), 200).str("state")
	if got != string(state) {
		e.t.Fatalf("setup reached %s, want %s", got, state)
	}
	return id
}

// TestPublishedTableOverHTTP checks that the transition table GET
// /v1/executor-protocol publishes (the one in docs/protocol.md) is what the
// HTTP front answers: walked cell by cell, allowed commands move to the
// stated state with a receipt, refused ones answer the stated status and
// code and append nothing. The rules behind the table are tested in domain,
// through Decide.
func TestPublishedTableOverHTTP(t *testing.T) {
	e := newEnv(t)
	var published struct {
		Table []batonhttp.Cell `json:"table"`
	}
	if err := json.Unmarshal(e.must(e.do("GET", "/v1/executor-protocol", e.tenantA, nil), 200).raw, &published); err != nil {
		t.Fatal(err)
	}
	if want := batonhttp.TransitionTable(); len(published.Table) == 0 || !reflect.DeepEqual(published.Table, want) {
		t.Fatalf("published table:\n%+v\nwant (docs/protocol.md's):\n%+v", published.Table, want)
	}
	recorded := domain.TransitionTable() // the same cells, with the events each records
	for i, cell := range published.Table {
		t.Run(string(cell.State)+"/"+cell.Command, func(t *testing.T) {
			e.t = t
			id := e.reach(cell.State)
			before := e.events(id)
			var r response
			switch cell.Command {
			case domain.CommandApprove:
				r = e.post(id, "approval", e.tenantA, approveBody())
			case domain.CommandReject:
				r = e.post(id, "approval", e.tenantA, rejectBody())
			case domain.CommandProof:
				r = e.post(id, "proof", e.tenantA, proofBody("run-1"))
			case domain.CommandResult:
				r = e.post(id, "result", e.tenantA, resultBody("run-1"))
			case domain.CommandReview:
				r = e.post(id, "review", e.admin, reviewBody("verified"))
			default:
				t.Fatalf("the published table names an unknown command %q", cell.Command)
			}
			if r.status != cell.Status {
				t.Fatalf("status %d, want %d: %s", r.status, cell.Status, r.raw)
			}
			if cell.Code != "" {
				if r.str("code") != cell.Code {
					t.Fatalf("code %q, want %q", r.str("code"), cell.Code)
				}
				if after := e.events(id); after != before {
					t.Fatalf("a refused command appended %d events", after-before)
				}
				return
			}
			if got := r.str("state"); got != string(cell.Next) {
				t.Fatalf("state %s, want %s", got, cell.Next)
			}
			if r.str("ledgerHead.hash") == "" {
				t.Fatalf("allowed command left no receipt: %s", r.raw)
			}
			if n, want := e.events(id)-before, len(recorded[i].Events); n != want {
				t.Fatalf("allowed command appended %d events, want %d (%v)", n, want, recorded[i].Events)
			}
		})
	}
}

func TestWholeHandoffAndLedger(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, nil)
	created := e.must(e.do("GET", "/v1/handoff/contracts/"+id, e.tenantA, nil), 200)
	for _, f := range []string{"protocolVersion", "schemaVersion", "approvalPolicy.status", "proofPolicy.required", "callbacks.proof", "ledger.head.hash", "createdAt"} {
		if created.str(f) == "" {
			t.Fatalf("contract lacks %s: %s", f, created.raw)
		}
	}
	if created.str("protocolVersion") != domain.ProtocolVersion || created.str("schemaVersion") != domain.SchemaVersion {
		t.Fatalf("versions: %s", created.raw)
	}
	// Proof before approval: refused, nothing stored.
	r := e.must(e.post(id, "proof", e.tenantA, proofBody("run-7")), 409)
	if r.str("code") != "approval_pending" || e.events(id) != 1 {
		t.Fatalf("proof before approval: %s (%d events)", r.raw, e.events(id))
	}
	e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
	p := e.must(e.post(id, "proof", e.tenantA, proofBody("run-7")), 200)
	if p.str("executorRunId") != "run-7" || p.str("state") != "proof_received" {
		t.Fatalf("proof: %s", p.raw)
	}
	// Another run may not report on this handoff.
	if r := e.post(id, "proof", e.tenantA, proofBody("run-8")); r.status != 409 || r.str("code") != "executor_run_mismatch" {
		t.Fatalf("other run: %d %s", r.status, r.raw)
	}
	// A tenant key cannot review.
	if r := e.post(id, "review", e.tenantA, reviewBody("verified")); r.status != 403 {
		t.Fatalf("tenant review: %d %s", r.status, r.raw)
	}
	e.must(e.post(id, "review", e.admin, reviewBody("verified")), 200)
	res := e.must(e.post(id, "result", e.tenantA, resultBody("run-7")), 200)
	if res.str("state") != "ledger_closed" || res.str("ledger.closedReason") != "result_and_review_in" {
		t.Fatalf("result after verified review should close: %s", res.raw)
	}
	l := e.ledger(id, e.tenantA)
	if l.str("state") != "ledger_closed" || l.str("chain.intact") != "true" {
		t.Fatalf("ledger: %s", l.raw)
	}
	var trail struct {
		Events []domain.LedgerEntry `json:"events"`
		Head   domain.LedgerHead    `json:"head"`
	}
	json.Unmarshal(l.raw, &trail)
	types := []string{}
	for _, ev := range trail.Events {
		types = append(types, ev.Type+">"+string(ev.StateAfter))
	}
	want := "ContractCreated>contract_created ApprovalDecided>approval_decided ExecutorStarted>executor_started ProofReceived>proof_received ProofReviewed>proof_reviewed ResultReceived>result_received LedgerClosed>ledger_closed"
	if strings.Join(types, " ") != want {
		t.Fatalf("trail:\n%s\nwant\n%s", strings.Join(types, " "), want)
	}
	if trail.Head.Seq != 7 || trail.Head.Hash != trail.Events[6].Hash || res.str("ledgerHead.hash") != trail.Head.Hash {
		t.Fatalf("head %+v vs last answer %s", trail.Head, res.str("ledgerHead"))
	}
	// Another tenant sees nothing; a second key of the same tenant sees all.
	if r := e.do("GET", "/v1/handoff/contracts/"+id, e.tenantB, nil); r.status != 404 {
		t.Fatalf("other tenant: %d", r.status)
	}
	if r := e.do("GET", "/v1/executions/"+id+"/ledger", e.tenantB, nil); r.status != 404 {
		t.Fatalf("other tenant ledger: %d", r.status)
	}
	if r := e.post(id, "approval", e.tenantB, approveBody()); r.status != 404 {
		t.Fatalf("other tenant callback: %d", r.status)
	}
	e.must(e.do("GET", "/v1/handoff/contracts/"+id, e.tenantA2, nil), 200)
}

func TestLifecycleRules(t *testing.T) {
	e := newEnv(t)
	t.Run("rejection needs a reason", func(t *testing.T) {
		e.t = t
		id := e.contract(e.tenantA, nil)
		r := e.must(e.post(id, "approval", e.tenantA, map[string]any{"status": "REJECTED", "approvedBy": "bob"}), 422)
		if !strings.Contains(string(r.raw), `"/reason"`) || e.events(id) != 1 {
			t.Fatalf("%s", r.raw)
		}
		r = e.must(e.post(id, "approval", e.tenantA, rejectBody()), 200)
		if r.str("state") != "ledger_closed" || r.str("approvalPolicy.status") != "REJECTED" {
			t.Fatalf("%s", r.raw)
		}
		if r := e.post(id, "proof", e.tenantA, proofBody("run-1")); r.status != 409 {
			t.Fatalf("proof after rejection: %d", r.status)
		}
	})
	t.Run("result needs the required proof", func(t *testing.T) {
		e.t = t
		id := e.contract(e.tenantA, map[string]any{"proofRequired": []string{"log", "screenshot"}})
		e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
		if r := e.post(id, "result", e.tenantA, resultBody("run-1")); r.str("code") != "proof_required" {
			t.Fatalf("%s", r.raw)
		}
		e.must(e.post(id, "proof", e.tenantA, proofBody("run-1")), 200)
		r := e.post(id, "result", e.tenantA, resultBody("run-1"))
		if r.str("code") != "proof_incomplete" || !strings.Contains(r.str("detail"), "screenshot") {
			t.Fatalf("%s", r.raw)
		}
		// Proof together with the result, then review closes.
		body := resultBody("run-1")
		body["proof"] = map[string]any{"summary": "screen", "artifacts": []any{map[string]any{"type": "screenshot", "text": "https://files.example/shot-1.png"}}}
		r = e.must(e.post(id, "result", e.tenantA, body), 200)
		if r.str("state") != "result_received" {
			t.Fatalf("%s", r.raw)
		}
		r = e.must(e.post(id, "review", e.admin, reviewBody("needs_review")), 200)
		if r.str("state") != "proof_reviewed" {
			t.Fatalf("needs_review must not close: %s", r.raw)
		}
		r = e.must(e.post(id, "review", e.admin, reviewBody("verified")), 200)
		if r.str("state") != "ledger_closed" {
			t.Fatalf("verified review after result must close: %s", r.raw)
		}
	})
	t.Run("auto approval up to medium", func(t *testing.T) {
		e.t = t
		for _, tc := range []struct{ risk, want, by string }{
			{"low", "APPROVED", domain.AutoApprovalPolicy},
			{"medium", "APPROVED", domain.AutoApprovalPolicy},
			{"high", "PENDING_APPROVAL", ""},
			{"critical", "PENDING_APPROVAL", ""},
		} {
			id := e.contract(e.tenantA, map[string]any{"approvalMode": "auto", "riskLevel": tc.risk})
			r := e.must(e.do("GET", "/v1/handoff/contracts/"+id, e.tenantA, nil), 200)
			if r.str("approvalPolicy.status") != tc.want || r.str("approvalPolicy.decidedBy") != tc.by {
				t.Fatalf("risk %s: %s", tc.risk, r.raw)
			}
		}
	})
	t.Run("no proof required closes on result", func(t *testing.T) {
		e.t = t
		id := e.contract(e.tenantA, map[string]any{"proofRequired": []string{}})
		e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
		r := e.must(e.post(id, "result", e.tenantA, resultBody("run-1")), 200)
		if r.str("state") != "ledger_closed" {
			t.Fatalf("%s", r.raw)
		}
	})
	t.Run("failed result closes without review", func(t *testing.T) {
		e.t = t
		id := e.contract(e.tenantA, nil)
		e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
		body := resultBody("run-1")
		body["status"] = "FAILED"
		r := e.must(e.post(id, "result", e.tenantA, body), 200)
		if r.str("state") != "ledger_closed" || r.str("ledger.finalStatus") != "FAILED" {
			t.Fatalf("%s", r.raw)
		}
	})
	t.Run("retried callbacks replay and append nothing", func(t *testing.T) {
		e.t = t
		id := e.contract(e.tenantA, nil)
		first := e.must(e.post(id, "approval", e.tenantA, approveBody(), "Idempotency-Key", "k-1"), 200)
		n := e.events(id)
		again := e.must(e.post(id, "approval", e.tenantA, approveBody(), "Idempotency-Key", "k-1"), 422)
		if again.str("code") != "idempotency_key_reused" {
			t.Fatalf("same key, other body: %s", again.raw)
		}
		pb, _ := json.Marshal(proofBody("run-1"))
		p1 := e.must(e.post(id, "proof", e.tenantA, pb), 200)
		p2 := e.must(e.post(id, "proof", e.tenantA, pb), 200)
		if !bytes.Equal(p1.raw, p2.raw) || p2.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("identical body must replay the first answer:\n%s\n%s", p1.raw, p2.raw)
		}
		if e.events(id) != n+2 {
			t.Fatalf("events %d, want %d (ExecutorStarted + ProofReceived once)", e.events(id), n+2)
		}
		_ = first
		// Under a key the body is compared as JSON, as on generate: the
		// same fields in another order and spacing are the retry.
		id2 := e.contract(e.tenantA, nil)
		a1 := e.must(e.post(id2, "approval", e.tenantA, `{"status":"APPROVED","approvedBy":"ann"}`, "Idempotency-Key", "k-json"), 200)
		m := e.events(id2)
		a2 := e.must(e.post(id2, "approval", e.tenantA, "{ \"approvedBy\" : \"ann\",\n \"status\": \"APPROVED\" }", "Idempotency-Key", "k-json"), 200)
		if !bytes.Equal(a1.raw, a2.raw) || a2.header.Get("Idempotent-Replayed") != "true" || e.events(id2) != m {
			t.Fatalf("the same JSON reformatted under its key: %s", a2.raw)
		}
		if r := e.must(e.post(id2, "approval", e.tenantA, `{"status":"APPROVED","approvedBy":"bob"}`, "Idempotency-Key", "k-json"), 422); r.str("code") != "idempotency_key_reused" {
			t.Fatalf("other JSON under the key: %s", r.raw)
		}
	})
	t.Run("secrets are refused and not stored", func(t *testing.T) {
		e.t = t
		id := e.contract(e.tenantA, nil)
		e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
		secret := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + strings.Repeat("x7Qz", 40) + "\n-----END RSA PRIVATE KEY-----"
		body := proofBody("run-1")
		body["proof"].(map[string]any)["artifacts"] = []any{map[string]any{"type": "log", "text": "ok"}, map[string]any{"type": "log", "text": secret}}
		n := e.events(id)
		r := e.must(e.post(id, "proof", e.tenantA, body), 422)
		if r.str("code") != "secret_detected" || !strings.Contains(string(r.raw), "/proof/artifacts/1/text") || strings.Contains(string(r.raw), "MIIEow") {
			t.Fatalf("%s", r.raw)
		}
		if e.events(id) != n {
			t.Fatal("a refused callback was stored")
		}
		// encoding/json takes "Proof" for "proof": the scan must look
		// there too, and in every other field.
		odd := map[string]any{"executorType": "ops-bot", "executorRunId": "run-1", "status": "RUNNING",
			"Proof": map[string]any{"summary": "x", "artifacts": []any{map[string]any{"type": "log", "text": secret}}}}
		if r := e.must(e.post(id, "proof", e.tenantA, odd), 422); r.str("code") != "secret_detected" || !strings.Contains(string(r.raw), "/Proof/artifacts/0/text") {
			t.Fatalf("a secret under \"Proof\": %s", r.raw)
		}
		inID := proofBody(domain.KeyPrefix + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0")
		if r := e.must(e.post(id, "proof", e.tenantA, inID), 422); r.str("code") != "secret_detected" {
			t.Fatalf("a key as executorRunId: %s", r.raw)
		}
		if e.events(id) != n {
			t.Fatal("a refused callback was stored")
		}
	})
}

// The same body sent again is a retry only when it repeats the last
// accepted callback (without a key) or its key (with one): a verifier that
// sends the same review after other callbacks, under a new key or none,
// records a new review.
func TestSameBodyLaterIsANewCallback(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, nil)
	e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
	e.must(e.post(id, "proof", e.tenantA, proofBody("run-1")), 200)
	review := map[string]any{"verdict": "verified", "reviewer": "v"} // no unique text: the same bytes each time
	e.must(e.post(id, "review", e.admin, review, "Idempotency-Key", "rev-1"), 200)
	// Right after, without a key, the same body is its retry.
	n := e.events(id)
	if r := e.must(e.post(id, "review", e.admin, review), 200); r.header.Get("Idempotent-Replayed") != "true" || e.events(id) != n {
		t.Fatalf("an immediate identical review was not a retry: %v, %d events (was %d)", r.header, e.events(id), n)
	}
	e.must(e.post(id, "proof", e.tenantA, proofBody("run-1")), 200)
	for _, headers := range [][]string{{"Idempotency-Key", "rev-2"}, nil} {
		n := e.events(id)
		r := e.must(e.post(id, "review", e.admin, review, headers...), 200)
		if r.header.Get("Idempotent-Replayed") != "" || e.events(id) != n+1 {
			t.Fatalf("headers %v: the same review after another proof was replayed: %v, %d events (was %d)", headers, r.header, e.events(id), n)
		}
		e.must(e.post(id, "proof", e.tenantA, proofBody("run-1")), 200)
	}
}

// A ledger closed on a review keeps the verdict beside the executor's
// final status: a SUCCEEDED result whose proof was rejected shows both.
func TestClosedLedgerKeepsTheVerdict(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, nil)
	e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
	e.must(e.post(id, "proof", e.tenantA, proofBody("run-1")), 200)
	e.must(e.post(id, "review", e.admin, reviewBody("rejected")), 200)
	r := e.must(e.post(id, "result", e.tenantA, resultBody("run-1")), 200)
	if r.str("state") != "ledger_closed" || r.str("ledger.finalStatus") != "SUCCEEDED" || r.str("ledger.reviewVerdict") != "rejected" {
		t.Fatalf("closed: %s", r.raw)
	}
}

func TestBadInput(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, nil)
	tests := []struct {
		name       string
		method     string
		path       string
		key        string
		body       any
		wantStatus int
		wantCode   string
		wantField  string
	}{
		{"no key", "POST", "/v1/handoff/contracts", "", "{}", 401, "missing_api_key", ""},
		{"key without its scheme", "POST", "/v1/handoff/contracts", "", "{}", 401, "malformed_authorization", ""},
		{"unknown key", "POST", "/v1/handoff/contracts", domain.KeyPrefix + strings.Repeat("A", 40), "{}", 401, "invalid_api_key", ""},
		{"malformed JSON", "POST", "/v1/handoff/contracts", e.tenantA, `{"objective":`, 400, "malformed_json", ""},
		{"not an object", "POST", "/v1/handoff/contracts", e.tenantA, `[1,2]`, 422, "validation_failed", ""},
		{"wrong type", "POST", "/v1/handoff/contracts", e.tenantA, `{"objective": 5}`, 422, "validation_failed", "/objective"},
		{"missing fields", "POST", "/v1/handoff/contracts", e.tenantA, `{"objective":"x"}`, 422, "validation_failed", "/targetExecutor"},
		{"bad enum", "POST", "/v1/handoff/contracts", e.tenantA, `{"objective":"x","targetExecutor":"y","executorProtocol":"y.v1","riskLevel":"extreme"}`, 422, "validation_failed", "/riskLevel"},
		{"bad protocol", "POST", "/v1/handoff/contracts", e.tenantA, `{"objective":"x","targetExecutor":"y","executorProtocol":"y","riskLevel":"low"}`, 422, "validation_failed", "/executorProtocol"},
		{"too large", "POST", "/v1/handoff/contracts", e.tenantA, `{"objective":"` + strings.Repeat("a", 70<<10) + `"}`, 413, "body_too_large", ""},
		{"unknown handoff", "POST", "/v1/executions/nope/approval", e.tenantA, approveBody(), 404, "handoff_not_found", ""},
		{"unknown handoff read", "GET", "/v1/handoff/contracts/nope", e.tenantA, nil, 404, "handoff_not_found", ""},
		{"bad approval status", "POST", "/v1/executions/" + id + "/approval", e.tenantA, `{"status":"MAYBE","approvedBy":"x"}`, 422, "validation_failed", "/status"},
		{"nested wrong type", "POST", "/v1/executions/" + id + "/proof", e.tenantA, `{"executorRunId":"r","status":"RUNNING","proof":{"summary":"s","artifacts":"none"}}`, 422, "validation_failed", "/proof/artifacts"},
		{"overlong idempotency key", "POST", "/v1/executions/" + id + "/approval", e.tenantA, approveBody(), 422, "invalid_idempotency_key", "header:Idempotency-Key"},
		{"bad list filter", "GET", "/v1/handoff/contracts?state=done", e.tenantA, nil, 422, "validation_failed", "query:state"},
		{"empty list filter", "GET", "/v1/handoff/contracts?targetExecutor=", e.tenantA, nil, 422, "validation_failed", "query:targetExecutor"},
		{"empty state filter", "GET", "/v1/handoff/contracts?state=", e.tenantA, nil, 422, "validation_failed", "query:state"},
		{"repeated list filter", "GET", "/v1/handoff/contracts?targetExecutor=ops-bot&targetExecutor=other", e.tenantA, nil, 422, "validation_failed", "query:targetExecutor"},
		{"repeated cursor", "GET", "/v1/handoff/contracts?cursor=a&cursor=b", e.tenantA, nil, 422, "validation_failed", "query:cursor"},
		{"tenant key on admin route", "POST", "/v1/admin/keys", e.tenantA, `{"tenant":"c"}`, 403, "admin_key_required", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			var headers []string
			switch tc.name {
			case "overlong idempotency key":
				headers = []string{"Idempotency-Key", strings.Repeat("k", 256)}
			case "key without its scheme":
				headers = []string{"Authorization", e.tenantA}
			}
			before := e.events(id)
			r := e.do(tc.method, tc.path, tc.key, tc.body, headers...)
			if r.status != tc.wantStatus || r.str("code") != tc.wantCode {
				t.Fatalf("got %d %s, want %d %s: %s", r.status, r.str("code"), tc.wantStatus, tc.wantCode, r.raw)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("content type %q", ct)
			}
			if r.header.Get("x-request-id") == "" || r.str("requestId") != r.header.Get("x-request-id") {
				t.Fatalf("request id missing: %s", r.raw)
			}
			if tc.wantField != "" && !strings.Contains(r.str("fields"), `"`+tc.wantField+`"`) {
				t.Fatalf("field %s not named: %s", tc.wantField, r.raw)
			}
			if e.events(id) != before {
				t.Fatal("a refused request appended events")
			}
		})
	}
}

// Both headers: the Baton key wins over a provider's key in the other
// header; two different Baton keys are refused.
func TestTwoKeyHeaders(t *testing.T) {
	e := newEnv(t)
	providerKey := "sk-" + "ant-" + strings.Repeat("x", 20)
	if r := e.do("GET", "/v1/handoff/contracts", "", nil, "x-api-key", providerKey, "Authorization", "bearer  "+e.tenantA+" "); r.status != 200 {
		t.Fatalf("provider key in x-api-key, Baton key as bearer: %d %s", r.status, r.raw)
	}
	if r := e.do("GET", "/v1/handoff/contracts", "", nil, "x-api-key", e.tenantA, "Authorization", "Bearer "+providerKey); r.status != 200 {
		t.Fatalf("Baton key in x-api-key, provider key as bearer: %d %s", r.status, r.raw)
	}
	if r := e.do("GET", "/v1/handoff/contracts", "", nil, "x-api-key", e.tenantA, "Authorization", "Bearer "+e.tenantB); r.status != 401 || r.str("code") != "conflicting_api_keys" {
		t.Fatalf("two Baton keys: %d %s", r.status, r.raw)
	}
	// The same header twice: the first was taken (a bad one first, 401;
	// a good one first, 200): refused either way.
	for _, name := range []string{"Authorization", "X-Api-Key"} {
		req, _ := http.NewRequest("GET", e.srv.URL+"/v1/handoff/contracts", nil)
		val := func(k string) string {
			if name == "Authorization" {
				return "Bearer " + k
			}
			return k
		}
		req.Header[name] = []string{val(e.tenantA), val("btn_sk_bogus")}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 || !strings.Contains(string(b), "conflicting_api_keys") {
			t.Fatalf("%s twice: %d %s", name, resp.StatusCode, b)
		}
	}
}

func TestBearerAndListing(t *testing.T) {
	e := newEnv(t)
	ids := map[string]bool{}
	for i := 0; i < 5; i++ {
		ids[e.contract(e.tenantA, nil)] = true
	}
	e.contract(e.tenantB, nil)
	// Authorization: Bearer works like x-api-key.
	var seen []string
	for cursor := ""; ; {
		r := e.must(e.do("GET", "/v1/handoff/contracts?limit=2&approvalStatus=PENDING_APPROVAL&cursor="+cursor, "", nil, "Authorization", "Bearer "+e.tenantA), 200)
		var page struct {
			Data       []map[string]any `json:"data"`
			HasMore    bool             `json:"hasMore"`
			NextCursor string           `json:"nextCursor"`
		}
		json.Unmarshal(r.raw, &page)
		for _, c := range page.Data {
			seen = append(seen, c["handoffId"].(string))
		}
		if !page.HasMore {
			break
		}
		cursor = page.NextCursor
	}
	if len(seen) != 5 {
		t.Fatalf("listed %d contracts of tenant a, want 5", len(seen))
	}
	for _, id := range seen {
		if !ids[id] {
			t.Fatalf("listed %s, not tenant a's", id)
		}
	}
	// A cursor that is not one of the tenant's handoffs (mangled, or
	// another tenant's id) is refused, not read as the end of the list or
	// as a place to start from.
	other := e.contract(e.tenantB, nil)
	for _, c := range []string{"garbage", "zzzz", other, "00000000-0000-0000-0000-000000000000"} {
		r := e.do("GET", "/v1/handoff/contracts?limit=2&cursor="+c, e.tenantA, nil)
		if r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"query:cursor","code":"unknown_cursor"`) {
			t.Fatalf("cursor %q: %d %s", c, r.status, r.raw)
		}
	}
	r := e.must(e.do("GET", "/v1/handoff/contracts?state=approval_decided", e.tenantA, nil), 200)
	if strings.Contains(string(r.raw), "handoffId") {
		t.Fatalf("filter by state: %s", r.raw)
	}
	// An admin creates a key over HTTP; it works at once.
	k := e.must(e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "c"}), 201)
	e.must(e.do("GET", "/v1/executor-protocol", k.str("key"), nil), 200)
}

// TestConcurrentCallbacks fires 200 callbacks at once at one handoff, per
// step: exactly one transition each, every other answer a 409 or a replay,
// no duplicate events.
func TestConcurrentCallbacks(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, map[string]any{"proofRequired": []string{}})
	fire := func(cb string, body func(i int) any) (ok, replays, conflicts int) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		start := make(chan struct{})
		for i := 0; i < 200; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				r := e.post(id, cb, e.tenantA, body(i))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case r.status == 200 && r.header.Get("Idempotent-Replayed") == "true":
					replays++
				case r.status == 200:
					ok++
				case r.status == 409:
					conflicts++
				default:
					t.Errorf("%s %d: %d %s", cb, i, r.status, r.raw)
				}
			}(i)
		}
		close(start)
		wg.Wait()
		return
	}
	// Distinct approvals: one wins, the rest are refused.
	ok, rep, conf := fire("approval", func(i int) any {
		return map[string]any{"status": "APPROVED", "approvedBy": fmt.Sprintf("approver-%d", i)}
	})
	if ok != 1 || rep != 0 || conf != 199 {
		t.Fatalf("approvals: %d applied, %d replayed, %d refused", ok, rep, conf)
	}
	// Identical results (an executor retrying): one applies, the rest replay.
	same, _ := json.Marshal(resultBody("run-1"))
	ok, rep, conf = fire("result", func(int) any { return same })
	if ok != 1 || rep+conf != 199 || rep == 0 {
		t.Fatalf("results: %d applied, %d replayed, %d refused", ok, rep, conf)
	}
	l := e.ledger(id, e.tenantA)
	var trail struct {
		Events []domain.LedgerEntry `json:"events"`
	}
	json.Unmarshal(l.raw, &trail)
	var types []string
	for _, ev := range trail.Events {
		types = append(types, ev.Type)
	}
	if got := strings.Join(types, ","); got != "ContractCreated,ApprovalDecided,ExecutorStarted,ResultReceived,LedgerClosed" {
		t.Fatalf("trail: %s", got)
	}
}

// TestReadModelRebuildIsByteIdentical rebuilds the read models from position
// zero into a new file and compares every key and value.
func TestReadModelRebuildIsByteIdentical(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 4; i++ {
		e.reach([]domain.State{domain.StateProofReviewed, domain.StateLedgerClosed, domain.StateResultReceived, domain.StateContractCreated}[i])
	}
	ctx := context.Background()
	if err := e.proj.WaitForHead(ctx, 5e9); err != nil {
		t.Fatal(err)
	}
	live, err := e.proj.Dump()
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := projections.Open(filepath.Join(t.TempDir(), "rebuilt.db"), e.store, projections.NewHandoffs(), projections.Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if err := fresh.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := fresh.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if len(live) == 0 || !bytes.Equal(live, rebuilt) {
		t.Fatalf("rebuilt read models differ (%d vs %d bytes)", len(live), len(rebuilt))
	}
}

// TestAccessLog checks one line per request with the route template, tenant
// and status, and never the key or the body.
func TestAccessLog(t *testing.T) {
	e := newEnv(t)
	var buf syncBuffer
	front := batonhttp.NewServer(batonhttp.Config{Store: e.store, Projections: e.proj, Log: zerolog.New(&buf)})
	srv := httptest.NewServer(checkOpenAPI(func() testing.TB { return t }, front.Handler()))
	defer srv.Close()
	e.srv = srv
	id := e.contract(e.tenantA, nil)
	e.must(e.post(id, "approval", e.tenantA, map[string]any{"status": "APPROVED", "approvedBy": "secret-approver-name"}), 200)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one line per request, got %d:\n%s", len(lines), buf.String())
	}
	var l struct {
		Route, Tenant, RequestID string
		Status                   int
	}
	json.Unmarshal([]byte(lines[1]), &l)
	if l.Route != "/v1/executions/{handoffId}/approval" || l.Tenant != "a" || l.Status != 200 || l.RequestID == "" {
		t.Fatalf("log line: %s", lines[1])
	}
	if strings.Contains(buf.String(), e.tenantA) || strings.Contains(buf.String(), "secret-approver-name") || strings.Contains(buf.String(), id) {
		t.Fatalf("the log holds a key, a body or an id:\n%s", buf.String())
	}
}

// TestModelFrontRoutes: the model fronts' POSTs, served before the
// router, are logged with their route as the router's are; another method
// on their path, or the path with a trailing slash, is still the router's.
func TestModelFrontRoutes(t *testing.T) {
	var logs syncBuffer
	envLog = &logs
	t.Cleanup(func() { envLog = nil })
	e := localEnv(t)
	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"messages": []any{}}), 400)
	e.must(e.do("PUT", "/v1/chat/completions", e.tenantA, nil), 405)
	e.must(e.do("POST", "/v1/messages/", e.tenantA, map[string]any{}), 404)
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var l struct {
			Message, Route, Tenant string
			Status                 int
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Message == "request" {
			got = append(got, fmt.Sprintf("%s %s %d", l.Route, l.Tenant, l.Status))
		}
	}
	want := []string{"/v1/chat/completions a 400", "unmatched  405", "unmatched  404"}
	if !slices.Equal(got, want) {
		t.Fatalf("access log %q, want %q", got, want)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A body over the limit announced by its Content-Length is refused before
// it is read.
func TestBodyOverLimitRefusedUpFront(t *testing.T) {
	e := newEnv(t)
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/handoff/contracts", io.LimitReader(zeroReader{}, 2<<20))
	req.ContentLength = 2 << 20
	req.Header.Set("x-api-key", e.tenantA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// Prefer: return=minimal (RFC 7240) answers a callback with the handoff's
// state and head, not the whole contract with every proof: for heartbeats.
func TestCallbackReturnMinimal(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, map[string]any{"heartbeatSeconds": 60})
	e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
	big := proofBody("run-1")
	big["proof"] = map[string]any{"summary": "s", "artifacts": []any{map[string]any{"type": "log", "text": strings.Repeat("x", 60000)}}}
	e.must(e.post(id, "proof", e.tenantA, big), 200)
	full := e.must(e.post(id, "heartbeat", e.tenantA, map[string]any{"executorRunId": "run-1"}), 200)
	r := e.must(e.post(id, "heartbeat", e.tenantA, map[string]any{"executorRunId": "run-1"}, "Prefer", "respond-async, return=minimal"), 200)
	if r.header.Get("Preference-Applied") != "return=minimal" || len(r.raw) > 600 || r.str("state") != "proof_received" || r.str("ledgerHead.seq") == "" || r.str("deadlines.leaseExpiresAt") == "" || r.str("proofs") != "" {
		t.Fatalf("minimal answer (%d bytes, full %d): %v %s", len(r.raw), len(full.raw), r.header, r.raw)
	}
	if full.header.Get("Preference-Applied") != "" || len(full.raw) < 60000 {
		t.Fatalf("the full answer: %d bytes", len(full.raw))
	}
}

// A page of contracts ends early once it holds the page's bytes (at least
// one contract a page), and paging on lists each contract once: a
// hundred contracts of many proofs were one answer of gigabytes.
func TestContractListingPagesAreBoundedInBytes(t *testing.T) {
	e := newEnv(t)
	var want []string
	for range 5 {
		want = append(want, e.contract(e.tenantA, nil))
	}
	first := e.must(e.do("GET", "/v1/handoff/contracts", e.tenantA, nil), 200)
	one := len(first.raw) / 5 // about one contract's bytes
	t.Cleanup(batonhttp.SetListPageBytes(2 * one))
	var seen []string
	pages := 0
	for cursor := ""; ; {
		pages++
		r := e.must(e.do("GET", "/v1/handoff/contracts?limit=100&cursor="+cursor, e.tenantA, nil), 200)
		var page struct {
			Data       []map[string]any `json:"data"`
			HasMore    bool             `json:"hasMore"`
			NextCursor string           `json:"nextCursor"`
		}
		json.Unmarshal(r.raw, &page)
		if len(page.Data) == 0 || len(page.Data) > 3 {
			t.Fatalf("a page of %d contracts with room for about 2: %s", len(page.Data), r.raw)
		}
		for _, c := range page.Data {
			seen = append(seen, c["handoffId"].(string))
		}
		if !page.HasMore {
			break
		}
		cursor = page.NextCursor
	}
	if !slices.Equal(seen, want) || pages < 2 {
		t.Fatalf("listed %v in %d pages, want %v in several", seen, pages, want)
	}
	// The least a page holds is one contract, whatever its size.
	t.Cleanup(batonhttp.SetListPageBytes(1))
	r := e.must(e.do("GET", "/v1/handoff/contracts?limit=100", e.tenantA, nil), 200)
	if n := strings.Count(string(r.raw), `"handoffId"`); n != 1 || r.str("nextCursor") != want[0] {
		t.Fatalf("a page of a byte: %d contracts, %s", n, r.raw)
	}
}
