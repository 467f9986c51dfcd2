package http_test

import "testing"

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
		{"method not allowed", "DELETE", "/v1/models/openai:gpt-4o-mini", e.tenantA, 405, "invalid_request_error"},
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
