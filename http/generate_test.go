package http_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/batonhq/baton/eventstore"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/tasks"
)

// localEnv serves the gateway with no real provider: modes route to the
// local development provider.
func localEnv(t *testing.T) *env {
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, cat)
}

// sampleInputs are valid inputs of every embedded task type.
var sampleInputs = map[string]any{
	"business_strategy": map[string]any{"goal": "double trial-to-paid conversion", "audience": "small accounting firms"},
	"viral_hook":        map[string]any{"topic": "event sourcing", "details": "why an append-only log beats updates in place"},
	"agent_plan":        map[string]any{"objective": "rotate the staging TLS certificate", "targetExecutor": "ops-bot", "riskLevel": "high"},
	"summarize":         map[string]any{"text": "Baton records every handoff step as an immutable event.", "maxWords": 20},
	"classify":          map[string]any{"text": "my invoice is wrong", "labels": []string{"billing", "bug", "other"}},
	"extract_fields":    map[string]any{"text": "Invoice 42 due 2026-12-01", "fields": []any{map[string]any{"name": "invoice_number", "type": "string"}}},
	"reply_draft":       map[string]any{"message": "Where is my order?", "tone": "friendly"},
}

func TestGenerateEveryTypeWithTheLocalProvider(t *testing.T) {
	e := localEnv(t)
	reg, err := tasks.Default()
	if err != nil {
		t.Fatal(err)
	}
	if len(reg.Names()) < 7 {
		t.Fatalf("types: %v", reg.Names())
	}
	for _, name := range reg.Names() {
		in, ok := sampleInputs[name]
		if !ok {
			t.Fatalf("no sample input for %s", name)
		}
		r := e.must(e.do("POST", "/v1/generate", e.tenantA, map[string]any{"type": name, "input": in}), 200)
		var g struct {
			Output          json.RawMessage `json:"output"`
			Model           string          `json:"model"`
			Attempts        int             `json:"attempts"`
			TemplateVersion int             `json:"templateVersion"`
		}
		json.Unmarshal(r.raw, &g)
		ty, _ := reg.Get(name)
		if v, err := ty.ValidateOutput(g.Output); err != nil || len(v) > 0 || g.Model != "local:echo" || g.Attempts != 1 || g.TemplateVersion != ty.Latest {
			t.Fatalf("%s: %v %v %s", name, v, err, r.raw)
		}
	}
	// Older template versions stay selectable.
	r := e.must(e.do("POST", "/v1/generate", e.tenantA, map[string]any{"type": "business_strategy", "input": sampleInputs["business_strategy"],
		"options": map[string]any{"templateVersion": 1}}), 200)
	if r.str("templateVersion") != "1" {
		t.Fatalf("%s", r.raw)
	}
	c := e.must(e.do("GET", "/v1/capabilities", e.tenantB, nil), 200)
	for _, name := range reg.Names() {
		if !strings.Contains(string(c.raw), `"type":"`+name+`"`) {
			t.Fatalf("capabilities lack %s", name)
		}
	}
	if !strings.Contains(c.str("notice"), "not an execution endpoint") {
		t.Fatalf("%s", c.raw)
	}
}

// scriptedUpstream is an OpenAI upstream that answers the n-th call with
// answers[n] (the last one repeats) and keeps each request body.
type scriptedUpstream struct {
	srv      *httptest.Server
	calls    atomic.Int64
	mu       sync.Mutex
	bodies   []string
	answers  []string
	gate     chan struct{} // when set, every call waits for it
	arrivals chan struct{}
}

func newScripted(t *testing.T, answers ...string) *scriptedUpstream {
	u := &scriptedUpstream{answers: answers, arrivals: make(chan struct{}, 100)}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(u.calls.Add(1)) - 1
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.bodies = append(u.bodies, string(b))
		u.mu.Unlock()
		u.arrivals <- struct{}{}
		if u.gate != nil {
			<-u.gate
		}
		a := u.answers[min(n, len(u.answers)-1)]
		if code, ok := strings.CutPrefix(a, "STATUS "); ok { // an upstream failure, e.g. "STATUS 503"
			status, _ := strconv.Atoi(code)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"message":"upstream says %d","type":"server_error"}}`, status)
			return
		}
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":200,"completion_tokens":50,"total_tokens":250}}`, a)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func scriptedEnv(t *testing.T, u *scriptedUpstream) *env {
	vars := map[string]string{"OPENAI_BASE_URL": u.srv.URL + "/v1", "OPENAI_API_KEY": "k"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, cat)
}

const validSummary = `Here you go:
` + "```json\n" + `{"summary": "Events are immutable.", "keyPoints": ["append-only"]}` + "\n```"

func genBody(extra map[string]any) map[string]any {
	b := map[string]any{"type": "summarize", "input": map[string]any{"text": "Baton records events."},
		"options": map[string]any{"llm": map[string]any{"model": "openai:gpt-4o-mini"}}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

func TestGenerateRetriesWithTheValidationErrors(t *testing.T) {
	u := newScripted(t, `{"summary": 5}`, validSummary)
	e := scriptedEnv(t, u)
	r := e.must(e.do("POST", "/v1/generate", e.tenantA, genBody(nil)), 200)
	if r.str("attempts") != "2" || r.str("output") != `{"keyPoints":["append-only"],"summary":"Events are immutable."}` {
		t.Fatalf("%s", r.raw)
	}
	var g struct {
		Usage struct {
			In   int      `json:"input_tokens"`
			Cost *float64 `json:"estimated_cost_usd"`
		} `json:"usage"`
		Svc struct {
			Trace struct {
				Attempts []struct {
					Valid  bool              `json:"valid"`
					Errors []tasks.Violation `json:"errors"`
				} `json:"attempts"`
			} `json:"trace"`
		} `json:"svc"`
	}
	json.Unmarshal(r.raw, &g)
	a := g.Svc.Trace.Attempts
	if len(a) != 2 || a[0].Valid || !a[1].Valid || len(a[0].Errors) != 2 || g.Usage.In != 400 || g.Usage.Cost == nil {
		t.Fatalf("trace: %s", r.raw)
	}
	// The first request asked for structured output natively; the second
	// carried the first answer and its validation errors.
	if !strings.Contains(u.bodies[0], `"response_format":{"json_schema":{"name":"emit_summarize"`) {
		t.Fatalf("first request: %s", u.bodies[0])
	}
	if !strings.Contains(u.bodies[1], `does not validate`) || !strings.Contains(u.bodies[1], `/summary: got number, want string`) {
		t.Fatalf("retry: %s", u.bodies[1])
	}
	e.usageEvents("a", 2)
}

func TestGenerateAlwaysInvalid(t *testing.T) {
	u := newScripted(t, "I cannot do JSON today.")
	e := scriptedEnv(t, u)
	r := e.do("POST", "/v1/generate", e.tenantA, genBody(map[string]any{"options": map[string]any{"maxAttempts": 3, "llm": map[string]any{"model": "openai:gpt-4o-mini"}}}))
	if r.status != 422 || r.str("code") != "output_invalid" || r.str("attempts") != "3" || u.calls.Load() != 3 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if n := strings.Count(string(r.raw), "the answer holds no JSON object"); n != 3 {
		t.Fatalf("every attempt's error: %d in %s", n, r.raw)
	}
}

func TestGenerateCostCeiling(t *testing.T) {
	u := newScripted(t, `{"summary": 5}`, validSummary)
	e := scriptedEnv(t, u)
	first := summarizeWorst(e, "openai:gpt-4o-mini")
	// Below one attempt's worst case: refused up front, no upstream call,
	// no event.
	before, _ := e.store.Head(context.Background())
	r := e.do("POST", "/v1/generate", e.tenantA, genBody(map[string]any{"options": map[string]any{"llm": map[string]any{"model": "openai:gpt-4o-mini", "maxCostUsd": first * 0.9}}}))
	if after, _ := e.store.Head(context.Background()); r.status != 422 || r.str("code") != "cost_ceiling_exceeded" || u.calls.Load() != 0 || after != before {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	// Room for one attempt, not two: the ceiling stops the retry.
	r = e.do("POST", "/v1/generate", e.tenantA, genBody(map[string]any{"options": map[string]any{"llm": map[string]any{"model": "openai:gpt-4o-mini", "maxCostUsd": first * 1.01}}}))
	if r.status != 422 || u.calls.Load() != 1 || !strings.Contains(string(r.raw), `"stoppedBy":"cost_ceiling"`) {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}

func TestGenerateFallbackShowsInTrace(t *testing.T) {
	e, _, _ := newRoutingEnv(t)
	// flaky:fail-500 fails; its fallback (the fake Anthropic upstream)
	// answers with prose, which never validates.
	r := e.do("POST", "/v1/generate", e.tenantA, map[string]any{"type": "summarize", "input": map[string]any{"text": "x"},
		"options": map[string]any{"maxAttempts": 1, "llm": map[string]any{"model": "flaky:fail-500"}}})
	if r.status != 422 || !strings.Contains(string(r.raw), `"fallbackUsed":true`) || !strings.Contains(string(r.raw), `"selectedProvider":"anthropic"`) {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}

func TestGenerateBadInput(t *testing.T) {
	e := localEnv(t)
	before, _ := e.store.Head(context.Background())
	for _, c := range []struct {
		body   any
		status int
		want   string
	}{
		{map[string]any{"type": "poem", "input": map[string]any{}}, 422, "known types: agent_plan, business_strategy, classify"},
		{map[string]any{"input": map[string]any{}}, 422, `"pointer":"/type"`},
		{map[string]any{"type": "summarize"}, 422, `"pointer":"/input"`},
		{map[string]any{"type": "summarize", "input": "text"}, 422, `"pointer":"/input"`},
		{map[string]any{"type": "business_strategy", "input": map[string]any{"goal": 5}}, 422, `"pointer":"/input/goal"`},
		{map[string]any{"type": "business_strategy", "input": map[string]any{"goal": "grow"}}, 422, `"pointer":"/input/audience","code":"schema","message":"missing required property"`},
		{map[string]any{"type": "business_strategy", "input": map[string]any{}}, 422, `[{"pointer":"/input/audience","code":"schema","message":"missing required property"},{"pointer":"/input/goal","code":"schema","message":"missing required property"}]`},
		{map[string]any{"type": "summarize", "input": map[string]any{"text": "x"}, "options": map[string]any{"templateVersion": 0}}, 422, "/options/templateVersion"},
		{map[string]any{"type": "summarize", "input": map[string]any{"text": "x"}, "options": map[string]any{"maxAttempts": 0}}, 422, "/options/maxAttempts"},
		{map[string]any{"type": "summarize", "input": map[string]any{"text": "x"}, "options": map[string]any{"maxAttempts": 99}}, 422, "/options/maxAttempts"},
		{map[string]any{"type": "summarize", "input": map[string]any{"text": "x"}, "options": map[string]any{"llm": map[string]any{"maxCostUsd": -1}}}, 422, "/options/llm/maxCostUsd"},
		{map[string]any{"type": "summarize", "input": map[string]any{"text": "x"}, "options": map[string]any{"templateVersion": 7}}, 422, "/options/templateVersion"},
		{map[string]any{"type": "summarize", "input": map[string]any{"text": "x"}, "options": map[string]any{"llm": map[string]any{"mode": "fast"}}}, 422, "/options/llm/mode"},
		{map[string]any{"type": "summarize", "input": map[string]any{"text": "x"}, "options": map[string]any{"llm": map[string]any{"model": "nope:x"}}}, 422, "/options/llm/model"},
		{"{", 400, "malformed_json"},
		{map[string]any{"type": "summarize", "input": map[string]any{"text": strings.Repeat("x", 70<<10)}}, 413, "body_too_large"},
	} {
		r := e.do("POST", "/v1/generate", e.tenantA, c.body)
		if r.status != c.status || !strings.Contains(string(r.raw), c.want) {
			t.Fatalf("%v: %d %s", c.body, r.status, r.raw)
		}
	}
	if after, _ := e.store.Head(context.Background()); after != before {
		t.Fatal("a refused generate appended events")
	}
}

// On the embedded store the claim on a key is held in memory (every request
// for it comes to this process); only the answer is appended.
func TestGenerateIdempotencyKey(t *testing.T) {
	u := newScripted(t, validSummary)
	u.gate = make(chan struct{})
	e := scriptedEnv(t, u)
	testIdempotency(t, e, u)
	if n := e.countType("IdempotencyStarted"); n != 0 {
		t.Fatalf("%d durable claims on the embedded store", n)
	}
}

// sharedStore hides the embedded store's exclusivity: the front then
// behaves as with several replicas on one store, claiming by appends.
type sharedStore struct{ eventstore.Store }

func TestGenerateIdempotencyKeySharedStore(t *testing.T) {
	u := newScripted(t, validSummary)
	u.gate = make(chan struct{})
	vars := map[string]string{"OPENAI_BASE_URL": u.srv.URL + "/v1", "OPENAI_API_KEY": "k"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvStore(t, cat, func(s eventstore.Store) eventstore.Store { return sharedStore{s} })
	testIdempotency(t, e, u)
	if n := e.countType("IdempotencyStarted"); n == 0 {
		t.Fatal("no durable claim on a shared store")
	}
}

// scriptedEnvOn is scriptedEnv on the embedded store, or (shared) on one
// that behaves as several replicas' shared store.
func scriptedEnvOn(t *testing.T, u *scriptedUpstream, shared bool) *env {
	wrap := func(s eventstore.Store) eventstore.Store { return s }
	if shared {
		wrap = func(s eventstore.Store) eventstore.Store { return sharedStore{s} }
	}
	return scriptedEnvStore(t, u, wrap)
}

// scriptedEnvStore is scriptedEnv with the front's store wrapped
// (newEnvStore).
func scriptedEnvStore(t *testing.T, u *scriptedUpstream, wrap func(eventstore.Store) eventstore.Store) *env {
	t.Helper()
	vars := map[string]string{"OPENAI_BASE_URL": u.srv.URL + "/v1", "OPENAI_API_KEY": "k"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvStore(t, cat, wrap)
}

// A transient failure (the upstream's 503) is answered but not kept: a
// retry with the same key runs again and gets the real answer, on either
// kind of store.
func TestGenerateIdempotencyTransientFailureNotKept(t *testing.T) {
	for _, shared := range []bool{false, true} {
		u := newScripted(t, "STATUS 503", validSummary)
		e := scriptedEnvOn(t, u, shared)
		body := genBody(nil)
		first := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "flaky-1")
		if first.status < 500 || first.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("shared %v: first: %d %s", shared, first.status, first.raw)
		}
		retry := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "flaky-1")
		if retry.status != 200 || retry.header.Get("Idempotent-Replayed") != "" || u.calls.Load() != 2 {
			t.Fatalf("shared %v: retry after a 5xx: %d %s (upstream calls %d)", shared, retry.status, retry.raw, u.calls.Load())
		}
		// That success is final: kept and replayed.
		again := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "flaky-1")
		if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || string(again.raw) != string(retry.raw) || u.calls.Load() != 2 {
			t.Fatalf("shared %v: replay: %d %s", shared, again.status, again.raw)
		}
		if shared && e.countType("IdempotencyReleased") != 1 {
			t.Fatalf("the key was not released on the shared store")
		}
	}
}

func (e *env) countType(typ string) int {
	e.t.Helper()
	evs, err := e.store.ReadAll(context.Background(), eventstore.Position{}, 100_000)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func testIdempotency(t *testing.T, e *env, u *scriptedUpstream) {
	t.Helper()
	body := genBody(nil)
	const n = 50
	answers := make(chan response, n)
	for range n {
		go func() { answers <- e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "order-42") }()
	}
	<-u.arrivals // one request reached the upstream; the others are refused while it runs
	for range n - 1 {
		r := <-answers
		if r.status != 409 || r.str("code") != "idempotency_in_flight" {
			t.Fatalf("concurrent duplicate: %d %s", r.status, r.raw)
		}
	}
	close(u.gate)
	first := <-answers
	if first.status != 200 || u.calls.Load() != 1 {
		t.Fatalf("first: %d %s (upstream calls %d)", first.status, first.raw, u.calls.Load())
	}
	// The replay is the first answer byte for byte.
	again := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "order-42")
	if again.status != 200 || string(again.raw) != string(first.raw) || again.header.Get("Idempotent-Replayed") != "true" || u.calls.Load() != 1 {
		t.Fatalf("replay: %d %v\n%s\n%s", again.status, again.header, again.raw, first.raw)
	}
	// The same JSON written another way (key order, spaces) is the same
	// request, as Stripe compares parameters, not bytes.
	reordered := "{ \"options\": {\"llm\": {\"model\": \"openai:gpt-4o-mini\"}},\n  \"input\": {\"text\": \"Baton records events.\"}, \"type\": \"summarize\" }"
	if r := e.do("POST", "/v1/generate", e.tenantA, reordered, "Idempotency-Key", "order-42"); r.status != 200 || string(r.raw) != string(first.raw) || r.header.Get("Idempotent-Replayed") != "true" || u.calls.Load() != 1 {
		t.Fatalf("reordered replay: %d %s", r.status, r.raw)
	}
	// Same key, another body: 422. Another tenant's same key is its own.
	other := genBody(map[string]any{"input": map[string]any{"text": "something else"}})
	if r := e.do("POST", "/v1/generate", e.tenantA, other, "Idempotency-Key", "order-42"); r.status != 422 || r.str("code") != "idempotency_key_reused" {
		t.Fatalf("reuse: %d %s", r.status, r.raw)
	}
	if r := e.do("POST", "/v1/generate", e.tenantB, body, "Idempotency-Key", "order-42"); r.status != 200 || r.header.Get("Idempotent-Replayed") != "" || u.calls.Load() != 2 {
		t.Fatalf("other tenant: %d %s", r.status, r.raw)
	}
	// A refusal before any model call is not kept, as Stripe keeps no
	// result for parameters that failed validation: the corrected request
	// runs under the same key.
	calls := u.calls.Load()
	bad := genBody(map[string]any{"options": map[string]any{"maxAttempts": 0, "llm": map[string]any{"model": "openai:gpt-4o-mini"}}})
	for _, b := range []any{bad, `{"type":"summarize",`} {
		r1 := e.do("POST", "/v1/generate", e.tenantA, b, "Idempotency-Key", "bad-1")
		if r1.status/100 != 4 || r1.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("refusal: %d %s", r1.status, r1.raw)
		}
	}
	fixed := genBody(map[string]any{"options": map[string]any{"maxAttempts": 1, "llm": map[string]any{"model": "openai:gpt-4o-mini"}}})
	if r := e.do("POST", "/v1/generate", e.tenantA, fixed, "Idempotency-Key", "bad-1"); r.status != 200 || r.header.Get("Idempotent-Replayed") != "" || u.calls.Load() != calls+1 {
		t.Fatalf("the corrected request under the refused one's key: %d %s", r.status, r.raw)
	}
	if r := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", strings.Repeat("k", 256)); r.status != 422 || r.str("code") != "invalid_idempotency_key" {
		t.Fatalf("long key: %d %s", r.status, r.raw)
	}
}

// An upstream failure on a later attempt still tells what the earlier,
// paid-for attempts cost, and the generation's id.
func TestGenerateLaterAttemptFailsKeepsUsage(t *testing.T) {
	u := newScripted(t, "no JSON here", "STATUS 503")
	e := scriptedEnv(t, u)
	r := e.do("POST", "/v1/generate", e.tenantA, genBody(map[string]any{"options": map[string]any{"maxAttempts": 2}}))
	if r.status != 503 || u.calls.Load() < 2 {
		t.Fatalf("%d %s (upstream calls %d)", r.status, r.raw, u.calls.Load())
	}
	var p struct {
		Attempts int `json:"attempts"`
		Usage    struct {
			InputTokens int      `json:"input_tokens"`
			CostUSD     *float64 `json:"estimated_cost_usd"`
		} `json:"usage"`
		Svc struct {
			RequestID string `json:"requestId"`
			Trace     struct {
				Attempts []struct{ Valid bool } `json:"attempts"`
			} `json:"trace"`
		} `json:"svc"`
	}
	if err := json.Unmarshal(r.raw, &p); err != nil || p.Attempts != 1 || p.Usage.InputTokens != 200 || p.Usage.CostUSD == nil || *p.Usage.CostUSD <= 0 ||
		!strings.HasPrefix(p.Svc.RequestID, "gen_") || len(p.Svc.Trace.Attempts) != 1 {
		t.Fatalf("problem: %s", r.raw)
	}
}

// On a provider whose calls naming no tier are served at the fast tier
// (here declared), generate's ceiling is checked against the fast rate,
// and an answer that does not say its tier is billed at it.
func TestGenerateCostCeilingAtTheFastTier(t *testing.T) {
	u := newScripted(t, validSummary)
	vars := map[string]string{"OPENAI_BASE_URL": u.srv.URL + "/v1", "OPENAI_API_KEY": "k", "BATON_OPENAI_DEFAULT_SERVICE_TIER": "fast"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, cat)
	standard := summarizeWorst(e, "openai:gpt-6-luna")
	llm := func(ceiling float64) map[string]any {
		return genBody(map[string]any{"options": map[string]any{"llm": map[string]any{"model": "openai:gpt-6-luna", "maxCostUsd": ceiling}}})
	}
	if r := e.do("POST", "/v1/generate", e.tenantA, llm(standard*1.5)); r.status != 422 || r.str("code") != "cost_ceiling_exceeded" || u.calls.Load() != 0 ||
		!strings.Contains(string(r.raw), "at the fast tier, where openai:gpt-6-luna's provider serves a call that names no service_tier") {
		t.Fatalf("a ceiling between the standard and the fast worst case: %d %s", r.status, r.raw)
	}
	r := e.must(e.do("POST", "/v1/generate", e.tenantA, llm(standard*2.01)), 200)
	if want := 2 * (200*0.10 + 50*0.50) / 1e6; math.Abs(r.num("usage.estimated_cost_usd")-want) > 1e-12 {
		t.Fatalf("an answer naming no tier: %s, want %v", r.raw, want)
	}
}

// summarizeWorst is the worst case of one summarize attempt of genBody's
// input on a model, at the standard rates.
func summarizeWorst(e *env, id string) float64 {
	_, model, _ := e.catalog.Resolve(id)
	reg, _ := tasks.Default()
	ty, _ := reg.Get("summarize")
	prompt, _, _ := ty.Render(0, json.RawMessage(`{"text":"Baton records events."}`), "")
	return *gateway.WorstCost(gateway.Request{System: ty.SystemPrompt(), MaxTokens: ty.MaxTokens,
		Output:   &gateway.OutputSchema{Name: "emit_summarize", Schema: ty.Output},
		Messages: []gateway.Message{{Role: "user", Content: []gateway.Block{{Type: "text", Text: prompt}}}}}, model)
}

// An answer too large for an event is sent to its request, and a retry
// with the key is told so (409 idempotency_answer_not_kept, replayed)
// rather than run and billed again, on either kind of store.
func TestGenerateIdempotencyAnswerTooLargeToKeep(t *testing.T) {
	huge := `{"summary":"` + strings.Repeat("x", eventstore.MaxEventSize+1000) + `","keyPoints":["a"]}`
	for _, shared := range []bool{false, true} {
		u := newScripted(t, huge)
		e := scriptedEnvOn(t, u, shared)
		body := genBody(nil)
		first := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "big-1")
		if first.status != 200 || len(first.raw) < eventstore.MaxEventSize {
			t.Fatalf("shared %v: first: %d, %d bytes", shared, first.status, len(first.raw))
		}
		retry := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "big-1")
		if retry.status != 409 || retry.header.Get("Idempotent-Replayed") != "true" || !strings.Contains(string(retry.raw), "idempotency_answer_not_kept") {
			t.Fatalf("shared %v: retry: %d %s", shared, retry.status, retry.raw)
		}
		if u.calls.Load() != 1 {
			t.Fatalf("shared %v: the retry ran again: %d upstream calls", shared, u.calls.Load())
		}
		if n := e.countType("IdempotencyCompleted"); n != 1 {
			t.Fatalf("shared %v: %d completions", shared, n)
		}
	}
}

// A blank Idempotency-Key, or one sent twice, is refused: taken for no
// key, the retry it was meant for would run again.
func TestGenerateIdempotencyKeyBlankOrTwice(t *testing.T) {
	u := newScripted(t, validSummary)
	e := scriptedEnv(t, u)
	for name, hdr := range map[string][]string{"blank": {"   "}, "twice": {"k-1", "k-2"}} {
		j, _ := json.Marshal(genBody(nil))
		req, _ := http.NewRequest("POST", e.srv.URL+"/v1/generate", bytes.NewReader(j))
		req.Header.Set("x-api-key", e.tenantA)
		req.Header.Set("Content-Type", "application/json")
		req.Header["Idempotency-Key"] = hdr
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 422 || !strings.Contains(string(b), "invalid_idempotency_key") {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, b)
		}
	}
	if u.calls.Load() != 0 {
		t.Fatalf("a refused key reached the upstream %d times", u.calls.Load())
	}
}

// classify's label is one of the caller's labels: the model is given them
// as an enum, and an answer with another label is re-asked.
func TestClassifyLabelIsOneOfTheInputs(t *testing.T) {
	u := newScripted(t, `{"label":"made-up","confidence":0.9,"reason":"r"}`, `{"label":"billing","confidence":0.9,"reason":"r"}`)
	e := scriptedEnv(t, u)
	r := e.must(e.do("POST", "/v1/generate", e.tenantA, map[string]any{"type": "classify",
		"input":   map[string]any{"text": "I want a refund", "labels": []string{"billing", "tech"}},
		"options": map[string]any{"llm": map[string]any{"model": "openai:gpt-4o-mini"}}}), 200)
	if !strings.Contains(string(r.raw), `"label":"billing"`) || !strings.Contains(string(r.raw), `"attempts":2`) {
		t.Fatalf("classify: %s", r.raw)
	}
	if !strings.Contains(u.bodies[0], `"enum":["billing","tech"]`) {
		t.Fatalf("the model was not given the labels as an enum: %s", u.bodies[0])
	}
	if !strings.Contains(u.bodies[1], "must be one of the labels given") {
		t.Fatalf("the re-ask does not say why: %s", u.bodies[1])
	}
}

// An upstream that over-reports usage is billed within what the request
// allowed (generate's input is Baton's own prompt, its output the type's
// cap), and the generation's answer says what was billed: it said the
// upstream's 99,999,999 output tokens and billed 32,000 (the answer and
// the bill disagreed), and billed the input as reported, far over the
// maxCostUsd it had checked.
func TestGenerateUsageIsWhatWasBilled(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":5000000,"completion_tokens":99999999}}`,
			`{"summary":"s","keyPoints":["a"]}`)
	}))
	t.Cleanup(up.Close)
	vars := map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "k"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvStore(t, cat, func(s eventstore.Store) eventstore.Store { return s })
	r := e.must(e.do("POST", "/v1/generate", e.tenantA, genBody(map[string]any{"options": map[string]any{"llm": map[string]any{"model": "openai:gpt-4o-mini", "maxCostUsd": 0.01}}})), 200)
	var rec gateway.UsageRecord
	if err := json.Unmarshal(e.usageEvents("a", 1)[0].Data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Usage.InputTokens >= 5000000 || rec.Usage.OutputTokens >= 99999999 || rec.CostUSD == nil || *rec.CostUSD > 0.01 {
		t.Fatalf("billed %+v at %v", rec.Usage, rec.CostUSD)
	}
	if strconv.Itoa(rec.Usage.InputTokens) != r.str("usage.input_tokens") || strconv.Itoa(rec.Usage.OutputTokens) != r.str("usage.output_tokens") {
		t.Fatalf("the answer says %s, the bill %+v", r.raw, rec.Usage)
	}
}

// A name generate does not know, at the top, in options or in options.llm,
// is refused before anything runs: a misspelled or misplaced ceiling would
// otherwise let the call run without one.
func TestGenerateRefusesUnknownFields(t *testing.T) {
	u := newScripted(t, validSummary)
	e := scriptedEnv(t, u)
	before, _ := e.store.Head(context.Background())
	for _, c := range []struct {
		body    map[string]any
		pointer string
	}{
		{genBody(map[string]any{"options": map[string]any{"llm": map[string]any{"model": "openai:gpt-4o-mini", "max_cost_usd": 0.00001}}}), "/options/llm/max_cost_usd"},
		{genBody(map[string]any{"options": map[string]any{"maxCostUsd": 0.00001, "llm": map[string]any{"model": "openai:gpt-4o-mini"}}}), "/options/maxCostUsd"},
		{genBody(map[string]any{"options": map[string]any{"llm": map[string]any{"model": "openai:gpt-4o-mini", "MaxCostUsd": 0.00001}}}), "/options/llm/MaxCostUsd"},
		{genBody(map[string]any{"schema": map[string]any{"type": "object"}}), "/schema"},
	} {
		r := e.do("POST", "/v1/generate", e.tenantA, c.body)
		if r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"`+c.pointer+`","code":"unknown_field"`) {
			t.Fatalf("%v: %d %s", c.body, r.status, r.raw)
		}
	}
	r := e.do("POST", "/v1/agent-plans", e.tenantA, map[string]any{"objective": "Rotate the staging certificate", "targetExecutor": "ops-bot", "riskLevel": "low",
		"options": map[string]any{"llm": map[string]any{"model": "openai:gpt-4o-mini", "maxCost": 0.01}}})
	if r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"/options/llm/maxCost","code":"unknown_field"`) {
		t.Fatalf("agent plan: %d %s", r.status, r.raw)
	}
	if after, _ := e.store.Head(context.Background()); after != before || u.calls.Load() != 0 {
		t.Fatalf("a refused request ran (%d upstream calls) or appended events", u.calls.Load())
	}
}

// The budget refusing a retry after a paid attempt ends the generation as
// the ceiling does: a final 422 kept under the key, so that a retry does
// not pay for the first attempt again only to meet the budget.
func TestGenerateBudgetStopsARetry(t *testing.T) {
	u := newScripted(t, validSummary, `{"summary": 5}`)
	e := scriptedEnv(t, u)
	one := genBody(map[string]any{"options": map[string]any{"maxAttempts": 1, "llm": map[string]any{"model": "openai:gpt-4o-mini"}}})
	first := e.must(e.do("POST", "/v1/generate", e.tenantA, one), 200)
	paid, _ := strconv.ParseFloat(first.str("usage.estimated_cost_usd"), 64)
	if paid <= 0 {
		t.Fatalf("first: %s", first.raw)
	}
	// Room for the spent call, one attempt's worst case, and not a second.
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": paid + summarizeWorst(e, "openai:gpt-4o-mini") + paid/2, "monthlyUsd": nil}), 200)
	body := genBody(map[string]any{"options": map[string]any{"maxAttempts": 3, "llm": map[string]any{"model": "openai:gpt-4o-mini"}}})
	r := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "budget-1")
	if r.status != 422 || r.str("code") != "output_invalid" || r.str("attempts") != "1" || !strings.Contains(string(r.raw), `"stoppedBy":"budget"`) || u.calls.Load() != 2 {
		t.Fatalf("%d %s (upstream calls %d)", r.status, r.raw, u.calls.Load())
	}
	again := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "budget-1")
	if again.status != 422 || again.header.Get("Idempotent-Replayed") != "true" || u.calls.Load() != 2 {
		t.Fatalf("retry: %d %s (upstream calls %d)", again.status, again.raw, u.calls.Load())
	}
}

// A provider refusing the request generate wrote is not kept under the
// key: once the route is mended, the same request runs.
func TestGenerateUpstreamRefusalNotKept(t *testing.T) {
	u := newScripted(t, "STATUS 400", validSummary)
	e := scriptedEnv(t, u)
	body := genBody(map[string]any{"options": map[string]any{"maxAttempts": 1, "llm": map[string]any{"model": "openai:gpt-4o-mini"}}})
	if r := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "up-400"); r.status != 400 || r.str("code") != "upstream_rejected_request" {
		t.Fatalf("first: %d %s", r.status, r.raw)
	}
	if r := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "up-400"); r.status != 200 || r.header.Get("Idempotent-Replayed") != "" || u.calls.Load() != 2 {
		t.Fatalf("retry: %d %s (upstream calls %d)", r.status, r.raw, u.calls.Load())
	}
}

// extract_fields' output gives each field asked for once, with a value of
// its type or null; viral_hook's bestIndex names one of its hooks. An
// answer that does not is re-asked with what is wrong.
func TestGenerateOutputHeldToTheRequest(t *testing.T) {
	for _, c := range []struct {
		name, typ      string
		input          map[string]any
		wrong, right   string
		problems       []string
		schemaHasEnums string
	}{
		{"extract", "extract_fields",
			map[string]any{"text": "Invoice 7, due 2026-12-01, 40 EUR.", "fields": []any{map[string]any{"name": "due", "type": "date"}, map[string]any{"name": "amount", "type": "number"}, map[string]any{"name": "count", "type": "integer"}}},
			`{"fields":[{"name":"totally_other","value":"yesterday-ish"},{"name":"amount","value":true},{"name":"due","value":"next week"},{"name":"count","value":1.5},{"name":"amount","value":40}]}`,
			`{"fields":[{"name":"due","value":"2026-12-01"},{"name":"amount","value":40},{"name":"count","value":null}]}`,
			[]string{`/fields/0/name: must be one of the fields asked for: [\"due\",\"amount\",\"count\"]`, "/fields/1/value: must be a number", "/fields/2/value: must be a date, a string YYYY-MM-DD", "/fields/3/value: must be an integer", `/fields/4/name: \"amount\" is given twice`},
			`"enum":["due","amount","count"]`},
		{"extract missing", "extract_fields",
			map[string]any{"text": "x", "fields": []any{map[string]any{"name": "due", "type": "date"}, map[string]any{"name": "paid", "type": "boolean"}}},
			`{"fields":[]}`, `{"fields":[{"name":"due","value":null},{"name":"paid","value":false}]}`,
			[]string{"/fields: missing due, paid"}, `"enum":["due","paid"]`},
		{"hook", "viral_hook", map[string]any{"topic": "event sourcing", "details": "why"},
			`{"hooks":[{"text":"a","angle":"story"},{"text":"b","angle":"story"},{"text":"c","angle":"story"}],"bestIndex":99}`,
			`{"hooks":[{"text":"a","angle":"story"},{"text":"b","angle":"story"},{"text":"c","angle":"story"}],"bestIndex":2}`,
			[]string{"/bestIndex: must be the index of one of the 3 hooks (0 to 2)"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := newScripted(t, c.wrong, c.right)
			e := scriptedEnv(t, u)
			r := e.must(e.do("POST", "/v1/generate", e.tenantA, map[string]any{"type": c.typ, "input": c.input,
				"options": map[string]any{"llm": map[string]any{"model": "openai:gpt-4o-mini"}}}), 200)
			if r.str("attempts") != "2" || u.calls.Load() != 2 {
				t.Fatalf("%s", r.raw)
			}
			for _, p := range c.problems {
				if !strings.Contains(u.bodies[1], p) {
					t.Fatalf("the retry does not say %q: %s", p, u.bodies[1])
				}
			}
			if !strings.Contains(u.bodies[0], c.schemaHasEnums) {
				t.Fatalf("the schema sent: %s", u.bodies[0])
			}
		})
	}
}

// The rules read names by their exact spelling, as the schema and the
// prompt do: a "Name" or "Label" beside them is not theirs. They took
// them case-insensitively (encoding/json), asked the model for a field the
// prompt did not name and refused a valid answer.
func TestGenerateOutputRulesReadExactNames(t *testing.T) {
	for _, c := range []struct {
		typ    string
		input  map[string]any
		answer string
		sent   string
	}{
		{"extract_fields", map[string]any{"text": "Invoice 7, due 2026-12-01.", "fields": []any{map[string]any{"name": "due", "type": "date", "Name": "Other"}}},
			`{"fields":[{"name":"due","value":"2026-12-01","Name":"nope"}]}`, `"enum":["due"]`},
		{"classify", map[string]any{"text": "a refund please", "labels": []any{"billing", "bug"}},
			`{"label":"billing","Label":"nope","confidence":0.9,"reason":"a refund"}`, `"enum":["billing","bug"]`},
	} {
		t.Run(c.typ, func(t *testing.T) {
			u := newScripted(t, c.answer)
			e := scriptedEnv(t, u)
			r := e.do("POST", "/v1/generate", e.tenantA, map[string]any{"type": c.typ, "input": c.input,
				"options": map[string]any{"maxAttempts": 1, "llm": map[string]any{"model": "openai:gpt-4o-mini"}}})
			if r.status != 200 || u.calls.Load() != 1 {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			if !strings.Contains(u.bodies[0], c.sent) {
				t.Fatalf("the schema sent: %s", u.bodies[0])
			}
		})
	}
}

// An upstream that tells no usage is counted by Baton, and generate's
// answer says so, as the model fronts' answers do.
func TestGenerateUsageEstimatedWhenUntold(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`, validSummary)
	}))
	t.Cleanup(srv.Close)
	e := scriptedEnv(t, &scriptedUpstream{srv: srv})
	r := e.must(e.do("POST", "/v1/generate", e.tenantA, genBody(nil)), 200)
	if r.str("usage.estimated") != "true" || !strings.Contains(string(r.raw), `"estimated":true}}]`) {
		t.Fatalf("%s", r.raw)
	}
	if r := e.must(e.do("POST", "/v1/generate", e.tenantA, genBody(nil)), 200); r.str("usage.output_tokens") == "0" {
		t.Fatalf("nothing counted: %s", r.raw)
	}
}

// A generation that no model of its route answered says which it tried.
func TestGenerateFailureSaysTheModelsTried(t *testing.T) {
	u := newScripted(t, "STATUS 503")
	e := scriptedEnv(t, u)
	r := e.do("POST", "/v1/generate", e.tenantA, genBody(map[string]any{"options": map[string]any{"maxAttempts": 1, "llm": map[string]any{"model": "openai:gpt-4o-mini"}}}))
	if r.status != 503 || !strings.Contains(string(r.raw), `"modelsTried":["openai:gpt-4o-mini"]`) {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}

// billedFailureEnv serves bad:m, billing $1000/M of input, which takes
// the prompt and answers what does not read as an answer, falling back to
// good:m (goodInput $/M of input), which answers prose; and a text dense
// in tokens, so that the failed model's input is a large part of an
// attempt's worst case.
func billedFailureEnv(t *testing.T, goodInput float64) (*env, *scriptedUpstream, string) {
	t.Helper()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","choices":[]}`) // served, and no answer
	}))
	t.Cleanup(bad.Close)
	good := newScripted(t, "no JSON here")
	file := map[string]any{"providers": []any{
		map[string]any{"name": "bad", "kind": "openai-compatible", "baseUrl": bad.URL + "/v1", "models": []any{map[string]any{
			"name": "m", "contextTokens": 32000, "fallbacks": []string{"good:m"},
			"pricing": map[string]any{"inputPerMTok": 1000, "outputPerMTok": 2, "source": "test"}}}},
		map[string]any{"name": "good", "kind": "openai-compatible", "baseUrl": good.srv.URL + "/v1", "models": []any{map[string]any{
			"name": "m", "contextTokens": 32000, "pricing": map[string]any{"inputPerMTok": goodInput, "outputPerMTok": 2, "source": "test"}}}},
	}}
	path := filepath.Join(t.TempDir(), "providers.json")
	b, _ := json.Marshal(file)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }, ProvidersFile: path})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for i := range 3000 {
		text.WriteRune(rune(0x1F300 + i*7%0x2FF))
	}
	return newEnvWith(t, cat), good, text.String()
}

// ceilingOverWorst is a summarize body on bad:m with attempts and a
// ceiling, and the ceiling that is times one attempt's worst case (read
// from the refusal of a ceiling below it).
func ceilingOverWorst(t *testing.T, e *env, text string, attempts int, times float64) (func(float64) map[string]any, float64) {
	t.Helper()
	body := func(ceiling float64) map[string]any {
		return map[string]any{"type": "summarize", "input": map[string]any{"text": text},
			"options": map[string]any{"maxAttempts": attempts, "llm": map[string]any{"model": "bad:m", "maxCostUsd": ceiling}}}
	}
	probe := e.must(e.do("POST", "/v1/generate", e.tenantA, body(1e-6)), 422)
	var worst float64
	_, msg, _ := strings.Cut(string(probe.raw), "one attempt may cost up to $")
	if _, err := fmt.Sscanf(msg, "%f", &worst); err != nil || worst <= 0 {
		t.Fatalf("%s", probe.raw)
	}
	return body, worst * times
}

// Within one attempt, a fallback after a model billed for failing must
// fit maxCostUsd too: the bill so far and the next model's worst case.
// The chain went on, and one attempt under a ceiling of 1.2 times its
// worst case was billed the failed model's input and the fallback's.
func TestGenerateCeilingStopsAFallbackWithinAnAttempt(t *testing.T) {
	e, good, text := billedFailureEnv(t, 1000)
	body, ceiling := ceilingOverWorst(t, e, text, 1, 1.2)
	r := e.do("POST", "/v1/generate", e.tenantA, body(ceiling))
	if r.status < 400 || good.calls.Load() != 0 || !strings.Contains(string(r.raw), `"stoppedBy":"cost_ceiling"`) {
		t.Errorf("%d, the fallback called %d times: %s", r.status, good.calls.Load(), r.raw)
	}
	var billed float64
	for _, ev := range e.usageEvents("a", 1) {
		var u gateway.UsageRecord
		json.Unmarshal(ev.Data, &u)
		billed += *u.CostUSD
	}
	if billed > ceiling {
		t.Errorf("billed %v over the ceiling of %v", billed, ceiling)
	}
	// The paid failure is an attempt of the answer, its usage the bill:
	// attempts and usage agree.
	var g struct {
		Attempts int `json:"attempts"`
		Usage    struct {
			Cost *float64 `json:"estimated_cost_usd"`
		} `json:"usage"`
		Svc struct {
			Trace struct {
				Attempts []struct {
					Model  string `json:"model"`
					Errors []any  `json:"errors"`
					Usage  struct {
						Cost *float64 `json:"estimated_cost_usd"`
					} `json:"usage"`
				} `json:"attempts"`
			} `json:"trace"`
		} `json:"svc"`
	}
	json.Unmarshal(r.raw, &g)
	if g.Attempts != 1 || len(g.Svc.Trace.Attempts) != 1 || g.Usage.Cost == nil || g.Svc.Trace.Attempts[0].Usage.Cost == nil ||
		*g.Usage.Cost != billed || *g.Svc.Trace.Attempts[0].Usage.Cost != billed || len(g.Svc.Trace.Attempts[0].Errors) != 1 {
		t.Errorf("billed %v; the answer: %s", billed, r.raw)
	}
}

// The ceiling stopping the first attempt's fallback, after the chain's
// first model was billed for failing, ends the generation as the budget
// stopping it does: a final 422 kept under the key. It was the failed
// model's 502, which is not kept, so each retry with the key paid that
// model's input again only to be stopped once more.
func TestGenerateCeilingStopOnFirstAttemptIsKept(t *testing.T) {
	e, good, text := billedFailureEnv(t, 1000)
	body, ceiling := ceilingOverWorst(t, e, text, 3, 1.2)
	r := e.do("POST", "/v1/generate", e.tenantA, body(ceiling), "Idempotency-Key", "ceiling-first")
	if r.status != 422 || r.str("code") != "output_invalid" || r.str("attempts") != "1" || !strings.Contains(string(r.raw), `"stoppedBy":"cost_ceiling"`) || good.calls.Load() != 0 {
		t.Fatalf("%d %s (fallback called %d times)", r.status, r.raw, good.calls.Load())
	}
	e.usageEvents("a", 1)
	again := e.do("POST", "/v1/generate", e.tenantA, body(ceiling), "Idempotency-Key", "ceiling-first")
	if again.status != 422 || again.header.Get("Idempotent-Replayed") != "true" || string(again.raw) != string(r.raw) {
		t.Fatalf("retry: %d %s", again.status, again.raw)
	}
	e.usageEvents("a", 1) // the failed model was not paid again
}

// A model of the chain that took the prompt and answered what does not
// read as an answer is billed its input (gateway.Caller.Complete), and a
// generation counts that bill: in its usage, which says what was billed,
// and against maxCostUsd before a retry. Both left it out: the answer
// said less than the usage events, and the retries ran on past the
// ceiling, each paying the failed model's input again.
func TestGenerateCountsWhatAFailedModelOfTheChainBilled(t *testing.T) {
	e, good, text := billedFailureEnv(t, 1)
	body, ceiling := ceilingOverWorst(t, e, text, 5, 1.2)
	r := e.must(e.do("POST", "/v1/generate", e.tenantA, body(ceiling)), 422)
	var g struct {
		Usage struct {
			Cost *float64 `json:"estimated_cost_usd"`
		} `json:"usage"`
	}
	json.Unmarshal(r.raw, &g)
	calls := int(good.calls.Load())
	var billed float64
	for _, ev := range e.usageEvents("a", 2*calls) {
		var u gateway.UsageRecord
		json.Unmarshal(ev.Data, &u)
		billed += *u.CostUSD
	}
	if g.Usage.Cost == nil || math.Abs(*g.Usage.Cost-billed) > 1e-6 {
		t.Errorf("the answer says %s was spent, the usage events %v: %s", r.str("usage.estimated_cost_usd"), billed, r.raw)
	}
	if billed > ceiling {
		t.Errorf("billed %v over the ceiling of %v in %d attempts", billed, ceiling, calls)
	}
}

// An answer that is JSON by its grammar but holds no text (an escaped half
// of a surrogate pair alone, bytes that are not UTF-8: a forced tool's
// input is taken as the upstream sent it) is an invalid answer, re-asked:
// it was the generation's output, so the 200 was no JSON a strict parser
// (jq, serde_json) reads, as the request decoder refuses such a body.
func TestGenerateOutputIsText(t *testing.T) {
	for name, input := range map[string]string{
		"lone surrogate": `{"summary":"s\ud800","keyPoints":["a"]}`,
		"not UTF-8":      "{\"summary\":\"s\xff\",\"keyPoints\":[\"a\"]}",
	} {
		t.Run(name, func(t *testing.T) {
			var calls atomic.Int64
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				in := input
				if calls.Add(1) > 1 {
					in = `{"summary":"s","keyPoints":["a"]}`
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"tool_use","id":"t1","name":"emit_summarize","input":%s}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":5}}`, in)
			}))
			t.Cleanup(up.Close)
			vars := map[string]string{"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "k"}
			cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
			if err != nil {
				t.Fatal(err)
			}
			e := newEnvWith(t, cat)
			r := e.must(e.do("POST", "/v1/generate", e.tenantA, genBody(map[string]any{"options": map[string]any{"llm": map[string]any{"model": "anthropic:claude-haiku-4-5"}}})), 200)
			if !utf8.Valid(r.raw) || domain.LoneSurrogateAt(r.raw) >= 0 || r.str("attempts") != "2" || r.str("output") != `{"keyPoints":["a"],"summary":"s"}` {
				t.Fatalf("%v %v %s: %q", utf8.Valid(r.raw), domain.LoneSurrogateAt(r.raw), r.str("output"), r.raw)
			}
		})
	}
}

// Every type works offline (docs/api.md), extract_fields with several
// fields of every type too: the local provider gave one item, a string,
// where the type's rule asks for each field once with a value of its
// type, so two attempts failed and the call was a 422 output_invalid.
func TestGenerateExtractFieldsWithTheLocalProvider(t *testing.T) {
	e := localEnv(t)
	var fields []any
	for _, typ := range []string{"string", "number", "integer", "boolean", "date"} {
		fields = append(fields, map[string]any{"name": "f_" + typ, "type": typ})
	}
	r := e.must(e.do("POST", "/v1/generate", e.tenantA, map[string]any{"type": "extract_fields",
		"input": map[string]any{"text": "Invoice 42 due 2026-12-01", "fields": fields}}), 200)
	if r.str("attempts") != "1" || strings.Count(r.str("output"), `"name":"f_`) != 5 {
		t.Fatalf("%s", r.raw)
	}
}

// Options given as null are options left out, on generate and plans; the
// document says so (it held options.llm to an object, and listed no
// unknown name as refused).
func TestGenerateNullOptionsAsDocumented(t *testing.T) {
	e := localEnv(t)
	opts := map[string]any{"templateVersion": nil, "maxAttempts": nil, "llm": nil}
	e.must(e.do("POST", "/v1/generate", e.tenantA, map[string]any{"type": "summarize", "input": sampleInputs["summarize"], "contextPacketId": nil, "options": opts}), 200)
	e.must(e.do("POST", "/v1/agent-plans", e.tenantA, map[string]any{"objective": "rotate the certificate", "targetExecutor": "ops-bot", "riskLevel": "low",
		"constraints": nil, "contextPacketId": nil, "options": map[string]any{"llm": map[string]any{"mode": nil, "model": nil, "maxCostUsd": nil}}}), 201)
}

// On the embedded store a generation under an Idempotency-Key is not cut at
// the lease, which only a shared store needs (another replica may take the
// key over after it): it runs as long as without the key. It was cut, as a
// 504 that is not kept, so an SDK's retry ran (and paid for) it again.
func TestGenerateUnderAKeyOutlastsTheLease(t *testing.T) {
	u := newScripted(t, validSummary)
	u.gate = make(chan struct{})
	e := scriptedEnvOn(t, u, false)
	e.front.SetIdempotencyLease(100 * time.Millisecond)
	go func() {
		<-u.arrivals
		time.Sleep(500 * time.Millisecond) // a model well past the lease
		close(u.gate)
	}()
	r := e.do("POST", "/v1/generate", e.tenantA, genBody(nil), "Idempotency-Key", "slow-1")
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}

// On a shared store (several replicas) a generation under an
// Idempotency-Key renews its lease while it runs: a retry four leases in
// finds the key still held (409, no second model call) rather than taking
// it over, and the first request's answer is kept. It was cut at the lease
// (10 minutes) as a 504 that is not kept, so a longer call was paid for
// and run again.
func TestGenerateUnderAKeyRenewsItsLeaseOnASharedStore(t *testing.T) {
	u := newScripted(t, validSummary)
	u.gate = make(chan struct{})
	e := scriptedEnvOn(t, u, true)
	e.front.SetIdempotencyLease(150 * time.Millisecond)
	body := genBody(nil)
	first := make(chan response, 1)
	go func() { first <- e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "slow-2") }()
	<-u.arrivals
	time.Sleep(600 * time.Millisecond) // four leases
	select {
	case f := <-first:
		close(u.gate)
		t.Fatalf("the first request ended while its model call ran: %d %s", f.status, f.raw)
	default:
	}
	r := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "slow-2")
	if r.status != 409 || r.str("code") != "idempotency_in_flight" {
		t.Fatalf("a retry while the first still runs: %d %s", r.status, r.raw)
	}
	close(u.gate)
	if f := <-first; f.status != 200 {
		t.Fatalf("the first request: %d %s", f.status, f.raw)
	}
	again := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "slow-2")
	if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || u.calls.Load() != 1 {
		t.Fatalf("the retry after it: %d %s (%d model calls)", again.status, again.raw, u.calls.Load())
	}
}

// A field asked for twice with two types is the client's mistake, refused
// before any model call (422 invalid_input): no answer could give the
// field once with a value of both types, so every attempt was paid for
// and the call ended 422 output_invalid.
func TestGenerateExtractFieldTwoTypesRefused(t *testing.T) {
	u := newScripted(t, `{"fields":[{"name":"due","value":"2026-12-01"}]}`)
	e := scriptedEnv(t, u)
	r := e.must(e.do("POST", "/v1/generate", e.tenantA, genBody(map[string]any{"type": "extract_fields", "input": map[string]any{"text": "due 2026-12-01",
		"fields": []any{map[string]any{"name": "due", "type": "date"}, map[string]any{"name": "due", "type": "integer"}}}})), 422)
	if r.str("code") != "invalid_input" || !strings.Contains(string(r.raw), `"pointer":"/input/fields/1/type"`) || u.calls.Load() != 0 {
		t.Fatalf("%d calls: %s", u.calls.Load(), r.raw)
	}
	// The same field twice with one type is one field, as before.
	e.must(e.do("POST", "/v1/generate", e.tenantA, genBody(map[string]any{"type": "extract_fields", "input": map[string]any{"text": "due 2026-12-01",
		"fields": []any{map[string]any{"name": "due", "type": "date"}, map[string]any{"name": "due", "type": "date"}}}})), 200)
}

// The budget stopping a retry after the chain's first model was billed
// for failing in it (it served what does not read as an answer, and the
// budget could not hold the fallback) ends the generation with that
// attempt in its trace: the usage counted its bill while the trace and
// attempts left it out, so they did not add up to what was spent.
func TestGenerateBudgetStopKeepsTheBilledAttempt(t *testing.T) {
	var cheapCalls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), `"model":"m"`) || cheapCalls.Add(1) > 1 {
			fmt.Fprint(w, `{"id":"x","object":"chat.completion","choices":[]}`) // served, and no answer
			return
		}
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"no JSON here"},"finish_reason":"stop"}],"usage":{"prompt_tokens":200,"completion_tokens":50,"total_tokens":250}}`)
	}))
	t.Cleanup(up.Close)
	file := map[string]any{"providers": []any{
		map[string]any{"name": "cheap", "kind": "openai-compatible", "baseUrl": up.URL + "/v1", "models": []any{map[string]any{
			"name": "m", "contextTokens": 32000, "fallbacks": []string{"dear:d"},
			"pricing": map[string]any{"inputPerMTok": 1, "outputPerMTok": 2, "source": "test"}}}},
		map[string]any{"name": "dear", "kind": "openai-compatible", "baseUrl": up.URL + "/v1", "models": []any{map[string]any{
			"name": "d", "contextTokens": 32000, "pricing": map[string]any{"inputPerMTok": 1000, "outputPerMTok": 2000, "source": "test"}}}},
	}}
	path := filepath.Join(t.TempDir(), "providers.json")
	b, _ := json.Marshal(file)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }, ProvidersFile: path})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, cat)
	// Room for the cheap model's attempts, never for the dear one.
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 3 * summarizeWorst(e, "cheap:m"), "monthlyUsd": nil}), 200)
	r := e.do("POST", "/v1/generate", e.tenantA, genBody(map[string]any{"options": map[string]any{"maxAttempts": 3, "llm": map[string]any{"model": "cheap:m"}}}))
	if r.status != 422 || !strings.Contains(string(r.raw), `"stoppedBy":"budget"`) || cheapCalls.Load() != 2 {
		t.Fatalf("%d %s (cheap model called %d times)", r.status, r.raw, cheapCalls.Load())
	}
	var g struct {
		Attempts int `json:"attempts"`
		Usage    struct {
			In   int      `json:"input_tokens"`
			Cost *float64 `json:"estimated_cost_usd"`
		} `json:"usage"`
		Svc struct {
			Trace struct {
				Attempts []struct {
					Errors []any `json:"errors"`
					Usage  struct {
						In   int      `json:"input_tokens"`
						Cost *float64 `json:"estimated_cost_usd"`
					} `json:"usage"`
				} `json:"attempts"`
			} `json:"trace"`
		} `json:"svc"`
	}
	json.Unmarshal(r.raw, &g)
	in, cost := 0, 0.0
	for _, a := range g.Svc.Trace.Attempts {
		in += a.Usage.In
		if a.Usage.Cost != nil {
			cost += *a.Usage.Cost
		}
	}
	if g.Attempts != 2 || len(g.Svc.Trace.Attempts) != 2 || len(g.Svc.Trace.Attempts[1].Errors) == 0 || g.Usage.Cost == nil ||
		in != g.Usage.In || math.Abs(cost-*g.Usage.Cost) > 1e-9 {
		t.Fatalf("the attempts do not add up to the usage: %s", r.raw)
	}
}

// An answer that gives a name twice in one object is an invalid answer,
// re-asked: the schema was checked against the last value (as
// encoding/json keeps it) while the output sent held both, so a parser
// that keeps the first, or refuses the name twice (serde_json into a
// struct), read a summary that is a number.
func TestGenerateOutputNamesOnce(t *testing.T) {
	u := newScripted(t, `{"summary": 5, "keyPoints": ["a"], "summary": "fine"}`, validSummary)
	e := scriptedEnv(t, u)
	r := e.must(e.do("POST", "/v1/generate", e.tenantA, genBody(nil)), 200)
	if r.str("output") != `{"keyPoints":["append-only"],"summary":"Events are immutable."}` || r.str("attempts") != "2" || u.calls.Load() != 2 ||
		!strings.Contains(string(r.raw), `"pointer":"/summary"`) {
		t.Fatalf("%s", r.raw)
	}
}

// Cache tokens an upstream reports for a generation are held to the
// prompt's bound with its input: generate asks for no cache, and its
// prompt is Baton's own, whole. Only the uncached input was held, so an
// Anthropic upstream telling 5,000,000 cache tokens was billed them, far
// over the maxCostUsd the generation had checked.
func TestGenerateCacheTokensHeldToThePrompt(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"tool_use","id":"t1","name":"emit_summarize","input":{"summary":"s","keyPoints":["a"]}}],"stop_reason":"tool_use",`+
			`"usage":{"input_tokens":10,"cache_creation_input_tokens":5000000,"cache_read_input_tokens":5000000,"output_tokens":5}}`)
	}))
	t.Cleanup(up.Close)
	vars := map[string]string{"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "k"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, cat)
	r := e.must(e.do("POST", "/v1/generate", e.tenantA, genBody(map[string]any{"options": map[string]any{"llm": map[string]any{"model": "anthropic:claude-haiku-4-5", "maxCostUsd": 0.05}}})), 200)
	var rec gateway.UsageRecord
	if err := json.Unmarshal(e.usageEvents("a", 1)[0].Data, &rec); err != nil {
		t.Fatal(err)
	}
	in := rec.Usage.InputTokens + rec.Usage.CacheReadTokens + rec.Usage.CacheWriteTokens
	if in >= 100000 || rec.CostUSD == nil || *rec.CostUSD > 0.05 || strconv.Itoa(in) != r.str("usage.input_tokens") {
		t.Fatalf("billed %+v at %v; the answer: %s", rec.Usage, rec.CostUSD, r.raw)
	}
}

// A keyed request whose claim another request took over (on a shared
// store, once its lease lapsed) is ended, and says so: 409
// idempotency_lease_lost. It answered 502 upstream_error, "could not
// reach the provider", blaming a provider that was answering.
func TestGenerateLeaseLostSaysSo(t *testing.T) {
	defer func() { envLedgerOptions = nil }()
	envLedgerOptions = &ledger.Options{}
	u := newScripted(t, validSummary)
	u.gate = make(chan struct{})
	defer close(u.gate)
	vars := map[string]string{"OPENAI_BASE_URL": u.srv.URL + "/v1", "OPENAI_API_KEY": "k"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvStore(t, cat, func(s eventstore.Store) eventstore.Store { return sharedStore{s} })
	e.services.Idempotency.Lease = 150 * time.Millisecond
	done := make(chan response, 1)
	go func() { done <- e.do("POST", "/v1/generate", e.tenantA, genBody(nil), "Idempotency-Key", "lease-1") }()
	<-u.arrivals
	// Another request's write to the key: it took the key over.
	sum := sha256.Sum256([]byte("lease-1"))
	stream := "idem-a-" + hex.EncodeToString(sum[:16])
	evs, err := eventstore.ReadWholeStream(context.Background(), e.store, stream)
	if err != nil || len(evs) == 0 {
		t.Fatalf("the claim: %v %d", err, len(evs))
	}
	if _, err := e.store.Append(context.Background(), stream, eventstore.Revision(evs[len(evs)-1].Revision),
		eventstore.NewEvent("IdempotencyRenewed", []byte(`{}`), eventstore.Metadata{Tenant: "a"})); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.status != 409 || r.str("code") != "idempotency_lease_lost" {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}

// An answer holding a number past what a float64 holds (1e400, JSON by
// its grammar) is an invalid answer, re-asked, as the request decoder
// refuses such a number: answered as it was, encoding/json could not
// decode the 200 at all and Python read the value as inf.
func TestGenerateOutputNumbersInRange(t *testing.T) {
	u := newScripted(t, `{"fields":[{"name":"amount","value":1e400}]}`, `{"fields":[{"name":"amount","value":42.5}]}`)
	e := scriptedEnv(t, u)
	r := e.must(e.do("POST", "/v1/generate", e.tenantA, map[string]any{"type": "extract_fields",
		"input":   map[string]any{"text": "the amount is 42.5", "fields": []any{map[string]any{"name": "amount", "type": "number"}}},
		"options": map[string]any{"llm": map[string]any{"model": "openai:gpt-4o-mini"}}}), 200)
	var v any
	if err := json.Unmarshal(r.raw, &v); err != nil || r.str("attempts") != "2" || !strings.Contains(string(r.raw), `"pointer":"/fields/0/value"`) {
		t.Fatalf("%v: %s", err, r.raw)
	}
}

// The budget refusing the fallback of the first attempt, after the
// chain's first model was billed for failing, ends the generation as a
// refused retry does: a final 422 kept under the key. It was the budget's
// 429, which is not kept, so each retry with the key paid the failed
// model's input again only to be refused the fallback once more.
func TestGenerateBudgetStopOnFirstAttemptIsKept(t *testing.T) {
	var cheapCalls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"model":"m"`) {
			cheapCalls.Add(1)
		}
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","choices":[]}`) // served, and no answer
	}))
	t.Cleanup(up.Close)
	file := map[string]any{"providers": []any{
		map[string]any{"name": "cheap", "kind": "openai-compatible", "baseUrl": up.URL + "/v1", "models": []any{map[string]any{
			"name": "m", "contextTokens": 32000, "fallbacks": []string{"dear:d"},
			"pricing": map[string]any{"inputPerMTok": 1, "outputPerMTok": 2, "source": "test"}}}},
		map[string]any{"name": "dear", "kind": "openai-compatible", "baseUrl": up.URL + "/v1", "models": []any{map[string]any{
			"name": "d", "contextTokens": 32000, "pricing": map[string]any{"inputPerMTok": 1000, "outputPerMTok": 2000, "source": "test"}}}},
	}}
	path := filepath.Join(t.TempDir(), "providers.json")
	b, _ := json.Marshal(file)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }, ProvidersFile: path})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, cat)
	// Room for the cheap model's attempts, never for the dear one.
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 3 * summarizeWorst(e, "cheap:m"), "monthlyUsd": nil}), 200)
	body := genBody(map[string]any{"options": map[string]any{"maxAttempts": 3, "llm": map[string]any{"model": "cheap:m"}}})
	r := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "budget-first")
	if r.status != 422 || r.str("code") != "output_invalid" || r.str("attempts") != "1" || !strings.Contains(string(r.raw), `"stoppedBy":"budget"`) || cheapCalls.Load() != 1 {
		t.Fatalf("%d %s (cheap model called %d times)", r.status, r.raw, cheapCalls.Load())
	}
	again := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "budget-first")
	if again.status != 422 || again.header.Get("Idempotent-Replayed") != "true" || string(again.raw) != string(r.raw) || cheapCalls.Load() != 1 {
		t.Fatalf("retry: %d %s (cheap model called %d times)", again.status, again.raw, cheapCalls.Load())
	}
}
