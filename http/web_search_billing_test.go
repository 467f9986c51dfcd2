package http_test

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/gateway"
)

// Searches of Anthropic's web search tool are billed per search on top of
// the tokens (Price.WebSearchPerK, $10 per 1,000 on the built-in models),
// read from usage.server_tool_use of a whole answer and of a stream's
// message_delta, passed through and translated, and kept in the usage
// event.
func TestWebSearchesBilled(t *testing.T) {
	const usage = `{"input_tokens":10,"output_tokens":5,"server_tool_use":{"web_search_requests":3}}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !gjson.GetBytes(b, "stream").Bool() {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":`+usage+`}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`)
		sse(w, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		sse(w, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`)
		sse(w, "content_block_stop", `{"type":"content_block_stop","index":0}`)
		sse(w, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":`+usage+`}`)
		sse(w, "message_stop", `{"type":"message_stop"}`)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "ak-upstream-test"}))
	// claude-haiku-4-5: 10 input at $1 and 5 output at $5 per million, and
	// 3 searches at $10 per 1,000.
	const want = (10*1.0+5*5.0)/1e6 + 3*10.0/1e3
	messages := `{"model":"anthropic:claude-haiku-4-5","max_tokens":100,"stream":%s,"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[{"role":"user","content":"news?"}]}`
	chat := `{"model":"anthropic:claude-haiku-4-5","stream":%s,"stream_options":%s,"messages":[{"role":"user","content":"news?"}]}`
	for _, c := range []struct{ name, path, body, costAt string }{
		{"messages, passed through", "/v1/messages", strings.Replace(messages, "%s", "false", 1), "usage.estimated_cost_usd"},
		{"messages, passed through, streamed", "/v1/messages", strings.Replace(messages, "%s", "true", 1), "usage.estimated_cost_usd"},
		{"chat, translated", "/v1/chat/completions", strings.NewReplacer("%s", "false").Replace(strings.Replace(chat, `,"stream_options":%s`, "", 1)), "usage.estimated_cost_usd"},
		{"chat, translated, streamed", "/v1/chat/completions", strings.Replace(strings.Replace(chat, "%s", "true", 1), "%s", `{"include_usage":true}`, 1), "usage.estimated_cost_usd"},
	} {
		r := e.do("POST", c.path, e.tenantA, c.body)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", c.name, r.status, r.raw)
		}
		cost := gjson.GetBytes(r.raw, c.costAt)
		if strings.Contains(c.name, "streamed") { // the last event that tells it
			for _, line := range strings.Split(string(r.raw), "\n") {
				if v := gjson.Get(strings.TrimPrefix(line, "data: "), c.costAt); v.Exists() && v.Type != gjson.Null {
					cost = v
				}
			}
		}
		if math.Abs(cost.Float()-want) > 1e-12 {
			t.Errorf("%s: cost %s, want %v\n%s", c.name, cost.Raw, want, r.raw)
		}
	}
	for i, ev := range e.usageEvents("a", 4) {
		var u gateway.UsageRecord
		json.Unmarshal(ev.Data, &u)
		if u.Usage.WebSearches != 3 || u.CostUSD == nil || math.Abs(*u.CostUSD-want) > 1e-12 {
			t.Errorf("usage event %d: %+v, cost %v", i, u.Usage, u.CostUSD)
		}
	}

	// Under a budget the hold counts the searches the tool's max_uses
	// allows: 5 searches ($0.05) do not fit in $0.04, 3 do.
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 0.04 + want*4, "monthlyUsd": nil}), 200)
	limited := func(uses int) string {
		return `{"model":"anthropic:claude-haiku-4-5","max_tokens":100,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":` +
			strconv.Itoa(uses) + `}],"messages":[{"role":"user","content":"news?"}]}`
	}
	if r := e.do("POST", "/v1/messages", e.tenantA, limited(5)); r.status != 429 || !strings.Contains(string(r.raw), "+ 5 web searches (max_uses)") {
		t.Errorf("max_uses 5 under $0.04: %d %s", r.status, r.raw)
	}
	e.must(e.do("POST", "/v1/messages", e.tenantA, limited(3)), 200)
	// Searches past the whole budget: no period lets it pass, and fewer
	// searches would.
	if r := e.do("POST", "/v1/messages", e.tenantA, limited(1000)); r.status != 400 || !strings.Contains(string(r.raw), "set a lower max_tokens or max_uses") {
		t.Errorf("max_uses 1000 under $0.04: %d %s", r.status, r.raw)
	}
}

// A passed-through stream that breaks before message_delta still bills
// the searches whose results it carried (a failed search is not billed);
// one that ends whole bills the count its usage reports, once.
func TestWebSearchesOfABrokenStream(t *testing.T) {
	const ok = `{"type":"content_block_start","index":1,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://example.com","title":"x","encrypted_content":"e"}]}}`
	const failed = `{"type":"content_block_start","index":3,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_2","content":{"type":"web_search_tool_result_error","error_code":"unavailable"}}}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1,"server_tool_use":{"web_search_requests":0}}}}`)
		for i, id := range []string{"srvtoolu_1", "srvtoolu_2"} {
			sse(w, "content_block_start", `{"type":"content_block_start","index":`+strconv.Itoa(2*i)+`,"content_block":{"type":"server_tool_use","id":"`+id+`","name":"web_search","input":{}}}`)
			sse(w, "content_block_stop", `{"type":"content_block_stop","index":`+strconv.Itoa(2*i)+`}`)
			sse(w, "content_block_start", map[bool]string{true: ok, false: failed}[i == 0])
			sse(w, "content_block_stop", `{"type":"content_block_stop","index":`+strconv.Itoa(2*i+1)+`}`)
		}
		if gjson.GetBytes(b, "metadata.user_id").Str == "cut" {
			return // the upstream breaks: no message_delta, no message_stop
		}
		sse(w, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5,"server_tool_use":{"web_search_requests":1}}}`)
		sse(w, "message_stop", `{"type":"message_stop"}`)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "ak-upstream-test"}))
	for _, user := range []string{"cut", "whole"} {
		r := e.do("POST", "/v1/messages", e.tenantA, `{"model":"anthropic:claude-haiku-4-5","max_tokens":100,"stream":true,"metadata":{"user_id":"`+user+`"},"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[{"role":"user","content":"news?"}]}`)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", user, r.status, r.raw)
		}
	}
	for i, ev := range e.usageEvents("a", 2) {
		var u gateway.UsageRecord
		json.Unmarshal(ev.Data, &u)
		if want := []string{"partial", "ok"}[i]; u.Outcome != want || u.Usage.WebSearches != 1 || u.CostUSD == nil || *u.CostUSD < 0.01 || *u.CostUSD > 0.011 {
			t.Errorf("usage event %d: %s, %+v, cost %v; want %s, 1 search", i, u.Outcome, u.Usage, u.CostUSD, want)
		}
	}
}
