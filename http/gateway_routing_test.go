package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/gateway"
	batonhttp "github.com/batonhq/baton/http"
)

// usageEvents waits for a tenant's usage stream to hold n events (usage is
// recorded after the answer is flushed) and returns them.
func (e *env) usageEvents(tenant string, n int) []eventstore.RecordedEvent {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, err := gateway.ReadUsage(context.Background(), e.store, tenant, n+100)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(evs) >= n || time.Now().After(deadline) {
			if len(evs) != n {
				e.t.Fatalf("usage events of %s: %d, want %d", tenant, len(evs), n)
			}
			return evs
		}
		time.Sleep(5 * time.Millisecond) // polling a bounded condition
	}
}

// newRoutingEnv adds to the fake upstreams a provider "flaky" (an
// OpenAI-compatible server, the fake OpenAI upstream under another name)
// whose models fail, tagged premium at a high price so that modes pick it
// first, with fallbacks.
func newRoutingEnv(t *testing.T) (*env, *fakeUpstreams, gateway.Config) {
	f := newFakeUpstreams(t)
	vars := map[string]string{
		"OPENAI_BASE_URL": f.openai.URL + "/v1", "OPENAI_API_KEY": "sk-upstream-test",
		"ANTHROPIC_BASE_URL": f.anthropic.URL, "ANTHROPIC_API_KEY": "ak-upstream-test",
		"FLAKY_KEY": "sk-upstream-test", "ANTHRO_KEY": "ak-upstream-test",
	}
	price := map[string]any{"inputPerMTok": 50, "outputPerMTok": 100, "source": "test"}
	file := map[string]any{"providers": []any{map[string]any{
		"name": "anthro", "kind": "anthropic", "baseUrl": f.anthropic.URL, "keyEnv": "ANTHRO_KEY",
		"models": []any{
			map[string]any{"name": "overloaded", "contextTokens": 1000, "pricing": price, "fallbacks": []string{"openai:gpt-4o-mini"}},
		},
	}, map[string]any{
		"name": "flaky", "kind": "openai-compatible", "baseUrl": f.openai.URL + "/v1", "keyEnv": "FLAKY_KEY",
		"models": []any{
			map[string]any{"name": "fail-500", "contextTokens": 1000, "modes": []string{"premium"}, "pricing": price,
				"fallbacks": []string{"anthropic:claude-haiku-4-5"}},
			map[string]any{"name": "fail-429", "contextTokens": 1000, "pricing": price,
				"fallbacks": []string{"flaky:fail-500", "openai:gpt-4o-mini"}},
			map[string]any{"name": "cut", "contextTokens": 1000, "pricing": price, "fallbacks": []string{"openai:gpt-4o-mini"}},
			map[string]any{"name": "no-usage", "contextTokens": 1000, "pricing": price},
		},
	}}}
	path := filepath.Join(t.TempDir(), "providers.json")
	b, _ := json.Marshal(file)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := gateway.Config{Getenv: func(k string) string { return vars[k] }, ProvidersFile: path}
	cat, err := gateway.NewCatalog(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, cat), f, cfg
}

// chatBody is a small chat completion request; extra is more fields, as
// name, value pairs.
func chatBody(model string, stream bool, extra ...any) map[string]any {
	b := map[string]any{"model": model, "max_completion_tokens": 50, "messages": []any{map[string]any{"role": "user", "content": "hello"}}}
	if stream {
		b["stream"] = true
		b["stream_options"] = map[string]any{"include_usage": true}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		b[extra[i].(string)] = extra[i+1]
	}
	return b
}

func usageOutcomes(t *testing.T, evs []eventstore.RecordedEvent) []string {
	var out []string
	for _, ev := range evs {
		var u gateway.UsageRecord
		if err := json.Unmarshal(ev.Data, &u); err != nil {
			t.Fatal(err)
		}
		out = append(out, u.Model+" "+u.Outcome)
	}
	return out
}

func TestFallbackChains(t *testing.T) {
	e, _, _ := newRoutingEnv(t)
	// 429 -> the next (500) -> the next, which answers.
	r := e.must(e.do("POST", "/v1/chat/completions", e.tenantA, chatBody("flaky:fail-429", false)), 200)
	if r.str("svc.trace.fallbackUsed") != "true" || r.str("svc.trace.selectedProvider") != "openai" || r.str("svc.trace.selectedModel") != "openai:gpt-4o-mini" {
		t.Fatalf("fallback not used or not reported: %s", r.raw)
	}
	got := strings.Join(usageOutcomes(t, e.usageEvents("a", 3)), "; ")
	if got != "flaky:fail-429 upstream_error; flaky:fail-500 upstream_error; openai:gpt-4o-mini ok" {
		t.Fatalf("usage of the chain: %s", got)
	}
	// A streamed message whose first model fails before its first byte
	// falls back too, and says so in message_start.
	resp, evs := e.stream("/v1/messages", e.tenantB, map[string]any{"model": "flaky:fail-500", "max_tokens": 20, "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if resp.StatusCode != 200 || len(evs) == 0 || evs[0][0] != "message_start" {
		t.Fatalf("stream: %d %v", resp.StatusCode, evs)
	}
	// message_start already carries the input side of the usage, as the
	// Anthropic upstream reported it in its own message_start.
	if !strings.Contains(evs[0][1], `"fallbackUsed":true`) || !strings.Contains(evs[0][1], `"selectedModel":"anthropic:claude-haiku-4-5"`) ||
		!strings.Contains(evs[0][1], `"input_tokens":10`) || !strings.Contains(evs[0][1], `"cache_read_input_tokens":90`) || evs[len(evs)-1][0] != "message_stop" {
		t.Fatalf("streamed fallback: %v", evs)
	}
	// A stream that breaks after its first delta reached the client cannot
	// fall back: the client sees the error, and the call is billed partial.
	_, evs = e.stream("/v1/chat/completions", e.tenantB, chatBody("flaky:cut", true))
	if len(evs) < 2 || !strings.Contains(evs[0][1], `"fallbackUsed":false`) || !strings.Contains(evs[len(evs)-1][1], `"error"`) {
		t.Fatalf("cut stream: %v", evs)
	}
	got = strings.Join(usageOutcomes(t, e.usageEvents("b", 3)), "; ")
	if got != "flaky:fail-500 upstream_error; anthropic:claude-haiku-4-5 ok; flaky:cut partial" {
		t.Fatalf("usage: %s", got)
	}
	// An Anthropic upstream that opens its stream (message_start, with
	// usage) and then fails with overloaded_error has sent no content:
	// the next model takes over, and the client never sees the error.
	resp, evs = e.stream("/v1/messages", e.tenantA, map[string]any{"model": "anthro:overloaded", "max_tokens": 20, "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if resp.StatusCode != 200 || len(evs) == 0 || evs[0][0] != "message_start" || evs[len(evs)-1][0] != "message_stop" ||
		!strings.Contains(evs[0][1], `"fallbackUsed":true`) || !strings.Contains(evs[0][1], `"model":"openai:gpt-4o-mini"`) {
		t.Fatalf("overloaded after message_start did not fall back: %v", evs)
	}
	for _, ev := range evs {
		if ev[0] == "error" {
			t.Fatalf("the client saw the first model's error: %v", evs)
		}
	}
	// The same through the chat front, streamed.
	_, evs = e.stream("/v1/chat/completions", e.tenantA, chatBody("anthro:overloaded", true))
	if len(evs) < 3 || !strings.Contains(evs[0][1], `"fallbackUsed":true`) || evs[len(evs)-1][1] != "[DONE]" {
		t.Fatalf("chat stream did not fall back: %v", evs)
	}
	got = strings.Join(usageOutcomes(t, e.usageEvents("a", 7)), "; ")
	if !strings.HasSuffix(got, "anthro:overloaded upstream_error; openai:gpt-4o-mini ok; anthro:overloaded upstream_error; openai:gpt-4o-mini ok") {
		t.Fatalf("usage of the overloaded chain: %s", got)
	}
	// Without a fallback, the upstream's error comes back in the front's
	// shape with its status and retry-after.
	r = e.do("POST", "/v1/chat/completions", e.tenantA, chatBody("openai:fail-429", false))
	if r.status != 429 || r.header.Get("Retry-After") != "7" || r.str("error.code") != "upstream_rate_limited" {
		t.Fatalf("no fallback: %d %v %s", r.status, r.header, r.raw)
	}
}

// An upstream that reports no usage is not a free call: Baton counts the
// tokens itself, bills that count and says it is an estimate.
func TestMissingUsageIsEstimatedNotFree(t *testing.T) {
	e, _, _ := newRoutingEnv(t)
	r := e.must(e.do("POST", "/v1/chat/completions", e.tenantA, chatBody("flaky:no-usage", false)), 200)
	if r.str("usage.estimated") != "true" || r.num("usage.prompt_tokens") <= 0 || r.num("usage.completion_tokens") <= 0 || r.num("usage.estimated_cost_usd") <= 0 {
		t.Fatalf("non-streamed usage: %s", r.raw)
	}
	_, evs := e.stream("/v1/chat/completions", e.tenantA, chatBody("flaky:no-usage", true))
	var usage string
	for _, ev := range evs {
		if strings.Contains(ev[1], `"usage"`) {
			usage = ev[1]
		}
	}
	if !strings.Contains(usage, `"estimated":true`) || strings.Contains(usage, `"estimated_cost_usd":0,`) || strings.Contains(usage, `"estimated_cost_usd":null`) {
		t.Fatalf("streamed usage: %v", evs)
	}
	for _, ev := range e.usageEvents("a", 2) {
		var rec gateway.UsageRecord
		if err := json.Unmarshal(ev.Data, &rec); err != nil {
			t.Fatal(err)
		}
		if !rec.Usage.Estimated || rec.Usage.InputTokens <= 0 || rec.CostUSD == nil || *rec.CostUSD <= 0 {
			t.Fatalf("usage event: %s", ev.Data)
		}
	}
	// A reported usage is taken as it is, never marked estimated.
	r = e.must(e.do("POST", "/v1/chat/completions", e.tenantB, chatBody("openai:gpt-4o-mini", false)), 200)
	if r.str("usage.estimated") != "" || r.num("usage.prompt_tokens") != 100 {
		t.Fatalf("reported usage: %s", r.raw)
	}
}

func TestRoutingModes(t *testing.T) {
	e, _, _ := newRoutingEnv(t)
	r := e.must(e.do("POST", "/v1/chat/completions", e.tenantA, chatBody("cheap", false)), 200)
	// cheap ranks the cheapest first; ties go to the id.
	if r.str("svc.trace.selectedModel") != "anthropic:claude-haiku-5-5" || r.str("svc.trace.fallbackUsed") != "false" {
		t.Fatalf("cheap: %s", r.raw)
	}
	// premium ranks the dearest first: flaky:fail-500 fails, the mode's
	// chain goes on to the next premium model.
	r = e.must(e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "premium", "max_tokens": 20, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}), 200)
	if r.str("svc.trace.selectedModel") != "anthropic:claude-fable-5-2" || r.str("svc.trace.fallbackUsed") != "true" {
		t.Fatalf("premium: %s", r.raw)
	}
	// A failed health probe takes the model out of the modes.
	h := e.must(e.do("POST", "/v1/models/health", e.admin, map[string]any{"provider": "flaky", "model": "fail-500"}), 200)
	if h.str("ok") != "false" || h.str("id") != "flaky:fail-500" || !strings.Contains(h.str("error"), "500") || !microTime.MatchString(h.str("testedAt")) {
		t.Fatalf("probe: %s", h.raw)
	}
	r = e.must(e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "premium", "max_tokens": 20, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}), 200)
	if r.str("svc.trace.selectedModel") != "anthropic:claude-fable-5-2" || r.str("svc.trace.fallbackUsed") != "false" {
		t.Fatalf("premium after the probe: %s", r.raw)
	}
	// A failed probe of a model the catalog does not hold (a typo) adds
	// nothing: it became a model every client's bare name could go to.
	e.must(e.do("POST", "/v1/models/health", e.admin, map[string]any{"provider": "flaky", "model": "fail-500-typo"}), 200)
	if r := e.do("GET", "/v1/models/flaky:fail-500-typo", e.tenantA, nil); r.status != 404 {
		t.Fatalf("a failed probe of a typo added it: %d %s", r.status, r.raw)
	}
	// Needs: a request that may need more context than every premium
	// model has is the client's to change, a 400 (the local development
	// model is not used while real providers are configured).
	r = e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "premium", "max_completion_tokens": 2000000, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if r.status != 400 || r.str("error.code") != "context_length_exceeded" || r.str("error.param") != "messages" {
		t.Fatalf("too long: %d %s", r.status, r.raw)
	}
	r = e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "premium", "max_tokens": 2000000, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if r.status != 400 || r.str("error.type") != "invalid_request_error" || r.header.Get("X-Should-Retry") != "" {
		t.Fatalf("too long, messages: %d %v %s", r.status, r.header, r.raw)
	}
}

// POST /v1/models/sync reads its optional body as the other admin model
// routes do: one over the body limit is 413, one that stops arriving is
// 408 once the body read timeout passes; both in the OpenAI error shape
// the document gives the route, and neither syncs anything.
func TestModelSyncOversizedAndStalledBodies(t *testing.T) {
	t.Cleanup(batonhttp.SetBodyReadTimeout(200 * time.Millisecond)) // restored after the front stops
	e, _, _ := newRoutingEnv(t)
	before, err := e.store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := e.do("POST", "/v1/models/sync", e.admin, `{"provider":"`+strings.Repeat("x", 80<<10)+`"}`)
	if r.status != 413 || r.str("error.code") != "body_too_large" {
		t.Fatalf("oversized body: %d %s", r.status, r.raw)
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte(`{"provider":`)) // then nothing
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/models/sync", pr)
	req.Header.Set("x-api-key", e.admin)
	req.ContentLength = 100
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 408 || !strings.Contains(string(body), `"code":"body_timeout"`) {
		t.Fatalf("stalled body: %d %s", resp.StatusCode, body)
	}
	if after, _ := e.store.Head(context.Background()); after != before {
		t.Fatal("a refused sync appended an event")
	}
}

// The admin routes take null for an optional field as its absence, as
// the rest of the API does: a key's admin and label, a sync's or a
// probe's provider, a batch's options, a preview's mode, strategy, limit
// and needs. Each request below is served, and held to the document.
func TestAdminOptionalFieldsMayBeNull(t *testing.T) {
	e, _, _ := newRoutingEnv(t)
	for _, c := range []struct {
		path, body string
		status     int
	}{
		{"/v1/admin/keys", `{"tenant":"a","admin":null,"label":null}`, 201},
		{"/v1/models/sync", `{"provider":null}`, 200},
		{"/v1/models/health", `{"provider":null,"model":"openai:gpt-4o-mini"}`, 200},
		{"/v1/models/health/batch", `{"configuredOnly":null,"limit":null}`, 200},
		{"/v1/models/route/preview", `{"mode":null,"strategy":null,"limit":null,"needs":null}`, 200},
		{"/v1/models/route/preview", `{"needs":{"json":null,"tools":null,"contextTokens":null}}`, 200},
	} {
		if r := e.do("POST", c.path, e.admin, c.body); r.status != c.status {
			t.Fatalf("%s %s: %d %s", c.path, c.body, r.status, r.raw)
		}
	}
}

func TestModelAdminEndpoints(t *testing.T) {
	e, _, cfg := newRoutingEnv(t)
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/models/sync"}, {"POST", "/v1/models/health"}, {"POST", "/v1/models/health/batch"},
		{"POST", "/v1/models/route/preview"}, {"GET", "/v1/models/infrastructure"},
	} {
		if r := e.do(c.method, c.path, e.tenantA, map[string]any{}); r.status != 403 || r.str("error.type") == "" {
			t.Fatalf("%s with a tenant key: %d %s", c.path, r.status, r.raw)
		}
		if r := e.do(c.method, c.path, "", nil); r.status != 401 {
			t.Fatalf("%s without a key: %d", c.path, r.status)
		}
	}
	head := func() eventstore.Position {
		p, err := e.store.Head(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	before := head()
	for _, c := range []struct {
		path string
		body any
	}{
		{"/v1/models/health", map[string]any{}},
		{"/v1/models/health", map[string]any{"provider": "nope", "model": "x"}},
		{"/v1/models/health", map[string]any{"provider": "openai", "model": "anthropic:x"}},
		{"/v1/models/health/batch", map[string]any{"limit": 0}},
		{"/v1/models/health/batch", map[string]any{"limit": "ten"}},
		{"/v1/models/route/preview", map[string]any{"mode": "fastest"}},
		{"/v1/models/route/preview", map[string]any{"strategy": "vibes"}},
		{"/v1/models/route/preview", "{not json"},
		{"/v1/models/sync", map[string]any{"provider": "nope"}},
		{"/v1/models/sync", map[string]any{"provider": 5}},
	} {
		r := e.do("POST", c.path, e.admin, c.body)
		if r.status < 400 || r.status >= 500 || r.str("error.message") == "" {
			t.Fatalf("%s %v: %d %s", c.path, c.body, r.status, r.raw)
		}
	}
	if head() != before {
		t.Fatal("a refused admin request appended an event")
	}

	// Sync: the fake OpenAI lists gpt-4o-mini and "other": "other" joins
	// the catalog unpriced, the models it no longer lists are unavailable
	// (and out of the modes); flaky lists the same two.
	// One provider, when the body names it: the others are not asked.
	one := e.must(e.do("POST", "/v1/models/sync", e.admin, map[string]any{"provider": "flaky"}), 200)
	if !strings.Contains(string(one.raw), `"providers":[{"provider":"flaky",`) || strings.Count(string(one.raw), `"provider":`) != 1 {
		t.Fatalf("sync of one provider: %s", one.raw)
	}
	s := e.must(e.do("POST", "/v1/models/sync", e.admin, nil), 200)
	if !strings.Contains(string(s.raw), `"added":["openai:other"]`) || !strings.Contains(string(s.raw), `"missing":["openai:gpt-4.1-mini","openai:gpt-4o","openai:gpt-5.6-luna","openai:gpt-6-luna","openai:gpt-6.2-sol"]`) ||
		!strings.Contains(string(s.raw), `"skipped":"development provider`) {
		t.Fatalf("sync: %s", s.raw)
	}
	models := map[string]gateway.Model{}
	for _, m := range e.catalog.List() {
		models[m.ID] = m
	}
	if m := models["openai:other"]; !m.Discovered || m.HasPricing || !m.Available {
		t.Fatalf("discovered model: %+v", m)
	}
	if m := models["openai:gpt-4o"]; m.Available || m.Listed == nil || *m.Listed {
		t.Fatalf("unlisted model: %+v", m)
	}
	if m := models["anthropic:claude-sonnet-5-5"]; !m.Available {
		t.Fatalf("listed anthropic model: %+v", m)
	}

	// Health batch: configured models, least recently probed first,
	// bounded by limit.
	b := e.must(e.do("POST", "/v1/models/health/batch", e.admin, map[string]any{"configuredOnly": true, "limit": 3}), 200)
	if b.str("checked") != "3" || b.str("object") != "list" {
		t.Fatalf("batch: %s", b.raw)
	}
	b = e.must(e.do("POST", "/v1/models/health/batch", e.admin, map[string]any{"limit": 200}), 200)
	if b.str("unhealthy") != "2" || !strings.Contains(string(b.raw), `"error":"provider flaky answered 429: slow down"`) { // flaky's failing models
		t.Fatalf("batch: %s", b.raw)
	}

	// Route preview: ranked, limited, with reasons; the unhealthy and
	// unlisted models are excluded with theirs.
	p := e.must(e.do("POST", "/v1/models/route/preview", e.admin, map[string]any{"mode": "cheap", "strategy": "cost", "limit": 2}), 200)
	var prev struct {
		Routes   []gateway.Route    `json:"routes"`
		Excluded []gateway.Excluded `json:"excluded"`
	}
	json.Unmarshal(p.raw, &prev)
	if len(prev.Routes) != 2 || prev.Routes[0].ID != "openai:gpt-4o-mini" || prev.Routes[1].ID != "anthropic:claude-haiku-4-5" ||
		!strings.HasPrefix(prev.Routes[0].Reason, "first choice") || !strings.HasPrefix(prev.Routes[1].Reason, "fallback") {
		t.Fatalf("preview: %s", p.raw)
	}
	excluded := map[string]string{}
	for _, x := range prev.Excluded {
		excluded[x.ID] = x.Reason
	}
	if !strings.Contains(excluded["openai:gpt-4.1-mini"], "not listed") {
		t.Fatalf("excluded: %v", excluded)
	}
	p = e.must(e.do("POST", "/v1/models/route/preview", e.admin, map[string]any{"mode": "premium"}), 200)
	if !strings.Contains(string(p.raw), `"flaky:fail-500","reason":"not listed by the provider`) || !strings.Contains(string(p.raw), `"id":"anthropic:claude-sonnet-5-5","provider"`) {
		t.Fatalf("premium preview: %s", p.raw)
	}

	// Infrastructure: which providers have keys, never the keys.
	inf := e.must(e.do("GET", "/v1/models/infrastructure", e.admin, nil), 200)
	if strings.Contains(string(inf.raw), "sk-upstream-test") || strings.Contains(string(inf.raw), "ak-upstream-test") {
		t.Fatal("infrastructure shows a key")
	}
	if !strings.Contains(string(inf.raw), `"name":"openai","kind":"openai","configured":true,"keySet":true`) ||
		!strings.Contains(string(inf.raw), `"cheap":["openai:gpt-4o-mini"`) || inf.str("health.tested") == "0" {
		t.Fatalf("infrastructure: %s", inf.raw)
	}

	// Every replica sees the same catalog: a fresh catalog fed the store's
	// events equals this one.
	fresh, err := gateway.NewCatalog(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &gateway.Follower{Store: e.store, Appliers: []gateway.Applier{fresh}}
	if err := f.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(e.catalog.List())
	got, _ := json.Marshal(fresh.List())
	if string(got) != string(want) {
		t.Fatalf("replayed catalog differs:\n%s\n%s", got, want)
	}
}

// POST /v1/models/health/batch probes at most BatchConcurrency models at
// once: an upstream serving three times as many models, each probe held a
// moment so that probes overlap, never has more probes in flight than
// that, and every configured model is probed, once. (Counted, not timed.)
func TestHealthBatchBoundsConcurrency(t *testing.T) {
	bound := batonhttp.BatchConcurrency
	var mu sync.Mutex
	inFlight, most := 0, 0 // probes the upstream is answering; the most at once
	probed := map[string]int{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		probed[req.Model]++
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // a small wait, so that the probes overlap
		// Out of flight before the answer is written: a probe keeps its
		// place in the batch until it has read the answer, so the count
		// never runs ahead of the batch's own.
		mu.Lock()
		inFlight--
		mu.Unlock()
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(up.Close)
	var specs []gateway.ModelSpec
	for i := range 3 * bound {
		specs = append(specs, gateway.ModelSpec{Name: fmt.Sprintf("m%02d", i), Modes: []string{}})
	}
	// An OpenAI-compatible server without a key variable is configured; the
	// built-in providers have no keys here and are skipped. The local model
	// is configured too, and probed without an upstream.
	e := newEnvWith(t, catalogWith(t, nil, gateway.ProviderSpec{Name: "counted", Kind: "openai-compatible", BaseURL: up.URL + "/v1", Models: specs}))
	b := e.must(e.do("POST", "/v1/models/health/batch", e.admin, map[string]any{"configuredOnly": true, "limit": 200}), 200)
	var body struct {
		Data []struct {
			ID string
			OK bool
		} `json:"data"`
		Checked     int `json:"checked"`
		Healthy     int `json:"healthy"`
		Concurrency int `json:"concurrency"`
	}
	if err := json.Unmarshal(b.raw, &body); err != nil {
		t.Fatal(err)
	}
	if body.Concurrency != bound || body.Checked != len(specs)+1 || body.Healthy != body.Checked {
		t.Fatalf("batch: concurrency %d checked %d healthy %d, want %d, %d, all: %s", body.Concurrency, body.Checked, body.Healthy, bound, len(specs)+1, b.raw)
	}
	answered := map[string]bool{}
	for _, h := range body.Data {
		answered[h.ID] = h.OK
	}
	if !answered["local:echo"] {
		t.Fatalf("local:echo not probed ok: %s", b.raw)
	}
	mu.Lock() // (every probe has been answered: the batch waits for them all)
	defer mu.Unlock()
	for _, m := range specs {
		if probed[m.Name] != 1 || !answered["counted:"+m.Name] {
			t.Fatalf("%s: probed %d times upstream, answered ok %v; want once, ok (upstream saw %v)", m.Name, probed[m.Name], answered["counted:"+m.Name], probed)
		}
	}
	if len(probed) != len(specs) {
		t.Fatalf("the upstream was probed for %v, want the %d models of the provider", probed, len(specs))
	}
	t.Logf("at most %d probes in flight (bound %d)", most, bound)
	if most > bound {
		t.Fatalf("%d probes in flight at once, bound %d", most, bound)
	}
}

func TestBudgetHoldsWorstCaseUnderConcurrency(t *testing.T) {
	// An upstream that holds every call until released.
	var arrived atomic.Int64
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		<-release
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	defer up.Close()
	vars := map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "k"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, cat)
	_, model, err := cat.Resolve("openai:gpt-4o-mini")
	if err != nil {
		t.Fatal(err)
	}
	// The body goes to OpenAI as it is: its bytes bound the input.
	body, _ := json.Marshal(chatBody("openai:gpt-4o-mini", false))
	worst := *gateway.WorstCost(gateway.Request{MaxTokens: 50, Body: body}, model)
	daily := 10.5 * worst
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": daily, "monthlyUsd": nil}), 200)

	const n = 100
	statuses := make(chan response, n)
	for range n {
		go func() {
			statuses <- e.do("POST", "/v1/chat/completions", e.tenantA, chatBody("openai:gpt-4o-mini", false))
		}()
	}
	// 90 are refused at once; 10 hold their worst case at the upstream.
	var refused []response
	for len(refused) < n-10 {
		r := <-statuses
		if r.status != 429 {
			t.Fatalf("a call got %d before any was released: %s", r.status, r.raw)
		}
		refused = append(refused, r)
	}
	if r := refused[0]; r.str("error.code") != "budget_exceeded" || r.str("error.type") != "insufficient_quota" || r.header.Get("Retry-After") == "" {
		t.Fatalf("refusal: %v %s", r.header, r.raw)
	}
	st := e.must(e.do("GET", "/v1/admin/budgets/a", e.admin, nil), 200)
	if held, _ := strconv.ParseFloat(st.str("reservedUsd"), 64); math.Abs(held-10*worst) > 1e-12 {
		t.Fatalf("held %v, want %v", held, 10*worst)
	}
	close(release)
	for range 10 {
		if r := <-statuses; r.status != 200 {
			t.Fatalf("admitted call: %d %s", r.status, r.raw)
		}
	}
	if got := arrived.Load(); got != 10 {
		t.Fatalf("%d calls reached the upstream, want 10", got)
	}
	// Settled: nothing held, spent = 10 actual calls (3 in, 1 out).
	e.usageEvents("a", 10)
	actual := (3*0.15 + 1*0.60) / 1e6
	st = e.must(e.do("GET", "/v1/admin/budgets/a", e.admin, nil), 200)
	spent, _ := strconv.ParseFloat(st.str("daySpentUsd"), 64)
	if st.str("reservedUsd") != "0" || math.Abs(spent-10*actual) > 1e-12 {
		t.Fatalf("after settling: %s (want spent %v)", st.raw, 10*actual)
	}
	// A replica catching up from the store agrees on the spending.
	b := gateway.NewBudgets(nil)
	if err := (&gateway.Follower{Store: e.store, Appliers: []gateway.Applier{b}}).CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := b.Status("a"); math.Abs(s.DaySpent-10*actual) > 1e-12 || s.Limits.DailyUSD == nil || *s.Limits.DailyUSD != daily {
		t.Fatalf("replayed budget: %+v", s)
	}
}

// keysAwayStore is a store that does not answer reads of the keys
// stream, as KurrentDB does while it is away.
type keysAwayStore struct{ eventstore.Store }

func (s keysAwayStore) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]eventstore.RecordedEvent, error) {
	if stream == domain.KeysStream {
		return nil, fmt.Errorf("kurrent: read: %w: connection refused", eventstore.ErrUnavailable)
	}
	return s.Store.ReadStream(ctx, stream, from, limit)
}

// A budget's GET reads the store (whether the tenant is one of Baton's):
// with the store away it is a 503 store_unavailable that says when to
// retry, a status the document lists for the route.
func TestBudgetReadWithTheStoreAway(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvStore(t, gatewayCatalog(t, f), func(s eventstore.Store) eventstore.Store { return keysAwayStore{s} })
	r := e.do("GET", "/v1/admin/budgets/a", e.admin, nil)
	if r.status != 503 || r.str("code") != "store_unavailable" || r.header.Get("Retry-After") == "" {
		t.Fatalf("%d %v %s", r.status, r.header, r.raw)
	}
}

// slowBudgetStore is a store whose appends to budget streams outlast the
// time Baton gives them, as KurrentDB's do while it elects a leader.
type slowBudgetStore struct{ eventstore.Store }

func (s slowBudgetStore) Append(ctx context.Context, stream string, expected eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if strings.HasPrefix(stream, "budget-") {
		return eventstore.AppendResult{}, fmt.Errorf("kurrent: append to %q: %w (the leader is being elected)", stream, context.DeadlineExceeded)
	}
	return s.Store.Append(ctx, stream, expected, evs...)
}

// A budget's PUT whose append the store does not finish within the time
// the PUT gives it is a 503 store_unavailable, as any write the store
// does not answer: it was a 500 internal_error, a failure of Baton's own.
func TestBudgetWriteTheStoreDoesNotFinish(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvStore(t, gatewayCatalog(t, f), func(s eventstore.Store) eventstore.Store { return slowBudgetStore{s} })
	r := e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 1})
	if r.status != 503 || r.str("code") != "store_unavailable" || r.header.Get("Retry-After") == "" {
		t.Fatalf("%d %v %s", r.status, r.header, r.raw)
	}
}

// budgetAwayStore is a shared store that takes no appends to budget
// streams, as KurrentDB while it is away.
type budgetAwayStore struct{ eventstore.Store }

func (s budgetAwayStore) Append(ctx context.Context, stream string, expected eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if strings.HasPrefix(stream, "budget-") {
		return eventstore.AppendResult{}, fmt.Errorf("kurrent: append to %q: %w: connection refused", stream, eventstore.ErrUnavailable)
	}
	return s.Store.Append(ctx, stream, expected, evs...)
}

// A model call whose budget hold the store does not take is refused with
// 503 store_unavailable in the front's shape, saying what happened to the
// call: it was not made, and a retry is all it takes. The message was the
// ledger's, telling a chat client to retry with an Idempotency-Key, which
// the model fronts do not take, lest a contract be created twice.
func TestModelCallWhoseHoldTheStoreDoesNotTake(t *testing.T) {
	e, f := newGatewayEnv(t)
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 5}), 200)
	e.budgets.UseStore(budgetAwayStore{e.store}, nil)
	before := f.calls.Load()
	for _, c := range []struct {
		path, model string
		header      []string
	}{{"/v1/chat/completions", "openai:gpt-4o-mini", nil}, {"/v1/messages", "anthropic:claude-haiku-4-5", []string{"anthropic-version", "2023-06-01"}}} {
		r := e.do("POST", c.path, e.tenantA, map[string]any{"model": c.model, "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}, c.header...)
		msg := r.str("error.message")
		if r.status != 503 || r.header.Get("Retry-After") == "" || strings.Contains(msg, "Idempotency-Key") || !strings.Contains(msg, "not made") {
			t.Errorf("%s: %d %v %s", c.path, r.status, r.header, r.raw)
		}
	}
	if n := f.calls.Load() - before; n != 0 {
		t.Errorf("%d upstream calls made without a hold", n)
	}
}

// stalledKeysReads is a store whose reads of the keys stream do not
// answer until their context ends, as KurrentDB's while it has no leader.
type stalledKeysReads struct{ eventstore.Store }

func (s stalledKeysReads) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]eventstore.RecordedEvent, error) {
	if stream == domain.KeysStream {
		<-ctx.Done()
		return nil, fmt.Errorf("kurrent: read %q: %w", stream, ctx.Err())
	}
	return s.Store.ReadStream(ctx, stream, from, limit)
}

// A budget read the store does not answer is a 503 store_unavailable
// after the 10 s a store call is given: it waited as long as the store
// did (11 to 51 s, by hand, with KurrentDB stopped).
func TestBudgetReadTheStoreDoesNotAnswer(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvStore(t, gatewayCatalog(t, f), func(s eventstore.Store) eventstore.Store { return stalledKeysReads{s} })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/v1/admin/budgets/a", nil)
	req.Header.Set("x-api-key", e.admin)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("no answer after %v: %v", time.Since(start), err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), "store_unavailable") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, b)
	}
}

func TestBudgetAdminAndUnpricedModels(t *testing.T) {
	e, _ := newGatewayEnv(t)
	for _, c := range []struct {
		key, tenant string
		body        any
		status      int
	}{
		{e.tenantA, "a", map[string]any{"dailyUsd": 1}, 403},
		{e.admin, "Not A Tenant", map[string]any{"dailyUsd": 1}, 404},
		// A tenant no key was made for (a misspelling): its budget would
		// hold nobody, and leave the tenant meant unlimited.
		{e.admin, "aa", map[string]any{"dailyUsd": 1}, 404},
		{e.admin, "a", map[string]any{"dailyUsd": -1}, 422},
		{e.admin, "a", map[string]any{"monthlyUsd": "lots"}, 422},
		{e.admin, "a", "{", 400},
		// A misspelled limit would lift both: refused, naming it.
		{e.admin, "a", map[string]any{"daily_usd": 1}, 422},
		{e.admin, "a", map[string]any{"dailyUSD": 5, "monthlyUsd": 50}, 422},
		{e.admin, "a", map[string]any{"": 3}, 422}, // a name that is empty is unknown too (it lifted both)
	} {
		r := e.do("PUT", "/v1/admin/budgets/"+url.PathEscape(c.tenant), c.key, c.body)
		if r.status != c.status {
			t.Fatalf("%s %v: %d %s", c.tenant, c.body, r.status, r.raw)
		}
		if m, _ := c.body.(map[string]any); c.status == 422 && len(m) > 0 && m["dailyUsd"] == nil && m["monthlyUsd"] == nil {
			fields, _ := r.body["fields"].([]any)
			if f, _ := append(fields, nil)[0].(map[string]any); f == nil || !strings.HasPrefix(f["pointer"].(string), "/") {
				t.Fatalf("%v: fields %v, want a JSON pointer naming the field", c.body, fields)
			}
		}
	}
	// A number beyond any float is out of range, said so ("must be a
	// number, not number 1e400" read as nonsense).
	r := e.do("PUT", "/v1/admin/budgets/a", e.admin, `{"dailyUsd":1e400}`)
	if r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"/dailyUsd","code":"out_of_range","message":"is 1e400, a number out of range"`) {
		t.Fatalf("dailyUsd 1e400: %d %s", r.status, r.raw)
	}
	if evs, _ := e.store.ReadStream(context.Background(), gateway.BudgetStream("a"), 0, 10); len(evs) != 0 {
		t.Fatal("a refused budget request appended an event")
	}
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"monthlyUsd": 5}), 200)
	// With a budget, a model without a price cannot be bounded: refused.
	r = e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "anthropic:some-new-model", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "x"}}})
	if r.status != 403 || r.str("error.type") != "permission_error" {
		t.Fatalf("unpriced under budget: %d %s", r.status, r.raw)
	}
	// Tenant b has no budget: the same call goes through, cost unknown.
	r = e.must(e.do("POST", "/v1/messages", e.tenantB, map[string]any{"model": "anthropic:some-new-model", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "x"}}}), 200)
	if !strings.Contains(string(r.raw), `"estimated_cost_usd":null`) {
		t.Fatalf("%s", r.raw)
	}
}

// A fallback that cannot take the request (translated, it would refuse a
// prefill) is passed over: the client gets the first model's failure, as
// if the fallback were not in the chain, not the fallback's 400; and no
// attempt is recorded for it, as it called no upstream.
func TestFallbackThatRefusesIsPassedOver(t *testing.T) {
	e, _, _ := newRoutingEnv(t)
	body := map[string]any{"model": "anthro:overloaded", "max_tokens": 20, "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}, map[string]any{"role": "assistant", "content": "Once"}}}
	resp, evs := e.stream("/v1/messages", e.tenantA, body)
	raw := fmt.Sprint(evs)
	if resp.StatusCode == 200 || resp.StatusCode == 400 || strings.Contains(raw, "assistant turn") {
		t.Fatalf("status %d: %v", resp.StatusCode, evs)
	}
	got := strings.Join(usageOutcomes(t, e.usageEvents("a", 1)), "; ")
	if got != "anthro:overloaded upstream_error" {
		t.Fatalf("usage: %s", got)
	}
}

// A path with doubled slashes or dot segments is matched as it is, never
// redirected: the router's 301 turned a client's POST into a GET (a 405)
// and sent a model id holding "//" or "/../" to another model's page.
func TestUncleanPathsAreNotRedirected(t *testing.T) {
	e, _ := newGatewayEnv(t)
	r := e.do("POST", "/v1//chat/completions", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if r.status != 404 || r.str("error.type") == "" {
		t.Fatalf("POST /v1//chat/completions: %d %s", r.status, r.raw)
	}
	// A POST to one of OpenAI's Responses endpoints Baton does not serve
	// is a 404, not a 405 offering a GET or DELETE of a response so named.
	for _, p := range []string{"/v1/responses/compact", "/v1/responses/resp_1/cancel", "/v1/responses/input_tokens"} {
		if r := e.do("POST", p, e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "input": "x"}); r.status != 404 || r.str("error.type") == "" || r.header.Get("Allow") != "" {
			t.Fatalf("POST %s: %d %s", p, r.status, r.raw)
		}
	}
	// Nor does another method on such a path answer a 405 offering
	// nothing (its Allow was empty).
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		if r := e.do(m, "/v1/responses/", e.tenantA, nil); r.status != 404 || r.str("error.type") == "" || r.header.Get("Allow") != "" {
			t.Fatalf("%s /v1/responses/: %d %v %s", m, r.status, r.header, r.raw)
		}
	}
	for _, p := range []string{"/v1/models/openai:gpt-4o-mini/..", "/v1/models/dotdot/../openai:gpt-4o-mini"} {
		if r := e.do("GET", p, e.tenantA, nil); r.status != 404 || r.str("error.code") != "model_not_found" {
			t.Fatalf("GET %s: %d %s", p, r.status, r.raw)
		}
	}
	// Another method on a response is a 405 offering what is served: not
	// POST, which is such a 404.
	if r := e.do("PUT", "/v1/responses/resp_abc", e.tenantA, nil); r.status != 405 || r.header.Get("Allow") != "GET, HEAD, DELETE" {
		t.Fatalf("PUT /v1/responses/resp_abc: %d, Allow %q", r.status, r.header.Get("Allow"))
	}
	// An encoded slash is not a separator: no route, in the path's shape,
	// and the handoff's callback is not reached. A model's id is the one
	// path that holds slashes, as SDKs send them encoded.
	id := e.contract(e.tenantA, nil)
	n := e.events(id)
	for _, p := range []string{"/v1/executions/" + id + "%2Fapproval", "/v1/executions/" + id + "%2fapproval"} {
		if r := e.do("POST", p, e.tenantA, approveBody()); r.status != 404 || r.str("code") != "not_found" {
			t.Fatalf("POST %s: %d %s", p, r.status, r.raw)
		}
	}
	if r := e.do("POST", "/v1/chat%2Fcompletions", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}); r.status != 404 || r.str("error.type") == "" {
		t.Fatalf("POST /v1/chat%%2Fcompletions: %d %s", r.status, r.raw)
	}
	if got := e.events(id); got != n {
		t.Fatalf("the handoff has %d events, want %d", got, n)
	}
	// Nor does one reach the admin paths below /v1/models, which a model's
	// id does not take.
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/models%2Fsync"}, {"POST", "/v1%2Fmodels%2Fsync"}, {"POST", "/v1/models/health%2Fbatch"},
		{"POST", "/v1/models/route%2Fpreview"}, {"GET", "/v1/models%2Finfrastructure"},
	} {
		if r := e.do(c.method, c.path, e.admin, map[string]any{}); r.status != 404 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, r.status, r.raw)
		}
	}
	if r := e.do("GET", "/v1/models/openai%3Agpt-4o-mini", e.tenantA, nil); r.status != 200 {
		t.Fatalf("GET a model by its encoded id: %d %s", r.status, r.raw)
	}
}

// A tenant without a budget holds nothing, yet its calls in flight count
// as held if a budget is set meanwhile: each call, whole or streamed, on
// the chat and messages fronts, lets go of its worst case when it ends.
func TestUnlimitedCallsLetGoOfTheirWorstCase(t *testing.T) {
	e, _ := newGatewayEnv(t)
	for _, stream := range []bool{false, true} {
		e.must(e.do("POST", "/v1/chat/completions", e.tenantA, chatBody("openai:gpt-4o-mini", stream)), 200)
		e.must(e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "max_tokens": 50, "stream": stream,
			"messages": []any{map[string]any{"role": "user", "content": "hello"}}}), 200)
	}
	deadline := time.Now().Add(30 * time.Second)
	for e.budgets.Status("a").ReservedUSD != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%g USD still counted as in flight after every call ended", e.budgets.Status("a").ReservedUSD)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A batch with configuredOnly false probes only what this replica can
// call: a model whose provider has no key here is reported, but is not
// unhealthy (a probe says nothing about it, and records nothing) and takes
// no place of the limit (never probed, it would sort first every time and
// crowd out the models that can be probed).
func TestHealthBatchDoesNotCountUnconfiguredAsUnhealthy(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvWith(t, catalogWith(t, map[string]string{"ANTHROPIC_BASE_URL": f.anthropic.URL, "ANTHROPIC_API_KEY": "ak-upstream-test"}))
	unconfigured := 0
	for _, m := range e.catalog.List() {
		if !m.Configured {
			unconfigured++
		}
	}
	all := len(e.catalog.List())
	b := e.must(e.do("POST", "/v1/models/health/batch", e.admin, map[string]any{"configuredOnly": false, "limit": 200}), 200)
	if b.str("checked") != strconv.Itoa(all-unconfigured) || b.str("unhealthy") != "0" || b.str("notConfigured") != strconv.Itoa(unconfigured) {
		t.Fatalf("%d models not configured; batch: %s", unconfigured, b.raw)
	}
	// Every configured model has been probed now; the unconfigured ones
	// never are, and do not take the two places.
	b = e.must(e.do("POST", "/v1/models/health/batch", e.admin, map[string]any{"configuredOnly": false, "limit": 2}), 200)
	if b.str("checked") != "2" || b.str("healthy") != "2" || b.str("unhealthy") != "0" {
		t.Fatalf("limit 2: %s", b.raw)
	}
	b = e.must(e.do("POST", "/v1/models/health/batch", e.admin, map[string]any{"configuredOnly": true}), 200)
	if b.str("unhealthy") != "0" || b.str("notConfigured") != "0" || strings.Contains(string(b.raw), "openai:") {
		t.Fatalf("configured only: %s", b.raw)
	}
}

// Infrastructure's health coverage is of the models this replica can call:
// once a batch has probed every one of them it is 1, where it stayed at
// their share of the whole catalog (the models of providers without a key
// here, which no batch can probe, counted as not covered).
func TestInfrastructureHealthCoverageOfCallableModels(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvWith(t, catalogWith(t, map[string]string{"ANTHROPIC_BASE_URL": f.anthropic.URL, "ANTHROPIC_API_KEY": "ak-upstream-test"}))
	configured := 0
	for _, m := range e.catalog.List() {
		if m.Configured {
			configured++
		}
	}
	e.must(e.do("POST", "/v1/models/health/batch", e.admin, map[string]any{"limit": 200}), 200)
	inf := e.must(e.do("GET", "/v1/models/infrastructure", e.admin, nil), 200)
	if inf.str("health.coverage") != "1" || inf.str("health.tested") != strconv.Itoa(configured) || inf.str("health.unhealthy") != "0" {
		t.Fatalf("%d configured models; infrastructure: %s", configured, inf.raw)
	}
}

// catalogAwayStore takes no appends to the catalog stream, as KurrentDB
// while it is away.
type catalogAwayStore struct{ eventstore.Store }

func (s catalogAwayStore) Append(ctx context.Context, stream string, expected eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if stream == gateway.CatalogStream {
		return eventstore.AppendResult{}, fmt.Errorf("kurrent: append to %q: %w: connection refused", stream, eventstore.ErrUnavailable)
	}
	return s.Store.Append(ctx, stream, expected, evs...)
}

// A sync or a probe whose event the store does not take is a 503 whose
// advice holds for these routes: they take no Idempotency-Key, and a retry
// records the provider's word anew, which is harmless. It was the
// ledger's, telling the admin to retry with the same Idempotency-Key, "a
// recorded write is answered, not written twice".
func TestModelAdminStoreAwayAdvice(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvStore(t, gatewayCatalog(t, f), func(s eventstore.Store) eventstore.Store { return catalogAwayStore{s} })
	for _, c := range []struct{ path, body string }{
		{"/v1/models/sync", `{"provider":"openai"}`},
		{"/v1/models/health", `{"model":"openai:gpt-4o-mini"}`},
		{"/v1/models/health/batch", `{"limit":1}`},
	} {
		r := e.do("POST", c.path, e.admin, c.body)
		msg := r.str("error.message")
		if r.status != 503 || r.str("error.code") != "store_unavailable" || r.header.Get("Retry-After") == "" ||
			strings.Contains(msg, "Idempotency-Key") || !strings.Contains(msg, "Retry in a moment") {
			t.Fatalf("%s: %d %s", c.path, r.status, r.raw)
		}
	}
}

// The admin model routes refuse a field they do not read, as key creation
// and console links do: ignored, {"provider":"openai"} on a batch (whose
// field is configuredOnly) probed every provider's models, and a preview's
// misspelt need ranked models without it. Each is a 400 in OpenAI's shape
// naming the field, and nothing is probed, synced or recorded.
func TestModelAdminRoutesRefuseUnknownFields(t *testing.T) {
	e, _, _ := newRoutingEnv(t)
	before, err := e.store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, body, param string }{
		{"/v1/models/sync", `{"providr":"openai"}`, "providr"},
		{"/v1/models/sync", `{"provider":"openai","Provider":"flaky"}`, "Provider"},
		{"/v1/models/health", `{"model":"openai:gpt-4o-mini","timeoutMs":1}`, "timeoutMs"},
		{"/v1/models/health/batch", `{"provider":"openai"}`, "provider"},
		{"/v1/models/health/batch", `{"limit":1,"":true}`, ""},
		{"/v1/models/route/preview", `{"mode":"cheap","need":{"tools":true}}`, "need"},
		{"/v1/models/route/preview", `{"needs":{"tool":true}}`, "needs.tool"},
	} {
		r := e.do("POST", c.path, e.admin, c.body)
		if r.status != 400 || r.str("error.type") != "invalid_request_error" || r.str("error.param") != c.param || r.str("error.code") != "unknown_field" ||
			!strings.Contains(r.str("error.message"), "unknown field") {
			t.Errorf("%s %s: %d %s; want 400 naming %q", c.path, c.body, r.status, r.raw, c.param)
		}
	}
	if after, _ := e.store.Head(context.Background()); after != before {
		t.Fatal("a refused admin request appended an event")
	}
}

// The admin model routes take no query parameters, as Baton's other own
// routes take only theirs: ignored, ?provider=openai on a sync or a
// batch (whose choices are in the body) synced or probed every provider,
// and a batch's ?limit=1 probed twenty. Each is a 400 in OpenAI's shape
// naming the parameter, before anything is done. The model fronts' own
// routes still ignore what they do not know, as the providers do.
func TestModelAdminRoutesRefuseQueryParameters(t *testing.T) {
	e, _, _ := newRoutingEnv(t)
	before, err := e.store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body, param, code string }{
		{"POST", "/v1/models/sync?provider=openai", "", "query:provider", "unknown_parameter"},
		{"POST", "/v1/models/health/batch?limit=1", `{}`, "query:limit", "unknown_parameter"},
		{"POST", "/v1/models/health?model=openai:gpt-4o-mini", `{"model":"openai:gpt-4o-mini"}`, "query:model", "unknown_parameter"},
		{"POST", "/v1/models/route/preview?mode=cheap", "", "query:mode", "unknown_parameter"},
		{"GET", "/v1/models/infrastructure?provider=openai", "", "query:provider", "unknown_parameter"},
		{"POST", "/v1/models/sync?provider=openai;x=1", "", "query:provider", "malformed"},
	} {
		r := e.do(c.method, c.path, e.admin, c.body)
		if r.status != 400 || r.str("error.type") != "invalid_request_error" || r.str("error.param") != c.param || r.str("error.code") != c.code {
			t.Errorf("%s %s: %d %s; want 400 %s naming %q", c.method, c.path, r.status, r.raw, c.code, c.param)
		}
	}
	// Each named in the message, which has no field errors to point to.
	if r := e.do("POST", "/v1/models/health/batch?provider=openai&limit=1", e.admin, ""); r.status != 400 ||
		!strings.Contains(r.str("error.message"), "query:limit: is not a parameter") || !strings.Contains(r.str("error.message"), "query:provider: is not a parameter") {
		t.Errorf("two parameters: %d %s", r.status, r.raw)
	}
	if after, _ := e.store.Head(context.Background()); after != before {
		t.Fatal("a refused admin request appended an event")
	}
	// A model front's route ignores it (Claude Code sends ?beta=true).
	if r := e.do("GET", "/v1/models?beta=true", e.admin, nil); r.status != 200 {
		t.Fatalf("GET /v1/models?beta=true: %d %s", r.status, r.raw)
	}
}
