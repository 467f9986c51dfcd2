// Package sse reads server-sent event streams, as the providers send them.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Event is one server-sent event.
type Event struct {
	Event string
	Data  []byte
}

// maxLine bounds one line of an upstream stream.
const maxLine = 4 << 20

// MaxEvent bounds one event's data lines together: an upstream that sends
// data lines without the blank line that ends an event would otherwise
// grow it without end (400 lines of 1 MiB took 1.35 GB).
const MaxEvent = 16 << 20

// ErrEventTooLarge is an event's data over MaxEvent; ErrLineTooLong a line
// over maxLine.
var (
	ErrEventTooLarge error = &limitError{"an event of the stream is over 16 MiB"}
	ErrLineTooLong   error = &limitError{"a line of the stream is over 4 MiB"}
)

// limitError is a stream refused for a limit of the reader's: its
// ReadLimit says which, for the gateway to tell (which does not import
// this package).
type limitError struct{ what string }

func (e *limitError) Error() string     { return "sse: " + e.what }
func (e *limitError) ReadLimit() string { return e.what }

// Reader parses a text/event-stream as the HTML standard describes it:
// lines end with CRLF, LF or CR; fields up to a blank line make an event;
// data lines join with newlines; comments (lines starting with ':') are
// skipped; an event whose data is empty is not delivered.
type Reader struct {
	sc      *bufio.Scanner
	l       *lines
	started bool // a line was read: a byte order mark is skipped only before the first
}

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader {
	sc := bufio.NewScanner(r)
	// 1 KB holds a provider's usual event; a longer line grows it, up to
	// maxLine. One is made per stream, so it is kept small.
	sc.Buffer(make([]byte, 1<<10), maxLine)
	l := &lines{}
	sc.Split(l.split)
	return &Reader{sc: sc, l: l}
}

// lines splits a stream into lines ending with CRLF, LF or CR. A CR
// ends its line at once (the event it ends is not held back waiting for
// the next byte); a LF right after it is then skipped.
type lines struct {
	afterCR bool
	rest    []byte // what the scanner holds after the last line given
}

func (l *lines) split(data []byte, atEOF bool) (advance int, token []byte, err error) {
	skip := 0
	if l.afterCR && len(data) > 0 {
		l.afterCR = false
		if data[0] == '\n' {
			skip = 1
		}
	}
	if i := lineEnd(data[skip:]); i >= 0 {
		end := skip + i
		l.afterCR = data[end] == '\r'
		l.rest = data[end+1:]
		return end + 1, data[skip:end], nil
	}
	l.rest = nil
	if atEOF && len(data) > skip {
		return len(data), data[skip:], nil
	}
	return skip, nil, nil
}

// lineEnd is the index of b's first CR or LF, or -1: IndexByte scans
// (vectorised), where IndexAny builds a set on each call. They go through
// b in windows that double, so that a line costs its own length, not the
// buffer's: a stream of CR-only lines must not scan megabytes of buffered
// data for a LF at every line.
func lineEnd(b []byte) int {
	for start, n := 0, 64; start < len(b); start, n = start+n, n*2 {
		w := b[start:min(len(b), start+n)]
		i := bytes.IndexByte(w, '\n')
		head := w
		if i >= 0 {
			head = w[:i]
		}
		if j := bytes.IndexByte(head, '\r'); j >= 0 {
			return start + j
		}
		if i >= 0 {
			return start + i
		}
	}
	return -1
}

// errStreamCut means the stream ended inside an event.
var errStreamCut = errors.New("stream ended in the middle of an event")

// Next returns the next event, io.EOF at a clean end.
func (r *Reader) Next() (Event, error) {
	var ev Event
	var data [][]byte
	size := 0
	seen := false
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if !r.started {
			// The standard: one byte order mark before the stream is
			// skipped (it made the first field unknown, the first event lost).
			r.started = true
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
		}
		if len(line) == 0 {
			if !seen {
				continue
			}
			ev.Data = join(data)
			if len(ev.Data) == 0 {
				// No data (an event line alone, or an empty data line):
				// the standard says not to dispatch it.
				ev, data, size, seen = Event{}, nil, 0, false
				continue
			}
			return ev, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Event = eventName(value)
			seen = true
		case "data":
			if size += len(value) + 1; size > MaxEvent {
				return Event{}, ErrEventTooLarge
			}
			data = append(data, append([]byte(nil), value...))
			seen = true
		}
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return ev, ErrLineTooLong
		}
		return ev, err
	}
	if seen && len(data) > 0 && len(bytes.Join(data, nil)) > 0 {
		// A final event without its blank line: deliver it; a cut is
		// detected by the caller from the protocol (no [DONE], no
		// message_stop).
		ev.Data = bytes.Join(data, []byte("\n"))
		return ev, nil
	}
	return ev, io.EOF
}

// join joins an event's data lines; a single line (every provider's
// events) is already the reader's own copy.
func join(data [][]byte) []byte {
	if len(data) == 1 {
		return data[0]
	}
	return bytes.Join(data, []byte("\n"))
}

// knownNames are the providers' event names, so that reading one does not
// allocate.
var knownNames = map[string]string{}

func init() {
	for _, n := range []string{
		"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop", "ping", "error",
		"response.created", "response.in_progress", "response.output_item.added", "response.output_item.done",
		"response.content_part.added", "response.content_part.done", "response.output_text.delta", "response.output_text.done",
		"response.function_call_arguments.delta", "response.function_call_arguments.done", "response.completed",
	} {
		knownNames[n] = n
	}
}

func eventName(b []byte) string {
	if n, ok := knownNames[string(b)]; ok {
		return n
	}
	return string(b)
}

// Buffered reports whether the next event is already read in whole, so
// that Next gives it without waiting for the connection: a caller that
// sends what it wrote only before a wait (gateway.Buffered) asks it. It
// may say false for an event that is there, never true for one that is
// not (FuzzBuffered).
func (r *Reader) Buffered() bool {
	rest := r.l.rest
	if r.l.afterCR && len(rest) > 0 && rest[0] == '\n' {
		rest = rest[1:]
	}
	lines, nonEmpty := 0, false // the data lines of the event so far
	for {
		i := lineEnd(rest)
		if i < 0 {
			return false
		}
		line := rest[:i]
		if rest[i] == '\r' && i+1 < len(rest) && rest[i+1] == '\n' {
			i++
		}
		rest = rest[i+1:]
		if len(line) == 0 {
			if lines > 1 || nonEmpty {
				return true
			}
			lines, nonEmpty = 0, false // nothing to give: Next reads on
			continue
		}
		if field, value, _ := bytes.Cut(line, []byte(":")); string(field) == "data" {
			lines++
			nonEmpty = nonEmpty || len(bytes.TrimPrefix(value, []byte(" "))) > 0
		}
	}
}
