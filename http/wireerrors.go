package http

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/gateway"
)

// errFormat is the error shape a route answers in: the gateway fronts speak
// their wire format's errors so existing SDKs parse them.
type errFormat int

const (
	problemErrors   errFormat = iota // RFC 9457
	openaiErrors                     // {"error":{message,type,param,code}}
	anthropicErrors                  // {"type":"error","error":{type,message}}
)

// wireError is an error as both gateway fronts describe it.
type wireError struct {
	status     int
	oaType     string // OpenAI error type
	anType     string // Anthropic error type
	code       string
	param      string
	message    string
	retryAfter string
}

// classify maps any error to a wire error.
func classify(err error) wireError {
	var de *domain.Error
	var ue *gateway.UpstreamError
	var be *gateway.BudgetError
	switch {
	case errors.As(err, &be):
		if be.Period == "" {
			return wireError{status: http.StatusForbidden, oaType: "invalid_request_error", anType: "permission_error", code: "unpriced_model_under_budget", param: "model", message: be.Error()}
		}
		if be.Never {
			// Waiting does not help: the request must ask for less.
			return wireError{status: http.StatusBadRequest, oaType: "invalid_request_error", anType: "invalid_request_error", code: "budget_too_small_for_request", param: "max_tokens", message: be.Error()}
		}
		retry := max(1, int(time.Until(be.ResetAt).Seconds()+0.999))
		if be.HeldOnly {
			retry = 1 // calls in flight hold the room; they end soon
		}
		return wireError{status: http.StatusTooManyRequests, oaType: "insufficient_quota", anType: "rate_limit_error", code: "budget_exceeded", message: be.Error(), retryAfter: strconv.Itoa(retry)}
	case errors.Is(err, gateway.ErrNoRoute):
		return wireError{status: http.StatusServiceUnavailable, oaType: "api_error", anType: "overloaded_error", code: "no_route", param: "model", message: err.Error()}
	case errors.As(err, &de):
		w := wireError{status: statusOf(de.Kind), code: de.Code, message: de.Message}
		if len(de.Fields) > 0 {
			w.param = de.Fields[0].Pointer
		}
		switch de.Kind {
		case domain.KindUnauthorized:
			w.oaType, w.anType = "invalid_request_error", "authentication_error"
		case domain.KindForbidden:
			w.oaType, w.anType = "invalid_request_error", "permission_error"
		case domain.KindNotFound:
			w.oaType, w.anType = "invalid_request_error", "not_found_error"
		case domain.KindUnavailable:
			w.oaType, w.anType = "api_error", "api_error"
		case domain.KindInvalid:
			// The fronts answer validation errors with 400, as the
			// providers they imitate do.
			w.status, w.oaType, w.anType = http.StatusBadRequest, "invalid_request_error", "invalid_request_error"
		default:
			w.oaType, w.anType = "api_error", "api_error"
		}
		return w
	case errors.Is(err, gateway.ErrUnknownModel):
		return wireError{status: http.StatusNotFound, oaType: "invalid_request_error", anType: "not_found_error", code: "model_not_found", param: "model", message: err.Error()}
	case errors.As(err, &ue):
		w := wireError{oaType: "api_error", anType: "api_error", code: "upstream_error", message: ue.Public(), retryAfter: ue.RetryAfter}
		switch {
		case ue.Timeout:
			w.status, w.code = http.StatusGatewayTimeout, "upstream_timeout"
		case ue.Status == http.StatusTooManyRequests:
			w.status, w.oaType, w.anType, w.code = http.StatusTooManyRequests, "rate_limit_error", "rate_limit_error", "upstream_rate_limited"
		case ue.Status == 529 || ue.Status == http.StatusServiceUnavailable:
			w.status, w.anType, w.code = http.StatusServiceUnavailable, "overloaded_error", "upstream_overloaded"
		case ue.Status == http.StatusBadRequest || ue.Status == http.StatusUnprocessableEntity || ue.Status == http.StatusNotFound:
			// The upstream refused the request itself: the caller's to fix.
			w.status, w.oaType, w.anType, w.code = http.StatusBadRequest, "invalid_request_error", "invalid_request_error", "upstream_rejected_request"
		default:
			// 5xx, connection failures, and upstream 401/403 (Baton's
			// credentials, not the caller's) are a bad gateway.
			w.status = http.StatusBadGateway
		}
		return w
	case errors.Is(err, context.Canceled):
		return wireError{status: 499, oaType: "api_error", anType: "api_error", code: "client_closed_request", message: "the client went away"}
	}
	return wireError{status: http.StatusInternalServerError, oaType: "api_error", anType: "api_error", code: "internal_error", message: "the server failed on this request; it has been logged"}
}

func (s *Server) writeErrorAs(w http.ResponseWriter, r *http.Request, f errFormat, err error) {
	if f == problemErrors {
		s.writeError(w, r, err)
		return
	}
	we := classify(err)
	if we.status >= 500 {
		s.log.Error().Str("requestId", RequestID(r.Context())).Err(err).Msg("gateway call failed")
	}
	if we.retryAfter != "" {
		w.Header().Set("Retry-After", we.retryAfter)
	}
	if f == openaiErrors {
		var param any
		if we.param != "" {
			param = we.param
		}
		writeJSON(w, we.status, map[string]any{"error": map[string]any{"message": we.message, "type": we.oaType, "param": param, "code": we.code}})
		return
	}
	writeJSON(w, we.status, map[string]any{"type": "error", "error": map[string]any{"type": we.anType, "message": we.message}, "request_id": RequestID(r.Context())})
}

// noRoute answers a path or method Baton does not serve (or a handler's
// panic), in the shape of the front the path belongs to: OpenAI's under /v1/models and /v1/chat,
// Anthropic's under /v1/messages, a problem document elsewhere.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	p := r.URL.Path
	switch {
	case p == "/v1/messages" || strings.HasPrefix(p, "/v1/messages/"):
		typ := "invalid_request_error"
		switch {
		case status == http.StatusNotFound:
			typ = "not_found_error"
		case status >= 500:
			typ = "api_error"
		}
		writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": RequestID(r.Context())})
	case p == "/v1/models" || strings.HasPrefix(p, "/v1/models/") || strings.HasPrefix(p, "/v1/chat/"):
		typ := "invalid_request_error"
		if status >= 500 {
			typ = "api_error"
		}
		writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	default:
		writeProblem(w, r, status, code, msg)
	}
}
