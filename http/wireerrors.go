package http

import (
	"net/http"
	"strconv"
	"strings"
)

// errFormat is the error shape a route answers in: the gateway fronts speak
// their wire format's errors so existing SDKs parse them.
type errFormat int

const (
	problemErrors   errFormat = iota // RFC 9457
	openaiErrors                     // {"error":{message,type,param,code}}
	anthropicErrors                  // {"type":"error","error":{type,message}}
	// modelErrors is the models routes' shape, which both SDKs call:
	// Anthropic's when the request has anthropic-version, else OpenAI's.
	modelErrors
)

// resolve is the shape f takes for r.
func (f errFormat) resolve(r *http.Request) errFormat {
	if f != modelErrors {
		return f
	}
	if r.Header.Get("anthropic-version") != "" {
		return anthropicErrors
	}
	return openaiErrors
}

func (s *Server) writeErrorAs(w http.ResponseWriter, r *http.Request, f errFormat, err error) {
	f = f.resolve(r)
	if f == problemErrors {
		s.writeError(w, r, err)
		return
	}
	d := describe(r, err)
	if d.log {
		s.log.Error().Str("requestId", RequestID(r.Context())).Err(err).Msg("gateway call failed")
	}
	if d.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(d.RetryAfter))
	}
	writeJSON(w, d.wireStatus(), wireErrorBody(r, f, d))
}

// wireErrorBody is d in a gateway front's error shape.
func wireErrorBody(r *http.Request, f errFormat, d described) map[string]any {
	oa, an := d.types()
	if f == openaiErrors {
		var param any
		if d.param != "" {
			param = d.param
		}
		return map[string]any{"error": map[string]any{"message": d.Message, "type": oa, "param": param, "code": d.Code}}
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": an, "message": d.Message}, "request_id": RequestID(r.Context())}
}

// noRoute answers err for a path or method Baton does not serve (or a
// handler's panic) in the shape of the front the path belongs to: OpenAI's
// under /v1/models and /v1/chat, Anthropic's under /v1/messages, a problem
// document elsewhere.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request, err error) {
	p := r.URL.Path
	switch {
	case p == "/v1/messages" || strings.HasPrefix(p, "/v1/messages/"):
		s.writeErrorAs(w, r, anthropicErrors, err)
	case p == "/v1/models" || strings.HasPrefix(p, "/v1/models/"):
		s.writeErrorAs(w, r, modelErrors, err)
	case strings.HasPrefix(p, "/v1/chat/"):
		s.writeErrorAs(w, r, openaiErrors, err)
	default:
		s.writeError(w, r, err)
	}
}
