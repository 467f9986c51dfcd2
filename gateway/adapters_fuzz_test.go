package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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
				// Not JSON: the message is the body itself, cut short.
				trimmed := strings.TrimSpace(string(last))
				if !json.Valid(last) && (!strings.HasPrefix(trimmed, ue.Message) || len(ue.Message) < min(len(trimmed), 500-(utf8.UTFMax-1))) {
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
