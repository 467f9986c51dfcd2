package openai

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/gateway"
)

// param is the field a decode error names ("" when none).
func param(err error) string {
	var de *domain.Error
	if errors.As(err, &de) && len(de.Fields) > 0 {
		return de.Fields[0].Pointer
	}
	return ""
}

func TestDecodeResponsesRequest(t *testing.T) {
	c, err := DecodeResponsesRequest([]byte(`{
		"model": "anthropic:claude-3-5-haiku-latest", "instructions": "be brief", "max_output_tokens": 64, "temperature": 0.2,
		"user": "u1", "reasoning": {"effort": "low"}, "parallel_tool_calls": false,
		"tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": true}],
		"tool_choice": {"type": "function", "name": "get_weather"},
		"input": [
			{"role": "developer", "content": "answer in French"},
			{"role": "user", "content": [{"type": "input_text", "text": "weather "}, {"type": "input_text", "text": "in Paris?"}]},
			{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}]},
			{"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
			{"type": "function_call_output", "call_id": "call_1", "output": "sunny"}
		]}`))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Request
	if r.System != "be brief\n\nanswer in French" || r.MaxTokens != 64 || *r.Temperature != 0.2 || r.User != "u1" || r.ReasoningEffort != "low" {
		t.Fatalf("request %+v", r)
	}
	if r.ToolChoice == nil || r.ToolChoice.Mode != gateway.ToolChoiceTool || r.ToolChoice.Name != "get_weather" || !r.ToolChoice.DisableParallel {
		t.Fatalf("tool choice %+v", r.ToolChoice)
	}
	// The user's text parts are a block each; the assistant's text and its
	// call are one turn; the result a user turn.
	if len(r.Messages) != 3 || len(r.Messages[0].Content) != 2 || r.Messages[0].Content[0].Text != "weather " || r.Messages[0].Content[1].Text != "in Paris?" || len(r.Messages[1].Content) != 2 ||
		r.Messages[1].Content[1].Type != "tool_use" || r.Messages[1].Content[1].ID != "call_1" ||
		r.Messages[2].Content[0].Type != "tool_result" || r.Messages[2].Content[0].ToolUseID != "call_1" || r.Messages[2].Content[0].Text != "sunny" {
		t.Fatalf("messages %+v", r.Messages)
	}
	if len(c.Input) != 5 {
		t.Fatalf("input items %d", len(c.Input))
	}
	// Continuing: the history goes first, its system items after the
	// instructions, before the call's own.
	c.Continue(ResponsesHistory{Messages: []gateway.Message{{Role: "user", Content: []gateway.Block{{Type: "text", Text: "earlier"}}}}, System: []string{"old rule"}})
	if c.Request.Messages[0].Content[0].Text != "earlier" || len(c.Request.Messages) != 4 || c.Request.System != "be brief\n\nold rule\n\nanswer in French" {
		t.Fatalf("continued %+v", c.Request)
	}
}

// input_image parts of a user message are image blocks: a data: URL's
// media type and data, or the URL; detail is not carried.
func TestDecodeResponsesRequestImages(t *testing.T) {
	c, err := DecodeResponsesRequest([]byte(`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"what"},{"type":"input_text","text":" is it?"},
		{"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"high"},{"type":"input_image","image_url":"https://x/y.png"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []gateway.Block{{Type: "text", Text: "what"}, {Type: "text", Text: " is it?"}, {Type: "image", MediaType: "image/png", Data: "AAAA"}, {Type: "image", URL: "https://x/y.png"}}
	if m := c.Request.Messages; len(m) != 1 || !slices.EqualFunc(m[0].Content, want, func(a, b gateway.Block) bool {
		return a.Type == b.Type && a.Text == b.Text && a.MediaType == b.MediaType && a.Data == b.Data && a.URL == b.URL
	}) {
		t.Fatalf("messages %+v", m)
	}
}

// A namespace's functions go to the provider as plain functions named
// namespace__name; a call of one comes back as a function_call with its
// namespace and own name, and such a call sent back is the same tool use.
func TestResponsesNamespaceTools(t *testing.T) {
	c, err := DecodeResponsesRequest([]byte(`{"model":"m","tools":[{"type":"function","name":"exec"},
		{"type":"namespace","name":"multi_agent_v1","description":"Sub-agents.","tools":[{"type":"function","name":"spawn_agent","description":"Spawn one.","parameters":{"type":"object"}}]}],
		"tool_choice":{"type":"function","name":"spawn_agent","namespace":"multi_agent_v1"},
		"input":[{"role":"user","content":"go"},{"type":"function_call","call_id":"c1","namespace":"multi_agent_v1","name":"spawn_agent","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":"ok"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Request
	if len(r.Tools) != 2 || r.Tools[1].Name != "multi_agent_v1__spawn_agent" || r.Tools[1].Description != "Spawn one.\n\n(multi_agent_v1: Sub-agents.)" ||
		r.ToolChoice.Name != "multi_agent_v1__spawn_agent" || r.Messages[1].Content[0].Name != "multi_agent_v1__spawn_agent" {
		t.Fatalf("request %+v", r)
	}
	o := c.Object("resp_1", time.Unix(1, 0), "p:m")
	o.Complete(&gateway.Response{Content: []gateway.Block{{Type: "tool_use", ID: "c2", Name: "multi_agent_v1__spawn_agent", Input: json.RawMessage(`{"a":1}`)},
		{Type: "tool_use", ID: "c3", Name: "exec"}}, StopReason: gateway.StopToolUse}, nil, nil, time.Unix(2, 0))
	a, b := o.Output[0].(ResponsesFunctionCall), o.Output[1].(ResponsesFunctionCall)
	if a.Name != "spawn_agent" || a.Namespace != "multi_agent_v1" || b.Name != "exec" || b.Namespace != "" || strings.Contains(jsonText(t, b), "namespace") {
		t.Fatalf("output %s", jsonText(t, o.Output))
	}
	s := NewResponsesStream(c.Object("resp_2", time.Unix(1, 0), "p:m"), nil, (&collect{}).emit)
	s.Delta(gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: 0, ID: "c4", Name: "multi_agent_v1__spawn_agent", Arguments: "{}"}})
	final, _ := s.Close(gateway.StopToolUse, nil, time.Unix(2, 0))
	if fc := final.Output[0].(ResponsesFunctionCall); fc.Name != "spawn_agent" || fc.Namespace != "multi_agent_v1" {
		t.Fatalf("streamed %+v", fc)
	}
	for _, tc := range []struct{ body, param string }{
		{`{"model":"m","input":"x","tools":[{"type":"namespace","name":"ns","tools":[{"type":"custom","name":"exec"}]}]}`, "tools/0/tools/0/type"},
		{`{"model":"m","input":"x","tools":[{"type":"namespace","name":"ns","tools":[]}]}`, "tools/0/tools"},
		{`{"model":"m","input":"x","tools":[{"type":"namespace","name":"n.s","tools":[{"type":"function","name":"f"}]}]}`, "tools/0/name"},
		{`{"model":"m","input":"x","tools":[{"type":"namespace","name":"` + strings.Repeat("n", 40) + `","tools":[{"type":"function","name":"` + strings.Repeat("f", 30) + `"}]}]}`, "tools/0/tools/0/name"},
		{`{"model":"m","input":"x","tools":[{"type":"function","name":"ns__f"},{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f"}]}]}`, "tools/1/name"},
	} {
		if _, err := DecodeResponsesRequest([]byte(tc.body)); err == nil || param(err) != tc.param {
			t.Errorf("%s: %v (param %q, want %q)", tc.body, err, param(err), tc.param)
		}
	}
}

func TestDecodeResponsesRequestFormats(t *testing.T) {
	c, err := DecodeResponsesRequest([]byte(`{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"reply","schema":{"type":"object"},"strict":true}}}`))
	if err != nil || c.Request.Output == nil || c.Request.Output.Name != "reply" || !c.Request.Output.Strict || !c.Request.NeedsJSON {
		t.Fatalf("json_schema: %+v %v", c, err)
	}
	c, err = DecodeResponsesRequest([]byte(`{"model":"m","input":"x","text":{"format":{"type":"json_object"}}}`))
	if err != nil || !c.Request.JSONObject {
		t.Fatalf("json_object: %v", err)
	}
}

func TestDecodeResponsesRequestRefusals(t *testing.T) {
	for _, tc := range []struct{ body, param string }{
		{`{"input":"x"}`, "model"},
		{`{"model":"m"}`, "input"},
		{`{"model":"m","input":[{"role":"system","content":"only rules"}]}`, "input"},
		{`{"model":"m","input":"x","tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]}`, "tools/0/type"},
		{`{"model":"m","input":"x","tools":[{"type":"computer_use_preview"}]}`, "tools/0/type"},
		{`{"model":"m","input":"x","tools":[{"type":"function","name":"f","defer_loading":true}]}`, "tools/0/defer_loading"},
		{`{"model":"m","input":"x","tools":[{"type":"function","name":"f","strict":"true"}]}`, "tools/0/strict"},
		{`{"model":"m","input":"x","background":true}`, "background"},
		{`{"model":"m","input":"x","prompt":{"id":"pmpt_1"}}`, "prompt"},
		{`{"model":"m","input":"x","truncation":"auto"}`, "truncation"},
		{`{"model":"m","input":"x","top_logprobs":2}`, "top_logprobs"},
		{`{"model":"m","input":"x","service_tier":"flex"}`, "service_tier"},
		{`{"model":"m","input":"x","text":{"verbosity":"low"}}`, "text/verbosity"},
		{`{"model":"m","input":[{"type":"reasoning","summary":[{"type":"other"}],"encrypted_content":"s"}]}`, "input/0/summary/0/type"},
		{`{"model":"m","input":"x","include":["something.new"]}`, "include/0"},
		{`{"model":"m","input":"x","tool_choice":{"type":"web_search_preview"},"tools":[{"type":"function","name":"f"}]}`, "tool_choice/type"},
		{`{"model":"m","input":"x","tool_choice":"required"}`, "tool_choice"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_id":"file_1"}]}]}`, "input/0/content/0/type"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]}`, "input/0/content/0/file_id"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"ftp://x/y.png"}]}]}`, "input/0/content/0/image_url"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png,abc"}]}]}`, "input/0/content/0/image_url"},
		{`{"model":"m","input":[{"role":"assistant","content":[{"type":"input_image","image_url":"https://x/y.png"}]}]}`, "input/0/content/0/type"},
		{`{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, "input/0/type"},
		{`{"model":"m","input":[{"type":"web_search_call","id":"ws_1"}]}`, "input/0/type"},
		{`{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, "input/0/call_id"},
		{`{"model":"m","input":[{"role":"robot","content":"x"}]}`, "input/0/role"},
		{`{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"bad name","schema":{}}}}`, "text/format/name"},
		{`{"model":"m","input":"x","max_output_tokens":0}`, "max_output_tokens"},
		{`{"model":"m","input":"x","metadata":{"k":1}}`, "metadata"},
		{`{"model":"m","input":"x","stream_options":{"include_obfuscation":false}}`, "stream_options"},
		{`{"model":"m","input":"x","stream":false,"stream_options":{}}`, "stream_options"},
		{`{"model":"m","input":"x","stream":true,"stream_options":5}`, "stream_options"},
	} {
		_, err := DecodeResponsesRequest([]byte(tc.body))
		if err == nil || param(err) != tc.param || domain.KindOf(err) != domain.KindInvalid {
			t.Errorf("%s: %v (param %q, want %q)", tc.body, err, param(err), tc.param)
		}
	}
	for _, body := range []string{``, `{`, `nope`, `{"model":"m",}`} {
		if _, err := DecodeResponsesRequest([]byte(body)); domain.KindOf(err) != domain.KindBadRequest {
			t.Errorf("%q: %v, want a malformed_json error", body, err)
		}
	}
	// A reasoning item without a signature (Baton's answer from an
	// OpenAI-compatible server's reasoning, replayed) is left out, not
	// refused: the turns around it go on.
	rc, err := DecodeResponsesRequest([]byte(`{"model":"m","input":[{"role":"user","content":"hi"},{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Let me think."}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello"}]},{"role":"user","content":"again"}]}`))
	if err != nil {
		t.Fatalf("an unsigned reasoning item: %v", err)
	}
	if n := len(rc.Request.Messages); n != 3 {
		t.Fatalf("%d messages, want 3: %+v", n, rc.Request.Messages)
	}
	for _, m := range rc.Request.Messages {
		for _, b := range m.Content {
			if b.Type == "thinking" {
				t.Errorf("an unsigned reasoning item became a thinking block: %+v", b)
			}
		}
	}
	// What is vacuous through Baton is accepted: nothing it includes can
	// appear in an answer.
	if _, err := DecodeResponsesRequest([]byte(`{"model":"m","input":"x","include":["reasoning.encrypted_content"],"truncation":"disabled","service_tier":"auto","store":false}`)); err != nil {
		t.Fatal(err)
	}
	// Stream options with a stream, or null, are taken, as OpenAI takes them.
	for _, body := range []string{`{"model":"m","input":"x","stream":true,"stream_options":{"include_obfuscation":false}}`, `{"model":"m","input":"x","stream_options":null}`} {
		if _, err := DecodeResponsesRequest([]byte(body)); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// collect is a stream's events, as name and decoded data.
type collect struct{ events []map[string]any }

func (c *collect) emit(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	if m["type"] != name {
		return errors.New("event name and data type differ: " + name)
	}
	c.events = append(c.events, m)
	return nil
}

func (c *collect) types() []string {
	var out []string
	for _, e := range c.events {
		out = append(out, e["type"].(string))
	}
	return out
}

func newTestStream(t *testing.T, body string) (*ResponsesStream, *collect) {
	t.Helper()
	call, err := DecodeResponsesRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	c := &collect{}
	return NewResponsesStream(call.Object("resp_1", time.Unix(1, 0), "p:m"), call.Request.Output, c.emit), c
}

// Text, then two interleaved tool calls (as an OpenAI-shaped upstream may
// send them), then more text: each item opens, streams and closes in the
// grammar, and sequence numbers count every event.
func TestResponsesStreamGrammar(t *testing.T) {
	s, c := newTestStream(t, `{"model":"p:m","input":"x","tools":[{"type":"function","name":"a"},{"type":"function","name":"b"}]}`)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Start())
	must(s.Delta(gateway.Delta{Text: "Hi"}))
	must(s.Delta(gateway.Delta{Text: " there"}))
	must(s.Delta(gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: 0, ID: "call_a", Name: "a"}}))
	must(s.Delta(gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: 1, ID: "call_b", Name: "b", Arguments: `{"y":`}}))
	must(s.Delta(gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: 0, Arguments: `{"x":1}`}}))
	must(s.Delta(gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: 1, Arguments: `2}`}}))
	must(s.Delta(gateway.Delta{Refusal: "no"}))
	final, err := s.Close(gateway.StopEndTurn, NewResponsesUsage(gateway.Usage{InputTokens: 3, OutputTokens: 4, CacheReadTokens: 5}, nil), time.Unix(2, 0))
	must(err)
	must(s.Terminal())
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.output_item.added", "response.function_call_arguments.delta",
		"response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done", "response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.refusal.delta", "response.refusal.done",
		"response.content_part.done", "response.output_item.done", "response.completed"}
	if got := c.types(); !slices.Equal(got, want) {
		t.Fatalf("events\n%q\nwant\n%q", got, want)
	}
	for i, e := range c.events {
		if e["sequence_number"] != float64(i) {
			t.Fatalf("event %d: sequence_number %v", i, e["sequence_number"])
		}
	}
	if len(final.Output) != 4 || final.Status != ResponsesCompleted || final.Usage.InputTokens != 8 || final.Usage.TotalTokens != 12 {
		t.Fatalf("final %+v", final)
	}
	a, b := final.Output[1].(ResponsesFunctionCall), final.Output[2].(ResponsesFunctionCall)
	if a.Arguments != `{"x":1}` || b.Arguments != `{"y":2}` || a.CallID != "call_a" || b.Status != ResponsesCompleted {
		t.Fatalf("calls %+v %+v", a, b)
	}
	if m := final.Output[0].(ResponsesMessage); m.Content[0].(ResponsesOutputText).Text != "Hi there" {
		t.Fatalf("message %+v", m)
	}
}

// Thinking streams as a reasoning item, its summary the thinking and its
// encrypted_content the signature; the text after it as a message.
func TestResponsesStreamReasoning(t *testing.T) {
	s, c := newTestStream(t, `{"model":"p:m","input":"x","reasoning":{"effort":"low","summary":"auto"}}`)
	s.Start()
	s.Delta(gateway.Delta{Thinking: "Let me "})
	s.Delta(gateway.Delta{Thinking: "think."})
	s.Delta(gateway.Delta{Signature: "sig"})
	s.Delta(gateway.Delta{Text: "Four."})
	final, err := s.Close(gateway.StopEndTurn, nil, time.Unix(2, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done",
		"response.content_part.done", "response.output_item.done"}
	if got := c.types(); !slices.Equal(got, want) {
		t.Fatalf("events\n%q\nwant\n%q", got, want)
	}
	if got := jsonText(t, c.events[8]["item"]); !strings.HasPrefix(got, `{"encrypted_content":"sig","id":"rs_`) || !strings.HasSuffix(got, `,"summary":[{"text":"Let me think.","type":"summary_text"}],"type":"reasoning"}`) {
		t.Fatalf("reasoning item %s", got)
	}
	if len(final.Output) != 2 || final.Output[0].(ResponsesReasoningItem).Summary[0].Text != "Let me think." || *final.Reasoning.Summary != "auto" {
		t.Fatalf("final %+v", final)
	}
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A structured answer sent as the schema's tool (Anthropic) streams as
// the message's text.
func TestResponsesStreamStructuredAnswer(t *testing.T) {
	s, c := newTestStream(t, `{"model":"p:m","input":"x","text":{"format":{"type":"json_schema","name":"reply","schema":{"type":"object"}}}}`)
	s.Start()
	s.Delta(gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: 0, ID: "toolu_1", Name: "reply"}})
	s.Delta(gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: 0, Arguments: `{"a":`}})
	s.Delta(gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: 0, Arguments: `1}`}})
	final, _ := s.Close(gateway.StopToolUse, nil, time.Unix(2, 0))
	if got := strings.Join(c.types(), " "); strings.Contains(got, "function_call") {
		t.Fatalf("the answer's tool streamed as a call: %s", got)
	}
	if len(final.Output) != 1 || final.Output[0].(ResponsesMessage).Content[0].(ResponsesOutputText).Text != `{"a":1}` {
		t.Fatalf("final %+v", final.Output)
	}
}

func TestResponsesStreamFail(t *testing.T) {
	s, c := newTestStream(t, `{"model":"p:m","input":"x"}`)
	s.Start()
	s.Delta(gateway.Delta{Text: "partial"})
	if obj := s.Fail("upstream_rate_limited", "slow down", "", nil); obj.Status != ResponsesFailed || !obj.Store {
		t.Fatalf("failed %+v", obj)
	}
	if err := s.Failed(); err != nil {
		t.Fatal(err)
	}
	got := c.types()
	if got[len(got)-2] != "error" || got[len(got)-1] != "response.failed" {
		t.Fatalf("events %q", got)
	}
	resp := c.events[len(c.events)-1]["response"].(map[string]any)
	if resp["status"] != "failed" || resp["error"].(map[string]any)["code"] != "rate_limit_exceeded" || resp["store"] != true ||
		c.events[len(c.events)-2]["code"] != "upstream_rate_limited" {
		t.Fatalf("failed response %v", resp)
	}
}

// A finished call's output: text, the client's calls, the structured
// answer's tool as text; a cut answer is incomplete.
func TestResponsesObjectComplete(t *testing.T) {
	call, _ := DecodeResponsesRequest([]byte(`{"model":"p:m","input":"x","metadata":{"k":"v"}}`))
	o := call.Object("resp_1", time.Unix(1, 0), "p:m")
	o.Complete(&gateway.Response{Content: []gateway.Block{{Type: "text", Text: "let me see"}, {Type: "tool_use", ID: "c1", Name: "f", Input: json.RawMessage(`{}`)}},
		StopReason: gateway.StopToolUse}, nil, nil, time.Unix(2, 0))
	if len(o.Output) != 2 || o.Status != ResponsesCompleted || o.Output[1].(ResponsesFunctionCall).CallID != "c1" || o.Metadata["k"] != "v" {
		t.Fatalf("%+v", o)
	}
	// Thinking is a reasoning item; a reasoning item sent back is the
	// thinking block again.
	o = call.Object(NewResponsesID(), time.Unix(1, 0), "p:m") // an id of Baton's: its reasoning is taken back as Baton's
	o.Complete(&gateway.Response{Content: []gateway.Block{{Type: "thinking", Thinking: "hmm", Signature: "sig"}, {Type: "text", Text: "ok"}}, StopReason: gateway.StopEndTurn}, nil, nil, time.Unix(2, 0))
	item := jsonText(t, o.Output[0])
	if len(o.Output) != 2 || !strings.Contains(item, `"summary":[{"type":"summary_text","text":"hmm"}],"encrypted_content":"sig"`) {
		t.Fatalf("%s", jsonText(t, o.Output))
	}
	back, err := DecodeResponsesRequest([]byte(`{"model":"m","input":[{"role":"user","content":"x"},` + item + `,{"role":"user","content":"y"}]}`))
	if err != nil || len(back.Request.Messages) != 3 || jsonText(t, back.Request.Messages[1].Content) != `[{"type":"thinking","thinking":"hmm","signature":"sig"}]` {
		t.Fatalf("sent back: %+v %v", back, err)
	}
	o = call.Object("resp_2", time.Unix(1, 0), "p:m")
	o.Complete(&gateway.Response{Content: []gateway.Block{{Type: "text", Text: "cut"}}, StopReason: gateway.StopMaxTokens}, nil, nil, time.Unix(2, 0))
	if o.Status != ResponsesIncomplete || o.IncompleteDetails.Reason != "max_output_tokens" || o.Output[0].(ResponsesMessage).Status != ResponsesIncomplete {
		t.Fatalf("%+v", o)
	}
	out := &gateway.OutputSchema{Name: "reply", Schema: json.RawMessage(`{"type":"object"}`)}
	o = call.Object("resp_3", time.Unix(1, 0), "p:m")
	o.Complete(&gateway.Response{Content: []gateway.Block{{Type: "tool_use", ID: "t", Name: "reply", Input: json.RawMessage(`{"a":1}`)}}, StopReason: gateway.StopToolUse}, out, nil, time.Unix(2, 0))
	if len(o.Output) != 1 || o.Output[0].(ResponsesMessage).Content[0].(ResponsesOutputText).Text != `{"a":1}` {
		t.Fatalf("%+v", o.Output)
	}
}

// FuzzDecodeResponsesRequest: no body makes the decoder panic, every
// refusal is a domain error, and an accepted body yields a request with a
// model and at least one message, each with content.
func FuzzDecodeResponsesRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"local:echo","input":"hello"}`,
		`{"model":"m","instructions":"i","input":[{"role":"user","content":[{"type":"input_text","text":"a"}]}],"stream":true,"store":false}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"r"}]}]}`,
		`{"model":"m","input":"x","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"f"}]},"parallel_tool_calls":false}`,
		`{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object"}}},"previous_response_id":"resp_0"}`,
		`{"model":"m","input":[{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]},{"role":"user","content":""}]}`,
		`{"model":"m","input":[{"type":"reasoning"}]}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","namespace":"ns","name":"f","arguments":"{}"}],"tools":[{"type":"namespace","name":"ns","description":"d","tools":[{"type":"function","name":"f"}]}],"tool_choice":{"type":"function","namespace":"ns","name":"f"}}`,
		`{"model":"m","reasoning":{"effort":"low","summary":"auto"},"include":["reasoning.encrypted_content"],"input":[{"role":"user","content":"x"},{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"t"}],"encrypted_content":"sig"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"low"},{"type":"input_image","image_url":"https://x/y.png"}]}]}`,
		`{"model":"m","input":7}`,
		`[]`, `null`, `{}`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := DecodeResponsesRequest(body)
		if err != nil {
			var de *domain.Error
			if !errors.As(err, &de) {
				t.Fatalf("%q: an error that is not a domain error: %v", body, err)
			}
			return
		}
		if c.Request.Model == "" || c.Request.Model != c.Wire.Model || len(c.Request.Messages) == 0 || len(c.Input) == 0 {
			t.Fatalf("%q: accepted without a model or messages: %+v", body, c.Request)
		}
		for _, m := range c.Request.Messages {
			if (m.Role != "user" && m.Role != "assistant") || len(m.Content) == 0 {
				t.Fatalf("%q: message %+v", body, m)
			}
		}
		if _, err := json.Marshal(c.Object(NewResponsesID(), time.Now(), c.Wire.Model)); err != nil {
			t.Fatalf("%q: the response object does not encode: %v", body, err)
		}
	})
}

// Thinking with no text (display omitted: its signature alone) and a
// redacted thinking block are reasoning items, whole and streamed, with
// no summary; sent back, they are the blocks again, which Anthropic needs
// in a tool loop (they were dropped).
func TestResponsesSignedAndRedactedThinking(t *testing.T) {
	call, _ := DecodeResponsesRequest([]byte(`{"model":"p:m","input":"x","tools":[{"type":"function","name":"f"}]}`))
	o := call.Object(NewResponsesID(), time.Unix(1, 0), "p:m")
	o.Complete(&gateway.Response{Content: []gateway.Block{{Type: "thinking", Signature: "S1"}, {Type: "redacted_thinking", Data: "R1"},
		{Type: "tool_use", ID: "c1", Name: "f", Input: json.RawMessage(`{}`)}}, StopReason: gateway.StopToolUse}, nil, nil, time.Unix(2, 0))
	whole := jsonText(t, o.Output)
	if len(o.Output) != 3 || !strings.Contains(whole, `"summary":[],"encrypted_content":"S1"`) || !strings.Contains(whole, `"summary":[],"encrypted_content":"baton.redacted_thinking:R1"`) {
		t.Fatalf("whole output %s", whole)
	}

	c := &collect{}
	s := NewResponsesStream(call.Object(NewResponsesID(), time.Unix(1, 0), "p:m"), nil, c.emit) // an id of Baton's: its reasoning is taken back
	s.Start()
	s.Delta(gateway.Delta{Signature: "S1"})
	s.Delta(gateway.Delta{Redacted: "R1", Commit: true})
	s.Delta(gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: 0, ID: "c1", Name: "f", Arguments: "{}"}})
	final, err := s.Close(gateway.StopToolUse, nil, time.Unix(2, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.output_item.done", "response.output_item.added", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done"}
	if got := c.types(); !slices.Equal(got, want) {
		t.Fatalf("events\n%q\nwant\n%q", got, want)
	}
	streamed := jsonText(t, final.Output)
	if !strings.Contains(streamed, `"summary":[],"encrypted_content":"S1"`) || !strings.Contains(streamed, `"summary":[],"encrypted_content":"baton.redacted_thinking:R1"`) {
		t.Fatalf("streamed output %s", streamed)
	}
	for i, out := range []string{whole, streamed} {
		back, err := DecodeResponsesRequest([]byte(`{"model":"m","input":[{"role":"user","content":"x"}` + strings.TrimSuffix(strings.Replace(out, "[", ",", 1), "]") +
			`,{"type":"function_call_output","call_id":"c1","output":"r"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonText(t, back.Request.Messages[1].Content); got != `[{"type":"thinking","signature":"S1"},{"type":"redacted_thinking","data":"R1"},{"type":"tool_use","id":"c1","name":"f","input":{}}]` {
			t.Fatalf("%d: sent back as %s", i, got)
		}
	}
}

// Calls whose arguments are whole (an Anthropic upstream ends each block)
// are done as the next item opens, one after the other as OpenAI sends
// them, not all at the end; the last waits for the end, which says
// whether the token cap cut it.
func TestResponsesStreamEndedCalls(t *testing.T) {
	s, c := newTestStream(t, `{"model":"p:m","input":"x","tools":[{"type":"function","name":"a"},{"type":"function","name":"b"}]}`)
	s.Start()
	s.Delta(gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: 0, ID: "t0", Name: "a"}})
	s.Delta(gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: 0, Arguments: `{"x":1}`}})
	s.Delta(gateway.Delta{EndedCall: 1})
	s.Delta(gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: 1, ID: "t1", Name: "b"}})
	s.Delta(gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: 1, Arguments: `{"y":`}})
	s.Delta(gateway.Delta{EndedCall: 2})
	final, err := s.Close(gateway.StopMaxTokens, nil, time.Unix(2, 0))
	if err != nil {
		t.Fatal(err)
	}
	s.Terminal()
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.incomplete"}
	if got := c.types(); !slices.Equal(got, want) {
		t.Fatalf("events\n%q\nwant\n%q", got, want)
	}
	a, b := final.Output[0].(ResponsesFunctionCall), final.Output[1].(ResponsesFunctionCall)
	if a.Status != ResponsesCompleted || b.Status != ResponsesIncomplete || b.Arguments != `{"y":` {
		t.Fatalf("calls %+v %+v", a, b)
	}
	if got := c.events[9]["item"].(map[string]any)["status"]; got != ResponsesIncomplete {
		t.Fatalf("the cut call's item done says %v", got)
	}
}

// An image in a function_call_output (the SDK's types take input_image
// there) is carried in the tool result's parts: to Anthropic, which takes
// images in a tool result, as they are; to chat completions, whose tool
// message takes text only, in a user message after the tool messages.
func TestFunctionCallOutputWithImage(t *testing.T) {
	c, err := DecodeResponsesRequest([]byte(`{"model":"m","input":[{"role":"user","content":"look"},` +
		`{"type":"function_call","call_id":"c1","name":"shot","arguments":"{}"},` +
		`{"type":"function_call","call_id":"c2","name":"shot","arguments":"{}"},` +
		`{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"here:"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]},` +
		`{"type":"function_call_output","call_id":"c2","output":[{"type":"input_image","image_url":"https://example.com/b.png"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	res := c.Request.Messages[2].Content[0]
	if res.Type != "tool_result" || res.Text != "here:" || len(res.Parts) != 2 || res.Parts[1].Type != "image" || res.Parts[1].Data != "AAAA" {
		t.Fatalf("tool result %+v", res)
	}
	p := New("compat", "openai-compatible", "http://127.0.0.1:1", "k", nil)
	body, err := p.body(c.Request, false)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"role":"user","content":"look"}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"shot","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"shot","arguments":"{}"}}]}`,
		`{"role":"tool","content":"here:","tool_call_id":"c1"}`,
		`{"role":"tool","content":"The result is the image in the next message.","tool_call_id":"c2"}`,
		`{"role":"user","content":[{"text":"The result of tool call c1 holds these images:","type":"text"},{"image_url":{"url":"data:image/png;base64,AAAA"},"type":"image_url"},{"text":"The result of tool call c2 holds these images:","type":"text"},{"image_url":{"url":"https://example.com/b.png"},"type":"image_url"}]}`,
	}
	if len(got.Messages) != len(want) {
		t.Fatalf("messages %s", body)
	}
	for i, m := range got.Messages {
		if string(m) != want[i] {
			t.Errorf("message %d\n%s\nwant\n%s", i, m, want[i])
		}
	}
}

// A body that is not JSON says where; a field of the wrong JSON type says
// what it is and what was expected, as the chat front does.
func TestResponsesRefusalsSayWhereAndWhat(t *testing.T) {
	if _, err := DecodeResponsesRequest([]byte(` {"model":`)); err == nil || !strings.Contains(err.Error(), "not valid JSON (at byte 10)") {
		t.Fatalf("truncated: %v", err)
	}
	if _, err := DecodeResponsesRequest([]byte(`{"model":5,"input":"x"}`)); err == nil || !strings.Contains(err.Error(), "model is a number where a string is expected") {
		t.Fatalf("a number: %v", err)
	}
}

// text.format json_schema needs a schema, of an object at its root, as
// OpenAI's API says; chat's response_format too takes an object's schema
// alone (its schema may be left out: any JSON object).
func TestStructuredOutputSchemaRefusals(t *testing.T) {
	for _, c := range []struct{ body, param string }{
		{`{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n"}}}`, "text/format/schema"},
		{`{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"array","items":{"type":"string"}}}}}`, "text/format/schema/type"},
	} {
		_, err := DecodeResponsesRequest([]byte(c.body))
		var de *domain.Error
		if !errors.As(err, &de) || len(de.Fields) == 0 || de.Fields[0].Pointer != c.param {
			t.Fatalf("%s: %v", c.body, err)
		}
	}
	var out gateway.Request
	err := chatResponseFormat(json.RawMessage(`{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"array"}}}`), &out)
	if err == nil || !strings.Contains(err.Error(), "object (type object) at its root") {
		t.Fatalf("chat, an array's schema: %v", err)
	}
	if err := chatResponseFormat(json.RawMessage(`{"type":"json_schema","json_schema":{"name":"n"}}`), &out); err != nil || !out.JSONObject {
		t.Fatalf("chat without a schema: %v", err)
	}
}

// A chat model's tool call whose arguments are not JSON is answered with
// them as written, not {} (the stream passes them on as written too).
func TestToolCallArgumentsKeptAsWritten(t *testing.T) {
	b := gateway.ToolCall("c1", "f", `{"a": 1,}`)
	if b.ToolArgs() != `{"a": 1,}` || string(b.Input) != "{}" {
		t.Fatalf("%+v", b)
	}
	if b := gateway.ToolCall("c1", "f", " "); b.ToolArgs() != "{}" || b.RawArgs != "" {
		t.Fatalf("no arguments: %+v", b)
	}
	if b := gateway.ToolCall("c1", "f", `{"a":1}`); b.ToolArgs() != `{"a":1}` || b.RawArgs != "" {
		t.Fatalf("an object: %+v", b)
	}
}

// reasoning.summary takes OpenAI's values alone: another was echoed as if
// honoured.
func TestReasoningSummaryValues(t *testing.T) {
	for _, v := range []string{"auto", "concise", "detailed"} {
		if _, err := DecodeResponsesRequest([]byte(`{"model":"m","input":"x","reasoning":{"summary":"` + v + `"}}`)); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
	}
	if _, err := DecodeResponsesRequest([]byte(`{"model":"m","input":"x","reasoning":{"summary":"bogus"}}`)); err == nil || !strings.Contains(err.Error(), "reasoning.summary") {
		t.Fatalf("bogus: %v", err)
	}
}

// A function_call item whose arguments are not a JSON object (a model's
// slip, a call the token cap cut) is taken as written, as OpenAI takes it
// back: an OpenAI-shaped model gets the text, Anthropic's adapter refuses.
func TestFunctionCallArgumentsTakenAsWritten(t *testing.T) {
	for _, args := range []string{`{oops`, `[1,2]`, `\"str\"`} {
		c, err := DecodeResponsesRequest([]byte(`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"` + args + `"}]}`))
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		b := c.Request.Messages[0].Content[0]
		if b.Type != "tool_use" || b.RawArgs == "" || string(b.Input) != "{}" {
			t.Fatalf("%s: %+v", args, b)
		}
	}
}
