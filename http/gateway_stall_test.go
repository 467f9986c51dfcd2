package http_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/gateway"
	batonhttp "github.com/batonhq/baton/http"
)

// An upstream that sends one token and then nothing, with the connection
// open, is given up after StreamIdle: the client's stream ends with the
// stream's error (Anthropic's error event; for chat completions an error
// chunk, no [DONE]), the call is billed for what was sent and its budget
// hold is released. Before anything was sent, the next model of the chain
// takes over.
func TestStalledUpstreamIsGivenUp(t *testing.T) {
	envStreamIdle = 300 * time.Millisecond
	t.Cleanup(func() { envStreamIdle = 0 })
	stall := func(w http.ResponseWriter, r *http.Request, first func()) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		first()
		w.(http.Flusher).Flush()
		<-r.Context().Done() // until Baton gives up
	}
	an := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stall(w, r, func() {
			sse(w, "message_start", `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":10,"output_tokens":1}}}`)
			sse(w, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
			sse(w, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`)
		})
	}))
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stall(w, r, func() { sse(w, "", `{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`) })
	}))
	t.Cleanup(func() { an.CloseClientConnections(); oa.CloseClientConnections(); an.Close(); oa.Close() })
	vars := map[string]string{"OPENAI_BASE_URL": oa.URL + "/v1", "OPENAI_API_KEY": "k", "ANTHROPIC_BASE_URL": an.URL, "ANTHROPIC_API_KEY": "k"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, cat)
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 100}), 200)
	for _, tc := range []struct{ path, model, last string }{
		{"/v1/messages", "anthropic:claude-haiku-4-5", `"type":"error"`},
		{"/v1/chat/completions", "openai:gpt-4o-mini", `"error"`},
	} {
		body, _ := json.Marshal(map[string]any{"model": tc.model, "max_tokens": 50, "stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
		req, _ := http.NewRequest("POST", e.srv.URL+tc.path, strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+e.tenantA)
		client := &http.Client{Timeout: 30 * time.Second} // far beyond StreamIdle: Baton must end the stream, not the client
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if l := sc.Text(); l != "" {
				lines = append(lines, l)
			}
		}
		resp.Body.Close()
		if sc.Err() != nil || len(lines) == 0 {
			t.Fatalf("%s: the stream did not end by itself: %v, %q", tc.path, sc.Err(), lines)
		}
		all := strings.Join(lines, "\n")
		if last := lines[len(lines)-1]; !strings.Contains(last, tc.last) || !strings.Contains(last, "sent nothing for") || strings.Contains(all, "[DONE]") {
			t.Fatalf("%s: the stream ended with %q", tc.path, last)
		}
	}
	for _, ev := range e.usageEvents("a", 2) {
		var u gateway.UsageRecord
		if err := json.Unmarshal(ev.Data, &u); err != nil || u.Usage.OutputTokens == 0 {
			t.Fatalf("usage of a stalled stream: %s (%v)", ev.Data, err)
		}
	}
	if held := e.budgets.Status("a").ReservedUSD; held != 0 {
		t.Fatalf("%g USD still held after both streams ended", held)
	}
}

// A client that leaves before the upstream has answered its headers is
// recorded as client_gone, not as an upstream error.
func TestClientGoneBeforeUpstreamHeaders(t *testing.T) {
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // (the server notices a closed connection only once the body is read)
		<-r.Context().Done()        // no headers until the call is given up
	}))
	t.Cleanup(func() { oa.CloseClientConnections(); oa.Close() })
	e := newOpenAIEnv(t, oa)
	body, _ := json.Marshal(map[string]any{"model": "openai:gpt-4o-mini", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/v1/chat/completions", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+e.tenantA)
	go func() {
		time.Sleep(200 * time.Millisecond) // the call is waiting on the upstream by then
		cancel()
	}()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	var u gateway.UsageRecord
	if err := json.Unmarshal(e.usageEvents("a", 1)[0].Data, &u); err != nil || u.Outcome != "client_gone" {
		t.Fatalf("recorded %+v (%v)", u, err)
	}
}

// A client that leaves after the upstream opened its stream but before any
// content is billed for its input, as it is when it leaves a moment later:
// the upstream took the prompt and was working on it.
func TestClientGoneBeforeContentBillsTheInput(t *testing.T) {
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // thinking, until the call is given up
	}))
	t.Cleanup(func() { oa.CloseClientConnections(); oa.Close() })
	e := newOpenAIEnv(t, oa)
	body, _ := json.Marshal(map[string]any{"model": "openai:gpt-4o-mini", "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": strings.Repeat("a long prompt ", 200)}}})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/v1/chat/completions", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+e.tenantA)
	go func() {
		time.Sleep(300 * time.Millisecond) // the stream is open and silent by then
		cancel()
	}()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	var u gateway.UsageRecord
	if err := json.Unmarshal(e.usageEvents("a", 1)[0].Data, &u); err != nil || u.Outcome != "client_gone" ||
		u.Usage.InputTokens < 100 || u.CostUSD == nil || *u.CostUSD <= 0 {
		t.Fatalf("recorded %+v (%v)", u, err)
	}
}

// A stream is sent as one even when the whole answer is ready at once (the
// local model): chunked, no Content-Length.
func TestShortStreamsHaveNoContentLength(t *testing.T) {
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, cat)
	for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
		body, _ := json.Marshal(map[string]any{"model": "local:echo", "max_tokens": 20, "stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
		req, _ := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+e.tenantA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.ContentLength != -1 || resp.Header.Get("Content-Type") != "text/event-stream" || len(b) == 0 {
			t.Fatalf("%s: Content-Length %d, Content-Type %q, %d bytes", path, resp.ContentLength, resp.Header.Get("Content-Type"), len(b))
		}
	}
}

// Parallel tool calls whose argument deltas an OpenAI-compatible server
// interleaves reach a messages client as one whole block per call, each
// with its own arguments, in the grammar's order.
func TestInterleavedToolCallsToMessages(t *testing.T) {
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{
			`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"tz\":\"CET\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":9}}`,
			`[DONE]`,
		} {
			sse(w, "", d)
		}
	}))
	t.Cleanup(oa.Close)
	e := newOpenAIEnv(t, oa)
	tool := func(name string) map[string]any {
		return map[string]any{"name": name, "input_schema": map[string]any{"type": "object"}}
	}
	_, evs := e.stream("/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 100, "stream": true,
		"tools": []any{tool("get_weather"), tool("get_time")}, "messages": []any{map[string]any{"role": "user", "content": "weather and time?"}}})
	var names []string
	open := -1
	args := map[int]string{}
	ids := map[int]string{}
	for _, ev := range evs {
		names = append(names, ev[0])
		d := blockEventOf(ev[1])
		switch ev[0] {
		case "content_block_start":
			if open != -1 {
				t.Fatalf("block %d started while %d is open: %v", d.Index, open, names)
			}
			open, ids[d.Index] = d.Index, d.ContentBlock.ID
		case "content_block_delta":
			if d.Index != open {
				t.Fatalf("a delta for block %d while %d is open: %v", d.Index, open, names)
			}
			args[d.Index] += d.Delta.PartialJSON
		case "content_block_stop":
			open = -1
		}
	}
	if ids[0] != "call_a" || ids[1] != "call_b" || args[0] != `{"city":"Paris"}` || args[1] != `{"tz":"CET"}` {
		t.Fatalf("blocks %v, arguments %v\n%v", ids, args, names)
	}
}

// An upstream that answers its headers and then nothing, before any
// content, is given up after StreamIdle and the next model of the chain
// answers the stream.
func TestStalledUpstreamFallsBackBeforeTheFirstByte(t *testing.T) {
	envStreamIdle = 300 * time.Millisecond
	t.Cleanup(func() { envStreamIdle = 0 })
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	good := httptest.NewServer(http.HandlerFunc(answersHiThere))
	t.Cleanup(func() { silent.CloseClientConnections(); silent.Close(); good.Close() })
	e := newEnvWith(t, fallbackCatalog(t, silent.URL, good.URL))
	_, evs := e.stream("/v1/messages", e.tenantA, map[string]any{"model": "stalls:m", "max_tokens": 20, "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if len(evs) == 0 || !strings.Contains(evs[0][1], `"fallbackUsed":true`) || !strings.Contains(evs[0][1], `"model":"answers:m"`) ||
		evs[len(evs)-1][0] != "message_stop" {
		t.Fatalf("events: %v", evs)
	}
	got := strings.Join(usageOutcomes(t, e.usageEvents("a", 2)), "; ")
	if got != "stalls:m upstream_error; answers:m ok" {
		t.Fatalf("usage: %s", got)
	}
}

// An upstream that takes the request and never answers its headers is a
// silence as one that stops mid-stream is: given up after StreamIdle (not
// the transport's ten minutes), and the next model of the chain answers;
// with none after it, the client gets a 504 in its own shape.
func TestUpstreamSilentBeforeItsHeadersFallsBack(t *testing.T) {
	envStreamIdle = 300 * time.Millisecond
	t.Cleanup(func() { envStreamIdle = 0 })
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select { // no headers
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	}))
	good := httptest.NewServer(http.HandlerFunc(answersHiThere))
	t.Cleanup(func() { silent.CloseClientConnections(); silent.Close(); good.Close() })
	e := newEnvWith(t, fallbackCatalog(t, silent.URL, good.URL))
	start := time.Now()
	_, evs := e.stream("/v1/messages", e.tenantA, map[string]any{"model": "stalls:m", "max_tokens": 20, "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if len(evs) == 0 || !strings.Contains(evs[0][1], `"fallbackUsed":true`) || !strings.Contains(evs[0][1], `"model":"answers:m"`) ||
		evs[len(evs)-1][0] != "message_stop" {
		t.Fatalf("events after %v: %v", time.Since(start), evs)
	}
	if got := strings.Join(usageOutcomes(t, e.usageEvents("a", 2)), "; "); got != "stalls:m upstream_error; answers:m ok" {
		t.Fatalf("usage: %s", got)
	}
	// The chain's last model, passed through (answered as soon as its
	// upstream is) and translated alike.
	for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
		start = time.Now()
		body := `{"model":"stalls:m2","max_tokens":20,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
		req, _ := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(body))
		req.Header.Set("x-api-key", e.tenantA)
		resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("%s: %v after %v", path, err, time.Since(start))
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(raw), "sent nothing for") {
			t.Errorf("%s: %d %s, want 504 saying the upstream sent nothing", path, resp.StatusCode, raw)
		}
	}
}

// A streamed message whose upstream pauses mid-stream keeps sending ping
// while it waits, not only the one right after message_start: with the
// interval shortened and the upstream pausing many intervals before each
// word but the first, pings come between the content_block_delta events,
// and the stream still ends with message_delta and message_stop.
func TestMessagesStreamPingsWhileUpstreamPauses(t *testing.T) {
	const every = 20 * time.Millisecond
	t.Cleanup(batonhttp.SetPingEvery(every)) // registered first, so it runs once the front has stopped
	words := []string{"Hel", "lo ", "world"}
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i, word := range words {
			if i > 0 {
				select {
				case <-time.After(20 * every): // the pause: many ping intervals
				case <-r.Context().Done():
					return
				}
			}
			sse(w, "", fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":%q}}]}`, word))
		}
		sse(w, "", `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		sse(w, "", `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3}}`)
		sse(w, "", `[DONE]`)
	}))
	t.Cleanup(func() { oa.CloseClientConnections(); oa.Close() })
	e := newOpenAIEnv(t, oa)
	_, evs := e.stream("/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 50, "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	var names, grammar []string // every event; the events but pings
	var text string
	pings := 0         // pings since the last content_block_delta
	deltas := 0        // content_block_delta events so far
	pingedBetween := 0 // gaps between two deltas that had a ping
	for _, ev := range evs {
		names = append(names, ev[0])
		switch ev[0] {
		case "ping":
			if ev[1] != `{"type":"ping"}` {
				t.Fatalf("ping %s", ev[1])
			}
			pings++
			continue
		case "content_block_delta":
			if deltas > 0 && pings > 0 {
				pingedBetween++
			}
			deltas++
			pings = 0
			var d struct {
				Delta struct{ Text string } `json:"delta"`
			}
			json.Unmarshal([]byte(ev[1]), &d)
			text += d.Delta.Text
		}
		grammar = append(grammar, ev[0])
	}
	if len(names) < 2 || names[0] != "message_start" || names[1] != "ping" {
		t.Fatalf("the stream does not open with message_start and ping: %v", names)
	}
	if got := strings.Join(grammar, " "); got != "message_start content_block_start content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop" {
		t.Fatalf("events but pings: %s\nall: %v", got, names)
	}
	if text != strings.Join(words, "") {
		t.Fatalf("text %q", text)
	}
	if pingedBetween != len(words)-1 {
		t.Fatalf("%d of the %d pauses between content_block_delta events had a ping: %v", pingedBetween, len(words)-1, names)
	}
	if n := len(names); names[n-2] != "message_delta" || names[n-1] != "message_stop" {
		t.Fatalf("the stream ends with %v", names[n-2:])
	}
}

// newOpenAIEnv is a test front whose OpenAI provider is the server oa.
func newOpenAIEnv(t *testing.T, oa *httptest.Server) *env {
	t.Helper()
	vars := map[string]string{"OPENAI_BASE_URL": oa.URL + "/v1", "OPENAI_API_KEY": "k"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, cat)
}

// answersHiThere is an OpenAI-compatible stream that answers at once.
func answersHiThere(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	sse(w, "", `{"choices":[{"index":0,"delta":{"role":"assistant","content":"hi there"}}]}`)
	sse(w, "", `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	sse(w, "", `[DONE]`)
}

// fallbackCatalog has stalls:m, falling back to answers:m, two
// OpenAI-compatible servers.
func fallbackCatalog(t *testing.T, stalls, answers string) *gateway.Catalog {
	t.Helper()
	price := map[string]any{"inputPerMTok": 1, "outputPerMTok": 2, "source": "test"}
	file := map[string]any{"providers": []any{
		map[string]any{"name": "stalls", "kind": "openai-compatible", "baseUrl": stalls + "/v1",
			"models": []any{map[string]any{"name": "m", "pricing": price, "fallbacks": []string{"answers:m"}},
				map[string]any{"name": "m2", "pricing": price}}},
		map[string]any{"name": "answers", "kind": "openai-compatible", "baseUrl": answers + "/v1",
			"models": []any{map[string]any{"name": "m", "pricing": price}}},
	}}
	path := filepath.Join(t.TempDir(), "providers.json")
	b, _ := json.Marshal(file)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }, ProvidersFile: path})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// A chat completions stream has no ping, so it is read on the handler's
// goroutine and answers nothing before the first content, however long
// the model is silent: an upstream that sends its role, stays silent for
// many ping intervals and then breaks still hands over to the next model.
// A streamed message, which pings, commits after one interval, so the
// same break reaches its client as the stream's error.
func TestSilentStreamFallsBackUntilItsFirstContent(t *testing.T) {
	const every = 20 * time.Millisecond
	t.Cleanup(batonhttp.SetPingEvery(every))
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "", `{"choices":[{"index":0,"delta":{"role":"assistant"}}]}`)
		w.(http.Flusher).Flush()
		time.Sleep(10 * every)
		panic(http.ErrAbortHandler) // the connection breaks, the answer unfinished
	}))
	good := httptest.NewServer(http.HandlerFunc(answersHiThere))
	t.Cleanup(func() { slow.Close(); good.Close() })
	e := newEnvWith(t, fallbackCatalog(t, slow.URL, good.URL))
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}

	_, evs := e.stream("/v1/chat/completions", e.tenantA, map[string]any{"model": "stalls:m", "stream": true, "messages": msgs})
	if len(evs) == 0 || !strings.Contains(evs[0][1], `"fallbackUsed":true`) || !strings.Contains(evs[0][1], `"selectedModel":"answers:m"`) ||
		evs[len(evs)-1][1] != "[DONE]" {
		t.Fatalf("chat events: %v", evs)
	}
	if got := strings.Join(usageOutcomes(t, e.usageEvents("a", 2)), "; "); got != "stalls:m upstream_error; answers:m ok" {
		t.Fatalf("chat usage: %s", got)
	}

	_, evs = e.stream("/v1/messages", e.tenantA, map[string]any{"model": "stalls:m", "max_tokens": 20, "stream": true, "messages": msgs})
	if len(evs) == 0 || evs[len(evs)-1][0] != "error" || strings.Contains(evs[0][1], "answers:m") {
		t.Fatalf("message events: %v", evs)
	}
}

// A passed-through Anthropic stream whose upstream is silent after its
// headers keeps the connection alive with SSE comments until the
// upstream's message_start, as Anthropic's grammar opens with it; after
// it, the keep-alive is Anthropic's own ping event.
func TestPassthroughSilentStartKeepsGrammar(t *testing.T) {
	const every = 20 * time.Millisecond
	t.Cleanup(batonhttp.SetPingEvery(every))
	an := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		pause := func() bool {
			select {
			case <-time.After(10 * every):
				return true
			case <-r.Context().Done():
				return false
			}
		}
		if !pause() {
			return
		}
		anthropicMessageStart(w)
		if !pause() {
			return
		}
		anthropicSaysHi(w)
	}))
	t.Cleanup(func() { an.CloseClientConnections(); an.Close() })
	e := newEnvWith(t, catalogWith(t, map[string]string{"ANTHROPIC_BASE_URL": an.URL, "ANTHROPIC_API_KEY": "k"}))
	b, _ := json.Marshal(map[string]any{"model": "anthropic:claude-haiku-4-5", "max_tokens": 20, "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/messages", strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+e.tenantA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var seen []string // "comment" or the event's name, in order
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ":"):
			seen = append(seen, "comment")
		case strings.HasPrefix(line, "event: "):
			seen = append(seen, strings.TrimPrefix(line, "event: "))
		}
	}
	start := slices.Index(seen, "message_start")
	if start < 1 || slices.Contains(seen[:start], "ping") || !slices.Contains(seen[:start], "comment") {
		t.Fatalf("before message_start want comments only, at least one: %v", seen)
	}
	if !slices.Contains(seen[start:], "ping") || slices.Contains(seen[start:], "comment") || seen[len(seen)-1] != "message_stop" {
		t.Fatalf("after message_start want ping events, no comments, and message_stop last: %v", seen)
	}
}

// A client that stops reading a model stream does not hold it: once it
// has taken nothing for the write stall, the stream ends, its upstream
// request is cancelled and the call is billed as client_gone. (Every
// model stream gets the bound where it starts, openStream; a passed-through
// one is tried here, as its bytes need not be text Baton counts.)
func TestModelStreamEndsWhenClientStopsReading(t *testing.T) {
	t.Cleanup(batonhttp.SetModelWriteStall(300 * time.Millisecond))
	cancelled := make(chan struct{}, 2)
	// The bytes in a field Baton passes on and does not read: the call is
	// billed on Baton's count of the text it sent (the upstream reports no
	// usage), which megabytes of text would make seconds of tokenizing.
	delta := fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":"x"}}],"padding":%q}`, strings.Repeat("p", 32<<10))
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for sent := 0; sent < 256<<20; sent += len(delta) { // far beyond any socket buffers
			if _, err := fmt.Fprintf(w, "data: %s\n\n", delta); err != nil {
				break
			}
			w.(http.Flusher).Flush()
			if r.Context().Err() != nil {
				break
			}
		}
		<-r.Context().Done()
		cancelled <- struct{}{}
	}))
	t.Cleanup(func() { oa.CloseClientConnections(); oa.Close() })
	e := newOpenAIEnv(t, oa)
	for i, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"openai:gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() }) // before the servers close, on failure too
		conn.(*net.TCPConn).SetReadBuffer(4096)
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", c.path, e.tenantA, len(c.body), c.body)
		// Read nothing: the upstream's request must end while the
		// connection stays open.
		select {
		case <-cancelled:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: the upstream request is still open 20 s after the client stopped reading", c.path)
		}
		// Billed once Baton has counted the megabytes it sent (seconds
		// under the race detector).
		var got []string
		for deadline := time.Now().Add(60 * time.Second); len(got) <= i && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			evs, err := gateway.ReadUsage(t.Context(), e.store, "a", 10)
			if err != nil {
				t.Fatal(err)
			}
			got = usageOutcomes(t, evs)
		}
		if len(got) != i+1 || got[i] != "openai:gpt-4o-mini client_gone" {
			t.Fatalf("%s: usage %v", c.path, got)
		}
	}
}

// The stall bound is on the client, not the upstream: a client that reads
// on gets the whole stream however long the upstream is silent between
// events (within the idle limit), a large event after the silence too.
func TestModelStreamSurvivesUpstreamSilence(t *testing.T) {
	t.Cleanup(batonhttp.SetModelWriteStall(200 * time.Millisecond))
	big := strings.Repeat("y", 48<<10) // beyond the connection's buffers, within the test's line reader
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "", `{"choices":[{"index":0,"delta":{"content":"a"}}]}`)
		select {
		case <-time.After(time.Second): // five stall bounds
		case <-r.Context().Done():
			return
		}
		sse(w, "", fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":%q}}]}`, big))
		sse(w, "", `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		sse(w, "", `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3}}`)
		sse(w, "", `[DONE]`)
	}))
	t.Cleanup(func() { oa.CloseClientConnections(); oa.Close() })
	e := newOpenAIEnv(t, oa)
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"openai:gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/messages", `{"model":"openai:gpt-4o-mini","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		var body map[string]any
		json.Unmarshal([]byte(c.body), &body)
		_, evs := e.stream(c.path, e.tenantA, body)
		var all strings.Builder
		for _, ev := range evs {
			all.WriteString(ev[1])
		}
		last := evs[len(evs)-1]
		if !strings.Contains(all.String(), big) || (last[1] != "[DONE]" && last[0] != "message_stop") {
			t.Fatalf("%s: %d events, the last %.100v", c.path, len(evs), last)
		}
	}
}

// The chain's last model, passed through, has nothing to fall back to,
// so its stream is answered from the upstream's first event (the role
// chunk, Anthropic's message_start), as the provider would answer it, and
// not held until content: the client has the headers and that event while
// the upstream still waits. With a ping (messages) and without (chat
// completions). After that, a break is told in the stream.
func TestLastModelStreamAnswersFromItsFirstEvent(t *testing.T) {
	type upstream struct {
		release chan struct{}
		waited  chan bool // true: released by the test, false: gave up waiting
		breaks  bool      // break the connection instead of answering content
	}
	var cur *upstream
	hold := func(w http.ResponseWriter, r *http.Request) bool {
		cur := cur // this subtest's: the next one sets cur once it has read waited
		w.(http.Flusher).Flush()
		select {
		case <-cur.release:
			cur.waited <- true
		case <-time.After(10 * time.Second):
			cur.waited <- false
		case <-r.Context().Done():
			cur.waited <- false
			return false
		}
		if cur.breaks {
			panic(http.ErrAbortHandler)
		}
		return true
	}
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "", `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
		if !hold(w, r) {
			return
		}
		sse(w, "", `{"choices":[{"index":0,"delta":{"content":"hi"}}]}`)
		sse(w, "", `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		sse(w, "", `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1}}`)
		sse(w, "", `[DONE]`)
	}))
	an := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		anthropicMessageStart(w)
		if !hold(w, r) {
			return
		}
		anthropicSaysHi(w)
	}))
	t.Cleanup(func() { oa.CloseClientConnections(); oa.Close(); an.CloseClientConnections(); an.Close() })
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": oa.URL + "/v1", "OPENAI_API_KEY": "k",
		"ANTHROPIC_BASE_URL": an.URL, "ANTHROPIC_API_KEY": "k"}))
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	cases := []struct {
		name, path, model, first, last string
		breaks                         bool
	}{
		{"chat passed through", "/v1/chat/completions", "openai:gpt-4o-mini", `"role":"assistant"`, "[DONE]", false},
		{"messages passed through", "/v1/messages", "anthropic:claude-haiku-4-5", `"type":"message_start"`, `{"type":"message_stop"}`, false},
		{"chat passed through, breaks", "/v1/chat/completions", "openai:gpt-4o-mini", `"role":"assistant"`, "error", true},
		{"messages passed through, breaks", "/v1/messages", "anthropic:claude-haiku-4-5", `"type":"message_start"`, "error", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cur = &upstream{release: make(chan struct{}), waited: make(chan bool, 1), breaks: tc.breaks}
			b, _ := json.Marshal(map[string]any{"model": tc.model, "max_tokens": 20, "stream": true, "messages": msgs})
			req, _ := http.NewRequest("POST", e.srv.URL+tc.path, strings.NewReader(string(b)))
			req.Header.Set("Authorization", "Bearer "+e.tenantA)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() { // the first event, while the upstream still holds
				if line := sc.Text(); strings.HasPrefix(line, "data: ") {
					if !strings.Contains(line, tc.first) {
						t.Fatalf("first event %s", line)
					}
					break
				}
			}
			close(cur.release)
			if !<-cur.waited {
				t.Fatal("the upstream gave up waiting: nothing reached the client before its content")
			}
			var last string
			for sc.Scan() {
				if line := sc.Text(); strings.HasPrefix(line, "data: ") {
					last = strings.TrimPrefix(line, "data: ")
				}
			}
			if tc.breaks {
				if !strings.Contains(last, `"error"`) {
					t.Fatalf("a break after the first event ends with %s, not an error", last)
				}
			} else if last != tc.last {
				t.Fatalf("the stream ends with %s", last)
			}
		})
	}
}

// The chain's last model is answered before its first content; when its
// upstream then fails before any content (an error as its first event, an
// empty body, a break after message_start), nothing of the answer was sent:
// the attempt is an upstream_error billed on the input the upstream told
// (nothing, or message_start's), as before the early answer and as for a
// model that fails first and falls back, not a partial answer billed on
// Baton's estimate of the prompt.
func TestLastModelFailingBeforeContentIsAnUpstreamError(t *testing.T) {
	var scenario atomic.Value
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if scenario.Load() == "error" {
			sse(w, "", `{"error":{"type":"server_error","message":"boom"}}`)
		} // else an empty body
	}))
	an := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		anthropicMessageStart(w)
		sse(w, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	}))
	t.Cleanup(func() { oa.Close(); an.Close() })
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": oa.URL + "/v1", "OPENAI_API_KEY": "k",
		"ANTHROPIC_BASE_URL": an.URL, "ANTHROPIC_API_KEY": "k"}))
	msgs := []any{map[string]any{"role": "user", "content": strings.Repeat("a long prompt ", 50)}}
	// Passed through, the client gets the provider's own stream, error and
	// all (200), once any of it has been written; before, as translated, an
	// error status in its own format, which its SDK retries (503 for
	// Anthropic's overload, 502 for a broken stream). message_start's
	// output count is a placeholder: no output is billed.
	cases := []struct {
		name, scenario, path, model string
		in, out, status             int
	}{
		{"chat passed through, error first", "error", "/v1/chat/completions", "openai:gpt-4o-mini", 0, 0, 502},
		{"chat passed through, empty body", "empty", "/v1/chat/completions", "openai:gpt-4o-mini", 0, 0, 502},
		{"messages translated, error first", "error", "/v1/messages", "openai:gpt-4o-mini", 0, 0, 502},
		{"responses passed through, empty body", "empty", "/v1/responses", "openai:gpt-4o-mini", 0, 0, 502},
		{"messages passed through, error after message_start", "", "/v1/messages", "anthropic:claude-haiku-4-5", 5, 0, 200},
		{"chat translated, error after message_start", "", "/v1/chat/completions", "anthropic:claude-haiku-4-5", 5, 0, 503},
		{"responses translated, error after message_start", "", "/v1/responses", "anthropic:claude-haiku-4-5", 5, 0, 503},
	}
	for i, tc := range cases {
		scenario.Store(tc.scenario)
		body := map[string]any{"model": tc.model, "max_tokens": 20, "stream": true, "messages": msgs}
		if tc.path == "/v1/responses" {
			body = map[string]any{"model": tc.model, "stream": true, "input": "hi"}
		}
		resp, evs := e.stream(tc.path, e.tenantA, body)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d (%v)", tc.name, resp.StatusCode, tc.status, evs)
		}
		if resp.StatusCode == 200 && (len(evs) == 0 || !strings.Contains(evs[len(evs)-1][1], `"error"`)) {
			t.Fatalf("%s: the stream ends with %v, not an error", tc.name, evs)
		}
		var u gateway.UsageRecord
		if err := json.Unmarshal(e.usageEvents("a", i+1)[i].Data, &u); err != nil {
			t.Fatal(err)
		}
		if u.Outcome != "upstream_error" || u.Usage.InputTokens != tc.in || u.Usage.OutputTokens != tc.out || u.Usage.Estimated {
			t.Errorf("%s: recorded %s %+v, want upstream_error on %d in, %d out", tc.name, u.Outcome, u.Usage, tc.in, tc.out)
		}
	}
}

// anthropicMessageStart is an Anthropic stream's opening event (5 input
// tokens told), and anthropicSaysHi the rest of an answer of "hi".
func anthropicMessageStart(w http.ResponseWriter) {
	sse(w, "message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}`)
}

func anthropicSaysHi(w http.ResponseWriter) {
	sse(w, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	sse(w, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`)
	sse(w, "content_block_stop", `{"type":"content_block_stop","index":0}`)
	sse(w, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`)
	sse(w, "message_stop", `{"type":"message_stop"}`)
}

// A client that stops reading a large whole answer does not hold it: the
// answer is written under a deadline (the write stall a started MiB), and
// then the connection is closed. It was held, with its buffer, until the
// client read again.
func TestWholeAnswerEndsWhenClientStopsReading(t *testing.T) {
	t.Cleanup(batonhttp.SetModelWriteStall(100 * time.Millisecond))
	answer := fmt.Sprintf(`{"id":"c","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1},"padding":%q}`,
		strings.Repeat("p", 24<<20)) // far beyond any socket buffers
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	t.Cleanup(func() { oa.CloseClientConnections(); oa.Close() })
	e := newOpenAIEnv(t, oa)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	body := `{"model":"openai:gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", e.tenantA, len(body), body)
	// Once the answer has begun (reading its answer takes Baton a while
	// under the race detector), read nothing for twice its deadline: 25
	// started MiB of 100 ms.
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	first := make([]byte, 64<<10)
	if !readFirst(t, conn, first) {
		return
	}
	time.Sleep(5 * time.Second)
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	n, err := io.Copy(io.Discard, conn)
	n += int64(len(first))
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("after %d bytes: %v (the connection was not closed)", n, err)
	}
	if n >= int64(len(answer)) {
		t.Fatalf("the whole answer (%d bytes) waited for a client that stopped reading", n)
	}
}

// An Anthropic upstream that pings while its model thinks (thinking not
// shown) is there: a translated stream is not given up for silence while
// the pings come, as a passed-through one, which forwards each ping, is
// not. The translated stream took only content as a sign of life, and a
// model thinking past StreamIdle was cut.
func TestPingingUpstreamIsNotSilent(t *testing.T) {
	envStreamIdle = 400 * time.Millisecond
	t.Cleanup(func() { envStreamIdle = 0 })
	an := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "message_start", `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":10,"output_tokens":1}}}`)
		for range 12 { // 1.2 s of pings, three times the idle limit
			time.Sleep(100 * time.Millisecond)
			sse(w, "ping", `{"type":"ping"}`)
		}
		sse(w, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		sse(w, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"thought it over"}}`)
		sse(w, "content_block_stop", `{"type":"content_block_stop","index":0}`)
		sse(w, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}}`)
		sse(w, "message_stop", `{"type":"message_stop"}`)
	}))
	t.Cleanup(an.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"ANTHROPIC_BASE_URL": an.URL, "ANTHROPIC_API_KEY": "k"}))
	for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
		status, msg, raw := postStreamed(t, e, path, "anthropic:claude-haiku-4-5")
		if status != 200 || msg != "" || !strings.Contains(string(raw), "thought it over") {
			t.Errorf("%s: %d %s", path, status, raw)
		}
	}
}
