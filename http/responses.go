package http

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gorilla/mux"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/batonhq/baton/domain"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/openai"
)

// ---- OpenAI Responses ----

// storeTimeout bounds the append of a stored response: a translated
// answer waits for it, so that a previous_response_id sent as soon as the
// client has the answer finds the response (a passed-through one is
// stored after it is answered, storePassedThrough).
const storeTimeout = 10 * time.Second

func (s *Server) storedResponses() openai.ResponsesStore {
	return openai.ResponsesStore{Store: s.store}
}

// responses answers POST /v1/responses: passed through to the models
// that speak the Responses API (OpenAI), translated to the gateway's
// request for the others, down the same call path as the other fronts.
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	const f = openaiErrors
	created := time.Now()
	p, err := s.prepareResponses(w, r)
	if err != nil {
		s.writeErrorAs(w, r, f, err)
		return
	}
	c := s.newCall(r, "responses", "", p.req, p.stream)
	c.ID = openai.NewResponsesID()
	c.Native = p.native
	if p.call != nil {
		c.Dropped = p.call.Dropped
	}
	defer c.ReleaseHold()
	if p.stream {
		s.streamResponse(w, r, c, p.chain, p.call, created)
		return
	}
	resp, err := s.caller.Complete(r.Context(), c, p.chain)
	if err != nil {
		s.writeErrorAs(w, r, f, err)
		return
	}
	cost := resp.Cost
	defer resp.Record()
	if c.Passthrough {
		raw := passedAnswer(c, resp, openai.NewResponsesUsage)
		if !s.storePassedThrough(r, c, raw) {
			raw = notKept(raw, "store")
		}
		writeRaw(w, raw)
		return
	}
	call := p.call
	obj := call.Object(c.ID, created, c.Model.ID)
	obj.Complete(resp.Response, c.Req.Output, openai.NewResponsesUsage(resp.Billed, cost), time.Now())
	obj.Svc = newSvc(c, resp.NativeStop)
	s.storeResponse(r, call, obj)
	droppedHeader(w, c)
	writeAnswer(w, obj)
}

// responsesPlan is a Responses request read and routed. call is nil when
// every model of the chain takes the body as it is; native is nil when
// none may (a continuation of a response Baton stored).
type responsesPlan struct {
	call   *openai.ResponsesCall
	req    gateway.Request
	chain  []gateway.Target
	native *gateway.Native
	stream bool
}

// prepareResponses reads a Responses request and plans its route, as
// prepareCall does for the other fronts: when every model of the chain
// speaks the Responses API the body is skimmed, not decoded, and passed
// through; else it is translated, and still passed through to the models
// that speak it. A body that cannot be translated goes only to those.
// A previous_response_id that Baton stored is continued from the store
// (translated, to any model), unless it was passed through and its
// provider keeps it too: then it goes on as it is to that provider's
// models, and is continued from the store for the others. One the tenant
// owns that its provider alone keeps goes as it is, only to the models
// that speak the API. Any other id is a 404: Baton's one provider key
// would reach responses that are not the tenant's.
func (s *Server) prepareResponses(w http.ResponseWriter, r *http.Request) (p responsesPlan, err error) {
	body, err := s.readModelBody(w, r)
	if err != nil {
		return p, err
	}
	tenant := principalOf(r.Context()).Tenant
	// References to items Baton answered become the items: no provider
	// but Baton knows their ids.
	if body, err = s.storedResponses().ResolveReferences(r.Context(), tenant, body, s.maxModelBody); err != nil {
		return p, err
	}
	sk, err := skimResponses(body)
	if err != nil {
		if _, derr := openai.DecodeResponsesRequest(body); derr != nil {
			return p, derr // in this front's words
		}
		return p, err
	}
	// Passed through, the body goes without Baton's reasoning items, which
	// OpenAI cannot read; translated, they are the thinking they carry.
	p.stream, p.native = sk.stream, nativeOf(r, gateway.FormatResponses, openai.WithoutOwnReasoning(body))
	p.native.ServiceTier = sk.req.ServiceTier
	prev := gjson.GetBytes(body, "previous_response_id")
	var (
		stored  *openai.ResponsesRecord // the previous response, as Baton stored it
		holder  string                  // the provider that keeps it too
		notOurs error                   // the tenant's, kept by the provider alone: Baton's 404 for the others
	)
	if prev.Type == gjson.String && prev.Str != "" {
		rec, lerr := s.storedResponses().Load(r.Context(), tenant, prev.Str, "previous_response_id")
		switch {
		case lerr == nil:
			stored = rec
			if rec.UpstreamStored {
				holder = rec.Upstream
			} else {
				p.native = nil
			}
		case errors.Is(lerr, openai.ErrKeptUpstream):
			notOurs = lerr
		default:
			return p, lerr
		}
	}
	// heldBy reports whether every model of the chain that would take the
	// body as it is can continue the previous response by its id.
	heldBy := func() bool {
		return holder == "" || !slices.ContainsFunc(p.chain, func(t gateway.Target) bool {
			return speaks(t, gateway.FormatResponses) && t.Provider.Name() != holder
		})
	}
	if p.native != nil && !gateway.IsMode(sk.model) {
		if p.chain, err = s.planFor(gateway.FormatResponses, sk.model, sk.req); err != nil {
			return p, err
		}
		if speaksAll(p.chain, gateway.FormatResponses) && heldBy() {
			p.req = sk.req
			return p, nil
		}
	}
	onlyNative := func(fail error) error {
		p.chain = slices.DeleteFunc(p.chain, func(t gateway.Target) bool { return !speaks(t, gateway.FormatResponses) })
		if len(p.chain) == 0 {
			return fail
		}
		p.call, p.req = nil, sk.req
		return nil
	}
	// Continued from the store, the translation reads the body without
	// the items the conversation has already (Without).
	var (
		h    openai.ResponsesHistory
		herr error
	)
	translated := body
	if stored != nil {
		if h, herr = s.storedResponses().History(r.Context(), tenant, prev.Str); herr == nil {
			translated, err = h.Without(body)
		}
	}
	call, derr := (*openai.ResponsesCall)(nil), err
	if derr == nil {
		call, derr = openai.DecodeResponsesRequest(translated)
	}
	if derr == nil {
		if p.chain == nil {
			if p.chain, err = s.planFor(gateway.FormatResponses, call.Wire.Model, call.Request); err != nil {
				return p, err
			}
		}
		if !heldBy() {
			p.native = nil // another provider of the API does not know the id: continued from the store
		}
		if stored != nil {
			if herr != nil {
				if p.native != nil && errors.As(herr, new(*domain.Error)) {
					return p, onlyNative(herr) // an earlier turn Baton never had: only its provider goes on
				}
				return p, herr
			}
			call.Continue(h)
		}
		p.call, p.req = call, call.Request
		keepSkimmed(&p.req, sk.req)
		if p.req.NoContent() {
			return p, gateway.BadRequest("input", "input holds no content: every item is empty")
		}
		if notOurs != nil {
			return p, onlyNative(notOurs)
		}
		return p, nil
	}
	if p.native == nil {
		return p, derr
	}
	if p.chain == nil {
		if p.chain, err = s.planFor(gateway.FormatResponses, sk.model, sk.req); err != nil {
			return p, derr
		}
	}
	if !heldBy() {
		return p, derr
	}
	return p, onlyNative(derr)
}

// storeResponse keeps a finished response for previous_response_id and
// GET /v1/responses/{id}, unless the request said store: false. A
// response the store could not take is answered all the same (its call
// was made and billed), with store: false to say it was not kept.
func (s *Server) storeResponse(r *http.Request, call *openai.ResponsesCall, obj *openai.ResponsesObject) {
	if !obj.Store {
		return
	}
	raw, err := json.Marshal(obj)
	if err == nil {
		p := principalOf(r.Context())
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), storeTimeout)
		defer cancel()
		err = s.storedResponses().Save(ctx, p.Tenant, eventstore.Metadata{Actor: "key:" + p.KeyID, RequestID: RequestID(r.Context())},
			openai.ResponsesRecord{ID: obj.ID, Model: obj.Model, Previous: call.Wire.Previous(), Input: call.Input, Response: raw})
	}
	if err != nil {
		s.log.Error().Str("requestId", RequestID(r.Context())).Str("response", obj.ID).Err(err).Msg("response not stored")
		obj.Store = false
	}
}

// storePassedThrough keeps a response passed through, as answered, as
// storeResponse keeps a translated one, so that a previous_response_id
// naming it can go on with any model. It runs before the answer (or the
// stream's last event) goes out, so that a continuation sent as soon as
// the client has it finds it, on any replica: an id Baton does not know
// is never sent on. One it cannot keep whole (not finished: a background
// response, a stream cut before its end) that its provider keeps is
// marked as the tenant's, so that the tenant's continuation goes on to
// the provider and another tenant's is refused. ok is false when the
// store failed: the answer then says store: false, as a translated one.
func (s *Server) storePassedThrough(r *http.Request, c *gateway.Call, answer []byte) (ok bool) {
	p := principalOf(r.Context())
	meta := eventstore.Metadata{Actor: "key:" + p.KeyID, RequestID: RequestID(r.Context())}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), storeTimeout)
	defer cancel()
	var err error
	rec, keep := openai.PassedThrough(c.Provider.Name(), c.Model.ID, c.Native.Body, answer)
	if keep {
		err = s.storedResponses().Save(ctx, p.Tenant, meta, rec)
	} else if rec.ID, keep = openai.KeptUpstream(c.Native.Body, answer); keep {
		err = s.storedResponses().MarkOwned(ctx, p.Tenant, meta, rec.ID, c.Provider.Name())
	}
	if _, kept := openai.KeptUpstream(c.Native.Body, answer); err == nil && kept {
		// Its items, by which a later request of the tenant may refer to
		// them (item_reference), are the tenant's.
		err = s.storedResponses().OwnItems(ctx, p.Tenant, meta, answer)
	}
	if err != nil {
		s.log.Error().Str("requestId", RequestID(r.Context())).Str("response", rec.ID).Err(err).Msg("passed-through response not stored")
		return false
	}
	return true
}

// notKept sets a passed-through response object's store (at path) to
// false: Baton could not keep it, so no continuation through Baton finds
// it.
func notKept(raw []byte, path string) []byte {
	if out, err := sjson.SetBytes(raw, path, false); err == nil {
		return out
	}
	return raw
}

// streamResponse streams a response in the Responses event grammar. A
// translated stream sends nothing before the upstream's first content, so
// a failing model still hands over to the next of the chain (or, on the
// last, fails with an error status); a passed-through one is piped by
// openStream, answered at once on the chain's last model.
func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, c *gateway.Call, chain []gateway.Target, call *openai.ResponsesCall, created time.Time) {
	wire := responsesPipe
	var began []byte // a passed-through stream's first response, as sent
	ended := false
	wire.began = func(resp []byte) { began = resp }
	wire.completed = func(resp []byte) bool { ended = true; return s.storePassedThrough(r, c, resp) }
	up, sse, done := s.openStream(w, r, c, chain, wire)
	if done {
		if !ended && began != nil {
			s.storePassedThrough(r, c, began) // cut before its end: marked as the tenant's
		}
		return
	}
	defer sse.unbound()
	defer up.Close()
	obj := call.Object(c.ID, created, c.Model.ID)
	obj.Svc = newSvc(c, "")
	rs := openai.NewResponsesStream(obj, c.Req.Output, sse.event)
	if rs.Start() != nil {
		up.Gone()
		return
	}
	for {
		p, _, gone := up.Next(nil, sse.flush)
		if gone {
			up.Gone()
			return
		}
		if p.Err != nil {
			if u, cost, tell := up.Fail(p.Err); tell || stopping(r) {
				d := describe(r, p.Err)
				failed := rs.Fail(d.Code, d.Message, d.openaiParam(), openai.NewResponsesUsage(u, cost))
				s.storeResponse(r, call, failed) // OpenAI keeps a failed response too
				rs.Failed()
			}
			return
		}
		d := p.D
		if rs.Delta(d) != nil {
			up.Gone()
			return
		}
		if d.StopReason != "" {
			u, cost, record := up.Finish(d.Usage)
			final, err := rs.Close(d.StopReason, openai.NewResponsesUsage(u, cost), time.Now())
			final.Svc = newSvc(c, d.NativeStop)
			if err == nil {
				s.storeResponse(r, call, final)
				rs.Terminal()
			}
			record()
			return
		}
	}
}

// getResponse answers GET /v1/responses/{id}: a stored response of the
// caller's tenant, as it was answered.
func (s *Server) getResponse(w http.ResponseWriter, r *http.Request) {
	if v := r.URL.Query().Get("stream"); v != "" && v != "false" {
		// OpenAI streams a background response still running; Baton keeps
		// finished ones only. Answered whole, the SDK's stream iterator
		// would end with no event and no error.
		s.writeErrorAs(w, r, openaiErrors, badRequest("stream", "stream: a stored response is retrieved whole (Baton keeps finished responses only, and runs none in the background); retrieve it without stream"))
		return
	}
	rec, err := s.storedResponses().Load(r.Context(), principalOf(r.Context()).Tenant, mux.Vars(r)["id"], "")
	if err != nil {
		s.writeErrorAs(w, r, openaiErrors, err)
		return
	}
	writeAnswer(w, rec.Response)
}

// deleteResponse answers DELETE /v1/responses/{id} as OpenAI does: the
// caller's tenant's response is no longer found, by GET or by
// previous_response_id. One its provider keeps too is deleted there first
// (a failure there is the provider's error, and nothing is deleted, so a
// retry does it all). The record stays in the ledger, as every event does
// (docs/api.md).
func (s *Server) deleteResponse(w http.ResponseWriter, r *http.Request) {
	p, id := principalOf(r.Context()), mux.Vars(r)["id"]
	upstream := func(d openai.Deleted) error {
		if d.Upstream == "" || s.catalog == nil {
			return nil
		}
		if del, ok := s.catalog.Provider(d.Upstream).(gateway.ResponseDeleter); ok {
			ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
			defer cancel()
			return del.DeleteResponse(ctx, id)
		}
		return nil // a provider no longer configured: nothing Baton can reach
	}
	err := s.storedResponses().Delete(r.Context(), p.Tenant, eventstore.Metadata{Actor: "key:" + p.KeyID, RequestID: RequestID(r.Context())}, id, upstream)
	if err != nil {
		s.writeErrorAs(w, r, openaiErrors, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response.deleted", "deleted": true})
}

// listInputItems answers GET /v1/responses/{id}/input_items as OpenAI
// does: the stored response's input items (openai.InputItems), newest
// first unless order=asc, a page of limit (1 to 100, default 20) after
// the item id after.
func (s *Server) listInputItems(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			s.writeErrorAs(w, r, openaiErrors, gateway.BadRequest("limit", "limit must be an integer from 1 to 100"))
			return
		}
		limit = n
	}
	order := cmp.Or(q.Get("order"), "desc")
	if order != "asc" && order != "desc" {
		s.writeErrorAs(w, r, openaiErrors, gateway.BadRequest("order", "order must be asc or desc"))
		return
	}
	rec, err := s.storedResponses().Load(r.Context(), principalOf(r.Context()).Tenant, mux.Vars(r)["id"], "")
	if err != nil {
		s.writeErrorAs(w, r, openaiErrors, err)
		return
	}
	items := openai.InputItems(rec)
	if order == "desc" {
		slices.Reverse(items)
	}
	if after := q.Get("after"); after != "" {
		i := slices.IndexFunc(items, func(it json.RawMessage) bool { return gjson.GetBytes(it, "id").Str == after })
		if i < 0 {
			s.writeErrorAs(w, r, openaiErrors, gateway.BadRequest("after", "after names no input item of this response"))
			return
		}
		items = items[i+1:]
	}
	more := len(items) > limit
	items = items[:min(limit, len(items))]
	page := map[string]any{"object": "list", "data": items, "has_more": more, "first_id": nil, "last_id": nil}
	if len(items) > 0 {
		page["first_id"], page["last_id"] = gjson.GetBytes(items[0], "id").Str, gjson.GetBytes(items[len(items)-1], "id").Str
	}
	writeJSON(w, http.StatusOK, page)
}
