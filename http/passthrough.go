package http

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/gateway"
)

// A front's body goes to a provider of its own wire format as it is
// (gateway.Forwarder): these read, with gjson and without decoding the
// whole body, what routing, budgets and limits need. docs/api.md,
// Passthrough.

// skimmed is what a front reads of a body it may pass through.
type skimmed struct {
	model  string
	stream bool
	req    gateway.Request // the cap, the tools' names, the body's size
}

// skimObject checks that body is one JSON object, answering as decodeBody
// does when it is not.
func skimObject(body []byte) (gjson.Result, error) {
	trimmed := trimJSONSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' || !gjson.ValidBytes(trimmed) {
		var v struct{}
		if err := decodeBody(body, &v); err != nil {
			return gjson.Result{}, err
		}
		return gjson.Result{}, malformed("the request body is not valid JSON")
	}
	return gjson.ParseBytes(trimmed), nil
}

func typeErr(param, want string) error {
	return domain.Invalid("decode", domain.FieldError{Pointer: "/" + param, Code: "invalid_type", Message: "must be " + want})
}

// skimCap reads a token cap: absent, or an integer of at least 1. sep
// joins the field's name to the message, in the front's own style.
func skimCap(g gjson.Result, param, sep string) (n int, set bool, err error) {
	v := g.Get(param)
	if !v.Exists() || v.Type == gjson.Null {
		return 0, false, nil
	}
	if v.Type != gjson.Number || float64(int(v.Num)) != v.Num {
		return 0, false, typeErr(param, "an integer")
	}
	if v.Num < 1 {
		return 0, false, badRequest(param, "%s%smust be at least 1", param, sep)
	}
	return int(v.Num), true, nil
}

func skimCommon(g gjson.Result, body []byte, modelMsg string) (skimmed, error) {
	var s skimmed
	m := g.Get("model")
	if m.Exists() && m.Type != gjson.String {
		return s, typeErr("model", "a string")
	}
	if s.model = m.Str; s.model == "" {
		return s, badRequest("model", "%s", modelMsg)
	}
	if st := g.Get("stream"); st.Exists() && st.Type != gjson.Null {
		if st.Type != gjson.True && st.Type != gjson.False {
			return s, typeErr("stream", "a boolean")
		}
		s.stream = st.Bool()
	}
	msgs := g.Get("messages")
	if msgs.Exists() && !msgs.IsArray() {
		return s, typeErr("messages", "an array")
	}
	s.req.Body = body
	g.Get("tools").ForEach(func(_, t gjson.Result) bool {
		name := t.Get("name").Str
		if name == "" {
			name = t.Get("function.name").Str
		}
		s.req.Tools = append(s.req.Tools, gateway.Tool{Name: name})
		return true
	})
	return s, nil
}

// skimMessages reads a Messages API body.
func skimMessages(body []byte) (skimmed, error) {
	g, err := skimObject(body)
	if err != nil {
		return skimmed{}, err
	}
	s, err := skimCommon(g, body, "model: Field required")
	if err != nil {
		return s, err
	}
	n, set, err := skimCap(g, "max_tokens", ": ")
	if err != nil {
		return s, err
	}
	if !set {
		return s, badRequest("max_tokens", "max_tokens: Field required")
	}
	if len(g.Get("messages").Array()) == 0 {
		return s, badRequest("messages", "messages: at least one message is required")
	}
	s.req.MaxTokens = n
	s.req.NeedsJSON = g.Get("output_config.format").Exists()
	return s, nil
}

// skimChat reads a chat completions body.
func skimChat(body []byte) (skimmed, error) {
	g, err := skimObject(body)
	if err != nil {
		return skimmed{}, err
	}
	s, err := skimCommon(g, body, "model is required, as <provider>:<model>")
	if err != nil {
		return s, err
	}
	if !g.Get("messages").IsArray() || len(g.Get("messages").Array()) == 0 {
		return s, badRequest("messages", "messages must hold at least one message")
	}
	for _, param := range []string{"max_completion_tokens", "max_tokens"} {
		n, set, err := skimCap(g, param, " ")
		if err != nil {
			return s, err
		}
		if set {
			s.req.MaxTokens = n
			break
		}
	}
	rf := g.Get("response_format.type").Str
	s.req.NeedsJSON = rf == "json_schema" || rf == "json_object"
	return s, nil
}

// speaksAll reports whether every target takes the format as it is.
func speaksAll(chain []gateway.Target, format string) bool {
	return !slices.ContainsFunc(chain, func(t gateway.Target) bool { return !speaks(t, format) })
}

func speaks(t gateway.Target, format string) bool {
	f, ok := t.Provider.(gateway.Forwarder)
	return ok && f.Speaks(format)
}

// nativeOf is the request as the client sent it, with the protocol headers
// a provider of its format takes.
func nativeOf(r *http.Request, format string, body []byte) *gateway.Native {
	n := &gateway.Native{Format: format, Body: body, Query: r.URL.RawQuery, Header: http.Header{}}
	for _, h := range []string{"anthropic-version", "anthropic-beta"} {
		for _, v := range r.Header.Values(h) {
			n.Header.Add(h, v)
		}
	}
	return n
}

// withSvc adds Baton's fields to a passed-through JSON answer or event: svc
// at path, and the estimated cost in the usage object at usage (when it
// has one).
func withSvc(raw []byte, path string, svc any, usage string, cost *float64) []byte {
	if svc != nil {
		if out, err := sjson.SetBytes(raw, path, svc); err == nil {
			raw = out
		}
	}
	if usage != "" && gjson.GetBytes(raw, usage).IsObject() {
		if out, err := sjson.SetBytes(raw, usage+".estimated_cost_usd", cost); err == nil {
			raw = out
		}
	}
	return raw
}

// writeRaw writes a passed-through JSON answer and flushes it.
func writeRaw(w http.ResponseWriter, raw []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(raw)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// pipe passes an upstream stream through to the client event by event,
// adding Baton's fields to the first event and to the one that reports the
// final usage, and settles the call when that usage comes (or, without
// one, at the end, on what was sent). named: Anthropic's event: lines.
func (s *Server) pipe(w http.ResponseWriter, r *http.Request, c *gateway.Call, up *gateway.Upstream, f errFormat) {
	defer up.Close()
	sse, err := startSSE(w)
	if err != nil {
		s.caller.Record(c, up.ReadSoFar(c.Req), "upstream_error")
		s.writeErrorAs(w, r, f, err)
		return
	}
	named := f == anthropicErrors
	var tick <-chan time.Time
	if named {
		ticker := time.NewTicker(pingEvery)
		defer ticker.Stop()
		tick = ticker.C
	}
	var sent gateway.Tally
	var record func()
	settled, first, stopSeen := false, true, false
	defer func() {
		if record != nil {
			record()
		}
	}()
	gone := func() {
		if !settled {
			s.caller.Record(c, sent.Bill(c.Req, nil), "client_gone")
		}
	}
	for {
		p, ticked, left := up.Next(r.Context(), tick, sse.flush)
		if left {
			gone()
			return
		}
		if ticked {
			if sse.event("ping", anPing) != nil {
				gone()
				return
			}
			continue
		}
		if errors.Is(p.Err, io.EOF) {
			if !settled {
				_, record = s.caller.Settle(c, sent.Bill(c.Req, nil), "ok")
			}
			sse.flush()
			return
		}
		if p.Err != nil {
			if settled {
				return // the answer was whole; only its tail broke
			}
			outcome := "partial"
			if errors.Is(p.Err, context.Canceled) || r.Context().Err() != nil {
				outcome = "client_gone"
			} else {
				d := describe(r, p.Err)
				oa, an := d.types()
				if named {
					sse.event("error", map[string]any{"type": "error", "error": map[string]any{"type": an, "message": d.Message}})
				} else {
					sse.data(map[string]any{"error": map[string]any{"message": d.Message, "type": oa, "param": nil, "code": d.Code}})
				}
			}
			s.caller.Record(c, sent.Bill(c.Req, nil), outcome)
			return
		}
		d := p.D
		sent.See(d)
		raw := d.Raw
		if raw != nil && d.StopReason != "" && !stopSeen {
			// The event that ends the answer (message_delta, the finish
			// chunk) says how: svc with the native stop reason.
			stopSeen = true
			raw = withSvc(raw, "svc", newSvc(c, d.NativeStop), "", nil)
		} else if raw != nil && first && string(raw) != "[DONE]" {
			path := "svc"
			if named {
				path = "message.svc"
			}
			raw = withSvc(raw, path, newSvc(c, ""), "", nil)
		}
		if !settled && d.Usage != nil && d.StopReason != "" {
			var cost *float64
			cost, record = s.caller.Settle(c, *d.Usage, "ok")
			settled = true
			if raw != nil {
				raw = withSvc(raw, "", nil, "usage", cost)
			}
		}
		if raw == nil {
			continue
		}
		if !named && !settled && string(raw) == "[DONE]" {
			// The upstream reported no usage: Baton's count, billed and,
			// when the client asked for usage, sent marked estimated.
			u := sent.Bill(c.Req, nil)
			var cost *float64
			cost, record = s.caller.Settle(c, u, "ok")
			settled = true
			if gjson.GetBytes(c.Native.Body, "stream_options.include_usage").Bool() {
				usage := openaiUsage(u, cost)
				if sse.data(map[string]any{"id": c.ID, "object": "chat.completion.chunk", "created": c.Start.Unix(), "model": c.Model.ID, "choices": []any{}, "usage": usage}) != nil {
					return
				}
			}
		}
		first = false
		if named {
			err = sse.event(d.Event, raw)
		} else {
			err = sse.data(raw)
		}
		if err != nil {
			gone()
			return
		}
	}
}
