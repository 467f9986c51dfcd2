package http_test

import (
	"strings"
	"sync"
	"testing"
)

// DELETE /v1/responses/{id}, as OpenAI answers it: the tenant's response
// is no longer found, by GET or by previous_response_id; another tenant's
// is a 404, as is a second deletion. One its provider keeps too (passed
// through with store on) is deleted there first.
func TestResponsesDelete(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	create := func(model string) string {
		r := e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": model, "input": "hi"}), 200)
		return r.str("id")
	}
	translated, passed := create("anthropic:claude-haiku-4-5"), create("oai:gpt-x")
	// A stored response is retrieved whole; asked as a stream (the SDK's
	// retrieve with stream: true), it is refused naming stream, not
	// answered whole to an iterator that would then yield nothing.
	if r := e.do("GET", "/v1/responses/"+translated+"?stream=true", e.tenantA, nil); r.status != 400 || r.str("error.param") != "stream" {
		t.Fatalf("retrieve as a stream: %d %s", r.status, r.raw)
	}
	e.must(e.do("GET", "/v1/responses/"+translated+"?stream=false", e.tenantA, nil), 200)
	if r := e.do("DELETE", "/v1/responses/"+translated, e.tenantB, nil); r.status != 404 || r.str("error.code") != "response_not_found" {
		t.Fatalf("another tenant's delete: %d %s", r.status, r.raw)
	}
	for _, id := range []string{translated, passed} {
		before := len(f.requests())
		r := e.must(e.do("DELETE", "/v1/responses/"+id, e.tenantA, nil), 200)
		if r.str("id") != id || r.str("object") != "response.deleted" || r.body["deleted"] != true {
			t.Fatalf("delete %s: %s", id, r.raw)
		}
		got := f.requests()[before:]
		if id == passed && (len(got) != 1 || got[0].path != "/v1/responses/"+id) {
			t.Fatalf("the provider got %d requests for the passed-through response: %+v", len(got), got)
		}
		if id == translated && len(got) != 0 {
			t.Fatalf("a translated response's delete reached the provider: %+v", got)
		}
		// Each says it was deleted (not that it may have been sent with
		// store: false); to another tenant it is not found, no more.
		if r := e.do("GET", "/v1/responses/"+id, e.tenantA, nil); r.status != 404 || r.str("error.code") != "response_not_found" || !strings.Contains(r.str("error.message"), "was deleted") {
			t.Fatalf("GET after delete: %d %s", r.status, r.raw)
		}
		if r := e.do("GET", "/v1/responses/"+id, e.tenantB, nil); r.status != 404 || strings.Contains(r.str("error.message"), "deleted") {
			t.Fatalf("another tenant's GET after delete: %d %s", r.status, r.raw)
		}
		if r := e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "input": "and?", "previous_response_id": id}); r.status != 400 || r.str("error.code") != "previous_response_not_found" ||
			!strings.Contains(r.str("error.message"), "was deleted") {
			t.Fatalf("continued after delete: %d %s", r.status, r.raw)
		}
		if r := e.do("DELETE", "/v1/responses/"+id, e.tenantA, nil); r.status != 404 || !strings.Contains(r.str("error.message"), "was deleted") {
			t.Fatalf("second delete: %d %s", r.status, r.raw)
		}
	}
	// A response whose earlier one was deleted cannot be continued: a 400
	// naming the id sent (it was a 404 naming the deleted one); it is still
	// found itself.
	first := create("anthropic:claude-haiku-4-5")
	second := e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "input": "and?", "previous_response_id": first}), 200).str("id")
	e.must(e.do("DELETE", "/v1/responses/"+first, e.tenantA, nil), 200)
	if r := e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "input": "more?", "previous_response_id": second}); r.status != 400 ||
		r.str("error.code") != "previous_response_not_found" || r.str("error.param") != "previous_response_id" {
		t.Fatalf("continuing after an earlier response was deleted: %d %s", r.status, r.raw)
	}
	e.must(e.do("GET", "/v1/responses/"+second, e.tenantA, nil), 200)
	// Deletions racing: one wins, the others are 404s.
	id := create("anthropic:claude-haiku-4-5")
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range statuses {
		wg.Go(func() { statuses[i] = e.do("DELETE", "/v1/responses/"+id, e.tenantA, nil).status })
	}
	wg.Wait()
	won := 0
	for _, st := range statuses {
		switch st {
		case 200:
			won++
		case 404:
		default:
			t.Fatalf("racing deletes answered %v", statuses)
		}
	}
	if won != 1 {
		t.Fatalf("racing deletes answered %v: want one 200", statuses)
	}
}
