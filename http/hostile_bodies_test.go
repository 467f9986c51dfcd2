package http_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/gateway"
	"github.com/tidwall/gjson"
)

// A body nested deeper than encoding/json allows is a 400 on every model
// front, before anything reads it by recursion: twelve million brackets
// (24 MB, under the model routes' 32 MiB) overflowed the stack of gjson's
// validator and ended the process, every tenant's calls with it.
func TestDeeplyNestedBodyRefused(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	head, err := e.store.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	deep := func(model string, n int) string {
		return `{"model":"` + model + `","max_tokens":5,"input":"hi","messages":[{"role":"user","content":"hi"}],"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
	}
	for _, path := range []string{"/v1/chat/completions", "/v1/messages", "/v1/responses", "/v1/messages/count_tokens"} {
		for _, model := range []string{"oai:gpt-x", "anthropic:claude-haiku-4-5"} {
			r := e.do("POST", path, e.tenantA, deep(model, 10001))
			// Valid JSON, too deep to read: said so, not "not valid JSON".
			if r.status != 400 || !strings.Contains(string(r.raw), "more than 10000 deep") {
				t.Errorf("%s %s: %d %.300s", path, model, r.status, r.raw)
			}
		}
	}
	r := e.do("POST", "/v1/messages", e.tenantA, `{"model":"oai:gpt-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"x":`+strings.Repeat("[", 12_000_000)+`}`)
	if r.status != 400 {
		t.Errorf("twelve million brackets: %d %.300s", r.status, r.raw)
	}
	refusedQuietly(t, e, f, head)
}

// A passed-through chat request is held for its worst case: every one of
// the n answers it asks for, and the larger of its two caps (a compatible
// server may read max_tokens alone). Before, n=100 spent 80 times a
// $0.01 budget in one call, and max_completion_tokens: 5 beside
// max_tokens: 900000 was held for 5 tokens.
func TestPassthroughChatHeldForEveryAnswer(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	// gpt-x: $8 a million output tokens; 4,000 tokens cost $0.032.
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 0.05, "monthlyUsd": nil}), 200)
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	for _, c := range []struct {
		body map[string]any
		want int
	}{
		{map[string]any{"model": "oai:gpt-x", "max_tokens": 4000, "n": 2, "messages": msgs}, 400},
		{map[string]any{"model": "oai:gpt-x", "max_completion_tokens": 5, "max_tokens": 8000, "messages": msgs}, 400},
		{map[string]any{"model": "oai:gpt-x", "max_tokens": 8000, "max_completion_tokens": 5, "messages": msgs}, 400},
		{map[string]any{"model": "oai:gpt-x", "max_tokens": 4000, "n": 0, "messages": msgs}, 400},
		{map[string]any{"model": "oai:gpt-x", "max_tokens": 4000, "n": 1.5, "messages": msgs}, 400},
		// Products that wrapped to 0 in int arithmetic, and caps past 2^31.
		{map[string]any{"model": "oai:gpt-x", "max_tokens": 2147483647, "n": 4, "messages": msgs}, 400},
		{map[string]any{"model": "oai:gpt-x", "max_tokens": 2147483648, "n": 8589934592, "messages": msgs}, 400},
		{map[string]any{"model": "oai:gpt-x", "max_tokens": 4611686018427387904, "n": 4, "messages": msgs}, 400},
		{map[string]any{"model": "oai:gpt-x", "max_tokens": 1e300, "messages": msgs}, 400},
	} {
		r := e.do("POST", "/v1/chat/completions", e.tenantA, c.body)
		if r.status != c.want {
			t.Errorf("%v: %d %s", c.body, r.status, r.raw)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("the upstream got %d requests", n)
	}
	for _, body := range []map[string]any{
		{"model": "oai:gpt-x", "max_tokens": 4000, "n": 1, "messages": msgs},
		{"model": "oai:gpt-x", "max_tokens": 2000, "n": 2, "messages": msgs},
	} {
		if r := e.do("POST", "/v1/chat/completions", e.tenantA, body); r.status != 200 {
			t.Errorf("%v: %d %s", body, r.status, r.raw)
		}
	}
}

// A name given twice in an object Baton reads or edits is refused, as at
// the top level: gjson reads the first, the provider the last.
func TestNestedDuplicateRefused(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	for _, c := range []struct{ path, body, field string }{
		{"/v1/chat/completions", `{"model":"oai:gpt-x","stream":true,"stream_options":{"include_usage":true,"include_usage":false},"messages":[{"role":"user","content":"hi"}]}`, "stream_options.include_usage"},
		{"/v1/chat/completions", `{"model":"oai:gpt-x","stream_options":{"include_usage":true,"Include_Usage":false},"messages":[{"role":"user","content":"hi"}]}`, "stream_options.Include_Usage"},
		{"/v1/chat/completions", `{"model":"oai:gpt-x","response_format":{"type":"json_object","type":"text"},"messages":[{"role":"user","content":"hi"}]}`, "response_format.type"},
		{"/v1/responses", `{"model":"oai:gpt-x","input":"hi","text":{"format":{"type":"json_object","type":"text"}}}`, "text.format.type"},
		{"/v1/messages", `{"model":"oai:gpt-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"output_config":{"effort":"low","effort":"max"}}`, "output_config.effort"},
	} {
		r := e.do("POST", c.path, e.tenantA, c.body)
		if r.status != 400 || !strings.Contains(string(r.raw), `field \"`+c.field+`\" twice`) {
			t.Errorf("%s %s: %d %s", c.path, c.body, r.status, r.raw)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
}

// A background Responses request is answered (queued) before it runs,
// so nothing of it could be billed or held: refused when passed through,
// as when translated.
func TestPassthroughBackgroundRefused(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	r := e.do("POST", "/v1/responses", e.tenantA, `{"model":"oai:gpt-x","input":"write a novel","background":true,"max_output_tokens":16000}`)
	if r.status != 400 || r.str("error.param") != "background" || len(f.requests()) != 0 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}

// stream_options, which Baton edits, must be an object: a string was
// replaced without a word, an array answered as the upstream's refusal.
func TestStreamOptionsMustBeAnObject(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	for _, so := range []string{`"x"`, `[]`, `1`, `true`} {
		r := e.do("POST", "/v1/chat/completions", e.tenantA, `{"model":"oai:gpt-x","stream":true,"stream_options":`+so+`,"messages":[{"role":"user","content":"hi"}]}`)
		if r.status != 400 || strings.TrimPrefix(r.str("error.param"), "/") != "stream_options" {
			t.Errorf("stream_options %s: %d %s", so, r.status, r.raw)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("the upstream got %d requests", n)
	}
}

// A compressed body is refused as such, on the model fronts and elsewhere,
// before anything reads it: net/http does not decompress it, and the
// answer was "not valid JSON", though the JSON inside was fine.
func TestCompressedBodyRefused(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	head, err := e.store.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	gz := func(body string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(body))
		w.Close()
		return b.Bytes()
	}
	for _, path := range []string{"/v1/chat/completions", "/v1/messages", "/v1/responses", "/v1/messages/count_tokens"} {
		for _, model := range []string{"oai:gpt-x", "anthropic:claude-haiku-4-5"} {
			body := gz(`{"model":"` + model + `","max_tokens":5,"input":"hi","messages":[{"role":"user","content":"hi"}]}`)
			r := e.do("POST", path, e.tenantA, body, "Content-Encoding", "gzip")
			if r.status != 400 || !strings.Contains(string(r.raw), `Content-Encoding \"gzip\"`) {
				t.Errorf("%s %s: %d %s", path, model, r.status, r.raw)
			}
		}
	}
	r := e.do("POST", "/v1/handoff/contracts", e.tenantA, gz(`{"objective":"x"}`), "Content-Encoding", "gzip")
	if r.status != 400 || r.str("code") != "unsupported_content_encoding" {
		t.Errorf("handoff contract: %d %s", r.status, r.raw)
	}
	refusedQuietly(t, e, f, head)
	// identity is no encoding at all.
	r = e.do("POST", "/v1/chat/completions", e.tenantA, `{"model":"oai:gpt-x","messages":[{"role":"user","content":"hi"}]}`, "Content-Encoding", "identity")
	if r.status != 200 {
		t.Errorf("identity: %d %s", r.status, r.raw)
	}
	// The coding on a second header line counts, as HTTP joins the lines
	// (it was read from the first alone, and the body refused as not JSON).
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions", bytes.NewReader(gz(`{"model":"oai:gpt-x","messages":[{"role":"user","content":"hi"}]}`)))
	req.Header.Set("Authorization", "Bearer "+e.tenantA)
	req.Header.Add("Content-Encoding", "identity")
	req.Header.Add("Content-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(raw), `"code":"unsupported_content_encoding"`) {
		t.Errorf("identity, then gzip on its own line: %d %s", resp.StatusCode, raw)
	}
}

// stream_options.include_usage, which Baton reads and then sets, must be
// a boolean when passed through, as translated: "yes" was read as false
// and replaced with true, so the provider never refused it and the client
// got no usage chunk.
func TestIncludeUsageMustBeABoolean(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	for _, model := range []string{"oai:gpt-x", "anthropic:claude-haiku-4-5"} {
		for _, v := range []string{`"yes"`, `"true"`, `1`, `{}`} {
			r := e.do("POST", "/v1/chat/completions", e.tenantA, `{"model":"`+model+`","stream":true,"stream_options":{"include_usage":`+v+`},"messages":[{"role":"user","content":"hi"}]}`)
			if r.status != 400 || r.str("error.param") != "stream_options.include_usage" {
				t.Errorf("%s include_usage %s: %d %s", model, v, r.status, r.raw)
			}
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("the upstream got %d requests", n)
	}
}

// OpenAI's fast tier (priority, its former name) is billed above the
// standard rates: on a model whose price has no fast rate, passed
// through, its cost is unknown (null, as an unpriced model's), and a
// tenant with a budget cannot ask for it (403 before any upstream call).
// flex, billed below them, is priced at them.
func TestPriorityTierUnpriced(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	cost := func(path string, body map[string]any, at string) gjson.Result {
		t.Helper()
		r := e.must(e.do("POST", path, e.tenantA, body), 200)
		return gjson.GetBytes(r.raw, at)
	}
	for _, tier := range []string{"priority", "flex", "default"} {
		c := cost("/v1/chat/completions", map[string]any{"model": "oai:gpt-x", "service_tier": tier, "messages": msgs}, "usage.estimated_cost_usd")
		if (c.Type == gjson.Null) != (tier == "priority") {
			t.Errorf("chat, %s: cost %s", tier, c.Raw)
		}
		c = cost("/v1/responses", map[string]any{"model": "oai:gpt-x", "service_tier": tier, "input": "hi"}, "usage.estimated_cost_usd")
		if (c.Type == gjson.Null) != (tier == "priority") {
			t.Errorf("responses, %s: cost %s", tier, c.Raw)
		}
	}
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 10, "monthlyUsd": nil}), 200)
	before := len(f.requests())
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"oai:gpt-x","service_tier":"priority","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/responses", `{"model":"oai:gpt-x","service_tier":"priority","input":"hi"}`},
	} {
		r := e.do("POST", c.path, e.tenantA, c.body)
		if r.status != 403 || r.str("error.code") != "unpriced_service_tier_under_budget" || r.str("error.param") != "service_tier" {
			t.Errorf("%s under a budget: %d %s", c.path, r.status, r.raw)
		}
	}
	if n := len(f.requests()) - before; n != 0 {
		t.Fatalf("refused, yet the upstream got %d requests", n)
	}
	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "oai:gpt-x", "service_tier": "flex", "messages": msgs}), 200)
}

// A tier is billed at its rate (Price.FastRate): asked for, or served for
// auto at a project's default (the answer's service_tier), passed through
// and streamed; a tier without a rate (ultrafast) is unpriced, and
// refused under a budget.
func TestServiceTiersBilledAtTheirRates(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	const chatCost = 10*2e-6 + 2*8e-6
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	call := func(path, model, tier string, stream bool) (status int, cost gjson.Result) {
		t.Helper()
		body := map[string]any{"model": model, "stream": stream}
		if tier != "" {
			body["service_tier"] = tier
		}
		if path == "/v1/chat/completions" {
			body["messages"] = msgs
		} else {
			body["input"] = "hi"
		}
		r := e.do("POST", path, e.tenantA, body)
		if r.status != 200 {
			return r.status, gjson.Result{}
		}
		if !stream {
			return 200, gjson.GetBytes(r.raw, "usage.estimated_cost_usd")
		}
		var last gjson.Result // the usage of the stream's end
		for _, line := range strings.Split(string(r.raw), "\n") {
			if c := gjson.Get(strings.TrimPrefix(line, "data: "), "response.usage.estimated_cost_usd"); c.Exists() {
				last = c
			}
		}
		return 200, last
	}
	for _, c := range []struct {
		path, model, tier string
		stream            bool
		want              float64 // 0: unpriced
	}{
		{"/v1/chat/completions", "oai:gpt-fast", "fast", false, 2 * chatCost},
		{"/v1/chat/completions", "oai:gpt-fast", "priority", false, 2 * chatCost},
		{"/v1/chat/completions", "oai:gpt-fast", "flex", false, chatCost},
		{"/v1/chat/completions", "oai:gpt-fast", "", false, chatCost},
		{"/v1/chat/completions", "oai:gpt-fast-default", "", false, 2 * chatCost},
		{"/v1/chat/completions", "oai:gpt-fast-default", "auto", false, 2 * chatCost},
		{"/v1/chat/completions", "oai:gpt-fast", "ultrafast", false, 0},
		{"/v1/chat/completions", "oai:gpt-x", "fast", false, 0},
		{"/v1/responses", "oai:gpt-fast", "fast", false, 2 * passthroughCost},
		{"/v1/responses", "oai:gpt-fast-default", "", false, 2 * passthroughCost},
		{"/v1/responses", "oai:gpt-fast-default", "", true, 2 * passthroughCost},
		{"/v1/responses", "oai:gpt-fast", "default", true, passthroughCost},
		{"/v1/responses", "oai:gpt-fast", "scale", false, 0},
	} {
		status, cost := call(c.path, c.model, c.tier, c.stream)
		ok := status == 200 && (c.want == 0 && cost.Type == gjson.Null || c.want != 0 && cost.Type == gjson.Number && math.Abs(cost.Float()-c.want) < 1e-12)
		if !ok {
			t.Errorf("%s %s tier %q stream %t: status %d, cost %s, want %g", c.path, c.model, c.tier, c.stream, status, cost.Raw, c.want)
		}
	}
	evs := e.usageEvents("a", 13)
	var u gateway.UsageRecord
	json.Unmarshal(evs[len(evs)-1].Data, &u)
	if u.Usage.ServiceTier != "scale" || u.CostUSD != nil {
		t.Errorf("the last usage event: %+v", u)
	}

	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 10, "monthlyUsd": nil}), 200)
	before := len(f.requests())
	for _, c := range []struct{ model, tier string }{{"oai:gpt-x", "fast"}, {"oai:gpt-fast", "ultrafast"}, {"oai:gpt-fast", "scale"}} {
		r := e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": c.model, "service_tier": c.tier, "messages": msgs})
		if r.status != 403 || r.str("error.code") != "unpriced_service_tier_under_budget" || r.str("error.param") != "service_tier" {
			t.Errorf("%s at %s under a budget: %d %s", c.model, c.tier, r.status, r.raw)
		}
	}
	if n := len(f.requests()) - before; n != 0 {
		t.Fatalf("refused, yet the upstream got %d requests", n)
	}
	if status, cost := call("/v1/chat/completions", "oai:gpt-fast", "fast", false); status != 200 || math.Abs(cost.Float()-2*chatCost) > 1e-12 {
		t.Fatalf("fast on a model with its rate, under a budget: %d %s", status, cost.Raw)
	}
	// A model with the fast rate, busy, falls back to one without: the
	// fallback cannot be held, and the client is told why the model it
	// asked for failed (its 429), not of the fallback's missing price.
	for _, stream := range []bool{false, true} {
		r := e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "oai:gpt-fast-busy", "service_tier": "fast", "messages": msgs, "stream": stream})
		if r.status != 429 || r.str("error.code") == "unpriced_service_tier_under_budget" {
			t.Errorf("fast, busy, falling back to a model without the fast rate, stream %t: %d %s", stream, r.status, r.raw)
		}
	}
}

// Under a budget, a call that names no tier is held at the fast rate where
// its provider serves such calls at the fast tier: declared in the
// providers file, or seen in an answer (gateway's TestAutoTierHeldAtItsRate
// holds the rates; here, what the client is told and that a refused call
// reaches no upstream).
func TestAutoTierHeldUnderABudget(t *testing.T) {
	f := newOAResponses(t)
	oai := f.spec()
	proj := f.spec()
	proj.Name, proj.DefaultServiceTier = "proj", "fast"
	e := newEnvWith(t, gatewayCatalog(t, newFakeUpstreams(t), oai, proj))
	// 100,000 output tokens at $8 are $0.80, at the fast rate $1.60: a
	// budget of $1.20 covers the standard tier and not the fast.
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 1.2, "monthlyUsd": nil}), 200)
	call := func(model, tier string) response {
		t.Helper()
		body := map[string]any{"model": model, "max_tokens": 100000, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
		if tier != "" {
			body["service_tier"] = tier
		}
		return e.do("POST", "/v1/chat/completions", e.tenantA, body)
	}
	refused := func(model, tier string) {
		t.Helper()
		before := len(f.requests())
		r := call(model, tier)
		if r.status != 400 || r.str("error.code") != "budget_too_small_for_request" || !strings.Contains(r.str("error.message"), "at the fast tier, where") || !strings.Contains(r.str("error.message"), "; service_tier default is held at the standard rates") {
			t.Errorf("%s at %q: %d %s", model, tier, r.status, r.raw)
		}
		if n := len(f.requests()) - before; n != 0 {
			t.Errorf("%s at %q refused, yet the upstream got %d requests", model, tier, n)
		}
	}
	refused("proj:gpt-fast", "")
	refused("proj:gpt-fast", "auto")
	e.must(call("proj:gpt-fast", "default"), 200)
	e.must(call("proj:gpt-x", ""), 200) // no fast rate: held as asked
	// Translated, the call sends no tier whatever it names: the refusal
	// does not point to service_tier default, which the Messages front
	// refuses and a translated call does not send.
	before := len(f.requests())
	r := e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "proj:gpt-fast", "max_tokens": 100000, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if msg := r.str("error.message"); r.status != 400 || !strings.Contains(msg, "at the fast tier") || strings.Contains(msg, "service_tier default") || len(f.requests()) != before {
		t.Errorf("messages, translated: %d %s", r.status, r.raw)
	}

	// Not declared: the first call passes, is served at priority and billed
	// so; the next are held at the fast rate.
	r = call("oai:gpt-fast-default", "")
	if r.status != 200 || math.Abs(r.num("usage.estimated_cost_usd")-2*(10*2e-6+2*8e-6)) > 1e-12 {
		t.Fatalf("the first call, served at priority: %d %s", r.status, r.raw)
	}
	refused("oai:gpt-fast-default", "")
	refused("oai:gpt-fast", "") // the provider's default, whatever the model
	e.must(call("oai:gpt-fast", "default"), 200)
}

// A call whose chain mixes a provider that takes the body as it is with
// one that does not is decoded, and the decoded request does not keep the
// tier the client named. The attempt that passes the body through sends
// that tier: service_tier "default" is held, and billed when the answer
// does not say, at the standard rates, as the client asked.
func TestNamedTierKeptInAMixedChain(t *testing.T) {
	f := newOAResponses(t)
	mix := f.spec()
	mix.Name, mix.DefaultServiceTier = "mix", "fast"
	for i := range mix.Models {
		p := *mix.Models[i].Pricing
		p.FastRate = 2
		mix.Models[i].Pricing, mix.Models[i].Fallbacks = &p, []string{"anthropic:claude-haiku-4-5"}
	}
	e := newEnvWith(t, gatewayCatalog(t, newFakeUpstreams(t), mix))
	// 100,000 output tokens at $8 are $0.80, at the fast rate $1.60.
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 1.2, "monthlyUsd": nil}), 200)
	chat := map[string]any{"model": "mix:gpt-x", "max_tokens": 100000, "service_tier": "default", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	if r := e.do("POST", "/v1/chat/completions", e.tenantA, chat); r.status != 200 {
		t.Errorf("chat at default: %d %s", r.status, r.raw)
	}
	resp := map[string]any{"model": "mix:gpt-x", "max_output_tokens": 100000, "service_tier": "default", "input": "hi"}
	if r := e.do("POST", "/v1/responses", e.tenantA, resp); r.status != 200 {
		t.Errorf("responses at default: %d %s", r.status, r.raw)
	}
	if got := f.requests(); len(got) != 2 || gjson.GetBytes(got[0].body, "service_tier").Str != "default" || gjson.GetBytes(got[1].body, "service_tier").Str != "default" {
		t.Fatalf("the upstream got %d requests", len(got))
	}
	// A Responses stream cut before its end names no tier: billed at the
	// one asked for.
	resp["model"], resp["stream"] = "mix:gpt-cut", true
	e.stream("/v1/responses", e.tenantA, resp)
	evs := e.usageEvents("a", 3)
	var u gateway.UsageRecord
	json.Unmarshal(evs[2].Data, &u)
	price := gateway.Price{InputPerMTok: 2, CacheReadPerMTok: 0.2, OutputPerMTok: 8}
	if want := gateway.RoundUSD(price.Cost(u.Usage)); u.Outcome != "partial" || u.CostUSD == nil || *u.CostUSD != want {
		t.Errorf("the cut stream at default: %+v, cost %s, want %v", u.Usage, costOf(u.CostUSD), want)
	}
}

func costOf(c *float64) string {
	if c == nil {
		return "unpriced"
	}
	return fmt.Sprint(*c)
}

// A Responses call whose cap alone is over the tenant's budget is told to
// lower max_output_tokens, the Responses API's name for its cap: it was
// told to lower max_tokens (error.param too), a field that API lacks.
func TestBudgetTooSmallNamesTheResponsesCap(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 0.001, "monthlyUsd": nil}), 200)
	for _, model := range []string{"oai:gpt-x", "anthropic:claude-haiku-4-5"} {
		r := e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": model, "input": "hi", "max_output_tokens": 1_000_000})
		if r.status != 400 || r.str("error.code") != "budget_too_small_for_request" || r.str("error.param") != "max_output_tokens" ||
			!strings.HasSuffix(r.str("error.message"), "set a lower max_output_tokens") {
			t.Errorf("%s: %d %s", model, r.status, r.raw)
		}
	}
	r := e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "oai:gpt-x", "max_tokens": 1_000_000, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if r.status != 400 || r.str("error.param") != "max_tokens" {
		t.Errorf("chat: %d %s", r.status, r.raw)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
}

// A chat call whose max_completion_tokens alone is over the tenant's
// budget is told to lower that field, passed through or translated: it was
// told to lower max_tokens, which it had not sent (or had sent lower), so
// following the advice changed nothing.
func TestBudgetTooSmallNamesMaxCompletionTokens(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 0.001, "monthlyUsd": nil}), 200)
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	for _, c := range []struct {
		model string
		caps  map[string]any
		want  string
	}{
		{"oai:gpt-x", map[string]any{"max_completion_tokens": 1_000_000}, "max_completion_tokens"},
		{"anthropic:claude-haiku-4-5", map[string]any{"max_completion_tokens": 1_000_000}, "max_completion_tokens"},
		{"oai:gpt-x", map[string]any{"max_tokens": 1, "max_completion_tokens": 1_000_000}, "max_completion_tokens"},
		{"oai:gpt-x", map[string]any{"max_tokens": 1_000_000, "max_completion_tokens": 1}, "max_tokens"},
	} {
		body := map[string]any{"model": c.model, "messages": msgs}
		maps.Copy(body, c.caps)
		r := e.do("POST", "/v1/chat/completions", e.tenantA, body)
		if r.status != 400 || r.str("error.code") != "budget_too_small_for_request" || r.str("error.param") != c.want ||
			!strings.HasSuffix(r.str("error.message"), "set a lower "+c.want) {
			t.Errorf("%s %v: %d %s", c.model, c.caps, r.status, r.raw)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
}

// A budget that cannot cover even the least a client can ask (a $0 limit,
// max_tokens 1) is spent as far as the call goes: 429 budget_exceeded,
// insufficient_quota, with Retry-After to the reset, in each API's shape;
// it told the client to lower a max_tokens already at 1. A cap the client
// can lower is still the 400 naming it.
func TestBudgetBelowTheLeastCallIsExceeded(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 0}), 200)
	r := e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "oai:gpt-x", "max_tokens": 1, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if r.status != 429 || r.str("error.type") != "insufficient_quota" || r.str("error.code") != "budget_exceeded" || r.header.Get("Retry-After") == "" {
		t.Errorf("chat, $0: %d %s", r.status, r.raw)
	}
	r = e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "max_tokens": 1, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if r.status != 429 || r.str("error.type") != "rate_limit_error" {
		t.Errorf("messages, $0: %d %s", r.status, r.raw)
	}
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 0.001}), 200)
	r = e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "oai:gpt-x", "max_tokens": 1_000_000, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if r.status != 400 || r.str("error.code") != "budget_too_small_for_request" {
		t.Errorf("a cap the client can lower: %d %s", r.status, r.raw)
	}
	// A prompt whose input alone is over the limit: a shorter prompt could
	// fit, not a lower cap, and not waiting for the reset.
	r = e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "oai:gpt-x", "max_tokens": 1, "messages": []any{map[string]any{"role": "user", "content": strings.Repeat("long ", 200_000)}}})
	if r.status != 400 || r.str("error.code") != "budget_too_small_for_request" || r.str("error.param") != "messages" || !strings.Contains(r.str("error.message"), "send a shorter prompt") {
		t.Errorf("input over the limit: %d %s", r.status, r.raw)
	}
	// generate's prompt (its template and input) over the limit alone:
	// the 400 names its input.
	gen := map[string]any{"type": "summarize", "input": map[string]any{"text": strings.Repeat("long text ", 100)},
		"options": map[string]any{"llm": map[string]any{"model": "oai:gpt-x"}}}
	r = e.do("POST", "/v1/generate", e.tenantA, gen)
	if r.status != 400 || r.str("code") != "budget_too_small_for_request" || !strings.Contains(r.str("detail"), "send a shorter prompt") {
		t.Errorf("generate: %d %s", r.status, r.raw)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
	// Under an Idempotency-Key the refusal is not kept: it follows from
	// the budget, and with the limit raised the same request runs.
	r = e.do("POST", "/v1/generate", e.tenantA, gen, "Idempotency-Key", "budget-refusal")
	if r.status != 400 || r.str("code") != "budget_too_small_for_request" {
		t.Fatalf("generate under a key: %d %s", r.status, r.raw)
	}
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 100}), 200)
	r = e.do("POST", "/v1/generate", e.tenantA, gen, "Idempotency-Key", "budget-refusal")
	if r.header.Get("Idempotent-Replayed") != "" || r.str("code") == "budget_too_small_for_request" || len(f.requests()) == 0 {
		t.Errorf("after the limit was raised: %d %s (replayed %q)", r.status, r.raw, r.header.Get("Idempotent-Replayed"))
	}
}

// store and background, which Baton acts on, must be booleans when passed
// through, as translated: "false" was sent on and the response kept.
func TestResponsesStoreMustBeABoolean(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	head, err := e.store.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"oai:gpt-x", "anthropic:claude-haiku-4-5"} {
		for _, field := range []string{`"store":"false"`, `"store":0`, `"background":"true"`, `"store":{}`} {
			r := e.do("POST", "/v1/responses", e.tenantA, `{"model":"`+model+`","input":"hi",`+field+`}`)
			if param := strings.TrimPrefix(r.str("error.param"), "/"); r.status != 400 || !strings.HasPrefix(field, `"`+param+`"`) {
				t.Errorf("%s %s: %d %s", model, field, r.status, r.raw)
			}
		}
	}
	refusedQuietly(t, e, f, head)
}

// A null in a stop list, translated, is a 400 naming its place: decoded
// as a string it was an empty stop sequence, sent on. top_logprobs alone
// (a count: 0 asks for nothing) is refused by its own name, and a tool message without its call's id by
// that field (it went to Anthropic as a result of no call).
func TestNullStopSequenceRefused(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"}],"stop":["a",null]}`, "stop/1"},
		{"/v1/messages", `{"model":"oai:gpt-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"stop_sequences":[null]}`, "stop_sequences/0"},
		{"/v1/messages", `{"model":"oai:gpt-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"stop_sequences":"a"}`, "stop_sequences"},
		{"/v1/chat/completions", `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"}],"top_logprobs":2}`, "top_logprobs"},
		{"/v1/chat/completions", `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"tool","content":"hi"}]}`, "messages/0/tool_call_id"},
	} {
		r := e.do("POST", tc.path, e.tenantA, tc.body)
		got, want := r.str("error.param"), oaPath(tc.param)
		if tc.path == "/v1/messages" { // Anthropic's errors name the field in their message
			got, _, _ = strings.Cut(r.str("error.message"), ":")
			want = anPath(tc.param)
		}
		if r.status != 400 || got != want {
			t.Errorf("%s %s: %d %s", tc.path, tc.body, r.status, r.raw)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
}

// A translated body of more messages (or Responses input items) than
// Anthropic takes in a request is a 400 naming them, before it is decoded
// (a million empty messages took over a gigabyte decoded); passed through,
// the provider judges it.
func TestTooManyItemsTranslated(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	items := strings.Repeat(`{"role":"user","content":"a"},`, gateway.MaxTranslatedItems) + `{"role":"user","content":"a"}`
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"model":"anthropic:claude-haiku-4-5","messages":[` + items + `]}`, "messages"},
		{"/v1/messages", `{"model":"oai:gpt-x","max_tokens":5,"messages":[` + items + `]}`, "messages"},
		{"/v1/messages/count_tokens", `{"model":"oai:gpt-x","messages":[` + items + `]}`, "messages"},
		{"/v1/responses", `{"model":"anthropic:claude-haiku-4-5","input":[` + items + `]}`, "input"},
	} {
		r := e.do("POST", tc.path, e.tenantA, tc.body)
		got := strings.TrimPrefix(r.str("error.param"), "/")
		if strings.HasPrefix(tc.path, "/v1/messages") {
			got, _, _ = strings.Cut(r.str("error.message"), " holds")
		}
		if r.status != 400 || got != tc.param {
			t.Errorf("%s: %d %.300s", tc.path, r.status, r.raw)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
	r := e.do("POST", "/v1/chat/completions", e.tenantA, `{"model":"oai:gpt-x","messages":[`+items+`]}`)
	if r.status != 200 || len(f.requests()) != 1 {
		t.Errorf("passed through: %d %.300s", r.status, r.raw)
	}
}

// A translated conversation that ends with an assistant turn is a 400:
// Anthropic continues such a turn (a prefill), OpenAI answers after it,
// so the other provider would do something else than the client asked.
// Passed through, it is the provider's own meaning.
func TestPrefillNotTranslated(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	turns := `[{"role":"user","content":"hi"},{"role":"assistant","content":"Once upon"}]`
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"anthropic:claude-haiku-4-5","messages":` + turns + `}`},
		{"/v1/messages", `{"model":"oai:gpt-x","max_tokens":5,"messages":` + turns + `}`},
		{"/v1/responses", `{"model":"anthropic:claude-haiku-4-5","input":` + turns + `}`},
	} {
		r := e.do("POST", tc.path, e.tenantA, tc.body)
		if r.status != 400 || !strings.Contains(string(r.raw), "ends with an assistant turn") {
			t.Errorf("%s: %d %s", tc.path, r.status, r.raw)
		}
		// Anthropic's shape has no param: its message is led by the field.
		if tc.path == "/v1/messages" && !strings.HasPrefix(r.str("error.message"), "messages: ") {
			t.Errorf("%s: %s", tc.path, r.raw)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
	if r := e.do("POST", "/v1/messages", e.tenantA, `{"model":"anthropic:claude-haiku-4-5","max_tokens":5,"messages":`+turns+`}`); r.status != 200 {
		t.Errorf("passed through: %d %s", r.status, r.raw)
	}
}

// Sampling controls one provider has and the other does not are refused
// when they would change the answer, translated: a penalty other than 0 or
// a logit bias to Anthropic, top_k to OpenAI (they went without a word).
// A no-op value, and seed (a best-effort hint even at OpenAI), go.
func TestForeignSamplingRefused(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	chat := func(extra string) string {
		return `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"}],` + extra + `}`
	}
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/chat/completions", chat(`"presence_penalty":0.5`), "presence_penalty"},
		{"/v1/chat/completions", chat(`"frequency_penalty":-1`), "frequency_penalty"},
		{"/v1/chat/completions", chat(`"logit_bias":{"1734":-100}`), "logit_bias"},
		{"/v1/messages", `{"model":"oai:gpt-x","max_tokens":5,"top_k":5,"messages":[{"role":"user","content":"hi"}]}`, "top_k"},
	} {
		r := e.do("POST", tc.path, e.tenantA, tc.body)
		if r.status != 400 || !strings.Contains(string(r.raw), tc.param+" has no equivalent") {
			t.Errorf("%s %s: %d %s", tc.path, tc.body, r.status, r.raw)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
	for _, extra := range []string{`"presence_penalty":0`, `"frequency_penalty":0,"logit_bias":{}`, `"seed":7`} {
		if r := e.do("POST", "/v1/chat/completions", e.tenantA, chat(extra)); r.status != 200 {
			t.Errorf("%s: %d %s", extra, r.status, r.raw)
		}
	}
}

// refusedQuietly checks that what a test sent was refused before it did
// anything: no upstream request, no event (the store's head is head).
func refusedQuietly(t *testing.T, e *env, f *oaResponses, head eventstore.Position) {
	t.Helper()
	if n := len(f.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
	if h, _ := e.store.Head(t.Context()); h != head {
		t.Errorf("the store's head moved from %v to %v", head, h)
	}
}

// Between two OpenAI-shaped APIs a trailing assistant turn means the same
// (a finished turn, answered after): a Responses request ending so goes to
// a chat-completions server. top_k goes to such a server too (vLLM,
// Ollama take it); only OpenAI itself has none.
func TestTrailingAssistantBetweenOpenAIShapes(t *testing.T) {
	e, rec, _ := responsesEnv(t)
	r := e.do("POST", "/v1/responses", e.tenantA, `{"model":"rec:m1","input":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`)
	if r.status != 200 {
		t.Fatalf("responses to a chat server: %d %s", r.status, r.raw)
	}
	if got := rec.last(t).turns(); len(got) != 2 || got[1] != "assistant:hello" {
		t.Fatalf("the server got %q", got)
	}
	r = e.do("POST", "/v1/messages", e.tenantA, `{"model":"rec:m1","max_tokens":5,"top_k":5,"messages":[{"role":"user","content":"hi"}]}`)
	if r.status != 200 {
		t.Fatalf("top_k to a chat server: %d %s", r.status, r.raw)
	}
}

// A message that names its field already is not led by it again
// ("model: /model: must be a string"), and is led by it as Anthropic
// names fields.
func TestMessagesRefusalNamesTheFieldOnce(t *testing.T) {
	e, _ := newGatewayEnv(t)
	r := e.do("POST", "/v1/messages", e.tenantA, `{"model":5,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	if r.status != 400 || r.str("error.message") != "model: must be a string" {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}
