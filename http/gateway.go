package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/gateway"
)

// pingEvery is how often a streamed message sends `ping` while it waits
// for the upstream.
var pingEvery = 5 * time.Second

// svcTrace is Baton's own part of a gateway answer.
type svcTrace struct {
	RequestID string `json:"requestId"`
	Trace     struct {
		SelectedProvider string `json:"selectedProvider"`
		FallbackUsed     bool   `json:"fallbackUsed"`
		NativeStopReason string `json:"nativeStopReason,omitempty"`
	} `json:"trace"`
}

func newSvc(id, provider, native string) svcTrace {
	var s svcTrace
	s.RequestID = id
	s.Trace.SelectedProvider = provider
	s.Trace.NativeStopReason = native
	return s
}

// gatewayCall is one model call in flight.
type gatewayCall struct {
	front  string
	prov   gateway.Provider
	model  *gateway.Model
	req    gateway.Request
	stream bool
	start  time.Time
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": s.catalog.List()})
}

// recordUsage writes the usage event even when the client has gone: a
// partial stream is billed for what was sent.
func (s *Server) recordUsage(r *http.Request, c gatewayCall, u gateway.Usage, outcome string) *float64 {
	cost := gateway.CostOf(c.model, u)
	p := principalOf(r.Context())
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	err := gateway.RecordUsage(ctx, s.store, gateway.UsageRecord{
		Tenant: p.Tenant, KeyID: p.KeyID, Front: c.front, Model: c.model.ID, Provider: c.prov.Name(), Stream: c.stream,
		Usage: u, CostUSD: cost, LatencyMs: time.Since(c.start).Milliseconds(), Outcome: outcome, RequestID: RequestID(r.Context()),
	})
	if err != nil {
		s.log.Error().Str("requestId", RequestID(r.Context())).Err(err).Msg("usage not recorded")
	}
	return cost
}

func badRequest(param, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	e := domain.Invalid("gateway", domain.FieldError{Pointer: param, Code: "invalid", Message: msg})
	e.Message = msg
	return e
}

// resolveModel finds the provider for a model id and refuses, before any
// upstream call, a provider that has no credentials.
func (s *Server) resolveModel(id string) (gateway.Provider, *gateway.Model, error) {
	prov, model, err := s.catalog.Resolve(id)
	if err != nil {
		return nil, nil, err
	}
	if !prov.Configured() {
		return nil, nil, domain.E("gateway", domain.KindUnavailable, "provider_not_configured",
			"provider %s is not configured on this server (no API key); see GET /v1/models for available models", prov.Name())
	}
	return prov, model, nil
}

// ---- OpenAI chat completions ----

type ccMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type ccRequest struct {
	Model               string      `json:"model"`
	Messages            []ccMessage `json:"messages"`
	MaxCompletionTokens *int        `json:"max_completion_tokens"`
	MaxTokens           *int        `json:"max_tokens"`
	Stream              bool        `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Temperature *float64        `json:"temperature"`
	Stop        json.RawMessage `json:"stop"`
}

// textOf reads OpenAI content: a string, or an array of text parts.
func textOf(raw json.RawMessage, param string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest(param, "content must be a string or an array of content parts")
	}
	var b strings.Builder
	for i, p := range parts {
		if p.Type != "text" {
			return "", badRequest(fmt.Sprintf("%s/%d", param, i), "content part type %q is not supported; only text", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func (q *ccRequest) toGateway() (gateway.Request, error) {
	var out gateway.Request
	if q.Model == "" {
		return out, badRequest("model", "model is required, as <provider>:<model>")
	}
	if len(q.Messages) == 0 {
		return out, badRequest("messages", "messages must hold at least one message")
	}
	switch {
	case q.MaxCompletionTokens != nil:
		out.MaxTokens = *q.MaxCompletionTokens
	case q.MaxTokens != nil:
		out.MaxTokens = *q.MaxTokens
	}
	if (q.MaxCompletionTokens != nil || q.MaxTokens != nil) && out.MaxTokens < 1 {
		return out, badRequest("max_completion_tokens", "must be at least 1")
	}
	out.Temperature = q.Temperature
	if len(q.Stop) > 0 && string(q.Stop) != "null" {
		var one string
		if json.Unmarshal(q.Stop, &one) == nil {
			out.StopSequences = []string{one}
		} else if err := json.Unmarshal(q.Stop, &out.StopSequences); err != nil {
			return out, badRequest("stop", "stop must be a string or an array of strings")
		}
	}
	var system []string
	for i, m := range q.Messages {
		param := fmt.Sprintf("messages/%d/content", i)
		text, err := textOf(m.Content, param)
		if err != nil {
			return out, err
		}
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
		case "user":
			out.Messages = append(out.Messages, gateway.Message{Role: "user", Content: []gateway.Block{{Type: "text", Text: text}}})
		case "assistant":
			msg := gateway.Message{Role: "assistant"}
			if text != "" {
				msg.Content = append(msg.Content, gateway.Block{Type: "text", Text: text})
			}
			for _, tc := range m.ToolCalls {
				args := tc.Function.Arguments
				if !json.Valid([]byte(args)) {
					args = "{}"
				}
				msg.Content = append(msg.Content, gateway.Block{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: json.RawMessage(args)})
			}
			out.Messages = append(out.Messages, msg)
		case "tool":
			out.Messages = append(out.Messages, gateway.Message{Role: "user", Content: []gateway.Block{{Type: "tool_result", ToolUseID: m.ToolCallID, Text: text}}})
		default:
			return out, badRequest(fmt.Sprintf("messages/%d/role", i), "role %q is not system, developer, user, assistant or tool", m.Role)
		}
	}
	out.System = strings.Join(system, "\n\n")
	if len(out.Messages) == 0 {
		return out, badRequest("messages", "messages must hold at least one user or assistant message")
	}
	return out, nil
}

// finishReason maps a canonical stop reason to OpenAI's.
func finishReason(stop string) string {
	switch stop {
	case gateway.StopMaxTokens:
		return "length"
	case gateway.StopToolUse:
		return "tool_calls"
	}
	return "stop"
}

func openaiUsage(u gateway.Usage) map[string]any {
	prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	return map[string]any{
		"prompt_tokens": prompt, "completion_tokens": u.OutputTokens, "total_tokens": prompt + u.OutputTokens,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.CacheReadTokens},
	}
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	const f = openaiErrors
	body, err := readBody(w, r, s.maxBody)
	if err != nil {
		s.writeWireDecodeError(w, r, f, err)
		return
	}
	var q ccRequest
	if err := decodeBody(body, &q); err != nil {
		s.writeWireDecodeError(w, r, f, err)
		return
	}
	req, err := q.toGateway()
	if err != nil {
		s.writeErrorAs(w, r, f, err)
		return
	}
	prov, model, err := s.resolveModel(q.Model)
	if err != nil {
		s.writeErrorAs(w, r, f, err)
		return
	}
	req.Model = model.Model
	c := gatewayCall{front: "chat.completions", prov: prov, model: model, req: req, stream: q.Stream, start: time.Now()}
	id := "chatcmpl-" + strings.ReplaceAll(uuid.Must(uuid.NewV7()).String(), "-", "")
	if q.Stream {
		s.streamChat(w, r, c, id, q.StreamOptions != nil && q.StreamOptions.IncludeUsage)
		return
	}
	resp, err := prov.Complete(r.Context(), req)
	if err != nil {
		s.recordUsage(r, c, gateway.Usage{}, "upstream_error")
		s.writeErrorAs(w, r, f, err)
		return
	}
	cost := s.recordUsage(r, c, resp.Usage, "ok")
	msg := map[string]any{"role": "assistant", "content": resp.Text()}
	var calls []map[string]any
	for _, b := range resp.Content {
		if b.Type == "tool_use" {
			calls = append(calls, map[string]any{"id": b.ID, "type": "function", "function": map[string]any{"name": b.Name, "arguments": string(b.Input)}})
		}
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
		if resp.Text() == "" {
			msg["content"] = nil
		}
	}
	usage := openaiUsage(resp.Usage)
	usage["estimated_cost_usd"] = cost
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "object": "chat.completion", "created": c.start.Unix(), "model": model.ID,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finishReason(resp.StopReason), "logprobs": nil}},
		"usage":   usage,
		"svc":     newSvc(id, prov.Name(), resp.NativeStop),
	})
}

func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, c gatewayCall, id string, includeUsage bool) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	st, err := c.prov.Stream(ctx, c.req)
	if err != nil {
		// Nothing has reached the client yet: an ordinary error answer.
		s.recordUsage(r, c, gateway.Usage{}, "upstream_error")
		s.writeErrorAs(w, r, openaiErrors, err)
		return
	}
	defer st.Close()
	sse, err := startSSE(w)
	if err != nil {
		s.writeErrorAs(w, r, openaiErrors, err)
		return
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": c.start.Unix(), "model": c.model.ID,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}}
	}
	first := chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	first["svc"] = newSvc(id, c.prov.Name(), "")
	if sse.data(first) != nil {
		s.recordUsage(r, c, gateway.Usage{}, "client_gone")
		return
	}
	deltas, pumpDone := pump(ctx, st)
	defer func() { cancel(); st.Close(); <-pumpDone }()
	var sent gateway.Usage
	for {
		var p pumped
		select {
		case p = <-deltas:
		case <-ctx.Done():
			// The client went away; the pump stops without a last send.
			s.recordUsage(r, c, sent, "client_gone")
			return
		}
		if p.err != nil {
			outcome := "partial"
			if errors.Is(p.err, context.Canceled) || r.Context().Err() != nil {
				outcome = "client_gone"
			} else {
				we := classify(p.err)
				sse.data(map[string]any{"error": map[string]any{"message": we.message, "type": we.oaType, "param": nil, "code": we.code}})
			}
			s.recordUsage(r, c, sent, outcome)
			return
		}
		d := p.d
		if d.Text != "" {
			sent.OutputTokens++ // a floor for billing if the stream breaks; replaced by reported usage
			if sse.data(chunk(map[string]any{"content": d.Text}, nil)) != nil {
				s.recordUsage(r, c, sent, "client_gone")
				return
			}
		}
		if d.StopReason != "" {
			u := sent
			if d.Usage != nil {
				u = *d.Usage
			}
			cost := s.recordUsage(r, c, u, "ok")
			last := chunk(map[string]any{}, finishReason(d.StopReason))
			last["svc"] = newSvc(id, c.prov.Name(), d.NativeStop)
			sse.data(last)
			if includeUsage {
				usage := openaiUsage(u)
				usage["estimated_cost_usd"] = cost
				sse.data(map[string]any{"id": id, "object": "chat.completion.chunk", "created": c.start.Unix(), "model": c.model.ID, "choices": []any{}, "usage": usage})
			}
			sse.data("[DONE]")
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
	} `json:"messages"`
	MaxTokens     *int            `json:"max_tokens"`
	Stream        bool            `json:"stream"`
	StopSequences []string        `json:"stop_sequences"`
	Temperature   *float64        `json:"temperature"`
	Tools         []gateway.Tool  `json:"tools"`
	Metadata      json.RawMessage `json:"metadata"`
}

// blocksOf reads Anthropic content: a string or an array of blocks.
func blocksOf(raw json.RawMessage, param string) ([]gateway.Block, error) {
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
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, badRequest(param, "content must be a string or an array of content blocks")
	}
	var out []gateway.Block
	for i, b := range blocks {
		switch b.Type {
		case "text":
			out = append(out, gateway.Block{Type: "text", Text: b.Text})
		case "tool_use":
			out = append(out, gateway.Block{Type: "tool_use", ID: b.ID, Name: b.Name, Input: b.Input})
		case "tool_result":
			text := ""
			if len(b.Content) > 0 {
				inner, err := blocksOf(b.Content, fmt.Sprintf("%s/%d/content", param, i))
				if err != nil {
					return nil, err
				}
				for _, ib := range inner {
					text += ib.Text
				}
			}
			out = append(out, gateway.Block{Type: "tool_result", ToolUseID: b.ToolUseID, Text: text})
		default:
			return nil, badRequest(fmt.Sprintf("%s/%d/type", param, i), "content block type %q is not supported", b.Type)
		}
	}
	return out, nil
}

func (q *msgRequest) toGateway() (gateway.Request, error) {
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
	out.MaxTokens, out.Temperature, out.StopSequences, out.Tools = *q.MaxTokens, q.Temperature, q.StopSequences, q.Tools
	if len(q.System) > 0 && string(q.System) != "null" {
		blocks, err := blocksOf(q.System, "system")
		if err != nil {
			return out, err
		}
		for _, b := range blocks {
			out.System += b.Text
		}
	}
	for i, m := range q.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return out, badRequest(fmt.Sprintf("messages/%d/role", i), "role must be user or assistant (the system prompt is the top-level system field)")
		}
		blocks, err := blocksOf(m.Content, fmt.Sprintf("messages/%d/content", i))
		if err != nil {
			return out, err
		}
		out.Messages = append(out.Messages, gateway.Message{Role: m.Role, Content: blocks})
	}
	return out, nil
}

func anthropicUsage(u gateway.Usage, cost *float64) map[string]any {
	return map[string]any{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_read_input_tokens": u.CacheReadTokens, "cache_creation_input_tokens": u.CacheWriteTokens, "estimated_cost_usd": cost}
}

// anthropicStop keeps Anthropic's vocabulary; an unknown native value is
// reported as end_turn with the native value in svc.trace.
func anthropicStop(stop string) string {
	switch stop {
	case gateway.StopEndTurn, gateway.StopMaxTokens, gateway.StopSequence, gateway.StopToolUse:
		return stop
	}
	return gateway.StopEndTurn
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	const f = anthropicErrors
	body, err := readBody(w, r, s.maxBody)
	if err != nil {
		s.writeWireDecodeError(w, r, f, err)
		return
	}
	var q msgRequest
	if err := decodeBody(body, &q); err != nil {
		s.writeWireDecodeError(w, r, f, err)
		return
	}
	req, err := q.toGateway()
	if err != nil {
		s.writeErrorAs(w, r, f, err)
		return
	}
	prov, model, err := s.resolveModel(q.Model)
	if err != nil {
		s.writeErrorAs(w, r, f, err)
		return
	}
	req.Model = model.Model
	c := gatewayCall{front: "messages", prov: prov, model: model, req: req, stream: q.Stream, start: time.Now()}
	id := "msg_" + strings.ReplaceAll(uuid.Must(uuid.NewV7()).String(), "-", "")
	if q.Stream {
		s.streamMessage(w, r, c, id)
		return
	}
	resp, err := prov.Complete(r.Context(), req)
	if err != nil {
		s.recordUsage(r, c, gateway.Usage{}, "upstream_error")
		s.writeErrorAs(w, r, f, err)
		return
	}
	cost := s.recordUsage(r, c, resp.Usage, "ok")
	content := resp.Content
	if content == nil {
		content = []gateway.Block{}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model.ID, "provider": prov.Name(),
		"content": content, "stop_reason": anthropicStop(resp.StopReason), "stop_sequence": nil,
		"usage": anthropicUsage(resp.Usage, cost),
		"svc":   newSvc(id, prov.Name(), resp.NativeStop),
	})
}

func (s *Server) streamMessage(w http.ResponseWriter, r *http.Request, c gatewayCall, id string) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	st, err := c.prov.Stream(ctx, c.req)
	if err != nil {
		s.recordUsage(r, c, gateway.Usage{}, "upstream_error")
		s.writeErrorAs(w, r, anthropicErrors, err)
		return
	}
	defer st.Close()
	sse, err := startSSE(w)
	if err != nil {
		s.writeErrorAs(w, r, anthropicErrors, err)
		return
	}
	start := map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": c.model.ID, "provider": c.prov.Name(), "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 0, "output_tokens": 0},
		"svc": newSvc(id, c.prov.Name(), ""),
	}}
	if sse.event("message_start", start) != nil || sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}) != nil ||
		sse.event("ping", map[string]any{"type": "ping"}) != nil {
		s.recordUsage(r, c, gateway.Usage{}, "client_gone")
		return
	}
	deltas, pumpDone := pump(ctx, st)
	defer func() { cancel(); st.Close(); <-pumpDone }()
	ticker := time.NewTicker(pingEvery)
	defer ticker.Stop()
	var sent gateway.Usage
	for {
		var p pumped
		select {
		case p = <-deltas:
		case <-ctx.Done():
			s.recordUsage(r, c, sent, "client_gone")
			return
		case <-ticker.C:
			if sse.event("ping", map[string]any{"type": "ping"}) != nil {
				s.recordUsage(r, c, sent, "client_gone")
				return
			}
			continue
		}
		if p.err != nil {
			outcome := "partial"
			if errors.Is(p.err, context.Canceled) || r.Context().Err() != nil || errors.Is(p.err, io.ErrClosedPipe) {
				outcome = "client_gone"
			} else {
				we := classify(p.err)
				sse.event("error", map[string]any{"type": "error", "error": map[string]any{"type": we.anType, "message": we.message}})
			}
			s.recordUsage(r, c, sent, outcome)
			return
		}
		d := p.d
		if d.Text != "" {
			sent.OutputTokens++
			if sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": d.Text}}) != nil {
				s.recordUsage(r, c, sent, "client_gone")
				return
			}
		}
		if d.StopReason != "" {
			u := sent
			if d.Usage != nil {
				u = *d.Usage
			}
			cost := s.recordUsage(r, c, u, "ok")
			sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
			md := map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": anthropicStop(d.StopReason), "stop_sequence": nil},
				"usage": anthropicUsage(u, cost), "svc": newSvc(id, c.prov.Name(), d.NativeStop)}
			sse.event("message_delta", md)
			sse.event("message_stop", map[string]any{"type": "message_stop"})
			return
		}
	}
}

// writeWireDecodeError answers body-level failures (too large, not JSON)
// in a front's error shape.
func (s *Server) writeWireDecodeError(w http.ResponseWriter, r *http.Request, f errFormat, err error) {
	var de *decodeError
	if !errors.As(err, &de) {
		s.writeErrorAs(w, r, f, err)
		return
	}
	typ := "invalid_request_error"
	if de.status == http.StatusRequestEntityTooLarge {
		if f == anthropicErrors {
			typ = "request_too_large"
		}
	}
	if f == openaiErrors {
		writeJSON(w, de.status, map[string]any{"error": map[string]any{"message": de.msg, "type": typ, "param": nil, "code": de.code}})
		return
	}
	writeJSON(w, de.status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": de.msg}, "request_id": RequestID(r.Context())})
}
