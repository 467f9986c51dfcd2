package http_test

import (
	"net/url"
	"strings"
	"testing"
)

// A handoff id no stream can have (over the store's stream-id length, or
// holding a control character) is an unknown handoff on every callback, as
// it is on GET: 404, nothing stored, never a 500.
func TestCallbacksOnImpossibleHandoffIDs(t *testing.T) {
	e := newEnv(t)
	for name, id := range map[string]string{
		"248 characters":    strings.Repeat("a", 248),
		"1000 characters":   strings.Repeat("b", 1000),
		"control character": "abc\x01def",
		"DEL":               "abc\x7fdef",
	} {
		t.Run(name, func(t *testing.T) {
			path := url.PathEscape(id)
			for cb, body := range map[string]any{"approval": approveBody(), "proof": proofBody("run-1"), "result": resultBody("run-1")} {
				r := e.do("POST", "/v1/executions/"+path+"/"+cb, e.tenantA, body)
				if r.status != 404 || r.str("code") != "handoff_not_found" {
					t.Errorf("%s: %d %s", cb, r.status, r.raw)
				}
			}
			if r := e.do("POST", "/v1/executions/"+path+"/review", e.admin, reviewBody("verified")); r.status != 404 {
				t.Errorf("review: %d %s", r.status, r.raw)
			}
			if r := e.do("GET", "/v1/handoff/contracts/"+path, e.tenantA, nil); r.status != 404 {
				t.Errorf("get: %d %s", r.status, r.raw)
			}
		})
	}
}
