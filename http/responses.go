package http

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/openai"
)

// ---- OpenAI Responses ----

// storeTimeout bounds the append of a stored response: the answer waits
// for it, so that a previous_response_id sent as soon as the client has
// the answer finds the response.
const storeTimeout = 10 * time.Second

func (s *Server) storedResponses() openai.ResponsesStore {
	return openai.ResponsesStore{Store: s.store}
}

// responses answers POST /v1/responses: the request is translated to the
// gateway's and goes down the same call path as the other fronts, to
// whatever provider the model routes to.
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	const f = openaiErrors
	created := time.Now()
	body, err := readBody(w, r, s.maxModelBody)
	var call *openai.ResponsesCall
	if err == nil {
		call, err = openai.DecodeResponsesRequest(body)
	}
	if err == nil && call.Wire.Previous() != "" {
		var h openai.ResponsesHistory
		if h, err = s.storedResponses().History(r.Context(), principalOf(r.Context()).Tenant, call.Wire.Previous()); err == nil {
			call.Continue(h)
		}
	}
	var chain []gateway.Target
	if err == nil {
		chain, err = s.plan(call.Wire.Model, call.Request)
	}
	if err != nil {
		s.writeErrorAs(w, r, f, err)
		return
	}
	c := s.newCall(r, "responses", "", call.Request, call.Wire.Stream)
	c.ID = openai.NewResponsesID()
	defer c.ReleaseHold()
	if call.Wire.Stream {
		s.streamResponse(w, r, c, chain, call, created)
		return
	}
	resp, err := s.caller.Complete(r.Context(), c, chain)
	if err != nil {
		s.writeErrorAs(w, r, f, err)
		return
	}
	cost, record := s.caller.Settle(c, resp.Usage, "ok")
	defer record()
	obj := call.Object(c.ID, created, c.Model.ID)
	obj.Complete(resp, c.Req.Output, openai.NewResponsesUsage(resp.Usage, cost), time.Now())
	obj.Svc = newSvc(c, resp.NativeStop)
	s.storeResponse(r, call, obj)
	writeAnswer(w, obj)
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

// streamResponse streams a response in the Responses event grammar. As
// on the other fronts, nothing is sent before the upstream's first
// content, so a failing model still hands over to the next of the chain.
func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, c *gateway.Call, chain []gateway.Target, call *openai.ResponsesCall, created time.Time) {
	up, err := s.caller.Open(r.Context(), c, chain)
	if err != nil {
		s.writeErrorAs(w, r, openaiErrors, err)
		return
	}
	defer up.Close()
	sse, err := startSSE(w)
	if err != nil {
		s.caller.Record(c, up.ReadSoFar(c.Req), "upstream_error")
		s.writeErrorAs(w, r, openaiErrors, err)
		return
	}
	obj := call.Object(c.ID, created, c.Model.ID)
	obj.Svc = newSvc(c, "")
	rs := openai.NewResponsesStream(obj, c.Req.Output, sse.event)
	if rs.Start() != nil {
		s.caller.Record(c, up.ReadSoFar(c.Req), "client_gone")
		return
	}
	sse.flush() // the headers and response.created leave now
	var sent gateway.Tally
	for {
		p, _, gone := up.Next(r.Context(), nil, sse.flush)
		if gone {
			s.caller.Record(c, sent.Bill(c.Req, nil), "client_gone")
			return
		}
		if p.Err != nil {
			u := sent.Bill(c.Req, nil)
			if errors.Is(p.Err, context.Canceled) || r.Context().Err() != nil || errors.Is(p.Err, io.ErrClosedPipe) {
				s.caller.Record(c, u, "client_gone")
				return
			}
			cost := s.caller.Record(c, u, "partial")
			d := describe(r, p.Err)
			rs.Fail(d.Code, d.Message, openai.NewResponsesUsage(u, cost))
			return
		}
		d := p.D
		sent.See(d)
		if rs.Delta(d) != nil {
			s.caller.Record(c, sent.Bill(c.Req, nil), "client_gone")
			return
		}
		if d.StopReason != "" {
			u := sent.Bill(c.Req, d.Usage)
			cost, record := s.caller.Settle(c, u, "ok")
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
	rec, err := s.storedResponses().Load(r.Context(), principalOf(r.Context()).Tenant, mux.Vars(r)["id"], "")
	if err != nil {
		s.writeErrorAs(w, r, openaiErrors, err)
		return
	}
	writeAnswer(w, rec.Response)
}
