package http

import (
	"encoding/json"
	"errors"
	"net/http"
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
	// Set's names, already canonical: no canonicalizing on every stream.
	h["Content-Type"], h["Cache-Control"] = []string{"text/event-stream"}, []string{"no-cache"}
	h["Connection"], h["X-Accel-Buffering"] = []string{"keep-alive"}, []string{"no"}
	// Chunked even when the whole stream is written before the handler
	// returns (net/http would give it a Content-Length): so the stream's
	// start need not be flushed on its own, and its end leaves in one
	// write with the body's last chunk. HTTP/1.0 and HTTP/2 drop it.
	h["Transfer-Encoding"] = []string{"chunked"}
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, f: f, buf: make([]byte, 0, 512)}, nil
}

// event writes a named event (Anthropic style).
func (s *sseWriter) event(name string, v any) error {
	s.buf = append(append(append(s.buf[:0], "event: "...), name...), "\ndata: "...)
	return s.finish(v)
}

// Event is event, for the kinds' stream writers (anthropic.EventWriter).
func (s *sseWriter) Event(name string, v any) error { return s.event(name, v) }

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

// send writes an event with an id and a name; data is JSON text on one
// line.
func (s *sseWriter) send(id, name string, data []byte) error {
	s.buf = append(append(append(s.buf[:0], "id: "...), id...), "\nevent: "...)
	s.buf = append(append(append(s.buf, name...), "\ndata: "...), data...)
	s.buf = append(s.buf, "\n\n"...)
	_, err := s.w.Write(s.buf)
	return err
}

// comment writes a comment line (": text"), which clients ignore: a
// heartbeat.
func (s *sseWriter) comment(text string) error {
	s.buf = append(append(append(s.buf[:0], ": "...), text...), "\n\n"...)
	_, err := s.w.Write(s.buf)
	return err
}
