// Package upstreamtest is what the adapters' tests share: an upstream for
// their fuzz tests, and readers of their streams.
package upstreamtest

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/gateway"
)

// Upstream answers every request with one status and body. "$N" in the
// body becomes the request's number, so that a fuzzed model list can page
// on with a fresh cursor.
type Upstream struct {
	mu     sync.Mutex
	status int
	body   []byte
	served [][]byte // the bodies sent since the last reset, in order
}

// Reset sets the answer and forgets the bodies served.
func (u *Upstream) Reset(status int, body []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.status, u.body, u.served = status, body, nil
}

// Bodies are the bodies served since the last Reset.
func (u *Upstream) Bodies() [][]byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.served)
}

func (u *Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	status := u.status
	body := bytes.ReplaceAll(u.body, []byte("$N"), []byte(strconv.Itoa(len(u.served))))
	if status == http.StatusNoContent || status == http.StatusNotModified {
		body = nil // these carry no body; net/http drops it
	}
	u.served = append(u.served, body) // before answering: the client may ask again at once
	u.mu.Unlock()
	// An event stream's body says so, as a provider's does: a streamed
	// call's JSON answer is read as a document, not as events.
	ct := "application/json"
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] != '{' && t[0] != '[' {
		ct = "text/event-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	w.Write(body)
}

// Within fails the test when call has not returned after d: a decoder that
// loops on some input must fail the fuzzer, not hang it.
func Within(t *testing.T, d time.Duration, call func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		call()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("the call has not returned after %v", d)
	}
}

// Drain reads a stream to its end: its deltas, and the error that ended it
// (nil at io.EOF).
func Drain(t *testing.T, st gateway.Stream) (ds []gateway.Delta, err error) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		d, err := st.Next()
		if errors.Is(err, io.EOF) {
			return ds, nil
		}
		if err != nil {
			return ds, err
		}
		if d.KeepAlive {
			continue // the Upstream reading a stream takes these itself
		}
		ds = append(ds, d)
	}
	t.Fatal("the stream did not end")
	return nil, nil
}

// Ends reads a stream parsing n bytes of arbitrary input and fails the test
// if it yields more deltas than the input could hold: a parser must end
// (EOF or an error), whatever it reads.
func Ends(t *testing.T, st gateway.Stream, n int) {
	t.Helper()
	for i := 0; ; i++ {
		if i > n+2 {
			t.Fatal("the parser did not end")
		}
		if _, err := st.Next(); err != nil {
			return
		}
	}
}
