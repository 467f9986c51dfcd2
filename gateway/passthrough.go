package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/batonhq/baton/gateway/internal/sse"
)

// Speaks implements Forwarder: the Messages API.
func (p *Anthropic) Speaks(format string) bool { return format == FormatAnthropic }

// Forward implements Forwarder.
func (p *Anthropic) Forward(ctx context.Context, n *Native, model string, stream bool) (*Response, Stream, error) {
	body, err := WithModel(n.Body, model)
	if err != nil {
		return nil, nil, err
	}
	if !stream {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout) // a stalled body must not hold the call forever
		defer cancel()
	}
	path := "/v1/messages"
	if n.Query != "" {
		path += "?" + n.Query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.baseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", p.key)
	req.Header.Set("anthropic-version", AnthropicVersion)
	if v := n.Header.Get("anthropic-version"); v != "" {
		req.Header.Set("anthropic-version", v)
	}
	for _, v := range n.Header.Values("anthropic-beta") {
		req.Header.Add("anthropic-beta", v)
	}
	resp, err := Send(p.client, p.name, req)
	if err != nil {
		return nil, nil, err
	}
	if stream {
		return nil, &anRawStream{name: p.name, body: resp.Body, sse: sse.NewReader(resp.Body)}, nil
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer))
	if err != nil {
		return nil, nil, MidAnswerError(p.name, err, "answer interrupted", "")
	}
	if !gjson.ValidBytes(raw) || gjson.GetBytes(raw, "type").Str != "message" {
		return nil, nil, &UpstreamError{Provider: p.name, Status: http.StatusBadGateway, Message: "malformed response: not a message"}
	}
	g := gjson.ParseBytes(raw)
	sr := g.Get("stop_reason").Str
	out := &Response{Raw: raw, ID: g.Get("id").Str, Model: g.Get("model").Str, StopReason: StopFromAnthropic(sr), NativeStop: sr,
		MatchedStop: g.Get("stop_sequence").Str}
	if u := g.Get("usage"); u.IsObject() {
		out.Usage = anthropicUsageOf(u)
	} else {
		out.UsageMissing = true
		g.Get("content").ForEach(func(_, b gjson.Result) bool {
			out.Content = append(out.Content, Block{Type: "text", Text: b.Get("text").Str + b.Get("thinking").Str + b.Get("input").Raw})
			return true
		})
	}
	return out, nil, nil
}

// anthropicUsageOf reads a Messages usage object; negative counts are
// dropped, as they would lower the tenant's spending.
func anthropicUsageOf(u gjson.Result) Usage {
	return Usage{InputTokens: max(int(u.Get("input_tokens").Int()), 0), OutputTokens: max(int(u.Get("output_tokens").Int()), 0),
		CacheReadTokens: max(int(u.Get("cache_read_input_tokens").Int()), 0), CacheWriteTokens: max(int(u.Get("cache_creation_input_tokens").Int()), 0)}
}

// anRawStream is an Anthropic event stream passed through: each event is a
// delta whose Raw is the event's data and Event its name, summarized for
// billing (text, tool input) and fallback (what commits the stream).
type anRawStream struct {
	name  string
	body  io.ReadCloser
	sse   *sse.Reader
	usage Usage
	stop  string
	done  bool
}

func (s *anRawStream) Next() (Delta, error) {
	if s.done {
		return Delta{}, io.EOF
	}
	ev, err := s.sse.Next()
	if errors.Is(err, io.EOF) {
		return Delta{}, &UpstreamError{Provider: s.name, Status: http.StatusBadGateway, Message: "stream ended without message_stop"}
	}
	if err != nil {
		return Delta{}, StreamError(s.name, err)
	}
	if !gjson.ValidBytes(ev.Data) {
		return Delta{}, &UpstreamError{Provider: s.name, Status: http.StatusBadGateway, Message: "malformed stream event"}
	}
	g := gjson.ParseBytes(ev.Data)
	d := Delta{Raw: ev.Data, Event: ev.Event}
	typ := g.Get("type").Str
	if d.Event == "" {
		d.Event = typ
	}
	switch typ {
	case "message_start":
		if u := g.Get("message.usage"); u.IsObject() {
			s.usage = anthropicUsageOf(u)
			early := s.usage
			d.Usage = &early
		}
	case "content_block_start":
		d.Commit = true
		if b := g.Get("content_block"); b.Get("type").Str == "tool_use" {
			d.ToolCall = &ToolCallDelta{ID: b.Get("id").Str, Name: b.Get("name").Str}
		}
	case "content_block_delta":
		d.Commit = true
		delta := g.Get("delta")
		switch delta.Get("type").Str {
		case "text_delta":
			d.Text = delta.Get("text").Str
		case "input_json_delta":
			d.ToolCall = &ToolCallDelta{Arguments: delta.Get("partial_json").Str}
		case "thinking_delta":
			d.Text = delta.Get("thinking").Str
		}
	case "message_delta":
		d.Commit = true
		if sr := g.Get("delta.stop_reason").Str; sr != "" {
			s.stop = sr
		}
		if u := g.Get("usage"); u.IsObject() {
			// Cumulative; the input side is usually told at message_start,
			// but some upstreams tell it (or correct it) here.
			s.usage.OutputTokens = max(int(u.Get("output_tokens").Int()), 0)
			if in := u.Get("input_tokens"); in.Exists() {
				s.usage.InputTokens = max(int(in.Int()), 0)
			}
			if c := u.Get("cache_read_input_tokens"); c.Exists() {
				s.usage.CacheReadTokens = max(int(c.Int()), 0)
			}
			if c := u.Get("cache_creation_input_tokens"); c.Exists() {
				s.usage.CacheWriteTokens = max(int(c.Int()), 0)
			}
			final := s.usage
			d.Usage = &final
		}
		d.StopReason, d.NativeStop = StopFromAnthropic(s.stop), s.stop
		if d.StopReason == "" {
			d.StopReason = StopEndTurn
		}
		d.MatchedStop = g.Get("delta.stop_sequence").Str
	case "message_stop":
		d.Commit = true
		s.done = true
	case "error":
		typ := g.Get("error.type").Str
		return Delta{}, &UpstreamError{Provider: s.name, Status: anthropicStatus(typ), Type: typ, Message: g.Get("error.message").Str}
	}
	return d, nil
}

func (s *anRawStream) Close() error { return s.body.Close() }

// Speaks implements Forwarder: chat completions, for OpenAI and any
// OpenAI-compatible server; the Responses API, for OpenAI only (few
// compatible servers have it).
func (p *OpenAI) Speaks(format string) bool {
	return format == FormatChat || format == FormatResponses && p.kind == "openai"
}

// Forward implements Forwarder. A stream asks the upstream for its usage
// (stream_options.include_usage), which billing needs; when the client did
// not ask for it, the usage chunk is not passed on.
func (p *OpenAI) Forward(ctx context.Context, n *Native, model string, stream bool) (*Response, Stream, error) {
	if n.Format == FormatResponses {
		return p.forwardResponses(ctx, n, model, stream)
	}
	body, err := WithModel(n.Body, model)
	if err != nil {
		return nil, nil, err
	}
	if p.kind == "openai-compatible" {
		// Many compatible servers know only the older max_tokens (as the
		// translating adapter sends it): the one rename besides the model.
		if mct := gjson.GetBytes(body, "max_completion_tokens"); mct.Exists() && !gjson.GetBytes(body, "max_tokens").Exists() {
			if b, err := sjson.SetRawBytes(body, "max_tokens", []byte(mct.Raw)); err == nil {
				if b, err = sjson.DeleteBytes(b, "max_completion_tokens"); err == nil {
					body = b
				}
			}
		}
	}
	wantUsage := gjson.GetBytes(n.Body, "stream_options.include_usage").Bool()
	if stream && !wantUsage {
		if body, err = sjson.SetBytes(body, "stream_options.include_usage", true); err != nil {
			return nil, nil, &UpstreamError{Provider: "baton", Status: http.StatusBadRequest, Message: "stream_options cannot be set: " + err.Error()}
		}
	}
	if !stream {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	path := "/chat/completions"
	if n.Query != "" {
		path += "?" + n.Query
	}
	resp, err := p.do(ctx, http.MethodPost, path, body)
	if err != nil {
		return nil, nil, err
	}
	if stream {
		return nil, &oaRawStream{name: p.name, body: resp.Body, sse: sse.NewReader(resp.Body), passUsage: wantUsage}, nil
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer))
	if err != nil {
		return nil, nil, MidAnswerError(p.name, err, "answer interrupted", "")
	}
	if !gjson.ValidBytes(raw) || !gjson.GetBytes(raw, "choices").IsArray() {
		return nil, nil, &UpstreamError{Provider: p.name, Status: http.StatusBadGateway, Message: "malformed response: no choices"}
	}
	g := gjson.ParseBytes(raw)
	fr := g.Get("choices.0.finish_reason").Str
	out := &Response{Raw: raw, ID: g.Get("id").Str, Model: g.Get("model").Str, StopReason: StopFromOpenAI(fr), NativeStop: fr}
	if u := g.Get("usage"); u.IsObject() {
		out.Usage = openaiUsageOf(u)
	} else {
		out.UsageMissing = true
		g.Get("choices").ForEach(func(_, c gjson.Result) bool {
			m := c.Get("message")
			out.Content = append(out.Content, Block{Type: "text", Text: m.Get("content").Str + m.Get("refusal").Str + m.Get("tool_calls").Raw})
			return true
		})
	}
	return out, nil, nil
}

// openaiUsageOf reads a chat completions usage object: prompt tokens
// include the cached ones, which are billed apart.
func openaiUsageOf(u gjson.Result) Usage {
	prompt := max(int(u.Get("prompt_tokens").Int()), 0)
	cached := min(max(int(u.Get("prompt_tokens_details.cached_tokens").Int()), 0), prompt)
	written := min(max(int(u.Get("prompt_tokens_details.cache_write_tokens").Int()), 0), prompt-cached)
	return Usage{InputTokens: prompt - cached - written, OutputTokens: max(int(u.Get("completion_tokens").Int()), 0), CacheReadTokens: cached, CacheWriteTokens: written}
}

// oaRawStream is a chat completions chunk stream passed through.
type oaRawStream struct {
	name      string
	body      io.ReadCloser
	sse       *sse.Reader
	passUsage bool // the client asked for the usage chunk
	stop      string
	done      bool
}

func (s *oaRawStream) Next() (Delta, error) {
	if s.done {
		return Delta{}, io.EOF
	}
	ev, err := s.sse.Next()
	if errors.Is(err, io.EOF) {
		if s.stop != "" {
			// Some compatible servers end without [DONE]: the answer was whole.
			s.done = true
			return Delta{Raw: []byte("[DONE]"), Commit: true}, nil
		}
		return Delta{}, &UpstreamError{Provider: s.name, Status: http.StatusBadGateway, Message: "stream ended before the answer did"}
	}
	if err != nil {
		return Delta{}, StreamError(s.name, err)
	}
	if string(bytes.TrimSpace(ev.Data)) == "[DONE]" {
		s.done = true
		return Delta{Raw: []byte("[DONE]"), Commit: true}, nil
	}
	if !gjson.ValidBytes(ev.Data) {
		return Delta{}, &UpstreamError{Provider: s.name, Status: http.StatusBadGateway, Message: "malformed stream chunk"}
	}
	g := gjson.ParseBytes(ev.Data)
	if e := g.Get("error"); e.Exists() {
		return Delta{}, &UpstreamError{Provider: s.name, Status: http.StatusBadGateway, Type: e.Get("type").Str, Message: orDefault(e.Get("message").Str, "error event")}
	}
	d := Delta{Raw: ev.Data}
	choice := g.Get("choices.0")
	delta := choice.Get("delta")
	d.Text = delta.Get("content").Str
	d.Refusal = delta.Get("refusal").Str
	if tc := delta.Get("tool_calls.0"); tc.Exists() {
		d.ToolCall = &ToolCallDelta{Index: int(tc.Get("index").Int()), ID: tc.Get("id").Str, Name: tc.Get("function.name").Str, Arguments: tc.Get("function.arguments").Str}
	}
	if fr := choice.Get("finish_reason").Str; fr != "" {
		s.stop = fr
		d.StopReason, d.NativeStop = StopFromOpenAI(fr), fr
	}
	if u := g.Get("usage"); u.IsObject() {
		final := openaiUsageOf(u)
		d.Usage = &final
		if s.stop != "" {
			d.StopReason, d.NativeStop = StopFromOpenAI(s.stop), s.stop
		}
		if !s.passUsage {
			d.Raw = nil // asked for billing, not by the client
		}
	}
	if !choice.Exists() && d.Usage == nil {
		d.Commit = true // a chunk of another kind: still the client's
	}
	return d, nil
}

func (s *oaRawStream) Close() error { return s.body.Close() }
