// Package anthropic is the provider kind anthropic: the Messages API, as
// an adapter (translated calls), a passthrough (Messages bodies as they
// are), token counting and model listing; and as the messages front, its
// request (MessagesRequest, CountRequest, converted by ToGateway) and what
// it answers (Message, Usage, and for a stream translated from another
// provider MessageStart, Blocks, MessageDelta and ErrorEvent). The
// request, answer and stream types are the same for both: the adapter
// writes its upstream request as a MessagesRequest.
package anthropic

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/internal/sse"
)

// Version is the API version header Baton speaks.
const Version = "2023-06-01"

// Versions are Anthropic's published API versions, by which the messages
// front reads a body it translates: each later one removed fields and added
// none, so all read alike.
var Versions = []string{"2023-01-01", Version, "2026-10-21"}

// CheckVersion refuses, as Anthropic does, a request's anthropic-version
// that is none of Versions, for a body Baton translates: a version Baton
// does not know may have rules it cannot apply. None is taken as Version,
// what Baton sends Anthropic for such a client (curl, docs' examples).
func CheckVersion(v string) error {
	if v == "" || slices.Contains(Versions, v) {
		return nil
	}
	return gateway.BadRequest("anthropic-version", "%q is not a valid version; a request translated for another provider is read as one of %s", v, strings.Join(Versions, ", "))
}

func init() {
	gateway.RegisterKind("anthropic", gateway.Kind{New: func(e gateway.Endpoint) (gateway.Provider, error) {
		p := New(e.Name, cmp.Or(e.BaseURL, DefaultURL), e.Key, e.Client)
		p.defaultGeo = e.DefaultInferenceGeo
		return p, nil
	}, Builtin: true, Models: Models, MaxTokens: MaxTokens, DefaultURL: DefaultURL, BaseURLEnv: "ANTHROPIC_BASE_URL", KeyEnv: "ANTHROPIC_API_KEY",
		InferenceGeos: true, GeoEnv: "BATON_ANTHROPIC_DEFAULT_INFERENCE_GEO"})
}

// DefaultURL is Anthropic's API.
const DefaultURL = "https://api.anthropic.com"

// Provider speaks the Messages API.
type Provider struct {
	name    string
	baseURL string
	key     string
	client  *http.Client
	// keyHeader is the x-api-key header's value, made once.
	keyHeader []string
	// defaultGeo is where the workspace runs a call that names no
	// inference_geo, as its providers entry declares it.
	defaultGeo string
}

// New builds an adapter.
func New(name, baseURL, key string, client *http.Client) *Provider {
	if client == nil {
		client = gateway.NewHTTPClient()
	}
	return &Provider{name: name, baseURL: strings.TrimRight(baseURL, "/"), key: key, keyHeader: []string{key}, client: client}
}

func (p *Provider) Name() string { return p.name }
func (p *Provider) Kind() string { return "anthropic" }

// RedactKey implements gateway.KeyRedactor: an upstream that quotes the
// key in a failure mid-stream does not hand it to the client or the log.
func (p *Provider) RedactKey(s string) string { return gateway.RedactValue(s, p.key) }

// HasKey reports whether a key is set, without showing it.
func (p *Provider) HasKey() bool { return p.key != "" }

func (p *Provider) Configured() bool { return p.baseURL != "" && p.key != "" }

// DefaultInferenceGeo is the geography the providers entry (for the
// built-in provider, BATON_ANTHROPIC_DEFAULT_INFERENCE_GEO) says the
// workspace runs a call that names none in (gateway.DefaultGeoer).
func (p *Provider) DefaultInferenceGeo() string { return p.defaultGeo }

// ImageSource is an image block's source: base64 data, or a URL. The
// adapter writes it; the messages front reads it.
type ImageSource struct {
	Type      string `json:"type"` // base64 or url
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// toBlocks is a turn's content as the adapter writes it: a tool result
// carries its text in content, a tool use always has an input object.
func toBlocks(in []gateway.Block) []RequestBlock {
	out := make([]RequestBlock, 0, len(in))
	for _, b := range in {
		switch b.Type {
		case "tool_use":
			input := b.Input
			if len(input) == 0 || string(input) == "null" {
				input = json.RawMessage("{}")
			}
			out = append(out, RequestBlock{Type: b.Type, ID: toolID(b.ID), Name: b.Name, Input: input})
		case "tool_result":
			var content json.RawMessage
			if len(b.Parts) > 0 { // text and images, in order, as Anthropic's tool_result takes them
				content, _ = json.Marshal(toBlocks(b.Parts))
			} else {
				content, _ = json.Marshal(b.Text)
			}
			out = append(out, RequestBlock{Type: b.Type, ToolUseID: toolID(b.ToolUseID), Content: content})
		case "image":
			src := &ImageSource{Type: "url", URL: b.URL}
			if b.URL == "" {
				src = &ImageSource{Type: "base64", MediaType: imageType(b.Data, b.MediaType), Data: b.Data}
			}
			out = append(out, RequestBlock{Type: "image", Source: src})
		case "thinking":
			th, sig := b.Thinking, b.Signature
			if sig == "" {
				continue // another provider's reasoning: Anthropic refuses a thinking block without its signature
			}
			out = append(out, RequestBlock{Type: "thinking", Thinking: &th, Signature: &sig})
		case "redacted_thinking":
			data := b.Data
			out = append(out, RequestBlock{Type: "redacted_thinking", Data: &data})
		default:
			if b.Type == "text" && strings.TrimSpace(b.Text) == "" {
				// The Messages API refuses empty text blocks and, without
				// other text beside them, white space alone (an OpenAI-shaped
				// model's "\n\n" before its tool calls, sent back).
				continue
			}
			text := b.Text
			out = append(out, RequestBlock{Type: b.Type, Text: &text})
		}
	}
	return out
}

// objectSchema is a tool's input schema with the top-level type Anthropic
// requires ("input_schema.type: Field required"): an OpenAI-shaped client
// may leave it out of an object schema, which OpenAI takes.
func objectSchema(schema json.RawMessage) json.RawMessage {
	if !gateway.IsObject(schema) || !gjson.ValidBytes(schema) || gjson.GetBytes(schema, "type").Exists() {
		return schema
	}
	typed, err := sjson.SetBytes(slices.Clone(schema), "type", "object")
	if err != nil {
		return schema
	}
	return typed
}

// imageType is the media type of base64 image data: the one its first
// bytes say (PNG, JPEG, GIF, WebP), else declared. An OpenAI-shaped
// client's data URL may name another (image/jpg, a JPEG labelled
// image/png), which OpenAI takes and Anthropic refuses.
func imageType(data, declared string) string {
	head, err := base64.StdEncoding.DecodeString(data[:min(len(data), 16)])
	if err != nil {
		return declared
	}
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte{0xff, 0xd8, 0xff}):
		return "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "image/gif"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return "image/webp"
	}
	return declared
}

func (p *Provider) body(req gateway.Request, stream bool) ([]byte, error) {
	if err := gateway.Prefilled(req, true); err != nil {
		return nil, err
	}
	if err := withoutOpenAISampling(req.OpenAISampling); err != nil {
		return nil, err
	}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_use" && b.RawArgs != "" {
				// Anthropic's tool use takes an object; an OpenAI-shaped
				// model's arguments that are not one cannot be carried.
				return nil, gateway.BadRequest("input", "the function call %s has arguments that are not a JSON object, which Anthropic's tool use requires: it cannot be carried to this model; send the call with its arguments mended, or continue with an OpenAI-shaped model", b.ID)
			}
		}
	}
	r := MessagesRequest{Model: req.Model, Temperature: req.Temperature, TopP: req.TopP, TopK: req.TopK,
		StopSequences: Stops(req.StopSequences), Stream: stream}
	if req.User != "" {
		r.Metadata = &Metadata{UserID: req.User}
	}
	// The Messages API requires a cap; chat completion clients may send
	// none, or one past what the model writes, which Anthropic refuses.
	req.MaxTokens = req.HeldCap()
	thinking, effort, maxTokens := req.Thinking, req.Effort, MaxTokens(req)
	if req.Thinking == nil && req.Effort == "" {
		thinking, effort, maxTokens = Reasoning(req)
	}
	r.MaxTokens = &maxTokens
	if thinking != nil {
		r.Thinking = gateway.JSONOf(thinking)
	}
	if effort != "" {
		r.OutputConfig = map[string]json.RawMessage{"effort": gateway.JSONOf(effort)}
	}
	for _, t := range req.Tools {
		t.Schema = objectSchema(t.Schema)
		r.Tools = append(r.Tools, MessagesTool{Tool: t})
	}
	tc, system := req.ToolChoice, req.System
	switch {
	case req.Output != nil && (thinking != nil && thinking.Type != "disabled" || StructuredNative(req.Model)):
		// Thinking takes no forced tool, nor do the later models: the
		// native structured output.
		format, err := json.Marshal(map[string]any{"type": "json_schema", "schema": NativeSchema(req.Output.Schema)})
		if err != nil { // a schema that is not JSON
			return nil, err
		}
		if r.OutputConfig == nil {
			r.OutputConfig = map[string]json.RawMessage{}
		}
		r.OutputConfig["format"] = format
	case req.Output != nil:
		// Structured output the Anthropic way: a tool whose input is the
		// output, and the model is made to call a tool.
		desc := "Emit the answer as this tool's input."
		if req.Output.Description != "" {
			desc += " The answer: " + req.Output.Description
		}
		r.Tools = append(r.Tools, MessagesTool{Tool: gateway.Tool{Name: req.Output.Name, Description: desc, Schema: objectSchema(gateway.WithoutMetaKeys(req.Output.Schema))}})
		switch {
		case len(req.Tools) == 0 || tc != nil && tc.Mode == gateway.ToolChoiceNone:
			// The answer is this tool's input, exactly once.
			tc = &gateway.ToolChoice{Mode: gateway.ToolChoiceTool, Name: req.Output.Name, DisableParallel: true}
		case tc != nil && tc.Mode == gateway.ToolChoiceTool:
			// The client named one of its tools: that call comes first.
		default:
			// The client's tools may be called first, as with OpenAI; the
			// model answers with some tool, its own or the answer's.
			tc = &gateway.ToolChoice{Mode: gateway.ToolChoiceAny, DisableParallel: tc != nil && tc.DisableParallel}
		}
	case req.JSONObject:
		// No JSON mode in the Messages API: ask for it.
		system = strings.TrimSpace(system + "\n\n" + gateway.JSONObjectInstruction)
	}
	if system != "" {
		r.System = gateway.JSONOf(system)
	}
	if tc != nil && len(r.Tools) > 0 {
		mode := tc.Mode
		if mode == "" {
			mode = gateway.ToolChoiceAuto // the type is required; auto is the default
		}
		choice := map[string]any{"type": mode}
		if mode == gateway.ToolChoiceTool {
			choice["name"] = tc.Name
		}
		if tc.DisableParallel && mode != gateway.ToolChoiceNone {
			choice["disable_parallel_tool_use"] = true
		}
		r.ToolChoice = gateway.JSONOf(choice)
	}
	var contents [][]RequestBlock // each turn's blocks, marshalled once the turn is whole
	for _, m := range req.Messages {
		blocks := toBlocks(m.Content)
		if len(blocks) == 0 {
			// Nothing, or only what Anthropic cannot take (another's
			// reasoning, empty text): it refuses an empty turn, so the
			// turns around it join.
			continue
		}
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == m.Role {
			// The Messages API takes turns that alternate: the results of
			// parallel tool calls (one tool message each, from a chat
			// completion) go together in the one user turn after the calls.
			contents[n-1] = append(contents[n-1], blocks...)
			continue
		}
		r.Messages = append(r.Messages, MessagesMessage{Role: m.Role})
		contents = append(contents, blocks)
	}
	if len(r.Messages) == 0 {
		// White space alone, which Anthropic takes in no text block.
		return nil, gateway.BadRequest("messages", "messages hold no content Anthropic takes: every message is empty or white space")
	}
	if n := len(r.Messages); r.Messages[n-1].Role == "assistant" && !req.Prefill {
		// The client's last turn had nothing Anthropic takes (empty
		// text): without it the assistant's turn before it ends the
		// conversation, which Anthropic would continue (a prefill)
		// rather than answer after.
		return nil, gateway.BadRequest("messages", "the conversation's last turn holds no content (Anthropic takes no empty text), so it would end with the assistant's turn, which Anthropic continues rather than answers: it cannot be carried to this model; end it with a user turn that holds something")
	}
	if thinking != nil && thinking.Type != "disabled" && unsignedToolTurn(r.Messages, contents) {
		// With thinking on, Anthropic refuses a tool-use turn being
		// continued that does not start with its signed thinking block; a
		// chat client never has the signature to send back. That turn goes
		// on without thinking (docs/api.md, Translation).
		r.Thinking = nil
	}
	if r.Thinking != nil && thinking.Type != "disabled" && tc != nil && len(r.Tools) > 0 && (tc.Mode == gateway.ToolChoiceAny || tc.Mode == gateway.ToolChoiceTool) {
		// Anthropic refuses a forced tool with thinking on: said before the
		// call, in the client's terms, not as the provider's 400.
		return nil, gateway.BadRequest("tool_choice", "tool_choice: a model of Anthropic's does not take a forced tool choice (required, or a named tool) with reasoning on; send tool_choice auto, or no reasoning effort")
	}
	for i, c := range contents {
		var err error // a tool input that is not JSON
		if r.Messages[i].Content, err = json.Marshal(c); err != nil {
			return nil, err
		}
	}
	return json.Marshal(r)
}

// unsignedToolTurn reports whether the last assistant turn called a tool
// (the tool-use cycle the request continues) without starting with a
// thinking block.
func unsignedToolTurn(msgs []MessagesMessage, contents [][]RequestBlock) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "assistant" {
			continue
		}
		blocks := contents[i]
		if !slices.ContainsFunc(blocks, func(b RequestBlock) bool { return b.Type == "tool_use" }) {
			return false
		}
		return len(blocks) == 0 || blocks[0].Type != "thinking" && blocks[0].Type != "redacted_thinking"
	}
	return false
}

// do calls the API with Baton's key. client holds the client's own
// protocol headers, for a passed-through body: its anthropic-version
// instead of Baton's, and its betas.
func (p *Provider) do(ctx context.Context, method, path string, body []byte, client http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, p.baseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header["Content-Type"] = gateway.JSONType
	req.Header["X-Api-Key"] = p.keyHeader
	req.Header.Set("anthropic-version", cmp.Or(client.Get("anthropic-version"), Version))
	for _, v := range client.Values("anthropic-beta") {
		req.Header.Add("anthropic-beta", v)
	}
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
	resp, err := p.do(ctx, http.MethodPost, "/v1/messages", body, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r Message
	raw, err := gateway.DecodeAnswer(p.name, io.LimitReader(resp.Body, 64<<20), &r)
	if err != nil {
		return nil, err
	}
	if r.Type != "message" {
		return nil, gateway.NotAnAnswer(p.name, raw, fmt.Sprintf("malformed response: type %q where a message was expected", r.Type))
	}
	var stop string
	if r.StopReason != nil {
		stop = *r.StopReason
	}
	out := &gateway.Response{ID: r.ID, Model: r.Model, Content: r.Content, StopReason: gateway.StopFromAnthropic(stop), NativeStop: stop}
	if r.StopSequence != nil {
		out.MatchedStop = *r.StopSequence
	}
	if r.Usage != nil {
		out.Usage = r.Usage.usage()
	} else {
		out.UsageMissing = true
	}
	return out, nil
}

// Stream implements gateway.Provider.
func (p *Provider) Stream(ctx context.Context, req gateway.Request) (gateway.Stream, error) {
	body, err := p.body(req, true)
	if err != nil {
		return nil, err
	}
	resp, err := p.do(ctx, http.MethodPost, "/v1/messages", body, nil)
	if err != nil {
		return nil, err
	}
	sb := gateway.StreamBody(p.name, resp)
	return &anStream{name: p.name, body: sb, sse: sse.NewReader(sb)}, nil
}

type anStream struct {
	name  string
	body  io.ReadCloser
	sse   *sse.Reader
	usage gateway.Usage
	final bool // message_delta carried usage: the output count is the upstream's
	stop  string
	seq   string // the stop sequence hit
	done  bool
	tools map[int]int  // content block index -> tool call ordinal
	args  map[int]bool // content block index -> some of its input JSON has come (made with tools)
	// content block index -> the input its content_block_start gave, when
	// not the empty object: the call's arguments unless deltas replace
	// them, as the SDKs read the block (an upstream may give the whole
	// input there and stream none)
	given map[int]string
}

func (s *anStream) Next() (gateway.Delta, error) {
	for {
		if s.done {
			return gateway.Delta{}, io.EOF
		}
		ev, err := s.sse.Next()
		if errors.Is(err, io.EOF) {
			if s.stop != "" {
				// The answer was whole (its message_delta said how it
				// ended), as the passthrough takes it: ended and billed on
				// the usage it told, not an error billed on an estimate.
				return s.end(), nil
			}
			return gateway.Delta{}, gateway.BadAnswer(s.name, "stream ended without message_stop")
		}
		if err != nil {
			return gateway.Delta{}, gateway.StreamError(s.name, err)
		}
		var e Event
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return gateway.Delta{}, gateway.BadAnswer(s.name, "malformed stream event")
		}
		if errorEvent(e.Type, ev.Event, e.Error != nil) {
			e.Type = "error"
		}
		switch e.Type {
		case "message_start":
			if e.Message == nil || e.Message.Usage == nil {
				continue
			}
			s.usage = e.Message.Usage.usage()
			u := s.usage // the input side is known now: tell the caller early
			// Its output count (1, or so) is a placeholder: the model has
			// written nothing yet, and a stream cut here produced nothing.
			u.OutputTokens = 0
			return gateway.Delta{Usage: &u}, nil
		case "content_block_start":
			if b := e.ContentBlock; b != nil && b.Type == "redacted_thinking" && b.Data != "" {
				return gateway.Delta{Redacted: b.Data, Commit: true}, nil
			}
			// A block's start may hold its first text (Anthropic's is
			// empty; an Anthropic-shaped upstream may not be): the SDKs
			// begin the block with it, and the deltas follow it.
			if b := e.ContentBlock; b != nil && b.Type == "text" && b.Text != "" {
				return gateway.Delta{Text: b.Text}, nil
			}
			if b := e.ContentBlock; b != nil && b.Type == "thinking" && b.Thinking != "" {
				return gateway.Delta{Thinking: b.Thinking}, nil
			}
			if b := e.ContentBlock; b != nil && b.Type == "tool_use" {
				if s.tools == nil {
					s.tools, s.args, s.given = map[int]int{}, map[int]bool{}, map[int]string{}
				}
				n := len(s.tools)
				s.tools[e.Index] = n
				var in map[string]json.RawMessage
				if json.Unmarshal(b.Input, &in) == nil && len(in) > 0 {
					s.given[e.Index] = string(bytes.TrimSpace(b.Input))
				}
				return gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: n, ID: b.ID, Name: b.Name}}, nil
			}
		case "content_block_delta":
			if e.Delta == nil {
				continue
			}
			if e.Delta.Type == "text_delta" && e.Delta.Text != "" {
				return gateway.Delta{Text: e.Delta.Text}, nil
			}
			if e.Delta.Type == "thinking_delta" && e.Delta.Thinking != "" {
				return gateway.Delta{Thinking: e.Delta.Thinking}, nil
			}
			if e.Delta.Type == "signature_delta" && e.Delta.Signature != "" {
				return gateway.Delta{Signature: e.Delta.Signature}, nil
			}
			if n, ok := s.tools[e.Index]; ok && e.Delta.Type == "input_json_delta" && e.Delta.PartialJSON != "" {
				s.args[e.Index] = true
				return gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: n, Arguments: e.Delta.PartialJSON}}, nil
			}
		case "content_block_stop":
			if n, ok := s.tools[e.Index]; ok && !s.args[e.Index] {
				// A tool called with no input streams none (or only empty
				// fragments); its arguments are the empty object, as OpenAI
				// streams them and as a client parsing them as JSON needs,
				// or the input its start gave.
				s.args[e.Index] = true
				return gateway.Delta{ToolCall: &gateway.ToolCallDelta{Index: n, Arguments: cmp.Or(s.given[e.Index], "{}")}, EndedCall: n + 1}, nil
			} else if ok {
				return gateway.Delta{EndedCall: n + 1}, nil
			}
		case "message_delta":
			if d := e.Delta; d != nil {
				if d.StopReason != "" {
					s.stop = d.StopReason
				}
				if d.StopSequence != nil {
					s.seq = *d.StopSequence
				}
			}
			if u := e.Usage; u != nil {
				// message_delta usage is cumulative; the input side is
				// usually told at message_start, but some upstreams tell
				// it (or correct it) here.
				s.usage.OutputTokens, s.final = max(u.OutputTokens, 0), true // negative counts count as 0, as in usage()
				if u.InputTokens > 0 {
					s.usage.InputTokens = u.InputTokens
				}
				if u.CacheReadInputTokens > 0 {
					s.usage.CacheReadTokens = u.CacheReadInputTokens
				}
				if u.CacheCreationInputTokens > 0 {
					s.usage.CacheWriteTokens = u.CacheCreationInputTokens
				}
				if c := u.CacheCreation; c != nil && c.Ephemeral1hInputTokens > 0 {
					s.usage.CacheWrite1hTokens = c.Ephemeral1hInputTokens
				}
				s.usage.CacheWrite1hTokens = s.usage.OneHourWrites()
				if t := u.ServerToolUse; t != nil && t.WebSearchRequests > 0 {
					s.usage.WebSearches = t.WebSearchRequests
				}
				// The speed and geography served, when told (or corrected)
				// here rather than at message_start, as the passthrough reads them.
				if u.Speed != "" {
					s.usage.ServiceTier = speedTier(u.Speed)
				}
				if u.InferenceGeo != "" {
					s.usage.Geo = gateway.GeoName(u.InferenceGeo)
				}
			}
		case "message_stop":
			return s.end(), nil
		case "ping":
			// Sent while the model is silent (thinking not shown): the
			// upstream is there, as a passed-through stream's ping says.
			return gateway.Delta{KeepAlive: true}, nil
		case "error":
			ue := gateway.BadAnswer(s.name, "upstream stream error")
			if e.Error != nil {
				ue.Type, ue.Message = e.Error.Type, e.Error.Message
				ue.Status = anthropicStatus(e.Error.Type)
			}
			return gateway.Delta{}, ue
		}
	}
}

// end is the stream's last delta: how the answer ended, and its usage.
func (s *anStream) end() gateway.Delta {
	s.done = true
	d := gateway.Delta{StopReason: cmp.Or(gateway.StopFromAnthropic(s.stop), gateway.StopEndTurn), NativeStop: s.stop, MatchedStop: s.seq}
	// message_start's usage has the input side and an output count of 1
	// or so; without message_delta's, the caller counts the output (it was
	// told the input side at the start).
	if s.final {
		u := s.usage
		d.Usage = &u
	}
	return d
}

func (s *anStream) Close() error { return s.body.Close() }

// ListModels implements gateway.Provider. The list is paged (up to 1,000 models a
// page, newest first); it follows last_id while has_more says so, for at
// most MaxModelPages pages.
func (p *Provider) ListModels(ctx context.Context) ([]string, error) {
	var out []string
	after := ""
	for page := 0; page < MaxModelPages; page++ {
		path := "/v1/models?limit=1000"
		if after != "" {
			path += "&after_id=" + url.QueryEscape(after)
		}
		l, err := p.modelPage(ctx, path)
		if err != nil {
			return nil, err
		}
		ids, err := gateway.ModelIDs(l.Data)
		if err != nil {
			return nil, gateway.BadAnswer(p.name, "malformed model list: "+err.Error())
		}
		out = append(out, ids...)
		if !l.HasMore || l.LastID == nil || *l.LastID == "" || *l.LastID == after {
			return out, nil
		}
		after = *l.LastID
	}
	return nil, gateway.BadAnswer(p.name, fmt.Sprintf("model list has more than %d pages", MaxModelPages))
}

// MaxModelPages bounds a model list's paging (a provider that
// always says has_more must not hold a sync forever).
const MaxModelPages = 50

func (p *Provider) modelPage(ctx context.Context, path string) (*ModelPage[json.RawMessage], error) {
	resp, err := p.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var l ModelPage[json.RawMessage]
	if err := gateway.DecodeWhole(io.LimitReader(resp.Body, 16<<20), &l); err != nil {
		return nil, gateway.AnswerError(p.name, "malformed model list", err, false)
	}
	return &l, nil
}

// anthropicStatus is the status Anthropic documents for an error type, for
// errors that arrive inside a stream (after the 200).
func anthropicStatus(typ string) int {
	switch typ {
	case "overloaded_error":
		return 529
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "api_error":
		return http.StatusInternalServerError
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "invalid_request_error":
		return http.StatusBadRequest
	}
	return http.StatusBadGateway
}

// CountTokens asks Anthropic's token counter (POST /v1/messages/count_tokens)
// how many input tokens n, a Messages request, holds with its model named
// model. The body goes as the client wrote it otherwise, with its
// anthropic-version, anthropic-beta and query, so fields Baton does not
// know (thinking, images, server tools, betas) are counted too.
func (p *Provider) CountTokens(ctx context.Context, n *gateway.Native, model string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, gateway.DefaultTimeout)
	defer cancel()
	// The body as the client sent it, the model rewritten in place; the
	// fields of a Messages call that count_tokens refuses are left out.
	out, err := gateway.WithModel(n.Body, model)
	if err == nil {
		out, err = gateway.WithoutFields(out, "stream", "max_tokens")
	}
	if err != nil {
		return 0, err
	}
	resp, err := p.do(ctx, http.MethodPost, gateway.WithQuery("/v1/messages/count_tokens", n.Query), out, n.Header)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r CountAnswer
	raw, err := gateway.DecodeAnswer(p.name, io.LimitReader(resp.Body, 1<<20), &r)
	if err != nil {
		return 0, err
	}
	if r.InputTokens == nil || *r.InputTokens < 0 {
		// An error of the API in its place (a router's failure) is that
		// error, with the status its type stands for.
		return 0, gateway.NotAnAnswer(p.name, raw, "malformed response: no input_tokens count")
	}
	return *r.InputTokens, nil
}

// toolID is a tool call's id as Anthropic takes it (letters, digits, _ and
// -): another provider's (Moonshot's functions.get:0, say) has its other
// characters replaced and a digest of the whole id added, so that two ids
// stay two and a call and its result still match.
func toolID(id string) string {
	bad := func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}
	if !strings.ContainsFunc(id, bad) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return strings.Map(func(r rune) rune {
		if bad(r) {
			return '_'
		}
		return r
	}, id) + "_" + hex.EncodeToString(sum[:6])
}

// withoutOpenAISampling refuses the OpenAI sampling controls Anthropic has
// no equivalent for, when they would change the answer: a penalty other
// than 0, a logit bias. seed is a best-effort hint even at OpenAI and
// goes without a word (docs/api.md).
func withoutOpenAISampling(o gateway.OpenAISampling) error {
	param := ""
	switch b := bytes.TrimSpace(o.LogitBias); {
	case o.PresencePenalty != nil && *o.PresencePenalty != 0:
		param = "presence_penalty"
	case o.FrequencyPenalty != nil && *o.FrequencyPenalty != 0:
		param = "frequency_penalty"
	case len(b) > 0 && string(b) != "null" && string(b) != "{}":
		param = "logit_bias"
	default:
		return nil
	}
	return gateway.BadRequest(param, "%s has no equivalent at Anthropic: send it only to OpenAI's models, or leave it out", param)
}
