package http_test

import (
	"strings"
	"testing"
)

// A 405 names the methods the path does take (RFC 9110 requires Allow).
func TestMethodNotAllowedSaysWhatIsAllowed(t *testing.T) {
	e := newEnvWith(t, gatewayCatalog(t, newFakeUpstreams(t)))
	tests := []struct{ method, path, allow string }{
		{"PUT", "/v1/handoff/contracts", "GET, HEAD, POST"}, // HEAD is served as the GET
		{"DELETE", "/v1/generate", "POST"},
		{"PUT", "/v1/chat/completions", "POST"},
		{"PATCH", "/v1/messages", "POST"},
		{"POST", "/", "GET, HEAD"},
		{"GET", "/v1/models/sync", "POST"},
		{"DELETE", "/v1/models/sync", "POST"}, // GET below /v1/models is a model's, not this path's
		{"PUT", "/v1/models/health/batch", "POST"},
		{"PUT", "/v1/models/openai:gpt-4o-mini", "GET, HEAD"}, // DELETE is OpenAI's, a 404 (wire_limits_test.go)
		{"HEAD", "/v1/events", "GET"},                         // an event stream's HEAD would run on unseen: not served
		{"PUT", "/v1/events", "GET"},
	}
	for _, tt := range tests {
		r := e.do(tt.method, tt.path, e.tenantA, nil)
		if r.status != 405 || r.header.Get("Allow") != tt.allow {
			t.Errorf("%s %s: %d, Allow %q; want 405, Allow %q (%s)", tt.method, tt.path, r.status, r.header.Get("Allow"), tt.allow, r.raw)
		}
	}
}

// A WebSocket handshake on a path that takes only POST is a 426 in the
// front's shape: Codex tries one on /v1/responses and, on a 426, posts at
// once (on a 405 it retried the handshake for seconds first).
func TestWebSocketHandshakeIsAnswered426(t *testing.T) {
	e := newEnvWith(t, gatewayCatalog(t, newFakeUpstreams(t)))
	ws := []string{"Connection", "keep-alive, Upgrade", "Upgrade", "websocket",
		"Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==",
		"OpenAI-Beta", "responses_websockets=2026-02-06"}
	r := e.do("GET", "/v1/responses", e.tenantA, nil, ws...)
	if r.status != 426 || r.header.Get("Allow") != "POST" {
		t.Fatalf("handshake on /v1/responses: %d, Allow %q; want 426, Allow POST (%s)", r.status, r.header.Get("Allow"), r.raw)
	}
	if code := r.str("error.code"); code != "websocket_not_supported" {
		t.Errorf("error.code %v, want websocket_not_supported (%s)", code, r.raw)
	}
	if msg := r.str("error.message"); !strings.Contains(msg, "POST /v1/responses") {
		t.Errorf("the message does not say what to do instead: %q", msg)
	}
	// Not a handshake (no Connection: upgrade): the plain 405.
	if r := e.do("GET", "/v1/responses", e.tenantA, nil, "Upgrade", "websocket"); r.status != 405 {
		t.Errorf("GET with Upgrade alone: %d, want 405 (%s)", r.status, r.raw)
	}
	// On Anthropic's front, its shape.
	r = e.do("GET", "/v1/messages", e.tenantA, nil, ws...)
	if r.status != 426 || r.str("error.type") != "invalid_request_error" || r.str("type") != "error" {
		t.Errorf("handshake on /v1/messages: %d %s; want 426 in Anthropic's shape", r.status, r.raw)
	}
	// The POST-only paths below /v1/models fall to the GET route of
	// /v1/models/{id}, which answers their 405 itself: a handshake there
	// is the same 426.
	if r := e.do("GET", "/v1/models/sync", e.tenantA, nil, ws...); r.status != 426 || r.header.Get("Allow") != "POST" {
		t.Errorf("handshake on /v1/models/sync: %d, Allow %q; want 426, Allow POST (%s)", r.status, r.header.Get("Allow"), r.raw)
	}
	// A path Baton does not serve stays a 404.
	if r := e.do("GET", "/v1/realtime", e.tenantA, nil, ws...); r.status != 404 {
		t.Errorf("handshake on /v1/realtime: %d, want 404", r.status)
	}
}

// HEAD is served wherever GET is (RFC 9110), as the GET without its body:
// the status and headers the GET would have.
func TestHeadIsServedAsGet(t *testing.T) {
	e := newEnvWith(t, gatewayCatalog(t, newFakeUpstreams(t)))
	id := e.contract(e.tenantA, nil)
	for _, path := range []string{"/v1/models", "/v1/models/openai:gpt-4o-mini", "/v1/handoff/contracts", "/v1/handoff/contracts/" + id, "/v1/executions/" + id + "/ledger"} {
		get := e.do("GET", path, e.tenantA, nil)
		head := e.do("HEAD", path, e.tenantA, nil)
		if get.status != 200 || head.status != 200 || len(head.raw) != 0 || head.header.Get("Content-Type") != get.header.Get("Content-Type") {
			t.Errorf("HEAD %s: %d, %d bytes, %q (GET: %d, %q)", path, head.status, len(head.raw), head.header.Get("Content-Type"), get.status, get.header.Get("Content-Type"))
		}
	}
	if r := e.do("HEAD", "/v1/models", "", nil); r.status != 401 {
		t.Errorf("HEAD without a key: %d", r.status)
	}
	if r := e.do("HEAD", "/v1/models/openai:nope", e.tenantA, nil); r.status != 404 {
		t.Errorf("HEAD of an unknown model: %d", r.status)
	}
}
