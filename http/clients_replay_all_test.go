package http_test

// Every recorded client request, replayed. testdata/clients/*.json is
// globbed, so a capture added there is covered without touching this file:
// each of its POSTs to a model route goes through Baton passed through to a
// provider of its own wire format (the provider gets the body byte for byte
// but for the model, with the client's protocol headers and query; the
// client gets every byte and event the provider sent, with only Baton's
// fields added), and each streamed one also goes translated to the other
// kind of provider, where the client must get a well-formed stream of its
// own grammar or the documented refusal naming the field.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/batonhq/baton/gateway"
)

// replayExchange is one recorded POST of a capture, with its place in it.
type replayExchange struct {
	capturedCall
	index int // among the capture's exchanges (HEAD probes and GETs included)
}

// The model routes, by the format they speak.
var replayRoutes = map[string]string{
	"/v1/messages":              "anthropic",
	"/v1/messages/count_tokens": "anthropic",
	"/v1/chat/completions":      "chat",
	"/v1/responses":             "responses",
}

// replayCaptures reads every capture file's recorded POSTs to the model
// routes, in the order the client sent them. A POST to another /v1 route
// fails the test: a new capture must not be skipped silently.
func replayCaptures(t *testing.T) map[string][]replayExchange {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "clients", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no captures in testdata/clients")
	}
	out := map[string][]replayExchange{}
	for _, f := range files {
		name := filepath.Base(f)
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !gjson.ValidBytes(raw) {
			t.Fatalf("%s: not JSON", name)
		}
		var ex []replayExchange
		gjson.GetBytes(raw, "exchanges").ForEach(func(i, x gjson.Result) bool {
			if x.Get("method").Str != "POST" {
				return true
			}
			p, _, _ := strings.Cut(x.Get("path").Str, "?")
			if _, ok := replayRoutes[p]; !ok {
				if strings.HasPrefix(p, "/v1/") {
					t.Errorf("%s#%d: POST %s is not a route this test replays", name, i.Int(), p)
				}
				return true
			}
			var body bytes.Buffer
			if err := json.Compact(&body, []byte(x.Get("body").Raw)); err != nil {
				t.Fatalf("%s#%d: %v", name, i.Int(), err)
			}
			h := http.Header{}
			x.Get("headers").ForEach(func(k, v gjson.Result) bool {
				h.Set(k.Str, v.Str)
				return true
			})
			ex = append(ex, replayExchange{capturedCall{file: name, path: x.Get("path").Str, header: h, body: body.Bytes()}, int(i.Int())})
			return true
		})
		if len(ex) > 0 {
			out[name] = ex
		}
	}
	return out
}

// replayFiles is the captures' names, sorted (Glob sorts; the map does not).
func replayFiles(c map[string][]replayExchange) []string {
	var out []string
	for f := range c {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// An OpenAI Responses stream (reasoning item, then text) and the whole
// response; RESP_ID is each answer's own id, as OpenAI's are (Baton stores
// passed-through responses under their id).
const (
	replayRespObject = `{"id":"RESP_ID","object":"response","created_at":1764000000,"status":%q,"background":false,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"gpt-4o-mini-2024-07-18","output":[%s],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":"low","summary":null},"store":true,"temperature":1.0,"text":{"format":{"type":"text"},"verbosity":"low"},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":%s,"user":null,"metadata":{}}`
	replayReasoning  = `{"id":"rs_replay1","type":"reasoning","summary":[],"encrypted_content":"gAAAAABo-opaque"}`
	replayMessage    = `{"id":"msg_replay1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Hi there"}],"role":"assistant"}`
	replayRespUsage  = `{"input_tokens":1200,"input_tokens_details":{"cached_tokens":1000},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":250},"total_tokens":1500}`
)

var (
	replayResponsesWhole  = fmt.Sprintf(replayRespObject, "completed", replayReasoning+","+replayMessage, replayRespUsage)
	replayResponsesStream = func() string {
		var b strings.Builder
		seq := 0
		ev := func(typ, rest string) {
			fmt.Fprintf(&b, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,%s}\n\n", typ, typ, seq, rest)
			seq++
		}
		inProgress := fmt.Sprintf(replayRespObject, "in_progress", "", "null")
		ev("response.created", `"response":`+inProgress)
		ev("response.in_progress", `"response":`+inProgress)
		ev("response.output_item.added", `"output_index":0,"item":{"id":"rs_replay1","type":"reasoning","summary":[]}`)
		ev("response.output_item.done", `"output_index":0,"item":`+replayReasoning)
		ev("response.output_item.added", `"output_index":1,"item":{"id":"msg_replay1","type":"message","status":"in_progress","content":[],"role":"assistant"}`)
		ev("response.content_part.added", `"item_id":"msg_replay1","output_index":1,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`)
		ev("response.output_text.delta", `"item_id":"msg_replay1","output_index":1,"content_index":0,"delta":"Hi","logprobs":[],"obfuscation":"x1"`)
		ev("response.output_text.delta", `"item_id":"msg_replay1","output_index":1,"content_index":0,"delta":" there","logprobs":[],"obfuscation":"x2"`)
		ev("response.output_text.done", `"item_id":"msg_replay1","output_index":1,"content_index":0,"text":"Hi there","logprobs":[]`)
		ev("response.content_part.done", `"item_id":"msg_replay1","output_index":1,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":"Hi there"}`)
		ev("response.output_item.done", `"output_index":1,"item":`+replayMessage)
		ev("response.completed", `"response":`+replayResponsesWhole)
		return b.String()
	}()
)

// replayUpstreams are the recording providers of a replay env, one per
// route: Anthropic's messages and count_tokens, OpenAI's chat completions
// and Responses.
type replayUpstreams struct {
	messages, count, chat, responses *recordingUpstream

	mu       sync.Mutex
	n        int
	lastSent string // the last Responses answer as sent, its id filled in
}

// total is the number of requests every upstream got.
func (u *replayUpstreams) total() int {
	n := 0
	for _, r := range []*recordingUpstream{u.messages, u.count, u.chat, u.responses} {
		r.mu.Lock()
		n += len(r.got)
		r.mu.Unlock()
	}
	return n
}

// replayEnv is a Baton with an Anthropic provider (anthropic:*) and an
// OpenAI provider (openai:*), both recording.
func replayEnv(t *testing.T) (*env, *replayUpstreams) {
	u := &replayUpstreams{
		messages: &recordingUpstream{answer: func(s bool) (string, string) {
			if s {
				return "text/event-stream", anthropicThinkingStream
			}
			return "application/json", anthropicThinkingMessage
		}},
		count: &recordingUpstream{answer: func(bool) (string, string) { return "application/json", `{"input_tokens":4321}` }},
		chat: &recordingUpstream{answer: func(s bool) (string, string) {
			if s {
				return "text/event-stream", openaiChunkStream
			}
			return "application/json", openaiCompletion
		}},
	}
	u.responses = &recordingUpstream{answer: func(s bool) (string, string) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.n++
		ct, body := "application/json", replayResponsesWhole
		if s {
			ct, body = "text/event-stream", replayResponsesStream
		}
		u.lastSent = strings.ReplaceAll(body, "RESP_ID", fmt.Sprintf("resp_replay%04d", u.n))
		return ct, u.lastSent
	}}
	anth := http.NewServeMux()
	anth.Handle("/v1/messages", u.messages)
	anth.Handle("/v1/messages/count_tokens", u.count)
	oai := http.NewServeMux()
	oai.Handle("/v1/chat/completions", u.chat)
	oai.Handle("/v1/responses", u.responses)
	anthSrv, oaiSrv := httptest.NewServer(anth), httptest.NewServer(oai)
	t.Cleanup(anthSrv.Close)
	t.Cleanup(oaiSrv.Close)
	vars := map[string]string{
		"ANTHROPIC_BASE_URL": anthSrv.URL, "ANTHROPIC_API_KEY": "provider-key",
		"OPENAI_BASE_URL": oaiSrv.URL + "/v1", "OPENAI_API_KEY": "provider-key",
	}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, cat), u
}

// replayAnswer is Baton's answer to a replayed request.
type replayAnswer struct {
	status int
	ct     string
	header http.Header
	raw    []byte
}

// replaySend sends a captured request to Baton: the client's headers as
// recorded (but for those the transport sets and the redacted credentials),
// the tenant's key, and body as given.
func replaySend(t *testing.T, e *env, c capturedCall, body []byte) replayAnswer {
	t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+c.path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range c.header {
		switch strings.ToLower(k) {
		case "host", "content-length", "connection", "accept-encoding", "transfer-encoding":
			continue
		}
		if vs[0] == "REDACTED" {
			continue
		}
		req.Header[k] = vs
	}
	req.Header.Set("x-api-key", e.tenantA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return replayAnswer{status: resp.StatusCode, ct: resp.Header.Get("Content-Type"), header: resp.Header, raw: raw}
}

// replayStripBaton is a passed-through event's or answer's data with
// Baton's additions taken out (withoutBaton's, and those on a Responses
// event's response).
func replayStripBaton(t *testing.T, data string) string {
	t.Helper()
	data = withoutBaton(t, data)
	for _, p := range []string{"response.svc", "response.usage.estimated_cost_usd"} {
		out, err := sjson.Delete(data, p)
		if err != nil {
			t.Fatal(err)
		}
		data = out
	}
	return data
}

// openaiClientHeaders are the client headers Baton forwards to OpenAI
// itself (docs/api.md, Passthrough first), besides every x-codex-* header
// whose name does not say it holds a secret.
var openaiClientHeaders = []string{"originator", "version", "session_id", "session-id", "thread-id", "conversation_id",
	"x-client-request-id", "x-openai-internal-codex-responses-lite", "openai-beta"}

func forwardedToOpenAI(name string) bool {
	name = strings.ToLower(name)
	for _, h := range openaiClientHeaders {
		if name == h {
			return true
		}
	}
	if !strings.HasPrefix(name, "x-codex-") {
		return false
	}
	for _, s := range []string{"auth", "key", "token", "secret", "cookie", "password", "credential"} {
		if strings.Contains(name, s) {
			return false
		}
	}
	return true
}

// The models the replays are sent to. The recorded bodies name models as
// their clients do: bare names (Claude Code's claude-opus-4-8, Codex's
// gpt-6.2-sol, the Agents SDK's gpt-5.6-luna) and a prefixed one. As the
// existing passthrough tests do (TestClientsPassThroughToAnthropic,
// asForwarded), the replay sets the model to a catalog id with sjson, in
// place, so that every capture reaches the provider this test means
// whatever the catalog lists (a bare name's route depends on which
// providers list it, and is TestBareDefaultModelGoesToTheFrontsProvider's
// subject), and the provider must get the recorded body with only the
// model's value changed to the provider's own name for it.
var replayModels = map[string][2]string{ // format: {catalog id, the provider's name}
	"anthropic": {"anthropic:claude-haiku-4-5", "claude-haiku-4-5"},
	"chat":      {"openai:gpt-4o-mini", "gpt-4o-mini"},
	"responses": {"openai:gpt-4o-mini", "gpt-4o-mini"},
}

func setModel(t *testing.T, body []byte, model string) []byte {
	t.Helper()
	out, err := sjson.SetBytes(body, "model", model)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestClientsReplayAllPassThrough replays every recorded POST of every
// capture, in each capture's order, to a provider of its own wire format.
func TestClientsReplayAllPassThrough(t *testing.T) {
	e, u := replayEnv(t)
	caps := replayCaptures(t)
	seen := map[string]int{}
	for _, file := range replayFiles(caps) {
		for _, c := range caps[file] {
			p, query, _ := strings.Cut(c.path, "?")
			format := replayRoutes[p]
			seen[p]++
			name := fmt.Sprintf("%s#%d", c.file, c.index)
			t.Run(name, func(t *testing.T) {
				replayPassThrough(t, e, u, c, p, query, format)
			})
		}
	}
	for _, p := range []string{"/v1/messages", "/v1/chat/completions", "/v1/responses"} {
		if seen[p] == 0 {
			t.Errorf("no capture posts to %s", p)
		}
	}
}

func replayPassThrough(t *testing.T, e *env, u *replayUpstreams, c replayExchange, route, query, format string) {
	ids := replayModels[format]
	body := setModel(t, c.body, ids[0])
	stream := gjson.GetBytes(body, "stream").Bool()
	before := u.total()
	a := replaySend(t, e, c.capturedCall, body)
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.raw)
	}
	if n := u.total() - before; n != 1 {
		t.Fatalf("the providers got %d requests, want 1", n)
	}

	// What the provider got: the recorded body, only the model's value
	// changed (and what the route documents it changes).
	up := map[string]*recordingUpstream{"/v1/messages": u.messages, "/v1/messages/count_tokens": u.count,
		"/v1/chat/completions": u.chat, "/v1/responses": u.responses}[route]
	got := up.last(t)
	want := setModel(t, c.body, ids[1])
	switch {
	case route == "/v1/messages/count_tokens":
		// Counted by the provider: max_tokens and stream left out.
		for _, k := range []string{"stream", "max_tokens"} {
			want, _ = sjson.DeleteBytes(want, k)
		}
	case format == "chat" && stream && !gjson.GetBytes(c.body, "stream_options.include_usage").Bool():
		// Baton asks for the usage chunk to bill the call.
		want, _ = sjson.SetBytes(want, "stream_options.include_usage", true)
	}
	if !bytes.Equal(got.body, want) {
		t.Fatalf("the provider got\n%.2000s\nwant\n%.2000s", got.body, want)
	}
	if got.path != route || got.query != query {
		t.Fatalf("the provider got %s?%s, want %s?%s", got.path, got.query, route, query)
	}
	if format == "anthropic" {
		if v := c.header.Get("anthropic-version"); v != "" && got.header.Get("anthropic-version") != v {
			t.Fatalf("anthropic-version %q, the client sent %q", got.header.Get("anthropic-version"), v)
		}
		if v := c.header.Get("anthropic-beta"); strings.Join(got.header.Values("anthropic-beta"), ",") != v {
			t.Fatalf("anthropic-beta %q, the client sent %q", got.header.Values("anthropic-beta"), v)
		}
		if got.header.Get("x-api-key") != "provider-key" {
			t.Fatalf("the provider got key %q, not Baton's own", got.header.Get("x-api-key"))
		}
	} else {
		for k := range c.header {
			if forwardedToOpenAI(k) && got.header.Get(k) != c.header.Get(k) {
				t.Fatalf("header %s: the provider got %q, the client sent %q", k, got.header.Get(k), c.header.Get(k))
			}
		}
		if got.header.Get("Authorization") != "Bearer provider-key" {
			t.Fatalf("the provider got Authorization %q, not Baton's own", got.header.Get("Authorization"))
		}
	}

	// What the client got: what the provider sent, with Baton's fields.
	var sent string
	switch route {
	case "/v1/messages":
		sent = map[bool]string{true: anthropicThinkingStream, false: anthropicThinkingMessage}[stream]
	case "/v1/messages/count_tokens":
		if gjson.GetBytes(a.raw, "input_tokens").Int() != 4321 {
			t.Fatalf("the client got %s", a.raw)
		}
		return
	case "/v1/chat/completions":
		sent = map[bool]string{true: openaiChunkStream, false: openaiCompletion}[stream]
	case "/v1/responses":
		u.mu.Lock()
		sent = u.lastSent
		u.mu.Unlock()
	}
	if !stream {
		if !strings.HasPrefix(a.ct, "application/json") || replayStripBaton(t, string(a.raw)) != sent {
			t.Fatalf("the client got (%s)\n%s\nthe provider sent\n%s", a.ct, a.raw, sent)
		}
		if m := gjson.GetBytes(a.raw, "svc.trace.selectedModel").Str; m != ids[0] {
			t.Fatalf("svc.trace.selectedModel %q: %s", m, a.raw)
		}
		return
	}
	if !strings.HasPrefix(a.ct, "text/event-stream") {
		t.Fatalf("a stream answered as %q: %s", a.ct, a.raw)
	}
	events := sseRaw(t, bytes.NewReader(a.raw))
	upEvents := sseRaw(t, strings.NewReader(sent))
	if format == "chat" && !gjson.GetBytes(c.body, "stream_options.include_usage").Bool() {
		// The usage chunk Baton asked for is not passed on.
		upEvents = append(upEvents[:3:3], upEvents[4])
	}
	if len(events) != len(upEvents) {
		t.Fatalf("%d events, the provider sent %d: %v", len(events), len(upEvents), events)
	}
	for j, ev := range events {
		if ev[0] != upEvents[j][0] || replayStripBaton(t, ev[1]) != upEvents[j][1] {
			t.Fatalf("event %d is %v, the provider sent %v", j, ev, upEvents[j])
		}
	}
}

// TestClientsReplayResponsesTurnsInOrder replays each Responses-API
// capture's requests in the order the client sent them, later turns
// (function_call and function_call_output items, the Agents SDK's without
// previous_response_id) included, each answered before the next is sent,
// and each turn's passed-through answer stored by Baton under OpenAI's id
// unless the client said store: false (Codex).
func TestClientsReplayResponsesTurnsInOrder(t *testing.T) {
	caps := replayCaptures(t)
	outputs := 0
	for _, file := range replayFiles(caps) {
		var turns []replayExchange
		for _, c := range caps[file] {
			if p, _, _ := strings.Cut(c.path, "?"); p == "/v1/responses" {
				turns = append(turns, c)
			}
		}
		if len(turns) == 0 {
			continue
		}
		t.Run(file, func(t *testing.T) {
			e, u := replayEnv(t)
			for i, c := range turns {
				body := setModel(t, c.body, "openai:gpt-4o-mini")
				a := replaySend(t, e, c.capturedCall, body)
				if a.status != 200 {
					t.Fatalf("turn %d (#%d): %d %s", i, c.index, a.status, a.raw)
				}
				u.responses.mu.Lock()
				n, got := len(u.responses.got), u.responses.got[len(u.responses.got)-1]
				u.responses.mu.Unlock()
				if n != i+1 || !bytes.Equal(got.body, setModel(t, c.body, "gpt-4o-mini")) {
					t.Fatalf("turn %d (#%d): the provider's request %d is\n%.1000s", i, c.index, n, got.body)
				}
				// A tool result answers a call the same input holds before it.
				calls := map[string]bool{}
				for _, it := range gjson.GetBytes(got.body, "input").Array() {
					switch it.Get("type").Str {
					case "function_call":
						calls[it.Get("call_id").Str] = true
					case "function_call_output":
						if !calls[it.Get("call_id").Str] || !it.Get("output").Exists() {
							t.Fatalf("turn %d: a function_call_output without its call: %s", i, it.Raw)
						}
						outputs++
					}
				}
				// The turn's answer, stored unless the client said not to.
				id := fmt.Sprintf("resp_replay%04d", i+1)
				if a.ct == "application/json" || strings.HasPrefix(a.ct, "application/json;") {
					if gjson.GetBytes(a.raw, "id").Str != id {
						t.Fatalf("turn %d: answer %s", i, a.raw)
					}
				} else if evs := sseRaw(t, bytes.NewReader(a.raw)); gjson.Get(evs[len(evs)-1][1], "response.id").Str != id {
					t.Fatalf("turn %d: last event %v", i, evs[len(evs)-1])
				}
				r := e.do("GET", "/v1/responses/"+id, e.tenantA, nil)
				if gjson.GetBytes(c.body, "store").Type == gjson.False {
					if r.status != 404 {
						t.Fatalf("turn %d: store false, yet GET %s answers %d %s", i, id, r.status, r.raw)
					}
				} else if r.status != 200 || r.str("id") != id || r.str("status") != "completed" {
					t.Fatalf("turn %d: GET %s: %d %s", i, id, r.status, r.raw)
				}
			}
		})
	}
	if outputs < 2 {
		t.Fatalf("%d function_call_output items replayed; the Agents SDK's and Codex's tool turns have some", outputs)
	}
}

// replayRefusal is a field Baton refuses by design when a capture is
// translated (docs/api.md), and what the replay then leaves out of the body
// to go on with the rest of it.
type replayRefusal struct{ param, remove string }

// The translated replays refused by design, by capture and exchange, in the
// order Baton names them; once they are left out, the rest of the request
// must translate and stream.
//   - text.verbosity (Responses): no translated provider has it; the Agents
//     SDK sends text {verbosity: low} on every turn, Codex's responses-lite
//     shape too (codex-exec, codex-exec-custom-provider).
//   - an additional_tools input item (Codex's responses-lite shape puts its
//     tools there, with custom lark-grammar tools): only message,
//     function_call, function_call_output (and reasoning) items translate.
//
// Codex's classic shape (codex-exec-tool-turn) translates as it is, its
// cache-only web_search dropped and said so in Baton-Dropped-Tools.
var replayRefusals = map[string][]replayRefusal{
	"agents-sdk-run-stream.json#0":      {{"text.verbosity", "text.verbosity"}},
	"agents-sdk-run-stream.json#1":      {{"text.verbosity", "text.verbosity"}},
	"codex-exec.json#1":                 {{"text.verbosity", "text.verbosity"}, {"input[0].type", "input.0"}},
	"codex-exec-custom-provider.json#0": {{"text.verbosity", "text.verbosity"}, {"input[0].type", "input.0"}},
}

// TestClientsReplayAllStreamsTranslated replays every streamed recorded
// request translated to the other kind of provider: a messages stream to
// an OpenAI model (chat completions upstream), a chat stream and a
// Responses stream to an Anthropic model. The client must get a
// well-formed stream of its own grammar carrying the provider's text and
// ending as its grammar ends (message_stop, [DONE], response.completed),
// or, where Baton refuses a field by design (replayRefusals), a 400 naming
// that field before any upstream call.
func TestClientsReplayAllStreamsTranslated(t *testing.T) {
	replayEachTranslated(t, true, replayRefusals, replayTranslated)
}

// replayEachTranslated runs replay on every recorded request (but
// count_tokens) that streams or not as stream says, checking that each
// entry of refusals names one of them.
func replayEachTranslated(t *testing.T, stream bool, refusals map[string][]replayRefusal,
	replay func(*testing.T, *env, *replayUpstreams, replayExchange, string, []replayRefusal)) {
	e, u := replayEnv(t)
	caps := replayCaptures(t)
	used := map[string]bool{}
	for _, file := range replayFiles(caps) {
		for _, c := range caps[file] {
			route, _, _ := strings.Cut(c.path, "?")
			if route == "/v1/messages/count_tokens" || gjson.GetBytes(c.body, "stream").Bool() != stream {
				continue
			}
			name := fmt.Sprintf("%s#%d", c.file, c.index)
			used[name] = true
			t.Run(name, func(t *testing.T) {
				replay(t, e, u, c, replayRoutes[route], refusals[name])
			})
		}
	}
	for name := range refusals {
		if !used[name] {
			t.Errorf("the refusals name %s, which is no capture of this kind (streamed: %v)", name, stream)
		}
	}
	if len(used) == 0 {
		t.Fatalf("no capture (streamed: %v)", stream)
	}
}

// replaySendTranslated sends a capture to the other kind's model: each
// refusal by design first (a 400 naming its field, no upstream request),
// then the rest, which must be answered 200 in ct after one upstream
// request. It returns the answer, the body sent and what the provider got.
func replaySendTranslated(t *testing.T, e *env, u *replayUpstreams, c replayExchange, format string, refusals []replayRefusal, ct string) (replayAnswer, []byte, recorded) {
	t.Helper()
	model, up := "anthropic:claude-haiku-4-5", u.messages
	if format == "anthropic" {
		model, up = "openai:gpt-4o-mini", u.chat
	}
	body := setModel(t, c.body, model)
	for _, r := range refusals {
		before := u.total()
		a := replaySend(t, e, c.capturedCall, body)
		if a.status != 400 || replayParam(format, a.raw) != r.param {
			t.Fatalf("want a 400 naming %s, got %d %s", r.param, a.status, a.raw)
		}
		if n := u.total() - before; n != 0 {
			t.Fatalf("refused, yet the providers got %d requests", n)
		}
		var err error
		if body, err = sjson.DeleteBytes(body, r.remove); err != nil {
			t.Fatal(err)
		}
	}
	before := u.total()
	a := replaySend(t, e, c.capturedCall, body)
	if a.status != 200 || !strings.HasPrefix(a.ct, ct) {
		t.Fatalf("%d (%s) %.1000s", a.status, a.ct, a.raw)
	}
	if n := u.total() - before; n != 1 {
		t.Fatalf("the providers got %d requests, want 1", n)
	}
	got := up.last(t)
	if gjson.GetBytes(got.body, "stream").Bool() != (ct == "text/event-stream") {
		t.Fatalf("the provider's stream flag is not the client's: %.500s", got.body)
	}
	return a, body, got
}

func replayTranslated(t *testing.T, e *env, u *replayUpstreams, c replayExchange, format string, refusals []replayRefusal) {
	a, body, got := replaySendTranslated(t, e, u, c, format, refusals, "text/event-stream")
	events := sseRaw(t, bytes.NewReader(a.raw))
	switch format {
	case "anthropic":
		replayAnthropicGrammar(t, events, `{"name":"Ada"}`)
		replayToolResultsToChat(t, body, got.body)
	case "chat":
		replayChatGrammar(t, events, "Hi!")
	case "responses":
		replayResponsesGrammar(t, events, "Hi!")
		replayFunctionOutputsToAnthropic(t, body, got.body)
		dropped := false
		for _, tool := range gjson.GetBytes(body, "tools").Array() {
			dropped = dropped || tool.Get("type").Str == "web_search" && tool.Get("external_web_access").Type == gjson.False
		}
		if h := a.header.Get("Baton-Dropped-Tools"); (h == "web_search") != dropped {
			t.Fatalf("Baton-Dropped-Tools %q; the request has a cache-only web_search: %v", h, dropped)
		}
	}
}

// replayParam is the field a 400 names: error.param on the OpenAI fronts,
// the message's start on the messages front.
func replayParam(format string, raw []byte) string {
	if format == "anthropic" {
		p, _, _ := strings.Cut(gjson.GetBytes(raw, "error.message").Str, ":")
		return p
	}
	return gjson.GetBytes(raw, "error.param").Str
}

func replayJSONEvent(t *testing.T, i int, ev [2]string) gjson.Result {
	t.Helper()
	if !gjson.Valid(ev[1]) {
		t.Fatalf("event %d: data is not JSON: %s", i, ev[1])
	}
	return gjson.Parse(ev[1])
}

// replayAnthropicGrammar checks a messages stream: message_start first;
// content blocks started in index order, each delta and stop on the open
// block; message_delta with a stop reason once every block is closed;
// message_stop last; each event named as its data's type; the text deltas
// make want.
func replayAnthropicGrammar(t *testing.T, events [][2]string, want string) {
	t.Helper()
	if len(events) < 3 || events[0][0] != "message_start" || events[len(events)-1][0] != "message_stop" {
		t.Fatalf("not message_start ... message_stop: %v", events)
	}
	open, next, stopped := int64(-1), int64(0), false
	var text strings.Builder
	for i, ev := range events {
		d := replayJSONEvent(t, i, ev)
		if d.Get("type").Str != ev[0] {
			t.Fatalf("event %d named %q is of type %q", i, ev[0], d.Get("type").Str)
		}
		switch ev[0] {
		case "message_start":
			if i != 0 || d.Get("message.role").Str != "assistant" {
				t.Fatalf("event %d: %s", i, ev[1])
			}
		case "content_block_start":
			if open != -1 || d.Get("index").Int() != next || stopped {
				t.Fatalf("event %d: a block starts at %d, %d open, %d next: %s", i, d.Get("index").Int(), open, next, ev[1])
			}
			open, next = next, next+1
		case "content_block_delta":
			if d.Get("index").Int() != open || open == -1 {
				t.Fatalf("event %d: a delta for block %d, %d open", i, d.Get("index").Int(), open)
			}
			if d.Get("delta.type").Str == "text_delta" {
				text.WriteString(d.Get("delta.text").Str)
			}
		case "content_block_stop":
			if d.Get("index").Int() != open || open == -1 {
				t.Fatalf("event %d: block %d stops, %d open", i, d.Get("index").Int(), open)
			}
			open = -1
		case "message_delta":
			if open != -1 || stopped || d.Get("delta.stop_reason").Str == "" {
				t.Fatalf("event %d: %s (block %d open)", i, ev[1], open)
			}
			stopped = true
		case "message_stop":
			if i != len(events)-1 || !stopped {
				t.Fatalf("event %d: message_stop before message_delta or the end", i)
			}
		case "ping":
		default:
			t.Fatalf("event %d: %v", i, ev)
		}
	}
	if text.String() != want {
		t.Fatalf("the text deltas make %q, want %q", text.String(), want)
	}
}

// replayChatGrammar checks a chat completions stream: chunks of one id,
// each a chat.completion.chunk, one finish_reason after the content, and
// [DONE] last; the content deltas make want.
func replayChatGrammar(t *testing.T, events [][2]string, want string) {
	t.Helper()
	if len(events) < 2 || events[len(events)-1][1] != "[DONE]" {
		t.Fatalf("no [DONE] at the end: %v", events)
	}
	var text strings.Builder
	finished := false
	id := gjson.Get(events[0][1], "id").Str
	for i, ev := range events[:len(events)-1] {
		d := replayJSONEvent(t, i, ev)
		if ev[0] != "" || d.Get("object").Str != "chat.completion.chunk" || d.Get("id").Str != id || id == "" {
			t.Fatalf("event %d: %v", i, ev)
		}
		for _, ch := range d.Get("choices").Array() {
			if s := ch.Get("delta.content").Str; s != "" {
				if finished {
					t.Fatalf("event %d: content after the finish: %s", i, ev[1])
				}
				text.WriteString(s)
			}
			if fr := ch.Get("finish_reason"); fr.Exists() && fr.Type != gjson.Null {
				if finished || fr.Str == "" {
					t.Fatalf("event %d: finish_reason %s", i, fr.Raw)
				}
				finished = true
			}
		}
	}
	if !finished || text.String() != want {
		t.Fatalf("finished %v, the content deltas make %q, want %q", finished, text.String(), want)
	}
}

// replayResponsesGrammar checks a Responses stream: each event named as
// its type and numbered from 0; response.created first and
// response.completed (status completed) last; each output item added
// then done, with its output_index; the text deltas make want, as does the
// completed response's message.
func replayResponsesGrammar(t *testing.T, events [][2]string, want string) {
	t.Helper()
	if len(events) < 3 || events[0][0] != "response.created" || events[len(events)-1][0] != "response.completed" {
		t.Fatalf("not response.created ... response.completed: %v", events)
	}
	added := map[int64]string{}
	var text strings.Builder
	for i, ev := range events {
		d := replayJSONEvent(t, i, ev)
		if d.Get("type").Str != ev[0] || d.Get("sequence_number").Int() != int64(i) || !d.Get("sequence_number").Exists() {
			t.Fatalf("event %d: %v", i, ev)
		}
		switch ev[0] {
		case "response.output_item.added":
			if _, ok := added[d.Get("output_index").Int()]; ok {
				t.Fatalf("event %d: output %d added twice", i, d.Get("output_index").Int())
			}
			added[d.Get("output_index").Int()] = d.Get("item.id").Str
		case "response.output_item.done":
			if id, ok := added[d.Get("output_index").Int()]; !ok || id != d.Get("item.id").Str {
				t.Fatalf("event %d: item %s done, not added", i, d.Get("item.id").Str)
			}
			delete(added, d.Get("output_index").Int())
		case "response.output_text.delta":
			text.WriteString(d.Get("delta").Str)
		case "response.failed", "response.incomplete", "error":
			t.Fatalf("event %d: %v", i, ev)
		}
	}
	last := gjson.Parse(events[len(events)-1][1])
	if len(added) != 0 || text.String() != want || last.Get("response.status").Str != "completed" ||
		last.Get("response.id").Str != gjson.Get(events[0][1], "response.id").Str {
		t.Fatalf("items left open %v, the text deltas make %q, want %q; last %s", added, text.String(), want, events[len(events)-1][1])
	}
	var msg string
	for _, it := range last.Get("response.output").Array() {
		if it.Get("type").Str == "message" {
			msg += it.Get("content.0.text").Str
		}
	}
	if msg != want {
		t.Fatalf("the completed response's message is %q: %s", msg, events[len(events)-1][1])
	}
}

// replayFunctionOutputsToAnthropic checks that each function_call and
// function_call_output item of a Responses body reached Anthropic as a
// tool_use and its tool_result, in that order, under the call's id.
func replayFunctionOutputsToAnthropic(t *testing.T, sent, got []byte) {
	t.Helper()
	where := map[string]int{} // a block's kind and id -> the message it is in
	for i, m := range gjson.GetBytes(got, "messages").Array() {
		for _, b := range m.Get("content").Array() {
			switch b.Get("type").Str {
			case "tool_use":
				where["use "+b.Get("id").Str] = i
			case "tool_result":
				where["result "+b.Get("tool_use_id").Str] = i
			}
		}
	}
	for _, it := range gjson.GetBytes(sent, "input").Array() {
		if it.Get("type").Str != "function_call_output" {
			continue
		}
		id := it.Get("call_id").Str
		use, ok1 := where["use "+id]
		res, ok2 := where["result "+id]
		if !ok1 || !ok2 || res <= use {
			t.Fatalf("call %s: Anthropic got no tool_use then tool_result: %.2000s", id, gjson.GetBytes(got, "messages").Raw)
		}
	}
}

// replayToolResultsToChat checks that each tool_result of a messages body
// reached OpenAI as a tool message answering an assistant's tool call of
// that id.
func replayToolResultsToChat(t *testing.T, sent, got []byte) {
	t.Helper()
	calls, results := map[string]int{}, map[string]int{}
	for i, m := range gjson.GetBytes(got, "messages").Array() {
		for _, c := range m.Get("tool_calls").Array() {
			calls[c.Get("id").Str] = i
		}
		if m.Get("role").Str == "tool" {
			results[m.Get("tool_call_id").Str] = i
		}
	}
	for _, m := range gjson.GetBytes(sent, "messages").Array() {
		for _, b := range m.Get("content").Array() {
			if b.Get("type").Str != "tool_result" {
				continue
			}
			id := b.Get("tool_use_id").Str
			c, ok1 := calls[id]
			r, ok2 := results[id]
			if !ok1 || !ok2 || r <= c {
				t.Fatalf("tool_result %s: OpenAI got no tool call then tool message", id)
			}
		}
	}
}

// The whole (non-streamed) recorded requests translated, refused by design
// as their streamed twins are (text.verbosity on every Agents SDK turn).
var replayWholeRefusals = map[string][]replayRefusal{
	"agents-sdk-run.json#0": {{"text.verbosity", "text.verbosity"}},
	"agents-sdk-run.json#1": {{"text.verbosity", "text.verbosity"}},
}

// TestClientsReplayAllWholeTranslated replays every recorded request that
// is not streamed translated to the other kind of provider, as
// TestClientsReplayAllStreamsTranslated does the streamed ones: the
// client gets its own answer shape carrying the provider's text (Claude's
// thinking too, where its front has a place for it), or a 400 naming a
// field refused by design before any upstream call.
func TestClientsReplayAllWholeTranslated(t *testing.T) {
	replayEachTranslated(t, false, replayWholeRefusals, replayWholeTranslated)
}

func replayWholeTranslated(t *testing.T, e *env, u *replayUpstreams, c replayExchange, format string, refusals []replayRefusal) {
	a, body, got := replaySendTranslated(t, e, u, c, format, refusals, "application/json")
	ans := gjson.ParseBytes(a.raw)
	switch format {
	case "anthropic":
		if ans.Get("type").Str != "message" || ans.Get(`content.#(type=="text").text`).Str != `{"name":"Ada"}` || ans.Get("usage.input_tokens").Int() <= 0 {
			t.Fatalf("answer %s", a.raw)
		}
		replayToolResultsToChat(t, body, got.body)
	case "chat":
		msg := ans.Get("choices.0.message")
		if ans.Get("object").Str != "chat.completion" || msg.Get("content").Str != "Hi!" || msg.Get("reasoning_content").Str != "The user says hi." {
			t.Fatalf("answer %s", a.raw)
		}
	case "responses":
		if ans.Get("object").Str != "response" || ans.Get("status").Str != "completed" || ans.Get(`output.#(type=="message").content.0.text`).Str != "Hi!" ||
			!strings.Contains(ans.Get(`output.#(type=="reasoning")`).Raw, "The user says hi.") {
			t.Fatalf("answer %s", a.raw)
		}
		replayFunctionOutputsToAnthropic(t, body, got.body)
	}
}
