package http_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/batonhq/baton/eventstore"
)

// On a shared store a keyed request refused before it writes appends
// nothing: the key is claimed at its first write, not before its handler
// runs (a claim and its release were two events for every refusal). A
// keyed write still claims the key, so its retry is a replay, and racing
// requests with one key still make one write.
func TestSharedStoreKeyedRefusalsAppendNothing(t *testing.T) {
	u := newScripted(t, validSummary)
	e := scriptedEnvOn(t, u, true)
	head := func() eventstore.Position {
		t.Helper()
		p, err := e.store.Head(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	before := head()
	refused := []struct {
		path string
		body any
	}{
		{"/v1/generate", `{"type":"summarize","input":{"text":""}}`},
		{"/v1/generate", genBody(map[string]any{"options": map[string]any{"maxAttempts": 0}})},
		{"/v1/agent-plans", `{"objective":""}`},
		{"/v1/handoff/contracts", `{"objective":"x"}`},
		{"/v1/webhooks", `{"url":"http://","eventTypes":["*"]}`},
		{"/v1/context/preview", `{"threadId":"t\u0000"}`},
		{"/v1/webhooks/wh_0123456789abcdef0123456789abcdef/rotate", `{}`},
	}
	for i, c := range refused {
		r := e.do("POST", c.path, e.tenantA, c.body, "Idempotency-Key", fmt.Sprint("refused-", i))
		if r.status < 400 || r.status >= 500 {
			t.Fatalf("%s: %d %s", c.path, r.status, r.raw)
		}
		if h := head(); h != before {
			t.Fatalf("%s refused %d, and the store moved from %+v to %+v", c.path, r.status, before, h)
		}
	}
	if u.calls.Load() != 0 {
		t.Fatalf("refusals called the model %d times", u.calls.Load())
	}

	body := map[string]any{"objective": "Rotate the staging TLS certificate", "targetExecutor": "ops-bot",
		"executorProtocol": "ops_bot.v1", "riskLevel": "medium", "approvalMode": "manual", "proofRequired": []string{"log"}}
	var wg sync.WaitGroup
	answers := make([]response, 8)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = e.do("POST", "/v1/handoff/contracts", e.tenantA, body, "Idempotency-Key", "create-1")
		}()
	}
	wg.Wait()
	made := map[string]bool{}
	for _, a := range answers {
		switch a.status {
		case 201, 200:
			made[a.str("handoffId")] = true
		case 409:
			if a.str("code") != "idempotency_in_flight" {
				t.Fatalf("racing create: %d %s", a.status, a.raw)
			}
		default:
			t.Fatalf("racing create: %d %s", a.status, a.raw)
		}
	}
	if len(made) != 1 || e.countType("ContractCreated") != 1 {
		t.Fatalf("8 racing creates with one key made %v (%d ContractCreated)", made, e.countType("ContractCreated"))
	}
	again := e.do("POST", "/v1/handoff/contracts", e.tenantA, body, "Idempotency-Key", "create-1")
	if again.header.Get("Idempotent-Replayed") != "true" || !made[again.str("handoffId")] {
		t.Fatalf("retry: %d %s", again.status, again.raw)
	}
	g := e.do("POST", "/v1/generate", e.tenantA, genBody(nil), "Idempotency-Key", "gen-1")
	if g.status != 200 || e.countType("IdempotencyStarted") < 2 {
		t.Fatalf("keyed generate: %d %s (claims %d)", g.status, g.raw, e.countType("IdempotencyStarted"))
	}
	if r := e.do("POST", "/v1/generate", e.tenantA, genBody(nil), "Idempotency-Key", "gen-1"); r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("generate retry: %d %s", r.status, r.raw)
	}
}

// A request sent without an Idempotency-Key holds no claim, though it has
// its request state: a generation and an agent plan re-asked after an
// invalid answer pay for each attempt, resume none, keep no output and
// record no target, on either kind of store.
func TestUnkeyedGenerationHoldsNoClaim(t *testing.T) {
	for _, shared := range []bool{false, true} {
		good := `{"summary":"s","steps":[{"title":"Rotate","description":"d","kind":"external_action","requiresApproval":false,"proof":[]}]}`
		u := newScripted(t, `{"summary": 5}`, validSummary, `{"summary": 5}`, good)
		e := scriptedEnvOn(t, u, shared)
		if r := e.must(e.do("POST", "/v1/generate", e.tenantA, genBody(nil)), 200); r.str("attempts") != "2" {
			t.Fatalf("shared %v: %s", shared, r.raw)
		}
		plan := map[string]any{"objective": "rotate the cert", "targetExecutor": "ops-bot", "riskLevel": "low",
			"options": map[string]any{"llm": map[string]any{"model": "openai:gpt-4o-mini"}}}
		if r := e.must(e.do("POST", "/v1/agent-plans", e.tenantA, plan), 201); r.str("generation.attempts") != "2" {
			t.Fatalf("shared %v: plan: %s", shared, r.raw)
		}
		if u.calls.Load() != 4 {
			t.Fatalf("shared %v: %d model calls, want 4", shared, u.calls.Load())
		}
		for _, typ := range []string{"IdempotencyStarted", "IdempotencyOutput", "IdempotencyCompleted", "IdempotencyReleased"} {
			if n := e.countType(typ); n != 0 {
				t.Fatalf("shared %v: %d %s without a key", shared, n, typ)
			}
		}
	}
}
