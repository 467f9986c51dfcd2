package http_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/gateway"
)

// fakeUpstreams are loopback servers that speak the OpenAI and Anthropic
// wire formats. The model name picks the behaviour: ok, fail-429, fail-500, refuse-<status>,
// cut (a stream that stops mid-way), hang (a stream that waits for the
// client to go away).
type fakeUpstreams struct {
	openai, anthropic *httptest.Server
	canceled          chan string // models whose upstream request was canceled
	calls             atomic.Int64

	mu sync.Mutex
	// caps is the token cap of each chat completions request the OpenAI
	// fake took, as field=value, space-separated if there are both ("" for
	// none): OpenAI itself takes max_completion_tokens, OpenAI-compatible
	// servers max_tokens.
	caps []string
	// anthropicHeaders are the headers of each request the Anthropic fake
	// took, in order.
	anthropicHeaders []http.Header
	// anthropicBodies are the bodies of the messages requests the
	// Anthropic fake took, in order.
	anthropicBodies [][]byte
}

func newFakeUpstreams(t testing.TB) *fakeUpstreams {
	f := &fakeUpstreams{canceled: make(chan string, 16)}
	f.openai = httptest.NewServer(http.HandlerFunc(f.serveOpenAI))
	f.anthropic = httptest.NewServer(http.HandlerFunc(f.serveAnthropic))
	t.Cleanup(func() { f.openai.Close(); f.anthropic.Close() })
	return f
}

func sse(w http.ResponseWriter, event string, data string) {
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", data)
	w.(http.Flusher).Flush()
}

func (f *fakeUpstreams) fail(w http.ResponseWriter, model string) bool {
	switch model {
	case "fail-429":
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit_error"}}`)
		return true
	case "fail-404-html": // a server at the provider's address that is not its API
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(404)
		io.WriteString(w, "<html><body>404 page not found</body></html>")
		return true
	case "fail-500", "fail-500-typo":
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"message":"boom","type":"server_error"}}`)
		return true
	}
	return false
}

// refuse answers the refusals the models refuse-400, refuse-404,
// refuse-409, refuse-413 and refuse-422 name, in OpenAI's shape (the
// field at fault in param, a code) or Anthropic's (no param: the message
// led by the field).
func (f *fakeUpstreams) refuse(w http.ResponseWriter, model string, anthropicShape bool) bool {
	refusals := map[string][3]string{ // status: param, code, Anthropic type
		"refuse-400": {"messages[0].content", "invalid_value", "invalid_request_error"},
		"refuse-404": {"", "model_not_found", "not_found_error"},
		"refuse-409": {"", "conflict", "invalid_request_error"},
		"refuse-413": {"", "request_too_large", "request_too_large"},
		"refuse-422": {"temperature", "unprocessable", "invalid_request_error"},
	}
	r, ok := refusals[model]
	if !ok {
		return false
	}
	status, _ := strconv.Atoi(strings.TrimPrefix(model, "refuse-"))
	w.WriteHeader(status)
	if anthropicShape {
		fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":"messages.0.content: refused"},"request_id":"req_up"}`, r[2])
		return true
	}
	param := "null"
	if r[0] != "" {
		param = strconv.Quote(r[0])
	}
	fmt.Fprintf(w, `{"error":{"message":"refused","type":"invalid_request_error","param":%s,"code":%q}}`, param, r[1])
	return true
}

func (f *fakeUpstreams) serveOpenAI(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	if r.Header.Get("Authorization") != "Bearer sk-upstream-test" {
		w.WriteHeader(401)
		return
	}
	if r.URL.Path == "/v1/models" {
		io.WriteString(w, `{"object":"list","data":[{"id":"gpt-4o-mini"},{"id":"other"}]}`)
		return
	}
	var req struct {
		Model               string `json:"model"`
		Stream              bool   `json:"stream"`
		MaxCompletionTokens *int   `json:"max_completion_tokens"`
		MaxTokens           *int   `json:"max_tokens"` // what OpenAI-compatible servers take
		Messages            []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	var caps []string
	for _, c := range []struct {
		field string
		v     *int
	}{{"max_completion_tokens", req.MaxCompletionTokens}, {"max_tokens", req.MaxTokens}} {
		if c.v != nil {
			caps = append(caps, c.field+"="+strconv.Itoa(*c.v))
		}
	}
	f.mu.Lock()
	f.caps = append(f.caps, strings.Join(caps, " "))
	f.mu.Unlock()
	if f.fail(w, req.Model) || f.refuse(w, req.Model, false) {
		return
	}
	// The answer names the roles it received, so tests see the translation.
	var roles []string
	for _, m := range req.Messages {
		roles = append(roles, m.Role)
	}
	text := "roles " + strings.Join(roles, ",")
	finish := "stop"
	if req.MaxCompletionTokens != nil && *req.MaxCompletionTokens == 3 || req.MaxTokens != nil && *req.MaxTokens == 3 {
		finish = "length"
	}
	if !req.Stream {
		if req.Model == "no-usage" { // some OpenAI-compatible servers report none
			fmt.Fprintf(w, `{"id":"chatcmpl-up","object":"chat.completion","created":1700000000,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":%q}]}`, req.Model, text, finish)
			return
		}
		fmt.Fprintf(w, `{"id":"chatcmpl-up","object":"chat.completion","created":1700000000,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":%q}],"usage":{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,"prompt_tokens_details":{"cached_tokens":40}}}`, req.Model, text, finish)
		return
	}
	if !req.StreamOptions.IncludeUsage {
		w.WriteHeader(400)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	// Every chunk carries the completion's id, object, created and model,
	// as OpenAI's do.
	chunk := func(rest string) string {
		return fmt.Sprintf(`{"id":"chatcmpl-up%d","object":"chat.completion.chunk","created":1700000000,"model":%q,%s}`, f.calls.Load(), req.Model, rest)
	}
	sse(w, "", chunk(`"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]`))
	for _, word := range strings.Fields(text) {
		sse(w, "", chunk(fmt.Sprintf(`"choices":[{"index":0,"delta":{"content":%q}}]`, word+" ")))
		if req.Model == "cut" {
			return // the connection ends mid-stream
		}
		if req.Model == "hang" {
			<-r.Context().Done()
			f.canceled <- req.Model
			return
		}
	}
	sse(w, "", chunk(fmt.Sprintf(`"choices":[{"index":0,"delta":{},"finish_reason":%q}]`, finish)))
	if req.Model == "no-usage" {
		sse(w, "", "[DONE]")
		return
	}
	sse(w, "", chunk(`"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,"prompt_tokens_details":{"cached_tokens":40}}`))
	sse(w, "", "[DONE]")
}

// tokenCaps is the token cap of each chat completions request the OpenAI
// fake has taken, in order.
func (f *fakeUpstreams) tokenCaps() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.caps)
}

func (f *fakeUpstreams) serveAnthropic(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	f.mu.Lock()
	f.anthropicHeaders = append(f.anthropicHeaders, r.Header.Clone())
	f.mu.Unlock()
	if r.Header.Get("x-api-key") != "ak-upstream-test" || r.Header.Get("anthropic-version") == "" {
		w.WriteHeader(401)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"bad key"}}`)
		return
	}
	if r.URL.Path == "/v1/messages/count_tokens" {
		// Counts turns, so a test can tell the upstream's count from an
		// estimate; refuses what the real counter refuses.
		var q map[string]json.RawMessage
		json.NewDecoder(r.Body).Decode(&q)
		var msgs []json.RawMessage
		json.Unmarshal(q["messages"], &msgs)
		if _, ok := q["max_tokens"]; ok || string(q["model"]) != `"claude-haiku-4-5"` {
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"model %s, max_tokens %s"}}`, q["model"], q["max_tokens"])
			return
		}
		fmt.Fprintf(w, `{"input_tokens":%d}`, 1000+len(msgs))
		return
	}
	if r.URL.Path == "/v1/models" {
		io.WriteString(w, `{"data":[{"type":"model","id":"claude-haiku-4-5-20251001","display_name":"Claude Haiku 4.5"},{"type":"model","id":"claude-sonnet-5-5","display_name":"Claude Sonnet 5.5"}],"has_more":false,"first_id":"claude-haiku-4-5-20251001","last_id":"claude-sonnet-5-5"}`)
		return
	}
	var req struct {
		Model     string          `json:"model"`
		System    json.RawMessage `json:"system"`
		MaxTokens int             `json:"max_tokens"`
		Stream    bool            `json:"stream"`
		Messages  []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.anthropicBodies = append(f.anthropicBodies, body)
	f.mu.Unlock()
	json.Unmarshal(body, &req)
	if f.fail(w, req.Model) || f.refuse(w, req.Model, true) {
		return
	}
	// The system prompt is a string or text blocks, as the API takes it.
	var system string
	if json.Unmarshal(req.System, &system) != nil {
		var blocks []struct {
			Text string `json:"text"`
		}
		json.Unmarshal(req.System, &blocks)
		for _, b := range blocks {
			system += b.Text
		}
	}
	text := fmt.Sprintf("system=%q turns=%d", system, len(req.Messages))
	stop := "end_turn"
	if req.MaxTokens == 3 {
		stop = "max_tokens"
	}
	id := fmt.Sprintf("msg_up%d", f.calls.Load()) // each answer its own id, as Anthropic's
	if !req.Stream {
		fmt.Fprintf(w, `{"id":%q,"type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":%q}],"stop_reason":%q,"usage":{"input_tokens":10,"output_tokens":4,"cache_read_input_tokens":90,"cache_creation_input_tokens":0}}`, id, req.Model, text, stop)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sse(w, "message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":%q,"type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":90}}}`, id, req.Model))
	if req.Model == "overloaded" {
		// Anthropic's way of failing a stream it has already opened.
		sse(w, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		return
	}
	sse(w, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	sse(w, "ping", `{"type":"ping"}`)
	for _, word := range strings.Fields(text) {
		sse(w, "content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, word+" "))
		if req.Model == "cut" {
			sse(w, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
	}
	sse(w, "content_block_stop", `{"type":"content_block_stop","index":0}`)
	sse(w, "message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q},"usage":{"output_tokens":4}}`, stop))
	sse(w, "message_stop", `{"type":"message_stop"}`)
}

func newGatewayEnv(t *testing.T) (*env, *fakeUpstreams) {
	f := newFakeUpstreams(t)
	return newEnvWith(t, gatewayCatalog(t, f)), f
}

// gatewayCatalog is the built-in catalog with the openai and anthropic
// providers pointed at f, plus the providers given (see catalogWith);
// their keyEnv may be COMPAT_API_KEY, which holds the OpenAI fake's key.
func gatewayCatalog(t testing.TB, f *fakeUpstreams, providers ...gateway.ProviderSpec) *gateway.Catalog {
	return catalogWith(t, map[string]string{
		"OPENAI_BASE_URL": f.openai.URL + "/v1", "OPENAI_API_KEY": "sk-upstream-test",
		"ANTHROPIC_BASE_URL": f.anthropic.URL, "ANTHROPIC_API_KEY": "ak-upstream-test",
		"COMPAT_API_KEY": "sk-upstream-test",
	}, providers...)
}

// catalogWith is the catalog configured by the environment vars, with the
// providers given declared in a providers file.
func catalogWith(t testing.TB, vars map[string]string, providers ...gateway.ProviderSpec) *gateway.Catalog {
	cfg := gateway.Config{Getenv: func(k string) string { return vars[k] }}
	if len(providers) > 0 {
		b, _ := json.Marshal(map[string]any{"providers": providers})
		cfg.ProvidersFile = filepath.Join(t.TempDir(), "providers.json")
		if err := os.WriteFile(cfg.ProvidersFile, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := gateway.NewCatalog(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// sseEvents reads a whole event stream into (event, data) pairs.
func sseEvents(t *testing.T, body io.Reader) [][2]string {
	t.Helper()
	var out [][2]string
	sc := bufio.NewScanner(body)
	ev := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			out = append(out, [2]string{ev, strings.TrimPrefix(line, "data: ")})
			ev = ""
		}
	}
	return out
}

func (e *env) stream(path, key string, body any) (*http.Response, [][2]string) {
	e.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp, sseEvents(e.t.(*testing.T), resp.Body)
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestChatCompletionsAgainstOpenAIUpstream(t *testing.T) {
	e, _ := newGatewayEnv(t)
	r := e.must(e.do("POST", "/v1/chat/completions", "", map[string]any{
		"model":    "openai:gpt-4o-mini",
		"messages": []any{map[string]any{"role": "system", "content": "be brief"}, map[string]any{"role": "user", "content": "hi"}},
	}, "Authorization", "Bearer "+e.tenantA), 200)
	if r.str("object") != "chat.completion" || !strings.Contains(r.raw2(), `"content":"roles system,user"`) {
		t.Fatalf("%s", r.raw)
	}
	var body struct {
		Usage struct {
			PromptTokens int     `json:"prompt_tokens"`
			Completion   int     `json:"completion_tokens"`
			Cost         float64 `json:"estimated_cost_usd"`
			Details      struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
		Svc struct {
			RequestID string `json:"requestId"`
			Trace     struct {
				SelectedProvider string `json:"selectedProvider"`
			} `json:"trace"`
		} `json:"svc"`
	}
	json.Unmarshal(r.raw, &body)
	// prompt 100 of which 40 cached: 60 at 0.15, 40 at 0.075, 5 out at 0.60 per million.
	want := (60*0.15 + 40*0.075 + 5*0.60) / 1e6
	if body.Usage.PromptTokens != 100 || body.Usage.Details.Cached != 40 || !near(body.Usage.Cost, want) || body.Svc.Trace.SelectedProvider != "openai" {
		t.Fatalf("usage %+v (want cost %g): %s", body.Usage, want, r.raw)
	}
}

func (r response) raw2() string { return string(r.raw) }

func TestMessagesStreamFromOpenAIUpstream(t *testing.T) {
	e, _ := newGatewayEnv(t)
	resp, evs := e.stream("/v1/messages", e.tenantA, map[string]any{
		"model": "openai:gpt-4o-mini", "max_tokens": 3, "stream": true, "system": "sys",
		"messages": []any{map[string]any{"role": "user", "content": "hello"}},
	})
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	var names []string
	var text string
	for _, ev := range evs {
		if len(names) == 0 || names[len(names)-1] != ev[0] {
			names = append(names, ev[0])
		}
		if ev[0] == "content_block_delta" {
			var d struct {
				Delta struct{ Text string } `json:"delta"`
			}
			json.Unmarshal([]byte(ev[1]), &d)
			text += d.Delta.Text
		}
	}
	if got := strings.Join(names, " "); got != "message_start ping content_block_start content_block_delta content_block_stop message_delta message_stop" {
		t.Fatalf("event grammar: %s", got)
	}
	if text != "roles system,user " {
		t.Fatalf("text %q", text)
	}
	md := evs[len(evs)-2][1]
	if !strings.Contains(md, `"stop_reason":"max_tokens"`) || !strings.Contains(md, `"nativeStopReason":"length"`) || !strings.Contains(md, `"input_tokens":60`) || !strings.Contains(md, `"cache_read_input_tokens":40`) {
		t.Fatalf("message_delta: %s", md)
	}
}

func TestChatStreamFromAnthropicUpstream(t *testing.T) {
	e, _ := newGatewayEnv(t)
	_, evs := e.stream("/v1/chat/completions", e.tenantA, map[string]any{
		"model": "anthropic:claude-haiku-4-5", "stream": true, "stream_options": map[string]any{"include_usage": true},
		"max_completion_tokens": 3,
		"messages":              []any{map[string]any{"role": "system", "content": "S"}, map[string]any{"role": "user", "content": "a"}, map[string]any{"role": "assistant", "content": "b"}, map[string]any{"role": "user", "content": "c"}},
	})
	if len(evs) < 4 || evs[len(evs)-1][1] != "[DONE]" {
		t.Fatalf("stream did not end with [DONE]: %v", evs)
	}
	var text, finish string
	var usage map[string]any
	for _, ev := range evs[:len(evs)-1] {
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta        struct{ Content string } `json:"delta"`
				FinishReason *string                  `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		json.Unmarshal([]byte(ev[1]), &c)
		if c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk object %q", c.Object)
		}
		for _, ch := range c.Choices {
			text += ch.Delta.Content
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
		if c.Usage != nil {
			usage = c.Usage
		}
	}
	if text != `system="S" turns=3 ` || finish != "length" {
		t.Fatalf("text %q finish %q", text, finish)
	}
	// Anthropic: 10 input + 90 cache reads. OpenAI shape: prompt 100, cached 90.
	if usage["prompt_tokens"] != float64(100) || usage["completion_tokens"] != float64(4) {
		t.Fatalf("usage %v", usage)
	}
}

func TestGatewayErrors(t *testing.T) {
	e, _ := newGatewayEnv(t)
	chat := func(model string) response {
		return e.do("POST", "/v1/chat/completions", "", map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": "x"}}}, "Authorization", "Bearer "+e.tenantA)
	}
	msg := func(model string) response {
		return e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": model, "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "x"}}})
	}
	tests := []struct {
		name       string
		r          response
		status     int
		errType    string
		retryAfter string
	}{
		{"openai 429 passes retry-after", chat("openai:fail-429"), 429, "rate_limit_error", "7"},
		{"openai 500 is a bad gateway", chat("openai:fail-500"), 502, "api_error", ""},
		{"anthropic 429 on messages", msg("anthropic:fail-429"), 429, "rate_limit_error", "7"},
		{"anthropic 500 on messages", msg("anthropic:fail-500"), 502, "api_error", ""},
		// A 404 page of no provider's API (a wrong baseUrl) is no unknown
		// model of the client's: a bad gateway.
		{"openai 404 page is a bad gateway", chat("openai:fail-404-html"), 502, "api_error", ""},
		{"anthropic 404 page on messages", msg("anthropic:fail-404-html"), 502, "api_error", ""},
		{"unknown model", chat("nobody:x"), 404, "invalid_request_error", ""},
		{"unknown model on messages", msg("nobody:x"), 404, "not_found_error", ""},
		{"missing max_tokens on messages", e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "local:echo", "messages": []any{map[string]any{"role": "user", "content": "x"}}}), 400, "invalid_request_error", ""},
		{"bad role", e.do("POST", "/v1/chat/completions", "", map[string]any{"model": "local:echo", "messages": []any{map[string]any{"role": "robot", "content": "x"}}}, "Authorization", "Bearer "+e.tenantA), 400, "invalid_request_error", ""},
		{"no key on chat", e.do("POST", "/v1/chat/completions", "", `{}`), 401, "invalid_request_error", ""},
		{"no key on messages", e.do("POST", "/v1/messages", "", `{}`), 401, "authentication_error", ""},
		{"malformed JSON on messages", e.do("POST", "/v1/messages", e.tenantA, `{"model":`), 400, "invalid_request_error", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", tc.r.status, tc.status, tc.r.raw)
			}
			if got := tc.r.header.Get("Retry-After"); got != tc.retryAfter {
				t.Fatalf("Retry-After %q, want %q", got, tc.retryAfter)
			}
			anthropicShape := tc.r.str("type") == "error"
			typ := tc.r.str("error.type")
			if typ != tc.errType {
				t.Fatalf("error type %q, want %q: %s", typ, tc.errType, tc.r.raw)
			}
			if strings.Contains(tc.name, "messages") != anthropicShape {
				t.Fatalf("wrong error shape: %s", tc.r.raw)
			}
			if strings.Contains(tc.name, "404 page") && !strings.Contains(tc.r.str("error.message"), "check the provider's baseUrl") {
				t.Fatalf("no word of the baseUrl: %s", tc.r.raw)
			}
		})
	}
}

func TestStreamCutMidway(t *testing.T) {
	e, _ := newGatewayEnv(t)
	_, evs := e.stream("/v1/messages", e.tenantA, map[string]any{"model": "openai:cut", "max_tokens": 50, "stream": true, "messages": []any{map[string]any{"role": "user", "content": "x"}}})
	if last := evs[len(evs)-1]; last[0] != "error" || !strings.Contains(last[1], `"type":"error"`) {
		t.Fatalf("a cut upstream stream should end with an error event: %v", evs)
	}
	_, evs = e.stream("/v1/messages", e.tenantA, map[string]any{"model": "anthropic:cut", "max_tokens": 50, "stream": true, "messages": []any{map[string]any{"role": "user", "content": "x"}}})
	if last := evs[len(evs)-1]; last[0] != "error" || !strings.Contains(last[1], "Overloaded") {
		t.Fatalf("an upstream error event should pass on: %v", evs)
	}
	_, evs = e.stream("/v1/chat/completions", e.tenantA, map[string]any{"model": "openai:cut", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "x"}}})
	if last := evs[len(evs)-1]; !strings.Contains(last[1], `"error"`) {
		t.Fatalf("a cut stream on chat should end with an error chunk, not [DONE]: %v", evs)
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	e, f := newGatewayEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	b, _ := json.Marshal(map[string]any{"model": "openai:hang", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "x"}}})
	req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/v1/chat/completions", strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+e.tenantA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for seen := 0; seen < 2; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") {
			seen++
		}
	}
	cancel() // the client goes away mid-stream
	resp.Body.Close()
	select {
	case m := <-f.canceled:
		if m != "hang" {
			t.Fatalf("canceled %q", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream request was not canceled when the client went away")
	}
	// The partial call is billed: a usage event says the client went away.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		evs, _ := gateway.ReadUsage(context.Background(), e.store, "a", 100)
		for _, ev := range evs {
			if strings.Contains(string(ev.Data), `"outcome":"client_gone"`) && strings.Contains(string(ev.Data), `"model":"openai:hang"`) {
				return
			}
		}
		time.Sleep(10 * time.Millisecond) // polling a bounded condition
	}
	t.Fatal("no usage event for the abandoned stream")
}

func TestUsageEventsAndUnpricedModels(t *testing.T) {
	e, _ := newGatewayEnv(t)
	r := e.must(e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "anthropic:some-new-model", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "x"}}}), 200)
	if !strings.Contains(string(r.raw), `"estimated_cost_usd":null`) {
		t.Fatalf("an unpriced model must report its cost as unknown (null), not 0: %s", r.raw)
	}
	evs := e.usageEvents("a", 1)
	var u gateway.UsageRecord
	json.Unmarshal(evs[0].Data, &u)
	if u.Tenant != "a" || u.Model != "anthropic:some-new-model" || u.CostUSD != nil || u.Usage.InputTokens != 10 || u.Usage.CacheReadTokens != 90 || u.Outcome != "ok" {
		t.Fatalf("usage record %+v", u)
	}
	m := e.must(e.do("GET", "/v1/models", "", nil, "Authorization", "Bearer "+e.tenantB), 200)
	var list struct {
		Object string          `json:"object"`
		Data   []gateway.Model `json:"data"`
	}
	json.Unmarshal(m.raw, &list)
	found := map[string]gateway.Model{}
	for _, x := range list.Data {
		found[x.ID] = x
	}
	if list.Object != "list" || !found["local:echo"].Development || !found["openai:gpt-4o-mini"].Configured || !found["openai:gpt-4o-mini"].HasPricing {
		t.Fatalf("models: %s", m.raw)
	}
}
