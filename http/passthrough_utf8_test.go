package http_test

import (
	"context"
	"strings"
	"testing"
)

// A body that is not UTF-8 is refused on the passed-through path as on
// translation (JSON text is UTF-8), before any upstream call, in the
// front's own error shape, with nothing appended.
func TestPassthroughRefusesInvalidUTF8(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, f))
	before, _ := e.store.Head(context.Background())
	for _, c := range []struct{ path, body, errType string }{
		{"/v1/chat/completions", "{\"model\":\"openai:gpt-4o-mini\",\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}", "invalid_request_error"},
		{"/v1/responses", "{\"model\":\"openai:gpt-4o-mini\",\"input\":\"\xff\"}", "invalid_request_error"},
		{"/v1/messages", "{\"model\":\"anthropic:claude-haiku-4-5\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"\xc3\"}]}", "invalid_request_error"},
		{"/v1/messages/count_tokens", "{\"model\":\"anthropic:claude-haiku-4-5\",\"messages\":[{\"role\":\"user\",\"content\":\"\xed\xa0\x80\"}]}", "invalid_request_error"},
	} {
		r := e.do("POST", c.path, e.tenantA, c.body)
		msg := r.str("error.message")
		if r.status != 400 || r.str("error.type") != c.errType || !strings.Contains(msg, "UTF-8 (at byte ") {
			t.Errorf("%s: %d %s; want 400 naming UTF-8", c.path, r.status, r.raw)
		}
	}
	if n := f.calls.Load(); n != 0 {
		t.Fatalf("%d upstream calls for bodies that are not UTF-8", n)
	}
	if after, _ := e.store.Head(context.Background()); after != before {
		t.Fatal("a refused request appended events")
	}
}
