package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/internal/upstreamtest"
)

// The adapter decodes upstream answers into the front's types: what
// compatible servers send in fields it does not read (a fractional or
// string created, a logprobs object, another Baton's svc) still decodes,
// and a missing usage stays missing.
func TestChatCompletionDecodesCompatibleAnswers(t *testing.T) {
	for _, body := range []string{
		`{"id":"a","created":1716313435.779,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"logprobs":{"content":[]},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":3,"cache_write_tokens":4}},"svc":{"requestId":"x"}}`,
		`{"id":"a","created":"2025/05/16 16:29:57","model":"m","choices":[{"message":{"content":"hi"},"logprobs":[1],"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":3,"cache_write_tokens":4}}}`,
		// Usage fields Baton does not bill from, filled another way.
		`{"id":"a","model":"m","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12.0,"estimated":"no","estimated_cost_usd":"0.1","prompt_tokens_details":{"cached_tokens":3,"cache_write_tokens":4}}}`,
	} {
		var r ChatCompletion
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if r.Usage == nil || r.Usage.Usage() != (gateway.Usage{InputTokens: 3, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}) {
			t.Fatalf("%s: usage %+v", body, r.Usage)
		}
	}
	var r ChatCompletion
	if err := json.Unmarshal([]byte(`{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`), &r); err != nil || r.Usage != nil {
		t.Fatalf("no usage read as %+v (%v)", r.Usage, err)
	}
	// The counts billed are still typed: a string is a malformed answer.
	if err := json.Unmarshal([]byte(`{"usage":{"prompt_tokens":"10","completion_tokens":2}}`), &r); err == nil {
		t.Fatal("a prompt_tokens string was read")
	}
}

// An in-stream error is read whatever its code and param are.
func TestOpenAIStreamErrorChunk(t *testing.T) {
	_, err := upstreamtest.Drain(t, oaStreamOf(`{"choices":[{"index":0,"delta":{"content":"a"},"logprobs":{"content":[]}}],"created":1.5}`,
		`{"error":{"message":"overloaded","type":"server_error","param":{"x":1},"code":503}}`))
	var ue *gateway.UpstreamError
	if !errors.As(err, &ue) || ue.Type != "server_error" || ue.Message != "overloaded" {
		t.Fatalf("error %v", err)
	}
}

// The front writes tool-call deltas and errors as it wrote them when they
// were maps (sorted keys): a start with its id, type and name, even an
// empty one; a continuation with only the index and arguments.
func TestChatChunkEncoding(t *testing.T) {
	id, name, empty := "call_1", "f", ""
	start := ChatToolCallDelta{Index: 1, ID: &id, Type: "function"}
	start.Function.Name, start.Function.Arguments = &name, ""
	noName := start
	noName.Function.Name = &empty
	more := ChatToolCallDelta{Index: 1}
	more.Function.Arguments = `{"a":"<b>"}`
	for _, c := range []struct {
		v    any
		want string
	}{
		{start, `{"function":{"arguments":"","name":"f"},"id":"call_1","index":1,"type":"function"}`},
		{noName, `{"function":{"arguments":"","name":""},"id":"call_1","index":1,"type":"function"}`},
		{more, `{"function":{"arguments":"{\"a\":\"\u003cb\u003e\"}"},"index":1}`},
		{&ChatChunk{Error: &APIError{Message: "m", Type: "server_error", Code: "upstream_error"}}, `{"error":{"code":"upstream_error","message":"m","param":null,"type":"server_error"}}`},
		{&ChatChunk{ID: "c", Object: "chat.completion.chunk", Created: 5, Model: "m", Choices: []ChatChunkChoice{}}, `{"id":"c","object":"chat.completion.chunk","created":5,"model":"m","choices":[]}`},
	} {
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("encoded %s (%v), want %s", b, err, c.want)
		}
	}
}

// The fields the adapter does not read take any JSON value, as before the
// fronts' types were shared; those it reads stay typed.
func TestChatDecodingLooseWhereUnread(t *testing.T) {
	var r ChatCompletion
	body := `{"id":"a","object":1,"model":"m","choices":[{"index":"0","message":{"role":5,"content":"hi","reasoning_content":{"text":"x"}},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if m := r.Choices[0].Message; *m.Content != "hi" || m.ReasoningContent != "" || r.Usage.Usage().OutputTokens != 2 {
		t.Fatalf("read %+v", r)
	}
	d, err := upstreamtest.Drain(t, oaStreamOf(
		`{"id":123,"object":null,"model":[],"choices":[{"index":"a","delta":{"role":{},"reasoning_content":{},"content":"Hel"}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":{"k":1},"function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`[DONE]`))
	if err != nil {
		t.Fatal(err)
	}
	var text, args string
	for _, x := range d {
		text += x.Text
		if x.ToolCall != nil {
			args += x.ToolCall.Arguments
		}
	}
	if text != "Hel" || args != "{}" {
		t.Fatalf("text %q, arguments %q from %+v", text, args, d)
	}
	if err := json.Unmarshal([]byte(`{"choices":[{"message":{"content":5}}]}`), &r); err == nil {
		t.Fatal("a content of another type was read")
	}
}

// A tool call's arguments in the history are the function's parameters:
// JSON that is not an object is refused, naming them, as text that is not
// JSON is (Anthropic takes a call's input as an object only).
func TestChatToolCallArgumentsMustBeAnObject(t *testing.T) {
	for args, ok := range map[string]bool{`{"a":1}`: true, ``: true, `"str"`: false, `[1,2]`: false, `7`: false, `{oops`: false} {
		body := `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":` +
			strconv.Quote(args) + `}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`
		var q ChatRequest
		if err := json.Unmarshal([]byte(body), &q); err != nil {
			t.Fatal(err)
		}
		_, err := q.ToGateway()
		if ok != (err == nil) || !ok && !strings.Contains(err.Error(), "messages/1/tool_calls/0/function/arguments must be a JSON object") {
			t.Errorf("arguments %q: %v", args, err)
		}
	}
}

// A tool call in the history that is not a function call with an id and a
// name has no tool_use to become: refused naming the field, not sent on
// as a nameless call with its input dropped (a custom tool's call keeps
// its name and input under "custom").
func TestChatToolCallInHistoryIsAFunctionCall(t *testing.T) {
	for call, field := range map[string]string{
		`{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}`:          "",
		`{"id":"c1","type":"custom","custom":{"name":"apply_patch","input":"*** Begin"}}`: "messages/1/tool_calls/0/type",
		`{"id":"c1","type":"bogus","function":{"name":"f","arguments":"{}"}}`:             "messages/1/tool_calls/0/type",
		`{"id":"c1","function":{"name":"f","arguments":"{}"}}`:                            "messages/1/tool_calls/0/type",
		`{"type":"function","function":{"name":"f","arguments":"{}"}}`:                    "messages/1/tool_calls/0/id",
		`{"id":"c1","type":"function"}`:                                                   "messages/1/tool_calls/0/function/name",
	} {
		body := `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[` + call + `]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`
		var q ChatRequest
		if err := json.Unmarshal([]byte(body), &q); err != nil {
			t.Fatal(err)
		}
		_, err := q.ToGateway()
		var de *domain.Error
		switch {
		case field == "" && err != nil:
			t.Errorf("%s: %v", call, err)
		case field != "" && (!errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Pointer != field):
			t.Errorf("%s: %v, want a refusal naming %s", call, err, field)
		}
	}
}

// A user turn of several text blocks goes as text parts, each as it was:
// joined into one string, a reminder's closing tag and the prompt after it
// ran together.
func TestUserTextBlocksStayApart(t *testing.T) {
	p := New("openai", "openai", "http://127.0.0.1:1", "k", nil)
	req := gateway.Request{Model: "gpt-4o-mini", Messages: []gateway.Message{
		{Role: "user", Content: []gateway.Block{{Type: "text", Text: "<system-reminder>be brief</system-reminder>"}, {Type: "text", Text: "say hi"}}},
		{Role: "assistant", Content: []gateway.Block{{Type: "text", Text: "hi"}}},
		{Role: "user", Content: []gateway.Block{{Type: "text", Text: "again"}}},
	}}
	body, err := p.body(req, false)
	if err != nil {
		t.Fatal(err)
	}
	got := gjson.GetBytes(body, "messages").Raw
	want := `[{"role":"user","content":[{"text":"\u003csystem-reminder\u003ebe brief\u003c/system-reminder\u003e","type":"text"},{"text":"say hi","type":"text"}]},{"role":"assistant","content":"hi"},{"role":"user","content":"again"}]`
	if got != want {
		t.Fatalf("messages %s\nwant %s", got, want)
	}
}

// The other way, a user message's text parts stay apart too, on the chat
// and Responses fronts: each is a text block of its own, as the provider
// would see them from the client. Joined, a reminder's closing tag ran
// into the prompt after it.
func TestUserTextPartsStayApart(t *testing.T) {
	var q ChatRequest
	if err := json.Unmarshal([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>be brief</system-reminder>"},{"type":"text","text":"say hi"}]}]}`), &q); err != nil {
		t.Fatal(err)
	}
	chat, err := q.ToGateway()
	if err != nil {
		t.Fatal(err)
	}
	c, err := DecodeResponsesRequest([]byte(`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"<system-reminder>be brief</system-reminder>"},{"type":"input_text","text":"say hi"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for front, msgs := range map[string][]gateway.Message{"chat": chat.Messages, "responses": c.Request.Messages} {
		if len(msgs) != 1 || len(msgs[0].Content) != 2 || msgs[0].Content[0].Text != "<system-reminder>be brief</system-reminder>" || msgs[0].Content[1].Text != "say hi" {
			t.Errorf("%s: messages %+v", front, msgs)
		}
	}
}

// A tool result of several text parts keeps them apart: each a text block
// of the result where the provider takes blocks (Anthropic), a line each
// in a chat-completions tool message, which servers take as a string.
// Joined with nothing between, one part's end ran into the next's start.
func TestToolResultTextPartsStayApart(t *testing.T) {
	var q ChatRequest
	if err := json.Unmarshal([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"},`+
		`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},`+
		`{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"{\"a\":1}"},{"type":"text","text":"{\"b\":2}"}]}]}`), &q); err != nil {
		t.Fatal(err)
	}
	chat, err := q.ToGateway()
	if err != nil {
		t.Fatal(err)
	}
	c, err := DecodeResponsesRequest([]byte(`{"model":"m","input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},` +
		`{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"{\"a\":1}"},{"type":"input_text","text":"{\"b\":2}"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for front, msgs := range map[string][]gateway.Message{"chat": chat.Messages, "responses": c.Request.Messages} {
		res := msgs[len(msgs)-1].Content[0]
		if res.Type != "tool_result" || res.Text != "{\"a\":1}\n{\"b\":2}" || len(res.Parts) != 2 || res.Parts[0].Text != `{"a":1}` || res.Parts[1].Text != `{"b":2}` {
			t.Errorf("%s: tool result %+v", front, res)
		}
	}
	p := New("compat", "openai-compatible", "http://127.0.0.1:1", "k", nil)
	body, err := p.body(c.Request, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(body, "messages.2").Raw; got != `{"role":"tool","content":"{\"a\":1}\n{\"b\":2}","tool_call_id":"c1"}` {
		t.Errorf("the tool message %s", got)
	}
}

// A tool name past OpenAI's 64 characters (Anthropic takes 128: Claude
// Code's MCP tools) goes shortened wherever the request names it, its
// tools, its history and its tool choice, and the answer's calls, whole
// or streamed, are named back. It went as it was, which OpenAI refuses.
func TestLongToolNamesShortenedAndNamedBack(t *testing.T) {
	long := "mcp__" + strings.Repeat("claude_ai_workspace_server__", 3) + "search_documents_by_title" // 114
	wire := wireToolName(long)
	if len(wire) != 64 || !regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`).MatchString(wire) || wireToolName("short") != "short" {
		t.Fatalf("wire name %q (%d)", wire, len(wire))
	}
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		call := `{"id":"c2","type":"function","function":{"name":"` + wire + `","arguments":"{}"}}`
		if gjson.GetBytes(got, "stream").Bool() {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,%s}]}}]}\n\n", call[1:len(call)-1])
			fmt.Fprint(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[%s]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":3}}`, call)
	}))
	defer srv.Close()
	p := New("oai", "openai", srv.URL, "k", nil)
	req := gateway.Request{Model: "gpt-x",
		Tools:      []gateway.Tool{{Name: long, Schema: json.RawMessage(`{"type":"object"}`)}, {Name: "short", Schema: json.RawMessage(`{"type":"object"}`)}},
		ToolChoice: &gateway.ToolChoice{Mode: gateway.ToolChoiceTool, Name: long},
		Messages: []gateway.Message{{Role: "user", Content: []gateway.Block{{Type: "text", Text: "find it"}}},
			{Role: "assistant", Content: []gateway.Block{gateway.ToolCall("c1", long, "{}")}},
			{Role: "user", Content: []gateway.Block{{Type: "tool_result", ToolUseID: "c1", Text: "none"}}}}}
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"tools.0.function.name", "tool_choice.function.name", "messages.1.tool_calls.0.function.name"} {
		if n := gjson.GetBytes(got, path).Str; n != wire {
			t.Errorf("%s went as %q, want %q", path, n, wire)
		}
	}
	if n := gjson.GetBytes(got, "tools.1.function.name").Str; n != "short" {
		t.Errorf("a short name went as %q", n)
	}
	if c := resp.Content[len(resp.Content)-1]; c.Type != "tool_use" || c.Name != long {
		t.Errorf("the answer's call %+v", c)
	}
	st, err := p.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := st.Next()
	if err != nil || d.ToolCall == nil || d.ToolCall.Name != long {
		t.Fatalf("the streamed call %+v %v", d.ToolCall, err)
	}
}

// Tool calls with a finish reason the adapter does not know (a compatible
// server's "eos") end the answer for its calls: tool_use, as with "stop".
// It was reported end_turn, and a messages client took the turn as done.
func TestToolCallsWithAnUnknownFinishReasonStopForTools(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ := io.ReadAll(r.Body)
		call := `"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}`
		if gjson.GetBytes(got, "stream").Bool() {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,%s}]}}]}\n\n", call)
			fmt.Fprint(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"eos\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{%s}]},"finish_reason":"eos"}],"usage":{"prompt_tokens":5,"completion_tokens":3}}`, call)
	}))
	defer srv.Close()
	p := New("compat", "openai-compatible", srv.URL, "k", nil)
	req := gateway.Request{Model: "m", Tools: []gateway.Tool{{Name: "f", Schema: json.RawMessage(`{"type":"object"}`)}},
		Messages: []gateway.Message{{Role: "user", Content: []gateway.Block{{Type: "text", Text: "go"}}}}}
	resp, err := p.Complete(context.Background(), req)
	if err != nil || resp.StopReason != gateway.StopToolUse {
		t.Fatalf("whole: %v %v", resp.StopReason, err)
	}
	st, err := p.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		d, err := st.Next()
		if err != nil {
			t.Fatalf("no stop: %v", err)
		}
		if d.StopReason != "" {
			if d.StopReason != gateway.StopToolUse || d.NativeStop != "eos" {
				t.Fatalf("streamed: %s (%s)", d.StopReason, d.NativeStop)
			}
			break
		}
	}
}

// An end-user id past 64 characters (Claude Code's metadata.user_id, some
// 150) goes as its hex SHA-256, which the APIs take (OpenRouter refuses
// more than 128); a shorter one goes as it is.
func TestLongEndUserIDGoesHashed(t *testing.T) {
	p := New("compat", "openai-compatible", "http://127.0.0.1:1", "k", nil)
	long := "user_" + strings.Repeat("ab", 32) + "_account_6f0c4b5e-1f2a-4c3d-9e8f-0a1b2c3d4e5f_session_1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
	for id, want := range map[string]string{long: wireUser(long), "alice": "alice"} {
		body, err := p.body(gateway.Request{Model: "m", User: id, Messages: []gateway.Message{{Role: "user", Content: []gateway.Block{{Type: "text", Text: "hi"}}}}}, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := gjson.GetBytes(body, "user").Str; got != want || len(got) > 64 {
			t.Errorf("user %q went as %q", id, got)
		}
	}
	if wireUser(long) == wireUser(long+"x") || len(wireUser(long)) != 64 {
		t.Error("hashed ids are not distinct or not 64 characters")
	}
}

// The refusal of an input item type names every type the front takes:
// it said "only message, function_call and function_call_output", and
// reasoning and item_reference items are taken too.
func TestUnknownInputItemNamesTheTypesTaken(t *testing.T) {
	_, err := DecodeResponsesRequest([]byte(`{"model":"m","input":[{"type":"computer_call","id":"c"}]}`))
	if err == nil || !strings.Contains(err.Error(), "reasoning and item_reference") {
		t.Fatalf("%v", err)
	}
}

// chatRefusal is what ToGateway says of a chat body: "" when it takes it,
// else the field its 400 names.
func chatRefusal(t *testing.T, body string) string {
	t.Helper()
	var q ChatRequest
	if err := json.Unmarshal([]byte(body), &q); err != nil {
		t.Fatal(err)
	}
	_, err := q.ToGateway()
	if err == nil {
		return ""
	}
	if p := param(err); p != "" {
		return p
	}
	return err.Error()
}

// stream_options belongs to a stream: without stream true OpenAI answers
// 400 naming it, and so does a translated call; null is no options.
func TestChatStreamOptionsOnlyWithStream(t *testing.T) {
	for body, want := range map[string]string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`:                 "stream_options",
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":false,"stream_options":{"include_usage":false}}`: "stream_options",
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`:   "",
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":null}`:                                   "",
	} {
		if got := chatRefusal(t, body); got != want {
			t.Errorf("%s: refused naming %q, want %q", body, got, want)
		}
	}
}

// top_logprobs 0 without logprobs asks for no log probabilities, which
// OpenAI takes; a count, or logprobs true, asks for what no translation
// gives back.
func TestChatTopLogprobsZeroAsksForNothing(t *testing.T) {
	for body, want := range map[string]string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"top_logprobs":0}`:                  "",
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"logprobs":false,"top_logprobs":0}`: "",
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"top_logprobs":null}`:               "",
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"top_logprobs":2}`:                  "top_logprobs",
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":0}`:  "logprobs",
	} {
		if got := chatRefusal(t, body); got != want {
			t.Errorf("%s: refused naming %q, want %q", body, got, want)
		}
	}
}

// A message of OpenAI's deprecated role "function" (whose name OpenAI
// requires) is refused naming its role, which has no equivalent, not the
// name it must carry.
func TestChatFunctionRoleRefusedByRole(t *testing.T) {
	for body, want := range map[string]string{
		`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"function","name":"f","content":"42"}]}`: "messages/1/role",
		`{"model":"m","messages":[{"role":"function","content":"42"}]}`:                                           "messages/0/role",
	} {
		if got := chatRefusal(t, body); got != want {
			t.Errorf("%s: refused naming %q, want %q", body, got, want)
		}
	}
}

// parallel_tool_calls without tools is OpenAI's 400 naming it, as
// tool_choice without tools is; null is none.
func TestChatParallelToolCallsOnlyWithTools(t *testing.T) {
	tools := `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`
	for body, want := range map[string]string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"parallel_tool_calls":false}`:               "parallel_tool_calls",
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"parallel_tool_calls":true}`:                "parallel_tool_calls",
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"parallel_tool_calls":null}`:                "",
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"parallel_tool_calls":false,` + tools + `}`: "",
	} {
		if got := chatRefusal(t, body); got != want {
			t.Errorf("%s: refused naming %q, want %q", body, got, want)
		}
	}
}

// A translated cap past the model's declared most output goes as that
// most: Claude Code asks 32,000 of any model, and OpenAI refuses more
// than gpt-4o writes ("max_tokens is too large").
func TestCapHeldToTheModelsMost(t *testing.T) {
	p := New("openai", "openai", "http://127.0.0.1:1", "k", nil)
	msgs := []gateway.Message{{Role: "user", Content: []gateway.Block{{Type: "text", Text: "hi"}}}}
	for _, c := range []struct{ cap, limit, want int }{{32000, 16384, 16384}, {1000, 16384, 1000}, {32000, 0, 32000}, {0, 16384, 0}} {
		body, err := p.body(gateway.Request{Model: "gpt-4o", MaxTokens: c.cap, OutputLimit: c.limit, Messages: msgs}, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := int(gjson.GetBytes(body, "max_completion_tokens").Int() + gjson.GetBytes(body, "max_tokens").Int()); got != c.want {
			t.Errorf("cap %d, most %d: sent %d, want %d", c.cap, c.limit, got, c.want)
		}
	}
}
