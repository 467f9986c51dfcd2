package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/domain"
)

// What the fronts' request decoders (in the kinds' folders: each wire
// format is decoded where it is written) share.

// BadRequest is a 400 naming the request field at fault: param is a JSON
// pointer without its leading '/' ("messages/0/content"), the message is
// the client's to read.
func BadRequest(param, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	e := domain.Invalid("gateway", domain.FieldError{Pointer: param, Code: "invalid", Message: msg})
	e.Message = msg
	return e
}

// Absent says whether a raw JSON field was left out or sent as null.
func Absent(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// IsObject reports whether raw is a JSON object (its first byte, past
// whitespace, opens one).
func IsObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// HasTool says whether one of the tools has the name.
func HasTool(tools []Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// NoContent reports a request whose messages carry nothing a model can
// read: every text empty, no image, tool call or tool result (reasoning
// alone does not count: the chat API takes none back). Translated, such a
// request would leave the upstream no message at all (Anthropic refuses
// empty text, and Baton drops it), so the fronts refuse it first.
func (r Request) NoContent() bool {
	for _, m := range r.Messages {
		for _, b := range m.Content {
			switch b.Type {
			case "thinking":
			case "text":
				if b.Text != "" {
					return false
				}
			default:
				return false
			}
		}
	}
	return true
}

// MaxTranslatedItems is the most messages (or Responses input items) a
// translated request may hold: Anthropic's own limit per request. Decoded
// into the gateway's types, a message costs some hundreds of bytes however
// short its text, so a body of a million empty ones took over a gigabyte;
// a body passed through is not decoded, and its provider judges it.
const MaxTranslatedItems = 100_000

// TooManyItems refuses a body whose array at field (messages, input) holds
// more than MaxTranslatedItems, counted in one scan before anything is
// decoded.
func TooManyItems(body []byte, field string) error {
	if n := gjson.GetBytes(body, field+".#").Int(); n > MaxTranslatedItems {
		return BadRequest(field, "%s holds %d items; at most %d are taken when the request is translated for another provider (Anthropic's own limit)", field, n, MaxTranslatedItems)
	}
	return nil
}

// Prefilled refuses a conversation that ends with an assistant turn whose
// meaning the provider would change: Anthropic continues that turn's text
// (a prefill), OpenAI-shaped APIs answer after it with a turn of their
// own. continues says which the provider does; req.Prefill, which the
// client meant.
func Prefilled(req Request, continues bool) error {
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "assistant" && req.Prefill != continues {
		return BadRequest("messages", "the conversation ends with an assistant turn, which one provider continues (a prefill) and the other answers after: it cannot be carried to this model; end it with a user turn")
	}
	return nil
}

// ToolResult is the result of call id made of parts (text and images, in
// order): its Text holds the texts a line each (a chat-completions tool
// message is one string at most servers; joined with nothing between, one
// part's end ran into the next's start), and its Parts the parts
// themselves when there are several or an image, as Anthropic takes a
// result's blocks.
func ToolResult(id string, parts []Block) Block {
	b := Block{Type: "tool_result", ToolUseID: id}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	b.Text = strings.Join(texts, "\n")
	if len(parts) > 1 || slices.ContainsFunc(parts, func(p Block) bool { return p.Type == "image" }) {
		b.Parts = parts
	}
	return b
}
