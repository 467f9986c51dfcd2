package http_test

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/gateway"
)

// The models routes are called by both SDKs: an error there answers in
// Anthropic's shape when the request has anthropic-version (as the
// Anthropic SDK sends), else in OpenAI's, for a bad key as for an unknown
// model or a method the path does not take.
func TestModelsRoutesAnswerErrorsInTheCallersShape(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, f))
	const bad = "btn_sk_0000000000000000000000000000000000000000"
	tests := []struct {
		name, method, path, key string
		status                  int
		anthropicType           string
	}{
		{"list, bad key", "GET", "/v1/models", bad, 401, "authentication_error"},
		{"get, no key", "GET", "/v1/models/openai:gpt-4o-mini", "", 401, "authentication_error"},
		{"get, unknown model", "GET", "/v1/models/openai:nope", e.tenantA, 404, "not_found_error"},
		{"method not allowed", "PUT", "/v1/models/openai:gpt-4o-mini", e.tenantA, 405, "invalid_request_error"},
		{"delete, OpenAI's and not served", "DELETE", "/v1/models/openai:gpt-4o-mini", e.tenantA, 404, "not_found_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			an := e.do(tt.method, tt.path, tt.key, nil, "anthropic-version", "2023-06-01")
			if an.status != tt.status || an.str("type") != "error" || an.str("error.type") != tt.anthropicType || an.str("request_id") == "" {
				t.Errorf("with anthropic-version: %d %s", an.status, an.raw)
			}
			oa := e.do(tt.method, tt.path, tt.key, nil)
			if oa.status != tt.status || oa.str("error.type") != "invalid_request_error" || oa.str("error.code") == "" || oa.str("type") != "" {
				t.Errorf("without it: %d %s", oa.status, oa.raw)
			}
		})
	}
}

// A bare model name, which calls take (the one configured model of that
// name), is a model to GET too: the SDKs' models.retrieve of the name they
// call with found nothing.
func TestModelByBareName(t *testing.T) {
	e := newEnvWith(t, gatewayCatalog(t, newFakeUpstreams(t)))
	r := e.must(e.do("GET", "/v1/models/gpt-4o-mini", e.tenantA, nil), 200)
	if r.str("id") != "openai:gpt-4o-mini" {
		t.Fatalf("GET /v1/models/gpt-4o-mini: %s", r.raw)
	}
	r = e.must(e.do("GET", "/v1/models/claude-haiku-4-5", e.tenantA, nil, "anthropic-version", "2023-06-01"), 200)
	if r.str("id") != "anthropic:claude-haiku-4-5" || r.str("type") != "model" {
		t.Fatalf("GET /v1/models/claude-haiku-4-5 from the Anthropic SDK: %s", r.raw)
	}
	e.must(e.do("GET", "/v1/models/no-such-model", e.tenantA, nil), 404)
}

// A bare name two configured providers list is no model to GET, as it is
// none to call: the 404 says so and names both ids, where it said the
// catalog held no such model though GET /v1/models listed two.
func TestModelByAmbiguousBareName(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, f, gateway.ProviderSpec{Name: "compat", Kind: "openai-compatible", BaseURL: f.openai.URL + "/v1", KeyEnv: "COMPAT_API_KEY",
		Models: []gateway.ModelSpec{{Name: "gpt-4o-mini"}}}))
	for _, h := range [][]string{nil, {"anthropic-version", "2023-06-01"}} {
		r := e.do("GET", "/v1/models/gpt-4o-mini", e.tenantA, nil, h...)
		if r.status != 404 || !strings.Contains(string(r.raw), "names a model of several providers (compat:gpt-4o-mini, openai:gpt-4o-mini)") {
			t.Fatalf("%v: %d %s", h, r.status, r.raw)
		}
	}
}
