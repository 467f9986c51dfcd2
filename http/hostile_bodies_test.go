package http_test

import (
	"strings"
	"testing"
)

// A body nested deeper than encoding/json allows is a 400 on every model
// front, before anything reads it by recursion: twelve million brackets
// (24 MB, under the model routes' 32 MiB) overflowed the stack of gjson's
// validator and ended the process, every tenant's calls with it.
func TestDeeplyNestedBodyRefused(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	head, err := e.store.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	deep := func(model string, n int) string {
		return `{"model":"` + model + `","max_tokens":5,"input":"hi","messages":[{"role":"user","content":"hi"}],"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
	}
	for _, path := range []string{"/v1/chat/completions", "/v1/messages", "/v1/responses", "/v1/messages/count_tokens"} {
		for _, model := range []string{"oai:gpt-x", "anthropic:claude-haiku-4-5"} {
			r := e.do("POST", path, e.tenantA, deep(model, 10001))
			if r.status != 400 {
				t.Errorf("%s %s: %d %.300s", path, model, r.status, r.raw)
			}
		}
	}
	r := e.do("POST", "/v1/messages", e.tenantA, `{"model":"oai:gpt-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"x":`+strings.Repeat("[", 12_000_000)+`}`)
	if r.status != 400 {
		t.Errorf("twelve million brackets: %d %.300s", r.status, r.raw)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
	if h, _ := e.store.Head(t.Context()); h != head {
		t.Errorf("the store's head moved from %d to %d", head, h)
	}
}
