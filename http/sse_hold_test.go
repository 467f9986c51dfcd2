package http_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A model stream's headers wait for its first event, to leave with it, but
// not for long: an upstream that answers its headers and then thinks
// before its first event has its client hear the headers while it thinks.
func TestStreamHeadersLeaveWhileTheModelThinks(t *testing.T) {
	release, stop := make(chan struct{}), make(chan struct{})
	// thinks answers its headers, then waits for the test before its
	// first event.
	thinks := func(w http.ResponseWriter, r *http.Request) bool {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-release:
			return true
		case <-stop: // the test failed: its servers must close
			return false
		}
	}
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !thinks(w, r) {
			return
		}
		sse(w, "", `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`)
		sse(w, "", `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		sse(w, "", `[DONE]`)
	}))
	an := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !thinks(w, r) {
			return
		}
		anthropicMessageStart(w)
		anthropicSaysHi(w)
	}))
	t.Cleanup(func() { oa.Close(); an.Close() })
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": oa.URL + "/v1", "OPENAI_API_KEY": "k",
		"ANTHROPIC_BASE_URL": an.URL, "ANTHROPIC_API_KEY": "k"}))
	t.Cleanup(func() { close(stop) }) // first of the cleanups
	for _, tc := range []struct{ path, body, last string }{
		{"/v1/chat/completions", `{"model":"openai:gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "[DONE]"},
		{"/v1/messages", `{"model":"anthropic:claude-haiku-4-5","max_tokens":20,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, `{"type":"message_stop"}`},
	} {
		req, _ := http.NewRequest("POST", e.srv.URL+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer "+e.tenantA)
		got := make(chan *http.Response, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				close(got)
				return
			}
			got <- resp
		}()
		var resp *http.Response
		select {
		case resp = <-got:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no headers while the upstream holds its first event", tc.path)
		}
		if resp == nil {
			t.FailNow()
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%s: %s %v", tc.path, resp.Status, resp.Header)
		}
		release <- struct{}{}
		evs := sseEvents(t, resp.Body)
		resp.Body.Close()
		if len(evs) == 0 || evs[len(evs)-1][1] != tc.last {
			t.Fatalf("%s: the stream ends with %v", tc.path, evs)
		}
	}
}
