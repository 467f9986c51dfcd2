package anthropic

import (
	"encoding/json"
	"testing"

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
