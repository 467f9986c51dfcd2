package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v4"

	"github.com/batonhq/baton/docs"
)

// Every request and answer the tests of this package exchange with a front
// goes through checkOpenAPI, which holds them to docs/openapi.yaml: a route
// the document does not have, a status it does not list for the route, a
// header or body it does not describe fails the test that made the request.

// openAPISpec is the document, loaded and checked once. kin-openapi's
// model of it routes each request, and its openapi3filter checks the
// parameters and credentials of accepted requests; answers and bodies are
// checked against the document's schemas compiled once each, with the JSON
// Schema 2020-12 validator kin-openapi itself uses for OpenAPI 3.1
// (openapi3filter compiles a 3.1 schema again for every value it checks,
// which made the package's tests half again as slow).
type openAPISpec struct {
	router routers.Router
	raw    any // the document as JSON values, where schemas are found by pointer

	mu       sync.Mutex
	compiler *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema
}

// openAPIURL names the document for the schema compiler; it is never fetched.
const openAPIURL = "urn:baton:openapi"

var loadOpenAPISpec = sync.OnceValues(func() (*openAPISpec, error) {
	doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPIYAML)
	if err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml: %w", err)
	}
	// A model id may hold '/', and the server's route takes the rest of the
	// path for it: route the document's /v1/models/{id} the same way.
	// (OpenAPI path parameters cannot span segments.)
	if item := doc.Paths.Value("/v1/models/{id}"); item != nil {
		doc.Paths.Delete("/v1/models/{id}")
		doc.Paths.Set(modelIDRoute, item)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	var y any
	if err := yaml.Unmarshal(docs.OpenAPIYAML, &y); err != nil {
		return nil, err
	}
	j, err := json.Marshal(y)
	if err != nil {
		return nil, err
	}
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(openAPIURL, raw); err != nil {
		return nil, err
	}
	return &openAPISpec{router: router, raw: raw, compiler: c, schemas: map[string]*jsonschema.Schema{}}, nil
})

const modelIDRoute = "/v1/models/{id:.+}"

// checkOpenAPI wraps a front's handler: each exchange is checked once the
// handler has returned, and what does not match the document is reported
// with tb().Errorf (tb is called then, so a fuzz target's env, whose t
// changes from input to input, reports to the right one). Benchmarks are
// not checked: they measure the front.
func checkOpenAPI(tb func() testing.TB, h http.Handler) http.Handler {
	spec, err := loadOpenAPISpec()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := tb()
		if _, bench := t.(*testing.B); bench {
			h.ServeHTTP(w, r)
			return
		}
		if err != nil {
			t.Errorf("openapi: %v", err)
			h.ServeHTTP(w, r)
			return
		}
		body := &capturedBody{ReadCloser: r.Body}
		if r.Body != nil {
			r.Body = body
		}
		rec := &capturingWriter{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		for _, problem := range spec.check(r, body.buf.Bytes(), rec) {
			t.Errorf("openapi: %s %s answered %d: %s", r.Method, r.URL.RequestURI(), rec.status, problem)
		}
	})
}

// capturedBody keeps what the handler read of the request body.
type capturedBody struct {
	io.ReadCloser
	buf bytes.Buffer
}

func (c *capturedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.buf.Write(p[:n])
	return n, err
}

// capturingWriter passes the answer on and keeps its status and body.
type capturingWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *capturingWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *capturingWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.body.Write(b)
	return c.ResponseWriter.Write(b)
}

func (c *capturingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *capturingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// check returns what of one exchange does not match the document.
func (s *openAPISpec) check(r *http.Request, reqBody []byte, rec *capturingWriter) []string {
	if p := r.URL.Path; p == "" || p[0] != '/' || (path.Clean(p) != p && path.Clean(p)+"/" != p) {
		// A path with dot segments or doubled slashes is matched as it is,
		// never redirected (a 301 turned a POST into a GET, and sent
		// /v1/models/a//b to another model).
		if rec.status >= 300 && rec.status < 400 || rec.status >= 500 {
			return []string{"an unclean path is redirected or fails"}
		}
		return nil
	}
	if strings.Contains(strings.ToUpper(r.URL.RawPath), "%2F") && rec.status == http.StatusNotFound {
		// An encoded slash is not a separator (docs/api.md): no route,
		// though the decoded path may be one of the document's.
		return nil
	}
	if p := r.URL.Path; p == "/console" || strings.HasPrefix(p, "/console/") || p == "/favicon.ico" {
		// The console's pages, assets and session stream are HTML for
		// people, signed in by cookie, not the API: docs/console.md
		// describes them, docs/openapi.yaml does not, and the console's
		// own tests check their answers.
		return nil
	}
	if r.Method == http.MethodHead && r.URL.Path != "/v1/events" {
		// HEAD is served as the GET (docs/api.md): held to the GET's
		// operation, its answer as the GET's would be.
		g := *r
		g.Method = http.MethodGet
		r = &g
	}
	route, params, err := s.router.FindRoute(r)
	switch {
	case errors.Is(err, routers.ErrPathNotFound):
		if rec.status != http.StatusNotFound {
			return []string{"the path is not in docs/openapi.yaml (only the router's 404 may answer it)"}
		}
		return nil
	case errors.Is(err, routers.ErrMethodNotAllowed):
		// OpenAI's endpoints Baton does not serve, on paths it serves other
		// methods of: a POST under /v1/responses/ (compact, {id}/cancel),
		// GET /v1/chat/completions (stored completions), DELETE of a model
		// (a fine-tune's): the router's 404.
		notServed := rec.status == http.StatusNotFound && (r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/responses/") ||
			r.Method == http.MethodGet && r.URL.Path == "/v1/chat/completions" ||
			r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/v1/models/"))
		if rec.status != http.StatusMethodNotAllowed && !notServed && (rec.status != http.StatusUpgradeRequired || r.Header.Get("Upgrade") == "") {
			return []string{"the method is not in docs/openapi.yaml for this path (only the router's 405, or its 426 to a WebSocket handshake, may answer it)"}
		}
		return nil
	case err != nil:
		return []string{err.Error()}
	}
	docPath := route.Path
	if docPath == modelIDRoute {
		docPath = "/v1/models/{id}"
	}
	op := "/paths/" + pointerToken(docPath) + "/" + strings.ToLower(r.Method)
	var problems []string
	if err := s.checkAnswer(op, rec); err != nil {
		problems = append(problems, "answer: "+err.Error())
	}
	// Tests send malformed and wrong requests on purpose: a request is held
	// to the document only when Baton accepted it.
	if rec.status >= 200 && rec.status < 300 {
		in := &openapi3filter.RequestValidationInput{Request: requestWithBody(r, reqBody), PathParams: params, Route: route,
			Options: &openapi3filter.Options{ExcludeRequestBody: true, MultiError: true, SkipSettingDefaults: true, AuthenticationFunc: presentedCredential}}
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			problems = append(problems, "request: "+err.Error())
		} else if err := s.checkRequestBody(op, reqBody); err != nil {
			problems = append(problems, "request: "+err.Error())
		}
	}
	return problems
}

// checkAnswer holds an answer to the document: its status must be one the
// operation lists, its headers and body as that response describes them; a
// stream's events (text/event-stream) are held to the schema its media
// type names in x-event-schema.
func (s *openAPISpec) checkAnswer(op string, rec *capturingWriter) error {
	resp, obj := s.resolve(op + "/responses/" + strconv.Itoa(rec.status))
	if obj == nil {
		return errors.New("the status is not documented for this operation")
	}
	headers, _ := obj["headers"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		at, h := s.resolve(resp + "/headers/" + pointerToken(name))
		v, present := rec.Header()[http.CanonicalHeaderKey(name)]
		if !present {
			if required, _ := h["required"].(bool); required {
				return fmt.Errorf("header %s is missing", name)
			}
			continue
		}
		sch, err := s.schema(at + "/schema")
		if err != nil {
			return err
		}
		if err := sch.Validate(v[0]); err != nil {
			return fmt.Errorf("header %s: %v", name, err)
		}
	}
	content, _ := obj["content"].(map[string]any)
	if len(content) == 0 {
		return nil
	}
	ct := rec.Header().Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || content[mt] == nil {
		return fmt.Errorf("Content-Type %q is not documented for this status", ct)
	}
	at := resp + "/content/" + pointerToken(mt)
	switch {
	case mt == "text/event-stream":
	case mt == "application/octet-stream":
		// Bytes (the log's tiles): nothing to hold them to but their type.
		return nil
	case strings.HasPrefix(mt, "text/") || strings.HasPrefix(mt, "application/openmetrics"):
		// Text that is not JSON (the metrics): held to its schema as a string.
		sch, err := s.schema(at + "/schema")
		if err != nil {
			return err
		}
		return sch.Validate(rec.body.String())
	default:
		return s.validate(at+"/schema", rec.body.Bytes())
	}
	ref, _ := content[mt].(map[string]any)["x-event-schema"].(string)
	if !strings.HasPrefix(ref, "#/components/schemas/") {
		return fmt.Errorf("the stream's media type names no event schema (x-event-schema %q)", ref)
	}
	events, err := streamEvents(rec.body.Bytes())
	if err != nil {
		return err
	}
	sch, err := s.schema(ref[1:])
	if err != nil {
		return err
	}
	for i, ev := range events {
		if err := sch.Validate(ev); err != nil {
			return fmt.Errorf("event %d: %v", i, err)
		}
	}
	return nil
}

// checkRequestBody holds a request's body to its operation's schema.
func (s *openAPISpec) checkRequestBody(op string, body []byte) error {
	_, o := s.resolve(op)
	if o["requestBody"] == nil {
		return nil
	}
	rb, obj := s.resolve(op + "/requestBody")
	if len(bytes.TrimSpace(body)) == 0 {
		if required, _ := obj["required"].(bool); required {
			return errors.New("the request has no body; the document requires one")
		}
		return nil
	}
	return s.validate(rb+"/content/application~1json/schema", body)
}

// validate checks a JSON text against the schema at a pointer of the
// document.
func (s *openAPISpec) validate(ptr string, body []byte) error {
	sch, err := s.schema(ptr)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the body is not JSON: %v", err)
	}
	return sch.Validate(v)
}

// schema compiles the schema at a pointer of the document, once.
func (s *openAPISpec) schema(ptr string) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.schemas[ptr]; ok {
		return sch, nil
	}
	sch, err := s.compiler.Compile(openAPIURL + "#" + ptr)
	if err != nil {
		return nil, err
	}
	s.schemas[ptr] = sch
	return sch, nil
}

// resolve follows a pointer into the document, and the $ref of the object
// it reaches, to where that object is; obj is nil when there is none.
func (s *openAPISpec) resolve(ptr string) (at string, obj map[string]any) {
	for range 10 {
		var v any = s.raw
		for tok := range strings.SplitSeq(strings.TrimPrefix(ptr, "/"), "/") {
			m, _ := v.(map[string]any)
			v = m[strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")]
		}
		obj, _ = v.(map[string]any)
		ref, ok := obj["$ref"].(string)
		if !ok {
			return ptr, obj
		}
		ptr = strings.TrimPrefix(ref, "#")
	}
	return ptr, nil
}

func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// requestWithBody is r again, with the body the handler read. Baton reads
// every body as JSON whatever its Content-Type, so it is checked as JSON.
func requestWithBody(r *http.Request, body []byte) *http.Request {
	c := r.Clone(context.Background())
	c.Body = io.NopCloser(bytes.NewReader(body))
	c.ContentLength = int64(len(body))
	if len(body) > 0 {
		c.Header.Set("Content-Type", "application/json")
	} else {
		c.Header.Del("Content-Type")
	}
	return c
}

// presentedCredential passes a security scheme when the request carries
// its header: an answered request must have carried a key somewhere.
func presentedCredential(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	h := in.RequestValidationInput.Request.Header
	switch in.SecuritySchemeName {
	case "apiKey":
		if strings.TrimSpace(h.Get("x-api-key")) != "" {
			return nil
		}
	case "bearer":
		if a := h.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			return nil
		}
	}
	return in.NewError(nil)
}

// streamEvents reads server-sent events as {id, event, data}: the event's
// id and name when it has them, its data (its data lines joined with
// newlines, as the SSE grammar joins them) parsed as JSON (the literal
// [DONE] as a string); comment lines (heartbeats) are skipped.
func streamEvents(body []byte) ([]any, error) {
	var out []any
	for block := range strings.SplitSeq(strings.TrimSpace(string(body)), "\n\n") {
		if block == "" {
			continue
		}
		ev := map[string]any{}
		var data []string
		for line := range strings.SplitSeq(block, "\n") {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "": // a comment (a heartbeat)
			case "id":
				ev["id"] = value
			case "event":
				ev["event"] = value
			case "data":
				data = append(data, value)
			default:
				return nil, fmt.Errorf("unexpected line %q in the stream", line)
			}
		}
		if data != nil {
			value := strings.Join(data, "\n")
			if value == "[DONE]" {
				ev["data"] = value
			} else {
				v, err := jsonschema.UnmarshalJSON(strings.NewReader(value))
				if err != nil {
					return nil, fmt.Errorf("event data %q is not JSON: %v", value, err)
				}
				ev["data"] = v
			}
		}
		if len(ev) == 0 {
			continue // comments only
		}
		out = append(out, ev)
	}
	return out, nil
}
