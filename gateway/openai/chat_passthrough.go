package openai

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/internal/sse"
)

// Speaks implements gateway.Forwarder: chat completions, for OpenAI and any
// OpenAI-compatible server; the Responses API, for OpenAI only (few
// compatible servers have it).
func (p *Provider) Speaks(format string) bool {
	return format == gateway.FormatChat || format == gateway.FormatResponses && p.kind == "openai"
}

// Forward implements gateway.Forwarder. A stream asks the upstream for its usage
// (stream_options.include_usage), which billing needs; when the client did
// not ask for it, the usage chunk is not passed on.
func (p *Provider) Forward(ctx context.Context, n *gateway.Native, model string, stream bool) (*gateway.Response, gateway.Stream, error) {
	if n.Format == gateway.FormatResponses {
		return p.forwardResponses(ctx, n, model, stream)
	}
	body, err := gateway.WithModel(n.Body, model)
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
	wantUsage := n.StreamUsage
	if stream && !wantUsage {
		if body, err = sjson.SetBytes(body, "stream_options.include_usage", true); err != nil {
			return nil, nil, &gateway.UpstreamError{Provider: "baton", Status: http.StatusBadRequest, Message: "stream_options cannot be set: " + err.Error()}
		}
	}
	raw, open, err := gateway.PostNative(ctx, p.name, "/chat/completions", n.Query, body, stream, p.post(n))
	if err != nil {
		return nil, nil, err
	}
	if stream {
		return nil, &oaRawStream{name: p.name, body: open, sse: sse.NewReader(open), passUsage: wantUsage}, nil
	}
	out, err := readChatAnswer(p.name, raw)
	return out, nil, err
}

// readChatAnswer reads a passed-through chat completion for billing and
// the trace: one pass over its top level, as a Get per field would walk
// the whole answer (its content) again for each (FuzzChatAnswer holds it
// to the Get-per-field reading).
func readChatAnswer(provider string, raw []byte) (*gateway.Response, error) {
	if !gateway.ValidJSON(raw) {
		return nil, gateway.Unreadable(provider, raw, "malformed response: no choices")
	}
	var id, mod, choices, finish, usage, tier gjson.Result
	var choice bool // a choice in a choices array, as the path choices.0 finds one
	gjson.Parse(view(raw)).ForEach(func(k, v gjson.Result) bool {
		switch {
		case k.Str == "id" && !id.Exists():
			id = v
		case k.Str == "service_tier" && !tier.Exists():
			tier = v
		case k.Str == "model" && !mod.Exists():
			mod = v
		case k.Str == "choices":
			if !choices.Exists() {
				choices = v
			}
			if !finish.Exists() {
				// As the path choices.0.finish_reason finds it: in a
				// repeated key's later array when the first has none.
				finish = v.Get("0.finish_reason")
			}
			choice = choice || v.Get("0").Exists()
		case k.Str == "usage" && !usage.Exists():
			usage = v
		}
		return true
	})
	if !choices.IsArray() {
		return nil, gateway.NotAnAnswer(provider, raw, "malformed response: no choices")
	}
	if !choice && gjson.GetBytes(raw, "error.message").Str != "" {
		// An empty choices array beside an error of the provider's API
		// (a router's failure): that error, as a translated call reads it.
		return nil, gateway.NotAnAnswer(provider, raw, "")
	}
	fr := finish.Str
	// Strings are cloned: the answer's bytes go on to the client while
	// these are kept (the usage event).
	out := &gateway.Response{Raw: raw, ID: strings.Clone(id.Str), Model: strings.Clone(mod.Str), StopReason: ChatStop(fr), NativeStop: strings.Clone(fr)}
	// A usage that counts no output (the input alone) is still read: the
	// caller counts the output from the text, as for a translated answer,
	// and bills the input and cache reads as told.
	if usage.IsObject() {
		out.Usage = usageOf(usage)
	} else {
		out.UsageMissing = true
	}
	if out.UsageMissing || out.Usage.OutputTokens == 0 {
		// The text, for Baton's count of an output the usage did not
		// count (the gateway bills no answer that says something as free).
		choices.ForEach(func(_, c gjson.Result) bool {
			m := c.Get("message")
			out.Content = append(out.Content, gateway.Block{Type: "text", Text: m.Get("content").Str + m.Get("refusal").Str + m.Get("tool_calls").Raw})
			return true
		})
	}
	out.Usage.ServiceTier = gateway.TierName(tier.Str)
	return out, nil
}

// usageOf reads a chat completions usage object: prompt tokens
// include the cached ones, which are billed apart.
func usageOf(u gjson.Result) gateway.Usage {
	// One pass over the usage object's fields; the nested counts through
	// gjson's path, which reads on to a repeated key's later object when
	// the first lacks the field (FuzzRawChunk holds both to Get's answers).
	var prompt, completion gjson.Result
	u.ForEach(func(k, v gjson.Result) bool {
		switch {
		case k.Str == "prompt_tokens" && !prompt.Exists():
			prompt = v
		case k.Str == "completion_tokens" && !completion.Exists():
			completion = v
		}
		return true
	})
	in := max(int(prompt.Int()), 0)
	c := min(max(int(u.Get("prompt_tokens_details.cached_tokens").Int()), 0), in)
	w := min(max(int(u.Get("prompt_tokens_details.cache_write_tokens").Int()), 0), in-c)
	return gateway.Usage{InputTokens: in - c - w, OutputTokens: max(int(completion.Int()), 0), CacheReadTokens: c, CacheWriteTokens: w}
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

func (s *oaRawStream) Next() (gateway.Delta, error) {
	if s.done {
		return gateway.Delta{}, io.EOF
	}
	ev, err := s.sse.Next()
	if errors.Is(err, io.EOF) {
		if s.stop != "" {
			// Some compatible servers end without [DONE]: the answer was whole.
			s.done = true
			return gateway.Delta{Raw: []byte("[DONE]"), Commit: true}, nil
		}
		return gateway.Delta{}, gateway.BadAnswer(s.name, "stream ended before the answer did")
	}
	if err != nil {
		return gateway.Delta{}, gateway.StreamError(s.name, err)
	}
	if string(bytes.TrimSpace(ev.Data)) == "[DONE]" {
		s.done = true
		return gateway.Delta{Raw: []byte("[DONE]"), Commit: true}, nil
	}
	if !gateway.ValidJSON(ev.Data) {
		return gateway.Delta{}, gateway.BadAnswer(s.name, "malformed stream chunk")
	}
	// One pass over the chunk's top level and one over its first choice:
	// a gjson Get per field would scan the chunk again for each. As with
	// Get, the first of repeated keys counts.
	var choice, usage, failure, tier gjson.Result
	gjson.Parse(view(ev.Data)).ForEach(func(k, v gjson.Result) bool {
		switch {
		case k.Str == "choices" && !choice.Exists():
			choice = v.Get("0") // as the path choices.0 finds it: in a repeated key's later array when the first is empty
		case k.Str == "usage" && !usage.Exists():
			usage = v
		case k.Str == "service_tier" && !tier.Exists():
			tier = v
		case k.Str == "error" && !failure.Exists():
			failure = v
		}
		return !failed(failure)
	})
	if failed(failure) {
		return gateway.Delta{}, streamFailure(s.name, failure, ev.Data)
	}
	d := gateway.Delta{Raw: ev.Data, ServiceTier: gateway.TierName(tier.Str)}
	var delta, finish gjson.Result
	choice.ForEach(func(k, v gjson.Result) bool {
		switch {
		case k.Str == "delta" && !delta.Exists():
			delta = v
		case k.Str == "finish_reason" && !finish.Exists():
			finish = v
		}
		return true
	})
	var content, refusal, call gjson.Result
	delta.ForEach(func(k, v gjson.Result) bool {
		switch {
		case k.Str == "content" && !content.Exists():
			content = v
		case k.Str == "refusal" && !refusal.Exists():
			refusal = v
		case k.Str == "tool_calls" && !call.Exists():
			call = v.Get("0")
		}
		return true
	})
	d.Text, d.Refusal = content.Str, refusal.Str
	if call.Exists() {
		d.ToolCall = &gateway.ToolCallDelta{Index: int(call.Get("index").Int()), ID: call.Get("id").Str, Name: call.Get("function.name").Str, Arguments: call.Get("function.arguments").Str}
	}
	fr := finish.Str
	if fr != "" {
		s.stop = fr
		d.StopReason, d.NativeStop = ChatStop(fr), fr
	}
	if usage.IsObject() {
		final := usageOf(usage)
		final.ServiceTier = d.ServiceTier
		d.Usage = &final
		if s.stop != "" {
			d.StopReason, d.NativeStop = ChatStop(s.stop), s.stop
		}
		if !s.passUsage {
			// Asked for billing, not by the client: OpenAI's usage chunk
			// (choices: []) is dropped; a chunk that carries a choice too
			// (llama.cpp's last, with the finish_reason) goes without it.
			d.Raw = nil
			if choice.Exists() {
				if b, err := sjson.DeleteBytes(ev.Data, "usage"); err == nil {
					d.Raw = b
				}
			}
		}
	}
	if !choice.Exists() && d.Usage == nil {
		d.Commit = true // a chunk of another kind: still the client's
	}
	return d, nil
}

func (s *oaRawStream) Close() error { return s.body.Close() }

// failed reports whether a chunk's error field (the first) is one: a
// null error is none, as the translating parser reads it; it failed a
// stream whose every chunk said "error":null.
func failed(failure gjson.Result) bool { return failure.Exists() && failure.Type != gjson.Null }

// streamFailure is the upstream's error failure, a chunk's error: an
// error object (OpenAI's, a compatible server's), or a string beside the
// chunk's error_type, as Hugging Face's TGI sends it, whose text was
// lost ("error event", "malformed stream chunk").
func streamFailure(provider string, failure gjson.Result, chunk []byte) *gateway.UpstreamError {
	typ, msg := failure.Get("type").Str, failure.Get("message").Str
	if failure.Type == gjson.String {
		typ, msg = gjson.GetBytes(chunk, "error_type").Str, failure.Str
	}
	ue := &gateway.UpstreamError{Provider: provider, Status: gateway.ErrorStatus(typ, failure.Get("code")), Bad: true, Type: typ, Message: cmp.Or(msg, "error event")}
	// The field and code it names, as an error status's are kept.
	ue.Param, ue.Code = gateway.ErrorField(failure.Get("param")), gateway.ErrorField(failure.Get("code"))
	return ue
}

// Buffered implements gateway.Buffered: each upstream event is one delta.
func (s *oaRawStream) Buffered() bool { return s.done || s.sse.Buffered() }

// post is do's POST of a passed-through body n, for gateway.PostNative.
func (p *Provider) post(n *gateway.Native) func(ctx context.Context, path string, body []byte) (*http.Response, error) {
	return func(ctx context.Context, path string, body []byte) (*http.Response, error) {
		return p.doWith(ctx, http.MethodPost, path, body, n.Header)
	}
}

// view reads b as a string without copying it: a chunk's bytes are the
// stream reader's own copy and never change after it is read, and the
// strings gjson takes from them (a delta's text) live no longer than the
// chunk they came with (Delta.Raw).
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
