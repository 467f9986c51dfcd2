package http_test

import "testing"

// A 405 names the methods the path does take (RFC 9110 requires Allow).
func TestMethodNotAllowedSaysWhatIsAllowed(t *testing.T) {
	e := newEnvWith(t, gatewayCatalog(t, newFakeUpstreams(t)))
	tests := []struct{ method, path, allow string }{
		{"PUT", "/v1/handoff/contracts", "GET, POST"},
		{"DELETE", "/v1/generate", "POST"},
		{"GET", "/v1/chat/completions", "POST"},
		{"PATCH", "/v1/messages", "POST"},
		{"POST", "/", "GET, HEAD"},
		{"GET", "/v1/models/sync", "POST"},
		{"DELETE", "/v1/models/sync", "POST"}, // GET below /v1/models is a model's, not this path's
		{"PUT", "/v1/models/health/batch", "POST"},
		{"DELETE", "/v1/models/openai:gpt-4o-mini", "GET"},
	}
	for _, tt := range tests {
		r := e.do(tt.method, tt.path, e.tenantA, nil)
		if r.status != 405 || r.header.Get("Allow") != tt.allow {
			t.Errorf("%s %s: %d, Allow %q; want 405, Allow %q (%s)", tt.method, tt.path, r.status, r.header.Get("Allow"), tt.allow, r.raw)
		}
	}
}
