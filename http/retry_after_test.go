package http_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/batonhq/baton/gateway"
)

// An upstream's Retry-After reaches the client where a retry may succeed
// (a rate limit, an overload, a failure), not beside a refusal that every
// retry meets (the request refused, Baton's key refused).
func TestRetryAfterOnlyWhereARetryMayMend(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var status int
		for _, s := range []int{400, 401, 429, 500, 503} {
			if strings.Contains(string(body), `"m`+strconv.Itoa(s)+`"`) {
				status = s
			}
		}
		w.Header().Set("Retry-After", "9")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, `{"error":{"message":"no","type":"x"}}`)
	}))
	t.Cleanup(up.Close)
	var models []gateway.ModelSpec
	for _, s := range []string{"m400", "m401", "m429", "m500", "m503"} {
		models = append(models, gateway.ModelSpec{Name: s, ContextTokens: 8000, Modes: []string{}, Pricing: &gateway.Price{InputPerMTok: 1, OutputPerMTok: 1, Source: "test"}})
	}
	spec := gateway.ProviderSpec{Name: "ra", Kind: "openai-compatible", BaseURL: up.URL + "/v1", KeyEnv: "COMPAT_API_KEY", Models: models}
	e := newEnvWith(t, gatewayCatalog(t, newFakeUpstreams(t), spec))
	for _, c := range []struct {
		model  string
		status int
		wait   string
	}{{"m400", 400, ""}, {"m401", 502, ""}, {"m429", 429, "9"}, {"m500", 502, "9"}, {"m503", 503, "9"}} {
		r := e.do("POST", "/v1/chat/completions", e.tenantA, `{"model":"ra:`+c.model+`","messages":[{"role":"user","content":"hi"}]}`)
		if r.status != c.status || r.header.Get("Retry-After") != c.wait {
			t.Errorf("upstream %s: %d Retry-After %q, want %d %q (%s)", c.model, r.status, r.header.Get("Retry-After"), c.status, c.wait, r.raw)
		}
	}
}

// An upstream that says its wait in milliseconds alone (retry-after-ms, as
// Azure OpenAI does) has it reach the client as Retry-After, rounded up to
// whole seconds: the SDKs would otherwise back off blind.
func TestRetryAfterInMilliseconds(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case strings.Contains(string(body), `"both"`):
			w.Header().Set("Retry-After", "7")
			w.Header().Set("Retry-After-Ms", "1500")
		case strings.Contains(string(body), `"bad"`):
			w.Header().Set("Retry-After-Ms", "soon")
		default:
			w.Header().Set("Retry-After-Ms", "1500")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`)
	}))
	t.Cleanup(up.Close)
	var models []gateway.ModelSpec
	for _, s := range []string{"ms", "both", "bad"} {
		models = append(models, gateway.ModelSpec{Name: s, ContextTokens: 8000, Modes: []string{}, Pricing: &gateway.Price{InputPerMTok: 1, OutputPerMTok: 1, Source: "test"}})
	}
	spec := gateway.ProviderSpec{Name: "ra", Kind: "openai-compatible", BaseURL: up.URL + "/v1", KeyEnv: "COMPAT_API_KEY", Models: models}
	e := newEnvWith(t, gatewayCatalog(t, newFakeUpstreams(t), spec))
	for _, c := range []struct{ model, wait string }{{"ms", "2"}, {"both", "7"}, {"bad", ""}} {
		r := e.do("POST", "/v1/chat/completions", e.tenantA, `{"model":"ra:`+c.model+`","messages":[{"role":"user","content":"hi"}]}`)
		if r.status != 429 || r.header.Get("Retry-After") != c.wait {
			t.Errorf("%s: %d Retry-After %q, want 429 %q (%s)", c.model, r.status, r.header.Get("Retry-After"), c.wait, r.raw)
		}
	}
}
