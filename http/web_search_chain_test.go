package http_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/gateway"
)

// A Responses body whose chain also holds a model that does not speak the
// Responses API is decoded for it (Codex's cache-only web search is
// dropped there); the OpenAI attempt, passed through and billed per
// search, is still held for the searches max_tool_calls allows.
func TestSearchesHeldOnAMixedResponsesChain(t *testing.T) {
	up, calls := countingUpstream(t, `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-6-luna","output":[`+
		`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"a"}},`+
		`{"type":"web_search_call","id":"ws_2","status":"completed","action":{"type":"search","query":"b"}},`+
		`{"type":"web_search_call","id":"ws_3","status":"completed","action":{"type":"search","query":"c"}},`+
		`{"type":"web_search_call","id":"ws_4","status":"completed","action":{"type":"search","query":"d"}},`+
		`{"type":"web_search_call","id":"ws_5","status":"completed","action":{"type":"search","query":"e"}},`+
		`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}]}],`+
		`"usage":{"input_tokens":1000,"input_tokens_details":{"cached_tokens":0},"output_tokens":100,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":1100}}`)
	vars := map[string]string{"OAI_KEY": "k", "COMPAT_KEY": "k"}
	price := &gateway.Price{InputPerMTok: 0.10, OutputPerMTok: 0.50, WebSearchPerK: 10, Source: "test"}
	cat := catalogWith(t, vars,
		gateway.ProviderSpec{Name: "oai", Kind: "openai", BaseURL: up.URL + "/v1", KeyEnv: "OAI_KEY", Models: []gateway.ModelSpec{
			{Name: "gpt-6-luna", ContextTokens: 100000, SupportsJSON: true, SupportsTools: true, Modes: []string{"cheap"}, Pricing: price, Fallbacks: []string{"compat:m1"}}}},
		gateway.ProviderSpec{Name: "solo", Kind: "openai", BaseURL: up.URL + "/v1", KeyEnv: "OAI_KEY", Models: []gateway.ModelSpec{
			{Name: "gpt-6-luna", ContextTokens: 100000, SupportsJSON: true, SupportsTools: true, Modes: []string{"cheap"}, Pricing: price}}},
		gateway.ProviderSpec{Name: "compat", Kind: "openai-compatible", BaseURL: up.URL + "/v1", KeyEnv: "COMPAT_KEY", Models: []gateway.ModelSpec{
			{Name: "m1", ContextTokens: 100000, SupportsJSON: true, SupportsTools: true, Modes: []string{"cheap"}, Pricing: &gateway.Price{InputPerMTok: 0.10, OutputPerMTok: 0.50, Source: "test"}}}},
	)
	e := newEnvWith(t, cat)
	// Tokens: at most ~$0.0001; 5 searches: $0.05. A daily $0.04 cannot
	// hold 5 searches.
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 0.04, "monthlyUsd": nil}), 200)
	body := `{"model":"oai:gpt-6-luna","store":false,"max_output_tokens":100,"max_tool_calls":5,"tools":[{"type":"web_search","external_web_access":false}],"input":"news?"}`
	r := e.do("POST", "/v1/responses", e.tenantA, body)
	if r.status == 200 {
		t.Errorf("max_tool_calls 5 under $0.04 was held for no search and passed through (upstream calls %d); billed %v:\n%s",
			calls.Load(), r.num("usage.estimated_cost_usd"), r.raw)
	} else if !strings.Contains(string(r.raw), "max_tool_calls") {
		t.Errorf("%d %s", r.status, r.raw)
	}
	// Control: without the fallback (every model speaks Responses) the
	// same body is refused before the upstream.
	before := calls.Load()
	r = e.do("POST", "/v1/responses", e.tenantA, strings.Replace(body, "oai:gpt-6-luna", "solo:gpt-6-luna", 1))
	if r.status != 400 || calls.Load() != before || !strings.Contains(string(r.raw), "+ 5 web searches (max_tool_calls)") {
		t.Errorf("control, solo: %d %s", r.status, r.raw)
	}
}

// countingUpstream answers every request with the JSON body answer, and
// counts the requests.
func countingUpstream(t *testing.T, answer string) (*httptest.Server, *atomic.Int32) {
	calls := new(atomic.Int32)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	t.Cleanup(up.Close)
	return up, calls
}
