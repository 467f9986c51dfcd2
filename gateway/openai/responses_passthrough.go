package openai

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/internal/sse"
)

// OpenAI's Responses API passed through: the body goes to /responses as
// the client wrote it (store, include, reasoning, custom tools, input
// items Baton does not know), only the model rewritten.

func (p *Provider) forwardResponses(ctx context.Context, n *gateway.Native, model string, stream bool) (*gateway.Response, gateway.Stream, error) {
	body, err := gateway.WithModel(n.Body, model)
	if err != nil {
		return nil, nil, err
	}
	raw, open, err := gateway.PostNative(ctx, p.name, "/responses", n.Query, body, stream, p.post(n))
	if err != nil {
		return nil, nil, err
	}
	if stream {
		return nil, &respRawStream{name: p.name, body: open, sse: sse.NewReader(open)}, nil
	}
	if !gateway.ValidJSON(raw) || gjson.GetBytes(raw, "object").Str != "response" {
		return nil, nil, gateway.NotAnAnswer(p.name, raw, "malformed response: not a response")
	}
	g := gjson.ParseBytes(raw)
	if g.Get("status").Str == "failed" {
		return nil, nil, responsesFailure(p.name, g.Get("error"))
	}
	stop, native := responsesStop(g)
	out := &gateway.Response{Raw: raw, ID: g.Get("id").Str, Model: g.Get("model").Str, StopReason: stop, NativeStop: native}
	// A usage that counts no output (the input alone) is still read: the
	// caller counts the output from the text, as for a translated answer,
	// and bills the input and cache reads as told.
	if u := g.Get("usage"); u.IsObject() {
		out.Usage = responsesUsageOf(u)
	} else {
		out.UsageMissing = true
	}
	if out.UsageMissing || out.Usage.OutputTokens == 0 {
		// The text, for Baton's count of an output the usage did not
		// count (the gateway bills no answer that says something as free).
		g.Get("output").ForEach(func(_, it gjson.Result) bool {
			text := it.Get("arguments").Str + it.Get("input").Str
			it.Get("content").ForEach(func(_, c gjson.Result) bool {
				text += c.Get("text").Str + c.Get("refusal").Str
				return true
			})
			out.Content = append(out.Content, gateway.Block{Type: "text", Text: text})
			return true
		})
	}
	out.Usage.ServiceTier = g.Get("service_tier").Str
	out.Usage.WebSearches, out.Usage.FileSearches = searchesIn(g.Get("output"))
	return out, nil, nil
}

// searchesIn counts a response's web searches, its web_search_call items
// whose action is a search, the only action OpenAI bills (opening a page
// or finding in it is not; an item without an action counts: a bill must
// not come out short), and its file search calls.
func searchesIn(output gjson.Result) (web, files int) {
	output.ForEach(func(_, it gjson.Result) bool {
		switch search, fileSearch := billedCall(it); {
		case search:
			web++
		case fileSearch:
			files++
		}
		return true
	})
	return web, files
}

// billedCall says whether an output item is a web search or a file search
// call that OpenAI bills.
func billedCall(it gjson.Result) (search, fileSearch bool) {
	typ := it.Get("type").Str
	if typ != "web_search_call" && typ != "file_search_call" || it.Get("status").Str == "failed" {
		return false, false
	}
	if typ == "file_search_call" {
		return false, true
	}
	a := it.Get("action.type")
	return !a.Exists() || a.Str == "search", false
}

// responsesUsageOf reads a Responses usage object: input tokens include
// the cached ones (and those written to the cache), billed apart; output
// tokens include reasoning.
func responsesUsageOf(u gjson.Result) gateway.Usage {
	in := max(int(u.Get("input_tokens").Int()), 0)
	cached := min(max(int(u.Get("input_tokens_details.cached_tokens").Int()), 0), in)
	written := min(max(int(u.Get("input_tokens_details.cache_write_tokens").Int()), 0), in-cached)
	return gateway.Usage{InputTokens: in - cached - written, OutputTokens: max(int(u.Get("output_tokens").Int()), 0), CacheReadTokens: cached, CacheWriteTokens: written}
}

// responsesStop is a response's stop reason, canonical and native: its
// status, or why it is incomplete.
func responsesStop(r gjson.Result) (string, string) {
	switch status := r.Get("status").Str; status {
	case "completed":
		for _, it := range r.Get("output").Array() {
			if t := it.Get("type").Str; t == "function_call" || t == "custom_tool_call" {
				return gateway.StopToolUse, status
			}
		}
		return gateway.StopEndTurn, status
	case "incomplete":
		reason := r.Get("incomplete_details.reason").Str
		switch reason {
		case "max_output_tokens":
			return gateway.StopMaxTokens, reason
		case "content_filter":
			return gateway.StopRefusal, reason
		}
		return gateway.StopUnknownValue, cmp.Or(reason, status)
	default:
		return "", status
	}
}

// responsesFailure is a response.failed's or an error event's error: it
// came in a 200, so its status is Baton's mapping (Bad), not the
// provider's.
func responsesFailure(provider string, e gjson.Result) error {
	code := e.Get("code").Str
	if code == "" {
		code = e.Get("type").Str
	}
	status := http.StatusBadGateway
	switch {
	case strings.Contains(code, "rate_limit"):
		status = http.StatusTooManyRequests
	case strings.Contains(code, "overloaded"):
		status = http.StatusServiceUnavailable
	case strings.Contains(code, "invalid") || strings.Contains(code, "context_length"):
		status = http.StatusBadRequest
	}
	ue := &gateway.UpstreamError{Provider: provider, Status: status, Bad: true, Type: code, Message: cmp.Or(e.Get("message").Str, "response failed")}
	ue.Param = gateway.ErrorField(e.Get("param")) // the field it names, as an error status's param is kept
	return ue
}

// respRawStream is a Responses event stream passed through: each event is
// a delta whose Raw is its data and Event its name. response.completed
// (or response.incomplete) ends it with the usage; response.failed and
// error events fail it (before anything was sent, the next model of the
// chain takes over).
type respRawStream struct {
	name string
	body io.ReadCloser
	sse  *sse.Reader
	done bool
}

func (s *respRawStream) Next() (gateway.Delta, error) {
	if s.done {
		return gateway.Delta{}, io.EOF
	}
	ev, err := s.sse.Next()
	if errors.Is(err, io.EOF) || err == nil && string(ev.Data) == "[DONE]" {
		return gateway.Delta{}, gateway.BadAnswer(s.name, "stream ended before response.completed")
	}
	if err != nil {
		return gateway.Delta{}, gateway.StreamError(s.name, err)
	}
	if !gateway.ValidJSON(ev.Data) {
		return gateway.Delta{}, gateway.BadAnswer(s.name, "malformed stream event")
	}
	g := gjson.ParseBytes(ev.Data)
	typ := g.Get("type").Str
	d := gateway.Delta{Raw: ev.Data, Event: ev.Event}
	if d.Event == "" {
		d.Event = typ
	}
	switch typ {
	case "response.created", "response.in_progress", "response.queued":
		// Before any content: a failure after them still falls back.
	case "response.output_text.delta", "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		d.Text, d.Commit = g.Get("delta").Str, true
	case "response.refusal.delta":
		d.Refusal, d.Commit = g.Get("delta").Str, true
	case "response.function_call_arguments.delta", "response.custom_tool_call_input.delta":
		d.ToolCall = &gateway.ToolCallDelta{Index: int(g.Get("output_index").Int()), Arguments: g.Get("delta").Str}
		d.Commit = true
	case "response.output_item.added":
		d.Commit = true
		if it := g.Get("item"); it.Get("type").Str == "function_call" || it.Get("type").Str == "custom_tool_call" {
			d.ToolCall = &gateway.ToolCallDelta{Index: int(g.Get("output_index").Int()), ID: it.Get("call_id").Str, Name: it.Get("name").Str}
		}
	case "response.output_item.done":
		// A search done: billed if the stream ends before its usage.
		it := g.Get("item")
		d.WebSearch, d.FileSearch = billedCall(it)
		d.Commit = true
	case "response.completed", "response.incomplete":
		s.done = true
		r := g.Get("response")
		d.StopReason, d.NativeStop = responsesStop(r)
		if d.StopReason == "" {
			d.StopReason = gateway.StopEndTurn
		}
		d.ServiceTier = r.Get("service_tier").Str
		if u := r.Get("usage"); u.IsObject() {
			final := responsesUsageOf(u)
			final.ServiceTier = d.ServiceTier
			final.WebSearches, final.FileSearches = searchesIn(r.Get("output"))
			d.Usage = &final
		}
	case "response.failed":
		err := responsesFailure(s.name, g.Get("response.error"))
		if u := g.Get("response.usage"); u.IsObject() {
			// What OpenAI bills the failed response: billed as told.
			told := responsesUsageOf(u)
			err.(*gateway.UpstreamError).Usage = &told
		}
		return gateway.Delta{}, err
	case "error":
		e := g
		if g.Get("error").IsObject() {
			e = g.Get("error")
		}
		return gateway.Delta{}, responsesFailure(s.name, e)
	default:
		d.Commit = true // any other event is the client's
	}
	return d, nil
}

func (s *respRawStream) Close() error { return s.body.Close() }

// Buffered implements gateway.Buffered: each upstream event is one delta.
func (s *respRawStream) Buffered() bool { return s.done || s.sse.Buffered() }

// DeleteResponse implements gateway.ResponseDeleter: DELETE
// /v1/responses/{id} at the provider. One it does not have (404) is
// deleted already.
func (p *Provider) DeleteResponse(ctx context.Context, id string) error {
	resp, err := p.do(ctx, http.MethodDelete, "/responses/"+url.PathEscape(id), nil)
	var ue *gateway.UpstreamError
	if errors.As(err, &ue) && ue.Status == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}
