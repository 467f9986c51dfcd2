package anthropic

import (
	"strings"

	"github.com/batonhq/baton/gateway"
)

// What the messages front writes: usage, stop reasons, the events that
// open and close a stream translated from another provider, and its
// content blocks.

// Usage is a message's usage as the messages front answers it: Anthropic's
// counts, Baton's cost (estimated_cost_usd, null for an unpriced model),
// and estimated when Baton counted the tokens.
func Usage(u gateway.Usage, cost *float64) MessagesUsage {
	return MessagesUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadInputTokens: u.CacheReadTokens, CacheCreationInputTokens: u.CacheWriteTokens, CacheCreation: cacheCreation(u),
		ServerToolUse: serverToolUse(u), Cost: &cost, Estimated: u.Estimated}
}

// StopReason is a canonical stop reason as the messages front answers it:
// Anthropic's own values (those gateway.StopFromAnthropic reads back as
// they are) are kept; any other is reported as end_turn, the native value
// being in svc.trace.
func StopReason(stop string) string {
	if stop != "" && stop != gateway.StopUnknownValue && gateway.StopFromAnthropic(stop) == stop {
		return stop
	}
	return gateway.StopEndTurn
}

// StopSequence is a message's stop_sequence: the sequence hit, or nil
// (null).
func StopSequence(stop, matched string) *string {
	if stop != gateway.StopSequence || matched == "" {
		return nil
	}
	return &matched
}

// MessageStart opens a streamed message: no content, no stop yet, and the
// input side of the usage when the upstream told it early.
func MessageStart(id, model, provider string, early gateway.Usage, svc any) Event {
	return Event{Type: "message_start", Message: &Message{ID: id, Type: "message", Role: "assistant", Model: model, Provider: gateway.LooseString(provider),
		Content: []gateway.Block{}, Usage: &MessagesUsage{InputTokens: early.InputTokens,
			CacheReadInputTokens: early.CacheReadTokens, CacheCreationInputTokens: early.CacheWriteTokens,
			CacheCreation: cacheCreation(early)}, Svc: svc}}
}

// MessageDelta ends a streamed message: its stop (a canonical stop reason
// and the sequence matched), its usage and cost.
func MessageDelta(stop, matched string, u gateway.Usage, cost *float64, svc any) Event {
	usage := Usage(u, cost)
	return Event{Type: "message_delta", Delta: &EventDelta{StopReason: StopReason(stop), StopSequence: StopSequence(stop, matched)},
		Usage: &usage, Svc: svc}
}

// ErrorEvent is a stream's error, of an Anthropic error type.
func ErrorEvent(typ, message string) Event {
	return Event{Type: "error", Error: &EventError{Type: typ, Message: message}}
}

// thinkingDelta is a content_block_delta carrying thinking.
type thinkingDelta struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta struct {
		Type     string `json:"type"`
		Thinking string `json:"thinking"`
	} `json:"delta"`
}

// TextDelta is Anthropic's content_block_delta carrying text.
type TextDelta struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"delta"`
}

// NewTextDelta is the text delta of block index.
func NewTextDelta(index int, text string) TextDelta {
	d := TextDelta{Type: "content_block_delta", Index: index}
	d.Delta.Type, d.Delta.Text = "text_delta", text
	return d
}

// EventWriter writes a named server-sent event, its data v encoded as
// JSON.
type EventWriter interface {
	Event(name string, v any) error
}

// NewBlocks numbers the content blocks of a message streamed from a
// provider; buffer holds tool calls back (see Blocks), for providers that
// are not Anthropic (whose streams already send each call as its own
// block).
func NewBlocks(buffer bool) *Blocks {
	return &Blocks{open: -1, tools: map[int]int{}, buffer: buffer}
}

// Blocks numbers the content blocks of a streamed message: the
// first text opens a text block; each tool call opens the next block
// (closing the one before), and text after a tool call opens a new text
// block. No block is opened before there is something to put in it: an
// empty text block would come back in the client's next request, and the
// Messages API refuses those. The tool calls of a delta stream are
// assumed to come one after another, as providers send them.
type Blocks struct {
	open  int    // the index of the open block, -1 when none is
	next  int    // the index the next block gets
	kind  string // the open block's type: text, thinking or tool_use
	tools map[int]int
	// buffer holds tool calls back until something else comes (text, the
	// end): OpenAI-shaped upstreams may send the arguments of parallel
	// calls interleaved, while a messages client must get each call as
	// one block, start to stop.
	buffer  bool
	pending []*pendingCall
}

// pendingCall is a tool call held back, its arguments gathered.
type pendingCall struct {
	upstream int // the upstream's index of the call
	id, name string
	args     strings.Builder
}

// flushTools sends the calls held back, each a whole block.
func (b *Blocks) flushTools(w EventWriter) error {
	for _, pc := range b.pending {
		if err := b.start(w, map[string]any{"type": "tool_use", "id": pc.id, "name": pc.name, "input": map[string]any{}}); err != nil {
			return err
		}
		b.kind = "tool_use"
		if pc.args.Len() > 0 {
			if err := w.Event("content_block_delta", map[string]any{"type": "content_block_delta", "index": b.open, "delta": map[string]any{"type": "input_json_delta", "partial_json": pc.args.String()}}); err != nil {
				return err
			}
		}
	}
	b.pending = nil
	return nil
}

// Finish sends what is held back and closes the open block.
func (b *Blocks) Finish(w EventWriter) error {
	if err := b.flushTools(w); err != nil {
		return err
	}
	return b.stop(w)
}

func (b *Blocks) stop(w EventWriter) error {
	if b.open < 0 {
		return nil
	}
	err := w.Event("content_block_stop", map[string]any{"type": "content_block_stop", "index": b.open})
	b.open = -1
	return err
}

func (b *Blocks) start(w EventWriter, block map[string]any) error {
	if err := b.stop(w); err != nil {
		return err
	}
	b.open = b.next
	b.next++
	return w.Event("content_block_start", map[string]any{"type": "content_block_start", "index": b.open, "content_block": block})
}

// in makes the open block a text or thinking block (kind), sending the
// tool calls held back first and opening a new block unless one of that
// kind is open.
func (b *Blocks) in(w EventWriter, kind string) error {
	if err := b.flushTools(w); err != nil {
		return err
	}
	if b.kind == kind && b.open >= 0 {
		return nil
	}
	b.kind = kind
	if kind == "thinking" { // Anthropic's block always has its signature: typed clients check it
		return b.start(w, map[string]any{"type": kind, kind: "", "signature": ""})
	}
	return b.start(w, map[string]any{"type": kind, kind: ""})
}

// Write sends a delta's thinking, text and tool call as content block
// events. Thinking from another provider has no signature: its block
// carries none (the next turn's thinking is not sent back to that
// provider).
func (b *Blocks) Write(w EventWriter, d gateway.Delta) error {
	if d.Thinking != "" {
		if err := b.in(w, "thinking"); err != nil {
			return err
		}
		td := thinkingDelta{Type: "content_block_delta", Index: b.open}
		td.Delta.Type, td.Delta.Thinking = "thinking_delta", d.Thinking
		if err := w.Event("content_block_delta", td); err != nil {
			return err
		}
	}
	if d.Text != "" {
		if err := b.in(w, "text"); err != nil {
			return err
		}
		if err := w.Event("content_block_delta", NewTextDelta(b.open, d.Text)); err != nil {
			return err
		}
	}
	tc := d.ToolCall
	if tc == nil {
		return nil
	}
	if b.buffer {
		var pc *pendingCall
		for _, p := range b.pending {
			if p.upstream == tc.Index {
				pc = p
			}
		}
		if pc == nil {
			pc = &pendingCall{upstream: tc.Index}
			b.pending = append(b.pending, pc)
		}
		if pc.id == "" {
			pc.id = tc.ID
		}
		if pc.name == "" {
			pc.name = tc.Name
		}
		pc.args.WriteString(tc.Arguments)
		return nil
	}
	idx, known := b.tools[tc.Index]
	if !known {
		if err := b.start(w, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}); err != nil {
			return err
		}
		b.kind = "tool_use"
		idx = b.open
		b.tools[tc.Index] = idx
	}
	if tc.Arguments == "" {
		return nil
	}
	return w.Event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": tc.Arguments}})
}
