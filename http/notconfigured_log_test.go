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
