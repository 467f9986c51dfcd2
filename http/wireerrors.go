package http

import (
	"net/http"
	"path"
	"strings"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/gateway/anthropic"
	"github.com/batonhq/baton/gateway/openai"
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
	if r.Header.Get("Anthropic-Version") != "" {
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
		s.log.WithLevel(d.level()).Str("requestId", RequestID(r.Context())).Err(err).Msg("gateway call failed")
	}
	retryHeaders(w, d)
	writeJSON(w, d.statusIn(f), wireErrorBody(r, f, d))
}

// tellChat tells err in a chat completions stream already begun: an error
// chunk, as some servers send one.
func tellChat(sse *sseWriter, r *http.Request, err error) {
	d := describe(r, err)
	oa, _ := d.types()
	param, code := d.openaiParamCode()
	sse.data(&openai.ChatChunk{Error: &openai.APIError{Message: d.Message, Type: oa, Param: param, Code: code}})
}

// openaiParamCode are d's param and code in OpenAI's shape: a provider's
// refusal's own code, and its param when the provider had the client's
// body as sent (a translated request's fields are not the client's);
// else Baton's code and the field it names.
func (d described) openaiParamCode() (param, code any) {
	if d.refusal != nil {
		code = d.Code
		if d.refusal.Code != "" {
			code = d.refusal.Code
		}
		if d.refusal.AsSent && d.refusal.Param != "" {
			param = d.refusal.Param
		}
		return param, code
	}
	if d.param != "" {
		param = fieldPath(d.param, true)
	}
	return param, d.Code
}

// openaiParam is d's param in OpenAI's shape, "" for none.
func (d described) openaiParam() string {
	p, _ := d.openaiParamCode()
	s, _ := p.(string)
	return s
}

// tellMessages tells err in a messages stream already begun: Anthropic's
// error event.
func tellMessages(sse *sseWriter, r *http.Request, err error) {
	d := describe(r, err)
	_, an := d.types()
	e := anthropic.ErrorEvent(an, d.Message)
	sse.event("error", &e)
}

// wireErrorBody is d in a gateway front's error shape.
func wireErrorBody(r *http.Request, f errFormat, d described) any {
	oa, an := d.types()
	if f == openaiErrors && d.refusal != nil {
		// The provider's code and param, as its SDK reads them. Baton's
		// code is beside, in svc.
		param, code := d.openaiParamCode()
		return refusalBody{Error: refusalError{APIError: openai.APIError{Message: d.Message, Type: oa, Param: param, Code: code}, Svc: refusalSvc{Code: d.Code}}}
	}
	if f == openaiErrors {
		param, code := d.openaiParamCode()
		return openai.ErrorBody{Error: openai.APIError{Message: relead(d.param, fieldPath(d.param, true), d.Message), Type: oa, Param: param, Code: code}}
	}
	msg := d.Message
	if d.Kind == domain.KindInvalid || d.Kind == domain.KindBadRequest {
		msg = ledByField(d.param, msg)
	}
	return anthropic.ErrorBody{Type: "error", Error: anthropic.EventError{Type: an, Message: msg}, RequestID: RequestID(r.Context())}
}

// refusalBody is a provider's refusal in OpenAI's error shape, with
// Baton's own code beside the provider's.
type refusalBody struct {
	Error refusalError `json:"error"`
}

type refusalError struct {
	openai.APIError
	Svc refusalSvc `json:"svc"`
}

type refusalSvc struct {
	Code string `json:"code"` // upstream_rejected_request, upstream_request_too_large, upstream_error
}

// ledByField is a refusal's message as Anthropic's are, led by the field it
// names as Anthropic names one (messages.0.content: the Messages API has no
// param of its own), unless it is already.
func ledByField(param, msg string) string {
	p := fieldPath(param, false)
	if p == "" || strings.HasPrefix(param, "header:") || strings.HasPrefix(param, "query:") {
		return msg
	}
	if m := relead(param, p, msg); m != msg || strings.HasPrefix(msg, p) {
		return m
	}
	return p + ": " + msg
}

// fieldPath is a refused field in a provider's form: Baton's checks name it
// by JSON pointer (/temperature, messages/0/content), OpenAI's error.param
// by a dotted path with indices in brackets (messages[0].content), and
// Anthropic's messages by a dotted path (messages.0.content). A name
// without a slash (max_tokens), or a header's or query parameter's, is
// as it is.
func fieldPath(param string, brackets bool) string {
	if !strings.Contains(param, "/") || strings.HasPrefix(param, "header:") || strings.HasPrefix(param, "query:") {
		return param
	}
	var b strings.Builder
	for i, seg := range strings.Split(strings.TrimPrefix(param, "/"), "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch {
		case brackets && i > 0 && seg != "" && strings.Trim(seg, "0123456789") == "":
			b.WriteString("[" + seg + "]")
		case i > 0:
			b.WriteString("." + seg)
		default:
			b.WriteString(seg)
		}
	}
	return b.String()
}

// relead is msg led by path instead of the pointer param it starts with
// ("/temperature: must be a number" is "temperature: must be a number"),
// or msg as it is.
func relead(param, path, msg string) string {
	if path == param {
		return msg
	}
	for _, lead := range []string{param, strings.TrimPrefix(param, "/")} {
		if rest, ok := strings.CutPrefix(msg, lead); ok && (rest == "" || rest[0] == ':' || rest[0] == ' ') {
			return path + ": " + strings.TrimLeft(rest, ": ")
		}
	}
	return msg
}

// openaiAPIs are the roots of OpenAI's API: an OpenAI client that calls
// one Baton does not serve gets an answer in the shape its SDK parses.
var openaiAPIs = []string{"/v1/chat", "/v1/responses", "/v1/completions", "/v1/embeddings", "/v1/images", "/v1/audio",
	"/v1/moderations", "/v1/files", "/v1/uploads", "/v1/batches", "/v1/assistants", "/v1/threads", "/v1/vector_stores",
	"/v1/fine_tuning", "/v1/realtime", "/v1/conversations", "/v1/evals", "/v1/containers"}

func openaiPath(p string) bool {
	for _, a := range openaiAPIs {
		if p == a || strings.HasPrefix(p, a+"/") {
			return true
		}
	}
	return false
}

// noRoute answers err for a path or method Baton does not serve (or a
// handler's panic) in the shape of the front the path belongs to:
// Anthropic's under /v1/messages, the caller's on the models routes,
// OpenAI's under OpenAI's API roots, a problem document elsewhere.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request, err error) {
	p := path.Clean(r.URL.Path) // the shape of /v1//chat/completions is the chat front's
	switch {
	case p == "/v1/messages" || strings.HasPrefix(p, "/v1/messages/"):
		s.writeErrorAs(w, r, anthropicErrors, err)
	case p == "/v1/models" || strings.HasPrefix(p, "/v1/models/"):
		s.writeErrorAs(w, r, modelErrors, err)
	case openaiPath(p):
		// Paths both APIs have (/v1/files, /v1/models): the Anthropic SDK,
		// which sends anthropic-version, gets its own shape.
		s.writeErrorAs(w, r, modelErrors, err)
	case p == "/console" || strings.HasPrefix(p, "/console/"):
		// A page for the person who opened the address (a form's, say),
		// not a problem document.
		setConsoleHeaders(w.Header(), true)
		s.consoleError(w, r, err)
	default:
		s.writeError(w, r, err)
	}
}
