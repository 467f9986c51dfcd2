package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/anthropic"
	"github.com/batonhq/baton/gateway/internal/upstreamtest"
	"github.com/batonhq/baton/gateway/openai"
)

// listsModels reports whether b is a JSON object whose data is an array, the
// shape of both providers' model lists.
func listsModels(b []byte) bool {
	var l struct {
		Data json.RawMessage `json:"data"`
	}
	// An array, or null: Ollama with no model pulled sends "data":null.
	return json.Unmarshal(b, &l) == nil && (bytes.HasPrefix(l.Data, []byte("[")) || string(l.Data) == "null")
}

// FuzzUpstreamAnswers has an upstream answer a non-streamed call or a model
// list with any status and body. Whatever it answers, the call returns in
// bounded time; a refusal is an *UpstreamError with the upstream's status
// and a message that stays valid UTF-8; a 2xx that is not an answer is an
// error, never an empty success; usage is never negative.
func FuzzUpstreamAnswers(f *testing.F) {
	const (
		oaAnswer   = `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Paris.","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":$T,"completion_tokens":8,"prompt_tokens_details":{"cached_tokens":16}}}`
		oaTools    = `{"id":"chatcmpl-2","model":"m","choices":[{"message":{"content":null,"tool_calls":[{"id":"","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"stop"}]}`
		anAnswer   = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[{"type":"text","text":"Paris."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":27,"cache_creation_input_tokens":3,"cache_read_input_tokens":4,"cache_creation":{"ephemeral_5m_input_tokens":1,"ephemeral_1h_input_tokens":$T},"output_tokens":$T}}`
		oaModels   = `{"object":"list","data":[{"id":"gpt-4o-mini","object":"model"},{"id":"gpt-4o","object":"model"}]}`
		anModels   = `{"data":[{"type":"model","id":"claude-sonnet-4-20250514"}],"has_more":false,"first_id":"claude-sonnet-4-20250514","last_id":"claude-sonnet-4-20250514"}`
		anEndless  = `{"data":[{"type":"model","id":"m-$N"}],"has_more":true,"last_id":"m-$N"}`
		anSameLast = `{"data":[{"type":"model","id":"m"}],"has_more":true,"last_id":"m"}`
		oaError    = `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`
		anError    = `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit."}}`
	)
	// Calls, by a fuzzed index: 0-2 Complete, 3-5 ListModels, on an OpenAI,
	// an OpenAI-compatible and an Anthropic adapter.
	const (
		oaComplete, compatComplete, anComplete = 0, 1, 2
		oaList, compatList, anList             = 3, 4, 5
	)
	for _, s := range []struct {
		calls  []uint8
		status uint16
		tokens int64
		body   string
	}{
		{[]uint8{oaComplete, compatComplete}, 200, 31, oaAnswer},
		{[]uint8{oaComplete, compatComplete}, 200, 0, oaTools},
		{[]uint8{anComplete}, 200, 10, anAnswer},
		{[]uint8{anComplete}, 200, 10, `{"id":"msg_2","type":"message","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"redacted_thinking","data":"e"},{"type":"text","text":"x"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":$T}}`},
		{[]uint8{oaList, compatList, anList}, 200, 0, oaModels},
		{[]uint8{oaList, compatList, anList}, 200, 0, anModels},
		{[]uint8{anList}, 200, 0, anEndless},
		{[]uint8{anList}, 200, 0, anSameLast},
		{[]uint8{0, 1, 2, 3, 4, 5}, 200, 0, `{"id":"x","choices":[`},
		{[]uint8{0, 1, 2, 3, 4, 5}, 200, 0, ``},
		{[]uint8{0, 1, 2, 3, 4, 5}, 200, 0, `[]`},
		{[]uint8{0, 1, 2, 3, 4, 5}, 204, 0, ``},
		{[]uint8{0, 1, 2, 3, 4, 5}, 301, 0, `moved`},
		{[]uint8{0, 1, 2, 3, 4, 5}, 500, 0, oaError},
		{[]uint8{0, 1, 2, 3, 4, 5}, 429, 0, anError},
		{[]uint8{0, 1, 2, 3, 4, 5}, 502, 0, "<html><body>Bad Gateway</body></html>\n"},
		// Over 500 bytes of three-byte characters: the message is cut,
		// and not inside a character.
		{[]uint8{0, 1, 2, 3, 4, 5}, 503, 0, strings.Repeat("€", 200)},
		{[]uint8{0, 1, 2, 3, 4, 5}, 400, 0, `{"error":{"type":"invalid_request_error","message":"` + strings.Repeat("語", 200) + `"}}`},
		// Found by this target: negative counts, which would lower a
		// tenant's spending; answers that are not answers; lists without
		// a data array, which a sync would take for "no models".
		{[]uint8{oaComplete, compatComplete}, 200, 0, `{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":-13,"completion_tokens":-2,"prompt_tokens_details":{"cached_tokens":-4}}}`},
		{[]uint8{anComplete}, 200, -5, anAnswer},
		{[]uint8{anComplete}, 200, 0, `{}`},
		{[]uint8{oaComplete, compatComplete}, 200, 0, `{"ChoiCes":[{}]}00`},
		{[]uint8{oaComplete, compatComplete}, 200, 0, `{"choices":[{}]}`},
		{[]uint8{oaList, compatList, anList}, 200, 0, `{}`},
		{[]uint8{oaList, compatList, anList}, 200, 0, `null`},
		{[]uint8{oaList, compatList, anList}, 200, 0, `{"data":null}`},
		{[]uint8{oaList, compatList, anList}, 200, 0, `{"data":[{"id":""}]}`},
	} {
		for _, c := range s.calls {
			f.Add(c, s.status, s.tokens, []byte(s.body))
		}
	}

	up := &upstreamtest.Upstream{}
	srv := httptest.NewServer(up)
	f.Cleanup(srv.Close)
	oa := openai.New("openai", "openai", srv.URL, "k", srv.Client())
	compat := openai.New("compat", "openai-compatible", srv.URL, "", srv.Client())
	an := anthropic.New("anthropic", srv.URL, "k", srv.Client())
	providers := []gateway.Provider{oa, compat, an}
	req := gateway.Request{Model: "m", MaxTokens: 16, Messages: []gateway.Message{{Role: "user", Content: []gateway.Block{{Type: "text", Text: "hi"}}}}}

	f.Fuzz(func(t *testing.T, call uint8, status uint16, tokens int64, body []byte) {
		code := int(status)
		if code < 200 || code > 999 {
			code = 200 + code%800 // net/http sends 200-999; 1xx are interim answers
		}
		call %= 6
		p := providers[call%3]
		// "$T" is a token count the fuzzer sets as a number, which it
		// changes far more readily than the digits of a body.
		body = bytes.ReplaceAll(body, []byte("$T"), []byte(strconv.FormatInt(tokens, 10)))
		up.Reset(code, body)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var (
			resp   *gateway.Response
			models []string
			err    error
		)
		upstreamtest.Within(t, 15*time.Second, func() {
			if call < 3 {
				resp, err = p.Complete(ctx, req)
			} else {
				models, err = p.ListModels(ctx)
			}
		})
		served := up.Bodies()
		what := p.Name() + " Complete"
		if call >= 3 {
			what = p.Name() + " ListModels"
		}
		maxPages := 1
		if call == anList {
			maxPages = anthropic.MaxModelPages
		}
		if len(served) == 0 || len(served) > maxPages {
			t.Fatalf("%s asked %d times, want 1 to %d", what, len(served), maxPages)
		}
		last := served[len(served)-1]

		if err != nil {
			var ue *gateway.UpstreamError
			if !errors.As(err, &ue) {
				t.Fatalf("%s: error %v (%T) is not an *UpstreamError", what, err, err)
			}
			want := code
			if code < 300 {
				want = http.StatusBadGateway // a 2xx that is not an answer
				if ue.OfAPI {
					// An error object of the provider's API in it: the
					// status its type or code stands for.
					want = gateway.ErrorStatus(gjson.GetBytes(last, "error.type").Str, gjson.GetBytes(last, "error.code"))
				}
			}
			if ue.Status != want {
				t.Fatalf("%s: status %d, want %d (upstream said %d): %v", what, ue.Status, want, code, err)
			}
			if utf8.Valid(last) && !utf8.ValidString(ue.Message) {
				t.Fatalf("%s: message %q is not valid UTF-8; the upstream's body was", what, ue.Message)
			}
			if code >= 300 {
				if len(ue.Message) > 500 {
					t.Fatalf("%s: message of %d bytes, want at most 500", what, len(ue.Message))
				}
				// Not JSON: the message is the body itself, cut short; an
				// empty body is told by its status's name, where it has one.
				trimmed := strings.TrimSpace(string(last))
				if trimmed == "" {
					if want := "no error message"; ue.Message != want && ue.Message != http.StatusText(code)+" ("+want+")" {
						t.Fatalf("%s: message %q for an empty %d", what, ue.Message, code)
					}
				} else if !json.Valid(last) && (!strings.HasPrefix(trimmed, ue.Message) || len(ue.Message) < min(len(trimmed), 500-(utf8.UTFMax-1))) {
					t.Fatalf("%s: message %q is not the start of the body %q", what, ue.Message, trimmed)
				}
			}
			return
		}

		if code >= 300 {
			t.Fatalf("%s succeeded on a %d", what, code)
		}
		if call >= 3 {
			for i, b := range served {
				if !listsModels(b) {
					t.Fatalf("%s: page %d %q is not a model list, yet the call answered %q", what, i, b, models)
				}
			}
			return
		}
		if resp == nil {
			t.Fatalf("%s: no answer and no error", what)
		}
		if !json.Valid(last) {
			t.Fatalf("%s: body %q is not JSON, yet the call answered %+v", what, last, resp)
		}
		if resp.ID == "" && resp.Model == "" && len(resp.Content) == 0 && resp.StopReason == "" && resp.Refusal == "" && resp.UsageMissing {
			t.Fatalf("%s: body %q made an empty answer %+v", what, last, resp)
		}
		if u := resp.Usage; u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 ||
			u.CacheWrite1hTokens < 0 || u.CacheWrite1hTokens > u.CacheWriteTokens {
			t.Fatalf("%s: body %q made negative usage %+v", what, last, u)
		}
	})
}

// negativeUsage reports whether u has a negative count, which would lower
// a tenant's spending.
func negativeUsage(u gateway.Usage) bool {
	return u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 ||
		u.CacheWrite1hTokens < 0 || u.CacheWrite1hTokens > u.CacheWriteTokens || u.WebSearches < 0
}

// FuzzForwardedAnswers has an upstream answer a passed-through request
// (Forwarder.Forward: Messages, chat completions and the Responses API,
// whole or streamed) with any status and body. Whatever it answers, the
// call returns in bounded time; a refusal is an *UpstreamError with the
// upstream's status (a 2xx that is not an answer is a 502, or the status
// a failed response's error names, and a stream's error event an error
// status of its own); a whole answer's body, which Baton
// splices svc into, is valid JSON, and so is every event of a stream;
// usage is never negative.
func FuzzForwardedAnswers(f *testing.F) {
	const (
		anAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":$T,"output_tokens":2,"cache_creation_input_tokens":4,"cache_creation":{"ephemeral_1h_input_tokens":$T},"server_tool_use":{"web_search_requests":$T}}}`
		anStream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":$T,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":$T}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
		oaAnswer = `{"id":"c","model":"m","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":$T,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":2}},"service_tier":"default"}`
		oaStream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n" +
			"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":$T,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"
		rsAnswer = `{"id":"resp_1","object":"response","status":"completed","model":"m","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}],"usage":{"input_tokens":$T,"output_tokens":1,"input_tokens_details":{"cached_tokens":1}}}`
		rsStream = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\"}}\n\n" +
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"delta\":\"hi\"}\n\n" +
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"status\":\"completed\",\"usage\":{\"input_tokens\":$T,\"output_tokens\":1}}}\n\n"
	)
	// Calls, by a fuzzed index: Messages, chat completions on OpenAI and
	// on an OpenAI-compatible server, the Responses API; whole, then the
	// same streamed.
	const (
		anWhole, oaWhole, compatWhole, rsWhole     = 0, 1, 2, 3
		anStreamed, oaStreamed, compatStreamed, rs = 4, 5, 6, 7
	)
	for _, s := range []struct {
		calls  []uint8
		status uint16
		tokens int64
		body   string
	}{
		{[]uint8{anWhole}, 200, 10, anAnswer},
		{[]uint8{anStreamed}, 200, 10, anStream},
		{[]uint8{oaWhole, compatWhole}, 200, 10, oaAnswer},
		{[]uint8{oaStreamed, compatStreamed}, 200, 10, oaStream},
		{[]uint8{rsWhole}, 200, 10, rsAnswer},
		{[]uint8{rs}, 200, 10, rsStream},
		{[]uint8{anWhole}, 200, -7, anAnswer},
		{[]uint8{rsWhole}, 200, 0, `{"object":"response","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"}}`},
		{[]uint8{rsWhole}, 200, 0, `{"object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}`},
		{[]uint8{rs}, 200, 0, "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\"}}}\n\n"},
		{[]uint8{anStreamed}, 200, 0, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"},
		{[]uint8{0, 1, 2, 3, 4, 5, 6, 7}, 200, 0, ``},
		{[]uint8{0, 1, 2, 3, 4, 5, 6, 7}, 200, 0, `{}`},
		{[]uint8{0, 1, 2, 3, 4, 5, 6, 7}, 200, 0, "data: {\n\n"},
		{[]uint8{0, 1, 2, 3, 4, 5, 6, 7}, 429, 0, `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit."}}`},
		{[]uint8{0, 1, 2, 3, 4, 5, 6, 7}, 500, 0, `{"error":{"message":"The server had an error.","type":"server_error"}}`},
	} {
		for _, c := range s.calls {
			f.Add(c, s.status, s.tokens, []byte(s.body))
		}
	}

	up := &upstreamtest.Upstream{}
	srv := httptest.NewServer(up)
	f.Cleanup(srv.Close)
	providers := []gateway.Forwarder{
		anthropic.New("anthropic", srv.URL, "k", srv.Client()),
		openai.New("openai", "openai", srv.URL, "k", srv.Client()),
		openai.New("compat", "openai-compatible", srv.URL, "", srv.Client()),
		openai.New("openai", "openai", srv.URL, "k", srv.Client()),
	}
	natives := []*gateway.Native{
		{Format: gateway.FormatAnthropic, Body: []byte(`{"model":"anthropic:m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)},
		{Format: gateway.FormatChat, Body: []byte(`{"model":"openai:m","messages":[{"role":"user","content":"hi"}]}`)},
		{Format: gateway.FormatChat, Body: []byte(`{"model":"compat:m","max_completion_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)},
		{Format: gateway.FormatResponses, Body: []byte(`{"model":"openai:m","input":"hi"}`)},
	}
	f.Fuzz(func(t *testing.T, call uint8, status uint16, tokens int64, body []byte) {
		code := int(status)
		if code < 200 || code > 999 {
			code = 200 + code%800
		}
		call %= 8
		p, n, stream := providers[call%4], natives[call%4], call >= 4
		body = bytes.ReplaceAll(body, []byte("$T"), []byte(strconv.FormatInt(tokens, 10)))
		up.Reset(code, body)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var (
			resp   *gateway.Response
			st     gateway.Stream
			err    error
			deltas []gateway.Delta
		)
		upstreamtest.Within(t, 15*time.Second, func() {
			if resp, st, err = p.Forward(ctx, n, "m", stream); err == nil && stream {
				defer st.Close()
				deltas, err = upstreamtest.Drain(t, st)
			}
		})
		what := fmt.Sprintf("%s forwarding %s (stream %v)", p.(gateway.Provider).Name(), n.Format, stream)
		if len(up.Bodies()) != 1 {
			t.Fatalf("%s asked %d times, want 1", what, len(up.Bodies()))
		}
		for _, d := range deltas {
			if d.Raw != nil && string(d.Raw) != "[DONE]" && !json.Valid(d.Raw) {
				t.Fatalf("%s: event %q is not JSON", what, d.Raw)
			}
			if d.Usage != nil && negativeUsage(*d.Usage) {
				t.Fatalf("%s: body %q made negative usage %+v", what, body, *d.Usage)
			}
		}
		if err != nil {
			var ue *gateway.UpstreamError
			if !errors.As(err, &ue) {
				t.Fatalf("%s: error %v (%T) is not an *UpstreamError", what, err, err)
			}
			switch {
			case code >= 300 && ue.Status != code:
				t.Fatalf("%s: status %d, want the upstream's %d: %v", what, ue.Status, code, err)
			case code < 300 && stream && (ue.Status < 400 || ue.Status > 599):
				// An error event names its own kind of failure.
				t.Fatalf("%s: status %d for a %d stream: %v", what, ue.Status, code, err)
			case code < 300 && !stream && ue.Status != http.StatusBadGateway &&
				(n.Format != gateway.FormatResponses || !slices.Contains([]int{400, 429, 503}, ue.Status)) &&
				!(ue.OfAPI && slices.Contains([]int{400, 404, 413, 422, 429, 529}, ue.Status)): // an error object's own status (ErrorStatus)
				t.Fatalf("%s: status %d for a %d answer: %v", what, ue.Status, code, err)
			}
			return
		}
		if code >= 300 {
			t.Fatalf("%s succeeded on a %d", what, code)
		}
		if stream {
			return
		}
		if resp == nil || !json.Valid(resp.Raw) {
			t.Fatalf("%s: body %q made the answer %+v", what, body, resp)
		}
		if negativeUsage(resp.Usage) {
			t.Fatalf("%s: body %q made negative usage %+v", what, body, resp.Usage)
		}
	})
}
