package http_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/batonhq/baton/gateway"
)

// Golden tests: what real clients sent (testdata/clients, recorded from the
// clients themselves) replayed through Baton to a provider of the same wire
// format. The provider must get the body as the client wrote it, byte for
// byte but for the model, with the client's protocol headers and query;
// the client must get the provider's answer, every event of it, with only
// Baton's fields added.

// capturedCall is one recorded request of a client.
type capturedCall struct {
	file, path string
	header     http.Header
	body       []byte // compact, keys in the client's order
}

// capturedCalls reads the recorded POSTs to path from a capture file.
func capturedCalls(t *testing.T, file, path string) []capturedCall {
	t.Helper()
	return capturedRequests(t, file, "POST", path)
}

// capturedRequests reads the recorded requests of a method to path.
func capturedRequests(t *testing.T, file, method, path string) []capturedCall {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "clients", file))
	if err != nil {
		t.Fatal(err)
	}
	var out []capturedCall
	gjson.GetBytes(raw, "exchanges").ForEach(func(_, ex gjson.Result) bool {
		p, _, _ := strings.Cut(ex.Get("path").Str, "?")
		if ex.Get("method").Str != method || p != path {
			return true
		}
		var body bytes.Buffer
		if b := ex.Get("body"); b.Exists() {
			if err := json.Compact(&body, []byte(b.Raw)); err != nil {
				t.Fatal(err)
			}
		}
		h := http.Header{}
		ex.Get("headers").ForEach(func(k, v gjson.Result) bool {
			h.Set(k.Str, v.Str)
			return true
		})
		out = append(out, capturedCall{file: file, path: ex.Get("path").Str, header: h, body: body.Bytes()})
		return true
	})
	if len(out) == 0 {
		t.Fatalf("%s: no %s %s recorded", file, method, path)
	}
	return out
}

// recordingUpstream is a provider that keeps what it got and answers with
// a fixed body or event stream.
// recordingServer serves a recordingUpstream answering stream to a
// streamed request and whole to any other.
func recordingServer(t *testing.T, stream, whole string) (*recordingUpstream, *httptest.Server) {
	up := &recordingUpstream{answer: func(s bool) (string, string) {
		if s {
			return "text/event-stream", stream
		}
		return "application/json", whole
	}}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	return up, srv
}

type recordingUpstream struct {
	mu     sync.Mutex
	got    []recorded
	answer func(stream bool) (contentType, body string)
}

type recorded struct {
	path, query string
	header      http.Header
	body        []byte
}

func (u *recordingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.got = append(u.got, recorded{path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: b})
	u.mu.Unlock()
	ct, body := u.answer(gjson.GetBytes(b, "stream").Bool())
	w.Header().Set("Content-Type", ct)
	io.WriteString(w, body)
}

func (u *recordingUpstream) last(t *testing.T) recorded {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.got) == 0 {
		t.Fatal("the upstream got nothing")
	}
	return u.got[len(u.got)-1]
}

// An Anthropic stream with a thinking block (its signature too), text and
// a tool call: everything a passthrough must carry as it is.
const anthropicThinkingStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_gold","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":300,"cache_read_input_tokens":4000,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user says hi."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxDdxyv"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi!"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":12,"cache_creation_input_tokens":300,"cache_read_input_tokens":4000,"output_tokens":57}}

event: message_stop
data: {"type":"message_stop"}

`

const anthropicThinkingMessage = `{"id":"msg_gold","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[{"type":"thinking","thinking":"The user says hi.","signature":"EqQBCgIYAhIM"},{"type":"text","text":"Hi!"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":300,"cache_read_input_tokens":4000,"output_tokens":57,"service_tier":"standard"}}`

// goldenEnv is a Baton whose providers of kinds ("anthropic", "openai" or
// "both") call one recording upstream answering with stream or whole.
func goldenEnv(t *testing.T, stream, whole, kinds string) (*env, *recordingUpstream) {
	up, srv := recordingServer(t, stream, whole)
	vars := map[string]string{}
	if kinds != "openai" {
		vars["ANTHROPIC_BASE_URL"], vars["ANTHROPIC_API_KEY"] = srv.URL, "provider-key"
	}
	if kinds != "anthropic" {
		vars["OPENAI_BASE_URL"], vars["OPENAI_API_KEY"] = srv.URL+"/v1", "provider-key"
	}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, cat), up
}

// sseRaw splits an event stream into its events' (name, data) pairs.
func sseRaw(t *testing.T, r io.Reader) [][2]string {
	t.Helper()
	var out [][2]string
	var name string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			out = append(out, [2]string{name, strings.TrimPrefix(line, "data: ")})
			name = ""
		}
	}
	return out
}

// withoutBaton is a passed-through event's data with Baton's additions
// taken out, to compare with what the provider sent.
func withoutBaton(t *testing.T, data string) string {
	t.Helper()
	for _, p := range []string{"svc", "message.svc", "usage.estimated_cost_usd"} {
		out, err := sjson.Delete(data, p)
		if err != nil {
			t.Fatal(err)
		}
		data = out
	}
	return data
}

func TestClientsPassThroughToAnthropic(t *testing.T) {
	e, up := goldenEnv(t, anthropicThinkingStream, anthropicThinkingMessage, "anthropic")
	var calls []capturedCall
	for _, f := range []string{"claude-code-turn.json", "claude-code-turn-sonnet-4-5.json", "claude-code-tool-turn.json",
		"ai-sdk-anthropic-generate-object.json", "ai-sdk-anthropic-image.json", "langchain-anthropic-structured.json"} {
		calls = append(calls, capturedCalls(t, f, "/v1/messages")...)
	}
	for i, c := range calls {
		name := fmt.Sprintf("%s#%d", c.file, i)
		body, err := sjson.SetBytes(c.body, "model", "anthropic:claude-haiku-4-5")
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", e.srv.URL+c.path, bytes.NewReader(body))
		for _, h := range []string{"anthropic-version", "anthropic-beta", "content-type", "user-agent", "x-app"} {
			if v := c.header.Get(h); v != "" {
				req.Header.Set(h, v)
			}
		}
		req.Header.Set("x-api-key", e.tenantA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		stream := gjson.GetBytes(body, "stream").Bool()
		var events [][2]string
		var answer []byte
		if stream {
			events = sseRaw(t, resp.Body)
		} else {
			answer, _ = io.ReadAll(resp.Body)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, answer)
		}

		// What the provider got: the body as sent, only the model changed.
		got := up.last(t)
		want, _ := sjson.SetBytes(c.body, "model", "claude-haiku-4-5")
		if !bytes.Equal(got.body, want) {
			t.Fatalf("%s: the provider got\n%s\nwant\n%s", name, got.body, want)
		}
		_, query, _ := strings.Cut(c.path, "?")
		if got.path != "/v1/messages" || got.query != query {
			t.Fatalf("%s: the provider got %s?%s", name, got.path, got.query)
		}
		if got.header.Get("anthropic-beta") != c.header.Get("anthropic-beta") || got.header.Get("anthropic-version") != c.header.Get("anthropic-version") {
			t.Fatalf("%s: headers beta %q version %q, want %q %q", name, got.header.Get("anthropic-beta"), got.header.Get("anthropic-version"),
				c.header.Get("anthropic-beta"), c.header.Get("anthropic-version"))
		}
		if got.header.Get("x-api-key") != "provider-key" {
			t.Fatalf("%s: the provider got key %q, not Baton's own", name, got.header.Get("x-api-key"))
		}

		// What the client got: the provider's answer, Baton's fields added.
		if !stream {
			if withoutBaton(t, string(answer)) != anthropicThinkingMessage {
				t.Fatalf("%s: the client got\n%s", name, answer)
			}
			if gjson.GetBytes(answer, "svc.trace.selectedModel").Str != "anthropic:claude-haiku-4-5" || gjson.GetBytes(answer, "usage.estimated_cost_usd").Num <= 0 {
				t.Fatalf("%s: svc or cost missing: %s", name, answer)
			}
			continue
		}
		sent := sseRaw(t, strings.NewReader(anthropicThinkingStream))
		if len(events) != len(sent) {
			t.Fatalf("%s: %d events, the provider sent %d: %v", name, len(events), len(sent), events)
		}
		for j, ev := range events {
			if ev[0] != sent[j][0] || withoutBaton(t, ev[1]) != sent[j][1] {
				t.Fatalf("%s: event %d is %v, the provider sent %v", name, j, ev, sent[j])
			}
		}
		if gjson.Get(events[0][1], "message.svc.requestId").Str == "" || gjson.Get(events[len(events)-2][1], "usage.estimated_cost_usd").Num <= 0 {
			t.Fatalf("%s: svc or cost missing: %v", name, events)
		}
	}
	// Billed as the provider reported it: cache reads and writes apart.
	evs := e.usageEvents("a", len(calls))
	var u gateway.UsageRecord
	if err := json.Unmarshal(evs[len(evs)-1].Data, &u); err != nil {
		t.Fatal(err)
	}
	if u.Usage != (gateway.Usage{InputTokens: 12, OutputTokens: 57, CacheReadTokens: 4000, CacheWriteTokens: 300}) || u.Outcome != "ok" {
		t.Fatalf("usage recorded %+v", u)
	}
}

// An OpenAI chunk stream with a usage chunk, as OpenAI sends it when asked.
const openaiChunkStream = `data: {"id":"chatcmpl-gold","object":"chat.completion.chunk","created":1764000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x1"}

data: {"id":"chatcmpl-gold","object":"chat.completion.chunk","created":1764000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"{\"name\":\"Ada\"}"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x2"}

data: {"id":"chatcmpl-gold","object":"chat.completion.chunk","created":1764000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null,"obfuscation":"x3"}

data: {"id":"chatcmpl-gold","object":"chat.completion.chunk","created":1764000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_1","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":9,"total_tokens":129,"prompt_tokens_details":{"cached_tokens":64,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}

data: [DONE]

`

const openaiCompletion = `{"id":"chatcmpl-gold","object":"chat.completion","created":1764000000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"{\"name\":\"Ada\"}","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":9,"total_tokens":129,"prompt_tokens_details":{"cached_tokens":64,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_1"}`

func TestClientsPassThroughToOpenAI(t *testing.T) {
	e, up := goldenEnv(t, openaiChunkStream, openaiCompletion, "openai")
	var calls []capturedCall
	for _, f := range []string{"ai-sdk-openai-chat-generate-object.json", "ai-sdk-openai-chat-image.json", "ai-sdk-openai-chat-stream-text.json",
		"langchain-openai-structured.json"} {
		calls = append(calls, capturedCalls(t, f, "/v1/chat/completions")...)
	}
	for i, c := range calls {
		name := fmt.Sprintf("%s#%d", c.file, i)
		body, _ := sjson.SetBytes(c.body, "model", "openai:gpt-4o-mini")
		stream := gjson.GetBytes(body, "stream").Bool()
		r := e.do("POST", "/v1/chat/completions", e.tenantA, body)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", name, r.status, r.raw)
		}
		got := up.last(t)
		want, _ := sjson.SetBytes(c.body, "model", "gpt-4o-mini")
		if stream && !gjson.GetBytes(c.body, "stream_options.include_usage").Bool() {
			// Asked for billing; the usage chunk is not passed on.
			want, _ = sjson.SetBytes(want, "stream_options.include_usage", true)
		}
		if !bytes.Equal(got.body, want) {
			t.Fatalf("%s: the provider got\n%s\nwant\n%s", name, got.body, want)
		}
		if got.path != "/v1/chat/completions" || got.header.Get("Authorization") != "Bearer provider-key" {
			t.Fatalf("%s: the provider got %s with %q", name, got.path, got.header.Get("Authorization"))
		}
		if !stream {
			if withoutBaton(t, string(r.raw)) != openaiCompletion || r.str("svc.trace.selectedModel") != "openai:gpt-4o-mini" {
				t.Fatalf("%s: the client got\n%s", name, r.raw)
			}
			continue
		}
		events := sseRaw(t, bytes.NewReader(r.raw))
		sent := sseRaw(t, strings.NewReader(openaiChunkStream))
		if !gjson.GetBytes(c.body, "stream_options.include_usage").Bool() {
			sent = append(sent[:3:3], sent[4])
		}
		if len(events) != len(sent) {
			t.Fatalf("%s: %d events, the provider sent %d: %v", name, len(events), len(sent), events)
		}
		for j, ev := range events {
			if withoutBaton(t, ev[1]) != sent[j][1] {
				t.Fatalf("%s: event %d is %s, the provider sent %s", name, j, ev[1], sent[j][1])
			}
		}
	}
	evs := e.usageEvents("a", len(calls))
	var u gateway.UsageRecord
	if err := json.Unmarshal(evs[len(evs)-1].Data, &u); err != nil {
		t.Fatal(err)
	}
	if u.Usage != (gateway.Usage{InputTokens: 56, OutputTokens: 9, CacheReadTokens: 64, ServiceTier: "default"}) || u.Outcome != "ok" {
		t.Fatalf("usage recorded %+v", u)
	}
}

// The official Anthropic SDK through Baton to an Anthropic provider, with
// extended thinking, an image and a beta: its stream accumulates the
// provider's thinking block, signature included, and the provider gets the
// image and the thinking budget as the SDK sent them.
func TestAnthropicSDKPassesThinkingAndImages(t *testing.T) {
	e, up := goldenEnv(t, anthropicThinkingStream, anthropicThinkingMessage, "anthropic")
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	client := newAnthropicClient(e, &http.Client{Transport: tr}, e.tenantA)
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	params := anthropic.MessageNewParams{
		Model: "anthropic:claude-haiku-4-5", MaxTokens: 16000,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is this?"), anthropic.NewImageBlockBase64("image/png", png))},
		Thinking: anthropic.ThinkingConfigParamOfEnabled(4096),
	}
	stream := client.Messages.NewStreaming(testCtx(t), params, anthropicoption.WithHeader("anthropic-beta", "interleaved-thinking-2025-05-14"))
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 2 || msg.Content[0].Type != "thinking" || msg.Content[0].Thinking != "The user says hi." ||
		msg.Content[0].Signature != "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxDdxyv" || msg.Content[1].Text != "Hi!" {
		t.Fatalf("accumulated %s", msg.RawJSON())
	}
	if msg.Usage.CacheReadInputTokens != 4000 || msg.Usage.OutputTokens != 57 {
		t.Fatalf("usage %+v", msg.Usage)
	}
	got := up.last(t)
	if gjson.GetBytes(got.body, "thinking.budget_tokens").Int() != 4096 || gjson.GetBytes(got.body, "messages.0.content.1.source.data").Str != png ||
		got.header.Get("anthropic-beta") != "interleaved-thinking-2025-05-14" {
		t.Fatalf("the provider got %s (beta %q)", got.body, got.header.Get("anthropic-beta"))
	}
	// Not streamed: the thinking block comes back whole.
	whole, err := client.Messages.New(testCtx(t), params)
	if err != nil {
		t.Fatal(err)
	}
	if whole.Content[0].Type != "thinking" || whole.Content[0].Signature != "EqQBCgIYAhIM" || whole.Usage.CacheCreationInputTokens != 300 {
		t.Fatalf("whole %s", whole.RawJSON())
	}
}

// Claude Code with no --model sends its own default name, which no
// provider lists: a bare name goes to the provider of the front's format,
// and the body reaches it exactly as the client wrote it.
func TestBareDefaultModelGoesToTheFrontsProvider(t *testing.T) {
	e, up := goldenEnv(t, anthropicThinkingStream, anthropicThinkingMessage, "both")
	c := capturedCalls(t, "claude-code-turn.json", "/v1/messages")[0]
	if m := gjson.GetBytes(c.body, "model").Str; m != "claude-opus-4-8" {
		t.Fatalf("the capture's model is %q", m)
	}
	r := e.do("POST", c.path, e.tenantA, c.body, "anthropic-version", "2023-06-01")
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if got := up.last(t); !bytes.Equal(got.body, c.body) || got.path != "/v1/messages" {
		t.Fatalf("the provider got %s %s", got.path, got.body)
	}
	// A name that no provider lists, on the chat front: OpenAI's.
	r = e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "gpt-5.6-luna", "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if got := up.last(t); got.path != "/v1/chat/completions" || gjson.GetBytes(got.body, "model").Str != "gpt-5.6-luna" {
		t.Fatalf("the provider got %s %s (Baton answered %d)", got.path, got.body, r.status)
	}
}
