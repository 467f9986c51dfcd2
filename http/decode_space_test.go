package http_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// notJSONSpace are characters Unicode calls space and JSON does not
// (RFC 8259 allows only space, tab, line feed and carriage return between
// tokens): a body padded with one is not JSON.
var notJSONSpace = []struct{ name, s string }{
	{"no-break space", "\u00a0"},
	{"line separator", "\u2028"},
	{"ideographic space", "\u3000"},
	{"vertical tab", "\v"},
	{"form feed", "\f"},
	{"next line", "\u0085"},
}

// TestBodyPaddedWithNonJSONSpaceIs400 sends each endpoint that decodes a
// JSON body a valid body with such a character before or after it: 400
// malformed_json, as for any body that is not JSON, and nothing appended.
func TestBodyPaddedWithNonJSONSpaceIs400(t *testing.T) {
	e := localEnv(t)
	id := e.contract(e.tenantA, nil)
	approve, _ := json.Marshal(approveBody())
	proof, _ := json.Marshal(proofBody("run-1"))
	result, _ := json.Marshal(resultBody("run-1"))
	review, _ := json.Marshal(reviewBody("verified"))
	contract := `{"objective":"Rotate the staging TLS certificate","targetExecutor":"ops-bot","executorProtocol":"ops_bot.v1","riskLevel":"medium","approvalMode":"manual","proofRequired":["log"]}`
	plan := `{"objective":"rotate the staging TLS certificate","targetExecutor":"ops-bot","riskLevel":"high"}`
	routes := []struct {
		name, path, key, body string
	}{
		{"contract", "/v1/handoff/contracts", e.tenantA, contract},
		{"approval", "/v1/executions/" + id + "/approval", e.tenantA, string(approve)},
		{"proof", "/v1/executions/" + id + "/proof", e.tenantA, string(proof)},
		{"result", "/v1/executions/" + id + "/result", e.tenantA, string(result)},
		{"review", "/v1/executions/" + id + "/review", e.admin, string(review)},
		{"agent plan", "/v1/agent-plans", e.tenantA, plan},
		{"webhook", "/v1/webhooks", e.tenantA, `{"url":"https://hooks.example.com/baton","eventTypes":["*"]}`},
	}
	for _, rt := range routes {
		for _, sp := range notJSONSpace {
			for _, where := range []string{"after", "before"} {
				t.Run(rt.name+"/"+sp.name+" "+where, func(t *testing.T) {
					e.t = t
					body := rt.body + sp.s
					if where == "before" {
						body = sp.s + rt.body
					}
					before, err := e.store.Head(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					evs := e.events(id)
					r := e.do("POST", rt.path, rt.key, body)
					if r.status != 400 || r.str("code") != "malformed_json" {
						t.Fatalf("status %d, want 400 malformed_json: %s", r.status, r.raw)
					}
					if after := e.events(id); after != evs {
						t.Fatalf("appended %d events to the handoff", after-evs)
					}
					if after, err := e.store.Head(context.Background()); err != nil || after != before {
						t.Fatalf("store head moved from %v to %v (%v)", before, after, err)
					}
				})
			}
		}
	}
	// JSON's own whitespace around a body is fine.
	e.t = t
	e.must(e.do("POST", "/v1/handoff/contracts", e.tenantA, " \t\r\n"+contract+" \t\r\n"), 201)
	e.must(e.post(id, "approval", e.tenantA, "\n"+string(approve)+"\r\n"), 200)
}

// TestBodyWithInvalidUTF8Is400: JSON text is UTF-8 (RFC 8259). A string
// with bytes that are not was decoded with U+FFFD in their place and
// recorded so, for ever, in the hash-chained trail; it is now 400
// malformed_json naming the byte, and nothing is appended.
func TestBodyWithInvalidUTF8Is400(t *testing.T) {
	e := localEnv(t)
	id := e.contract(e.tenantA, nil)
	for _, c := range []struct{ name, path, body string }{
		{"approval", "/v1/executions/" + id + "/approval", "{\"status\":\"APPROVED\",\"approvedBy\":\"\xff\xfe\"}"},
		{"contract", "/v1/handoff/contracts", "{\"objective\":\"Rotate \xc3\",\"targetExecutor\":\"ops-bot\",\"executorProtocol\":\"ops_bot.v1\",\"riskLevel\":\"medium\",\"approvalMode\":\"manual\",\"proofRequired\":[\"log\"]}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			before, err := e.store.Head(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			r := e.do("POST", c.path, e.tenantA, c.body)
			if r.status != 400 || r.str("code") != "malformed_json" || !strings.Contains(r.str("detail"), "UTF-8 (at byte ") {
				t.Fatalf("status %d, want 400 malformed_json naming UTF-8: %s", r.status, r.raw)
			}
			if after, err := e.store.Head(context.Background()); err != nil || after != before {
				t.Fatalf("store head moved from %v to %v (%v)", before, after, err)
			}
		})
	}
	e.t = t
	e.must(e.post(id, "approval", e.tenantA, `{"status":"APPROVED","approvedBy":"Zoë \ud83d\ude00"}`), 200)
}

// A name or id holding a control character or a bidirectional override is
// refused (422 naming the field) with nothing recorded: the ledger would
// keep it for ever, and "alice" could read as another name in the console.
func TestNamesRefuseControlCharacters(t *testing.T) {
	e := localEnv(t)
	id := e.contract(e.tenantA, nil)
	before, _ := e.store.Head(context.Background())
	for _, name := range []string{"a\u0000b", "a\u0007b", "a\u202eb", "al\u2066ice", "a\u009bb"} {
		r := e.post(id, "approval", e.tenantA, map[string]any{"status": "APPROVED", "approvedBy": name})
		if r.status != 422 || !strings.Contains(string(r.raw), `"control_character"`) || !strings.Contains(string(r.raw), `/approvedBy`) {
			t.Errorf("approvedBy %q: %d %s", name, r.status, r.raw)
		}
	}
	if after, _ := e.store.Head(context.Background()); after != before {
		t.Fatal("a refused approval appended events")
	}
	e.must(e.post(id, "approval", e.tenantA, map[string]any{"status": "APPROVED", "approvedBy": "Zoë 😀 O'Brien"}), 200)
}
