package openai

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/batonhq/baton/gateway"
)

func TestClientHeader(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"Originator", true}, {"Session_id", true}, {"Session-Id", true}, {"Thread-Id", true}, {"Conversation_id", true},
		{"Version", true}, {"X-Client-Request-Id", true}, {"OpenAI-Beta", true}, {"X-Openai-Internal-Codex-Responses-Lite", true},
		{"X-Codex-Turn-Metadata", true}, {"x-codex-window-id", true}, {"X-Codex-Beta-Features", true},
		{"Authorization", false}, {"X-Api-Key", false}, {"Cookie", false}, {"Proxy-Authorization", false},
		{"OpenAI-Organization", false}, {"OpenAI-Project", false}, {"Chatgpt-Account-Id", false},
		{"X-Codex-Auth-Token", false}, {"X-Codex-Api-Key", false}, {"X-Codex-", false},
		{"Connection", false}, {"Upgrade", false}, {"Transfer-Encoding", false}, {"Host", false}, {"Accept-Encoding", false},
		{"Content-Type", false}, {"User-Agent", false},
	}
	for _, tc := range tests {
		if got := ClientHeader(tc.name); got != tc.want {
			t.Errorf("ClientHeader(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The client's headers go to OpenAI itself, not to a compatible server,
// and never replace Baton's own.
func TestForwardClientHeaders(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got <- r.Header.Clone()
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	}))
	defer srv.Close()
	client := http.Header{"Originator": {"codex_exec"}, "Openai-Beta": {"responses=experimental"}, "Content-Type": {"text/plain"}}
	n := &gateway.Native{Format: gateway.FormatChat, Body: []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`), Header: client}
	for _, tc := range []struct {
		kind    string
		forward bool
	}{{"openai", true}, {"openai-compatible", false}} {
		if _, _, err := New("p", tc.kind, srv.URL, "k", nil).Forward(context.Background(), n, "m", false); err != nil {
			t.Fatal(err)
		}
		h := <-got
		if (h.Get("Originator") == "codex_exec") != tc.forward || (h.Get("OpenAI-Beta") != "") != tc.forward ||
			h.Get("Authorization") != "Bearer k" || h.Get("Content-Type") != "application/json" {
			t.Errorf("%s: the upstream got %v", tc.kind, h)
		}
	}
}
