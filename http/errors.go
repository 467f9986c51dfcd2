package http

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/projections"
)

// errorKind is how one kind of error is answered: its status in a problem
// document, its status on the gateway fronts (which answer validation
// errors with 400, as the providers they imitate do), and the OpenAI and
// Anthropic error types.
type errorKind struct {
	problem, wire int
	openai        string
	anthropic     string
}

// errorTable is the one place where an error's kind becomes a status code
// and a wire error type. Every answer that is an error goes through it.
var errorTable = map[domain.Kind]errorKind{
	domain.KindBadRequest:   {http.StatusBadRequest, http.StatusBadRequest, "invalid_request_error", "invalid_request_error"},
	domain.KindInvalid:      {http.StatusUnprocessableEntity, http.StatusBadRequest, "invalid_request_error", "invalid_request_error"},
	domain.KindUnauthorized: {http.StatusUnauthorized, http.StatusUnauthorized, "invalid_request_error", "authentication_error"},
	domain.KindForbidden:    {http.StatusForbidden, http.StatusForbidden, "invalid_request_error", "permission_error"},
	domain.KindNotFound:     {http.StatusNotFound, http.StatusNotFound, "invalid_request_error", "not_found_error"},
	domain.KindNotAllowed:   {http.StatusMethodNotAllowed, http.StatusMethodNotAllowed, "invalid_request_error", "invalid_request_error"},
	domain.KindConflict:     {http.StatusConflict, http.StatusConflict, "api_error", "api_error"},
	domain.KindTooLarge:     {http.StatusRequestEntityTooLarge, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large"},
	domain.KindRateLimited:  {http.StatusTooManyRequests, http.StatusTooManyRequests, "rate_limit_error", "rate_limit_error"},
	domain.KindCanceled:     {499, 499, "api_error", "api_error"},
	domain.KindInternal:     {http.StatusInternalServerError, http.StatusInternalServerError, "api_error", "api_error"},
	domain.KindUpstream:     {http.StatusBadGateway, http.StatusBadGateway, "api_error", "api_error"},
	domain.KindUnavailable:  {http.StatusServiceUnavailable, http.StatusServiceUnavailable, "api_error", "api_error"},
	domain.KindTimeout:      {http.StatusGatewayTimeout, http.StatusGatewayTimeout, "api_error", "api_error"},
	// 426: what WebSocket clients of the Responses API (Codex) take as
	// "use HTTP here" at once; any other status they retry first.
	domain.KindNoUpgrade: {http.StatusUpgradeRequired, http.StatusUpgradeRequired, "invalid_request_error", "invalid_request_error"},
	// 408: the SDKs retry it, as a client whose upload stalled may.
	domain.KindRequestTimeout: {http.StatusRequestTimeout, http.StatusRequestTimeout, "invalid_request_error", "invalid_request_error"},
}

// codeTypes are the codes whose wire types differ from their kind's, as
// the providers name those conditions.
var codeTypes = map[string]struct{ openai, anthropic string }{
	"budget_exceeded":     {"insufficient_quota", "rate_limit_error"},
	"no_route":            {"api_error", "overloaded_error"},
	"upstream_overloaded": {"api_error", "overloaded_error"},
	"overloaded":          {"api_error", "overloaded_error"}, // Baton's own bound (bodies.go)
}

// statusOf is a kind's status in a problem document.
func statusOf(kind domain.Kind) int {
	if k, ok := errorTable[kind]; ok {
		return k.problem
	}
	return http.StatusInternalServerError
}

// described is any error as the fronts answer it: a domain error (kind,
// code, message, fields), the request parameter it is about, and whether
// its cause is Baton's to log.
type described struct {
	*domain.Error
	param string
	log   bool
	// warn logs it at warn, not error: the client's choice refused, which
	// the operator may still want to see (a provider whose key is missing).
	warn bool
	// unkept: the answer follows from the tenant's budget, not from the
	// request, so an Idempotency-Key does not keep it (a raised limit
	// lets the same request through).
	unkept bool
	// refusal is a provider's refusal of a model call (its 400, 404, 409,
	// 413 or 422), which the model fronts answer with its status, code
	// and param, as a client of the provider's own SDK would see it.
	refusal *gateway.UpstreamError
}

// ErrShuttingDown is the cause of the requests a stop ends after its
// grace: they answer 503 shutting_down, not a client's leaving.
var ErrShuttingDown = errors.New("the server is shutting down")

// stopping reports whether a stop ended r after its grace: a stream is
// then told so before it ends, its client being still there.
func stopping(r *http.Request) bool { return errors.Is(context.Cause(r.Context()), ErrShuttingDown) }

// describe turns any error into a domain error. Errors of the store, the
// read models and the gateway get their kinds here; anything else is an
// internal error, answered without its text.
func describe(r *http.Request, err error) described {
	var de *domain.Error
	var ue *gateway.UpstreamError
	var be *gateway.BudgetError
	switch {
	case r != nil && stopping(r):
		e := domain.E("request", domain.KindUnavailable, "shutting_down", "The server is stopping and ended this request; retry it (another replica, or this one once restarted, answers).")
		e.RetryAfter = 1
		return described{Error: e}
	case r != nil && errors.Is(context.Cause(r.Context()), ledger.ErrLeaseLost):
		// Its key was taken over (a shared store): the request was ended
		// so as not to run beside the one that holds the key now. Its
		// model calls failing on the ended context are not the provider's.
		e := domain.E("idempotency", domain.KindConflict, "idempotency_lease_lost",
			"This request's hold on its Idempotency-Key lapsed and another request took the key over, so this one was ended; retry with the same key to get that request's answer.")
		e.RetryAfter = 1
		return described{Error: e, log: true}
	case errors.As(err, &be):
		d := budgetRefusal(r, be)
		d.unkept = true // it follows from the tenant's budget, not the request
		return d
	case errors.Is(err, gateway.ErrPromptTooLong):
		return described{Error: domain.E("gateway", domain.KindBadRequest, "context_length_exceeded", "%s", publicMessage(err)), param: promptParam(r)}
	case errors.Is(err, gateway.ErrNoRoute):
		e := domain.E("gateway", domain.KindUnavailable, "no_route", "%s", err.Error())
		e.NoRetry = true // no retry finds a route until the operator adds one
		// What the client asked for: logged for the operator, at warn.
		return described{Error: e, param: "model", log: true, warn: true}
	case errors.As(err, &de):
		d := described{Error: de, log: statusOf(de.Kind) >= 500}
		// A provider asked for that has no key here: the client's choice
		// (a model or a name), not a failure of the server.
		d.warn = de.Code == "provider_not_configured"
		if len(de.Fields) > 0 {
			d.param = de.Fields[0].Pointer
		} else if d.warn {
			d.param = "model" // the model named, as no_route and model_not_found name it
		}
		return d
	case errors.Is(err, gateway.ErrUnknownModel):
		return described{Error: domain.E("gateway", domain.KindNotFound, "model_not_found", "%s", publicMessage(err)), param: "model"}
	case errors.As(err, &ue):
		e := domain.E("gateway", domain.KindUpstream, "upstream_error", "%s", ue.Public())
		e.RetryAfter = ue.RetryAfterSeconds(time.Now())
		switch {
		case ue.Timeout:
			e.Kind, e.Code = domain.KindTimeout, "upstream_timeout"
		case ue.Status == http.StatusTooManyRequests:
			e.Kind, e.Code = domain.KindRateLimited, "upstream_rate_limited"
		case ue.Status == 529 || ue.Status == http.StatusServiceUnavailable:
			e.Kind, e.Code = domain.KindUnavailable, "upstream_overloaded"
		case ue.Status == http.StatusNotFound && !ue.OfAPI:
			// No error of the provider's API: its baseUrl names some other
			// server, or a path it does not serve. The operator's to mend,
			// not a model the client should take for unknown.
			e.Message += " (not an error of the provider's API: check the provider's baseUrl)"
		case ue.Status == http.StatusBadRequest || ue.Status == http.StatusUnprocessableEntity || ue.Status == http.StatusNotFound:
			// The upstream refused the request itself: the caller's to fix.
			e.Kind, e.Code = domain.KindBadRequest, "upstream_rejected_request"
		case ue.Status == http.StatusRequestEntityTooLarge:
			// A body too large for the provider (Anthropic's
			// request_too_large): the caller's to shorten, as a 413 of
			// Baton's own is; a 502 would have the SDKs send it again.
			e.Kind, e.Code = domain.KindTooLarge, "upstream_request_too_large"
		}
		// Otherwise (5xx, connection failures, and upstream 401/403, which
		// are Baton's credentials, not the caller's) a bad gateway. A
		// provider refusing Baton's key refuses every retry until the
		// operator mends it: the SDKs are told not to run the call again.
		if ue.Status == http.StatusUnauthorized || ue.Status == http.StatusForbidden {
			e.NoRetry = true
		}
		// A wait means something on what a retry may mend (a rate limit, an
		// overload, a failure), not beside a refusal that every retry meets.
		if e.Kind == domain.KindBadRequest || e.Kind == domain.KindTooLarge || e.NoRetry {
			e.RetryAfter = 0
		}
		// A provider's refusal is not kept under an Idempotency-Key: on
		// generate Baton wrote the request it refused, and once the
		// operator mends the route the same request must run.
		refused := e.Code == "upstream_rejected_request" || e.Code == "upstream_request_too_large"
		// A refusal of the request is the caller's to fix, no failure of
		// Baton or the provider: logged at warn, not error.
		d := described{Error: e, log: true, warn: refused, unkept: refused}
		if modelCall(r) && !ue.Timeout && (ue.OfAPI || ue.Status != http.StatusNotFound) {
			switch ue.Status {
			case http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
				d.refusal = ue
			}
		}
		return d
	case errors.Is(err, gateway.ErrHoldUnavailable) && errors.Is(err, eventstore.ErrUnavailable):
		// A model call, not a write of the ledger: it takes no
		// Idempotency-Key, and nothing of it was done.
		e := domain.E("store", domain.KindUnavailable, "store_unavailable", "The event store did not answer, so the tenant's budget could not hold this call, and the call was not made; retry it in a moment.")
		e.RetryAfter = 1
		return described{Error: e, log: true}
	case errors.Is(err, eventstore.ErrUnavailable):
		e := domain.E("store", domain.KindUnavailable, "store_unavailable", "The event store did not answer; a write in flight may or may not have been recorded. Retry with the same Idempotency-Key: a recorded write is answered, not written twice (a callback is also known by its same body; a contract, plan or webhook sent without a key would be created again).")
		e.RetryAfter = 1
		return described{Error: e, log: true}
	case errors.Is(err, eventstore.ErrFull):
		// Passes once the operator frees space, without a restart.
		e := domain.E("store", domain.KindUnavailable, "store_unavailable", "The ledger store's disk is full; nothing was recorded. Retry with the same Idempotency-Key: writes resume once space is freed.")
		e.RetryAfter = 5
		return described{Error: e, log: true}
	case errors.Is(err, eventstore.ErrTooLarge):
		// The request's, not the server's: over what the store takes in
		// one append (KurrentDB's --max-append-size), which a create near
		// the body limit (a context packet) can be; a 500 was retried.
		return described{Error: domain.E("store", domain.KindTooLarge, "event_too_large",
			"The events this request would record come to more than the event store takes in one append (KurrentDB's --max-append-size); nothing was recorded: send less (a large text as a link to where it is kept).")}
	case errors.Is(err, eventstore.ErrFailed), errors.Is(err, eventstore.ErrClosed), errors.Is(err, projections.ErrBehind):
		return described{Error: domain.E("store", domain.KindUnavailable, "store_unavailable", "The ledger store cannot take this request now; nothing was recorded. Retry with the same Idempotency-Key."), log: true}
	case errors.Is(err, context.Canceled), r.Context().Err() != nil && errors.Is(err, r.Context().Err()):
		return described{Error: domain.E("request", domain.KindCanceled, "client_closed_request", "The client went away.")}
	}
	return described{Error: domain.E("request", domain.KindInternal, "internal_error", "The server failed on this request; it has been logged."), log: true}
}

// level is the level d is logged at, when it is.
func (d described) level() zerolog.Level {
	if d.warn {
		return zerolog.WarnLevel
	}
	return zerolog.ErrorLevel
}

// modelCall reports whether r is a model call of a gateway front.
func modelCall(r *http.Request) bool {
	if r == nil {
		return false
	}
	switch r.URL.Path {
	case "/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/messages/count_tokens":
		return true
	}
	return false
}

// types are d's OpenAI and Anthropic error types.
func (d described) types() (openai, anthropic string) {
	if d.refusal != nil {
		// As the provider's status names it (Anthropic's SDK and Claude
		// Code read the type; OpenAI's refusals are all of this type).
		switch d.refusal.Status {
		case http.StatusNotFound:
			return "invalid_request_error", "not_found_error"
		case http.StatusConflict:
			return "invalid_request_error", "conflict_error"
		case http.StatusRequestEntityTooLarge:
			return "invalid_request_error", "request_too_large"
		}
		return "invalid_request_error", "invalid_request_error"
	}
	if t, ok := codeTypes[d.Code]; ok {
		return t.openai, t.anthropic
	}
	k, ok := errorTable[d.Kind]
	if !ok {
		k = errorTable[domain.KindInternal]
	}
	return k.openai, k.anthropic
}

// wireStatus is d's status on the gateway fronts.
func (d described) wireStatus() int {
	if k, ok := errorTable[d.Kind]; ok {
		return k.wire
	}
	return http.StatusInternalServerError
}

// statusIn is d's status in error shape f. Anthropic's overload is a 529,
// which its clients tell apart from other failures (Claude Code names it
// and may switch to its fallback model); an overload of Baton's own bound
// is told the same way. no_route keeps its 503: no retry mends it.
func (d described) statusIn(f errFormat) int {
	if d.refusal != nil && f != problemErrors {
		// The provider's own status: the SDKs raise a class for each
		// (NotFoundError, UnprocessableEntityError, ...).
		return d.refusal.Status
	}
	if f == anthropicErrors && (d.Code == "upstream_overloaded" || d.Code == "overloaded") {
		return 529
	}
	return d.wireStatus()
}

// writeError renders any error as a problem document.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	writeProblemDoc(w, s.problemFor(w, r, err))
}

// publicMessage is a gateway error's message without the package's
// prefix, which says nothing to a client.
func publicMessage(err error) string { return strings.TrimPrefix(err.Error(), "gateway: ") }

// retryHeaders says when to retry (Retry-After), or not to: the SDKs retry
// a 5xx unless X-Should-Retry says false, and Claude Code, through them,
// would wait out its retries saying nothing.
func retryHeaders(w http.ResponseWriter, d described) {
	if d.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(d.RetryAfter))
	}
	// A key refused is refused on every retry: Claude Code retries a 401
	// for minutes, silently, unless told not to.
	if d.NoRetry || d.Kind == domain.KindUnauthorized {
		w.Header()["X-Should-Retry"] = []string{"false"}
	}
}

// problemFor describes err as a problem document, logging what is Baton's
// to fix and setting Retry-After when the error says when to retry.
func (s *Server) problemFor(w http.ResponseWriter, r *http.Request, err error) Problem {
	d := describe(r, err)
	if st := stateOf(r.Context()); st != nil && d.unkept {
		st.unkept = true
	}
	if d.log {
		s.log.WithLevel(d.level()).Str("requestId", RequestID(r.Context())).Err(err).Msg("request failed")
	}
	retryHeaders(w, d)
	p := newProblem(r, statusOf(d.Kind), d.Code, d.Message)
	p.Fields = d.Fields
	p.Findings = d.Findings
	return p
}

// promptParam names the field of r that holds its prompt: input on the
// Responses API and generate, messages elsewhere.
func promptParam(r *http.Request) string {
	if r != nil && (r.URL.Path == "/v1/responses" || r.URL.Path == "/v1/generate" || r.URL.Path == "/v1/agent-plans") {
		return "input"
	}
	return "messages"
}

// budgetRefusal describes a call the tenant's budget refuses.
func budgetRefusal(r *http.Request, be *gateway.BudgetError) described {
	if be.Period == "" && be.Geo != "" {
		return described{Error: domain.E("gateway", domain.KindForbidden, "unpriced_inference_geo_under_budget", "%s", be.Error()), param: "inference_geo"}
	}
	if be.Period == "" && be.Tier != "" {
		return described{Error: domain.E("gateway", domain.KindForbidden, "unpriced_service_tier_under_budget", "%s", be.Error()), param: be.TierParam()}
	}
	if be.Period == "" {
		return described{Error: domain.E("gateway", domain.KindForbidden, "unpriced_model_under_budget", "%s", be.Error()), param: "model"}
	}
	if be.Never && !be.Quota {
		// Waiting does not help: the request must ask for less.
		e := domain.E("gateway", domain.KindBadRequest, "budget_too_small_for_request", "%s", be.Error())
		param := be.Cap()
		if be.Input {
			param = promptParam(r)
		}
		return described{Error: e, param: param}
	}
	e := domain.E("gateway", domain.KindRateLimited, "budget_exceeded", "%s", be.Error())
	e.RetryAfter = max(1, int(time.Until(be.RetryAt()).Seconds()+0.999))
	if be.HeldOnly {
		e.RetryAfter = 1 // calls in flight hold the room; they end soon
	}
	return described{Error: e}
}
