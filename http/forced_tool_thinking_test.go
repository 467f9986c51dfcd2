package http_test

import (
	"strings"
	"testing"
)

// A forced tool choice with reasoning on, to an Anthropic model through
// the chat and Responses fronts, is a 400 naming tool_choice before any
// upstream call: Anthropic refuses the pair, and its 400 would name its
// own fields. With tool_choice auto the same call goes.
func TestForcedToolWithReasoningToAnthropic(t *testing.T) {
	e, f := newGatewayEnv(t)
	chatTools := `"tools":[{"type":"function","function":{"name":"get","parameters":{"type":"object"}}}]`
	respTools := `"tools":[{"type":"function","name":"get","parameters":{"type":"object"}}]`
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"anthropic:claude-opus-5-5","reasoning_effort":"high","tool_choice":"required","messages":[{"role":"user","content":"hi"}],` + chatTools + `}`},
		{"/v1/chat/completions", `{"model":"anthropic:claude-opus-5-5","reasoning_effort":"high","tool_choice":{"type":"function","function":{"name":"get"}},"messages":[{"role":"user","content":"hi"}],` + chatTools + `}`},
		{"/v1/responses", `{"model":"anthropic:claude-opus-5-5","reasoning":{"effort":"high"},"tool_choice":"required","input":"hi",` + respTools + `}`},
	} {
		before := f.calls.Load()
		r := e.must(e.do("POST", tc.path, "", tc.body, "Authorization", "Bearer "+e.tenantA), 400)
		if !strings.Contains(string(r.raw), `"param":"tool_choice"`) || f.calls.Load() != before {
			t.Fatalf("%s: %s (upstream calls %d more)", tc.path, r.raw, f.calls.Load()-before)
		}
	}
	e.must(e.do("POST", "/v1/chat/completions", "", `{"model":"anthropic:claude-opus-5-5","reasoning_effort":"high","tool_choice":"auto","messages":[{"role":"user","content":"hi"}],`+chatTools+`}`,
		"Authorization", "Bearer "+e.tenantA), 200)
}
