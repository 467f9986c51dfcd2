package http_test

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/gateway"
)

// The models list writes a model's strings as every other answer does,
// without escaping HTML: a name with & < > comes back as written, in
// OpenAI's shape and in Anthropic's.
func TestModelListWritesNamesUnescaped(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, f, gateway.ProviderSpec{Name: "compat", Kind: "openai-compatible",
		BaseURL: f.openai.URL + "/v1", KeyEnv: "COMPAT_API_KEY", Models: []gateway.ModelSpec{{Name: "a&b<c>"}}}))
	const want = `"id":"compat:a&b<c>"`
	if r := e.must(e.do("GET", "/v1/models", e.tenantA, nil), 200); !strings.Contains(string(r.raw), want) {
		t.Errorf("OpenAI's shape: %s", r.raw)
	}
	if r := e.must(e.do("GET", "/v1/models?limit=1000", e.tenantA, nil, "anthropic-version", "2023-06-01"), 200); !strings.Contains(string(r.raw), want) {
		t.Errorf("Anthropic's shape: %s", r.raw)
	}
	if r := e.must(e.do("GET", "/v1/models/compat:a&b<c>", e.tenantA, nil), 200); !strings.Contains(string(r.raw), want) {
		t.Errorf("one model: %s", r.raw)
	}
}
