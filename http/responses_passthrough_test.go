package http_test

// POST /v1/responses passed through to an OpenAI provider: real clients'
// bodies (testdata/clients) reach a fake OpenAI Responses upstream as they
// were sent, only the model rewritten, and its answers and events come
// back as it sent them, with svc and the estimated cost added.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"go.uber.org/goleak"

	"github.com/batonhq/baton/gateway"
)

// oaResponses is a fake OpenAI: /v1/responses answers in the Responses
// API's JSON and events (usage with cached and reasoning tokens), and
// /v1/chat/completions briefly; it keeps every request's path and body.
// Models: gpt-busy answers 429; gpt-failing streams response.created and
// then response.failed; gpt-cut stops after its first text; any other
// answers "Hi there" with a reasoning item first.
type oaResponses struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []oaRequest
	sent [][2]string // the last stream's events as sent
}

type oaRequest struct {
	path, auth string
	header     http.Header
	body       []byte
}

// oaFirstID is the id of the fake's answer to its first request.
const oaFirstID = "resp_68af0c4e5a2c8190b1c5e0c9d1a3f4e70a6b2c9d8e7f6a5b"

// The fake's usage: 1200 input tokens of which 1000 cached, 300 output of
// which 250 reasoning.
const oaUsage = `{"input_tokens":1200,"input_tokens_details":{"cached_tokens":1000},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":250},"total_tokens":1500}`

func newOAResponses(t *testing.T) *oaResponses {
	f := &oaResponses{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// spec declares the fake as provider "oai" (kind openai).
func (f *oaResponses) spec() gateway.ProviderSpec {
	price := &gateway.Price{InputPerMTok: 2, CacheReadPerMTok: 0.2, OutputPerMTok: 8, Source: "test"}
	model := func(name string, fallbacks ...string) gateway.ModelSpec {
		return gateway.ModelSpec{Name: name, ContextTokens: 400000, SupportsJSON: true, SupportsTools: true, Modes: []string{}, Pricing: price, Fallbacks: fallbacks}
	}
	fast := func(name string, fallbacks ...string) gateway.ModelSpec {
		m := model(name, fallbacks...)
		p := *price
		p.FastRate = 2
		m.Pricing = &p
		return m
	}
	return gateway.ProviderSpec{Name: "oai", Kind: "openai", BaseURL: f.srv.URL + "/v1", KeyEnv: "COMPAT_API_KEY",
		Models: []gateway.ModelSpec{model("gpt-x"), model("gpt-busy", "oai:gpt-x"), model("gpt-failing", "oai:gpt-x"),
			model("gpt-cut"), model("gpt-busy-then-claude", "anthropic:claude-haiku-4-5"), fast("gpt-fast"), fast("gpt-fast-default"),
			fast("gpt-fast-busy", "oai:gpt-x")}}
}

func (f *oaResponses) requests() []oaRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

func (f *oaResponses) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.got)
	f.got = append(f.got, oaRequest{path: r.URL.Path, auth: r.Header.Get("Authorization"), header: r.Header.Clone(), body: body})
	f.mu.Unlock()
	model := gjson.GetBytes(body, "model").Str
	if model == "gpt-busy" || model == "gpt-busy-then-claude" || model == "gpt-fast-busy" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
		return
	}
	// The tier served: the one asked for; for auto (or none), the
	// project's default, which is fast for gpt-fast-default.
	tier := gjson.GetBytes(body, "service_tier").Str
	if tier == "" || tier == "auto" {
		tier = "default"
		if model == "gpt-fast-default" {
			tier = "priority"
		}
	}
	if r.URL.Path == "/v1/chat/completions" {
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"chat: %d messages"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12},"service_tier":%q}`,
			model, len(gjson.GetBytes(body, "messages").Array()), tier)
		return
	}
	if r.URL.Path != "/v1/responses" {
		w.WriteHeader(404)
		return
	}
	// Each request's own id (the first's is oaFirstID); store as asked.
	id := oaFirstID
	if n > 0 {
		id = fmt.Sprintf("%s%04d", oaFirstID[:len(oaFirstID)-4], n)
	}
	store := gjson.GetBytes(body, "store").Type != gjson.False
	resp := func(status, output, usage string) string {
		return fmt.Sprintf(`{"id":%q,"object":"response","created_at":1756300366,"status":%q,"background":false,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":%q,"output":[%s],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":"low","summary":null},"service_tier":%q,"store":%t,"temperature":1.0,"text":{"format":{"type":"text"},"verbosity":"low"},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":%s,"user":null,"metadata":{}}`,
			id, status, model, output, tier, store, usage)
	}
	reasoning := `{"id":"rs_68af0c4f1","type":"reasoning","summary":[],"encrypted_content":"gAAAAABo-opaque"}`
	msg := func(status, text string) string {
		return fmt.Sprintf(`{"id":"msg_68af0c5a2","type":"message","status":%q,"content":[{"type":"output_text","annotations":[],"logprobs":[],"text":%q}],"role":"assistant"}`, status, text)
	}
	if !gjson.GetBytes(body, "stream").Bool() {
		w.Header().Set("Content-Type", "application/json")
		if gjson.GetBytes(body, "background").Bool() {
			io.WriteString(w, resp("queued", "", "null")) // answered later, at OpenAI
			return
		}
		io.WriteString(w, resp("completed", reasoning+","+msg("completed", "Hi there"), oaUsage))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	// Each event is kept before it is sent: the client may have read the
	// last one before this handler returns.
	f.mu.Lock()
	f.sent = nil
	f.mu.Unlock()
	seq := 0
	ev := func(typ, rest string) {
		data := fmt.Sprintf(`{"type":%q,"sequence_number":%d,%s}`, typ, seq, rest)
		seq++
		f.mu.Lock()
		f.sent = append(f.sent, [2]string{typ, data})
		f.mu.Unlock()
		sse(w, typ, data)
	}
	ev("response.created", `"response":`+resp("in_progress", "", "null"))
	ev("response.in_progress", `"response":`+resp("in_progress", "", "null"))
	if model == "gpt-failing" {
		failed, _ := sjson.Set(resp("failed", "", "null"), "error", map[string]string{"code": "server_error", "message": "The server had an error"})
		ev("response.failed", `"response":`+failed)
		return
	}
	ev("response.output_item.added", `"output_index":0,"item":{"id":"rs_68af0c4f1","type":"reasoning","summary":[]}`)
	ev("response.output_item.done", `"output_index":0,"item":`+reasoning)
	ev("response.output_item.added", `"output_index":1,"item":{"id":"msg_68af0c5a2","type":"message","status":"in_progress","content":[],"role":"assistant"}`)
	ev("response.content_part.added", `"item_id":"msg_68af0c5a2","output_index":1,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`)
	ev("response.output_text.delta", `"item_id":"msg_68af0c5a2","output_index":1,"content_index":0,"delta":"Hi","logprobs":[],"obfuscation":"x1"`)
	if model == "gpt-cut" {
		panic(http.ErrAbortHandler) // the connection breaks
	}
	if model == "gpt-fails-late" {
		failed, _ := sjson.Set(resp("failed", "", oaUsage), "error", map[string]string{"code": "server_error", "message": "The server had an error"})
		ev("response.failed", `"response":`+failed)
		return
	}
	ev("response.output_text.delta", `"item_id":"msg_68af0c5a2","output_index":1,"content_index":0,"delta":" there","logprobs":[],"obfuscation":"x2"`)
	ev("response.output_text.done", `"item_id":"msg_68af0c5a2","output_index":1,"content_index":0,"text":"Hi there","logprobs":[]`)
	ev("response.content_part.done", `"item_id":"msg_68af0c5a2","output_index":1,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":"Hi there"}`)
	ev("response.output_item.done", `"output_index":1,"item":`+msg("completed", "Hi there"))
	ev("response.completed", `"response":`+resp("completed", reasoning+","+msg("completed", "Hi there"), oaUsage))
}

// clientBody is the body of a captured client's first POST /v1/responses,
// compacted, with model set.
func clientBody(t *testing.T, file, model string) []byte {
	t.Helper()
	raw, err := os.ReadFile("../testdata/clients/" + file)
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range gjson.GetBytes(raw, "exchanges").Array() {
		if ex.Get("method").Str == "POST" && strings.HasPrefix(ex.Get("path").Str, "/v1/responses") {
			var b bytes.Buffer
			if err := json.Compact(&b, []byte(ex.Get("body").Raw)); err != nil {
				t.Fatal(err)
			}
			out, err := sjson.SetBytes(b.Bytes(), "model", model)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	t.Fatalf("%s: no POST /v1/responses", file)
	return nil
}

func passthroughEnv(t *testing.T) (*env, *oaResponses, openai.Client) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { verifyNoNewGoroutines(t, before) })
	f := newOAResponses(t)
	e := newEnvWith(t, gatewayCatalog(t, newFakeUpstreams(t), f.spec()))
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return e, f, newOpenAIClient(e, &http.Client{Transport: tr}, e.tenantA)
}

// asForwarded is what the upstream must get: the body sent, its model
// rewritten in place.
func asForwarded(t *testing.T, sent []byte, model string) []byte {
	t.Helper()
	out, err := sjson.SetBytes(sent, "model", model)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkPassthroughUsage checks the last usage event of tenant a: the
// fake's usage, cached apart, reasoning in the output, and its cost.
func checkPassthroughUsage(t *testing.T, e *env, n int, model string) {
	t.Helper()
	evs := e.usageEvents("a", n)
	var u gateway.UsageRecord
	json.Unmarshal(evs[len(evs)-1].Data, &u)
	if u.Front != "responses" || u.Model != model || u.Outcome != "ok" || u.Usage.InputTokens != 200 || u.Usage.CacheReadTokens != 1000 ||
		u.Usage.OutputTokens != 300 || u.Usage.Estimated || u.CostUSD == nil || math.Abs(*u.CostUSD-passthroughCost) > 1e-12 {
		t.Fatalf("usage record %+v", u)
	}
}

// 200 uncached at $2, 1000 cached at $0.20, 300 output at $8 per MTok.
const passthroughCost = 200*2e-6 + 1000*0.2e-6 + 300*8e-6

func TestResponsesPassthroughCodexStream(t *testing.T) {
	e, f, client := passthroughEnv(t)
	sent := clientBody(t, "codex-exec.json", "oai:gpt-x")
	stream := client.Responses.NewStreaming(testCtx(t), responses.ResponseNewParams{}, option.WithRequestBody("application/json", sent))
	var got [][2]string
	for stream.Next() {
		ev := stream.Current()
		got = append(got, [2]string{ev.Type, ev.RawJSON()})
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()

	reqs := f.requests()
	if len(reqs) != 1 || reqs[0].path != "/v1/responses" || reqs[0].auth != "Bearer sk-upstream-test" {
		t.Fatalf("upstream requests: %+v", reqs)
	}
	if want := asForwarded(t, sent, "gpt-x"); !bytes.Equal(reqs[0].body, want) {
		t.Fatalf("the upstream got\n%s\nwant\n%s", reqs[0].body, want)
	}
	up := gjson.ParseBytes(reqs[0].body)
	if !up.Get("client_metadata").IsObject() || up.Get("input.0.type").Str != "additional_tools" || up.Get("store").Type != gjson.False ||
		up.Get("include.0").Str != "reasoning.encrypted_content" || up.Get("text.verbosity").Str != "low" || !up.Get("prompt_cache_key").Exists() {
		t.Fatalf("Codex's fields did not reach the upstream: %s", reqs[0].body)
	}

	// Every event, in order, as sent; Baton's fields on the first and last.
	f.mu.Lock()
	upSent := f.sent
	f.mu.Unlock()
	if len(got) != len(upSent) {
		t.Fatalf("%d events, the upstream sent %d", len(got), len(upSent))
	}
	for i, ev := range got {
		if ev[0] != upSent[i][0] || gjson.Get(ev[1], "sequence_number").Int() != int64(i) {
			t.Fatalf("event %d: %s, the upstream sent %s", i, ev[1], upSent[i][1])
		}
		if i > 0 && i < len(got)-1 && ev[1] != upSent[i][1] {
			t.Fatalf("event %d changed: %s, the upstream sent %s", i, ev[1], upSent[i][1])
		}
	}
	first, last := gjson.Parse(got[0][1]), gjson.Parse(got[len(got)-1][1])
	if first.Get("response.svc.trace.selectedModel").Str != "oai:gpt-x" || first.Get("response.id").Str != gjson.Get(upSent[0][1], "response.id").Str {
		t.Fatalf("response.created: %s", got[0][1])
	}
	if last.Get("type").Str != "response.completed" || math.Abs(last.Get("response.usage.estimated_cost_usd").Num-passthroughCost) > 1e-12 ||
		last.Get("response.usage.output_tokens_details.reasoning_tokens").Int() != 250 || last.Get("response.svc.trace.nativeStopReason").Str != "completed" {
		t.Fatalf("response.completed: %s", got[len(got)-1][1])
	}
	checkPassthroughUsage(t, e, 1, "oai:gpt-x")
}

func TestResponsesPassthroughAgentsSDK(t *testing.T) {
	e, f, client := passthroughEnv(t)
	sent := clientBody(t, "agents-sdk-run.json", "oai:gpt-x")
	resp, err := client.Responses.New(testCtx(t), responses.ResponseNewParams{}, option.WithRequestBody("application/json", sent))
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 1 || !bytes.Equal(reqs[0].body, asForwarded(t, sent, "gpt-x")) {
		t.Fatalf("upstream requests: %+v", reqs)
	}
	if !gjson.GetBytes(reqs[0].body, "tools.0.strict").Bool() || gjson.GetBytes(reqs[0].body, "reasoning.effort").Str != "none" {
		t.Fatalf("the Agents SDK's fields did not reach the upstream: %s", reqs[0].body)
	}
	raw := gjson.Parse(resp.RawJSON())
	if resp.ID != oaFirstID || resp.OutputText() != "Hi there" || resp.Output[0].Type != "reasoning" ||
		resp.Usage.InputTokensDetails.CachedTokens != 1000 || resp.Usage.OutputTokensDetails.ReasoningTokens != 250 ||
		math.Abs(raw.Get("usage.estimated_cost_usd").Num-passthroughCost) > 1e-12 || raw.Get("svc.trace.selectedProvider").Str != "oai" ||
		raw.Get("model").Str != "gpt-x" || raw.Get("text.verbosity").Str != "low" {
		t.Fatalf("answer: %s", resp.RawJSON())
	}
	checkPassthroughUsage(t, e, 1, "oai:gpt-x")
}

// Before the first byte a failing model hands over to the next of its
// chain: a 429, or a stream that fails after response.created.
func TestResponsesPassthroughFallback(t *testing.T) {
	e, f, client := passthroughEnv(t)
	sent := []byte(`{"model":"oai:gpt-busy","input":"hi","store":false,"some_future_field":{"x":1}}`)
	resp, err := client.Responses.New(testCtx(t), responses.ResponseNewParams{}, option.WithRequestBody("application/json", sent))
	if err != nil {
		t.Fatal(err)
	}
	if raw := gjson.Parse(resp.RawJSON()); !raw.Get("svc.trace.fallbackUsed").Bool() || raw.Get("svc.trace.selectedModel").Str != "oai:gpt-x" || resp.OutputText() != "Hi there" {
		t.Fatalf("answer: %s", resp.RawJSON())
	}
	reqs := f.requests()
	if len(reqs) != 2 || !bytes.Equal(reqs[0].body, asForwarded(t, sent, "gpt-busy")) || !bytes.Equal(reqs[1].body, asForwarded(t, sent, "gpt-x")) {
		t.Fatalf("upstream requests: %+v", reqs)
	}
	for _, model := range []string{"oai:gpt-busy", "oai:gpt-failing"} {
		resp, evs := e.stream("/v1/responses", e.tenantA, map[string]any{"model": model, "input": "hi", "stream": true})
		if resp.StatusCode != 200 || len(evs) != 12 || evs[0][0] != "response.created" || evs[11][0] != "response.completed" ||
			!strings.Contains(evs[0][1], `"fallbackUsed":true`) || !strings.Contains(evs[0][1], `"sequence_number":0`) {
			t.Fatalf("%s streamed: %v", model, evs)
		}
	}
	evs := e.usageEvents("a", 6)
	var outcomes []string
	for _, ev := range evs {
		var u gateway.UsageRecord
		json.Unmarshal(ev.Data, &u)
		outcomes = append(outcomes, u.Model+" "+u.Outcome)
	}
	// Sorted: a call's usage is recorded after its answer has gone out,
	// so the next call's failed attempt may be recorded first.
	want := []string{"oai:gpt-busy upstream_error", "oai:gpt-busy upstream_error", "oai:gpt-failing upstream_error", "oai:gpt-x ok", "oai:gpt-x ok", "oai:gpt-x ok"}
	slices.Sort(outcomes)
	if !slices.Equal(outcomes, want) {
		t.Fatalf("usage: %q", outcomes)
	}
}

// A chain that goes on to another kind of provider: passed through to
// OpenAI, translated to Anthropic; a call to Anthropic is translated as
// before, and OpenAI is not asked.
func TestResponsesPassthroughAndTranslation(t *testing.T) {
	_, f, client := passthroughEnv(t)
	resp, err := client.Responses.New(testCtx(t), responses.ResponseNewParams{Model: "oai:gpt-busy-then-claude", Input: textInput("hi"), Instructions: openai.String("be brief")})
	if err != nil {
		t.Fatal(err)
	}
	raw := gjson.Parse(resp.RawJSON())
	if resp.OutputText() != `system="be brief" turns=1` || !raw.Get("svc.trace.fallbackUsed").Bool() || raw.Get("model").Str != "anthropic:claude-haiku-4-5" ||
		len(resp.ID) != len("resp_")+32 || len(f.requests()) != 1 {
		t.Fatalf("answer: %s", resp.RawJSON())
	}
	resp, err = client.Responses.New(testCtx(t), responses.ResponseNewParams{Model: "anthropic:claude-haiku-4-5", Input: textInput("hi"), Instructions: openai.String("be brief")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != `system="be brief" turns=1` || resp.Usage.InputTokens != 100 || resp.Usage.InputTokensDetails.CachedTokens != 90 || len(f.requests()) != 1 {
		t.Fatalf("translated: %s", resp.RawJSON())
	}
	// A body only OpenAI takes (a built-in tool) is not refused for OpenAI.
	r, err := client.Responses.New(testCtx(t), responses.ResponseNewParams{Model: "oai:gpt-x", Input: textInput("x"),
		Tools: []responses.ToolUnionParam{{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}}})
	if err != nil || r.OutputText() != "Hi there" || gjson.GetBytes(f.requests()[1].body, "tools.0.type").Str != "web_search" {
		t.Fatalf("built-in tool to OpenAI: %v", err)
	}
}

// previous_response_id: an id Baton did not store for the tenant is a 400
// on every model, OpenAI's included, and never reaches the provider: under
// Baton's one key it may be anyone's (another tenant's whose store failed,
// the operator's own). One Baton stored is continued from its store.
func TestResponsesPassthroughPreviousResponseID(t *testing.T) {
	e, f, client := passthroughEnv(t)
	theirs := "resp_0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, model := range []string{"oai:gpt-x", "anthropic:claude-haiku-4-5"} {
		r := e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": model, "input": "x", "previous_response_id": theirs})
		if r.status != 400 || r.str("error.code") != "previous_response_not_found" || r.str("error.param") != "previous_response_id" {
			t.Fatalf("an unknown id to %s: %d %s", model, r.status, r.raw)
		}
	}
	if reqs := f.requests(); len(reqs) != 0 {
		t.Fatalf("upstream requests: %+v", reqs)
	}
	// Baton's own: translated with its history, to OpenAI's chat completions.
	ours, err := client.Responses.New(testCtx(t), responses.ResponseNewParams{Model: "local:echo", Input: textInput("my name is Ada")})
	if err != nil {
		t.Fatal(err)
	}
	next, err := client.Responses.New(testCtx(t), responses.ResponseNewParams{Model: "oai:gpt-x", Input: textInput("my name?"), PreviousResponseID: openai.String(ours.ID)})
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if last := reqs[len(reqs)-1]; last.path != "/v1/chat/completions" || next.OutputText() != "chat: 3 messages" || next.PreviousResponseID != ours.ID {
		t.Fatalf("continuing Baton's response: %s %s", last.path, next.RawJSON())
	}
}

// A stream that fails after its first content with the usage OpenAI
// bills for it (response.failed's response.usage) is billed that usage,
// not Baton's count of what passed (one output token here).
func TestResponsesPassthroughFailedStreamBilledAsTold(t *testing.T) {
	e, _, _ := passthroughEnv(t)
	_, evs := e.stream("/v1/responses", e.tenantA, map[string]any{"model": "oai:gpt-fails-late", "input": "hi", "stream": true})
	if last := evs[len(evs)-1]; last[0] != "response.failed" {
		t.Fatalf("the stream: %v", evs)
	}
	recs := e.usageEvents("a", 1)
	var u gateway.UsageRecord
	json.Unmarshal(recs[len(recs)-1].Data, &u)
	if u.Outcome != "partial" || u.Usage.OutputTokens != 300 || u.Usage.CacheReadTokens != 1000 || u.Usage.InputTokens != 200 || u.Usage.Estimated {
		t.Fatalf("usage %+v", u.Usage)
	}
}

// A stream that breaks after its first content: the upstream's events,
// then an error event and response.failed numbered after them.
func TestResponsesPassthroughStreamCut(t *testing.T) {
	e, _, _ := passthroughEnv(t)
	_, evs := e.stream("/v1/responses", e.tenantA, map[string]any{"model": "oai:gpt-cut", "input": "hi", "stream": true})
	n := len(evs)
	if n != 9 || evs[6][0] != "response.output_text.delta" || evs[7][0] != "error" || evs[8][0] != "response.failed" ||
		gjson.Get(evs[7][1], "sequence_number").Int() != 7 || gjson.Get(evs[8][1], "sequence_number").Int() != 8 ||
		gjson.Get(evs[8][1], "response.status").Str != "failed" || gjson.Get(evs[8][1], "response.id").Str == "" {
		t.Fatalf("a cut stream: %v", evs)
	}
	evs2 := e.usageEvents("a", 1)
	var u gateway.UsageRecord
	json.Unmarshal(evs2[len(evs2)-1].Data, &u)
	if u.Outcome != "partial" || u.Usage.OutputTokens < 1 {
		t.Fatalf("usage %+v", u)
	}
}
