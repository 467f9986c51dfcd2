package http_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/gateway"
)

// An upstream's redirect is its answer, not followed: the model call is
// not sent again to where it points (another host, with the provider's
// key), on either front, whole or streamed.
func TestUpstreamRedirectIsNotFollowed(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"moved"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}))
	defer other.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer up.Close()
	f := newFakeUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, f, gateway.ProviderSpec{Name: "compat", Kind: "openai-compatible",
		BaseURL: up.URL + "/v1", KeyEnv: "COMPAT_API_KEY", Models: []gateway.ModelSpec{{Name: "m"}}}))
	for _, stream := range []bool{false, true} {
		r := e.do("POST", "/v1/chat/completions", e.tenantA, chatBody("compat:m", stream))
		if r.status < 500 || strings.Contains(string(r.raw), "moved") {
			t.Errorf("stream %v: %d %s", stream, r.status, r.raw)
		}
	}
	r := e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "compat:m", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "x"}}})
	if r.status < 500 || strings.Contains(string(r.raw), "moved") {
		t.Errorf("messages: %d %s", r.status, r.raw)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect was followed %d times", n)
	}
}
