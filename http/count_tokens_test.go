package http_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/batonhq/baton/gateway"
)

// POST /v1/messages/count_tokens, through the official Anthropic SDK: an
// Anthropic provider's model is counted by the provider (the model id
// rewritten, the body otherwise as sent); any other model is estimated
// locally and says so.
func TestCountTokens(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, f))
	client := newAnthropicClient(e, http.DefaultClient, e.tenantA)
	msgs := []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewTextBlock("hello baton")),
		anthropic.NewAssistantMessage(anthropic.NewTextBlock("hello")),
		anthropic.NewUserMessage(anthropic.NewTextBlock("count me")),
	}
	got, err := client.Messages.CountTokens(testCtx(t), anthropic.MessageCountTokensParams{Model: "anthropic:claude-haiku-4-5", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if got.InputTokens != 1003 {
		t.Fatalf("the upstream's count: %d, want 1003", got.InputTokens)
	}

	r := e.must(e.do("POST", "/v1/messages/count_tokens", e.tenantA, map[string]any{"model": "local:echo",
		"messages": []any{map[string]any{"role": "user", "content": "hello baton, how many tokens is this?"}}}), 200)
	if n := r.num("input_tokens"); n < 5 || n > 40 || r.str("svc.estimate") != "true" {
		t.Fatalf("a local estimate: %s", r.raw)
	}

	for _, tt := range []struct {
		name   string
		body   any
		status int
		typ    string
	}{
		{"no model", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}}}, 400, "invalid_request_error"},
		{"unknown model", map[string]any{"model": "nope:nope", "messages": []any{map[string]any{"role": "user", "content": "x"}}}, 404, "not_found_error"},
		{"not JSON", "{", 400, "invalid_request_error"},
	} {
		r := e.do("POST", "/v1/messages/count_tokens", e.tenantA, tt.body)
		if r.status != tt.status || r.str("type") != "error" || r.str("error.type") != tt.typ {
			t.Errorf("%s: %d %s", tt.name, r.status, r.raw)
		}
	}
	if r := e.do("POST", "/v1/messages/count_tokens", "", map[string]any{"model": "local:echo"}); r.status != 401 || r.str("error.type") != "authentication_error" {
		t.Errorf("no key: %d %s", r.status, r.raw)
	}
}

// An Anthropic model's count goes to Anthropic as the client sent it: its
// body byte for byte but for the model (and max_tokens, which the counter
// refuses), server tools and documents included, with anthropic-version,
// every anthropic-beta and the query string; a bare name is counted where
// /v1/messages would send it.
func TestCountTokensPassthrough(t *testing.T) {
	type got struct {
		uri    string
		header http.Header
		body   []byte
	}
	seen := make(chan got, 4)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen <- got{r.URL.RequestURI(), r.Header.Clone(), b}
		io.WriteString(w, `{"input_tokens":77}`)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "ak-upstream-test"}))
	body := `{"model":%q,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"x"}},{"type":"text","text":"hi"}]}],` +
		`"tools":[{"type":"web_search_20250305","name":"web_search"}],"context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]},"max_tokens":1024,"thinking":{"type":"enabled","budget_tokens":1024}}`
	for _, c := range []struct{ model, upstream string }{{"anthropic:claude-haiku-4-5", "claude-haiku-4-5"}, {"claude-opus-4-8", "claude-opus-4-8"}} {
		r := e.do("POST", "/v1/messages/count_tokens?beta=true", e.tenantA, fmt.Sprintf(body, c.model),
			"anthropic-version", "2023-06-01", "anthropic-beta", "token-counting-2024-11-01,context-management-2025-06-27")
		if r.status != 200 || r.num("input_tokens") != 77 {
			t.Fatalf("%s: %d %s", c.model, r.status, r.raw)
		}
		g := <-seen
		want, _ := sjson.Delete(fmt.Sprintf(body, c.upstream), "max_tokens")
		if g.uri != "/v1/messages/count_tokens?beta=true" || string(g.body) != want ||
			g.header.Get("anthropic-version") != "2023-06-01" || g.header.Get("anthropic-beta") != "token-counting-2024-11-01,context-management-2025-06-27" ||
			g.header.Get("x-api-key") != "ak-upstream-test" {
			t.Fatalf("%s: the upstream got %s %v\n%s\nwant\n%s", c.model, g.uri, g.header, g.body, want)
		}
	}
}

// A count answered 200 with an error of the API in its place (a router's
// failure) is that error, with the status its type stands for: an
// overload 529, a rate limit 429, not a 502 "no input_tokens count".
func TestCountTokensErrorObjectIn200(t *testing.T) {
	var answer string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "k"}))
	for typ, status := range map[string]int{"overloaded_error": 529, "rate_limit_error": 429, "api_error": 502} {
		answer = `{"type":"error","error":{"type":"` + typ + `","message":"upstream says ` + typ + `"}}`
		r := e.do("POST", "/v1/messages/count_tokens", e.tenantA, `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"}]}`,
			"anthropic-version", "2023-06-01")
		if r.status != status || !strings.Contains(r.str("error.message"), "upstream says "+typ) {
			t.Errorf("%s: %d %s; want %d with its message", typ, r.status, r.raw, status)
		}
	}
}

// A field of the wrong type is named as the client wrote it, not by the Go
// structs it was promoted from.
func TestWrongTypeNamesTheField(t *testing.T) {
	e := newEnvWith(t, gatewayCatalog(t, newFakeUpstreams(t)))
	for _, c := range []struct{ path, body, param, msg string }{
		{"/v1/chat/completions", `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"}],"seed":"x"}`, "/seed", ""},
		{"/v1/chat/completions", `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"}],"presence_penalty":"x"}`, "/presence_penalty", ""},
		{"/v1/chat/completions", `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":10.5}`, "", "must be an integer"},
		{"/v1/messages", `{"model":"openai:gpt-4o-mini","max_tokens":5,"system":5,"messages":[{"role":"user","content":"hi"}]}`, "", "system must be"},
		{"/v1/messages/count_tokens", `{"model":"openai:gpt-4o-mini","system":[{"type":"text","text":5}],"messages":[{"role":"user","content":"hi"}]}`, "", "system"},
		{"/v1/chat/completions", `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"a"},{"id":5}]}]}`, "/messages/1/tool_calls/1/id", ""},
		{"/v1/chat/completions", `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"}],"stop":["a",7]}`, "", "must be"},
	} {
		r := e.do("POST", c.path, e.tenantA, c.body)
		msg := r.str("error.message")
		if r.status != 400 || strings.Contains(string(r.raw), "Request/") || strings.Contains(string(r.raw), "Sampling") ||
			c.param != "" && r.str("error.param") != oaPath(c.param) || !strings.Contains(msg, c.msg) {
			t.Errorf("%s %s: %d %s", c.path, c.body, r.status, r.raw)
		}
	}
}

// A whole number written otherwise (1e3, 1000.0: a Python client's float)
// is taken for an integer field when translated, as the providers and the
// passthrough's skim take it.
func TestWholeNumberForAnInteger(t *testing.T) {
	u := newToolUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, &fakeUpstreams{openai: u.openai, anthropic: u.anthropic}))
	r := e.do("POST", "/v1/chat/completions", e.tenantA, `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":1e3}`)
	if r.status != 200 {
		t.Fatalf("1e3: %d %s", r.status, r.raw)
	}
	if sent := <-u.lastAnthropic; gjson.GetBytes(sent, "max_tokens").Raw != "1000" {
		t.Fatalf("1e3: Anthropic got %s", sent)
	}
	r = e.do("POST", "/v1/messages", e.tenantA, `{"model":"openai:gpt-4o-mini","max_tokens":1000.0,"messages":[{"role":"user","content":"hi"}]}`)
	if r.status != 200 {
		t.Fatalf("1000.0: %d %s", r.status, r.raw)
	}
	if sent := <-u.lastOpenAI; gjson.GetBytes(sent, "max_completion_tokens").Raw != "1000" && gjson.GetBytes(sent, "max_tokens").Raw != "1000" {
		t.Fatalf("1000.0: OpenAI got %s", sent)
	}
	// The Responses API translated too: it was a 400 ("the number 1000.0
	// where a whole number is expected") where passed through it ran.
	r = e.do("POST", "/v1/responses", e.tenantA, `{"model":"anthropic:claude-haiku-4-5","max_output_tokens":1000.0,"input":"hi"}`)
	if r.status != 200 {
		t.Fatalf("responses 1000.0: %d %s", r.status, r.raw)
	}
	if sent := <-u.lastAnthropic; gjson.GetBytes(sent, "max_tokens").Raw != "1000" {
		t.Fatalf("responses 1000.0: Anthropic got %s", sent)
	}
	// A fraction is refused on each front, as the providers refuse it.
	for _, c := range []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"}],"max_tokens":100.5}`, "max_tokens"},
		{"/v1/messages", `{"model":"openai:gpt-4o-mini","max_tokens":100.5,"messages":[{"role":"user","content":"hi"}]}`, ""},
		{"/v1/responses", `{"model":"anthropic:claude-haiku-4-5","max_output_tokens":100.5,"input":"hi"}`, "max_output_tokens"},
	} {
		if r := e.do("POST", c.path, e.tenantA, c.body); r.status != 400 || r.str("error.type") != "invalid_request_error" || r.str("error.param") != c.param {
			t.Errorf("%s 100.5: %d %s", c.path, r.status, r.raw)
		}
	}
}

// An upstream answer of the wrong shape is a 502 that says what was wrong
// in JSON's terms, not in the Go types it was decoded into.
func TestMalformedAnswerToldInJSONTerms(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/messages/count_tokens" {
			io.WriteString(w, `{"input_tokens":"77"}`)
			return
		}
		if r.URL.Path == "/v1/chat/completions" {
			io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":"7","completion_tokens":2}}`)
			return
		}
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1e30,"output_tokens":2}}`)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "ak-upstream-test",
		"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "sk-upstream-test"}))
	for _, c := range []struct{ path, body, want string }{
		// Translated, so that the adapter decodes the OpenAI answer.
		{"/v1/messages", `{"model":"openai:gpt-4o-mini","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, "usage.prompt_tokens is a string where a whole number is expected"},
		{"/v1/messages/count_tokens", `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"}]}`, "input_tokens is a string where a whole number is expected"},
		{"/v1/chat/completions", `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"}]}`, "usage.input_tokens is the number 1e30 where a whole number is expected"},
	} {
		r := e.do("POST", c.path, e.tenantA, c.body)
		if r.status != 502 || !strings.Contains(string(r.raw), c.want) || strings.Contains(string(r.raw), "Go ") {
			t.Errorf("%s: %d %s", c.path, r.status, r.raw)
		}
	}
}

// A whole answer the upstream served (a 2xx) that does not read as one is
// billed its input, estimated: the provider did the work and bills it,
// and the call was recorded free.
func TestMalformedAnswerBillsItsInput(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":"7","completion_tokens":2}}`)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "sk-upstream-test"}))
	body := `{"model":"openai:gpt-4o-mini","max_tokens":10,"messages":[{"role":"user","content":"say hi to everyone in the room"}]}`
	if r := e.do("POST", "/v1/messages", e.tenantA, body); r.status != 502 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	var u gateway.UsageRecord
	if err := json.Unmarshal(e.usageEvents("a", 1)[0].Data, &u); err != nil {
		t.Fatal(err)
	}
	if u.Outcome != "upstream_error" || u.Usage.InputTokens == 0 || u.Usage.OutputTokens != 0 || !u.Usage.Estimated || u.CostUSD == nil || *u.CostUSD <= 0 {
		t.Fatalf("a malformed answer recorded %s %+v at %v; want its input billed, estimated", u.Outcome, u.Usage, u.CostUSD)
	}
}

// A success answer that holds an error object of the provider's API (as
// some OpenAI-compatible routers answer an upstream's failure) is that
// error, its message told and its input not billed: it was read as a
// malformed answer, "no choices", and billed as one the model served.
func TestErrorInASuccessAnswerIsNotBilled(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"error":{"message":"Provider returned error: upstream overloaded","code":502}}`)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "sk-upstream-test"}))
	body := `{"model":"openai:gpt-4o-mini","max_tokens":10,"messages":[{"role":"user","content":"say hi to everyone in the room"}]}`
	r := e.do("POST", "/v1/chat/completions", e.tenantA, body)
	if r.status != 502 || !strings.Contains(r.str("error.message"), "upstream overloaded") {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	var u gateway.UsageRecord
	if err := json.Unmarshal(e.usageEvents("a", 1)[0].Data, &u); err != nil {
		t.Fatal(err)
	}
	if u.Outcome != "upstream_error" || u.Usage.InputTokens != 0 || (u.CostUSD != nil && *u.CostUSD != 0) {
		t.Fatalf("an error in a success answer recorded %s %+v at %v; want nothing billed", u.Outcome, u.Usage, u.CostUSD)
	}
}

// The same answer to a translated call, on each front, is the same error:
// the adapters read it as a malformed answer ("no choices", "not a
// message"), lost the provider's message, and billed its input.
func TestErrorInASuccessAnswerIsNotBilledTranslated(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"error":{"message":"Provider returned error: upstream overloaded","code":502}}`)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "ak-upstream-test",
		"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "sk-upstream-test"}))
	calls := []struct{ path, body, field, want string }{
		{"/v1/chat/completions", `{"model":"anthropic:claude-haiku-4-5","max_tokens":10,"messages":[{"role":"user","content":"say hi to everyone in the room"}]}`, "error.code", "upstream_error"},
		{"/v1/messages", `{"model":"openai:gpt-4o-mini","max_tokens":10,"messages":[{"role":"user","content":"say hi to everyone in the room"}]}`, "error.type", "api_error"},
		{"/v1/responses", `{"model":"anthropic:claude-haiku-4-5","max_output_tokens":16,"input":"say hi to everyone in the room"}`, "error.code", "upstream_error"},
	}
	for _, c := range calls {
		r := e.do("POST", c.path, e.tenantA, c.body)
		if r.status != 502 || r.str(c.field) != c.want || !strings.Contains(r.str("error.message"), "upstream overloaded") {
			t.Errorf("%s: %d %s", c.path, r.status, r.raw)
		}
	}
	for i, ev := range e.usageEvents("a", len(calls)) {
		var u gateway.UsageRecord
		if err := json.Unmarshal(ev.Data, &u); err != nil {
			t.Fatal(err)
		}
		if u.Outcome != "upstream_error" || u.Usage.InputTokens != 0 || (u.CostUSD != nil && *u.CostUSD != 0) {
			t.Errorf("event %d (%s): an error in a success answer recorded %s %+v at %v; want nothing billed", i, u.Front, u.Outcome, u.Usage, u.CostUSD)
		}
	}
}

// A passed-through answer whose choices array is empty beside the
// provider's error is that error too: it was answered 200, an empty
// completion, and billed its input.
func TestErrorBesideNoChoicesIsNotBilled(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"gen-1","object":"chat.completion","choices":[],"error":{"message":"Provider returned error: upstream overloaded","code":502}}`)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "sk-upstream-test"}))
	body := `{"model":"openai:gpt-4o-mini","max_tokens":10,"messages":[{"role":"user","content":"say hi to everyone in the room"}]}`
	r := e.do("POST", "/v1/chat/completions", e.tenantA, body)
	if r.status != 502 || r.str("error.code") != "upstream_error" || !strings.Contains(r.str("error.message"), "upstream overloaded") {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	var u gateway.UsageRecord
	if err := json.Unmarshal(e.usageEvents("a", 1)[0].Data, &u); err != nil {
		t.Fatal(err)
	}
	if u.Outcome != "upstream_error" || u.Usage.InputTokens != 0 || (u.CostUSD != nil && *u.CostUSD != 0) {
		t.Fatalf("an error beside no choices recorded %s %+v at %v; want nothing billed", u.Outcome, u.Usage, u.CostUSD)
	}
}
