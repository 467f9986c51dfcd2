package anthropic

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/gateway"
)

// Thinking without a signature (an OpenAI-compatible server's reasoning,
// as a messages client got it and sends it back) is left out of what
// Anthropic gets: it refuses such a block. A turn of nothing else goes,
// and the turns around it join.
func TestUnsignedThinkingLeftOut(t *testing.T) {
	p := New("anthropic", "http://127.0.0.1:1", "k", nil)
	req := gateway.Request{Model: "claude-sonnet-5-5", MaxTokens: 64, Messages: []gateway.Message{
		{Role: "user", Content: []gateway.Block{{Type: "text", Text: "2+2?"}}},
		{Role: "assistant", Content: []gateway.Block{{Type: "thinking", Thinking: "Let me think."}, {Type: "text", Text: "Four."}}},
		{Role: "user", Content: []gateway.Block{{Type: "text", Text: "and 3+3?"}}},
		{Role: "assistant", Content: []gateway.Block{{Type: "thinking", Thinking: "Hmm."}}},
		{Role: "user", Content: []gateway.Block{{Type: "text", Text: "well?"}}},
		{Role: "assistant", Content: []gateway.Block{{Type: "thinking", Thinking: "Signed.", Signature: "sig"}, {Type: "text", Text: "Six."}}},
		{Role: "user", Content: []gateway.Block{{Type: "text", Text: "thanks"}}},
	}}
	body, err := p.body(req, false)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"user","content":[{"type":"text","text":"2+2?"}]},{"role":"assistant","content":[{"type":"text","text":"Four."}]},` +
		`{"role":"user","content":[{"type":"text","text":"and 3+3?"},{"type":"text","text":"well?"}]},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"Signed.","signature":"sig"},{"type":"text","text":"Six."}]},{"role":"user","content":[{"type":"text","text":"thanks"}]}]`
	if string(got.Messages) != want {
		t.Fatalf("Anthropic gets\n%s\nwant\n%s", got.Messages, want)
	}
}

// An upstream message's role and provider, which the adapter does not
// read, take any JSON value; its content stays typed.
func TestMessageDecodingLooseWhereUnread(t *testing.T) {
	var m Message
	if err := json.Unmarshal([]byte(`{"type":"message","id":"m","role":5,"provider":{"x":1},"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn"}`), &m); err != nil {
		t.Fatal(err)
	}
	if m.Role != "" || m.Provider != "" || len(m.Content) != 1 || m.Content[0].Text != "hi" || *m.StopReason != "end_turn" {
		t.Fatalf("read %+v", m)
	}
	if err := json.Unmarshal([]byte(`{"type":"message","content":"hi"}`), &m); err == nil {
		t.Fatal("a content of another type was read")
	}
}

// A chat client's tool loop with reasoning_effort: Anthropic refuses, with
// thinking on, a continued tool-use turn that does not start with its
// signed thinking block, which a chat client never has. That turn goes
// without thinking; a turn with the signed block, or a new question after
// a text answer, keeps it.
func TestThinkingOffForAnUnsignedToolTurn(t *testing.T) {
	p := New("anthropic", "http://127.0.0.1:1", "k", nil)
	user := gateway.Message{Role: "user", Content: []gateway.Block{{Type: "text", Text: "weather in Paris?"}}}
	call := gateway.Block{Type: "tool_use", ID: "toolu_1", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)}
	result := gateway.Message{Role: "user", Content: []gateway.Block{{Type: "tool_result", ToolUseID: "toolu_1", Text: "sunny"}}}
	for _, tc := range []struct {
		name     string
		model    string
		msgs     []gateway.Message
		thinking string // the thinking type sent, "" for none
	}{
		{"unsigned tool turn, fixed budget", "claude-haiku-4-5", []gateway.Message{user,
			{Role: "assistant", Content: []gateway.Block{{Type: "thinking", Thinking: "Look it up."}, call}}, result}, ""},
		{"unsigned tool turn, adaptive", "claude-sonnet-5-5", []gateway.Message{user,
			{Role: "assistant", Content: []gateway.Block{call}}, result}, ""},
		{"signed tool turn", "claude-haiku-4-5", []gateway.Message{user,
			{Role: "assistant", Content: []gateway.Block{{Type: "thinking", Thinking: "Look it up.", Signature: "sig"}, call}}, result}, "enabled"},
		{"first turn", "claude-haiku-4-5", []gateway.Message{user}, "enabled"},
		{"a new question after a text answer", "claude-sonnet-5-5", []gateway.Message{user,
			{Role: "assistant", Content: []gateway.Block{call}}, result,
			{Role: "assistant", Content: []gateway.Block{{Type: "text", Text: "Sunny."}}},
			{Role: "user", Content: []gateway.Block{{Type: "text", Text: "and Rome?"}}}}, "adaptive"},
	} {
		req := gateway.Request{Model: tc.model, MaxTokens: 8000, OpenAISampling: gateway.OpenAISampling{ReasoningEffort: "low"}, Messages: tc.msgs,
			Tools: []gateway.Tool{{Name: "get_weather", Schema: json.RawMessage(`{"type":"object"}`)}}}
		body, err := p.body(req, false)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Thinking *struct {
				Type string `json:"type"`
			} `json:"thinking"`
			MaxTokens int `json:"max_tokens"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		sent := ""
		if got.Thinking != nil {
			sent = got.Thinking.Type
		}
		if sent != tc.thinking || got.MaxTokens != 8000 {
			t.Errorf("%s: thinking %q, max_tokens %d; want %q, 8000 (%s)", tc.name, sent, got.MaxTokens, tc.thinking, body)
		}
	}
}

// A stop reason the gateway does not know (an OpenAI-compatible server's
// own finish_reason) is end_turn to a Messages client, never "unknown",
// which is no Anthropic stop reason; Anthropic's own are kept.
func TestStopReasonForMessagesClients(t *testing.T) {
	for in, want := range map[string]string{gateway.StopUnknownValue: "end_turn", "abort": "end_turn", "": "end_turn",
		"max_tokens": "max_tokens", "tool_use": "tool_use", "refusal": "refusal", "pause_turn": "pause_turn", "stop_sequence": "stop_sequence"} {
		if got := StopReason(in); got != want {
			t.Errorf("StopReason(%q) = %q, want %q", in, got, want)
		}
	}
}

// Another provider's tool call ids, with characters Anthropic refuses in
// an id, are made Anthropic's in the call and its result alike; two ids
// that differ only there stay two; Anthropic's own are sent as they are.
func TestToolIDsMadeAnthropics(t *testing.T) {
	p := New("anthropic", "http://127.0.0.1:1", "k", nil)
	call := func(id string) gateway.Block {
		return gateway.Block{Type: "tool_use", ID: id, Name: "get", Input: json.RawMessage(`{}`)}
	}
	result := func(id string) gateway.Block { return gateway.Block{Type: "tool_result", ToolUseID: id, Text: "r"} }
	req := gateway.Request{Model: "claude-sonnet-5-5", MaxTokens: 64, Messages: []gateway.Message{
		{Role: "user", Content: []gateway.Block{{Type: "text", Text: "hi"}}},
		{Role: "assistant", Content: []gateway.Block{call("functions.get:0"), call("functions.get_0"), call("functions/get:0"), call("toolu_01-A")}},
		{Role: "user", Content: []gateway.Block{result("functions.get:0"), result("functions.get_0"), result("functions/get:0"), result("toolu_01-A")}},
	}}
	body, err := p.body(req, false)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Messages []struct {
			Content []RequestBlock `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, b := range got.Messages[1].Content {
		r := got.Messages[2].Content[i]
		if b.ID != r.ToolUseID || seen[b.ID] || !regexp.MustCompile(`^[a-zA-Z0-9_-]+$`).MatchString(b.ID) {
			t.Fatalf("call %d: id %q, result's %q (ids so far %v)", i, b.ID, r.ToolUseID, seen)
		}
		seen[b.ID] = true
	}
	if got.Messages[1].Content[3].ID != "toolu_01-A" {
		t.Fatalf("an id Anthropic takes was changed: %+v", got.Messages[1].Content)
	}
}

// A tool result's parts (text and an image, from a Responses
// function_call_output) go as its content blocks, in order.
func TestToolResultWithImage(t *testing.T) {
	p := New("anthropic", "http://127.0.0.1:1", "k", nil)
	req := gateway.Request{Model: "claude-sonnet-5-5", MaxTokens: 64, Messages: []gateway.Message{
		{Role: "user", Content: []gateway.Block{{Type: "text", Text: "look"}}},
		{Role: "assistant", Content: []gateway.Block{{Type: "tool_use", ID: "t1", Name: "shot", Input: json.RawMessage(`{}`)}}},
		{Role: "user", Content: []gateway.Block{{Type: "tool_result", ToolUseID: "t1", Text: "here:", Parts: []gateway.Block{
			{Type: "text", Text: "here:"}, {Type: "image", MediaType: "image/png", Data: "AAAA"}}}}},
	}}
	body, err := p.body(req, false)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"here:"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}`
	if !strings.Contains(string(body), want) {
		t.Fatalf("Anthropic gets %s", body)
	}
}

// A request without a cap asks for the model's declared most output (a
// whole answer at most what fits the wait for one), and 4,096 of a model
// that declares none, with a fixed thinking budget on top.
func TestUncappedMaxTokens(t *testing.T) {
	for _, c := range []struct {
		limit    int
		streamed bool
		effort   string
		want     int
		budget   int
	}{
		{0, false, "", 4096, 0},
		{0, true, "", 4096, 0},
		{128000, true, "", 128000, 0},
		{128000, false, "", 21333, 0},
		{8192, false, "", 8192, 0},
		{0, false, "high", 4096 + 16384, 16384},
		{64000, true, "xhigh", 64000, 32768},
		{64000, false, "xhigh", 21333, 21333 - 4096},
		{5000, true, "high", 5000, 0}, // 904 tokens beside the answer: no budget fits
	} {
		req := gateway.Request{Model: "claude-haiku-4-5", OutputLimit: c.limit, Streamed: c.streamed}
		req.ReasoningEffort = c.effort
		th, _, n := Reasoning(req)
		budget := 0
		if th != nil {
			budget = th.BudgetTokens
		}
		if n != c.want || budget != c.budget || MaxTokens(req) != c.want {
			t.Errorf("limit %d streamed %v effort %q: max_tokens %d (MaxTokens %d) budget %d, want %d and %d", c.limit, c.streamed, c.effort, n, MaxTokens(req), budget, c.want, c.budget)
		}
	}
	// A client's thinking of its own, no cap: the same default.
	if n := MaxTokens(gateway.Request{Model: "claude-opus-5-5", OutputLimit: 128000, Streamed: true, Thinking: &gateway.Thinking{Type: "adaptive"}}); n != 128000 {
		t.Errorf("client thinking, streamed: %d", n)
	}
}

// A turn with nothing in it (a chat client's assistant turn of content
// "", Baton's own answer to an empty reply sent back) is left out: the
// Messages API refuses an empty turn anywhere but last, and the turns
// around it join.
func TestEmptyTurnLeftOut(t *testing.T) {
	p := New("anthropic", "http://127.0.0.1:1", "k", nil)
	req := gateway.Request{Model: "claude-sonnet-5-5", MaxTokens: 64, Messages: []gateway.Message{
		{Role: "user", Content: []gateway.Block{{Type: "text", Text: "a"}}},
		{Role: "assistant"},
		{Role: "user", Content: []gateway.Block{{Type: "text", Text: "b"}}},
	}}
	body, err := p.body(req, false)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if want := `[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`; string(got.Messages) != want {
		t.Fatalf("Anthropic gets\n%s\nwant\n%s", got.Messages, want)
	}
}

// A last user turn with nothing Anthropic takes (empty text) is not left
// out so that the assistant's turn before it ends the conversation:
// Anthropic would continue that turn (a prefill) where the client asked
// for an answer after it. It is refused, naming messages.
func TestEmptyLastTurnNotMadeAPrefill(t *testing.T) {
	p := New("anthropic", "http://127.0.0.1:1", "k", nil)
	req := gateway.Request{Model: "claude-sonnet-5-5", MaxTokens: 64, Messages: []gateway.Message{
		{Role: "user", Content: []gateway.Block{{Type: "text", Text: "a"}}},
		{Role: "assistant", Content: []gateway.Block{{Type: "text", Text: "b"}}},
		{Role: "user", Content: []gateway.Block{{Type: "text"}}},
	}}
	body, err := p.body(req, false)
	var de *domain.Error
	if !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Pointer != "messages" {
		t.Fatalf("sent %s (%v); want a 400 naming messages", body, err)
	}
}

// A messages client's tool result of several text blocks reaches a
// chat-completions model a line each, not run together.
func TestToolResultTextBlocksStayApart(t *testing.T) {
	var q MessagesRequest
	if err := json.Unmarshal([]byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},`+
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},`+
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"### Ran"},{"type":"text","text":"### Page"}]}]}]}`), &q); err != nil {
		t.Fatal(err)
	}
	req, err := q.ToGateway()
	if err != nil {
		t.Fatal(err)
	}
	if res := req.Messages[2].Content[0]; res.Type != "tool_result" || res.Text != "### Ran\n### Page" {
		t.Fatalf("tool result %+v", res)
	}
}

// A base64 image's media type is what its bytes are, where they say: an
// OpenAI-shaped client's data URL may name another (image/jpg, or a JPEG
// labelled image/png), which OpenAI takes and Anthropic refuses ("Image
// does not match the provided media type").
func TestImageMediaTypeFromItsBytes(t *testing.T) {
	p := New("anthropic", "http://127.0.0.1:1", "k", nil)
	for _, c := range []struct{ declared, data, want string }{
		{"image/png", "/9j/4AAQSkZJRgABAQAAAQABAAD", "image/jpeg"},
		{"image/jpg", "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB", "image/png"},
		{"image/png", "R0lGODlhAQABAIAAAAAAAP", "image/gif"},
		{"image/jpeg", "UklGRiQAAABXRUJQVlA4IBgAAAAw", "image/webp"},
		{"image/png", "AAAAAAAAAAAAAAAAAAAA", "image/png"}, // bytes that say nothing: as declared
		{"image/png", "%%%", "image/png"},
	} {
		req := gateway.Request{Model: "claude-sonnet-5-5", MaxTokens: 64, Messages: []gateway.Message{
			{Role: "user", Content: []gateway.Block{{Type: "text", Text: "what is it?"}, {Type: "image", MediaType: c.declared, Data: c.data}}},
		}}
		body, err := p.body(req, false)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Messages []struct {
				Content []struct {
					Source struct {
						MediaType string `json:"media_type"`
					} `json:"source"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if mt := got.Messages[0].Content[1].Source.MediaType; mt != c.want {
			t.Errorf("%s of %q: Anthropic gets %s, want %s", c.declared, c.data, mt, c.want)
		}
	}
}

// A tool's schema without a top-level type (which OpenAI-shaped clients
// send, Codex's tools among them, and OpenAI takes) goes to Anthropic as
// an object schema: Anthropic requires the type ("tools.0.custom
// .input_schema.type: Field required"). One that has it goes as written.
func TestToolSchemaTypedAsObject(t *testing.T) {
	p := New("anthropic", "http://127.0.0.1:1", "k", nil)
	req := gateway.Request{Model: "claude-haiku-4-5", MaxTokens: 64, Messages: []gateway.Message{
		{Role: "user", Content: []gateway.Block{{Type: "text", Text: "hi"}}}},
		Tools: []gateway.Tool{{Name: "a", Schema: json.RawMessage(`{}`)}, {Name: "b", Schema: json.RawMessage(`{"properties":{"x":{"type":"string"}}}`)},
			{Name: "c", Schema: json.RawMessage(`{"type":"object","properties":{}}`)}},
		Output: &gateway.OutputSchema{Name: "answer", Schema: json.RawMessage(`{"properties":{"n":{"type":"integer"}}}`)},
	}
	body, err := p.body(req, false)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tools []struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": `{"type":"object"}`, "b": `{"properties":{"x":{"type":"string"}},"type":"object"}`,
		"c": `{"type":"object","properties":{}}`, "answer": `{"properties":{"n":{"type":"integer"}},"type":"object"}`}
	for _, tool := range got.Tools {
		if string(tool.Schema) != want[tool.Name] {
			t.Errorf("%s: input_schema %s, want %s", tool.Name, tool.Schema, want[tool.Name])
		}
	}
	if len(got.Tools) != 4 {
		t.Fatalf("tools %s", body)
	}
}

// A text block of white space only (an OpenAI-shaped model's "\n\n"
// before its tool calls, sent back in the history) is left out as an
// empty one is: Anthropic refuses it ("text content blocks must contain
// non-whitespace text").
func TestWhitespaceTextLeftOut(t *testing.T) {
	p := New("anthropic", "http://127.0.0.1:1", "k", nil)
	req := gateway.Request{Model: "claude-sonnet-5-5", MaxTokens: 64, Messages: []gateway.Message{
		{Role: "user", Content: []gateway.Block{{Type: "text", Text: "weather?"}}},
		{Role: "assistant", Content: []gateway.Block{{Type: "text", Text: "\n\n"}, {Type: "tool_use", ID: "t1", Name: "w", Input: json.RawMessage(`{}`)}}},
		{Role: "user", Content: []gateway.Block{{Type: "tool_result", ToolUseID: "t1", Text: "sunny"}, {Type: "text", Text: " "}}},
	}}
	body, err := p.body(req, false)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"user","content":[{"type":"text","text":"weather?"}]},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"w","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"sunny"}]}]`
	if string(got.Messages) != want {
		t.Fatalf("Anthropic gets\n%s\nwant\n%s", got.Messages, want)
	}
	// White space and nothing else is no message at all: refused, naming
	// messages, not sent as none.
	req.Messages = []gateway.Message{{Role: "user", Content: []gateway.Block{{Type: "text", Text: "  "}}}}
	body, err = p.body(req, false)
	var de *domain.Error
	if !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Pointer != "messages" {
		t.Fatalf("sent %s (%v); want a 400 naming messages", body, err)
	}
}

// A messages client's structured output goes to an OpenAI-shaped model
// strict when its schema meets OpenAI's strict rules (every object closed
// with additionalProperties false, every property required), and not
// strict otherwise: Anthropic takes optional properties, OpenAI's strict
// mode refuses them (a 400 for a request Anthropic would have served).
func TestStructuredOutputStrictWhereOpenAITakesIt(t *testing.T) {
	for _, c := range []struct {
		schema string
		strict bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a"],"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, false},
		{`{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"string"}}}},"required":["o"],"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"],"additionalProperties":false}}},"required":["l"],"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false}}},"required":["l"],"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"u":{"anyOf":[{"type":"string"},{"$ref":"#/$defs/d"}]}},"required":["u"],"additionalProperties":false,"$defs":{"d":{"type":"object","properties":{"y":{"type":"string"}},"additionalProperties":false}}}`, false},
	} {
		var q MessagesRequest
		body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"output_config":{"format":{"type":"json_schema","schema":` + c.schema + `}}}`
		if err := json.Unmarshal([]byte(body), &q); err != nil {
			t.Fatal(err)
		}
		req, err := q.ToGateway()
		if err != nil {
			t.Fatal(err)
		}
		if req.Output == nil || req.Output.Strict != c.strict {
			t.Errorf("%s: output %+v, want strict %v", c.schema, req.Output, c.strict)
		}
	}
}

// A chat client's cap past the model's declared most output goes as that
// most, which Anthropic would refuse past ("max_tokens: 100000 > 64000").
func TestCapHeldToTheModelsMost(t *testing.T) {
	p := New("anthropic", "http://127.0.0.1:1", "k", nil)
	msgs := []gateway.Message{{Role: "user", Content: []gateway.Block{{Type: "text", Text: "hi"}}}}
	for _, c := range []struct{ cap, limit, want int }{{100000, 64000, 64000}, {1000, 64000, 1000}, {100000, 0, 100000}} {
		body, err := p.body(gateway.Request{Model: "claude-haiku-4-5", MaxTokens: c.cap, OutputLimit: c.limit, Streamed: true, Messages: msgs}, true)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			MaxTokens int `json:"max_tokens"`
		}
		json.Unmarshal(body, &got)
		if got.MaxTokens != c.want {
			t.Errorf("cap %d, most %d: sent %d, want %d", c.cap, c.limit, got.MaxTokens, c.want)
		}
	}
}
