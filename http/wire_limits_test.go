package http_test

import (
	"strings"
	"testing"
)

// Paths of OpenAI's API that Baton does not serve answer in OpenAI's error
// shape (an OpenAI SDK parses it), paths under /v1/messages in
// Anthropic's; Baton's own unknown paths stay problem documents.
func TestUnknownPathsAnswerInTheirAPIsShape(t *testing.T) {
	e := newEnvWith(t, gatewayCatalog(t, newFakeUpstreams(t)))
	for _, tt := range []struct {
		method, path, shape string
		status              int
	}{
		{"GET", "/v1/responses/resp_123/input_items", "openai", 404},
		{"PUT", "/v1/responses/resp_123", "openai", 405},
		{"DELETE", "/v1/responses/resp_123", "openai", 404}, // an unknown id
		{"POST", "/v1/embeddings", "openai", 404},
		{"POST", "/v1/completions", "openai", 404},
		{"POST", "/v1/chat/nope", "openai", 404},
		{"POST", "/v1/messages/batches", "anthropic", 404},
		{"GET", "/v1/messages", "anthropic", 405},
		{"GET", "/v1/nothing-here", "problem", 404},
		{"POST", "/v1/responsesx", "problem", 404},
		// OpenAI's endpoints on paths Baton serves other methods of: a 404
		// (NotFoundError to the SDK), not a 405.
		{"GET", "/v1/chat/completions", "openai", 404},
		{"DELETE", "/v1/models/openai:gpt-4o-mini", "openai", 404},
		// A path both APIs have, from the Anthropic SDK: its shape.
		{"GET", "/v1/files", "anthropic-sdk", 404},
	} {
		var headers []string
		if tt.shape == "anthropic-sdk" {
			headers, tt.shape = []string{"anthropic-version", "2023-06-01"}, "anthropic"
		}
		r := e.do(tt.method, tt.path, e.tenantA, `{}`, headers...)
		if r.status != tt.status {
			t.Errorf("%s %s: %d %s", tt.method, tt.path, r.status, r.raw)
			continue
		}
		var ok bool
		switch tt.shape {
		case "openai":
			ok = r.str("error.type") == "invalid_request_error" && r.str("error.code") != "" && r.str("type") == ""
		case "anthropic":
			ok = r.str("type") == "error" && r.str("error.type") != "" && r.str("request_id") != ""
		case "problem":
			ok = strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json")
		}
		if !ok {
			t.Errorf("%s %s: not in %s's shape: %s", tt.method, tt.path, tt.shape, r.raw)
		}
	}
}

// The model calls take bodies far over the ledger's limit (a long agent
// session's history), up to their own limit; the ledger keeps its own.
func TestModelCallsTakeLargeBodies(t *testing.T) {
	e := newEnvWith(t, gatewayCatalog(t, newFakeUpstreams(t)))       // MaxBody 64 KiB, MaxModelBody the default
	history := strings.Repeat("lorem ipsum dolor sit amet ", 80_000) // about 2 MiB
	msgs := []map[string]any{{"role": "user", "content": history}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "hello"}}
	r := e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "local:echo", "max_tokens": 16, "messages": msgs})
	if r.status != 200 {
		t.Fatalf("a 2 MiB messages body: %d %.300s", r.status, r.raw)
	}
	r = e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "local:echo", "messages": msgs})
	if r.status != 200 {
		t.Fatalf("a 2 MiB chat body: %d %.300s", r.status, r.raw)
	}
	r = e.do("POST", "/v1/handoff/contracts", e.tenantA, map[string]any{"objective": history})
	if r.status != 413 || r.str("code") != "body_too_large" {
		t.Fatalf("a 2 MiB contract: %d %.300s", r.status, r.raw)
	}
}

// The model calls' limit is 32 MiB by default, on each of the four routes,
// and a body past it is a 413 in its API's error shape.
func TestModelCallsLimitIs32MiB(t *testing.T) {
	e := newEnvWith(t, gatewayCatalog(t, newFakeUpstreams(t)))
	big := `{"model":"local:echo","max_tokens":16,"input":"x","messages":[{"role":"user","content":"` + strings.Repeat("a", 32<<20) + `"}]}`
	for _, path := range []string{"/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/messages/count_tokens"} {
		r := e.do("POST", path, e.tenantA, big)
		anthropic := strings.HasPrefix(path, "/v1/messages")
		if r.status != 413 || anthropic && (r.str("type") != "error" || r.str("error.type") != "request_too_large") ||
			!anthropic && (r.str("error.type") != "invalid_request_error" || r.str("error.message") == "") {
			t.Errorf("%s, 32 MiB and more: %d %.300s", path, r.status, r.raw)
		}
	}
}
