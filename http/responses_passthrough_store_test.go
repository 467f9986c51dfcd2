package http_test

// Responses passed through to OpenAI are stored as the translated ones
// are, once answered: a conversation begun on an OpenAI model goes on with
// previous_response_id on any model, and on OpenAI itself as it is.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"go.uber.org/goleak"

	"github.com/batonhq/baton/eventstore"
	oai "github.com/batonhq/baton/gateway/openai"
)

// switchEnv is a Baton with the fake OpenAI as provider oai and an
// Anthropic that answers "Ada" and keeps what it was sent; wrap wraps the
// front's store (nil: as it is).
func switchEnv(t *testing.T, wrap func(eventstore.Store) eventstore.Store) (*env, *oaResponses, *anRecorder, openai.Client) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { verifyNoNewGoroutines(t, before) })
	f := newOAResponses(t)
	a := newAnRecorder(t, `[{"type":"text","text":"Ada"}]`, "end_turn")
	cat := catalogWith(t, map[string]string{"ANTHROPIC_BASE_URL": a.srv.URL, "ANTHROPIC_API_KEY": "k", "COMPAT_API_KEY": "sk-upstream-test"}, f.spec())
	e := newEnvStore(t, cat, wrap)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return e, f, a, newOpenAIClient(e, &http.Client{Transport: tr}, e.tenantA)
}

// storedResponse is the stored response id: a passed-through response is
// stored before it is answered, so it is there once the client has it.
func (e *env) storedResponse(id string) oai.ResponsesRecord {
	e.t.Helper()
	evs, err := e.store.ReadStream(context.Background(), oai.ResponsesStreamName(id), 0, 1)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(evs) != 1 {
		e.t.Fatalf("response %s is not stored", id)
	}
	var rec oai.ResponsesRecord
	if err := json.Unmarshal(evs[0].Data, &rec); err != nil {
		e.t.Fatal(err)
	}
	return rec
}

// turns are the messages Anthropic was last sent, as role:text.
func (a *anRecorder) turns(t *testing.T) []string {
	t.Helper()
	var out []string
	msgs, _ := a.last(t)["messages"].([]any)
	for _, m := range msgs {
		m := m.(map[string]any)
		var text []string
		switch c := m["content"].(type) {
		case string:
			text = append(text, c)
		case []any:
			for _, b := range c {
				b := b.(map[string]any)
				text = append(text, fmt.Sprint(b["type"], "=", b["text"]))
			}
		}
		out = append(out, m["role"].(string)+":"+strings.Join(text, ","))
	}
	return out
}

func TestResponsesPassthroughStoredThenAnthropic(t *testing.T) {
	e, f, a, client := switchEnv(t, nil)
	first, err := client.Responses.New(testCtx(t), responses.ResponseNewParams{Model: "oai:gpt-x", Input: textInput("my name is Ada")})
	if err != nil {
		t.Fatal(err)
	}
	rec := e.storedResponse(first.ID)
	if rec.ID != first.ID || rec.Model != "oai:gpt-x" || rec.Upstream != "oai" || !rec.UpstreamStored || rec.Previous != "" || len(rec.Input) != 1 ||
		gjson.GetBytes(rec.Input[0], "content.0.text").Str != "my name is Ada" || !jsonEqual(rec.Response, []byte(first.RawJSON())) {
		t.Fatalf("stored: %+v", rec)
	}
	if r := e.do("GET", "/v1/responses/"+first.ID, e.tenantA, nil); r.status != 200 || !jsonEqual(r.raw, []byte(first.RawJSON())) {
		t.Fatalf("GET: %d %s", r.status, r.raw)
	}
	if r := e.do("GET", "/v1/responses/"+first.ID, e.tenantB, nil); r.status != 404 {
		t.Fatalf("another tenant's GET: %d %s", r.status, r.raw)
	}

	// On Anthropic: the conversation from Baton's store, OpenAI's own
	// reasoning item left out (no other provider can read it).
	next, err := client.Responses.New(testCtx(t), responses.ResponseNewParams{Model: "anthropic:claude-haiku-4-5", Input: textInput("what is my name?"),
		PreviousResponseID: openai.String(first.ID)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"user:text=my name is Ada", "assistant:text=Hi there", "user:text=what is my name?"}
	if got := a.turns(t); fmt.Sprint(got) != fmt.Sprint(want) || next.OutputText() != "Ada" || len(f.requests()) != 1 {
		t.Fatalf("Anthropic got %q, want %q; answer %s", got, want, next.RawJSON())
	}

	// On OpenAI, which keeps it too: the id goes as it is, not expanded.
	sent := []byte(`{"model":"oai:gpt-x","input":"and?","previous_response_id":"` + first.ID + `"}`)
	third, err := client.Responses.New(testCtx(t), responses.ResponseNewParams{}, option.WithRequestBody("application/json", sent))
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if last := reqs[len(reqs)-1]; len(reqs) != 2 || last.path != "/v1/responses" || !bytes.Equal(last.body, asForwarded(t, sent, "gpt-x")) {
		t.Fatalf("to OpenAI: %s %s", last.path, last.body)
	}
	// That one continues the first: on Anthropic, the whole conversation.
	if rec := e.storedResponse(third.ID); rec.Previous != first.ID {
		t.Fatalf("stored: %+v", rec)
	}
	if _, err := client.Responses.New(testCtx(t), responses.ResponseNewParams{Model: "anthropic:claude-haiku-4-5", Input: textInput("so?"),
		PreviousResponseID: openai.String(third.ID)}); err != nil {
		t.Fatal(err)
	}
	want = []string{"user:text=my name is Ada", "assistant:text=Hi there", "user:text=and?", "assistant:text=Hi there", "user:text=so?"}
	if got := a.turns(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Anthropic got %q, want %q", got, want)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// A stream: the response of response.completed, as it was sent, with svc
// and the cost.
func TestResponsesPassthroughStreamStored(t *testing.T) {
	e, _, a, _ := switchEnv(t, nil)
	resp, evs := e.stream("/v1/responses", e.tenantA, map[string]any{"model": "oai:gpt-x", "input": "my name is Ada", "stream": true})
	last := evs[len(evs)-1]
	if resp.StatusCode != 200 || last[0] != "response.completed" {
		t.Fatalf("streamed: %v", evs)
	}
	sent := gjson.Get(last[1], "response")
	rec := e.storedResponse(sent.Get("id").Str)
	if !jsonEqual(rec.Response, []byte(sent.Raw)) || gjson.GetBytes(rec.Response, "svc.trace.selectedModel").Str != "oai:gpt-x" ||
		!gjson.GetBytes(rec.Response, "usage.estimated_cost_usd").Exists() || rec.Upstream != "oai" {
		t.Fatalf("stored %s, sent %s", rec.Response, sent.Raw)
	}
	_, evs = e.stream("/v1/responses", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "input": "what is my name?", "stream": true,
		"previous_response_id": sent.Get("id").Str})
	want := []string{"user:text=my name is Ada", "assistant:text=Hi there", "user:text=what is my name?"}
	if got := a.turns(t); fmt.Sprint(got) != fmt.Sprint(want) || evs[len(evs)-1][0] != "response.completed" {
		t.Fatalf("Anthropic got %q, want %q; %v", got, want, evs)
	}
}

// store: false keeps nothing, passed through as translated.
func TestResponsesPassthroughStoreFalse(t *testing.T) {
	e, _, _, client := switchEnv(t, nil)
	resp, err := client.Responses.New(testCtx(t), responses.ResponseNewParams{Model: "oai:gpt-x", Input: textInput("hi"), Store: openai.Bool(false)})
	if err != nil {
		t.Fatal(err)
	}
	e.usageEvents("a", 1) // recorded after the store would have been written
	evs, err := e.store.ReadStream(context.Background(), oai.ResponsesStreamName(resp.ID), 0, 1)
	if err != nil || len(evs) != 0 {
		t.Fatalf("stored with store: false: %d %v", len(evs), err)
	}
	r := e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "input": "x", "previous_response_id": resp.ID})
	if r.status != 400 || r.str("error.code") != "previous_response_not_found" || r.str("error.param") != "previous_response_id" {
		t.Fatalf("continuing it elsewhere: %d %s", r.status, r.raw)
	}
}

// failResponses is a store that cannot take a stored response.
type failResponses struct{ eventstore.Store }

func (f failResponses) Append(ctx context.Context, stream string, expected eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if strings.HasPrefix(stream, "response-") {
		return eventstore.AppendResult{}, errors.New("store down")
	}
	return f.Store.Append(ctx, stream, expected, evs...)
}

// A store that fails does not fail the call, whole or streamed: the
// answer is OpenAI's, with store: false saying Baton did not keep it (as
// for a translated one), and a continuation of it is a 404 that never
// reaches OpenAI.
func TestResponsesPassthroughStoreFails(t *testing.T) {
	e, f, _, client := switchEnv(t, func(s eventstore.Store) eventstore.Store { return failResponses{s} })
	resp, err := client.Responses.New(testCtx(t), responses.ResponseNewParams{Model: "oai:gpt-x", Input: textInput("hi")})
	if err != nil || resp.OutputText() != "Hi there" || gjson.Get(resp.RawJSON(), "store").Type != gjson.False {
		t.Fatalf("answer: %v %s", err, resp.RawJSON())
	}
	r, evs := e.stream("/v1/responses", e.tenantA, map[string]any{"model": "oai:gpt-x", "input": "hi", "stream": true})
	if last := evs[len(evs)-1]; r.StatusCode != 200 || last[0] != "response.completed" || gjson.Get(last[1], "response.store").Type != gjson.False ||
		gjson.Get(last[1], "response.output.1.content.0.text").Str != "Hi there" {
		t.Fatalf("streamed: %v", evs)
	}
	e.usageEvents("a", 2)
	if r := e.do("GET", "/v1/responses/"+resp.ID, e.tenantA, nil); r.status != 404 {
		t.Fatalf("GET: %d %s", r.status, r.raw)
	}
	before := len(f.requests())
	if r := e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "oai:gpt-x", "input": "and?", "previous_response_id": resp.ID}); r.status != 400 || r.str("error.code") != "previous_response_not_found" || len(f.requests()) != before {
		t.Fatalf("continued: %d %s", r.status, r.raw)
	}
}

// A passed-through response holding an item only OpenAI takes (a built-in
// tool's call) cannot be expanded for Anthropic: a 400 naming
// previous_response_id; OpenAI, which keeps it, still takes the id as it is.
func TestResponsesPassthroughStoredBuiltinItem(t *testing.T) {
	e, f, _, _ := switchEnv(t, nil)
	const id = "resp_0123456789abcdef0123456789abcdef0123456789abcdef"
	answer := `{"id":"` + id + `","object":"response","status":"completed","store":true,"output":[{"type":"web_search_call","id":"ws_1","status":"completed"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"found"}]}]}`
	rec, ok := oai.PassedThrough("oai", "oai:gpt-x", []byte(`{"input":"search"}`), []byte(answer))
	if !ok {
		t.Fatal("not a record")
	}
	if err := (oai.ResponsesStore{Store: e.store}).Save(context.Background(), "a", eventstore.Metadata{Actor: "test"}, rec); err != nil {
		t.Fatal(err)
	}
	r := e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "input": "x", "previous_response_id": id})
	if r.status != 400 || r.str("error.param") != "previous_response_id" || !strings.Contains(r.str("error.message"), "web_search_call") {
		t.Fatalf("to Anthropic: %d %s", r.status, r.raw)
	}
	r = e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "oai:gpt-x", "input": "x", "previous_response_id": id})
	if reqs := f.requests(); r.status != 200 || len(reqs) != 1 || gjson.GetBytes(reqs[0].body, "previous_response_id").Str != id {
		t.Fatalf("to OpenAI: %d %s", r.status, r.raw)
	}
}

// Another tenant's passed-through id is a 404 on every model, OpenAI's
// included: sent as it is, it would continue the other tenant's
// conversation at OpenAI, where Baton's one key holds every tenant's. A
// response stored under its tenant's name (until 2026-11-26) still loads.
func TestResponsesAnotherTenantsIDNotForwarded(t *testing.T) {
	e, f, _, client := switchEnv(t, nil)
	first, err := client.Responses.New(testCtx(t), responses.ResponseNewParams{Model: "oai:gpt-x", Input: textInput("my secret is 42")})
	if err != nil {
		t.Fatal(err)
	}
	e.storedResponse(first.ID)
	for _, model := range []string{"oai:gpt-x", "anthropic:claude-haiku-4-5"} {
		for _, stream := range []bool{false, true} {
			r := e.do("POST", "/v1/responses", e.tenantB, map[string]any{"model": model, "input": "what is my secret?", "previous_response_id": first.ID, "stream": stream})
			if r.status != 400 || r.str("error.code") != "previous_response_not_found" || r.str("error.param") != "previous_response_id" {
				t.Fatalf("tenant b on %s (stream %v): %d %s", model, stream, r.status, r.raw)
			}
		}
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("OpenAI got %d requests, want the first alone", n)
	}

	// Nor one Baton does not keep whole, which OpenAI keeps: a stream cut
	// before its end. Its tenant's continuation goes to OpenAI as the
	// provider's own. (A background response, queued when answered, is
	// refused: nothing of it could be billed.)
	if r := e.do("POST", "/v1/responses", e.tenantA, `{"model":"oai:gpt-x","input":"my secret is 43","background":true}`); r.status != 400 || r.str("error.param") != "background" {
		t.Fatalf("background: %d %s", r.status, r.raw)
	}
	cut := e.do("POST", "/v1/responses", e.tenantA, `{"model":"oai:gpt-cut","input":"my secret is 44","stream":true}`)
	cutID := gjson.Get(strings.SplitN(strings.SplitN(string(cut.raw), "data: ", 2)[1], "\n", 2)[0], "response.id").Str
	if cutID == "" {
		t.Fatalf("cut %s", cut.raw)
	}
	for _, id := range []string{cutID} {
		owned := func() bool {
			evs, _ := e.store.ReadStream(context.Background(), oai.ResponsesStreamName(id), 0, 1)
			return len(evs) == 1 && evs[0].Type == oai.EventResponseOwned && evs[0].Metadata.Tenant == "a"
		}
		// A cut stream is marked once it has ended, as the handler returns.
		for deadline := time.Now().Add(10 * time.Second); !owned(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s not marked as tenant a's", id)
			}
		}
		before := len(f.requests())
		r := e.do("POST", "/v1/responses", e.tenantB, map[string]any{"model": "oai:gpt-x", "input": "what is my secret?", "previous_response_id": id})
		if r.status != 400 || r.str("error.code") != "previous_response_not_found" || r.str("error.param") != "previous_response_id" || len(f.requests()) != before {
			t.Fatalf("tenant b continuing %s: %d %s", id, r.status, r.raw)
		}
		r = e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "oai:gpt-x", "input": "and?", "previous_response_id": id})
		if reqs := f.requests(); r.status != 200 || len(reqs) != before+1 || gjson.GetBytes(reqs[before].body, "previous_response_id").Str != id {
			t.Fatalf("tenant a continuing %s: %d %s", id, r.status, r.raw)
		}
	}

	legacy := e.storedResponse(first.ID)
	legacy.ID = "resp_legacy1"
	legacy.Response, _ = sjson.SetBytes(legacy.Response, "id", legacy.ID)
	data, _ := json.Marshal(legacy)
	if _, err := e.store.Append(context.Background(), "response-a-resp_legacy1", eventstore.NoStream(),
		eventstore.NewEvent(oai.EventResponseStored, data, eventstore.Metadata{Tenant: "a"})); err != nil {
		t.Fatal(err)
	}
	if r := e.do("GET", "/v1/responses/resp_legacy1", e.tenantA, nil); r.status != 200 || r.str("id") != "resp_legacy1" {
		t.Fatalf("a legacy record: %d %s", r.status, r.raw)
	}
	if r := e.do("GET", "/v1/responses/resp_legacy1", e.tenantB, nil); r.status != 404 {
		t.Fatalf("a legacy record, tenant b: %d %s", r.status, r.raw)
	}
}

// A reference to an item of a passed-through response, beside a
// previous_response_id that continues that response on another
// provider's model, is the conversation's already: it goes once, from the
// store, and is not refused as an item only OpenAI could resolve.
func TestResponsesPassthroughItemOfThePreviousResponse(t *testing.T) {
	e, _, a, _ := switchEnv(t, nil)
	first := e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "oai:gpt-x", "input": "my name is Ada"}), 200)
	var msgID string
	for _, it := range gjson.GetBytes(first.raw, "output").Array() {
		if it.Get("type").Str == "message" {
			msgID = it.Get("id").Str
		}
	}
	e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "previous_response_id": first.str("id"),
		"input": []any{map[string]any{"type": "item_reference", "id": msgID}, map[string]any{"role": "user", "content": "what is my name?"}}}), 200)
	want := []string{"user:text=my name is Ada", "assistant:text=Hi there", "user:text=what is my name?"}
	if got := a.turns(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Anthropic got %q, want %q", got, want)
	}
}

// A response Baton keeps only the tenant's mark of (a passed-through
// stream cut before its end) is its provider's alone: a continuation of
// it, or of a later turn, on another provider's model is told so, not
// that the response was deleted or sent with store: false.
func TestResponsesKeptUpstreamToldSo(t *testing.T) {
	e, f, _, _ := switchEnv(t, nil)
	cut := e.do("POST", "/v1/responses", e.tenantA, `{"model":"oai:gpt-cut","input":"my secret is 44","stream":true}`)
	cutID := gjson.Get(strings.SplitN(strings.SplitN(string(cut.raw), "data: ", 2)[1], "\n", 2)[0], "response.id").Str
	owned := func() bool {
		evs, _ := e.store.ReadStream(context.Background(), oai.ResponsesStreamName(cutID), 0, 1)
		return len(evs) == 1 && evs[0].Type == oai.EventResponseOwned
	}
	for deadline := time.Now().Add(10 * time.Second); !owned(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%q not marked", cutID)
		}
	}
	next := e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "oai:gpt-x", "input": "and?", "previous_response_id": cutID}), 200)
	before := len(f.requests())
	for _, id := range []string{cutID, next.str("id")} {
		r := e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "input": "so?", "previous_response_id": id})
		msg := r.str("error.message")
		if r.status != 400 || r.str("error.code") != "previous_response_not_found" || r.str("error.param") != "previous_response_id" ||
			!strings.Contains(msg, cutID) || !strings.Contains(msg, "kept by provider oai alone") || strings.Contains(msg, "deleted") {
			t.Errorf("continuing %s on Anthropic: %d %s", id, r.status, r.raw)
		}
	}
	r := e.do("GET", "/v1/responses/"+cutID, e.tenantA, nil)
	if r.status != 404 || r.str("error.code") != "response_not_found" || !strings.Contains(r.str("error.message"), "kept by provider oai alone") {
		t.Errorf("GET: %d %s", r.status, r.raw)
	}
	// Another tenant is told nothing of it.
	r = e.do("GET", "/v1/responses/"+cutID, e.tenantB, nil)
	if r.status != 404 || strings.Contains(r.str("error.message"), "oai") {
		t.Errorf("another tenant's GET: %d %s", r.status, r.raw)
	}
	if len(f.requests()) != before {
		t.Fatal("a refused continuation reached the provider")
	}
}
