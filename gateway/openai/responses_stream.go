package openai

import (
	"strings"
	"time"

	"github.com/batonhq/baton/gateway"
)

// ResponsesEmit writes one event of a stream: its name (the SSE event
// line) and its data.
type ResponsesEmit func(event string, data any) error

// ResponsesStream turns the gateway's deltas into the Responses event
// grammar: response.created and response.in_progress; for each output
// item response.output_item.added, then its parts (a message's
// response.content_part.added, response.output_text.delta or
// response.refusal.delta, their .done and response.content_part.done) or
// its arguments (response.function_call_arguments.delta and .done) or a
// reasoning item's summary (response.reasoning_summary_part.added,
// response.reasoning_summary_text.delta and .done,
// response.reasoning_summary_part.done), then
// response.output_item.done; last response.completed (or
// response.incomplete), or on a failure an error event and
// response.failed. Every event carries its sequence_number, from 0.
type ResponsesStream struct {
	emit ResponsesEmit
	obj  *ResponsesObject
	out  *gateway.OutputSchema
	seq  int

	output    []any // the items so far, in output order
	reason    *streamReasoning
	msg       *streamMessage
	calls     []*streamCall // the open function calls
	byIndex   map[int]*streamCall
	answer    map[int]bool   // upstream tool calls that carry the structured answer
	failure   ResponsesError // the error event's code and message, once Fail ended it
	failParam string         // and the field it names, if any
}

// streamMessage is the message item being streamed.
type streamMessage struct {
	at    int
	id    string
	parts []any
	kind  string // the open part's type (output_text, refusal), "" when none is open
	text  strings.Builder
}

// streamReasoning is the reasoning item being streamed: a thinking block.
type streamReasoning struct {
	at   int
	id   string
	text strings.Builder
	sig  string
	// summary: its summary part was opened (it has thinking text); a
	// block with none (display omitted) has only its signature.
	summary bool
}

// streamCall is a function call item being streamed.
type streamCall struct {
	at               int
	id, callID, name string
	args             strings.Builder
	index            int  // its upstream index (byIndex's key)
	ended            bool // its arguments are whole: closed when the next item opens
}

// NewResponsesStream streams the response obj (as Object made it); out is
// the structured output asked for, whose tool calls are the message text.
func NewResponsesStream(obj *ResponsesObject, out *gateway.OutputSchema, emit ResponsesEmit) *ResponsesStream {
	return &ResponsesStream{emit: emit, obj: obj, out: out, byIndex: map[int]*streamCall{}, answer: map[int]bool{}}
}

// responsesTextDelta is the most frequent event, as a struct: cheaper to
// encode than a map.
type responsesTextDelta struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	ContentIndex   int    `json:"content_index"`
	Delta          string `json:"delta"`
	Logprobs       []any  `json:"logprobs"`
}

var noLogprobs = []any{}

func (s *ResponsesStream) event(name string, fields map[string]any) error {
	fields["type"] = name
	fields["sequence_number"] = s.next()
	return s.emit(name, fields)
}

// next is the next event's sequence number.
func (s *ResponsesStream) next() int64 {
	n := s.seq
	s.seq++
	return int64(n)
}

// Start sends response.created and response.in_progress.
func (s *ResponsesStream) Start() error {
	if err := s.event("response.created", map[string]any{"response": s.obj}); err != nil {
		return err
	}
	return s.event("response.in_progress", map[string]any{"response": s.obj})
}

// Delta sends what one delta adds. Usage and the stop reason are the
// caller's: Close takes them.
func (s *ResponsesStream) Delta(d gateway.Delta) error {
	if d.Thinking != "" {
		if err := s.think(d.Thinking); err != nil {
			return err
		}
	}
	if d.Signature != "" {
		if s.reason == nil { // a thinking block with no text: its signature alone
			if err := s.openReasoning(); err != nil {
				return err
			}
		}
		s.reason.sig += d.Signature
	}
	if d.Redacted != "" {
		if err := s.redacted(d.Redacted); err != nil {
			return err
		}
	}
	if d.Text != "" {
		if err := s.write("output_text", d.Text); err != nil {
			return err
		}
	}
	if d.Refusal != "" {
		if err := s.write("refusal", d.Refusal); err != nil {
			return err
		}
	}
	if tc := d.ToolCall; tc != nil {
		if err := s.toolCall(tc); err != nil {
			return err
		}
	}
	if d.EndedCall > 0 {
		if c := s.byIndex[d.EndedCall-1]; c != nil {
			c.ended = true
		}
	}
	return nil
}

// think adds thinking to the open reasoning item, opening it as needed
// (a thinking block whose signature came is done: another opens).
func (s *ResponsesStream) think(text string) error {
	if s.reason != nil && s.reason.sig != "" {
		if err := s.closeReasoning(); err != nil {
			return err
		}
	}
	if s.reason == nil {
		if err := s.openReasoning(); err != nil {
			return err
		}
	}
	r := s.reason
	if !r.summary {
		r.summary = true
		if err := s.event("response.reasoning_summary_part.added", map[string]any{"item_id": r.id, "output_index": r.at, "summary_index": 0,
			"part": ResponsesSummary{Type: "summary_text", Text: ""}}); err != nil {
			return err
		}
	}
	r.text.WriteString(text)
	return s.event("response.reasoning_summary_text.delta", map[string]any{"item_id": r.id, "output_index": r.at, "summary_index": 0, "delta": text})
}

// openReasoning opens a reasoning item, after the items before it.
func (s *ResponsesStream) openReasoning() error {
	if err := s.closeCalls(false); err != nil {
		return err
	}
	if err := s.closeMessage(ResponsesCompleted); err != nil {
		return err
	}
	r := &streamReasoning{at: len(s.output), id: s.obj.itemID("rs_", len(s.output))}
	s.reason = r
	item := newReasoning(r.id, "", "")
	s.output = append(s.output, item)
	return s.event("response.output_item.added", map[string]any{"output_index": r.at, "item": item})
}

// redacted sends a redacted thinking block (Anthropic's, its data
// encrypted) as a reasoning item of its own, whole: no summary, the data as
// encrypted_content, which a request carries back as the block.
func (s *ResponsesStream) redacted(data string) error {
	if err := s.closeReasoning(); err != nil {
		return err
	}
	if err := s.openReasoning(); err != nil {
		return err
	}
	s.reason.sig = redactedPrefix + data
	return s.closeReasoning()
}

// closeReasoning ends the open reasoning item.
func (s *ResponsesStream) closeReasoning() error {
	r := s.reason
	if r == nil {
		return nil
	}
	s.reason = nil
	text := r.text.String()
	item := newReasoning(r.id, text, r.sig)
	s.output[r.at] = item
	if !r.summary {
		return s.event("response.output_item.done", map[string]any{"output_index": r.at, "item": item})
	}
	if err := s.event("response.reasoning_summary_text.done", map[string]any{"item_id": r.id, "output_index": r.at, "summary_index": 0, "text": text}); err != nil {
		return err
	}
	if err := s.event("response.reasoning_summary_part.done", map[string]any{"item_id": r.id, "output_index": r.at, "summary_index": 0,
		"part": ResponsesSummary{Type: "summary_text", Text: text}}); err != nil {
		return err
	}
	return s.event("response.output_item.done", map[string]any{"output_index": r.at, "item": item})
}

// write adds text to the open message's part of the given kind, opening
// the message and the part as needed.
func (s *ResponsesStream) write(kind, text string) error {
	if err := s.closeReasoning(); err != nil {
		return err
	}
	if err := s.closeCalls(false); err != nil {
		return err
	}
	if s.msg == nil {
		s.msg = &streamMessage{at: len(s.output), id: s.obj.itemID("msg_", len(s.output))}
		item := ResponsesMessage{Type: "message", ID: s.msg.id, Status: ResponsesInProgress, Role: "assistant", Content: []any{}}
		s.output = append(s.output, item)
		if err := s.event("response.output_item.added", map[string]any{"output_index": s.msg.at, "item": item}); err != nil {
			return err
		}
	}
	m := s.msg
	if m.kind != kind {
		if err := s.closePart(); err != nil {
			return err
		}
		m.kind = kind
		if err := s.event("response.content_part.added", map[string]any{"item_id": m.id, "output_index": m.at, "content_index": len(m.parts), "part": part(kind, "")}); err != nil {
			return err
		}
	}
	m.text.WriteString(text)
	if kind == "refusal" {
		return s.event("response.refusal.delta", map[string]any{"item_id": m.id, "output_index": m.at, "content_index": len(m.parts), "delta": text})
	}
	ev := responsesTextDelta{Type: "response.output_text.delta", SequenceNumber: s.seq, ItemID: m.id, OutputIndex: m.at, ContentIndex: len(m.parts), Delta: text, Logprobs: noLogprobs}
	s.seq++
	return s.emit(ev.Type, ev)
}

func part(kind, text string) any {
	if kind == "refusal" {
		return ResponsesRefusal{Type: "refusal", Refusal: text}
	}
	return newOutputText(text)
}

// closePart ends the open message's open part.
func (s *ResponsesStream) closePart() error {
	m := s.msg
	if m == nil || m.kind == "" {
		return nil
	}
	text, idx := m.text.String(), len(m.parts)
	p := part(m.kind, text)
	var err error
	if m.kind == "refusal" {
		err = s.event("response.refusal.done", map[string]any{"item_id": m.id, "output_index": m.at, "content_index": idx, "refusal": text})
	} else {
		err = s.event("response.output_text.done", map[string]any{"item_id": m.id, "output_index": m.at, "content_index": idx, "text": text, "logprobs": noLogprobs})
	}
	m.parts = append(m.parts, p)
	m.kind = ""
	m.text.Reset()
	if err != nil {
		return err
	}
	return s.event("response.content_part.done", map[string]any{"item_id": m.id, "output_index": m.at, "content_index": idx, "part": p})
}

// closeMessage ends the open message.
func (s *ResponsesStream) closeMessage(status string) error {
	m := s.msg
	if m == nil {
		return nil
	}
	if err := s.closePart(); err != nil {
		return err
	}
	s.msg = nil
	item := ResponsesMessage{Type: "message", ID: m.id, Status: status, Role: "assistant", Content: m.parts}
	s.output[m.at] = item
	return s.event("response.output_item.done", map[string]any{"output_index": m.at, "item": item})
}

// toolCall streams a piece of a tool call: the structured answer's calls
// as message text, the client's as function_call items. An OpenAI-shaped
// upstream may interleave the arguments of parallel calls: each delta
// names its item, so the calls stay open together until text or the end.
func (s *ResponsesStream) toolCall(tc *gateway.ToolCallDelta) error {
	if tc.Name != "" && s.out != nil && tc.Name == s.out.Name {
		s.answer[tc.Index] = true
	}
	if s.answer[tc.Index] {
		if tc.Arguments == "" {
			return nil
		}
		return s.write("output_text", tc.Arguments)
	}
	c := s.byIndex[tc.Index]
	if c == nil {
		if err := s.closeReasoning(); err != nil {
			return err
		}
		if err := s.closeMessage(ResponsesCompleted); err != nil {
			return err
		}
		if err := s.closeEnded(); err != nil {
			return err
		}
		c = &streamCall{at: len(s.output), id: s.obj.itemID("fc_", len(s.output)), callID: tc.ID, name: tc.Name, index: tc.Index}
		if c.callID == "" {
			c.callID = "call_" + hexID()
		}
		s.byIndex[tc.Index] = c
		s.calls = append(s.calls, c)
		item := s.obj.functionCall(c.id, c.callID, c.name, "", ResponsesInProgress)
		s.output = append(s.output, item)
		if err := s.event("response.output_item.added", map[string]any{"output_index": c.at, "item": item}); err != nil {
			return err
		}
	}
	if tc.Arguments == "" {
		return nil
	}
	c.args.WriteString(tc.Arguments)
	return s.event("response.function_call_arguments.delta", map[string]any{"item_id": c.id, "output_index": c.at, "delta": tc.Arguments})
}

// closeCalls ends the open function calls, in the order they began. When
// the answer was cut at the token cap (cut), the call it ended in and any
// whose arguments are not whole are incomplete, as finish marks them.
func (s *ResponsesStream) closeCalls(cut bool) error {
	calls := s.calls
	s.calls, s.byIndex = nil, map[int]*streamCall{}
	for _, c := range calls {
		if err := s.closeCall(c, cut && cutCall(c.at, len(s.output), c.args.String())); err != nil {
			return err
		}
	}
	return nil
}

// closeEnded closes the calls whose arguments are whole (an Anthropic
// upstream ends each block), as the next item opens: a client gets each
// of parallel calls done as OpenAI sends them, one after the other, not
// all at the answer's end. The last stays open until the end, which says
// whether the token cap cut it.
func (s *ResponsesStream) closeEnded() error {
	open := s.calls[:0]
	for _, c := range s.calls {
		if !c.ended {
			open = append(open, c)
			continue
		}
		delete(s.byIndex, c.index)
		if err := s.closeCall(c, false); err != nil {
			return err
		}
	}
	s.calls = open
	return nil
}

// closeCall sends a call's arguments and item done.
func (s *ResponsesStream) closeCall(c *streamCall, incomplete bool) error {
	args := c.args.String()
	if strings.TrimSpace(args) == "" {
		args = "{}" // a call without arguments, as OpenAI sends one
	}
	status := ResponsesCompleted
	if incomplete {
		status = ResponsesIncomplete
	}
	item := s.obj.functionCall(c.id, c.callID, c.name, args, status)
	s.output[c.at] = item
	if err := s.event("response.function_call_arguments.done", map[string]any{"item_id": c.id, "output_index": c.at, "name": item.Name, "arguments": args}); err != nil {
		return err
	}
	return s.event("response.output_item.done", map[string]any{"output_index": c.at, "item": item})
}

// Close ends the open items and returns the finished response, with its
// status for stop, its output and usage; Terminal then sends it. (The
// caller stores it in between, so that a previous_response_id sent as
// soon as the client has it finds it.)
func (s *ResponsesStream) Close(stop string, usage *ResponsesUsage, at time.Time) (*ResponsesObject, error) {
	status, _ := statusOf(stop)
	err := s.closeReasoning()
	if err == nil {
		err = s.closeCalls(status == ResponsesIncomplete)
	}
	if err == nil {
		err = s.closeMessage(status)
	}
	output := s.output
	if output == nil {
		output = []any{}
	}
	s.obj.finish(stop, output, usage, at)
	return s.obj, err
}

// Terminal sends response.completed, or response.incomplete when the
// answer was cut.
func (s *ResponsesStream) Terminal() error {
	name := "response.completed"
	if s.obj.Status == ResponsesIncomplete {
		name = "response.incomplete"
	}
	return s.event(name, map[string]any{"response": s.obj})
}

// NewResponsesError is a failed response's error, after an error of code:
// the Responses API's codes for a failure are these two.
func NewResponsesError(code, message string) *ResponsesError {
	failed := "server_error"
	if strings.Contains(code, "rate_limit") {
		failed = "rate_limit_exceeded"
	}
	return &ResponsesError{Code: failed, Message: message}
}

// Fail ends a stream that broke after it began: the response failed, its
// error (code and message as the front's errors give them), what was sent
// so far, unfinished items marked incomplete. Failed sends it, once the
// caller has stored it, as OpenAI keeps a failed response.
func (s *ResponsesStream) Fail(code, message, param string, usage *ResponsesUsage) *ResponsesObject {
	if r := s.reason; r != nil {
		s.output[r.at] = newReasoning(r.id, r.text.String(), r.sig)
	}
	if s.msg != nil {
		m := s.msg
		parts := m.parts
		if m.kind != "" {
			parts = append(parts, part(m.kind, m.text.String()))
		}
		s.output[m.at] = ResponsesMessage{Type: "message", ID: m.id, Status: ResponsesIncomplete, Role: "assistant", Content: parts}
	}
	for _, c := range s.calls {
		s.output[c.at] = s.obj.functionCall(c.id, c.callID, c.name, c.args.String(), ResponsesIncomplete)
	}
	s.obj.Status, s.obj.Error, s.obj.Usage = ResponsesFailed, NewResponsesError(code, message), usage
	s.failure, s.failParam = ResponsesError{Code: code, Message: message}, param
	if s.output != nil {
		s.obj.Output = s.output
	}
	return s.obj
}

// Failed sends the error event and response.failed of the response Fail
// ended.
func (s *ResponsesStream) Failed() error {
	// The events are whole, numbered: sent as they are.
	if err := s.emit("error", ResponsesErrorEvent(s.next(), s.failure.Code, s.failure.Message, s.failParam)); err != nil {
		return err
	}
	return s.emit("response.failed", ResponsesFailedEvent(s.next(), s.obj))
}

// ResponsesErrorEvent is the error event, numbered seq, that a Responses
// stream breaking after it began sends first; response.failed follows
// (ResponsesFailedEvent). The translated stream and a passed-through one
// both end so.
func ResponsesErrorEvent(seq int64, code, message, param string) map[string]any {
	ev := map[string]any{"type": "error", "sequence_number": seq, "code": code, "message": message, "param": nil}
	if param != "" {
		ev["param"] = param // the field a refusal names, as an error answer's param
	}
	return ev
}

// ResponsesFailedEvent is response.failed, numbered seq, with the failed
// response.
func ResponsesFailedEvent(seq int64, response any) map[string]any {
	return map[string]any{"type": "response.failed", "sequence_number": seq, "response": response}
}
