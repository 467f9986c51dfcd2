package http_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkChatCompletions is one non-streaming chat completion through
// the front's handler (no client socket), to a loopback OpenAI-shaped
// upstream: authentication, routing, pricing, the budget hold, translation,
// the upstream round trip and the usage event. Its allocations per call
// are what the garbage collector pays for under load.
func BenchmarkChatCompletions(b *testing.B) {
	f := newFakeUpstreams(b)
	e := newEnvWith(b, gatewayCatalog(b, f))
	body := `{"model":"openai:gpt-4o-mini","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello baton"}],"max_completion_tokens":64}`
	benchChat(b, e, body, "")
}

// benchChat calls POST /v1/chat/completions with body b.N times through
// e's handler; each answer must be a 200 ending with suffix.
func benchChat(b *testing.B, e *env, body, suffix string) {
	h := e.srv.Config.Handler
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.tenantA)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK || !strings.HasSuffix(w.Body.String(), suffix) {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkChatCompletionsStream is BenchmarkChatCompletions streamed,
// passed through: the path of the gateway benchmark's stream rows.
func BenchmarkChatCompletionsStream(b *testing.B) {
	f := newFakeUpstreams(b)
	e := newEnvWith(b, gatewayCatalog(b, f))
	body := `{"model":"openai:gpt-4o-mini","messages":[{"role":"user","content":"hello baton"}],"max_completion_tokens":64,"stream":true,"stream_options":{"include_usage":true}}`
	benchChat(b, e, body, "data: [DONE]\n\n")
}
