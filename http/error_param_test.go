package http_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/batonhq/baton/gateway"
)

// A refused field is named in each front's own form: OpenAI's error.param
// is the dotted path with indices in brackets (messages[0].content), never
// a JSON pointer (it was /temperature for a wrong type, messages/0/content
// for a bad message, max_tokens elsewhere); Anthropic's message is led by
// the dotted path (messages.0.content: ...), as Anthropic's are.
func TestErrorParamInTheFrontsForm(t *testing.T) {
	e, _ := newGatewayEnv(t)
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	for _, c := range []struct {
		body       map[string]any
		param, msg string
	}{
		{map[string]any{"model": "local:echo", "messages": msgs, "temperature": "hot"}, "temperature", "temperature: must be a number, not string"},
		{map[string]any{"model": "local:echo", "messages": msgs, "max_tokens": -1}, "max_tokens", ""},
		{map[string]any{"model": "local:echo", "messages": []any{map[string]any{"role": "user", "content": 5}}}, "messages[0].content", ""},
		{map[string]any{"model": "local:echo", "messages": []any{map[string]any{"role": "bogus", "content": "hi"}}}, "messages[0].role", ""},
		{map[string]any{"model": "local:echo", "messages": msgs, "tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": 5}}}}, "tools[0].function.name", "tools[0].function.name: must be a string, not number"},
		{map[string]any{"model": "local:echo", "messages": msgs, "response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{}}}, "response_format.json_schema.name", ""},
	} {
		r := e.do("POST", "/v1/chat/completions", e.tenantA, c.body)
		if r.status != 400 || r.str("error.param") != c.param || c.msg != "" && r.str("error.message") != c.msg {
			t.Errorf("chat %v: %d %s", c.body, r.status, r.raw)
		}
	}
	for _, c := range []struct {
		body map[string]any
		msg  string
	}{
		{map[string]any{"model": "local:echo", "max_tokens": 10, "messages": msgs, "temperature": "hot"}, "temperature: must be a number, not string"},
		{map[string]any{"model": "local:echo", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": 5}}}, "messages.0.content: must be a string or an array of content blocks"},
		{map[string]any{"model": "local:echo", "max_tokens": 10, "messages": []any{map[string]any{"role": "bogus", "content": "hi"}}}, "messages.0.role: role must be user, assistant or system"},
		{map[string]any{"model": "local:echo", "max_tokens": 10, "messages": msgs, "tools": []any{map[string]any{"name": 5}}}, "tools.0.name: must be a string, not number"},
		{map[string]any{"model": "local:echo", "max_tokens": -1, "messages": msgs}, "max_tokens: must be at least 1"},
	} {
		r := e.do("POST", "/v1/messages", e.tenantA, c.body, "anthropic-version", "2023-06-01")
		if r.status != 400 || r.str("error.type") != "invalid_request_error" || r.str("error.message") != c.msg {
			t.Errorf("messages %v: %d %s", c.body, r.status, r.raw)
		}
	}
}

// A model whose provider has no key here is the request's model at fault,
// named in param as a model no provider serves (model_not_found) or a mode
// no model serves (no_route) are: the client's to change.
func TestProviderNotConfiguredNamesTheModel(t *testing.T) {
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, cat)
	for path, body := range map[string]map[string]any{
		"/v1/chat/completions": {"model": "anthropic:claude-haiku-4-5", "messages": []any{map[string]any{"role": "user", "content": "hi"}}},
		"/v1/responses":        {"model": "openai:gpt-4o-mini", "input": "hi"},
	} {
		r := e.do("POST", path, e.tenantA, body)
		if r.status != 503 || r.str("error.code") != "provider_not_configured" || r.str("error.param") != "model" {
			t.Errorf("%s: %d %s", path, r.status, r.raw)
		}
	}
}

// A name given twice in a Responses input item, passed through, is named
// as OpenAI names a field of an item: input[0].role, not input.0.role.
func TestDuplicateInputFieldParamInOpenAIForm(t *testing.T) {
	e, _ := newGatewayEnv(t)
	r := e.do("POST", "/v1/responses", e.tenantA, `{"model":"openai:gpt-4o-mini","input":[{"role":"user","role":"user","content":"x"}]}`)
	if r.status != 400 || r.str("error.code") != "duplicate_field" || r.str("error.param") != "input[0].role" || !strings.Contains(r.str("error.message"), `"input[0].role"`) {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}

// oaPath is a JSON pointer to a field (messages/0/content) in OpenAI's
// form (messages[0].content); anPath in Anthropic's (messages.0.content).
func oaPath(p string) string {
	p = regexp.MustCompile(`/(\d+)(/|$)`).ReplaceAllString(strings.TrimPrefix(p, "/"), "[$1]$2")
	p = regexp.MustCompile(`/(\d+)(/|$)`).ReplaceAllString(p, "[$1]$2") // adjacent indices
	return strings.ReplaceAll(p, "/", ".")
}

func anPath(p string) string { return strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", ".") }
