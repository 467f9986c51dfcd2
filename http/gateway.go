package http

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"
	"github.com/tidwall/sjson"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/anthropic"
	"github.com/batonhq/baton/gateway/openai"
)

// modelWriteStall ends a model stream whose client has taken nothing of
// what was written for about this long (sseWriter.bound): as long as
// events' eventsWriteStall.
var modelWriteStall = time.Minute

// headerHold is how long a model stream's headers wait for its first
// event, to leave with it (sseWriter.holdHeaders).
var headerHold = 50 * time.Millisecond

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
	id := uuid.Must(uuid.NewV7())
	return &gateway.Call{ID: prefix + hex.EncodeToString(id[:]), Front: front,
		Tenant: p.Tenant, KeyID: p.KeyID, RequestID: RequestID(r.Context()), Req: req, Stream: stream}
}

// listModels answers in OpenAI's list shape, or in Anthropic's when the
// client sends anthropic-version (as the Anthropic SDK does).
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	models := s.catalog.List()
	if r.Header.Get("Anthropic-Version") == "" {
		writeJSON(w, http.StatusOK, openai.ModelList[[]gateway.Model]{Object: "list", Data: models})
		return
	}
	page, more, err := anthropicPage(models, r.URL.Query(), func(id string) bool {
		prov, name, ok := strings.Cut(id, ":")
		return ok && name != "" && s.catalog.Provider(prov) != nil
	})
	if err != nil {
		s.writeErrorAs(w, r, anthropicErrors, err)
		return
	}
	out := anthropic.ModelPage[[]map[string]any]{Data: make([]map[string]any, len(page)), HasMore: more} // first and last null on an empty page, as Anthropic's
	for i, m := range page {
		out.Data[i] = anthropicModel(m)
	}
	if len(page) > 0 {
		first := gateway.LooseString(page[0].ID)
		out.FirstID, out.LastID = &first, &page[len(page)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
}

// anthropicPage is the page of the Models API's list that q asks for:
// limit (1 to 1,000, default 20) models after after_id, or before
// before_id, in the catalog's order; more says whether others lie beyond
// it in that direction. A cursor of a model no longer in the catalog (a
// sync dropped it between two pages) keeps its place in the id order, when
// wellFormed says the id could be a model's.
func anthropicPage(models []gateway.Model, q url.Values, wellFormed func(id string) bool) (page []gateway.Model, more bool, err error) {
	limit := 20
	if q.Has("limit") { // an empty limit= is a wrong limit, as the document and the other listings have it
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > 1000 {
			return nil, false, badRequest("limit", "limit: Input should be an integer from 1 to 1000")
		}
		limit = n
	}
	after, before := q.Get("after_id"), q.Get("before_id")
	if after != "" && before != "" {
		return nil, false, badRequest("before_id", "before_id and after_id cannot both be given")
	}
	// at is where id is, or would be, in the list (sorted by id), and
	// whether it is there.
	at := func(param, id string) (int, bool, error) {
		i, found := slices.BinarySearchFunc(models, id, func(m gateway.Model, id string) int { return strings.Compare(m.ID, id) })
		if !found && !wellFormed(id) {
			return 0, false, badRequest(param, "%s: no model with id %q", param, id)
		}
		return i, found, nil
	}
	switch {
	case before != "":
		end, _, err := at("before_id", before)
		if err != nil {
			return nil, false, err
		}
		start := max(end-limit, 0)
		return models[start:end], start > 0, nil
	case after != "":
		i, found, err := at("after_id", after)
		if err != nil {
			return nil, false, err
		}
		if found {
			i++
		}
		models = models[i:]
	}
	n := min(limit, len(models))
	return models[:n], n < len(models), nil
}

// anthropicModel is a model as Anthropic's models API shows one, with
// Baton's catalog fields beside.
func anthropicModel(m gateway.Model) map[string]any {
	o := map[string]any{"type": "model", "id": m.ID, "display_name": m.ID, "created_at": time.Unix(m.Created, 0).UTC().Format(time.RFC3339),
		"provider": m.Provider, "modes": m.Modes, "contextTokens": m.ContextTokens, "available": m.Available, "hasPricing": m.HasPricing, "health": m.Health}
	if m.MaxOutputTokens > 0 {
		o["maxOutputTokens"] = m.MaxOutputTokens
	}
	return o
}

// adminModelsPath reports whether /v1/models/{id} is one of the admin
// endpoints there, which are POSTs.
func adminModelsPath(id string) bool {
	switch id {
	case "sync", "health", "health/batch", "route/preview":
		return true
	}
	return false
}

// getModel answers GET /v1/models/{id} (OpenAI's models.retrieve,
// Anthropic's models.get, told apart by the anthropic-version header). Ids
// may hold '/' and ':' (openrouter:meta-llama/llama-3:free): the route
// takes the rest of the path.
func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	if adminModelsPath(id) {
		// This route takes every other GET below /v1/models, so it answers
		// for them.
		s.methodNotAllowed(w, r, http.MethodPost)
		return
	}
	m, ok := s.catalog.Get(id)
	notFound := fmt.Errorf("%w: no model %q in the catalog; GET /v1/models lists them", gateway.ErrUnknownModel, id)
	if !ok && !strings.Contains(id, ":") {
		// A bare name, as a call takes it: the one configured model of
		// that name, under its own id. Refused, it is told as a call is
		// (a name of several providers' models names them).
		if _, rm, err := s.catalog.Resolve(id); err == nil {
			m, ok = s.catalog.Get(rm.ID)
		} else {
			notFound = err
		}
	}
	if !ok {
		s.writeErrorAs(w, r, modelErrors, notFound)
		return
	}
	if r.Header.Get("Anthropic-Version") != "" {
		writeJSON(w, http.StatusOK, anthropicModel(m))
		return
	}
	writeJSON(w, http.StatusOK, m)
}

// badRequest is a 400 naming the request field at fault.
func badRequest(param, format string, args ...any) error {
	return gateway.BadRequest(param, format, args...)
}

// plan is the catalog's plan of a call that no front's format names.
func (s *Server) plan(id string, req gateway.Request) ([]gateway.Target, error) {
	return s.catalog.Plan("", id, req)
}

// planFor is the catalog's plan of a call in a front's wire format.
func (s *Server) planFor(format, id string, req gateway.Request) ([]gateway.Target, error) {
	return s.catalog.Plan(format, id, req)
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
	writeWhole(w, b)
}

// writeWhole writes a whole answer and flushes it. A large one is written
// under a write deadline, modelWriteStall a started MiB: a client that
// stops reading does not hold the connection, and the answer's buffer, for
// ever (a stream's writes are bounded the same way, sseWriter.bound). A
// small one fits the socket's buffers.
func writeWhole(w http.ResponseWriter, b []byte) {
	if len(b) < wholeBound {
		w.Write(b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		return
	}
	rc := http.NewResponseController(w)
	bounded := rc.SetWriteDeadline(time.Now().Add(modelWriteStall*time.Duration(1+len(b)>>20))) == nil
	_, err := w.Write(b)
	if err == nil {
		err = rc.Flush()
	}
	if bounded && err == nil {
		// Lifted once written: a failed write keeps it, so that the
		// server's own last flush fails too and the connection closes.
		rc.SetWriteDeadline(time.Time{})
	}
}

// wholeBound is the size from which a whole answer is written under a
// deadline.
const wholeBound = 256 << 10

// wireRequest is a gateway front's request body: chat completions or
// messages.
type wireRequest interface {
	ToGateway() (gateway.Request, error)
	RequestedModel() string // the model or mode asked for
}

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
	body, err := s.readModelBody(w, r)
	if err != nil {
		return fail(err)
	}
	decode := func() (gateway.Request, error) {
		if format == gateway.FormatAnthropic {
			if err := anthropic.CheckVersion(r.Header.Get("Anthropic-Version")); err != nil {
				return gateway.Request{}, err
			}
		}
		if err := decodeWire(body, q); err != nil {
			return gateway.Request{}, err
		}
		req, err := q.ToGateway()
		if err == nil && format != "" && req.NoContent() {
			return req, gateway.BadRequest("messages", "messages hold no content: every message is empty")
		}
		return req, err
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
	native.Stream, native.StreamUsage, native.ServiceTier = sk.stream, sk.streamUsage, sk.req.ServiceTier
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
		keepSkimmed(&full, sk.req)
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
	cost := resp.Cost
	defer resp.Record()
	if c.Passthrough {
		writeRaw(w, passedAnswer(c, resp, openai.NewChatUsage))
		return
	}
	text := resp.StructuredText(c.Req.Output)
	msg := openai.ChatAnswerMessage{Role: "assistant", Content: &text}
	if th := thinkingOf(resp.Content); th != "" {
		msg.ReasoningContent = gateway.LooseString(th)
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
	usage := openai.NewChatUsage(resp.Billed, cost)
	writeAnswer(w, openai.ChatCompletion{ID: c.ID, Object: "chat.completion", Created: gateway.LooseInt(c.Start.Unix()), Model: c.Model.ID,
		Choices: []openai.ChatChoice{{Message: msg, FinishReason: finish}},
		Usage:   &usage,
		Svc:     newSvc(c, resp.NativeStop),
	})
}

func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, c *gateway.Call, chain []gateway.Target, includeUsage bool) {
	up, sse, done := s.openStream(w, r, c, chain, chatPipe)
	if done {
		return
	}
	defer sse.unbound()
	defer up.Close()
	chunk := func(delta openai.ChatDelta, finish *string) *openai.ChatChunk {
		return openai.NewChatChunk(c.ID, c.Model.ID, c.Start.Unix(), []openai.ChatChunkChoice{{Delta: delta, FinishReason: finish}})
	}
	empty := ""
	first := chunk(openai.ChatDelta{Role: "assistant", Content: &empty}, nil)
	svc := newSvc(c, "")
	first.Svc = &svc
	if sse.data(first) != nil {
		up.Gone()
		return
	}
	var tools openai.ChatToolIndexes
	toolCalled := false
	for {
		p, _, gone := up.Next(nil, sse.flush)
		if gone {
			// The client went away; the upstream is canceled on return.
			up.Gone()
			return
		}
		if p.Err != nil {
			if _, _, tell := up.Fail(p.Err); tell || stopping(r) {
				tellChat(sse, r, p.Err)
			}
			return
		}
		d := p.D
		if d.Thinking != "" {
			if sse.data(chunk(openai.ChatDelta{ReasoningContent: gateway.LooseString(d.Thinking)}, nil)) != nil {
				up.Gone()
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
				up.Gone()
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
				call := openai.ChatToolCallDelta{Index: index}
				call.Function.Arguments = tc.Arguments
				if tc.ID != "" || tc.Name != "" { // a call's start: its id and name, even if one is empty
					call.ID, call.Type, call.Function.Name = &tc.ID, "function", &tc.Name
				}
				out.ToolCalls = []openai.ChatToolCallDelta{call}
			}
			if (out.Content != nil || out.ToolCalls != nil) && sse.data(chunk(out, nil)) != nil {
				up.Gone()
				return
			}
		}
		if d.StopReason != "" {
			u, cost, record := up.Finish(d.Usage)
			finish := openai.ChatFinishReason(d.StopReason)
			if d.StopReason == gateway.StopToolUse && !toolCalled {
				finish = "stop" // only the structured answer's tool was called
			}
			last := chunk(openai.ChatDelta{}, &finish)
			svc := newSvc(c, d.NativeStop)
			last.Svc = &svc
			sse.data(last)
			if includeUsage {
				sse.data(openai.UsageChunk(c.ID, c.Model.ID, c.Start.Unix(), openai.NewChatUsage(u, cost)))
			}
			sse.data("[DONE]")
			record()
			return
		}
	}
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

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	const f = anthropicErrors
	var q anthropic.MessagesRequest
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
	cost := resp.Cost
	defer resp.Record()
	if c.Passthrough {
		writeRaw(w, passedAnswer(c, resp, anthropic.Usage))
		return
	}
	content := resp.Content
	if req.OmitsThinking() {
		content = slices.DeleteFunc(content, func(b gateway.Block) bool { return b.Type == "thinking" })
	}
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
	reason, usage := anthropic.StopReason(stop), anthropic.Usage(resp.Billed, cost)
	msg := anthropic.Message{ID: c.ID, Type: "message", Role: "assistant", Model: c.Model.ID, Provider: gateway.LooseString(c.Provider.Name()),
		Content: content, StopReason: &reason, StopSequence: anthropic.StopSequence(resp.StopReason, resp.MatchedStop),
		Usage: &usage, Svc: newSvc(c, resp.NativeStop)}
	unsigned := func(b gateway.Block) bool { return b.Type == "thinking" && b.Signature == "" }
	if !slices.ContainsFunc(content, unsigned) {
		writeAnswer(w, msg)
		return
	}
	// Another provider's reasoning has no signature; Anthropic's block
	// always has one, and typed clients (the AI SDK) refuse it without.
	raw, err := json.Marshal(msg)
	if err != nil {
		writeAnswer(w, msg) // answers the marshalling's error as it does
		return
	}
	for i, b := range content {
		if unsigned(b) {
			raw, _ = sjson.SetBytes(raw, "content."+strconv.Itoa(i)+".signature", "")
		}
	}
	writeAnswer(w, json.RawMessage(raw))
}

func (s *Server) streamMessage(w http.ResponseWriter, r *http.Request, c *gateway.Call, chain []gateway.Target) {
	up, sse, done := s.openStream(w, r, c, chain, messagesPipe)
	if done {
		return
	}
	defer sse.unbound()
	defer up.Close()
	// up.Told is the input side, when the upstream told it before any content.
	start := anthropic.MessageStart(c.ID, c.Model.ID, c.Provider.Name(), up.Told(), newSvc(c, ""))
	if sse.event("message_start", &start) != nil || sse.event("ping", anthropic.PingEvent) != nil {
		up.Gone()
		return
	}
	ticker := time.NewTicker(pingEvery)
	defer ticker.Stop()
	// Anthropic upstreams send each tool call as its own block already.
	blocks := anthropic.NewBlocks(c.Provider.Kind() != "anthropic")
	refused := false
	for {
		p, ticked, gone := up.Next(ticker.C, sse.flush)
		if gone {
			up.Gone()
			return
		}
		if ticked {
			if sse.event("ping", anthropic.PingEvent) != nil {
				up.Gone()
				return
			}
			continue
		}
		if p.Err != nil {
			if _, _, tell := up.Fail(p.Err); tell || stopping(r) {
				tellMessages(sse, r, p.Err)
			}
			return
		}
		d := p.D
		if d.Refusal != "" { // OpenAI's refusal: text, and the stop reason says so
			d.Text, d.Refusal, refused = d.Text+d.Refusal, "", true
		}
		if c.Req.OmitsThinking() {
			d.Thinking = "" // billed all the same: the upstream wrote it
		}
		if d.Text != "" || d.Thinking != "" || d.ToolCall != nil {
			if blocks.Write(sse, d) != nil {
				up.Gone()
				return
			}
		}
		if d.StopReason != "" {
			u, cost, record := up.Finish(d.Usage)
			blocks.Finish(sse)
			stop := d.StopReason
			if refused && stop == gateway.StopEndTurn {
				stop = gateway.StopRefusal
			}
			md := anthropic.MessageDelta(stop, d.MatchedStop, u, cost, newSvc(c, d.NativeStop))
			sse.event("message_delta", &md)
			sse.event("message_stop", anthropic.MessageStopEvent)
			record()
			return
		}
	}
}

// countTokens answers POST /v1/messages/count_tokens: Anthropic's own count
// for a model of an Anthropic provider, else a local estimate, marked as one
// (svc.estimate). Counting is free: no budget hold, no usage event.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	const f = anthropicErrors
	body, err := s.readModelBody(w, r)
	var sk skimmed
	if err == nil {
		sk, err = skimCount(body)
	}
	var chain []gateway.Target
	if err == nil {
		// A bare name goes where /v1/messages sends it: Claude Code counts
		// with its own default model.
		chain, err = s.planFor(gateway.FormatAnthropic, sk.model, sk.req)
	}
	if err != nil {
		s.writeErrorAs(w, r, f, err)
		return
	}
	t := chain[0]
	if an, ok := t.Provider.(gateway.TokenCounter); ok {
		n, err := an.CountTokens(r.Context(), nativeOf(r, gateway.FormatAnthropic, body), t.Model.Model)
		if err != nil {
			s.writeErrorAs(w, r, f, err)
			return
		}
		writeAnswer(w, anthropic.CountAnswer{InputTokens: &n})
		return
	}
	// Counted here, on the request as /v1/messages would translate it: what
	// it would refuse for this model is refused here too.
	var q anthropic.CountRequest
	if err := anthropic.CheckVersion(r.Header.Get("Anthropic-Version")); err != nil {
		s.writeErrorAs(w, r, f, err)
		return
	}
	if err := decodeWire(body, &q); err != nil {
		s.writeErrorAs(w, r, f, err)
		return
	}
	req, err := q.ToGateway()
	if err != nil {
		s.writeErrorAs(w, r, f, err)
		return
	}
	// Counted only as far as the model's context: a prompt past it is
	// refused as the call would be, without tokenizing all of it.
	limit := math.MaxInt
	if t.Model.ContextTokens > 0 {
		limit = t.Model.ContextTokens
	}
	n, over := gateway.EstimateInputTokensUpTo(req, limit)
	if over {
		s.writeErrorAs(w, r, f, domain.E("gateway", domain.KindBadRequest, "context_length_exceeded",
			"prompt is too long: more than %d tokens, the context of %s", limit, t.Model.ID))
		return
	}
	writeAnswer(w, anthropic.CountAnswer{InputTokens: &n, Svc: map[string]any{"estimate": true, "model": t.Model.ID}})
}
