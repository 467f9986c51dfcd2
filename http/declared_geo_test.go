package http_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/gateway"
)

// generate's maxCostUsd is checked against each attempt's worst case in
// the geography it is held at: with the workspace's default declared as
// the US, a ceiling between the standard and the US worst case is a 422
// before any upstream call.
func TestGenerateCostCeilingInTheDeclaredGeo(t *testing.T) {
	up, calls := countingUpstream(t, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{"type":"text","text":`+
		strconv.Quote(validSummary)+`}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":200,"output_tokens":50}}`)
	vars := map[string]string{"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "k", "BATON_ANTHROPIC_DEFAULT_INFERENCE_GEO": "us"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, cat)
	standard := summarizeWorst(e, "anthropic:claude-opus-5-5")
	body := genBody(map[string]any{"options": map[string]any{"llm": map[string]any{"model": "anthropic:claude-opus-5-5", "maxCostUsd": standard * 1.05}}})
	r := e.do("POST", "/v1/generate", e.tenantA, body)
	if r.status != 422 || r.str("code") != "cost_ceiling_exceeded" || calls.Load() != 0 {
		t.Fatalf("a ceiling between the standard ($%.6f) and the US ($%.6f) worst case: %d (upstream calls %d) %s",
			standard, standard*1.1, r.status, calls.Load(), r.raw)
	}
	if !strings.Contains(gjson.GetBytes(r.raw, "fields.0.message").Str, "in the us, where anthropic:claude-opus-5-5's provider runs a call that names no inference_geo") {
		t.Errorf("the refusal does not say where the call is held: %s", r.raw)
	}
}

// A Messages body naming inference_geo global whose chain also holds a
// model that does not speak Messages (a fallback) is decoded for that
// model; the Anthropic attempt, passed through with global in its body,
// is held and billed at the standard rates, not in the workspace's
// declared default.
func TestExplicitGlobalOnAMixedChain(t *testing.T) {
	stream, whole := anthropicAnswer(`,"speed":"standard"`) // says no geography
	_, srv := recordingServer(t, stream, whole)
	vars := map[string]string{"ANT_KEY": "k", "COMPAT_KEY": "k"}
	cat := catalogWith(t, vars,
		gateway.ProviderSpec{Name: "ant", Kind: "anthropic", BaseURL: srv.URL, KeyEnv: "ANT_KEY", DefaultInferenceGeo: "us", Models: []gateway.ModelSpec{
			{Name: "claude-opus-5-5", ContextTokens: 1000000, SupportsJSON: true, SupportsTools: true, Modes: []string{"premium"}, Fallbacks: []string{"compat:m1"},
				Pricing: &gateway.Price{InputPerMTok: 4, OutputPerMTok: 20, CacheReadPerMTok: 0.20, CacheWritePerMTok: 5, CacheWrite1hPerMTok: 8, USRate: 1.1, Source: "test"}}}},
		gateway.ProviderSpec{Name: "compat", Kind: "openai-compatible", BaseURL: srv.URL + "/v1", KeyEnv: "COMPAT_KEY", Models: []gateway.ModelSpec{
			{Name: "m1", ContextTokens: 100000, SupportsJSON: true, SupportsTools: true, Modes: []string{"cheap"}, Pricing: &gateway.Price{InputPerMTok: 0.10, OutputPerMTok: 0.50, Source: "test"}}}},
	)
	e := newEnvWith(t, cat)

	// Billed: the answer names no geography, the request named global.
	standard := (12*4 + 4000*0.20 + 57*20) / 1e6
	status, raw := postMessages(t, e, `{"model":"ant:claude-opus-5-5","max_tokens":100,"inference_geo":"global","messages":[{"role":"user","content":"hi"}]}`)
	if cost := gjsonFloat(raw, "usage.estimated_cost_usd"); status != 200 || cost > standard*1.0001 {
		t.Errorf("inference_geo global, mixed chain: %d, cost %v, want %v (1.1x: %v)\n%s", status, cost, standard, 1.1*standard, raw)
	}

	// Held: the standard worst case (~$0.0208) fits in $0.0218, the US one (~$0.0229) does not.
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 0.0218 + standard, "monthlyUsd": nil}), 200)
	status, raw = postMessages(t, e, `{"model":"ant:claude-opus-5-5","max_tokens":1000,"inference_geo":"global","messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 {
		t.Errorf("inference_geo global, mixed chain, under $0.0218 after one call: %d %s", status, raw)
	}
}

func gjsonFloat(raw []byte, path string) float64 { return gjson.GetBytes(raw, path).Float() }
