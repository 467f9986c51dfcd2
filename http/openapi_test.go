package http_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/batonhq/baton/docs"
)

// TestOpenAPIDocumentServed: GET /v1/openapi.json needs no key and
// answers docs/openapi.yaml as JSON, value for value.
func TestOpenAPIDocumentServed(t *testing.T) {
	e := newEnv(t)
	r := e.must(e.do("GET", "/v1/openapi.json", "", nil), 200)
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var served, want any
	if err := json.Unmarshal(r.raw, &served); err != nil {
		t.Fatal(err)
	}
	var fromYAML any
	if err := yaml.Unmarshal(docs.OpenAPIYAML, &fromYAML); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(fromYAML)
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(b, &want)
	if !reflect.DeepEqual(served, want) {
		t.Fatal("the served document differs from docs/openapi.yaml")
	}
	if !strings.HasPrefix(string(r.raw), `{"openapi":"3.1.0","info":`) {
		t.Fatalf("keys not in the document's order: %.60s", r.raw)
	}
}

// reportingTB keeps what checkOpenAPI reports instead of failing.
type reportingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *reportingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestOpenAPIValidatorReports runs the checker on answers that break the
// document in one way each, and on ones that keep it: each break is
// reported, naming the method, the path and the status; nothing else is.
func TestOpenAPIValidatorReports(t *testing.T) {
	health := `{"status":"ok","version":"test","storeHead":{"commit":1,"prepare":1}}`
	contract := `{"objective":"o","targetExecutor":"ops-bot","executorProtocol":"ops_bot.v1","riskLevel":"low"}`
	problem := `{"type":"urn:baton:problem:validation_failed","title":"Unprocessable Entity","status":422,"code":"validation_failed"}`
	tests := []struct {
		name         string
		method, path string
		reqBody      string
		status       int
		contentType  string
		body         string
		noRequestID  bool
		noKey        bool
		header       []string // another answer header and its value
		want         string   // in the report; "" for none
	}{
		{name: "documented answer", method: "GET", path: "/healthz", status: 200, contentType: "application/json", body: health},
		{name: "undocumented field", method: "GET", path: "/healthz", status: 200, contentType: "application/json",
			body: `{"status":"ok","version":"test","storeHead":{"commit":1,"prepare":1},"uptime":5}`, want: "GET /healthz answered 200: answer:"},
		{name: "undocumented status", method: "GET", path: "/healthz", status: 418, contentType: "application/json", body: health,
			want: "GET /healthz answered 418: answer: the status is not documented"},
		{name: "wrong content type", method: "GET", path: "/healthz", status: 503, contentType: "application/json", body: problem,
			want: "GET /healthz answered 503: answer:"},
		{name: "no request id", method: "GET", path: "/healthz", status: 200, contentType: "application/json", body: health, noRequestID: true,
			want: "x-request-id"},
		{name: "header off the schema", method: "POST", path: "/v1/generate", reqBody: `{}`, status: 422, contentType: "application/problem+json",
			body: problem, header: []string{"Idempotent-Replayed", "yes"}, want: "answered 422: answer: header Idempotent-Replayed"},
		{name: "answered without a key", method: "GET", path: "/v1/executor-protocol", noKey: true, status: 401, contentType: "application/problem+json",
			body: strings.Replace(problem, "422", "401", 1), header: []string{"WWW-Authenticate", `Bearer realm="baton"`}},
		{name: "accepted without a key", method: "GET", path: "/v1/capabilities", noKey: true, status: 500, contentType: "application/problem+json",
			body: strings.Replace(problem, "422", "500", 1)},
		{name: "served without a key", method: "GET", path: "/v1/admin/budgets/a", noKey: true, status: 200, contentType: "application/json",
			body: `{"tenant":"a","limits":{"dailyUsd":null,"monthlyUsd":1},"daySpentUsd":0,"monthSpentUsd":0,"reservedUsd":0,"day":"2026-01-01","month":"2026-01"}`,
			want: "GET /v1/admin/budgets/a answered 200: request: security requirements failed"},
		{name: "metrics text", method: "GET", path: "/metrics", noKey: true, status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
			body: "# TYPE baton_approvals_pending gauge\nbaton_approvals_pending 0\n"},
		{name: "metrics in an undocumented type", method: "GET", path: "/metrics", status: 200, contentType: "application/json", body: `{}`,
			want: "GET /metrics answered 200: answer: Content-Type"},
		{name: "undocumented route", method: "GET", path: "/v1/nowhere", status: 200, contentType: "application/json", body: `{}`,
			want: "GET /v1/nowhere answered 200: the path is not in docs/openapi.yaml"},
		{name: "router's 404", method: "GET", path: "/v1/nowhere", status: 404, contentType: "application/problem+json", body: problem},
		{name: "undocumented method", method: "DELETE", path: "/healthz", status: 200, contentType: "application/json", body: health,
			want: "DELETE /healthz answered 200: the method is not in docs/openapi.yaml"},
		{name: "accepted request off the schema", method: "POST", path: "/v1/handoff/contracts", reqBody: `{"objective":"o"}`,
			status: 422, contentType: "application/problem+json", body: problem},
		{name: "accepted request breaking the schema", method: "POST", path: "/v1/models/health", reqBody: `{"provider":"local"}`,
			status: 200, contentType: "application/json", body: `{"id":"local:echo","provider":"local","model":"echo","ok":true,"latencyMs":0,"testedAt":"2026-01-01T00:00:00Z"}`,
			want: "POST /v1/models/health answered 200: request:"},
		{name: "contract answer missing a field", method: "POST", path: "/v1/handoff/contracts", reqBody: contract, status: 201,
			contentType: "application/json", body: `{"handoffId":"01a204b7-8b62-7bab-bcd2-379a918f5f57"}`, want: "answered 201: answer:"},
		{name: "stream event off the schema", method: "POST", path: "/v1/chat/completions",
			reqBody: `{"model":"local:echo","stream":true,"messages":[{"role":"user","content":"hi"}]}`, status: 200, contentType: "text/event-stream",
			body: "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":\"none\"}\n\ndata: [DONE]\n\n",
			want: "answered 200: answer: event 0:"},
		{name: "documented stream", method: "POST", path: "/v1/chat/completions",
			reqBody: `{"model":"local:echo","stream":true,"messages":[{"role":"user","content":"hi"}]}`, status: 200, contentType: "text/event-stream",
			body: "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[]}\n\ndata: [DONE]\n\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := &reportingTB{TB: t}
			h := checkOpenAPI(func() testing.TB { return rep }, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, err := r.Body.Read(make([]byte, 1<<10)); err != nil && tc.reqBody != "" {
					t.Errorf("reading the body: %v", err)
				}
				if !tc.noRequestID {
					w.Header().Set("x-request-id", "req_1")
				}
				if tc.header != nil {
					w.Header().Set(tc.header[0], tc.header[1])
				}
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.reqBody))
			if !tc.noKey {
				req.Header.Set("x-api-key", "btn_sk_test")
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			switch {
			case tc.want == "" && len(rep.errs) > 0:
				t.Fatalf("reported a documented exchange: %q", rep.errs)
			case tc.want != "" && len(rep.errs) == 0:
				t.Fatal("not reported")
			case tc.want != "" && !strings.Contains(rep.errs[0], tc.want):
				t.Fatalf("report %q does not say %q", rep.errs[0], tc.want)
			}
		})
	}
}
