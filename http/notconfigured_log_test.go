package http_test

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/gateway"
)

// A call naming a provider that has no key here is refused 503
// provider_not_configured, the client's choice and no failure of the
// server: logged at warn, not error (it filled the error log with what
// clients asked for).
func TestNotConfiguredLoggedAsWarning(t *testing.T) {
	var logs syncBuffer
	envLog = &logs
	t.Cleanup(func() { envLog = nil })
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, cat)
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	for _, c := range []struct {
		path    string
		body    map[string]any
		headers []string
	}{
		{"/v1/chat/completions", map[string]any{"model": "anthropic:claude-haiku-4-5", "messages": msgs}, nil},
		{"/v1/messages", map[string]any{"model": "claude-nope", "max_tokens": 5, "messages": msgs}, []string{"anthropic-version", "2023-06-01"}},
		{"/v1/generate", map[string]any{"type": "summarize", "input": map[string]any{"text": "a"}, "options": map[string]any{"llm": map[string]any{"model": "openai:gpt-4o-mini"}}}, nil},
	} {
		r := e.do("POST", c.path, e.tenantA, c.body, c.headers...)
		if r.status != 503 || !strings.Contains(string(r.raw), "provider_not_configured") && !strings.Contains(string(r.raw), "not configured") {
			t.Fatalf("%s: %d %s", c.path, r.status, r.raw)
		}
	}
	out := logs.String()
	if strings.Contains(out, `"level":"error"`) || strings.Count(out, `"level":"warn"`) != 3 || !strings.Contains(out, "not configured") {
		t.Fatalf("logged:\n%s", out)
	}
}

// A provider refusing the request (400 upstream_rejected_request) and a
// mode no model serves (503 no_route) are the client's or the upstream's
// outcome, not a failure of the server: logged at warn, not error.
func TestRefusalsLoggedAsWarnings(t *testing.T) {
	var logs syncBuffer
	envLog = &logs
	t.Cleanup(func() { envLog = nil })
	u := newScripted(t, "STATUS 400", "STATUS 400", "STATUS 400")
	e := scriptedEnv(t, u)
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	for _, c := range []struct {
		path string
		body map[string]any
		code string
	}{
		{"/v1/chat/completions", map[string]any{"model": "openai:gpt-4o-mini", "messages": msgs}, "upstream_rejected_request"},
		{"/v1/responses", map[string]any{"model": "openai:gpt-4o-mini", "input": "hi"}, "upstream_rejected_request"},
		{"/v1/generate", map[string]any{"type": "summarize", "input": map[string]any{"text": "a"}, "options": map[string]any{"maxAttempts": 1, "llm": map[string]any{"model": "openai:gpt-4o-mini"}}}, "upstream_rejected_request"},
	} {
		if r := e.do("POST", c.path, e.tenantA, c.body); !strings.Contains(string(r.raw), c.code) {
			t.Fatalf("%s: %d %s", c.path, r.status, r.raw)
		}
	}
	// Only the development model, which takes no tools: no model of the
	// mode serves a call offering one.
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	local := newEnvWith(t, cat)
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "f", "parameters": map[string]any{"type": "object"}}}}
	if r := local.do("POST", "/v1/chat/completions", local.tenantA, map[string]any{"model": "cheap", "messages": msgs, "tools": tools}); r.status != 503 || !strings.Contains(string(r.raw), "no_route") {
		t.Fatalf("no route: %d %s", r.status, r.raw)
	}
	out := logs.String()
	if strings.Contains(out, `"level":"error"`) || strings.Count(out, `"level":"warn"`) != 4 {
		t.Fatalf("logged:\n%s", out)
	}
}
