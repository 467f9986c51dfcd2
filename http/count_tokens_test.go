package http_test

import (
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
)

// POST /v1/messages/count_tokens, through the official Anthropic SDK: an
// Anthropic provider's model is counted by the provider (the model id
// rewritten, the body otherwise as sent); any other model is estimated
// locally and says so.
func TestCountTokens(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, f))
	client := newAnthropicClient(e, http.DefaultClient, e.tenantA)
	msgs := []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewTextBlock("hello baton")),
		anthropic.NewAssistantMessage(anthropic.NewTextBlock("hello")),
		anthropic.NewUserMessage(anthropic.NewTextBlock("count me")),
	}
	got, err := client.Messages.CountTokens(testCtx(t), anthropic.MessageCountTokensParams{Model: "anthropic:claude-haiku-4-5", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if got.InputTokens != 1003 {
		t.Fatalf("the upstream's count: %d, want 1003", got.InputTokens)
	}

	r := e.must(e.do("POST", "/v1/messages/count_tokens", e.tenantA, map[string]any{"model": "local:echo",
		"messages": []any{map[string]any{"role": "user", "content": "hello baton, how many tokens is this?"}}}), 200)
	if n := r.num("input_tokens"); n < 5 || n > 40 || r.str("svc.estimate") != "true" {
		t.Fatalf("a local estimate: %s", r.raw)
	}

	for _, tt := range []struct {
		name   string
		body   any
		status int
		typ    string
	}{
		{"no model", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}}}, 400, "invalid_request_error"},
		{"unknown model", map[string]any{"model": "nope:nope", "messages": []any{map[string]any{"role": "user", "content": "x"}}}, 404, "not_found_error"},
		{"not JSON", "{", 400, "invalid_request_error"},
	} {
		r := e.do("POST", "/v1/messages/count_tokens", e.tenantA, tt.body)
		if r.status != tt.status || r.str("type") != "error" || r.str("error.type") != tt.typ {
			t.Errorf("%s: %d %s", tt.name, r.status, r.raw)
		}
	}
	if r := e.do("POST", "/v1/messages/count_tokens", "", map[string]any{"model": "local:echo"}); r.status != 401 || r.str("error.type") != "authentication_error" {
		t.Errorf("no key: %d %s", r.status, r.raw)
	}
}
