package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// What every provider kind needs to call its upstream: the HTTP client,
// and the upstream's failures as *UpstreamError.

// NewHTTPClient is the pooled client every adapter uses by default: bounded
// dial and header timeouts, connection reuse, no overall timeout (streams may
// be long; contexts bound calls).
func NewHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   128,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: DefaultTimeout, // a whole answer's headers come with the answer
		ForceAttemptHTTP2:     true,
	}}
}

// ModelIDs reads a model list's data: an array of {id}, or null (Ollama
// with no model pulled sends that). Without the key this is not a list,
// and taking it for an empty one would mark every model of the provider
// unavailable.
func ModelIDs(data json.RawMessage) ([]string, error) {
	if len(data) == 0 {
		return nil, errors.New("no data array")
	}
	var l []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(l))
	for _, m := range l {
		if m.ID != "" {
			out = append(out, m.ID)
		}
	}
	return out, nil
}

// DecodeWhole reads a whole answer body and decodes one JSON document
// from it, refusing anything after the document. The error says which
// failed: a read (a timeout, a connection broken mid-body) comes back as
// a *bodyReadError, a body that does not decode as encoding/json's error.
func DecodeWhole(r io.Reader, v any) error {
	// Read, then decode: json.Unmarshal refuses anything after the
	// document and allocates only what v keeps, where a json.Decoder grew
	// a buffer by refills, then read on to look for more.
	b, err := readWhole(r)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// readWhole reads a whole answer body: a failed read as a *bodyReadError,
// one longer than r's limit as *AnswerTooLarge.
func readWhole(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, &bodyReadError{err}
	}
	if over(r, len(b)) {
		return nil, &AnswerTooLarge{Limit: int64(len(b))}
	}
	return b, nil
}

// DecodeAnswer decodes a translated call's whole success answer into v, a
// failure told as AnswerError tells it ("malformed response", with the
// decoder's words), but for a body holding an error of the provider's API
// instead of an answer, which is that error (NotAnAnswer), as on a
// passed-through call. It returns the body, for the caller's NotAnAnswer
// when v decodes but is not an answer.
func DecodeAnswer(provider string, r io.Reader, v any) ([]byte, error) {
	b, err := readWhole(r)
	if err != nil {
		return nil, AnswerError(provider, "malformed response", err, true)
	}
	if err := json.Unmarshal(b, v); err != nil {
		msg := "malformed response: " + JSONMistake(err)
		if !ValidJSON(b) {
			return nil, Unreadable(provider, b, msg)
		}
		return nil, NotAnAnswer(provider, b, msg)
	}
	return b, nil
}

// over reports whether r, a limited reader read to its limit (n bytes),
// had more to give: the answer was cut at the limit, not whole.
func over(r io.Reader, n int) bool {
	lr, ok := r.(*io.LimitedReader)
	if !ok || lr.N > 0 || n == 0 {
		return false
	}
	var one [1]byte
	k, _ := io.ReadFull(lr.R, one[:])
	return k > 0
}

// AnswerTooLarge is an answer longer than Baton reads: told as such, not
// as the malformed JSON its cut would make.
type AnswerTooLarge struct{ Limit int64 }

func (e *AnswerTooLarge) Error() string {
	return fmt.Sprintf("the answer is over %d MiB, the most Baton reads", e.Limit>>20)
}

// bodyReadError is a failure to read an answer's body after its headers.
type bodyReadError struct{ err error }

func (e *bodyReadError) Error() string { return "reading the answer: " + e.err.Error() }
func (e *bodyReadError) Unwrap() error { return e.err }

// AnswerError is the provider's error for an answer body DecodeWhole
// refused. A body that stopped arriving is the transport's failure, as
// before the headers: a timeout (504, retryable), the caller gone
// (context.Canceled), or a connection broken mid-body (retryable). A body
// that arrived and does not decode is a malformed answer, named by what
// (502, retryable); detail adds the decoder's words to the message.
func AnswerError(provider, what string, err error, detail bool) error {
	if tl, ok := errors.AsType[*AnswerTooLarge](err); ok {
		return BadAnswer(provider, tl.Error())
	}
	if re, ok := errors.AsType[*bodyReadError](err); ok {
		return MidAnswerError(provider, re.err, "connection broken while it sent its answer", "timed out while it sent its answer")
	}
	msg := what
	if detail {
		msg += ": " + JSONMistake(err)
	}
	return MalformedAnswer(provider, msg)
}

// NotAnAnswer is the error for a whole success answer raw that does not
// read as one (msg says how). An error object of the provider's API in it
// ({"error":{"message":…}}, as some OpenAI-compatible routers answer an
// upstream's failure with a 200) is that error, with its message and not
// billed, since no model answered; anything else is MalformedAnswer.
func NotAnAnswer(provider string, raw []byte, msg string) *UpstreamError {
	if ue := heldError(provider, raw); ue != nil {
		return ue
	}
	return Unreadable(provider, raw, msg)
}

// Unreadable is MalformedAnswer for a whole answer raw that does not read
// as one (msg says how); an event stream, from a server that streams
// whatever the request says, is told as one: the decoder's words
// (invalid character 'd') or the missing field's would send the operator
// looking at the wrong thing.
func Unreadable(provider string, raw []byte, msg string) *UpstreamError {
	t := bytes.TrimLeft(raw, " \t\r\n")
	for _, field := range []string{"data:", "event:", ":"} {
		if bytes.HasPrefix(t, []byte(field)) {
			msg = "answered with an event stream where a whole answer was asked for (a server that streams whatever it is asked?)"
			break
		}
	}
	return MalformedAnswer(provider, msg)
}

// heldError is the error of the provider's API a success answer raw holds
// instead of an answer ({"error":{"message":…}}), or nil. Its status is
// the one its type or code stands for (ErrorStatus), so that a rate limit
// or an overload a router answers with a 200 is told as one.
func heldError(provider string, raw []byte) *UpstreamError {
	e := gjson.GetBytes(raw, "error")
	m := e.Get("message")
	if m.Type != gjson.String || m.Str == "" {
		return nil
	}
	text := m.Str
	if len(text) > 500 {
		text = strings.ToValidUTF8(text[:500], "")
	}
	ue := BadAnswer(provider, "its answer (a success) held an error: "+text)
	ue.OfAPI, ue.Type = true, e.Get("type").Str
	ue.Status = ErrorStatus(ue.Type, e.Get("code"))
	ue.Code, ue.Param = ErrorField(e.Get("code")), ErrorField(e.Get("param"))
	return ue
}

// ErrorField is an error object's code or param as Baton tells it on: a
// string of at most 256 bytes, made valid UTF-8; "" for anything else (no
// field is named so, and half a name would name another).
func ErrorField(v gjson.Result) string {
	if v.Type != gjson.String || len(v.Str) > 256 {
		return ""
	}
	return strings.ToValidUTF8(v.Str, "")
}

// ErrorStatus is the status an error of a provider's API that came with a
// success (a whole answer holding one, an error event or chunk in a
// stream) stands for, where its type (OpenAI's or Anthropic's names) or
// its code (a status, as OpenRouter and vLLM give it) says whose fault it
// is: a rate limit 429, an overload 529 (told on the OpenAI-shaped fronts
// as 503), a refused request 400 (404, 413, 422 as named); else 502, the
// upstream's failure.
func ErrorStatus(typ string, code gjson.Result) int {
	switch typ {
	case "rate_limit_error", "rate_limit_exceeded", "insufficient_quota", "requests", "tokens":
		return http.StatusTooManyRequests
	case "overloaded_error", "overloaded":
		return 529
	case "invalid_request_error", "BadRequestError":
		return http.StatusBadRequest
	case "not_found_error", "NotFoundError":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	}
	switch code.Str {
	case "rate_limit_exceeded", "insufficient_quota":
		return http.StatusTooManyRequests
	}
	if n := code.Int(); code.Type == gjson.Number || code.Type == gjson.String && strconv.Itoa(int(n)) == code.Str {
		switch n {
		case 400, 404, 413, 422, 429, 529:
			return int(n)
		case 503:
			return 529 // an overload, as a 503 of the provider's own is told
		}
	}
	return http.StatusBadGateway
}

// StreamBody is a streamed call's answer body, to be read as an event
// stream. An upstream that answers with a JSON document instead (an
// error object, as routers answer a failure with a 200, or a whole
// answer, from a server that does not stream) has no event in it: read as
// events, it said only that the stream ended early. Such a body's first
// read is its failure instead: the error it holds, with the provider's
// message, else a 502 saying what came. It is read when the stream is, so
// the stream's idle limit bounds it.
func StreamBody(provider string, resp *http.Response) io.ReadCloser {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/html" {
		// A web page (a base URL that leads to a site, or a proxy's page)
		// would read as a stream that ended before its answer did. No
		// model served it: not billed.
		return &failedBody{resp.Body, BadAnswer(provider, "answered the streamed call with an HTML page, not an event stream (is its base URL the provider's API?)")}
	}
	if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return resp.Body
	}
	return &jsonBody{provider: provider, body: resp.Body}
}

// failedBody is a body told as err at its first read.
type failedBody struct {
	body io.ReadCloser
	err  error
}

func (f *failedBody) Read([]byte) (int, error) { return 0, f.err }
func (f *failedBody) Close() error             { return f.body.Close() }

// jsonBody is a JSON answer to a streamed call (StreamBody). A body that
// does not start as a JSON document does (an event stream a server
// labels application/json) is read as it is.
type jsonBody struct {
	provider string
	body     io.ReadCloser
	stream   io.Reader // the body, an event stream after all
	err      error
}

func (j *jsonBody) Read(p []byte) (int, error) {
	if j.stream != nil {
		return j.stream.Read(p)
	}
	if j.err == nil {
		br := bufio.NewReader(j.body)
		c, err := br.ReadByte()
		for err == nil && (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			c, err = br.ReadByte()
		}
		if err == nil && c != '{' && c != '[' {
			br.UnreadByte()
			j.stream = br
			return br.Read(p)
		}
		var b []byte
		if err == nil {
			br.UnreadByte()
			b, err = io.ReadAll(io.LimitReader(br, 1<<20))
		}
		held := heldError(j.provider, b)
		switch {
		case err != nil && !errors.Is(err, io.EOF):
			j.err = err // a broken read, told as the stream's
		case held != nil:
			j.err = held
		case len(b) == 0:
			j.err = io.EOF // nothing: told as an empty stream is
		default:
			j.err = MalformedAnswer(j.provider, "answered the streamed call with a JSON document, not an event stream (a server that does not stream this model?)")
		}
	}
	return 0, j.err
}

func (j *jsonBody) Close() error { return j.body.Close() }

// MalformedAnswer is BadAnswer for a whole answer that arrived and does
// not read as one: the upstream served it (UpstreamError.Served).
func MalformedAnswer(provider, msg string) *UpstreamError {
	e := BadAnswer(provider, msg)
	e.Served = true
	return e
}

// BadAnswer is Baton's 502 for an upstream's answer that is not one
// (malformed, cut short): the upstream itself answered a success.
func BadAnswer(provider, msg string) *UpstreamError {
	return &UpstreamError{Provider: provider, Status: http.StatusBadGateway, Bad: true, Message: msg}
}

// JSONMistake tells a decoding error in JSON's terms: encoding/json's
// type error names the Go type and struct it decoded into.
func JSONMistake(err error) string {
	ute, ok := errors.AsType[*json.UnmarshalTypeError](err)
	if !ok {
		return err.Error()
	}
	want := "a number"
	switch ute.Type.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "a whole number"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Struct, reflect.Map:
		want = "an object"
	case reflect.Slice, reflect.Array:
		want = "an array"
	case reflect.Interface, reflect.Pointer:
		want = "another JSON type"
	}
	where := "the answer"
	if ute.Field != "" {
		where = ute.Field
	}
	return fmt.Sprintf("%s is %s where %s is expected", where, jsonKindOf(ute.Value), want)
}

// jsonKindOf names what encoding/json calls a value it could not decode.
func jsonKindOf(v string) string {
	switch v {
	case "object":
		return "an object"
	case "array":
		return "an array"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "number":
		return "a number"
	}
	return "the " + v // number 1.5
}

// Send does req. A transport failure, or an answer outside 2xx (its body
// read and closed), comes back as the provider's error.
func Send(client *http.Client, provider string, req *http.Request) (*http.Response, error) {
	resp, err := roundTrip(client, req)
	if err != nil {
		return nil, transportError(provider, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, readUpstreamError(provider, resp, req.Header)
	}
	return resp, nil
}

// JSONType is a Content-Type header's value of application/json, shared:
// net/http only reads a header's values, and an Add to it appends to a
// copy (its length is its capacity).
var JSONType = []string{"application/json"}

// roundTrip sends req on client's transport itself when the client adds
// nothing of its own (no cookie jar, redirect policy or overall timeout),
// as a reverse proxy does: a model call is not followed to where a 3xx
// points (the 3xx is the upstream's error answer, docs/api.md), and
// Client.Do's redirect bookkeeping (a copy of the request's headers each
// call) is work for nothing.
func roundTrip(client *http.Client, req *http.Request) (*http.Response, error) {
	if client.Jar != nil || client.CheckRedirect != nil || client.Timeout != 0 || req.URL.User != nil {
		// Do also sends a base URL's user:password as basic auth.
		return client.Do(req)
	}
	t := client.Transport
	if t == nil {
		t = http.DefaultTransport
	}
	resp, err := t.RoundTrip(req)
	if err != nil {
		// As Do says it: the method and the address (logged, not told).
		return nil, &url.Error{Op: req.Method[:1] + strings.ToLower(req.Method[1:]), URL: req.URL.Redacted(), Err: err}
	}
	return resp, nil
}

func transportError(provider string, err error) error {
	var ne net.Error
	if errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &UpstreamError{Provider: provider, Message: "timed out", Timeout: true}
	}
	var oe *net.OpError
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &oe) && (oe.Op == "read" || oe.Op == "write") {
		// Reached, and it dropped the connection (reset, or closed)
		// before its answer: no network fault to look for.
		return &UpstreamError{Provider: provider, Message: "the connection broke before the answer", cause: err}
	}
	return &UpstreamError{Provider: provider, Message: "could not reach the provider", cause: err}
}

// StreamError is a read failure of a stream that had opened: the
// connection broke or timed out mid-stream.
func StreamError(provider string, err error) error {
	if ue, ok := errors.AsType[*UpstreamError](err); ok {
		return ue // told already (StreamBody)
	}
	if le, ok := errors.AsType[interface {
		error
		ReadLimit() string
	}](err); ok {
		return &UpstreamError{Provider: provider, Message: le.ReadLimit() + ", the most Baton reads", cause: err}
	}
	return MidAnswerError(provider, err, "stream interrupted", "")
}

// MidAnswerError is transportError for a read that failed after the
// answer's headers: a broken connection is named broken, a timeout (still
// a timeout, 504) timedOut unless that is empty; the caller gone stays
// context.Canceled.
func MidAnswerError(provider string, err error, broken, timedOut string) error {
	te := transportError(provider, err)
	if ue, ok := te.(*UpstreamError); ok {
		switch {
		case !ue.Timeout:
			ue.Message = broken
		case timedOut != "":
			ue.Message = timedOut
		}
	}
	return te
}

// readUpstreamError reads an error body in either provider's shape. sent
// is the request's headers: the key they carried is taken out of the
// message (redactKeys).
func readUpstreamError(provider string, resp *http.Response, sent http.Header) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Param   any    `json:"param"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(b))
	ofAPI := json.Unmarshal(b, &e) == nil && e.Error.Message != ""
	if ofAPI {
		msg = e.Error.Message
	} else if s := gjson.GetBytes(b, "error"); s.Type == gjson.String && strings.TrimSpace(s.Str) != "" && gjson.ValidBytes(b) {
		msg = s.Str // an error given as a string (Hugging Face's TGI), not the whole body
	}
	param, _ := e.Error.Param.(string)
	code, _ := e.Error.Code.(string)
	if len(param) > 256 || !utf8.ValidString(param) {
		param = "" // no field is named so; half a name would name another
	}
	if len(code) > 256 || !utf8.ValidString(code) {
		code = ""
	}
	if msg == "" {
		// No body: the status's name at least, not an empty message.
		msg = "no error message"
		if st := http.StatusText(resp.StatusCode); st != "" {
			msg = st + " (no error message)"
		}
	}
	msg = redactKeys(msg, sent) // before the cut, which could leave a key's start
	if len(msg) > 500 {
		// Cut at the start of a character, not inside one: the message
		// goes out in JSON answers and logs.
		cut := 500
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut]
	}
	return &UpstreamError{Provider: provider, Status: resp.StatusCode, Type: e.Error.Type, Message: msg, RetryAfter: retryAfter(resp.Header), OfAPI: ofAPI,
		Param: redactKeys(param, sent), Code: redactKeys(code, sent)}
}

// retryAfter is an answer's Retry-After, or its wait in milliseconds
// (retry-after-ms, which Azure OpenAI sends and the SDKs read first) in
// whole seconds, rounded up, when it sends only that.
func retryAfter(h http.Header) string {
	if v := h.Get("Retry-After"); v != "" {
		return v
	}
	ms, err := strconv.ParseFloat(strings.TrimSpace(h.Get("Retry-After-Ms")), 64)
	if err != nil || ms < 0 || math.IsNaN(ms) || math.IsInf(ms, 0) {
		return ""
	}
	return strconv.FormatFloat(math.Ceil(min(ms, float64(MaxRetryAfter.Milliseconds()))/1000), 'f', 0, 64)
}

// keyHeaders are the headers a provider's key goes upstream in.
var keyHeaders = []string{"Authorization", "X-Api-Key", "Api-Key"}

// redactKeys replaces in msg the key the request carried (a header's whole
// value, or an Authorization's credentials after the scheme): a server
// that quotes the request's headers or key in its error (a proxy, a
// compatible server) would otherwise hand Baton's provider key to every
// caller shown the message, and to the log (RedactValue).
func redactKeys(msg string, sent http.Header) string {
	for _, name := range keyHeaders {
		for _, v := range sent[name] {
			if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok && name == "Authorization" {
				v = cred
			}
			msg = RedactValue(msg, strings.TrimSpace(v))
		}
	}
	return msg
}

// RedactValue is msg with v, a key, replaced by [redacted]. Values under 8
// bytes are left: no key is that short, and a word that short would be cut
// out of the text.
func RedactValue(msg, v string) string {
	if len(v) < 8 {
		return msg
	}
	return strings.ReplaceAll(msg, v, "[redacted]")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Passthrough: a body in the provider's own wire format goes upstream as the
// client wrote it, only the model rewritten; the answer comes back as the
// provider sent it. Baton reads what billing and fallback need with gjson
// and never decodes the whole body, so fields it does not know (thinking,
// cache_control, images, betas, tomorrow's) are never lost.

// MaxPrealloc bounds what ReadAll allocates on a declared length alone.
const MaxPrealloc = 1 << 20

// MaxAnswer bounds a finished answer read into memory.
const MaxAnswer = 64 << 20

// WithModel is body with its top-level model set; body is not changed (a
// fallback forwards it again).
func WithModel(body []byte, model string) ([]byte, error) {
	out, err := sjson.SetBytes(body, "model", model)
	if err != nil {
		return nil, &UpstreamError{Provider: "baton", Status: http.StatusBadRequest, Message: "the body's model cannot be set: " + err.Error()}
	}
	return out, nil
}

// WithoutFields is body without the top-level fields names; body is not
// changed, nor, when it has none of them, copied.
func WithoutFields(body []byte, names ...string) ([]byte, error) {
	out := body
	for _, f := range names {
		if !gjson.GetBytes(out, f).Exists() {
			continue
		}
		var err error
		if out, err = sjson.DeleteBytes(out, f); err != nil {
			return nil, &UpstreamError{Provider: "baton", Status: http.StatusBadRequest, Message: "the body's " + f + " cannot be left out: " + err.Error()}
		}
	}
	return out, nil
}

// WithQuery is path with the client's query string, when it sent one
// (Claude Code's ?beta=true).
func WithQuery(path, query string) string {
	if query == "" {
		return path
	}
	return path + "?" + query
}

// PostNative sends a passed-through body with do, at path with the
// client's query. A stream's body comes back open; a finished answer is
// read whole, its call bounded by DefaultTimeout (a stalled body must not
// hold it for ever).
func PostNative(ctx context.Context, provider, path, query string, body []byte, stream bool,
	do func(ctx context.Context, path string, body []byte) (*http.Response, error)) (raw []byte, open io.ReadCloser, err error) {
	path = WithQuery(path, query)
	if !stream {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	resp, err := do(ctx, path, body)
	if err != nil {
		if ue, ok := errors.AsType[*UpstreamError](err); ok {
			ue.AsSent = true // its param names a field of the client's body
		}
		return nil, nil, err
	}
	if stream {
		return nil, StreamBody(provider, resp), nil
	}
	defer resp.Body.Close()
	lr := io.LimitReader(resp.Body, MaxAnswer)
	if raw, err = ReadAll(lr, min(resp.ContentLength, MaxAnswer)); err != nil {
		return nil, nil, MidAnswerError(provider, err, "answer interrupted", "")
	}
	if over(lr, len(raw)) {
		return nil, nil, BadAnswer(provider, (&AnswerTooLarge{Limit: MaxAnswer}).Error())
	}
	return raw, nil, nil
}

// ReadAll is io.ReadAll into a buffer of the declared length size (none:
// 0 or less), so a body of known size up to MaxPrealloc is read in one
// allocation rather than in doublings from 512 bytes. Up to MaxPrealloc
// is allocated before the bytes come, as a peer may declare far more than
// it sends; a longer body grows from there. It reads on to the end
// (EOF), which also lifts a request body's read deadline.
func ReadAll(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, min(size, MaxPrealloc)+1) // +1: the read that finds the end needs room
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // longer than declared: grow as ReadAll does
		}
	}
}
