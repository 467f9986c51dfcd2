package http_test

// POST /v1/responses translated to Anthropic, against a fake that keeps
// each body it took and answers as it is told: what real clients send
// (testdata/clients) and exactly what Anthropic gets and they get back.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/batonhq/baton/gateway"
	batonhttp "github.com/batonhq/baton/http"
)

// anRecorder is an Anthropic upstream that keeps the bodies it takes and
// answers with the content blocks of reply (a JSON array), whole or as
// the event stream Anthropic sends for them.
type anRecorder struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
	reply  string
	stop   string
}

func newAnRecorder(t *testing.T, reply, stop string) *anRecorder {
	a := &anRecorder{reply: reply, stop: stop}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *anRecorder) last(t *testing.T) map[string]any {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.bodies) == 0 {
		t.Fatal("no request reached Anthropic")
	}
	return a.bodies[len(a.bodies)-1]
}

func (a *anRecorder) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	json.Unmarshal(raw, &body)
	a.mu.Lock()
	a.bodies = append(a.bodies, body)
	a.mu.Unlock()
	usage := `{"input_tokens":10,"output_tokens":5}`
	if body["stream"] != true {
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":`+a.reply+`,"stop_reason":"`+a.stop+`","usage":`+usage+`}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sse(w, "message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":`+usage+`}}`)
	var blocks []map[string]any
	json.Unmarshal([]byte(a.reply), &blocks)
	for i, b := range blocks {
		start := map[string]any{"type": b["type"]}
		var deltas []map[string]any
		switch b["type"] {
		case "text":
			start["text"] = ""
			deltas = append(deltas, map[string]any{"type": "text_delta", "text": b["text"]})
		case "thinking":
			start["thinking"], start["signature"] = "", ""
			deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": b["thinking"]}, map[string]any{"type": "signature_delta", "signature": b["signature"]})
		case "tool_use":
			start["id"], start["name"], start["input"] = b["id"], b["name"], map[string]any{}
			deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": jsonOf(b["input"])})
		}
		sse(w, "content_block_start", jsonOf(map[string]any{"type": "content_block_start", "index": i, "content_block": start}))
		for _, d := range deltas {
			sse(w, "content_block_delta", jsonOf(map[string]any{"type": "content_block_delta", "index": i, "delta": d}))
		}
		sse(w, "content_block_stop", jsonOf(map[string]any{"type": "content_block_stop", "index": i}))
	}
	sse(w, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+a.stop+`"},"usage":{"output_tokens":5}}`)
	sse(w, "message_stop", `{"type":"message_stop"}`)
}

// anEnv is a Baton whose anthropic provider is a.
func anEnv(t *testing.T, a *anRecorder) *env {
	vars := map[string]string{"ANTHROPIC_BASE_URL": a.srv.URL, "ANTHROPIC_API_KEY": "k"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, cat)
}

// clientBodies are the request bodies of a capture in testdata/clients.
func clientBodies(t *testing.T, name string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile("../testdata/clients/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Exchanges []struct {
			Body map[string]any `json:"body"`
		} `json:"exchanges"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, x := range c.Exchanges {
		if x.Body != nil {
			out = append(out, x.Body)
		}
	}
	return out
}

// The AI SDK's image request (openai(model), the Responses API): a data:
// URL becomes a base64 image, an https URL a url image.
func TestResponsesImageToAnthropic(t *testing.T) {
	a := newAnRecorder(t, `[{"type":"text","text":"A pixel and a cat."}]`, "end_turn")
	e := anEnv(t, a)
	body := clientBodies(t, "ai-sdk-openai-image.json")[0]
	body["model"] = "anthropic:claude-sonnet-5-5"
	r := e.must(e.do("POST", "/v1/responses", e.tenantA, body), 200)
	want := `[{"content":[{"text":"What is in these images?","type":"text"},` +
		`{"source":{"data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==","media_type":"image/png","type":"base64"},"type":"image"},` +
		`{"source":{"type":"url","url":"https://example.com/cat.png"},"type":"image"}],"role":"user"}]`
	if got := jsonOf(a.last(t)["messages"]); got != want {
		t.Fatalf("Anthropic got %s", got)
	}
	if !strings.Contains(string(r.raw), `"text":"A pixel and a cat."`) {
		t.Fatalf("answer %s", r.raw)
	}
	// An uploaded file stays OpenAI's.
	body["input"] = []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_image", "file_id": "file_1"}}}}
	if r := e.do("POST", "/v1/responses", e.tenantA, body); r.status != 400 || r.str("error.param") != "input[0].content[0].file_id" {
		t.Fatalf("file_id: %d %s", r.status, r.raw)
	}
}

// codexBody is Codex's request (codex-exec-tool-turn.json, turn i) for
// model, with the tools keep accepts.
func codexBody(t *testing.T, i int, model string, keep func(tool map[string]any) bool) map[string]any {
	t.Helper()
	body := clientBodies(t, "codex-exec-tool-turn.json")[i]
	body["model"] = model
	var tools []any
	for _, tool := range body["tools"].([]any) {
		if keep(tool.(map[string]any)) {
			tools = append(tools, tool)
		}
	}
	body["tools"] = tools
	return body
}

func onlyFunctions(tool map[string]any) bool { return tool["type"] == "function" }

// Codex's reasoning options to Anthropic: effort as adaptive thinking and
// an effort, the summary accepted; the thinking comes back as a reasoning
// item (streamed in the summary events), and the item Codex sends back in
// the next turn reaches Anthropic as the thinking block it was.
func TestResponsesCodexReasoningToAnthropic(t *testing.T) {
	a := newAnRecorder(t, `[{"type":"thinking","thinking":"The user wants the file.","signature":"sig-1"},{"type":"text","text":"Here it is."}]`, "end_turn")
	e := anEnv(t, a)
	client := newOpenAIClient(e, http.DefaultClient, e.tenantA)
	body := codexBody(t, 0, "anthropic:claude-sonnet-5-5", onlyFunctions)
	body["reasoning"] = map[string]any{"effort": "low", "summary": "auto"}
	stream := client.Responses.NewStreaming(testCtx(t), responses.ResponseNewParams{}, option.WithRequestBody("application/json", []byte(jsonOf(body))))
	var types []string
	var final responses.Response
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if ev.Type == "response.completed" {
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()
	got := a.last(t)
	if jsonOf(got["thinking"]) != `{"type":"adaptive"}` || jsonOf(got["output_config"]) != `{"effort":"low"}` {
		t.Fatalf("Anthropic got thinking %v, output_config %v", got["thinking"], got["output_config"])
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.reasoning_summary_part.added",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done",
		"response.content_part.done", "response.output_item.done", "response.completed"}
	if !slices.Equal(types, want) {
		t.Fatalf("events %q", types)
	}
	if len(final.Output) != 2 || final.Output[0].Type != "reasoning" || final.Output[0].Summary[0].Text != "The user wants the file." ||
		final.Output[0].EncryptedContent != "sig-1" || final.OutputText() != "Here it is." || final.Reasoning.Summary != "auto" {
		t.Fatalf("final %s", final.RawJSON())
	}
	// The next turn, as Codex sends it (store: false): the items it got,
	// then the user's.
	next := codexBody(t, 0, "anthropic:claude-sonnet-5-5", onlyFunctions)
	next["stream"] = false
	var items []any
	for _, it := range final.Output {
		var m map[string]any
		json.Unmarshal([]byte(it.RawJSON()), &m)
		items = append(items, m)
	}
	next["input"] = append(append(next["input"].([]any), items...), map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "thanks"}}})
	r := e.must(e.do("POST", "/v1/responses", e.tenantA, next), 200)
	msgs := a.last(t)["messages"].([]any)
	if g := jsonOf(msgs[len(msgs)-2]); g != `{"content":[{"signature":"sig-1","thinking":"The user wants the file.","type":"thinking"},{"text":"Here it is.","type":"text"}],"role":"assistant"}` {
		t.Fatalf("Anthropic got %s", g)
	}
	// Without an effort there is no thinking: none is asked for.
	if _, ok := a.last(t)["thinking"]; ok || !strings.Contains(string(r.raw), `"type":"reasoning"`) {
		t.Fatalf("Anthropic got thinking %v; answer %s", a.last(t)["thinking"], r.raw)
	}
}

// Codex's tools to Anthropic: the multi_agent_v1 namespace's functions as
// plain tools named multi_agent_v1__<name>; Anthropic's call of one comes
// back as the function_call Codex expects (its namespace and own name),
// and Codex's next turn, that call and its output, reaches Anthropic as
// the same tool use and result.
func TestResponsesCodexNamespaceToAnthropic(t *testing.T) {
	a := newAnRecorder(t, `[{"type":"tool_use","id":"toolu_1","name":"multi_agent_v1__spawn_agent","input":{"message":"read notes.txt"}}]`, "tool_use")
	e := anEnv(t, a)
	client := newOpenAIClient(e, http.DefaultClient, e.tenantA)
	noWebSearch := func(tool map[string]any) bool { return tool["type"] != "web_search" }
	body := codexBody(t, 0, "anthropic:claude-sonnet-5-5", noWebSearch)
	stream := client.Responses.NewStreaming(testCtx(t), responses.ResponseNewParams{}, option.WithRequestBody("application/json", []byte(jsonOf(body))))
	var final responses.Response
	var added responses.ResponseOutputItemUnion
	for stream.Next() {
		switch ev := stream.Current(); ev.Type {
		case "response.output_item.added":
			added = ev.Item
		case "response.completed":
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()
	got := a.last(t)
	var names []string
	for _, tool := range got["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	want := []string{"exec_command", "write_stdin", "request_user_input", "view_image", "multi_agent_v1__close_agent", "multi_agent_v1__resume_agent",
		"multi_agent_v1__send_input", "multi_agent_v1__spawn_agent", "multi_agent_v1__wait_agent", "get_goal", "create_goal", "update_goal"}
	if !slices.Equal(names, want) {
		t.Fatalf("Anthropic got tools %q", names)
	}
	spawn := got["tools"].([]any)[7].(map[string]any)
	if d := spawn["description"].(string); !strings.HasSuffix(d, "\n\n(multi_agent_v1: Tools for spawning and managing sub-agents.)") || spawn["input_schema"] == nil {
		t.Fatalf("spawn_agent: %s", jsonOf(spawn))
	}
	if jsonOf(got["tool_choice"]) != `{"type":"auto"}` || got["thinking"] != nil || len(got["messages"].([]any)) != 1 ||
		!strings.HasPrefix(got["system"].(string), "You are a coding agent running in the Codex CLI") {
		t.Fatalf("Anthropic got tool_choice %v, thinking %v, %d messages", got["tool_choice"], got["thinking"], len(got["messages"].([]any)))
	}
	if added.Type != "function_call" || added.Name != "spawn_agent" || added.Namespace != "multi_agent_v1" {
		t.Fatalf("item added %s", added.RawJSON())
	}
	fc := final.Output[0]
	if len(final.Output) != 1 || fc.Type != "function_call" || fc.Name != "spawn_agent" || fc.Namespace != "multi_agent_v1" || fc.CallID != "toolu_1" ||
		fc.Arguments.OfString != `{"message":"read notes.txt"}` {
		t.Fatalf("final %s", final.RawJSON())
	}
	// The next turn, as Codex sends it: the call it got, then its output.
	next := codexBody(t, 0, "anthropic:claude-sonnet-5-5", noWebSearch)
	var call map[string]any
	json.Unmarshal([]byte(fc.RawJSON()), &call)
	next["input"] = append(next["input"].([]any), call, map[string]any{"type": "function_call_output", "call_id": "toolu_1", "output": "agent started"})
	a.reply, a.stop = `[{"type":"text","text":"Started."}]`, "end_turn"
	e.must(e.do("POST", "/v1/responses", e.tenantA, next), 200)
	msgs := a.last(t)["messages"].([]any)
	if g := jsonOf(msgs[1:]); g != `[{"content":[{"id":"toolu_1","input":{"message":"read notes.txt"},"name":"multi_agent_v1__spawn_agent","type":"tool_use"}],"role":"assistant"},`+
		`{"content":[{"content":"agent started","tool_use_id":"toolu_1","type":"tool_result"}],"role":"user"}]` {
		t.Fatalf("Anthropic got %s", g)
	}
	// Codex's second request as captured (exec_command's call and output).
	turn := codexBody(t, 1, "anthropic:claude-sonnet-5-5", noWebSearch)
	e.must(e.do("POST", "/v1/responses", e.tenantA, turn), 200)
	msgs = a.last(t)["messages"].([]any)
	if g := jsonOf(msgs[len(msgs)-2]); g != `{"content":[{"id":"call_rec000002","input":{"cmd":"cat notes.txt"},"name":"exec_command","type":"tool_use"}],"role":"assistant"}` {
		t.Fatalf("Anthropic got %s", g)
	}
	// Codex's default web_search (cached only, no live fetching) has no
	// equivalent: the translated request goes without it, and says so.
	all := codexBody(t, 0, "anthropic:claude-sonnet-5-5", func(map[string]any) bool { return true })
	r := e.must(e.do("POST", "/v1/responses", e.tenantA, all), 200)
	if h := r.header.Get(batonhttp.DroppedToolsHeader); h != "web_search" {
		t.Fatalf("%s: %q", batonhttp.DroppedToolsHeader, h)
	}
	names = nil
	for _, tool := range a.last(t)["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	if !slices.Equal(names, want) {
		t.Fatalf("with Codex's default tools Anthropic got %q", names)
	}
	all["stream"] = false
	if r := e.must(e.do("POST", "/v1/responses", e.tenantA, all), 200); r.header.Get(batonhttp.DroppedToolsHeader) != "web_search" {
		t.Fatalf("not streamed: %s %q", batonhttp.DroppedToolsHeader, r.header.Get(batonhttp.DroppedToolsHeader))
	}
	// A live search would widen what was asked: refused.
	all["tools"].([]any)[8] = map[string]any{"type": "web_search", "external_web_access": true}
	if r := e.do("POST", "/v1/responses", e.tenantA, all); r.status != 400 || r.str("error.param") != "tools[8].type" || !strings.Contains(r.str("error.message"), "web_search") {
		t.Fatalf("live web_search: %d %s", r.status, r.raw)
	}
}
