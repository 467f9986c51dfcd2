package http_test

import (
	"strings"
	"testing"
)

// A conversation moved between providers (Codex's /model) carries each
// provider's reasoning items. Passed through to OpenAI, the body goes
// without Baton's (Claude's signature, which OpenAI cannot read);
// translated to Claude, OpenAI's encrypted reasoning is left out and
// Baton's is the thinking block it carries.
func TestReasoningItemsGoOnlyWhereTheyCanBeRead(t *testing.T) {
	const (
		ours    = "rs_0123456789abcdef0123456789abcdef_0"
		openais = "rs_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b"
	)
	input := []any{
		map[string]any{"role": "user", "content": "2+2?"},
		map[string]any{"type": "reasoning", "id": ours, "summary": []any{map[string]any{"type": "summary_text", "text": "add"}}, "encrypted_content": "claude-signature"},
		map[string]any{"type": "reasoning", "id": openais, "summary": []any{}, "encrypted_content": "gAAAAopenai"},
		map[string]any{"role": "assistant", "content": "4"},
		map[string]any{"role": "user", "content": "and 3+3?"},
	}
	const answer = `{"id":"resp_up1","object":"response","created_at":1,"status":"completed","model":"gpt-4o-mini","output":[{"type":"message","id":"msg_up1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"6","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":1,"total_tokens":6}}`
	e, up := goldenEnv(t, "", answer, "openai")
	e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "input": input}), 200)
	if got := string(up.last(t).body); strings.Contains(got, ours) || !strings.Contains(got, openais) {
		t.Fatalf("passed through to OpenAI: %s", got)
	}

	e, up = goldenEnv(t, oneHourStream, oneHourMessage, "anthropic")
	e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "input": input}), 200)
	if got := string(up.last(t).body); !strings.Contains(got, `"signature":"claude-signature"`) || strings.Contains(got, "gAAAAopenai") {
		t.Fatalf("translated to Claude: %s", got)
	}
}
