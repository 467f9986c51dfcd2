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

// OpenAI's web search tool on a passed-through Responses call is billed
// per search action ($10 per 1,000 on the built-in models), counted from
// the response's web_search_call items, whole and streamed: opening a page
// or finding in it is not billed, nor a failed search. A stream that breaks
// before response.completed bills the searches done so far.
func TestOpenAIWebSearchesBilled(t *testing.T) {
	output := `[{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"news"}},` +
		`{"type":"web_search_call","id":"ws_2","status":"completed","action":{"type":"open_page","url":"https://example.com"}},` +
		`{"type":"web_search_call","id":"ws_3","status":"completed","action":{"type":"search","query":"more news"}},` +
		`{"type":"web_search_call","id":"ws_4","status":"failed","action":{"type":"search","query":"x"}},` +
		`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}]}]`
	up := toolCallsUpstream(t, output)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "sk-upstream-test"}))
	// gpt-6-luna: 1,000 input at $0.10 and 100 output at $0.50 per
	// million, and 2 searches at $10 per 1,000.
	const want = (1000*0.10+100*0.50)/1e6 + 2*10.0/1e3
	body := `{"model":"openai:gpt-6-luna","store":false,"stream":%s,"metadata":{"cut":"%s"},"tools":[{"type":"web_search"}],"input":"news?"}`
	for _, c := range []struct{ stream, cut string }{{"false", "no"}, {"true", "no"}, {"true", "yes"}} {
		r := e.do("POST", "/v1/responses", e.tenantA, strings.Replace(strings.Replace(body, "%s", c.stream, 1), "%s", c.cut, 1))
		if r.status != 200 {
			t.Fatalf("stream %s, cut %s: %d %s", c.stream, c.cut, r.status, r.raw)
		}
		if c.stream == "false" {
			if cost := gjson.GetBytes(r.raw, "usage.estimated_cost_usd").Float(); math.Abs(cost-want) > 1e-12 {
				t.Errorf("whole: cost %v, want %v\n%s", cost, want, r.raw)
			}
		}
	}
	for i, ev := range e.usageEvents("a", 3) {
		var u gateway.UsageRecord
		json.Unmarshal(ev.Data, &u)
		if u.Usage.WebSearches != 2 || u.CostUSD == nil || *u.CostUSD < 2*10.0/1e3 {
			t.Errorf("usage event %d (%s): %+v, cost %v; want 2 searches", i, u.Outcome, u.Usage, u.CostUSD)
		}
		if i < 2 && math.Abs(*u.CostUSD-want) > 1e-12 {
			t.Errorf("usage event %d: cost %v, want %v", i, *u.CostUSD, want)
		}
	}

	// Under a budget, max_tool_calls bounds the searches held for: 5
	// ($0.05) do not fit in $0.04, 3 do; without it none are held for.
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 0.04 + 3*want, "monthlyUsd": nil}), 200)
	limited := func(calls string) string {
		return `{"model":"openai:gpt-6-luna","store":false,"max_output_tokens":100,"max_tool_calls":` + calls + `,"tools":[{"type":"web_search"}],"input":"news?"}`
	}
	if r := e.do("POST", "/v1/responses", e.tenantA, limited("5")); r.status != 429 || !strings.Contains(string(r.raw), "+ 5 web searches (max_tool_calls)") {
		t.Errorf("max_tool_calls 5 under $0.04: %d %s", r.status, r.raw)
	}
	if r := e.do("POST", "/v1/responses", e.tenantA, limited("1000")); r.status != 400 || !strings.Contains(string(r.raw), "set a lower max_output_tokens or max_tool_calls") {
		t.Errorf("max_tool_calls 1000 under $0.04: %d %s", r.status, r.raw)
	}
	if r := e.do("POST", "/v1/responses", e.tenantA, `{"model":"openai:gpt-6-luna","max_tool_calls":"3","input":"news?"}`); r.status != 400 || strings.TrimPrefix(gjson.GetBytes(r.raw, "error.param").Str, "/") != "max_tool_calls" {
		t.Errorf("max_tool_calls a string: %d %s", r.status, r.raw)
	}
	e.must(e.do("POST", "/v1/responses", e.tenantA, limited("3")), 200)
}

// OpenAI's legacy web_search_preview costs $25 per 1,000 searches on the
// models that do not reason (gpt-4o-mini), $10 with the GA web_search:
// the request's tools say which, for the bill and for the hold.
func TestOpenAIPreviewSearchesBilledAtTheirRate(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-4o-mini","output":[`+
			`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"news"}},`+
			`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}]}],`+
			`"usage":{"input_tokens":1000,"input_tokens_details":{"cached_tokens":0},"output_tokens":100,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":1100}}`)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "sk-upstream-test"}))
	// gpt-4o-mini: 1,000 input at $0.15 and 100 output at $0.60 a million.
	tokens := (1000*0.15 + 100*0.60) / 1e6
	for tool, perK := range map[string]float64{"web_search": 10, "web_search_preview": 25, "web_search_preview_2025_03_11": 25} {
		r := e.do("POST", "/v1/responses", e.tenantA, `{"model":"openai:gpt-4o-mini","store":false,"tools":[{"type":"`+tool+`"}],"input":"news?"}`)
		if cost := r.num("usage.estimated_cost_usd"); r.status != 200 || math.Abs(cost-(tokens+perK/1e3)) > 1e-12 {
			t.Errorf("%s: %d, cost %v, want %v\n%s", tool, r.status, cost, tokens+perK/1e3, r.raw)
		}
	}
	// Held at it too (tenant b, nothing spent): 2 preview searches ($0.05)
	// are over $0.04, 2 of the GA tool's ($0.02) are not.
	e.must(e.do("PUT", "/v1/admin/budgets/b", e.admin, map[string]any{"dailyUsd": 0.04, "monthlyUsd": nil}), 200)
	body := `{"model":"openai:gpt-4o-mini","store":false,"max_output_tokens":100,"max_tool_calls":2,"tools":[{"type":"%s"}],"input":"news?"}`
	if r := e.do("POST", "/v1/responses", e.tenantB, strings.Replace(body, "%s", "web_search_preview", 1)); r.status != 400 || !strings.Contains(r.str("error.message"), "+ 2 web searches (max_tool_calls)") {
		t.Errorf("2 preview searches under $0.04: %d %s", r.status, r.raw)
	}
	e.must(e.do("POST", "/v1/responses", e.tenantB, strings.Replace(body, "%s", "web_search", 1)), 200)
}

// OpenAI's file search tool is billed per call ($2.50 per 1,000 on the
// built-in models), counted from a passed-through response's
// file_search_call items, whole and streamed (a failed call is not), and
// kept in the usage event.
func TestOpenAIFileSearchesBilled(t *testing.T) {
	output := `[{"type":"file_search_call","id":"fs_1","status":"completed","queries":["q"],"results":null},` +
		`{"type":"file_search_call","id":"fs_2","status":"completed","queries":["r"],"results":null},` +
		`{"type":"file_search_call","id":"fs_3","status":"failed","queries":["s"],"results":null},` +
		`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}]}]`
	up := toolCallsUpstream(t, output)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "sk-upstream-test"}))
	const want = (1000*0.10+100*0.50)/1e6 + 2*2.5/1e3
	body := `{"model":"openai:gpt-6-luna","store":false,"stream":%s,"metadata":{"cut":"%s"},"tools":[{"type":"file_search","vector_store_ids":["vs_1"]}],"input":"find it"}`
	for _, c := range []struct{ stream, cut string }{{"false", "no"}, {"true", "no"}, {"true", "yes"}} {
		r := e.do("POST", "/v1/responses", e.tenantA, strings.Replace(strings.Replace(body, "%s", c.stream, 1), "%s", c.cut, 1))
		if r.status != 200 {
			t.Fatalf("stream %s, cut %s: %d %s", c.stream, c.cut, r.status, r.raw)
		}
		if c.stream == "false" && math.Abs(r.num("usage.estimated_cost_usd")-want) > 1e-12 {
			t.Errorf("whole: cost %v, want %v\n%s", r.num("usage.estimated_cost_usd"), want, r.raw)
		}
	}
	for i, ev := range e.usageEvents("a", 3) {
		var u gateway.UsageRecord
		json.Unmarshal(ev.Data, &u)
		if u.Usage.FileSearches != 2 || u.CostUSD == nil || *u.CostUSD < 2*2.5/1e3 || !strings.Contains(string(ev.Data), `"file_search_calls":2`) {
			t.Errorf("usage event %d (%s): %s; want 2 file searches", i, u.Outcome, ev.Data)
		}
		if i < 2 && math.Abs(*u.CostUSD-want) > 1e-12 {
			t.Errorf("usage event %d: cost %v, want %v", i, *u.CostUSD, want)
		}
	}

	// Held for as many calls as max_tool_calls allows (tenant b, nothing
	// spent, $0.006): 3 ($0.0075) are over, 1 is not; with a web search
	// offered too, the calls are held at the dearer tool's rate, once.
	e.must(e.do("PUT", "/v1/admin/budgets/b", e.admin, map[string]any{"dailyUsd": 0.006, "monthlyUsd": nil}), 200)
	held := func(calls, tools string) response {
		return e.do("POST", "/v1/responses", e.tenantB, `{"model":"openai:gpt-6-luna","store":false,"max_output_tokens":100,"max_tool_calls":`+calls+`,"tools":[`+tools+`],"input":"find it"}`)
	}
	const fileTool, webTool = `{"type":"file_search","vector_store_ids":["vs_1"]}`, `{"type":"web_search"}`
	if r := held("3", fileTool); r.status != 400 || !strings.Contains(r.str("error.message"), "+ 3 file search calls (max_tool_calls)") ||
		!strings.Contains(r.str("error.message"), "set a lower max_output_tokens or max_tool_calls") {
		t.Errorf("3 file search calls under $0.006: %d %s", r.status, r.raw)
	}
	if r := held("1", fileTool+","+webTool); r.status != 400 || !strings.Contains(r.str("error.message"), "+ 1 web or file searches (max_tool_calls)") {
		t.Errorf("1 web or file search under $0.006: %d %s", r.status, r.raw)
	}
	e.must(held("1", fileTool), 200)
}

// toolCallsUpstream answers every Responses call on gpt-6-luna with output
// and 1,000 input and 100 output tokens; streamed, it sends each item but
// the last (the message) as a response.output_item.done, then, unless the
// body's metadata.cut is yes, response.completed.
func toolCallsUpstream(t *testing.T, output string) *httptest.Server {
	resp := func(status, out string) string {
		return `{"id":"resp_1","object":"response","created_at":1,"status":"` + status + `","model":"gpt-6-luna","output":` + out +
			`,"usage":{"input_tokens":1000,"input_tokens_details":{"cached_tokens":0},"output_tokens":100,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":1100}}`
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !gjson.GetBytes(b, "stream").Bool() {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, resp("completed", output))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "response.created", `{"type":"response.created","sequence_number":0,"response":`+resp("in_progress", "[]")+`}`)
		items := gjson.Parse(output).Array()
		for i, it := range items[:len(items)-1] {
			sse(w, "response.output_item.done", `{"type":"response.output_item.done","sequence_number":`+strconv.Itoa(i+1)+`,"output_index":`+strconv.Itoa(i)+`,"item":`+it.Raw+`}`)
		}
		if gjson.GetBytes(b, "metadata.cut").Str == "yes" {
			return // the upstream breaks before response.completed
		}
		sse(w, "response.completed", `{"type":"response.completed","sequence_number":9,"response":`+resp("completed", output)+`}`)
	}))
	t.Cleanup(up.Close)
	return up
}
