package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/gateway"
)

// sseWriter writes server-sent events. Each event goes to the connection
// in one write; flush sends what is written. Callers flush when they are
// about to wait (for the upstream, for a ping), so events that are ready
// together leave together, and none waits for later ones.
type sseWriter struct {
	w   http.ResponseWriter
	f   http.Flusher
	buf []byte
}

var errNoFlush = errors.New("streaming unsupported by this connection")

// startSSE sets the headers of an event stream. They leave with the first
// flush.
func startSSE(w http.ResponseWriter) (*sseWriter, error) {
	f, ok := w.(http.Flusher)
	if !ok {
		return nil, errNoFlush
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, f: f, buf: make([]byte, 0, 512)}, nil
}

// event writes a named event (Anthropic style).
func (s *sseWriter) event(name string, v any) error {
	s.buf = append(append(append(s.buf[:0], "event: "...), name...), "\ndata: "...)
	return s.finish(v)
}

// data writes an unnamed event (OpenAI style); a string is sent as it is
// ("[DONE]").
func (s *sseWriter) data(v any) error {
	s.buf = append(s.buf[:0], "data: "...)
	return s.finish(v)
}

func (s *sseWriter) finish(v any) error {
	switch v := v.(type) {
	case string:
		s.buf = append(s.buf, v...)
	case json.RawMessage:
		s.buf = append(s.buf, v...)
	case []byte: // JSON text
		s.buf = append(s.buf, v...)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		s.buf = append(s.buf, b...)
	}
	s.buf = append(s.buf, "\n\n"...)
	_, err := s.w.Write(s.buf)
	return err
}

// flush sends what has been written.
func (s *sseWriter) flush() { s.f.Flush() }

// pumped is one delta read from an upstream stream.
type pumped struct {
	d   gateway.Delta
	err error
}

// pump reads the upstream stream on its own goroutine, so the handler can
// send pings while it waits. The goroutine ends when the stream ends or
// fails, or when ctx ends (the caller then closes the stream, which unblocks
// a pending read); done is closed when it has returned. An upstream that
// sends nothing for idle is given up: cancel (the stream's own context,
// under ctx) ends its read, and the stream fails with a retryable timeout
// of provider.
func pump(ctx context.Context, cancel context.CancelFunc, st gateway.Stream, idle time.Duration, provider string) (<-chan pumped, <-chan struct{}) {
	ch := make(chan pumped, 8) // reads ahead a little: fewer hand-offs between the goroutines
	done := make(chan struct{})
	go func() {
		defer close(done)
		var stalled atomic.Bool
		timer := time.AfterFunc(idle, func() { stalled.Store(true); cancel() })
		defer timer.Stop()
		for {
			d, err := st.Next()
			if stalled.Load() {
				d, err = gateway.Delta{}, &gateway.UpstreamError{Provider: provider, Timeout: true,
					Message: fmt.Sprintf("sent nothing for %v", idle)}
			}
			timer.Reset(idle)
			select {
			case ch <- pumped{d, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch, done
}
