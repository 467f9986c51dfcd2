package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"
)

// sseWriter writes server-sent events. Each event goes to the connection
// in one write; flush sends what is written. Callers flush when they are
// about to wait (for the upstream, for a ping), so events that are ready
// together leave together, and none waits for later ones.
type sseWriter struct {
	w   http.ResponseWriter
	f   http.Flusher
	buf []byte
	// With a stall bound (bound), the connection's write deadline, pushed
	// back before a write or a flush once renew has passed: always at
	// least half the bound ahead of any write.
	rc    *http.ResponseController
	stall time.Duration
	renew time.Time
	// hold, while the headers may still be held (holdHeaders); dropped
	// once they have left, so that later writes take no lock.
	hold *heldHeaders
}

// heldHeaders is a stream's headers held for its first event. mu orders
// the timer, which flushes them on its own goroutine, with the handler's
// writes; the timer reads nothing of the writer once held is false.
type heldHeaders struct {
	mu    sync.Mutex
	held  bool // the headers have not left
	wrote bool // an event was written
	timer *time.Timer
}

var errNoFlush = errors.New("streaming unsupported by this connection")

var (
	sseContentType, sseNoCache = []string{"text/event-stream"}, []string{"no-cache"}
	sseKeepAlive, sseNo        = []string{"keep-alive"}, []string{"no"}
	sseChunked                 = []string{"chunked"}
)

// startSSE sets the headers of an event stream and its 200. They leave
// with the first flush.
func startSSE(w http.ResponseWriter) (*sseWriter, error) {
	s, err := sseHeaders(w)
	if err == nil {
		w.WriteHeader(http.StatusOK)
	}
	return s, err
}

// sseHeaders sets the headers of an event stream without its status: the
// first write or flush sends them with a 200, and until then a model
// stream whose upstream fails can still answer with an error's status
// (claimStatus).
func sseHeaders(w http.ResponseWriter) (*sseWriter, error) {
	f, ok := w.(http.Flusher)
	if !ok {
		return nil, errNoFlush
	}
	h := w.Header()
	// Set's names, already canonical: no canonicalizing on every stream;
	// the values shared by every stream (a header's value slice is only
	// read, or replaced whole, never written in place).
	h["Content-Type"], h["Cache-Control"] = sseContentType, sseNoCache
	h["Connection"], h["X-Accel-Buffering"] = sseKeepAlive, sseNo
	// Chunked even when the whole stream is written before the handler
	// returns (net/http would give it a Content-Length): so the stream's
	// start need not be flushed on its own, and its end leaves in one
	// write with the body's last chunk. HTTP/1.0 and HTTP/2 drop it.
	h["Transfer-Encoding"] = sseChunked
	return &sseWriter{w: w, f: f, buf: make([]byte, 0, 512)}, nil
}

// claimStatus reports whether nothing of the stream has left or been
// written, its headers still held: then it ends the hold and takes the
// stream's headers off, so that the caller answers with a status of its
// own instead of a 200 and an error event.
func (s *sseWriter) claimStatus() bool {
	h := s.holding()
	if h == nil {
		return false
	}
	defer h.mu.Unlock()
	if h.wrote {
		return false
	}
	s.release(h)
	hd := s.w.Header()
	for _, k := range []string{"Content-Type", "Cache-Control", "Connection", "X-Accel-Buffering", "Transfer-Encoding"} {
		delete(hd, k)
	}
	return true
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

// rawData and rawEvent are data and event for JSON text already encoded
// (a passed-through event): typed, so that no event is boxed into an any.
func (s *sseWriter) rawData(b []byte) error {
	s.buf = appendData(append(s.buf[:0], "data: "...), b)
	return s.write()
}

func (s *sseWriter) rawEvent(name string, b []byte) error {
	s.buf = append(append(append(s.buf[:0], "event: "...), name...), "\ndata: "...)
	s.buf = appendData(s.buf, b)
	return s.write()
}

// appendData appends an event's data and the blank line that ends it. An
// upstream may send one event's data on several data lines (the reader
// joins them with newlines): each line goes on a data line of its own, or
// the client would take the second for a field of no name and read half
// the JSON.
func appendData(buf, b []byte) []byte {
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		buf = append(append(buf, b[:i]...), "\ndata: "...)
		b = b[i+1:]
	}
	return append(append(buf, b...), "\n\n"...)
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
	return s.write()
}

// write writes buf. A stall bound's deadline is pushed back before any
// write, not only at a flush: after a long silence of the upstream, an
// event larger than the connection's buffer reaches the socket here.
func (s *sseWriter) write() error {
	if h := s.holding(); h != nil {
		defer h.mu.Unlock()
		h.wrote = true
	}
	s.touch()
	_, err := s.w.Write(s.buf)
	return err
}

func (s *sseWriter) touch() {
	if s.rc != nil {
		if now := time.Now(); now.After(s.renew) {
			s.extend(now)
		}
	}
}

// flush sends what has been written. Held headers with nothing after
// them stay held.
func (s *sseWriter) flush() {
	if h := s.holding(); h != nil {
		defer h.mu.Unlock()
		if !h.wrote {
			return
		}
		s.release(h)
	}
	s.touch()
	s.f.Flush()
}

// holdHeaders keeps the stream's headers until its first event, so that
// both leave in one write, unless no event comes within wait: then the
// headers leave on their own, so that a client hears its call was taken
// while the model thinks. unbound ends the hold. Why: docs/benchmarks.md
// (one write and one wake-up of the client fewer a stream).
func (s *sseWriter) holdHeaders(wait time.Duration) {
	h := &heldHeaders{held: true}
	h.timer = time.AfterFunc(wait, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.held {
			h.held = false
			s.touch()
			s.f.Flush()
		}
	})
	s.hold = h
}

// holding locks the hold and returns it while the headers are held; once
// they have left it drops it and returns nil. The handler's goroutine only.
func (s *sseWriter) holding() *heldHeaders {
	h := s.hold
	if h == nil {
		return nil
	}
	h.mu.Lock()
	if !h.held {
		h.mu.Unlock()
		s.hold = nil
		return nil
	}
	return h
}

// release ends the hold h, locked by holding.
func (s *sseWriter) release(h *heldHeaders) {
	h.held = false
	h.timer.Stop()
	s.hold = nil
}

// bound ends the stream's writes, with an error, once its client has
// taken nothing for between stall/2 and stall: a client that stops
// reading does not hold the call, its upstream and its budget hold for
// ever. unbound must follow, before the connection serves another
// request.
func (s *sseWriter) bound(w http.ResponseWriter, stall time.Duration) {
	s.rc, s.stall = http.NewResponseController(w), stall
	s.extend(time.Now())
}

func (s *sseWriter) extend(now time.Time) {
	if s.rc.SetWriteDeadline(now.Add(s.stall)) != nil {
		s.rc = nil // a connection without deadlines
		return
	}
	s.renew = now.Add(s.stall / 2)
}

// unbound lifts bound's deadline and ends a hold of the headers (which
// then leave with the body's end).
func (s *sseWriter) unbound() {
	if h := s.holding(); h != nil {
		s.release(h)
		h.mu.Unlock()
	}
	if s.rc != nil {
		s.rc.SetWriteDeadline(time.Time{})
	}
}

// send writes an event with an id and a name; data is JSON text on one
// line.
func (s *sseWriter) send(id, name string, data []byte) error {
	s.buf = append(append(append(s.buf[:0], "id: "...), id...), "\nevent: "...)
	s.buf = append(append(append(s.buf, name...), "\ndata: "...), data...)
	s.buf = append(s.buf, "\n\n"...)
	return s.write()
}

// lastID writes an id field alone: a client keeps it as its last event id
// and dispatches no event.
func (s *sseWriter) lastID(id string) error {
	s.buf = append(append(append(s.buf[:0], "id: "...), id...), "\n\n"...)
	return s.write()
}

// comment writes a comment line (": text"), which clients ignore: a
// heartbeat.
func (s *sseWriter) comment(text string) error {
	s.buf = append(append(append(s.buf[:0], ": "...), text...), "\n\n"...)
	return s.write()
}
