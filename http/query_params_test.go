package http_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// A query parameter Baton's own endpoints do not take is refused, named,
// before anything is read or done: a misspelt filter answered as if it
// were not there (?tenants=acme listed every tenant's keys), and one on a
// command (?dryRun=1) did the command.
func TestUnknownQueryParameterRefused(t *testing.T) {
	e, _ := newGatewayEnv(t)
	k := e.must(e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "c"}), 201)
	before, err := e.store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, key, param string }{
		{"GET", "/v1/admin/keys?tenants=c", e.admin, "tenants"},
		{"HEAD", "/v1/admin/keys?tenants=c", e.admin, "tenants"},
		{"GET", "/v1/admin/keys?tenant=c&Tenant=d", e.admin, "Tenant"},
		{"GET", "/v1/handoff/contracts?status=approval_pending", e.tenantA, "status"},
		{"GET", "/v1/handoff/contracts/h1?x=1", e.tenantA, "x"},
		{"GET", "/v1/executions/h1/ledger?since=3", e.tenantA, "since"},
		{"GET", "/v1/events?handoff=h1", e.tenantA, "handoff"},
		{"GET", "/v1/webhooks?page=2", e.tenantA, "page"},
		{"GET", "/v1/webhooks/wh_1/deliveries?page=2", e.tenantA, "page"},
		{"GET", "/v1/capabilities?verbose", e.tenantA, "verbose"},
		{"DELETE", "/v1/admin/keys/" + k.str("keyId") + "?dryRun=1", e.admin, "dryRun"},
		{"POST", "/v1/handoff/contracts?dryRun=true", e.tenantA, "dryRun"},
		{"POST", "/v1/generate?dry_run=1", e.tenantA, "dry_run"},
	} {
		r := e.do(c.method, c.path, c.key, map[string]any{"objective": "x"})
		if r.status != 422 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, r.status, r.raw)
		}
		if c.method == "HEAD" {
			continue
		}
		if r.str("code") != "validation_failed" || gjson.GetBytes(r.raw, "fields.0.pointer").Str != "query:"+c.param ||
			gjson.GetBytes(r.raw, "fields.0.code").Str != "unknown_parameter" {
			t.Fatalf("%s %s: %s", c.method, c.path, r.raw)
		}
	}
	if after, _ := e.store.Head(context.Background()); after != before {
		t.Fatalf("a refused request appended: %v -> %v", before, after)
	}
	// The key was not revoked.
	e.must(e.do("GET", "/v1/executor-protocol", k.str("key"), nil), 200)
	// Several at once are all named, in order.
	r := e.do("GET", "/v1/admin/keys?z=1&a=2&tenant=c", e.admin, nil)
	if r.status != 422 || gjson.GetBytes(r.raw, "fields.#.pointer").String() != `["query:a","query:z"]` ||
		!strings.Contains(gjson.GetBytes(r.raw, "fields.0.message").Str, "tenant") {
		t.Fatalf("two unknown: %d %s", r.status, r.raw)
	}
	// A key is checked first: without one it is the 401.
	if r := e.do("GET", "/v1/admin/keys?tenants=c", "", nil); r.status != 401 {
		t.Fatalf("no key: %d %s", r.status, r.raw)
	}
	// What the endpoints take still works.
	e.must(e.do("GET", "/v1/admin/keys?tenant=c", e.admin, nil), 200)
	e.must(e.do("GET", "/v1/handoff/contracts?state=contract_created&limit=5", e.tenantA, nil), 200)
	// The model fronts ignore what they do not know, as the providers do
	// (the SDKs add parameters of their own: Claude Code's ?beta=true).
	e.must(e.do("GET", "/v1/models?foo=1", e.tenantA, nil), 200)
	e.must(e.do("POST", "/v1/chat/completions?foo=1", e.tenantA, map[string]any{"model": "local:echo",
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}}), 200)
	// So do the endpoints that take no key (probes, the log's tiles).
	e.must(e.do("GET", "/healthz?probe=1", "", nil), 200)
	e.must(e.do("GET", "/?x=1", "", nil), 200)
	e.must(e.do("GET", "/metrics?x=1", e.admin, nil), 200)
}

// A query string Go's parser cannot read (a ';' separator, a '%' not
// followed by two hex digits) is refused, naming the parameter: the pair
// was dropped without a word, so ?tenant=acme;x=1 listed every tenant's
// keys.
func TestMalformedQueryRefused(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ query, param string }{
		{"tenant=c;x=1", "tenant"},
		{"tenant=c%zz", "tenant"},
		{"%zz=1", "%zz"},
	} {
		r := e.do("GET", "/v1/admin/keys?"+c.query, e.admin, nil)
		if r.status != 422 || gjson.GetBytes(r.raw, "fields.0.pointer").Str != "query:"+c.param || gjson.GetBytes(r.raw, "fields.0.code").Str != "malformed" {
			t.Errorf("?%s: %d %s", c.query, r.status, r.raw)
		}
	}
	e.must(e.do("GET", "/v1/admin/keys?tenant=c%2Dd", e.admin, nil), 200)
}
