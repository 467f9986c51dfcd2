package gateway_test

// Golden wire tests for the provider adapters. Each directory
// testdata/gateway/<provider>/<case>/ holds one recorded exchange:
//
//	case.json      what the test does: the call (complete, stream,
//	               list_models), the gateway.Request, a deadline, and how the
//	               upstream misbehaves (hangs, cuts the connection)
//	upstream.http  the upstream's answer as the provider speaks it: status
//	               line, headers, blank line, body (JSON or a whole
//	               text/event-stream)
//	request.json   the request the adapter is expected to send: method, path,
//	               the headers that matter, the JSON body
//	golden.json    what the adapter made of the answer: the *gateway.Response,
//	               the gateway.Delta sequence and how the stream ended, the
//	               model list, or the error with its UpstreamError fields
//
// An httptest server replays upstream.http and captures the request. The
// captured request is compared with request.json (as JSON values, so key
// order and spacing do not matter) and the adapter's output with
// golden.json. `go test ./gateway -run TestGoldenWire -update` rewrites
// request.json and golden.json from what the code does now; case.json and
// upstream.http are never rewritten.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/anthropic"
	"github.com/batonhq/baton/gateway/openai"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenRoot is testdata/gateway at the top of the module.
const goldenRoot = "../testdata/gateway"

// defaultDeadline bounds a case that sets none, so a broken adapter fails the
// case instead of hanging the test binary.
const defaultDeadline = 10 * time.Second

// caseSpec is case.json.
type caseSpec struct {
	Description string `json:"description"`
	// Call is complete, stream or list_models.
	Call string `json:"call"`
	// Adapter overrides how the adapter is built; the defaults are the
	// provider's own (name and kind "openai" or "anthropic", a test key).
	Adapter struct {
		Name string  `json:"name,omitempty"`
		Kind string  `json:"kind,omitempty"` // openai adapter only: openai or openai-compatible
		Key  *string `json:"key,omitempty"`
	} `json:"adapter"`
	Input *inputRequest `json:"input,omitempty"`
	// DeadlineMS is the context deadline of the whole call, stream included.
	DeadlineMS int `json:"deadline_ms,omitempty"`
	Upstream   struct {
		// Hang is "before_headers" (the upstream never answers) or
		// "after_body" (it sends upstream.http's body, then stalls without
		// closing). Either way it waits until the adapter gives up.
		Hang string `json:"hang,omitempty"`
		// Cut aborts the connection after the body: no terminating chunk,
		// the client reads an unexpected EOF.
		Cut bool `json:"cut,omitempty"`
	} `json:"upstream"`
	// KnownBugs describes where the recording shows the adapter's current
	// behaviour rather than the correct one, and what the correct one is.
	KnownBugs []string `json:"known_bugs,omitempty"`
}

// inputRequest is gateway.Request in case.json's spelling.
type inputRequest struct {
	Model    string `json:"model"`
	System   string `json:"system,omitempty"`
	Messages []struct {
		Role    string          `json:"role"`
		Content []gateway.Block `json:"content"`
	} `json:"messages"`
	MaxTokens     int            `json:"max_tokens,omitempty"`
	Temperature   *float64       `json:"temperature,omitempty"`
	StopSequences []string       `json:"stop_sequences,omitempty"`
	Tools         []gateway.Tool `json:"tools,omitempty"`
}

func (in *inputRequest) request() gateway.Request {
	if in == nil {
		return gateway.Request{}
	}
	r := gateway.Request{Model: in.Model, System: in.System, MaxTokens: in.MaxTokens, Temperature: in.Temperature,
		StopSequences: in.StopSequences, Tools: in.Tools}
	for _, m := range in.Messages {
		for i, b := range m.Content {
			// case.json is indented; a client's tool input arrives compact.
			if len(b.Input) > 0 {
				var c bytes.Buffer
				if json.Compact(&c, b.Input) == nil {
					m.Content[i].Input = c.Bytes()
				}
			}
		}
		r.Messages = append(r.Messages, gateway.Message{Role: m.Role, Content: m.Content})
	}
	return r
}

// recordedHeaders are the request headers request.json keeps: the ones a
// provider reads to authenticate, version and parse the request. Any of them
// sent where it does not belong (an x-api-key to OpenAI) shows up too.
var recordedHeaders = []string{"Authorization", "X-Api-Key", "Anthropic-Version", "Anthropic-Beta", "Content-Type", "Accept",
	"Openai-Organization", "Openai-Project"}

// wireRequest is request.json.
type wireRequest struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"` // with the query
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body,omitempty"` // a JSON string when the body is not JSON
}

// goldenError is an error as golden.json keeps it: every UpstreamError field
// a front uses to map it.
type goldenError struct {
	GoType     string `json:"GoType"`
	Provider   string `json:"Provider,omitempty"`
	Status     int    `json:"Status"`
	Type       string `json:"Type"`
	Message    string `json:"Message"`
	RetryAfter string `json:"RetryAfter"`
	Timeout    bool   `json:"Timeout"`
	Retryable  bool   `json:"Retryable"`
	Public     string `json:"Public,omitempty"`
	Cause      string `json:"Cause,omitempty"` // the transport cause, for logs
	Text       string `json:"Text,omitempty"`  // err.Error() of anything but an UpstreamError
}

type completeGolden struct {
	Call     string            `json:"call"`
	Response *gateway.Response `json:"response"`
	Error    *goldenError      `json:"error"`
}

type streamGolden struct {
	Call string `json:"call"`
	// Opened is whether Stream returned a stream (false: it returned Error).
	Opened bool            `json:"opened"`
	Deltas []gateway.Delta `json:"deltas"`
	// End is "io.EOF" when Next ended the stream cleanly, "error" when it
	// returned Error.
	End        string       `json:"end,omitempty"`
	Error      *goldenError `json:"error"`
	CloseError string       `json:"close_error,omitempty"`
}

type modelsGolden struct {
	Call   string       `json:"call"`
	Models []string     `json:"models"`
	Error  *goldenError `json:"error"`
}

func TestGoldenWire(t *testing.T) {
	specs, err := filepath.Glob(filepath.Join(goldenRoot, "*", "*", "case.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) == 0 {
		t.Fatalf("no cases under %s", goldenRoot)
	}
	for _, spec := range specs {
		dir := filepath.Dir(spec)
		provider := filepath.Base(filepath.Dir(dir))
		name := provider + "/" + filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runGoldenCase(t, provider, dir)
		})
	}
}

func runGoldenCase(t *testing.T, provider, dir string) {
	var spec caseSpec
	b, err := os.ReadFile(filepath.Join(dir, "case.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		t.Fatalf("case.json: %v", err)
	}
	rec, err := os.ReadFile(filepath.Join(dir, "upstream.http"))
	if err != nil {
		t.Fatal(err)
	}
	up, err := parseUpstream(rec)
	if err != nil {
		t.Fatalf("upstream.http: %v", err)
	}
	up.hang, up.cut = spec.Upstream.Hang, spec.Upstream.Cut
	switch up.hang {
	case "", "before_headers", "after_body":
	default:
		t.Fatalf("case.json: upstream.hang %q is not before_headers or after_body", up.hang)
	}
	up.release = make(chan struct{})
	ts := httptest.NewServer(up)
	t.Cleanup(ts.Close)                                 // runs last: waits for the handler
	t.Cleanup(func() { close(up.release) })             // lets a hanging handler go
	client := gateway.NewHTTPClient()                   // the adapters' own pooled client
	t.Cleanup(func() { client.CloseIdleConnections() }) // runs first

	p, err := newAdapter(provider, spec, ts.URL, client)
	if err != nil {
		t.Fatal(err)
	}
	deadline := defaultDeadline
	if spec.DeadlineMS > 0 {
		deadline = time.Duration(spec.DeadlineMS) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	scrub := func(s string) string { return strings.ReplaceAll(s, ts.URL, "http://upstream") }

	var out any
	req := spec.Input.request()
	switch spec.Call {
	case "complete":
		resp, err := p.Complete(ctx, req)
		out = completeGolden{Call: spec.Call, Response: resp, Error: describeError(err, scrub)}
	case "stream":
		g := streamGolden{Call: spec.Call, Deltas: []gateway.Delta{}}
		st, err := p.Stream(ctx, req)
		if err != nil {
			g.Error = describeError(err, scrub)
		} else {
			g.Opened = true
			for i := 0; ; i++ {
				if i > 10000 {
					t.Fatal("the stream did not end")
				}
				d, err := st.Next()
				if err == io.EOF { // the contract: exactly io.EOF after the last delta
					g.End = "io.EOF"
					break
				}
				if err != nil {
					g.End, g.Error = "error", describeError(err, scrub)
					break
				}
				if d.KeepAlive {
					continue // taken by the Upstream reading the stream, as a ping
				}
				g.Deltas = append(g.Deltas, d)
			}
			if err := st.Close(); err != nil {
				g.CloseError = scrub(err.Error())
			}
		}
		out = g
	case "list_models":
		models, err := p.ListModels(ctx)
		out = modelsGolden{Call: spec.Call, Models: models, Error: describeError(err, scrub)}
	default:
		t.Fatalf("case.json: call %q is not complete, stream or list_models", spec.Call)
	}
	cancel() // a hanging upstream handler may go now

	got := up.requests()
	if len(got) != 1 {
		t.Fatalf("the adapter sent %d requests upstream, want 1", len(got))
	}
	checkGolden(t, filepath.Join(dir, "request.json"), got[0])
	checkGolden(t, filepath.Join(dir, "golden.json"), out)
}

func newAdapter(provider string, spec caseSpec, baseURL string, client *http.Client) (gateway.Provider, error) {
	name := spec.Adapter.Name
	if name == "" {
		name = provider
	}
	key := "test-" + provider + "-key"
	if spec.Adapter.Key != nil {
		key = *spec.Adapter.Key
	}
	switch provider {
	case "openai":
		kind := spec.Adapter.Kind
		if kind == "" {
			kind = "openai"
		}
		// OpenAI's base URL carries the version: https://api.openai.com/v1.
		return openai.New(name, kind, baseURL+"/v1", key, client), nil
	case "anthropic":
		if spec.Adapter.Kind != "" {
			return nil, fmt.Errorf("case.json: adapter.kind is for the openai adapter")
		}
		// Anthropic's base URL has no version: https://api.anthropic.com.
		return anthropic.New(name, baseURL, key, client), nil
	}
	return nil, fmt.Errorf("no adapter for provider directory %q", provider)
}

func describeError(err error, scrub func(string) string) *goldenError {
	if err == nil {
		return nil
	}
	g := &goldenError{GoType: fmt.Sprintf("%T", err)}
	var ue *gateway.UpstreamError
	if !errors.As(err, &ue) {
		g.Text = scrub(err.Error())
		return g
	}
	g.Provider, g.Status, g.Type, g.Message, g.RetryAfter, g.Timeout = ue.Provider, ue.Status, ue.Type, ue.Message, ue.RetryAfter, ue.Timeout
	g.Retryable, g.Public = ue.Retryable(), ue.Public()
	if c := ue.Unwrap(); c != nil {
		g.Cause = scrub(c.Error())
	}
	return g
}

// upstream replays one recorded answer and captures what it was asked.
type upstream struct {
	status  int
	header  http.Header
	body    []byte
	hang    string
	cut     bool
	release chan struct{}

	mu  sync.Mutex
	got []wireRequest
}

// parseUpstream reads upstream.http: a status line, headers, a blank line
// and the body up to the end of the file.
func parseUpstream(b []byte) (*upstream, error) {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(b)), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	h := resp.Header.Clone()
	for _, k := range []string{"Content-Length", "Transfer-Encoding", "Connection"} {
		h.Del(k) // the replay server frames the body itself
	}
	return &upstream{status: resp.StatusCode, header: h, body: body}, nil
}

func (u *upstream) requests() []wireRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]wireRequest(nil), u.got...)
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	wr := wireRequest{Method: r.Method, Path: r.URL.RequestURI(), Headers: map[string]string{}}
	for _, k := range recordedHeaders {
		if v := r.Header.Values(k); len(v) > 0 {
			wr.Headers[k] = strings.Join(v, ", ")
		}
	}
	if len(body) > 0 {
		if json.Valid(body) {
			wr.Body = body
		} else {
			wr.Body, _ = json.Marshal(string(body))
		}
	}
	u.mu.Lock()
	u.got = append(u.got, wr)
	u.mu.Unlock()

	wait := func() {
		select {
		case <-r.Context().Done():
		case <-u.release:
		}
	}
	if u.hang == "before_headers" {
		wait()
		return
	}
	for k, v := range u.header {
		w.Header()[k] = v
	}
	w.WriteHeader(u.status)
	flusher, _ := w.(http.Flusher)
	if strings.HasPrefix(u.header.Get("Content-Type"), "text/event-stream") {
		// One write and flush per event, as a provider sends them, so the
		// adapter reads events across separate network reads.
		rest := u.body
		for len(rest) > 0 {
			n := bytes.Index(rest, []byte("\n\n"))
			if n < 0 {
				n = len(rest)
			} else {
				n += 2
			}
			if _, err := w.Write(rest[:n]); err != nil {
				return
			}
			flusher.Flush()
			rest = rest[n:]
		}
	} else if _, err := w.Write(u.body); err != nil {
		return
	}
	switch {
	case u.hang == "after_body":
		flusher.Flush()
		wait()
	case u.cut:
		flusher.Flush()
		panic(http.ErrAbortHandler) // closes the connection mid-body
	}
}

// checkGolden compares v, as indented JSON, with the file; with -update it
// writes the file instead.
func checkGolden(t *testing.T, file string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	want, err := os.ReadFile(file)
	if *update {
		if err != nil || !bytes.Equal(want, got) {
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("updated %s", file)
		}
		return
	}
	if errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is missing; write it with: go test ./gateway -run 'TestGoldenWire/%s' -update", file, caseName(file))
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(w, g) {
		return
	}
	t.Errorf("%s does not match what the adapter does now (- recorded, + now):\n%s\nIf the change is intended, rewrite the recordings: go test ./gateway -run 'TestGoldenWire/%s' -update",
		file, lineDiff(canonical(w), canonical(g)), caseName(file))
}

// caseName is the -run pattern of the case whose file this is.
func caseName(file string) string {
	dir := filepath.Dir(file)
	return "^" + filepath.Base(filepath.Dir(dir)) + "$/^" + filepath.Base(dir) + "$"
}

// canonical is v as indented JSON with sorted keys, so that a diff shows
// only what differs.
func canonical(v any) []string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return strings.Split(string(b), "\n")
}

// lineDiff is a minimal line diff (longest common subsequence) with three
// lines of context around each change.
func lineDiff(a, b []string) string {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var lines []line
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			lines = append(lines, line{' ', a[i]})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			lines = append(lines, line{'-', a[i]})
			i++
		default:
			lines = append(lines, line{'+', b[j]})
			j++
		}
	}
	const context = 3
	show := make([]bool, len(lines))
	for k, l := range lines {
		if l.op != ' ' {
			for c := max(0, k-context); c <= min(len(lines)-1, k+context); c++ {
				show[c] = true
			}
		}
	}
	var sb strings.Builder
	skipped := false
	for k, l := range lines {
		if !show[k] {
			skipped = true
			continue
		}
		if skipped {
			sb.WriteString("  ...\n")
			skipped = false
		}
		fmt.Fprintf(&sb, "%c %s\n", l.op, l.text)
	}
	return sb.String()
}

// TestGoldenWireLayout keeps testdata/gateway tidy: every case directory has
// its four files and nothing else, so a stray or misnamed file is noticed.
func TestGoldenWireLayout(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(goldenRoot, "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"case.json", "golden.json", "request.json", "upstream.http"}
	for _, dir := range dirs {
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() {
			t.Errorf("%s: not a case directory", dir)
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		if !reflect.DeepEqual(names, want) {
			t.Errorf("%s holds %v, want %v", dir, names, want)
		}
	}
}
