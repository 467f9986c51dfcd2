package http_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/gateway"
)

// cutCallUpstream is a chat-completions upstream whose answer is a call
// of get_weather cut at the token cap: its arguments are not whole JSON.
func cutCallUpstream(t *testing.T) (gateway.ProviderSpec, *atomic.Int32) {
	calls := new(atomic.Int32)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		calls.Add(1)
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			sse(w, "", `{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_cut","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Pa"}}]}}]}`)
			sse(w, "", `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`)
			sse(w, "", `{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14}}`)
			sse(w, "", "[DONE]")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m1","choices":[{"index":0,"finish_reason":"length","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_cut","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Pa"}}]}}],"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14}}`)
	}))
	t.Cleanup(up.Close)
	return gateway.ProviderSpec{Name: "cut", Kind: "openai-compatible", BaseURL: up.URL + "/v1", KeyEnv: "COMPAT_API_KEY",
		Models: []gateway.ModelSpec{{Name: "m1", ContextTokens: 128000, SupportsTools: true, Modes: []string{},
			Pricing: &gateway.Price{InputPerMTok: 1, OutputPerMTok: 2, Source: "test"}}}}, calls
}

// A translated answer cut at the token cap inside a function call: the
// call is incomplete, whole and streamed, its arguments what came.
func TestResponsesCallCutAtTheTokenCap(t *testing.T) {
	spec, calls := cutCallUpstream(t)
	e := newEnvWith(t, gatewayCatalog(t, newFakeUpstreams(t), spec))
	tools := `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			body := fmt.Sprintf(`{"model":"cut:m1","input":"weather?","max_output_tokens":20,"stream":%v,%s}`, stream, tools)
			var id string
			if stream {
				resp, evs := e.stream("/v1/responses", e.tenantA, json.RawMessage(body))
				if resp.StatusCode != 200 || len(evs) == 0 {
					t.Fatalf("status %d, %d events", resp.StatusCode, len(evs))
				}
				last := evs[len(evs)-1]
				if last[0] != "response.incomplete" {
					t.Fatalf("last event %q: %s", last[0], last[1])
				}
				for _, ev := range evs {
					if ev[0] == "response.output_item.done" && !strings.Contains(ev[1], `"status":"incomplete"`) {
						t.Fatalf("the cut call's item is not incomplete: %s", ev[1])
					}
				}
				id = gjson.Get(last[1], "response.id").Str
				if !strings.Contains(last[1], `"type":"function_call","id":`) || !strings.Contains(last[1], `"status":"incomplete"}`) {
					t.Fatalf("final response %s", last[1])
				}
			} else {
				final := e.must(e.do("POST", "/v1/responses", "", body, "Authorization", "Bearer "+e.tenantA), 200)
				id = final.str("id")
				// A whole answer's cut call holds its arguments as the model
				// wrote them, as the stream does (they were {} until
				// 2026-11-28, the model's words dropped without a sign).
				if final.str("status") != "incomplete" || !strings.Contains(string(final.raw), `"arguments":"{\"city\":\"Pa","status":"incomplete"`) {
					t.Fatalf("%s", final.raw)
				}
				return
			}
			// Continued on an OpenAI-shaped model, the call goes with its
			// arguments as they came, as OpenAI takes them back (until
			// 2026-11-28 a 400: the response could not be continued); on
			// Anthropic, whose tool use takes an object, it is a 400
			// naming the call, with no upstream call.
			next := func(model string) string {
				return fmt.Sprintf(`{"model":%q,"previous_response_id":%q,"input":[{"type":"function_call_output","call_id":"call_cut","output":"sunny"}],%s}`, model, id, tools)
			}
			before := calls.Load()
			e.must(e.do("POST", "/v1/responses", "", next("cut:m1"), "Authorization", "Bearer "+e.tenantA), 200)
			if calls.Load() != before+1 {
				t.Fatal("the continuation did not reach the upstream")
			}
			r := e.must(e.do("POST", "/v1/responses", "", next("anthropic:claude-haiku-4-5"), "Authorization", "Bearer "+e.tenantA), 400)
			if !strings.Contains(string(r.raw), "call_cut has arguments that are not a JSON object") {
				t.Fatalf("%s", r.raw)
			}
		})
	}
}
