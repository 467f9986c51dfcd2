package http_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// A client that keeps its Responses conversation with store on (the AI
// SDK's default) refers to earlier output items by id. Translated, no
// provider knows Baton's ids: Baton puts the items it stored for the
// tenant in their place, and refuses a reference it does not keep for
// that tenant, before any upstream call.
func TestItemReferencesToBatonsItems(t *testing.T) {
	e, f := newGatewayEnv(t)
	const model = "anthropic:claude-haiku-4-5"
	first := e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": model, "input": "hi"}), 200)
	msgID := gjson.GetBytes(first.raw, "output.0.id").Str
	if !strings.HasPrefix(msgID, "msg_"+strings.TrimPrefix(first.str("id"), "resp_")+"_") {
		t.Fatalf("the item id %q does not name its response %s", msgID, first.str("id"))
	}
	// Streamed, the ids are the same kind, and kept the same way.
	_, events := e.stream("/v1/responses", e.tenantA, map[string]any{"model": model, "input": "hi", "stream": true})
	var streamedID string
	for _, ev := range events {
		if ev[0] == "response.completed" {
			streamedID = gjson.Get(ev[1], "response.output.0.id").Str
		}
	}
	if !strings.HasPrefix(streamedID, "msg_") {
		t.Fatalf("streamed: %v", events)
	}
	for _, id := range []string{msgID, streamedID} {
		second := e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": model, "input": []any{
			map[string]any{"role": "user", "content": "hi"},
			map[string]any{"type": "item_reference", "id": id},
			map[string]any{"role": "user", "content": "and then?"},
		}}), 200)
		if !strings.Contains(gjson.GetBytes(second.raw, "output.0.content.0.text").Str, "turns=3") {
			t.Fatalf("the referenced item did not reach the provider as a turn: %s", second.raw)
		}
	}

	unstored := e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": model, "input": "hi", "store": false}), 200)
	calls := f.calls.Load()
	for _, tc := range []struct {
		name, key, id, want string
	}{
		{"another tenant's", e.tenantB, msgID, "not found"},
		{"a response sent with store false", e.tenantA, gjson.GetBytes(unstored.raw, "output.0.id").Str, "not found"},
		{"a place past the output", e.tenantA, strings.TrimSuffix(msgID, "_0") + "_7", "not found"},
		{"another kind of item at that place", e.tenantA, "fc_" + strings.TrimPrefix(msgID, "msg_"), "not found"},
		{"never answered", e.tenantA, "msg_0123456789abcdef0123456789abcdef_0", "not found"},
		{"another provider's, not passed through for the tenant", e.tenantA, "msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b", "not found"},
	} {
		r := e.do("POST", "/v1/responses", tc.key, map[string]any{"model": model, "input": []any{
			map[string]any{"role": "user", "content": "hi"}, map[string]any{"type": "item_reference", "id": tc.id}}})
		if r.status != 400 || !strings.Contains(r.str("error.message"), tc.want) {
			t.Errorf("%s: %d %s; want 400 saying %q", tc.name, r.status, r.raw, tc.want)
		}
	}
	if f.calls.Load() != calls {
		t.Fatal("a refused reference reached the provider")
	}
}

// References are short and the items they stand for need not be: the body
// they resolve to is held to the same limit as a body sent whole, so that a
// few kilobytes of references to one large item cannot make the server
// build gigabytes.
func TestItemReferencesResolveWithinTheBodyLimit(t *testing.T) {
	e, f := newGatewayEnv(t)
	const model = "anthropic:claude-haiku-4-5"
	big := e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": model, "input": "hi",
		"instructions": strings.Repeat("x", 64<<10)}), 200) // the fake upstream's answer repeats the system prompt
	id := gjson.GetBytes(big.raw, "output.0.id").Str
	refs := []any{map[string]any{"role": "user", "content": "hi"}}
	for range 600 { // about 40 MB once resolved, from a 40 KB body
		refs = append(refs, map[string]any{"type": "item_reference", "id": id})
	}
	calls := f.calls.Load()
	r := e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": model, "input": refs})
	if r.status != 413 || r.str("error.code") != "body_too_large" {
		t.Fatalf("%d %.300s; want 413 body_too_large", r.status, r.raw)
	}
	if f.calls.Load() != calls {
		t.Fatal("a refused request reached the provider")
	}
}

// Passed through, a reference goes to OpenAI, which resolves it against
// every response Baton's one key made: a reference to an item of another
// tenant's response, or to one Baton never passed through, is refused
// before any upstream call; the tenant's own goes on as sent.
func TestItemReferencesPassedThroughAreTheTenants(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "oai:gpt-x", "input": "tenant a's secret"}), 200)
	ref := func(id string) map[string]any {
		return map[string]any{"model": "oai:gpt-x", "input": []any{map[string]any{"type": "item_reference", "id": id},
			map[string]any{"role": "user", "content": "what did I say?"}}}
	}
	n := len(f.requests())
	for _, c := range []struct{ key, id string }{{e.tenantB, "msg_68af0c5a2"}, {e.tenantB, "rs_68af0c4f1"}, {e.tenantA, "msg_neverseen1"}} {
		if r := e.do("POST", "/v1/responses", c.key, ref(c.id)); r.status != 400 || !strings.Contains(r.str("error.message"), "not found") {
			t.Fatalf("%s: %d %s", c.id, r.status, r.raw)
		}
	}
	if len(f.requests()) != n {
		t.Fatal("a refused reference reached the provider")
	}
	e.must(e.do("POST", "/v1/responses", e.tenantA, ref("msg_68af0c5a2")), 200)
	if got := f.requests(); len(got) != n+1 || gjson.GetBytes(got[n].body, "input.0.id").Str != "msg_68af0c5a2" || gjson.GetBytes(got[n].body, "input.0.type").Str != "item_reference" {
		t.Fatalf("the tenant's own reference: %d requests: %s", len(got)-n, got[len(got)-1].body)
	}
}

// A reference's type may be left out or null (OpenAI's SDKs type it
// optional): such an item, with an id and no role, is a reference all the
// same, checked as one before it is passed through (another tenant's item
// is not found) and resolved when translated.
func TestItemReferencesWithoutTheirType(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "oai:gpt-x", "input": "tenant a's secret"}), 200)
	n := len(f.requests())
	for _, ref := range []map[string]any{{"id": "msg_68af0c5a2"}, {"id": "msg_68af0c5a2", "type": nil}, {"id": "msg_68af0c5a2", "role": nil}} {
		r := e.do("POST", "/v1/responses", e.tenantB, map[string]any{"model": "oai:gpt-x", "input": []any{ref,
			map[string]any{"role": "user", "content": "what did I say?"}}})
		if r.status != 400 || !strings.Contains(r.str("error.message"), "not found") || r.str("error.param") != "input[0].id" {
			t.Fatalf("another tenant's item %v: %d %s", ref, r.status, r.raw)
		}
	}
	if len(f.requests()) != n {
		t.Fatal("another tenant's item reached the provider")
	}

	g, _ := newGatewayEnv(t)
	const model = "anthropic:claude-haiku-4-5"
	first := g.must(g.do("POST", "/v1/responses", g.tenantA, map[string]any{"model": model, "input": "hi"}), 200)
	second := g.must(g.do("POST", "/v1/responses", g.tenantA, map[string]any{"model": model, "input": []any{
		map[string]any{"role": "user", "content": "hi"},
		map[string]any{"id": gjson.GetBytes(first.raw, "output.0.id").Str},
		map[string]any{"role": "user", "content": "and then?"},
	}}), 200)
	if !strings.Contains(gjson.GetBytes(second.raw, "output.0.content.0.text").Str, "turns=3") {
		t.Fatalf("the referenced item did not reach the provider as a turn: %s", second.raw)
	}
}

// An input item that gives a name twice is refused before it is passed
// through: Baton reads the first "type" (a message) where the provider's
// parser takes the last (a reference, resolved against every tenant's
// items).
func TestItemReferencesNamedOnce(t *testing.T) {
	e, f, _ := passthroughEnv(t)
	n := len(f.requests())
	for _, item := range []string{
		`{"type":"message","role":"user","content":"x","type":"item_reference","id":"msg_68af0c5a2"}`,
		`{"type":"item_reference","Type":"message","id":"msg_68af0c5a2"}`,
	} {
		r := e.do("POST", "/v1/responses", e.tenantB, `{"model":"oai:gpt-x","input":[{"role":"user","content":"hi"},`+item+`]}`)
		if r.status != 400 || !strings.HasPrefix(r.str("error.param"), "input[1]") {
			t.Fatalf("%s: %d %s", item, r.status, r.raw)
		}
	}
	if len(f.requests()) != n {
		t.Fatal("a refused body reached the provider")
	}
}

// A translated response echoes the options the request set, as OpenAI's
// does, and null for those it did not.
func TestResponsesEchoTheirOptions(t *testing.T) {
	e, _ := newGatewayEnv(t)
	r := e.must(e.do("POST", "/v1/responses", e.tenantA, `{"model":"anthropic:claude-haiku-4-5","input":"x","user":"u1","safety_identifier":"u1","service_tier":"auto","max_tool_calls":3,"prompt_cache_key":"k"}`), 200)
	for path, want := range map[string]string{"safety_identifier": `"u1"`, "service_tier": `"default"`, "max_tool_calls": "3", "prompt_cache_key": `"k"`} {
		if got := gjson.GetBytes(r.raw, path).Raw; got != want {
			t.Errorf("%s: %s, want %s", path, got, want)
		}
	}
	r = e.must(e.do("POST", "/v1/responses", e.tenantA, `{"model":"anthropic:claude-haiku-4-5","input":"x"}`), 200)
	for _, path := range []string{"safety_identifier", "service_tier", "max_tool_calls", "prompt_cache_key"} {
		if got := gjson.GetBytes(r.raw, path); got.Type != gjson.Null || !got.Exists() {
			t.Errorf("%s: %s, want null", path, got.Raw)
		}
	}
}

// previous_response_id already carries the response it names: a
// reference to one of that response's items (or the item itself, by its
// id) beside it goes to the model once, not twice.
func TestItemReferencesIntoThePreviousResponse(t *testing.T) {
	e, f := newGatewayEnv(t)
	const model = "anthropic:claude-haiku-4-5"
	first := e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": model, "input": "hi"}), 200)
	item := gjson.GetBytes(first.raw, "output.0")
	for _, it := range []any{
		map[string]any{"type": "item_reference", "id": item.Get("id").Str},
		map[string]any{"id": item.Get("id").Str},
		json.RawMessage(item.Raw),
	} {
		second := e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": model, "previous_response_id": first.str("id"),
			"input": []any{it, map[string]any{"role": "user", "content": "and then?"}}}), 200)
		f.mu.Lock()
		sent := f.anthropicBodies[len(f.anthropicBodies)-1]
		f.mu.Unlock()
		if n := len(gjson.GetBytes(sent, "messages.1.content").Array()); n != 1 || gjson.GetBytes(sent, "messages.#").Int() != 3 {
			t.Fatalf("%v: the previous response's item went %d times: %s", it, n, sent)
		}
		// Its own turn is what it added: a continuation of it does not
		// carry the item twice either.
		e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": model, "previous_response_id": second.str("id"), "input": "more"}), 200)
		f.mu.Lock()
		sent = f.anthropicBodies[len(f.anthropicBodies)-1]
		f.mu.Unlock()
		if n := len(gjson.GetBytes(sent, "messages.1.content").Array()); n != 1 || gjson.GetBytes(sent, "messages.#").Int() != 5 {
			t.Fatalf("%v, continued: the item went %d times: %s", it, n, sent)
		}
	}
	// Nothing but the previous response's own items: nothing to answer.
	r := e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": model, "previous_response_id": first.str("id"),
		"input": []any{map[string]any{"type": "item_reference", "id": item.Get("id").Str}}})
	if r.status != 400 || r.str("error.param") != "input" {
		t.Fatalf("only the previous response's item: %d %s", r.status, r.raw)
	}
}

// GET input_items names the input items a client sent without an id; a
// reference to one of them is resolved as a reference to an output item
// is: the item as listed, in its place.
func TestItemReferencesToListedInputItems(t *testing.T) {
	e, f := newGatewayEnv(t)
	const model = "anthropic:claude-haiku-4-5"
	first := e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": model, "input": []any{
		map[string]any{"role": "user", "content": "remember 42"}}}), 200)
	list := e.must(e.do("GET", "/v1/responses/"+first.str("id")+"/input_items", e.tenantA, nil), 200)
	id := gjson.GetBytes(list.raw, "data.0.id").Str
	e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": model, "input": []any{
		map[string]any{"type": "item_reference", "id": id}, map[string]any{"role": "user", "content": "what was it?"}}}), 200)
	f.mu.Lock()
	sent := f.anthropicBodies[len(f.anthropicBodies)-1]
	f.mu.Unlock()
	if got := gjson.GetBytes(sent, "messages.0.content.#.text").Raw; got != `["remember 42","what was it?"]` {
		t.Fatalf("the listed item %s did not reach the provider: %s", id, sent)
	}
	// Another tenant's is not found, before any upstream call.
	calls := f.calls.Load()
	r := e.do("POST", "/v1/responses", e.tenantB, map[string]any{"model": model, "input": []any{
		map[string]any{"type": "item_reference", "id": id}, map[string]any{"role": "user", "content": "what was it?"}}})
	if r.status != 400 || r.str("error.param") != "input[0].id" || f.calls.Load() != calls {
		t.Fatalf("another tenant's: %d %s", r.status, r.raw)
	}
	// Beside previous_response_id naming its response, it goes once.
	e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": model, "previous_response_id": first.str("id"), "input": []any{
		map[string]any{"type": "item_reference", "id": id}, map[string]any{"role": "user", "content": "what was it?"}}}), 200)
	f.mu.Lock()
	sent = f.anthropicBodies[len(f.anthropicBodies)-1]
	f.mu.Unlock()
	if gjson.GetBytes(sent, "messages.#").Int() != 3 || gjson.GetBytes(sent, "messages.0.content.#").Int() != 1 {
		t.Fatalf("with previous_response_id: %s", sent)
	}
}

// A reference without an id, or with one that is not a string, says so,
// rather than that an item with an empty id was not found.
func TestItemReferencesWithoutAnID(t *testing.T) {
	e, f := newGatewayEnv(t)
	calls := f.calls.Load()
	for _, ref := range []string{`{"type":"item_reference"}`, `{"type":"item_reference","id":5}`, `{"type":"item_reference","id":""}`, `{"id":null}`} {
		for _, model := range []string{"anthropic:claude-haiku-4-5", "openai:gpt-4o-mini"} {
			r := e.do("POST", "/v1/responses", e.tenantA, `{"model":"`+model+`","input":[`+ref+`,{"role":"user","content":"hi"}]}`)
			if r.status != 400 || r.str("error.param") != "input[0].id" || !strings.Contains(r.str("error.message"), "needs the id") {
				t.Errorf("%s on %s: %d %s", ref, model, r.status, r.raw)
			}
		}
	}
	if f.calls.Load() != calls {
		t.Fatal("a refused reference reached the provider")
	}
}
