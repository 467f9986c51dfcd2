package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/internal/sse"
)

// Passthrough: a Messages body goes upstream as the client wrote it, only
// the model rewritten (gateway.WithModel); the answer comes back as sent.

// Speaks implements gateway.Forwarder: the Messages API.
func (p *Provider) Speaks(format string) bool { return format == gateway.FormatAnthropic }

// Forward implements gateway.Forwarder.
func (p *Provider) Forward(ctx context.Context, n *gateway.Native, model string, stream bool) (*gateway.Response, gateway.Stream, error) {
	body, err := gateway.WithModel(n.Body, model)
	if err != nil {
		return nil, nil, err
	}
	post := func(ctx context.Context, path string, body []byte) (*http.Response, error) {
		return p.do(ctx, http.MethodPost, path, body, n.Header)
	}
	raw, open, err := gateway.PostNative(ctx, p.name, "/v1/messages", n.Query, body, stream, post)
	if err != nil {
		return nil, nil, err
	}
	if stream {
		return nil, &anRawStream{name: p.name, body: open, sse: sse.NewReader(open)}, nil
	}
	if !gateway.ValidJSON(raw) || gjson.GetBytes(raw, "type").Str != "message" {
		return nil, nil, gateway.NotAnAnswer(p.name, raw, "malformed response: not a message")
	}
	g := gjson.ParseBytes(raw)
	sr := g.Get("stop_reason").Str
	out := &gateway.Response{Raw: raw, ID: g.Get("id").Str, Model: g.Get("model").Str, StopReason: gateway.StopFromAnthropic(sr), NativeStop: sr,
		MatchedStop: g.Get("stop_sequence").Str}
	// A usage that counts no output (the input alone) is still read: the
	// caller counts the output from the text, as for a translated answer,
	// and bills the input, cache reads and writes as told.
	if u := g.Get("usage"); u.IsObject() {
		out.Usage = usageOf(u)
	} else {
		out.UsageMissing = true
	}
	if out.UsageMissing || out.Usage.OutputTokens == 0 {
		// The text, for Baton's count of an output the usage did not
		// count (the gateway bills no answer that says something as free).
		g.Get("content").ForEach(func(_, b gjson.Result) bool {
			out.Content = append(out.Content, gateway.Block{Type: "text", Text: b.Get("text").Str + b.Get("thinking").Str + b.Get("input").Raw})
			return true
		})
	}
	return out, nil, nil
}

// usageOf reads a Messages usage object; negative counts are
// dropped, as they would lower the tenant's spending. The 1-hour part of
// the cache writes (cache_creation.ephemeral_1h_input_tokens) is kept
// apart, for its rate.
func usageOf(u gjson.Result) gateway.Usage {
	var out gateway.Usage
	mergeUsage(&out, u)
	return out
}

// mergeUsage takes into out what the usage object u says, field by field:
// a message_delta's usage is cumulative and may tell only some of them.
// A count tells something when it is above 0, a speed or a geography when
// it is not empty, as the adapter reads them (anStream): a field given as
// null (Anthropic's message_delta has its input-side counts nullable) or
// as 0 does not wipe what message_start told, since cumulative counts
// never fall to 0.
func mergeUsage(out *gateway.Usage, u gjson.Result) {
	count := func(path string, n *int) {
		if v := u.Get(path).Int(); v > 0 {
			*n = int(v)
		}
	}
	count("input_tokens", &out.InputTokens)
	count("output_tokens", &out.OutputTokens)
	count("cache_read_input_tokens", &out.CacheReadTokens)
	count("cache_creation_input_tokens", &out.CacheWriteTokens)
	count("cache_creation.ephemeral_1h_input_tokens", &out.CacheWrite1hTokens)
	out.CacheWrite1hTokens = out.OneHourWrites()
	count("server_tool_use.web_search_requests", &out.WebSearches)
	if v := u.Get("speed").Str; v != "" {
		out.ServiceTier = speedTier(v)
	}
	if v := u.Get("inference_geo").Str; v != "" {
		out.Geo = gateway.GeoName(v)
	}
}

// speedTier is the capacity tier a usage's speed is billed at: fast mode
// at the price's FastRate (gateway.Price.TierRate), the standard speed at
// the standard rates, as the answer's own word ("default", which a call
// held at the fast rate is then billed at, not ""; "" is an answer that
// says nothing); a speed not yet known has no rate, so its call is not
// billed as a standard one.
func speedTier(speed string) string {
	switch speed {
	case "":
		return ""
	case "standard":
		return "default"
	}
	return gateway.TierName(speed)
}

// anRawStream is an Anthropic event stream passed through: each event is a
// delta whose Raw is the event's data and Event its name, summarized for
// billing (text, tool input) and fallback (what commits the stream).
type anRawStream struct {
	name  string
	body  io.ReadCloser
	sse   *sse.Reader
	usage gateway.Usage
	stop  string
	done  bool
}

func (s *anRawStream) Next() (gateway.Delta, error) {
	if s.done {
		return gateway.Delta{}, io.EOF
	}
	ev, err := s.sse.Next()
	if errors.Is(err, io.EOF) {
		if s.stop != "" {
			// The answer was whole (its message_delta said how it ended):
			// its stream is ended as the grammar ends it, as a chat stream
			// without [DONE] is given one.
			s.done = true
			return gateway.Delta{Raw: []byte(`{"type":"message_stop"}`), Event: "message_stop", Commit: true}, nil
		}
		return gateway.Delta{}, gateway.BadAnswer(s.name, "stream ended without message_stop")
	}
	if err != nil {
		return gateway.Delta{}, gateway.StreamError(s.name, err)
	}
	if !gateway.ValidJSON(ev.Data) {
		return gateway.Delta{}, gateway.BadAnswer(s.name, "malformed stream event")
	}
	g := gjson.ParseBytes(ev.Data)
	d := gateway.Delta{Raw: ev.Data, Event: ev.Event}
	typ := g.Get("type").Str
	if errorEvent(typ, ev.Event, g.Get("error").IsObject()) {
		typ = "error"
	}
	if d.Event == "" {
		d.Event = typ
	}
	switch typ {
	case "message_start":
		if u := g.Get("message.usage"); u.IsObject() {
			s.usage = usageOf(u)
			early := s.usage
			early.OutputTokens = 0 // a placeholder (1, or so): nothing is written yet
			d.Usage = &early
			d.ServiceTier = s.usage.ServiceTier // billed so even if the stream breaks
		}
	case "content_block_start":
		d.Commit = true
		switch b := g.Get("content_block"); b.Get("type").Str {
		case "tool_use":
			d.ToolCall = &gateway.ToolCallDelta{ID: b.Get("id").Str, Name: b.Get("name").Str}
		case "web_search_tool_result":
			// A search that ran is billed even if the stream breaks before
			// message_delta counts it; a failed one (an error object, not
			// a list of results) is not.
			d.WebSearch = b.Get("content").IsArray()
		}
	case "content_block_delta":
		d.Commit = true
		delta := g.Get("delta")
		switch delta.Get("type").Str {
		case "text_delta":
			d.Text = delta.Get("text").Str
		case "input_json_delta":
			d.ToolCall = &gateway.ToolCallDelta{Arguments: delta.Get("partial_json").Str}
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
			// but some upstreams tell it (or correct it) here. The output
			// count is the delta's, 0 when it names none.
			s.usage.OutputTokens = 0
			mergeUsage(&s.usage, u)
			final := s.usage
			d.Usage = &final
		}
		d.StopReason, d.NativeStop = gateway.StopFromAnthropic(s.stop), s.stop
		if d.StopReason == "" {
			d.StopReason = gateway.StopEndTurn
		}
		d.MatchedStop = g.Get("delta.stop_sequence").Str
	case "message_stop":
		d.Commit = true
		s.done = true
	case "error":
		typ := g.Get("error.type").Str
		return gateway.Delta{}, &gateway.UpstreamError{Provider: s.name, Status: anthropicStatus(typ), Bad: true, Type: typ, Message: g.Get("error.message").Str}
	}
	return d, nil
}

func (s *anRawStream) Close() error { return s.body.Close() }

// errorEvent reports whether a stream's event of type typ (its data's),
// named name, holding an error object or not, is the upstream's error:
// one of type error, or one without a type that is named error or holds
// an error (as some Anthropic-shaped routers send a failure, or an
// OpenAI-shaped {"error":{...}}), which was passed on as an event the
// SDKs ignore, or ignored, and the stream said to have ended short.
func errorEvent(typ, name string, hasError bool) bool {
	return typ == "error" || typ == "" && (name == "error" || hasError)
}

// Buffered implements gateway.Buffered: each upstream event is one delta.
func (s *anRawStream) Buffered() bool { return s.done || s.sse.Buffered() }
