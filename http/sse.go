package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/batonhq/baton/gateway"
)

// sseWriter writes server-sent events and flushes each one.
type sseWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

var errNoFlush = errors.New("streaming unsupported by this connection")

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
	f.Flush()
	return &sseWriter{w: w, f: f}, nil
}

// event writes a named event (Anthropic style).
func (s *sseWriter) event(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return err
	}
	s.f.Flush()
	return nil
}

// data writes an unnamed event (OpenAI style).
func (s *sseWriter) data(v any) error {
	var b []byte
	if raw, ok := v.(string); ok {
		b = []byte(raw)
	} else {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", b); err != nil {
		return err
	}
	s.f.Flush()
	return nil
}

// pumped is one delta read from an upstream stream.
type pumped struct {
	d   gateway.Delta
	err error
}

// pump reads the upstream stream on its own goroutine, so the handler can
// send pings while it waits. The goroutine ends when the stream ends or
// fails, or when ctx ends (the caller then closes the stream, which unblocks
// a pending read); done is closed when it has returned.
func pump(ctx context.Context, st gateway.Stream) (<-chan pumped, <-chan struct{}) {
	ch := make(chan pumped)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			d, err := st.Next()
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
