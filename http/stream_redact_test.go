package http_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/batonhq/baton/gateway"
)

// An upstream that quotes the provider's key in a failure mid-stream (a
// proxy echoing the request's headers) does not hand it to the client:
// the message is redacted as an error status's is. It reached the
// client's error event whole, on the passed-through and the translated
// stream alike.
func TestMidStreamFailureDoesNotShowTheKey(t *testing.T) {
	const key = "sk-test-0123456789abcdefSECRET"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n")
		fmt.Fprintf(w, "data: {\"error\":{\"message\":\"upstream proxy failed for %s\",\"type\":\"server_error\"}}\n\n", r.Header.Get("Authorization"))
	}))
	t.Cleanup(srv.Close)
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": key}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, cat)
	for _, c := range []struct {
		path string
		body map[string]any
	}{
		{"/v1/chat/completions", map[string]any{"model": "openai:gpt-4o-mini", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
		{"/v1/messages", map[string]any{"model": "openai:gpt-4o-mini", "stream": true, "max_tokens": 50, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
	} {
		_, evs := e.stream(c.path, e.tenantA, c.body)
		var all strings.Builder
		for _, ev := range evs {
			all.WriteString(ev[0] + " " + ev[1] + "\n")
		}
		if strings.Contains(all.String(), "SECRET") || !strings.Contains(all.String(), "[redacted]") {
			t.Errorf("%s: the stream the client got:\n%s", c.path, all.String())
		}
	}
}
