package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/openai"
)

// pingEvery is how often a streamed message sends `ping` while it waits
// for the upstream.
var pingEvery = 5 * time.Second

// svcTrace is Baton's own part of a gateway answer.
type svcTrace struct {
	RequestID string `json:"requestId"`
	Trace     struct {
		SelectedProvider string `json:"selectedProvider"`
		SelectedModel    string `json:"selectedModel"`
		FallbackUsed     bool   `json:"fallbackUsed"`
		NativeStopReason string `json:"nativeStopReason,omitempty"`
	} `json:"trace"`
}

func newSvc(c *gateway.Call, native string) svcTrace {
	var s svcTrace
	s.RequestID = c.ID
	s.Trace.SelectedProvider = c.Provider.Name()
	s.Trace.SelectedModel = c.Model.ID
	s.Trace.FallbackUsed = c.Fallback
	s.Trace.NativeStopReason = native
	return s
}

// newCall starts a model call of the request's principal; the answer's id
// is prefix and a fresh UUIDv7's hex.
func (s *Server) newCall(r *http.Request, front, prefix string, req gateway.Request, stream bool) *gateway.Call {
	p := principalOf(r.Context())
	return &gateway.Call{ID: prefix + strings.ReplaceAll(uuid.Must(uuid.NewV7()).String(), "-", ""), Front: front,
		Tenant: p.Tenant, KeyID: p.KeyID, RequestID: RequestID(r.Context()), Req: req, Stream: stream}
}

// listModels answers in OpenAI's list shape, or in Anthropic's when the
// client sends anthropic-version (as the Anthropic SDK does).
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	models := s.catalog.List()
	if r.Header.Get("anthropic-version") == "" {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": models})
		return
	}
	data := make([]map[string]any, len(models))
	for i, m := range models {
		data[i] = anthropicModel(m)
	}
	first, last := "", ""
	if len(models) > 0 {
		first, last = models[0].ID, models[len(models)-1].ID
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "has_more": false, "first_id": first, "last_id": last})
}

// anthropicModel is a model as Anthropic's models API shows one, with
// Baton's catalog fields beside.
func anthropicModel(m gateway.Model) map[string]any {
	return map[string]any{"type": "model", "id": m.ID, "display_name": m.ID, "created_at": time.Unix(m.Created, 0).UTC().Format(time.RFC3339),
		"provider": m.Provider, "modes": m.Modes, "contextTokens": m.ContextTokens, "available": m.Available, "hasPricing": m.HasPricing, "health": m.Health}
}

// getModel answers GET /v1/models/{id} (OpenAI's models.retrieve,
// Anthropic's models.get, told apart by the anthropic-version header). Ids
// may hold '/' and ':' (openrouter:meta-llama/llama-3:free): the route
// takes the rest of the path.
func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	switch id {
	case "sync", "health", "health/batch", "route/preview":
		// The admin endpoints under /v1/models are POSTs; this route takes
		// every other GET below /v1/models, so it answers for them.
		s.noRoute(w, r, notAllowed(r))
		return
	}
	m, ok := s.catalog.Get(id)
	if !ok {
		s.writeErrorAs(w, r, modelErrors, fmt.Errorf("%w: no model %q in the catalog; GET /v1/models lists them", gateway.ErrUnknownModel, id))
		return
	}
	if r.Header.Get("anthropic-version") != "" {
		writeJSON(w, http.StatusOK, anthropicModel(m))
		return
	}
	writeJSON(w, http.StatusOK, m)
}

// badRequest is a 400 naming the request field at fault.
func badRequest(param, format string, args ...any) error {
	return gateway.BadRequest(param, format, args...)
}

// plan decodes nothing: it finds the chain of models a call may try.
// A named model whose provider has no credentials is refused before any
// upstream call.
func (s *Server) plan(id string, req gateway.Request) ([]gateway.Target, error) {
	chain, err := s.catalog.Chain(id, req)
	if err != nil {
		return nil, err
	}
	if p := chain[0].Provider; !p.Configured() {
		return nil, domain.E("gateway", domain.KindUnavailable, "provider_not_configured",
			"provider %s is not configured on this server (no API key); see GET /v1/models for available models", p.Name())
	}
	return chain, nil
}

// nativeProvider is the built-in provider of each wire format: a bare model
// name that no provider lists goes to it (the clients' default names:
// the Agents SDK's, Claude Code's), as a model it serves unpriced.
var nativeProvider = map[string]string{gateway.FormatAnthropic: "anthropic", gateway.FormatChat: "openai", gateway.FormatResponses: "openai"}

// planFor is plan for a front of the given wire format.
func (s *Server) planFor(format, id string, req gateway.Request) ([]gateway.Target, error) {
	chain, err := s.plan(id, req)
	if err != nil && errors.Is(err, gateway.ErrUnknownModel) && !strings.Contains(id, ":") && !gateway.IsMode(id) && nativeProvider[format] != "" {
		if fb, ferr := s.plan(nativeProvider[format]+":"+id, req); ferr == nil {
			return fb, nil
		}
	}
	return chain, err
}

// writeAnswer writes a JSON answer with its length and flushes it, so the
// client has all of it before the handler goes on to record usage.
func writeAnswer(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // Baton's own answer types always encode; withRecover answers 500
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// wireRequest is a gateway front's request body: chat completions or
// messages.
type wireRequest interface {
	ToGateway() (gateway.Request, error)
	RequestedModel() string // the model or mode asked for
}

func (q *msgRequest) RequestedModel() string { return q.Model }

// prepareCall reads a gateway front's request and plans its route. When
// the chain's models all take the front's wire format (format; "" for
// none) the body is skimmed, not decoded, and passed through as it is
// (native); else it is decoded into q and converted to the gateway's
// request, and native still goes to the models that take it. A body that
// cannot be translated goes only to those models, or is refused when there
// are none. When any step fails it has answered in the front's error shape
// and ok is false.
func (s *Server) prepareCall(w http.ResponseWriter, r *http.Request, f errFormat, q wireRequest, format string) (req gateway.Request, chain []gateway.Target, native *gateway.Native, ok bool) {
	fail := func(err error) (gateway.Request, []gateway.Target, *gateway.Native, bool) {
		s.writeErrorAs(w, r, f, err)
		return gateway.Request{}, nil, nil, false
	}
	body, err := readBody(w, r, s.maxModelBody)
	if err != nil {
		return fail(err)
	}
	decode := func() (gateway.Request, error) {
		if err := decodeBody(body, q); err != nil {
			return gateway.Request{}, err
		}
		return q.ToGateway()
	}
	if format == "" {
		if req, err = decode(); err == nil {
			chain, err = s.plan(q.RequestedModel(), req)
		}
		if err != nil {
			return fail(err)
		}
		return req, chain, &gateway.Native{Body: body}, true // the body, for count_tokens
	}
	var sk skimmed
	switch format {
	case gateway.FormatAnthropic:
		sk, err = skimMessages(body)
	case gateway.FormatChat:
		sk, err = skimChat(body)
	}
	if err != nil {
		return fail(err)
	}
	native = nativeOf(r, format, body)
	native.Stream, native.StreamUsage = sk.stream, sk.streamUsage
	if !gateway.IsMode(sk.model) {
		if chain, err = s.planFor(format, sk.model, sk.req); err != nil {
			return fail(err)
		}
		if speaksAll(chain, format) {
			return sk.req, chain, native, true
		}
	}
	full, derr := decode()
	if derr == nil {
		if gateway.IsMode(sk.model) {
			if chain, err = s.planFor(format, sk.model, full); err != nil {
				return fail(err)
			}
		}
		return full, chain, native, true
	}
	// Not translatable: only the models that take it as it is.
	if gateway.IsMode(sk.model) {
		if chain, err = s.planFor(format, sk.model, sk.req); err != nil {
			return fail(derr)
		}
	}
	chain = slices.DeleteFunc(chain, func(t gateway.Target) bool { return !speaks(t, format) })
	if len(chain) == 0 {
		return fail(derr)
	}
	return sk.req, chain, native, true
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	const f = openaiErrors
	var q openai.ChatRequest
	req, chain, native, ok := s.prepareCall(w, r, f, &q, gateway.FormatChat)
	if !ok {
		return
	}
	stream := native.Stream
	c := s.newCall(r, "chat.completions", "chatcmpl-", req, stream)
	c.Native = native
	defer c.ReleaseHold()
	if stream {
		s.streamChat(w, r, c, chain, native.StreamUsage)
		return
	}
	resp, err := s.caller.Complete(r.Context(), c, chain)
	if err != nil {
		s.writeErrorAs(w, r, f, err)
		return
	}
	cost, record := s.caller.Settle(c, resp.Usage, "ok")
	defer record()
	if c.Passthrough {
		raw := resp.Raw
		if resp.Usage.Estimated {
			raw = withSvc(raw, "usage", openai.NewChatUsage(resp.Usage, nil), "", nil) // the upstream sent none: Baton's count, marked estimated
		}
		writeRaw(w, withSvcAndCost(raw, newSvc(c, resp.NativeStop), cost))
		return
	}
	text := resp.StructuredText(c.Req.Output)
	msg := openai.ChatAnswerMessage{Role: "assistant", Content: &text}
	if th := thinkingOf(resp.Content); th != "" {
		msg.ReasoningContent = &th
	}
	for _, b := range resp.Content {
		if b.Type == "tool_use" && (c.Req.Output == nil || b.Name != c.Req.Output.Name) {
			call := openai.ChatToolCall{ID: b.ID, Type: "function"}
			call.Function.Name, call.Function.Arguments = b.Name, string(b.Input)
			msg.ToolCalls = append(msg.ToolCalls, call)
		}
	}
	if len(msg.ToolCalls) > 0 && text == "" {
		msg.Content = nil
	}
	if resp.Refusal != "" {
		msg.Refusal = &resp.Refusal
		if text == "" {
			msg.Content = nil
		}
	}
	finish := openai.ChatFinishReason(resp.StopReason)
	if resp.StopReason == gateway.StopToolUse && len(msg.ToolCalls) == 0 {
		finish = "stop" // only the structured answer's tool was called
	}
	writeAnswer(w, openai.ChatCompletion{ID: c.ID, Object: "chat.completion", Created: c.Start.Unix(), Model: c.Model.ID,
		Choices: []openai.ChatChoice{{Message: msg, FinishReason: finish}},
		Usage:   openai.NewChatUsage(resp.Usage, cost),
		Svc:     newSvc(c, resp.NativeStop),
	})
}

func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, c *gateway.Call, chain []gateway.Target, includeUsage bool) {
	up, err := s.caller.Open(r.Context(), c, chain)
	if err != nil {
		// Nothing has reached the client yet: an ordinary error answer.
		s.writeErrorAs(w, r, openaiErrors, err)
		return
	}
	if c.Passthrough {
		s.pipe(w, r, c, up, openaiErrors)
		return
	}
	defer up.Close()
	sse, err := startSSE(w)
	if err != nil {
		s.caller.Record(c, up.ReadSoFar(c.Req), "upstream_error")
		s.writeErrorAs(w, r, openaiErrors, err)
		return
	}
	chunk := func(delta openai.ChatDelta, finish *string) *openai.ChatChunk {
		return &openai.ChatChunk{ID: c.ID, Object: "chat.completion.chunk", Created: c.Start.Unix(), Model: c.Model.ID,
			Choices: []openai.ChatChunkChoice{{Delta: delta, FinishReason: finish}}}
	}
	empty := ""
	first := chunk(openai.ChatDelta{Role: "assistant", Content: &empty}, nil)
	svc := newSvc(c, "")
	first.Svc = &svc
	if sse.data(first) != nil {
		s.caller.Record(c, up.ReadSoFar(c.Req), "client_gone")
		return
	}
	sse.flush() // the headers and the first chunk leave now: a stream, even a short one, is sent as one (no Content-Length)
	var sent gateway.Tally
	var tools openai.ChatToolIndexes
	toolCalled := false
	for {
		p, _, gone := up.Next(r.Context(), nil, sse.flush)
		if gone {
			// The client went away; the upstream is canceled on return.
			s.caller.Record(c, sent.Bill(c.Req, nil), "client_gone")
			return
		}
		if p.Err != nil {
			outcome := "partial"
			if errors.Is(p.Err, context.Canceled) || r.Context().Err() != nil {
				outcome = "client_gone"
			} else {
				d := describe(r, p.Err)
				oa, _ := d.types()
				sse.data(map[string]any{"error": map[string]any{"message": d.Message, "type": oa, "param": nil, "code": d.Code}})
			}
			s.caller.Record(c, sent.Bill(c.Req, nil), outcome)
			return
		}
		d := p.D
		sent.See(d)
		if d.Thinking != "" {
			if sse.data(chunk(openai.ChatDelta{ReasoningContent: &d.Thinking}, nil)) != nil {
				s.caller.Record(c, sent.Bill(c.Req, nil), "client_gone")
				return
			}
		}
		if d.Text != "" || d.Refusal != "" {
			var out openai.ChatDelta
			if d.Text != "" {
				out.Content = &d.Text
			}
			if d.Refusal != "" {
				out.Refusal = &d.Refusal
			}
			if sse.data(chunk(out, nil)) != nil {
				s.caller.Record(c, sent.Bill(c.Req, nil), "client_gone")
				return
			}
		}
		if tc := d.ToolCall; tc != nil {
			var out openai.ChatDelta
			if answer, index := tools.Route(c.Req.Output, tc); answer {
				// The answer to a json_schema response format, sent by the
				// provider as a tool's input: it is the content.
				if tc.Arguments != "" {
					out.Content = &tc.Arguments
				}
			} else {
				toolCalled = true
				call := map[string]any{"index": index, "function": map[string]any{"arguments": tc.Arguments}}
				if tc.ID != "" || tc.Name != "" {
					call["id"], call["type"] = tc.ID, "function"
					call["function"] = map[string]any{"name": tc.Name, "arguments": tc.Arguments}
				}
				out.ToolCalls = []any{call}
			}
			if (out.Content != nil || out.ToolCalls != nil) && sse.data(chunk(out, nil)) != nil {
				s.caller.Record(c, sent.Bill(c.Req, nil), "client_gone")
				return
			}
		}
		if d.StopReason != "" {
			u := sent.Bill(c.Req, d.Usage)
			cost, record := s.caller.Settle(c, u, "ok")
			finish := openai.ChatFinishReason(d.StopReason)
			if d.StopReason == gateway.StopToolUse && !toolCalled {
				finish = "stop" // only the structured answer's tool was called
			}
			last := chunk(openai.ChatDelta{}, &finish)
			svc := newSvc(c, d.NativeStop)
			last.Svc = &svc
			sse.data(last)
			if includeUsage {
				usage := openai.NewChatUsage(u, cost)
				sse.data(&openai.ChatChunk{ID: c.ID, Object: "chat.completion.chunk", Created: c.Start.Unix(), Model: c.Model.ID, Choices: []openai.ChatChunkChoice{}, Usage: &usage})
			}
			sse.data("[DONE]")
			record()
			return
		}
	}
}

// ---- Anthropic messages ----

type msgRequest struct {
	Model    string          `json:"model"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		// A system message's own output_config (Anthropic's
		// mid-conversation system messages): not carried, refused.
		OutputConfig json.RawMessage `json:"output_config"`
	} `json:"messages"`
	MaxTokens     *int            `json:"max_tokens"`
	Stream        bool            `json:"stream"`
	StopSequences []string        `json:"stop_sequences"`
	Temperature   *float64        `json:"temperature"`
	Tools         []msgTool       `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	Metadata      *struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
	TopP     *float64        `json:"top_p"`
	TopK     *int            `json:"top_k"`
	Thinking json.RawMessage `json:"thinking"`
	// Read to translate them or to refuse them by name (translate.go).
	OutputConfig      map[string]json.RawMessage `json:"output_config"`
	ContextManagement json.RawMessage            `json:"context_management"`
	Container         json.RawMessage            `json:"container"`
	MCPServers        json.RawMessage            `json:"mcp_servers"`
}

// msgTool is a tool of a messages request: a custom tool (no type, or
// type custom) is a name, a description and an input schema. Anthropic's
// own tools (web search, code execution, bash...) carry a versioned type
// and run on Anthropic's side; they are refused, not sent on as custom
// tools without a schema.
type msgTool struct {
	Type string `json:"type"`
	gateway.Tool
}

// blocksOf reads Anthropic content: a string or an array of blocks. Images
// are taken where images is set (message content, not the system prompt
// or a tool result: chat completions has no image there).
func blocksOf(raw json.RawMessage, param string, images bool) ([]gateway.Block, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []gateway.Block{{Type: "text", Text: s}}, nil
	}
	var blocks []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		Source    *imageSource    `json:"source"`
		Thinking  string          `json:"thinking"`
		Signature string          `json:"signature"`
		// cache_control, a caching hint, is accepted and not carried
		// (docs/api.md, Translation).
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, badRequest(param, "content must be a string or an array of content blocks")
	}
	var out []gateway.Block
	for i, b := range blocks {
		at := fmt.Sprintf("%s/%d", param, i)
		switch b.Type {
		case "text":
			out = append(out, gateway.Block{Type: "text", Text: b.Text})
		case "image":
			if !images {
				return nil, badRequest(at+"/type", "%s/type: an image here has no equivalent in chat completions (images are translated in message content only)", at)
			}
			img, err := b.Source.block(at + "/source")
			if err != nil {
				return nil, err
			}
			out = append(out, img)
		case "thinking":
			out = append(out, gateway.Block{Type: "thinking", Thinking: b.Thinking, Signature: b.Signature})
		case "tool_use":
			out = append(out, gateway.Block{Type: "tool_use", ID: b.ID, Name: b.Name, Input: b.Input})
		case "tool_result":
			text := ""
			if len(b.Content) > 0 {
				inner, err := blocksOf(b.Content, at+"/content", false)
				if err != nil {
					return nil, err
				}
				for _, ib := range inner {
					if ib.Type != "text" {
						return nil, badRequest(at+"/content", "%s/content: a tool result carries text only through this gateway", at)
					}
					text += ib.Text
				}
			}
			out = append(out, gateway.Block{Type: "tool_result", ToolUseID: b.ToolUseID, Text: text})
		default:
			return nil, badRequest(at+"/type", "%s/type: content block type %q has no equivalent at this provider; text, image, tool_use, tool_result and thinking are translated", at, b.Type)
		}
	}
	return out, nil
}

func (q *msgRequest) ToGateway() (gateway.Request, error) {
	var out gateway.Request
	if q.Model == "" {
		return out, badRequest("model", "model: Field required")
	}
	if q.MaxTokens == nil {
		return out, badRequest("max_tokens", "max_tokens: Field required")
	}
	if *q.MaxTokens < 1 {
		return out, badRequest("max_tokens", "max_tokens: must be at least 1")
	}
	if len(q.Messages) == 0 {
		return out, badRequest("messages", "messages: at least one message is required")
	}
	out.MaxTokens, out.Temperature, out.StopSequences, out.TopP, out.TopK = *q.MaxTokens, q.Temperature, q.StopSequences, q.TopP, q.TopK
	if q.Metadata != nil {
		out.User = q.Metadata.UserID
	}
	if err := q.untranslatable(); err != nil {
		return out, err
	}
	for i, t := range q.Tools {
		if t.Type != "" && t.Type != "custom" {
			return out, badRequest(fmt.Sprintf("tools/%d/type", i),
				"tools.%d.type: tool type %q is not supported through this gateway: only custom tools (a name and an input_schema) are; Anthropic's server and client tools are not", i, t.Type)
		}
		out.Tools = append(out.Tools, t.Tool)
	}
	tc, err := messagesToolChoice(q.ToolChoice, out.Tools)
	if err != nil {
		return out, err
	}
	out.ToolChoice = tc
	if err := q.reasoning(&out); err != nil {
		return out, err
	}
	if err := q.outputFormat(&out); err != nil {
		return out, err
	}
	if len(q.System) > 0 && string(q.System) != "null" {
		blocks, err := blocksOf(q.System, "system", false)
		if err != nil {
			return out, err
		}
		for _, b := range blocks {
			out.System += b.Text
		}
	}
	for i, m := range q.Messages {
		param := fmt.Sprintf("messages/%d/content", i)
		switch m.Role {
		case "user", "assistant":
		case "system", "developer":
			// A system message inside the list: merged into the system
			// prompt, in order (no other provider has one mid-conversation).
			if !absent(m.OutputConfig) && string(bytes.TrimSpace(m.OutputConfig)) != "{}" {
				return out, badRequest(fmt.Sprintf("messages/%d/output_config", i), "messages/%d/output_config: a system message's own output_config has no equivalent at this provider", i)
			}
			blocks, err := blocksOf(m.Content, param, false)
			if err != nil {
				return out, err
			}
			for j, b := range blocks {
				if b.Type != "text" {
					return out, badRequest(fmt.Sprintf("%s/%d/type", param, j), "%s/%d/type: a system message carries text only", param, j)
				}
				if out.System != "" && j == 0 {
					out.System += "\n\n"
				}
				out.System += b.Text
			}
			continue
		default:
			return out, badRequest(fmt.Sprintf("messages/%d/role", i), "messages/%d/role: role must be user, assistant or system", i)
		}
		blocks, err := blocksOf(m.Content, param, true)
		if err != nil {
			return out, err
		}
		out.Messages = append(out.Messages, gateway.Message{Role: m.Role, Content: blocks})
	}
	if len(out.Messages) == 0 {
		return out, badRequest("messages", "messages: at least one user or assistant message is required")
	}
	return out, nil
}

// thinkingOf is an answer's reasoning text: a chat client gets it as
// reasoning_content, as many OpenAI-compatible servers send it; the
// signature, which only Anthropic reads back, is not sent.
func thinkingOf(content []gateway.Block) string {
	var b strings.Builder
	for _, bl := range content {
		if bl.Type == "thinking" {
			b.WriteString(bl.Thinking)
		}
	}
	return b.String()
}

func anthropicUsage(u gateway.Usage, cost *float64) map[string]any {
	m := map[string]any{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_read_input_tokens": u.CacheReadTokens, "cache_creation_input_tokens": u.CacheWriteTokens, "estimated_cost_usd": cost}
	if u.Estimated {
		m["estimated"] = true
	}
	return m
}

// anthropicStop keeps Anthropic's vocabulary; an unknown native value is
// reported as end_turn with the native value in svc.trace.
func anthropicStop(stop string) string {
	switch stop {
	case gateway.StopEndTurn, gateway.StopMaxTokens, gateway.StopSequence, gateway.StopToolUse, gateway.StopRefusal, gateway.StopPauseTurn:
		return stop
	}
	return gateway.StopEndTurn
}

// stopSequence is a message's stop_sequence: the sequence hit, or null.
func stopSequence(stop, matched string) any {
	if stop != gateway.StopSequence || matched == "" {
		return nil
	}
	return matched
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	const f = anthropicErrors
	var q msgRequest
	req, chain, native, ok := s.prepareCall(w, r, f, &q, gateway.FormatAnthropic)
	if !ok {
		return
	}
	stream := native.Stream
	c := s.newCall(r, "messages", "msg_", req, stream)
	c.Native = native
	defer c.ReleaseHold()
	if stream {
		s.streamMessage(w, r, c, chain)
		return
	}
	resp, err := s.caller.Complete(r.Context(), c, chain)
	if err != nil {
		s.writeErrorAs(w, r, f, err)
		return
	}
	cost, record := s.caller.Settle(c, resp.Usage, "ok")
	defer record()
	if c.Passthrough {
		raw := resp.Raw
		if resp.Usage.Estimated {
			raw = withSvc(raw, "usage", anthropicUsage(resp.Usage, nil), "", nil) // the upstream sent none: Baton's count, marked estimated
		}
		writeRaw(w, withSvcAndCost(raw, newSvc(c, resp.NativeStop), cost))
		return
	}
	content := resp.Content
	if content == nil {
		content = []gateway.Block{}
	}
	stop := resp.StopReason
	if resp.Refusal != "" {
		// OpenAI's refusal: the message's text, with Anthropic's stop reason.
		content = append(content, gateway.Block{Type: "text", Text: resp.Refusal})
		if stop == gateway.StopEndTurn {
			stop = gateway.StopRefusal
		}
	}
	writeAnswer(w, map[string]any{
		"id": c.ID, "type": "message", "role": "assistant", "model": c.Model.ID, "provider": c.Provider.Name(),
		"content": content, "stop_reason": anthropicStop(stop), "stop_sequence": stopSequence(resp.StopReason, resp.MatchedStop),
		"usage": anthropicUsage(resp.Usage, cost),
		"svc":   newSvc(c, resp.NativeStop),
	})
}

func (s *Server) streamMessage(w http.ResponseWriter, r *http.Request, c *gateway.Call, chain []gateway.Target) {
	up, err := s.caller.Open(r.Context(), c, chain)
	if err != nil {
		s.writeErrorAs(w, r, anthropicErrors, err)
		return
	}
	if c.Passthrough {
		s.pipe(w, r, c, up, anthropicErrors)
		return
	}
	defer up.Close()
	sse, err := startSSE(w)
	if err != nil {
		s.caller.Record(c, up.ReadSoFar(c.Req), "upstream_error")
		s.writeErrorAs(w, r, anthropicErrors, err)
		return
	}
	early := up.Told() // the input side, when the upstream told it before any content
	start := map[string]any{"type": "message_start", "message": map[string]any{
		"id": c.ID, "type": "message", "role": "assistant", "model": c.Model.ID, "provider": c.Provider.Name(), "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": early.InputTokens, "output_tokens": 0,
			"cache_read_input_tokens": early.CacheReadTokens, "cache_creation_input_tokens": early.CacheWriteTokens},
		"svc": newSvc(c, ""),
	}}
	if sse.event("message_start", start) != nil || sse.event("ping", anPing) != nil {
		s.caller.Record(c, up.ReadSoFar(c.Req), "client_gone")
		return
	}
	sse.flush() // the headers and message_start leave now: a stream, even a short one, is sent as one (no Content-Length)
	ticker := time.NewTicker(pingEvery)
	defer ticker.Stop()
	var sent gateway.Tally
	// Anthropic upstreams send each tool call as its own block already.
	blocks := contentBlocks{open: -1, tools: map[int]int{}, buffer: c.Provider.Kind() != "anthropic"}
	refused := false
	for {
		p, ticked, gone := up.Next(r.Context(), ticker.C, sse.flush)
		if gone {
			s.caller.Record(c, sent.Bill(c.Req, nil), "client_gone")
			return
		}
		if ticked {
			if sse.event("ping", anPing) != nil {
				s.caller.Record(c, sent.Bill(c.Req, nil), "client_gone")
				return
			}
			continue
		}
		if p.Err != nil {
			outcome := "partial"
			if errors.Is(p.Err, context.Canceled) || r.Context().Err() != nil || errors.Is(p.Err, io.ErrClosedPipe) {
				outcome = "client_gone"
			} else {
				d := describe(r, p.Err)
				_, an := d.types()
				sse.event("error", map[string]any{"type": "error", "error": map[string]any{"type": an, "message": d.Message}})
			}
			s.caller.Record(c, sent.Bill(c.Req, nil), outcome)
			return
		}
		d := p.D
		if d.Refusal != "" { // OpenAI's refusal: text, and the stop reason says so
			d.Text, d.Refusal, refused = d.Text+d.Refusal, "", true
		}
		sent.See(d)
		if d.Text != "" || d.ToolCall != nil {
			if blocks.write(sse, d) != nil {
				s.caller.Record(c, sent.Bill(c.Req, nil), "client_gone")
				return
			}
		}
		if d.StopReason != "" {
			u := sent.Bill(c.Req, d.Usage)
			cost, record := s.caller.Settle(c, u, "ok")
			blocks.finish(sse)
			stop := d.StopReason
			if refused && stop == gateway.StopEndTurn {
				stop = gateway.StopRefusal
			}
			md := map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": anthropicStop(stop), "stop_sequence": stopSequence(d.StopReason, d.MatchedStop)},
				"usage": anthropicUsage(u, cost), "svc": newSvc(c, d.NativeStop)}
			sse.event("message_delta", md)
			sse.event("message_stop", anMessageStop)
			record()
			return
		}
	}
}

// contentBlocks numbers the content blocks of a streamed message: the
// first text opens a text block; each tool call opens the next block
// (closing the one before), and text after a tool call opens a new text
// block. No block is opened before there is something to put in it: an
// empty text block would come back in the client's next request, and the
// Messages API refuses those. The tool calls of a delta stream are
// assumed to come one after another, as providers send them.
type contentBlocks struct {
	open  int  // the index of the open block, -1 when none is
	next  int  // the index the next block gets
	text  bool // whether the open block is a text block
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
func (b *contentBlocks) flushTools(sse *sseWriter) error {
	for _, pc := range b.pending {
		if err := b.start(sse, map[string]any{"type": "tool_use", "id": pc.id, "name": pc.name, "input": map[string]any{}}); err != nil {
			return err
		}
		b.text = false
		if pc.args.Len() > 0 {
			if err := sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": b.open, "delta": map[string]any{"type": "input_json_delta", "partial_json": pc.args.String()}}); err != nil {
				return err
			}
		}
	}
	b.pending = nil
	return nil
}

// finish sends what is held back and closes the open block.
func (b *contentBlocks) finish(sse *sseWriter) error {
	if err := b.flushTools(sse); err != nil {
		return err
	}
	return b.stop(sse)
}

func (b *contentBlocks) stop(sse *sseWriter) error {
	if b.open < 0 {
		return nil
	}
	err := sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": b.open})
	b.open = -1
	return err
}

func (b *contentBlocks) start(sse *sseWriter, block map[string]any) error {
	if err := b.stop(sse); err != nil {
		return err
	}
	b.open = b.next
	b.next++
	return sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": b.open, "content_block": block})
}

func (b *contentBlocks) write(sse *sseWriter, d gateway.Delta) error {
	if d.Text != "" {
		if err := b.flushTools(sse); err != nil {
			return err
		}
		if !b.text || b.open < 0 {
			if err := b.start(sse, map[string]any{"type": "text", "text": ""}); err != nil {
				return err
			}
			b.text = true
		}
		if err := sse.event("content_block_delta", anTextDelta(b.open, d.Text)); err != nil {
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
		if err := b.start(sse, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}); err != nil {
			return err
		}
		b.text = false
		idx = b.open
		b.tools[tc.Index] = idx
	}
	if tc.Arguments == "" {
		return nil
	}
	return sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": tc.Arguments}})
}

// countRequest is a count_tokens body: a messages request without
// max_tokens, which the counter does not take.
type countRequest struct{ msgRequest }

func (q *countRequest) ToGateway() (gateway.Request, error) {
	if q.MaxTokens == nil {
		one := 1 // the gateway's request needs a cap; nothing is generated
		q.MaxTokens = &one
	}
	return q.msgRequest.ToGateway()
}

// countTokens answers POST /v1/messages/count_tokens: Anthropic's own count
// for a model of an Anthropic provider, else a local estimate, marked as one
// (svc.estimate). Counting is free: no budget hold, no usage event.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	const f = anthropicErrors
	var q countRequest
	req, chain, sent, ok := s.prepareCall(w, r, f, &q, "")
	if !ok {
		return
	}
	t := chain[0]
	if an, ok := t.Provider.(gateway.TokenCounter); ok {
		n, err := an.CountTokens(r.Context(), t.Model.Model, sent.Body)
		if err != nil {
			s.writeErrorAs(w, r, f, err)
			return
		}
		writeAnswer(w, map[string]any{"input_tokens": n})
		return
	}
	writeAnswer(w, map[string]any{"input_tokens": gateway.EstimateInputTokens(req),
		"svc": map[string]any{"estimate": true, "model": t.Model.ID}})
}
