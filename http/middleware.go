package http

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/http/metrics"
)

type ctxKey int

const requestKey ctxKey = iota

// requestState is what the front's middleware learns of a request, kept
// in one context value: a context value and a copy of the request per
// fact would be allocated on every call.
type requestState struct {
	id        string
	principal domain.Principal // set by authentication
	body      deadlineBody
	unkept    bool // the answer is not one an Idempotency-Key keeps (described.unkept)
	// ran: the request began its work (generate's first model call); a
	// refusal before it is not kept under an Idempotency-Key, as Stripe
	// keeps no result for parameters that failed validation.
	ran bool
	// claim is the request's Idempotency-Key, when it has one: taken at
	// its first write (a shared store claims it there; a create records
	// what it makes).
	claim *ledger.Claim
	// target is the id a keyed create whose first write is a model call
	// makes (an agent plan), recorded with the key at that call.
	target string
	// release gives back what the request held for its whole life (its
	// share of the model-call bodies' bound), once its handler returned.
	release func()
}

func stateOf(ctx context.Context) *requestState {
	st, _ := ctx.Value(requestKey).(*requestState)
	return st
}

// RequestID returns the request id the front assigned to r.
func RequestID(ctx context.Context) string {
	if st := stateOf(ctx); st != nil {
		return st.id
	}
	return ""
}

// withRequestID gives every request an id, answered in x-request-id. A
// caller's own id is kept when it is short and printable, so traces join up,
// unless it looks like a credential: the id goes to the access log, the
// answer and every event the request appends, where a token could never be
// taken out again. It is the front's outermost layer: the request's one
// copy (with its state, and the body under its deadline) is made here.
func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !printable(id) || s.credentialLike(id) {
			id = "req_" + uuid.Must(uuid.NewV7()).String()
		}
		// Both names, in their canonical form, share the one value.
		v := []string{id}
		h := w.Header()
		h["X-Request-Id"], h["Request-Id"] = v, v // request-id: where the Anthropic SDK looks
		st := &requestState{id: id}
		r = r.WithContext(context.WithValue(r.Context(), requestKey, st)) // a copy: the caller's request stays as it was
		withBodyDeadline(w, r, &st.body)
		defer func() {
			if st.release != nil {
				st.release()
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// credentialLike reports whether the secret scanner's rules take v for a
// credential.
func (s *Server) credentialLike(v string) bool {
	if s.scanner == nil {
		return false
	}
	_, found := s.scanner.ScanText(v)
	return found
}

func printable(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	tenant string // set by auth, for the access log
	route  string // the matched route template, set inside the router
	// metrics is the matched route's, set with route; nil when no route
	// took the request.
	metrics *metrics.Route
}

// Unwrap lets http.ResponseController reach the connection (read
// deadlines for request bodies).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Flush keeps server-sent events working through the recorder.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// withAccessLog writes one structured line per request: id, route, status,
// duration. Never a key, a body or a prompt. It counts the request in the
// metrics too.
func (s *Server) withAccessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		took := time.Since(start)
		m := rec.metrics
		if m == nil {
			m = s.metrics.Unmatched(r.Method)
		}
		m.Observe(rec.status, took)
		route := rec.route
		if route == "" {
			route = "unmatched"
		}
		s.log.Info().
			Str("requestId", RequestID(r.Context())).
			Str("method", r.Method).
			Str("route", route).
			Str("tenant", rec.tenant).
			Int("status", rec.status).
			Dur("duration", took).
			Msg("request")
	})
}

// instrumented wraps a route's handler: inside the router, where the
// matched route is known, it hands the route's template (never the ids in
// the path) and metrics to the access log.
func instrumented(template string, m *metrics.Route, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rec, ok := w.(*statusRecorder); ok {
			rec.route, rec.metrics = template, m
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) withRecover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error().Str("requestId", RequestID(r.Context())).Interface("panic", v).Str("stack", string(debug.Stack())).Msg("handler panicked")
				if rec, ok := w.(*statusRecorder); ok && rec.status != 0 {
					// The answer has begun (a stream): another status and a
					// problem document would be written into it. Cut the
					// connection; the client sees the stream break.
					panic(http.ErrAbortHandler)
				}
				s.noRoute(w, r, domain.E("request", domain.KindInternal, "internal_error", "The server failed on this request; it has been logged."))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// Problem is an RFC 9457 problem document with a stable machine code.
type Problem struct {
	Type      string                 `json:"type"`
	Title     string                 `json:"title"`
	Status    int                    `json:"status"`
	Code      string                 `json:"code"`
	Detail    string                 `json:"detail,omitempty"`
	Instance  string                 `json:"instance,omitempty"`
	RequestID string                 `json:"requestId,omitempty"`
	Fields    []domain.FieldError    `json:"fields,omitempty"`
	Findings  []domain.SecretFinding `json:"findings,omitempty"`
}

func newProblem(r *http.Request, status int, code, detail string) Problem {
	title := http.StatusText(status)
	if title == "" {
		title = "Client Closed Request"
	}
	return Problem{
		Type:      "urn:baton:problem:" + code,
		Title:     title,
		Status:    status,
		Code:      code,
		Detail:    detail,
		Instance:  r.URL.Path,
		RequestID: RequestID(r.Context()),
	}
}

func writeProblemDoc(w http.ResponseWriter, p Problem) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(p)
}
