package http_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/batonhq/baton/gateway"
)

// A translated answer says the usage that was billed: an upstream that
// counts 99,999,999 output tokens for a call capped at 16 is billed the
// cap, and the answer says the cap, beside the cost of it, on the Messages
// and Responses fronts (generate's answer has said it since 2026-11-28).
func TestTranslatedAnswerSaysTheUsageBilled(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":99999999}}`)
	}))
	t.Cleanup(up.Close)
	vars := map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "k"}
	e := newEnvWith(t, catalogWith(t, vars))
	msg := e.must(e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 16,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}}), 200)
	var rec gateway.UsageRecord
	if err := json.Unmarshal(e.usageEvents("a", 1)[0].Data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Usage.OutputTokens != 16 {
		t.Fatalf("billed %+v", rec.Usage)
	}
	if got := msg.str("usage.output_tokens"); got != "16" {
		t.Errorf("messages: the answer says %s output tokens, the bill %d: %s", got, rec.Usage.OutputTokens, msg.raw)
	}
	if got, err := strconv.ParseFloat(msg.str("usage.estimated_cost_usd"), 64); err != nil || got != *rec.CostUSD {
		t.Errorf("messages: cost %s, billed %v", msg.str("usage.estimated_cost_usd"), *rec.CostUSD)
	}
	// Responses on an OpenAI-compatible server, which has no Responses
	// API: translated to chat completions. Such a server's output is
	// bounded by the model's context (1,000 here), not the cap.
	e = newEnvWith(t, catalogWith(t, vars, gateway.ProviderSpec{Name: "compat", Kind: "openai-compatible",
		BaseURL: up.URL + "/v1", KeyEnv: "OPENAI_API_KEY", Models: []gateway.ModelSpec{{Name: "m", ContextTokens: 1000}}}))
	res := e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "compat:m", "max_output_tokens": 16, "input": "hi"}), 200)
	if err := json.Unmarshal(e.usageEvents("a", 1)[0].Data, &rec); err != nil {
		t.Fatal(err)
	}
	if got := res.str("usage.output_tokens"); got != strconv.Itoa(rec.Usage.OutputTokens) || rec.Usage.OutputTokens != 1000 {
		t.Errorf("responses: the answer says %s output tokens, billed %d: %s", got, rec.Usage.OutputTokens, res.raw)
	}
}
