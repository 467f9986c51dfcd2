package http_test

import (
	"context"
	"strings"
	"testing"
)

// The fields Baton acts on in a passed-through body (a tier it prices, an
// id it looks up in the tenant's store) are refused in another type, as
// the translated path refuses them, before any upstream call.
func TestPassedThroughFieldsBatonReadsMustBeStrings(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, f))
	before, _ := e.store.Head(context.Background())
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	for _, tc := range []struct {
		name, path, param string
		body              map[string]any
	}{
		{"chat tier a number", "/v1/chat/completions", "service_tier", map[string]any{"model": "openai:gpt-4o-mini", "messages": msgs, "service_tier": 5}},
		{"chat tier an object", "/v1/chat/completions", "service_tier", map[string]any{"model": "openai:gpt-4o-mini", "messages": msgs, "service_tier": map[string]any{"a": 1}}},
		{"responses tier", "/v1/responses", "service_tier", map[string]any{"model": "openai:gpt-4o-mini", "input": "hi", "service_tier": 5}},
		{"responses previous id a number", "/v1/responses", "previous_response_id", map[string]any{"model": "openai:gpt-4o-mini", "input": "hi", "previous_response_id": 5}},
		{"responses previous id a list", "/v1/responses", "previous_response_id", map[string]any{"model": "openai:gpt-4o-mini", "input": "hi", "previous_response_id": []any{"resp_1"}}},
	} {
		r := e.do("POST", tc.path, e.tenantA, tc.body)
		// The chat front's type errors name a pointer (/max_tokens), as before.
		if r.status != 400 || strings.TrimPrefix(r.str("error.param"), "/") != tc.param {
			t.Errorf("%s: %d %s; want 400 naming %s", tc.name, r.status, r.raw, tc.param)
		}
	}
	if n := f.calls.Load(); n != 0 {
		t.Fatalf("%d upstream calls", n)
	}
	if after, _ := e.store.Head(context.Background()); after != before {
		t.Fatal("a refused request appended events")
	}
	// null is as absent.
	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "messages": msgs, "service_tier": nil}), 200)
}
