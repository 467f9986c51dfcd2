package http_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Codex's own headers (testdata/clients/codex-exec.json, as recorded)
// reach OpenAI with its passed-through body; credentials, cookies and the
// headers of the provider's key do not.
func TestResponsesPassthroughCodexHeaders(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	for _, ex := range capturedCalls(t, "codex-exec.json", "/v1/responses") {
		body, err := sjson.SetBytes(ex.body, "model", "oai:gpt-x")
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", e.srv.URL+ex.path, bytes.NewReader(body))
		for k, v := range ex.header {
			switch k {
			case "Host", "Content-Length", "Authorization", "Accept-Encoding":
			default:
				req.Header[k] = v
			}
		}
		req.Header.Set("Authorization", "Bearer "+e.tenantA)
		// What a client may also send that must stay with Baton.
		stay := map[string]string{"OpenAI-Organization": "org-client", "OpenAI-Project": "proj_client", "Cookie": "session=1",
			"x-api-key": e.tenantA, "X-Codex-Auth-Token": "secret", "Proxy-Authorization": "Basic eA==", "chatgpt-account-id": "acct"}
		for k, v := range stay {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		reqs := f.requests()
		got := reqs[len(reqs)-1]
		want := []string{"originator", "version", "session-id", "thread-id", "x-client-request-id", "x-codex-window-id",
			"x-codex-turn-metadata", "x-codex-beta-features", "x-openai-internal-codex-responses-lite"}
		for _, h := range want {
			if ex.header.Get(h) == "" {
				t.Fatalf("the recording has no %s", h)
			}
			if v := got.header.Values(h); len(v) != 1 || v[0] != ex.header.Get(h) {
				t.Errorf("%s: the upstream got %q, Codex sent %q", h, v, ex.header.Get(h))
			}
		}
		if got.auth != "Bearer sk-upstream-test" {
			t.Errorf("Authorization: %q", got.auth)
		}
		for k := range stay {
			if v := got.header.Values(k); len(v) > 0 {
				t.Errorf("%s reached the upstream: %q", k, v)
			}
		}
		if !strings.HasPrefix(got.header.Get("Content-Type"), "application/json") || !gjson.ValidBytes(got.body) {
			t.Errorf("the upstream got %v %s", got.header, got.body)
		}
		return
	}
	t.Fatal("codex-exec.json: no POST")
}

// A body that gives a top-level field twice is refused on every front
// before any upstream is called: Baton reads the first model (routing,
// price, budget) where a provider's parser takes the last.
func TestDuplicateFieldRefused(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	head, err := e.store.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, body, field string }{
		{"/v1/chat/completions", `{"model":"oai:gpt-x","messages":[{"role":"user","content":"hi"}],"model":"gpt-5-pro"}`, "model"},
		{"/v1/messages", `{"model":"oai:gpt-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"max_tokens":64000}`, "max_tokens"},
		{"/v1/responses", `{"model":"oai:gpt-x","input":"hi","stream":false,"stream":true}`, "stream"},
		{"/v1/responses", `{"model":"oai:gpt-x","input":"hi","mod\u0065l":"gpt-5-pro"}`, "model"},
		{"/v1/chat/completions", `{"model":"oai:gpt-x","messages":[{"role":"user","content":"hi"}],"Model":"gpt-5-pro"}`, "Model"},
		{"/v1/responses", `{"model":"oai:gpt-x","input":"hi","stream":false,"\u017ftream":true}`, "\u017ftream"},
	} {
		r := e.do("POST", c.path, e.tenantA, c.body)
		if r.status != 400 || !strings.Contains(string(r.raw), `field \"`+c.field+`\" twice`) {
			t.Errorf("%s %s: %d %s", c.path, c.body, r.status, r.raw)
		}
		// Given once each, spelled twice: the message names both spellings.
		if c.field == "Model" && !strings.Contains(string(r.raw), `as \"model\" and \"Model\"`) {
			t.Errorf("%s %s: %s", c.path, c.body, r.raw)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
	if h, _ := e.store.Head(t.Context()); h != head {
		t.Errorf("the store's head moved from %d to %d", head, h)
	}
}
