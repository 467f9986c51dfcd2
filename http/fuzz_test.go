package http_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzCallbackBodies sends arbitrary bodies to every decoder of untrusted
// input on the front: contract creation, preview, key creation and the four
// callbacks. Whatever arrives, the answer is a deliberate one (never a 500),
// and a refused request appends nothing.
func FuzzCallbackBodies(f *testing.F) {
	for _, seed := range []string{
		`{"objective":"x","targetExecutor":"y","executorProtocol":"y.v1","riskLevel":"low"}`,
		`{"status":"APPROVED","approvedBy":"a"}`,
		`{"status":"REJECTED","approvedBy":"a","reason":"r"}`,
		`{"executorRunId":"r","status":"RUNNING","proof":{"summary":"s","artifacts":[{"type":"log","text":"t"}]}}`,
		`{"executorRunId":"r","status":"SUCCEEDED","result":{"summary":"s","output":"o"},"proof":{"artifacts":[]}}`,
		`{"verdict":"verified","reviewer":"v"}`,
		`{"tenant":"t","admin":true}`,
		`{"proof":{"artifacts":[{"type":5}]}}`,
		`[]`, `null`, `"x"`, `{`, ``, `{"a":{"b":{"c":[1,2,{"d":null}]}}}`,
	} {
		for route := uint8(0); route < 7; route++ {
			f.Add(route, []byte(seed))
		}
	}
	e := newEnv(f)
	id := e.contract(e.tenantA, nil)
	e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
	h := e.srv.Config.Handler
	routes := []struct{ path, key string }{
		{"/v1/handoff/contracts", e.tenantA},
		{"/v1/handoff/preview", e.tenantA},
		{"/v1/admin/keys", e.admin},
		{"/v1/executions/" + id + "/approval", e.tenantA},
		{"/v1/executions/" + id + "/proof", e.tenantA},
		{"/v1/executions/" + id + "/result", e.tenantA},
		{"/v1/executions/" + id + "/review", e.admin},
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		e.t = t
		r := routes[int(route)%len(routes)]
		before := e.events(id)
		req := httptest.NewRequest(http.MethodPost, r.path, bytes.NewReader(body))
		req.Header.Set("x-api-key", r.key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 201:
		case 400, 409, 413, 422:
			if after := e.events(id); after != before {
				t.Fatalf("%s answered %d but appended %d events", r.path, rec.Code, after-before)
			}
		default:
			t.Fatalf("%s answered %d to %q: %s", r.path, rec.Code, body, rec.Body.String())
		}
	})
}
