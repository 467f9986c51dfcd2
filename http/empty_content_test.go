package http_test

import (
	"context"
	"strings"
	"testing"
)

// A translated request whose messages are all empty is refused before any
// upstream call (Anthropic refuses empty text, which translation drops,
// and would be sent no message at all), with nothing appended.
func TestEmptyMessagesRefusedBeforeTranslation(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, f))
	before, _ := e.store.Head(context.Background())
	tests := []struct {
		name, path string
		body       map[string]any
		param      string
	}{
		{"chat to Claude, empty text", "/v1/chat/completions", map[string]any{"model": "anthropic:claude-haiku-4-5",
			"messages": []any{map[string]any{"role": "user", "content": ""}}}, "messages"},
		{"chat to Claude, empty parts", "/v1/chat/completions", map[string]any{"model": "anthropic:claude-haiku-4-5",
			"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": ""}}}}}, "messages"},
		{"messages to OpenAI, no blocks", "/v1/messages", map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 5,
			"messages": []any{map[string]any{"role": "user", "content": []any{}}}}, "messages"},
		{"messages to OpenAI, streamed", "/v1/messages", map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 5, "stream": true,
			"messages": []any{map[string]any{"role": "user", "content": ""}}}, "messages"},
		{"responses to Claude", "/v1/responses", map[string]any{"model": "anthropic:claude-haiku-4-5", "input": ""}, "input"},
		{"responses to Claude, empty item", "/v1/responses", map[string]any{"model": "anthropic:claude-haiku-4-5",
			"input": []any{map[string]any{"role": "user", "content": []any{}}}}, "input"},
	}
	for _, tt := range tests {
		r := e.do("POST", tt.path, e.tenantA, tt.body)
		if r.status != 400 || r.str("error.type") != "invalid_request_error" || !strings.Contains(r.str("error.message"), tt.param+" holds no content") && !strings.Contains(r.str("error.message"), tt.param+" hold no content") {
			t.Errorf("%s: %d %s; want 400 naming %s", tt.name, r.status, r.raw, tt.param)
		}
	}
	if n := f.calls.Load(); n != 0 {
		t.Fatalf("%d upstream calls for requests with nothing to send", n)
	}
	if after, _ := e.store.Head(context.Background()); after != before {
		t.Fatal("a refused request appended events")
	}
	// One empty turn among others is dropped, not refused.
	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5",
		"messages": []any{map[string]any{"role": "user", "content": "a"}, map[string]any{"role": "assistant", "content": ""},
			map[string]any{"role": "user", "content": "b"}}}), 200)
}
