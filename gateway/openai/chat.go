package openai

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/internal/sse"
)

func init() {
	gateway.RegisterKind("openai", gateway.Kind{New: newKind, Builtin: true, Models: Models, DefaultURL: DefaultURL, BaseURLEnv: "OPENAI_BASE_URL", KeyEnv: "OPENAI_API_KEY", ServiceTiers: true, TierEnv: "BATON_OPENAI_DEFAULT_SERVICE_TIER", CapBoundsOutput: true})
	gateway.RegisterKind("openai-compatible", gateway.Kind{New: newKind, ServiceTiers: true})
}

// DefaultURL is OpenAI's API.
const DefaultURL = "https://api.openai.com/v1"

func newKind(e gateway.Endpoint) (gateway.Provider, error) {
	if e.BaseURL == "" {
		return nil, errors.New("baseUrl is required")
	}
	p := New(e.Name, e.Kind, e.BaseURL, e.Key, e.Client)
	if e.KeyEnv != "" {
		p.RequireKey(e.KeyEnv)
	}
	p.defaultTier = e.DefaultServiceTier
	return p, nil
}

// Provider speaks the chat completions wire format (kinds openai and
// openai-compatible): OpenAI itself, or any OpenAI-compatible server
// (Ollama, vLLM, Groq, OpenRouter...).
type Provider struct {
	name        string
	kind        string // openai or openai-compatible
	baseURL     string
	key         string
	client      *http.Client
	newTokenCap bool     // send max_completion_tokens (OpenAI) instead of max_tokens
	keyEnv      string   // a compatible server's key variable, when its providers entry names one
	defaultTier string   // the account's tier for a call that names none (gateway.DefaultTierer)
	auth        []string // the Authorization header's value, made once: not a string and a slice each call
}

// New builds an adapter. kind is "openai" or "openai-compatible".
func New(name, kind, baseURL, key string, client *http.Client) *Provider {
	if client == nil {
		client = gateway.NewHTTPClient()
	}
	p := &Provider{name: name, kind: kind, baseURL: strings.TrimRight(baseURL, "/"), key: key, client: client, newTokenCap: kind == "openai"}
	if key != "" {
		p.auth = []string{"Bearer " + key}
	}
	return p
}

func (p *Provider) Name() string { return p.name }
func (p *Provider) Kind() string { return p.kind }

// DefaultServiceTier is the tier the providers entry (for the built-in
// provider, BATON_OPENAI_DEFAULT_SERVICE_TIER) says the account serves a
// call that names none at (gateway.DefaultTierer).
func (p *Provider) DefaultServiceTier() string { return p.defaultTier }

// RedactKey implements gateway.KeyRedactor: an upstream that quotes the
// key in a failure mid-stream does not hand it to the client or the log.
func (p *Provider) RedactKey(s string) string { return gateway.RedactValue(s, p.key) }

// HasKey reports whether a key is set, without showing it.
func (p *Provider) HasKey() bool { return p.key != "" }

// Configured: OpenAI needs its key; a compatible server needs one only
// when its providers entry names a key variable (a local Ollama needs none).
func (p *Provider) Configured() bool {
	return p.baseURL != "" && (p.key != "" || p.kind == "openai-compatible" && p.keyEnv == "")
}

// RequireKey says that this server needs the key in variable env: without
// it the provider is not configured.
func (p *Provider) RequireKey(env string) { p.keyEnv = env }

// ChatToolCall is a tool call in the chat completions format, as the
// adapter sends it upstream and the chat front answers it.
type ChatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ChatStop maps a chat completions finish_reason to the canonical stop
// reason.
func ChatStop(fr string) string {
	switch fr {
	case "stop":
		return gateway.StopEndTurn
	case "length":
		return gateway.StopMaxTokens
	case "tool_calls", "function_call":
		return gateway.StopToolUse
	case "content_filter":
		return gateway.StopRefusal
	case "":
		return ""
	}
	return gateway.StopUnknownValue
}

// ChatFinishReason maps a canonical stop reason to OpenAI's.
func ChatFinishReason(stop string) string {
	switch stop {
	case gateway.StopMaxTokens:
		return "length"
	case gateway.StopToolUse:
		return "tool_calls"
	case gateway.StopRefusal:
		return "content_filter"
	}
	return "stop"
}

// chatToolModes is the chat completions tool_choice vocabulary: its string
// choices and the gateway's modes they are, read by the front and written
// by the adapter.
var chatToolModes = map[string]string{"none": gateway.ToolChoiceNone, "auto": gateway.ToolChoiceAuto, "required": gateway.ToolChoiceAny}

// chatToolMode is the string choice of a gateway mode, "" for tool.
func chatToolMode(mode string) string {
	for w, m := range chatToolModes {
		if m == mode {
			return w
		}
	}
	return ""
}

func (p *Provider) body(req gateway.Request, stream bool) ([]byte, error) {
	if err := gateway.Prefilled(req, false); err != nil {
		return nil, err
	}
	if req.TopK != nil && p.kind == "openai" { // a messages client's sampling cut, which OpenAI's APIs do not have (compatible servers do)
		return nil, gateway.BadRequest("top_k", "top_k has no equivalent at OpenAI: send it only to Anthropic's models, or leave it out")
	}
	r := ChatRequest{Model: req.Model, Temperature: req.Temperature, TopP: req.TopP, Stream: stream,
		OpenAISampling: req.OpenAISampling, User: wireUser(req.User), TopK: req.TopK}
	if len(req.StopSequences) > 0 {
		r.Stop = gateway.JSONOf(req.StopSequences)
	}
	var format map[string]any
	if req.Output != nil && p.kind != "openai" && req.NeedsJSON {
		// A client's json_schema response format, to a server that may not
		// take one: JSON mode, and the schema in the instructions.
		format = map[string]any{"type": "json_object"}
		req.System = strings.TrimSpace(req.System + "\n\nAnswer with a single JSON object that validates against this JSON Schema, and nothing else:\n" + string(gateway.WithoutMetaKeys(req.Output.Schema)))
	}
	if req.Output != nil && p.kind == "openai" {
		// OpenAI's structured outputs; OpenAI-compatible servers differ in
		// what they accept, so they get the schema in the prompt only.
		js := map[string]any{"name": req.Output.Name, "schema": gateway.WithoutMetaKeys(req.Output.Schema), "strict": req.Output.Strict}
		if req.Output.Description != "" {
			js["description"] = req.Output.Description
		}
		format = map[string]any{"type": "json_schema", "json_schema": js}
	}
	if req.MaxTokens != 0 { // 0: no cap, the field left out
		n := req.HeldCap()
		if p.newTokenCap {
			r.MaxCompletionTokens = &n
		} else {
			r.MaxTokens = &n
		}
	}
	if stream {
		r.StreamOptions = &ChatStreamOptions{IncludeUsage: true}
	}
	if req.System != "" {
		r.Messages = append(r.Messages, ChatMessage{Role: "system", Content: gateway.JSONOf(req.System)})
	}
	for _, m := range req.Messages {
		var text strings.Builder
		var parts []map[string]any // with an image: the content as parts, in order
		if m.Role == "user" && textBlocks(m.Content) > 1 {
			// Several text blocks (Claude Code's reminders, then the
			// prompt) stay apart as parts rather than run together.
			parts = []map[string]any{}
		}
		var calls []ChatToolCall
		var resultImages []map[string]any // the images of the turn's tool results
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				text.WriteString(b.Text)
				if parts != nil {
					parts = append(parts, map[string]any{"type": "text", "text": b.Text})
				}
			case "image":
				if parts == nil {
					parts = []map[string]any{}
					if text.Len() > 0 {
						parts = append(parts, map[string]any{"type": "text", "text": text.String()})
					}
				}
				parts = append(parts, imagePart(b))
			case "tool_use":
				c := ChatToolCall{ID: b.ID, Type: "function"}
				c.Function.Name, c.Function.Arguments = wireToolName(b.Name), b.ToolArgs()
				calls = append(calls, c)
			case "tool_result":
				content := b.Text
				if slices.ContainsFunc(b.Parts, func(p gateway.Block) bool { return p.Type == "image" }) {
					// A tool message takes text only: the images follow in
					// a user message, after the turn's tool messages (which
					// must come right after the call), said whose they are.
					if content == "" {
						content = "The result is the image in the next message."
					}
					resultImages = append(resultImages, map[string]any{"type": "text", "text": "The result of tool call " + b.ToolUseID + " holds these images:"})
					for _, p := range b.Parts {
						if p.Type == "image" {
							resultImages = append(resultImages, imagePart(p))
						}
					}
				}
				r.Messages = append(r.Messages, ChatMessage{Role: "tool", Content: gateway.JSONOf(content), ToolCallID: b.ToolUseID})
			}
			// thinking: the chat API takes no reasoning back (docs/api.md, Translation).
		}
		if resultImages != nil {
			own := parts
			if own == nil && text.Len() > 0 {
				own = []map[string]any{{"type": "text", "text": text.String()}}
			}
			parts = append(resultImages, own...)
		}
		if parts != nil {
			r.Messages = append(r.Messages, ChatMessage{Role: m.Role, Content: gateway.JSONOf(parts), ToolCalls: calls})
		} else if text.Len() > 0 || len(calls) > 0 {
			om := ChatMessage{Role: m.Role, ToolCalls: calls} // no text: content null
			if text.Len() > 0 {
				om.Content = gateway.JSONOf(text.String())
			}
			r.Messages = append(r.Messages, om)
		}
	}
	for _, t := range req.Tools {
		ct := ChatTool{Type: "function"}
		ct.Function.Name, ct.Function.Description, ct.Function.Parameters = wireToolName(t.Name), t.Description, t.Schema
		if t.Strict {
			ct.Function.Strict = json.RawMessage("true")
		}
		r.Tools = append(r.Tools, ct)
	}
	if req.JSONObject && format == nil {
		format = map[string]any{"type": "json_object"}
	}
	if format != nil {
		var err error // a schema that is not JSON
		if r.ResponseFormat, err = json.Marshal(format); err != nil {
			return nil, err
		}
	}
	if tc := req.ToolChoice; tc != nil && len(r.Tools) > 0 {
		var choice any
		switch tc.Mode {
		case gateway.ToolChoiceAuto, gateway.ToolChoiceNone, gateway.ToolChoiceAny:
			choice = chatToolMode(tc.Mode)
		case gateway.ToolChoiceTool:
			choice = map[string]any{"type": "function", "function": map[string]any{"name": wireToolName(tc.Name)}}
		}
		if choice != nil {
			r.ToolChoice = gateway.JSONOf(choice)
		}
		if tc.DisableParallel {
			f := false
			r.ParallelToolCalls = &f
		}
	}
	return json.Marshal(r)
}

// maxToolName is the longest function name OpenAI takes
// (^[a-zA-Z0-9_-]{1,64}$). Anthropic takes 128, and Claude Code's MCP
// tools (mcp__server__tool) pass 64.
const maxToolName = 64

// wireToolName is name as it goes to OpenAI: a longer one as its first 55
// characters, "_" and 8 hex digits of its hash, which the answer's calls
// are named back from (toolNames).
func wireToolName(name string) string {
	if len(name) <= maxToolName {
		return name
	}
	h := sha256.Sum256([]byte(name))
	return name[:maxToolName-9] + "_" + hex.EncodeToString(h[:4])
}

// toolNames maps the wire names of req's tools that were shortened back
// to their names; nil when none was.
func toolNames(req gateway.Request) map[string]string {
	var m map[string]string
	for _, t := range req.Tools {
		if w := wireToolName(t.Name); w != t.Name {
			if m == nil {
				m = map[string]string{}
			}
			m[w] = t.Name
		}
	}
	return m
}

// maxUser is the longest end-user id sent as it is: OpenRouter refuses
// more than 128, and OpenAI documents no limit, which other gateways take
// to be 64.
const maxUser = 64

// wireUser is an end-user id as it goes upstream: a longer one (Claude
// Code's metadata.user_id runs to some 150 characters) as the hex SHA-256
// of it, as stable per user and as opaque.
func wireUser(u string) string {
	if len(u) <= maxUser {
		return u
	}
	h := sha256.Sum256([]byte(u))
	return hex.EncodeToString(h[:])
}

// nameBack is a call's tool name as the client named the tool.
func nameBack(names map[string]string, wire string) string {
	if n, ok := names[wire]; ok {
		return n
	}
	return wire
}

// textBlocks counts content's text blocks.
func textBlocks(content []gateway.Block) int {
	n := 0
	for _, b := range content {
		if b.Type == "text" {
			n++
		}
	}
	return n
}

// imagePart is an image block as a chat content part: its URL, or its data
// as a data URL.
func imagePart(b gateway.Block) map[string]any {
	url := b.URL
	if url == "" {
		url = "data:" + b.MediaType + ";base64," + b.Data
	}
	return map[string]any{"type": "image_url", "image_url": map[string]any{"url": url}}
}

func (p *Provider) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	return p.doWith(ctx, method, path, body, nil)
}

// doWith is do with the client's headers of a passed-through body.
func (p *Provider) doWith(ctx context.Context, method, path string, body []byte, client http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, p.baseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header["Content-Type"] = gateway.JSONType
	}
	if p.auth != nil {
		req.Header["Authorization"] = p.auth
	}
	p.withClientHeaders(req, client)
	return gateway.Send(p.client, p.name, req)
}

// Complete implements gateway.Provider.
func (p *Provider) Complete(ctx context.Context, req gateway.Request) (*gateway.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, gateway.DefaultTimeout) // a stalled body must not hold the call forever
	defer cancel()
	body, err := p.body(req, false)
	if err != nil {
		return nil, err
	}
	resp, err := p.do(ctx, http.MethodPost, "/chat/completions", body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	names := toolNames(req)
	var r ChatCompletion
	raw, err := gateway.DecodeAnswer(p.name, io.LimitReader(resp.Body, 64<<20), &r)
	if err != nil {
		return nil, err
	}
	if len(r.Choices) == 0 {
		return nil, gateway.NotAnAnswer(p.name, raw, "response has no choices")
	}
	c := r.Choices[0]
	if c.FinishReason == "" && (c.Message.Content == nil || *c.Message.Content == "") && c.Message.Refusal == nil && len(c.Message.ToolCalls) == 0 &&
		thinkingText(c.Message.ReasoningContent, c.Message.Reasoning) == "" {
		// Not an answer, not even an empty one: nothing said and no reason
		// for it to end (an answer that says nothing ends with "stop").
		return nil, gateway.NotAnAnswer(p.name, raw, "malformed response: the choice says nothing and has no finish_reason")
	}
	out := &gateway.Response{ID: r.ID, Model: r.Model, NativeStop: c.FinishReason, StopReason: ChatStop(c.FinishReason)}
	if t := thinkingText(c.Message.ReasoningContent, c.Message.Reasoning); t != "" {
		// A compatible server's reasoning: the thinking block a messages
		// client gets first, and a Responses client's reasoning item.
		out.Content = append(out.Content, gateway.Block{Type: "thinking", Thinking: t})
	}
	if c.Message.Content != nil && *c.Message.Content != "" {
		out.Content = append(out.Content, gateway.Block{Type: "text", Text: *c.Message.Content})
	}
	if c.Message.Refusal != nil {
		out.Refusal = *c.Message.Refusal
	}
	for _, tc := range c.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = newCallID() // some compatible servers send none; clients match results by it
		}
		out.Content = append(out.Content, gateway.ToolCall(id, nameBack(names, tc.Function.Name), tc.Function.Arguments))
	}
	if len(c.Message.ToolCalls) > 0 && (out.StopReason == gateway.StopEndTurn || out.StopReason == "" || out.StopReason == gateway.StopUnknownValue) {
		// Tool calls with finish_reason "stop" (OpenAI when a tool is
		// forced, and several compatible servers) or none: the answer
		// still ends for the tools.
		out.StopReason = gateway.StopToolUse
	}
	if r.Usage != nil {
		out.Usage = r.Usage.Usage()
	} else {
		out.UsageMissing = true
	}
	out.Usage.ServiceTier = string(r.ServiceTier)
	return out, nil
}

// Stream implements gateway.Provider.
func (p *Provider) Stream(ctx context.Context, req gateway.Request) (gateway.Stream, error) {
	body, err := p.body(req, true)
	if err != nil {
		return nil, err
	}
	resp, err := p.do(ctx, http.MethodPost, "/chat/completions", body)
	if err != nil {
		return nil, err
	}
	sb := gateway.StreamBody(p.name, resp)
	return &oaStream{name: p.name, body: sb, sse: sse.NewReader(sb), names: toolNames(req)}, nil
}

type oaStream struct {
	name    string
	body    io.ReadCloser
	sse     *sse.Reader
	stop    string
	native  string
	usage   *gateway.Usage
	done    bool
	pending []gateway.Delta
	calls   map[int]oaCall // the upstream's tool call index -> the call it now carries
	ncalls  int
	// held are the calls not named yet, by index: their id and
	// arguments so far, handed out once a chunk names the call.
	held  map[int]*oaCall
	nheld []int             // held's indices, in the order they came
	tier  string            // the tier the chunks say the call is served at, the last said
	names map[string]string // shortened tool names -> the client's (toolNames)
}

// oaCall is a streamed tool call: its ordinal among the answer's calls
// (the index passed on) and its id.
type oaCall struct {
	ordinal int
	id      string
	made    bool // id is Baton's: the call came without one
	name    string
	args    string // held: the arguments so far
}

// newCallID makes a tool call id for a call that came without one.
func newCallID() string {
	return "call_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:24]
}

// final is the last delta: the stop reason, tool_use when tool calls were
// made and the upstream said stop or nothing.
func (s *oaStream) final() gateway.Delta {
	stop := cmp.Or(s.stop, gateway.StopEndTurn)
	if s.ncalls > 0 && (stop == gateway.StopEndTurn || stop == gateway.StopUnknownValue) {
		stop = gateway.StopToolUse // the answer ends for its calls, whatever a server named it
	}
	return gateway.Delta{StopReason: stop, NativeStop: s.native, Usage: s.usage, ServiceTier: s.tier}
}

func (s *oaStream) Next() (gateway.Delta, error) {
	for {
		if len(s.pending) > 0 {
			d := s.pending[0]
			s.pending = s.pending[1:]
			return d, nil
		}
		if s.done {
			return gateway.Delta{}, io.EOF
		}
		ev, err := s.sse.Next()
		if errors.Is(err, io.EOF) {
			if s.stop != "" {
				// finish_reason came, [DONE] did not (some compatible
				// servers, which may send no usage either): the answer is
				// whole, as the passthrough takes it; without usage the
				// caller counts it.
				s.end()
				continue
			}
			return gateway.Delta{}, gateway.BadAnswer(s.name, "stream ended without [DONE]")
		}
		if err != nil {
			return gateway.Delta{}, gateway.StreamError(s.name, err)
		}
		if string(ev.Data) == "[DONE]" {
			s.end()
			continue
		}
		var c ChatChunk
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			if f := gjson.GetBytes(ev.Data, "error"); f.Type == gjson.String && f.Str != "" {
				return gateway.Delta{}, streamFailure(s.name, f, ev.Data) // an error given as a string
			}
			return gateway.Delta{}, gateway.BadAnswer(s.name, "malformed stream chunk")
		}
		if c.Error != nil {
			st := gateway.ErrorStatus(c.Error.Type, gjson.GetBytes(ev.Data, "error.code"))
			return gateway.Delta{}, &gateway.UpstreamError{Provider: s.name, Status: st, Bad: true, Type: c.Error.Type, Message: c.Error.Message}
		}
		// Every delta carries the tier (tool calls and the end too): a
		// stream that breaks after tool calls alone is billed from them.
		if c.ServiceTier != "" {
			s.tier = string(c.ServiceTier)
		}
		if c.Usage != nil {
			u := c.Usage.Usage()
			u.ServiceTier = s.tier
			s.usage = &u
		}
		d := gateway.Delta{ServiceTier: s.tier}
		for _, ch := range c.Choices {
			d.Thinking += thinkingText(ch.Delta.ReasoningContent, ch.Delta.Reasoning)
			if ch.Delta.Content != nil {
				d.Text += *ch.Delta.Content
			}
			if ch.Delta.Refusal != nil {
				d.Refusal += *ch.Delta.Refusal
			}
			for _, tc := range ch.Delta.ToolCalls {
				// A call starts at a new index, or at a known one with
				// another id; some servers repeat the id (and name) in
				// every chunk of a call, which is not a new call.
				// A call that came without an id and is given one later is
				// still that call: the client has Baton's id for it by then
				// (a tool result names the id the client was given).
				id, name, args := gateway.Deref(tc.ID), gateway.Deref(tc.Function.Name), tc.Function.Arguments
				cur, ok := s.calls[tc.Index]
				if h, held := s.held[tc.Index]; held {
					// A call held for its name: this chunk is more of it.
					id, args = cmp.Or(id, h.id), h.args+args
					if name == "" {
						h.id, h.args = id, args
						continue
					}
					delete(s.held, tc.Index)
				} else if ok && (id == "" || id == cur.id || cur.made && (name == "" || name == cur.name)) {
					if cur.made && id != "" {
						cur.made = false // the first id it is given is its own; another is a new call
						cur.id = id
						s.calls[tc.Index] = cur
					}
					s.pending = append(s.pending, gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: cur.ordinal, Arguments: args}, ServiceTier: s.tier})
					continue
				} else if name == "" {
					// A call's arguments (or id) may come before its name
					// (some compatible servers send them so): the call is
					// held until a chunk of its index names it, since a
					// client's call begins with its name, and the chunks
					// of one index are one call.
					if s.held == nil {
						s.held = map[int]*oaCall{}
					}
					delete(s.calls, tc.Index)
					s.held[tc.Index] = &oaCall{id: id, args: args}
					s.nheld = append(s.nheld, tc.Index)
					continue
				}
				s.call(tc.Index, id, name, args)
			}
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				s.native = *ch.FinishReason
				s.stop = ChatStop(*ch.FinishReason)
			}
		}
		if d.Text != "" || d.Refusal != "" || d.Thinking != "" {
			s.pending = append([]gateway.Delta{d}, s.pending...)
		}
	}
}

// call hands out a new call of the upstream's index i.
func (s *oaStream) call(i int, id, name, args string) {
	if s.calls == nil {
		s.calls = map[int]oaCall{}
	}
	cur := oaCall{ordinal: s.ncalls, id: id, name: name}
	if cur.id == "" {
		cur.id, cur.made = newCallID(), true
	}
	s.ncalls++
	s.calls[i] = cur
	s.pending = append(s.pending, gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: cur.ordinal, ID: cur.id, Name: nameBack(s.names, name), Arguments: args}, ServiceTier: s.tier})
}

// end ends the stream: the calls still held for a name no chunk gave
// are handed out as they are (their arguments are the model's output),
// then the last delta.
func (s *oaStream) end() {
	s.done = true
	for _, i := range s.nheld {
		if h, ok := s.held[i]; ok {
			delete(s.held, i)
			s.call(i, h.id, "", h.args)
		}
	}
	s.pending = append(s.pending, s.final())
}

func (s *oaStream) Close() error { return s.body.Close() }

// ListModels implements gateway.Provider.
func (p *Provider) ListModels(ctx context.Context) ([]string, error) {
	resp, err := p.do(ctx, http.MethodGet, "/models", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var l ModelList[json.RawMessage]
	if err := gateway.DecodeWhole(io.LimitReader(resp.Body, 16<<20), &l); err != nil {
		return nil, gateway.AnswerError(p.name, "malformed model list", err, false)
	}
	ids, err := gateway.ModelIDs(l.Data)
	if err != nil {
		return nil, gateway.BadAnswer(p.name, "malformed model list: "+err.Error())
	}
	return ids, nil
}
