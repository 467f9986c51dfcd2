package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// sseEvent is one server-sent event.
type sseEvent struct {
	Event string
	Data  []byte
}

// maxSSELine bounds one line of an upstream stream.
const maxSSELine = 4 << 20

// sseReader parses a text/event-stream as the HTML standard describes it:
// fields up to a blank line make an event; data lines join with newlines;
// comments (lines starting with ':') are skipped.
type sseReader struct {
	sc *bufio.Scanner
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4<<10), maxSSELine) // grows as lines need, up to maxSSELine
	return &sseReader{sc: sc}
}

// errStreamCut means the stream ended inside an event.
var errStreamCut = errors.New("stream ended in the middle of an event")

// Next returns the next event, io.EOF at a clean end.
func (r *sseReader) Next() (sseEvent, error) {
	var ev sseEvent
	var data [][]byte
	seen := false
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if len(line) == 0 {
			if !seen {
				continue
			}
			ev.Data = bytes.Join(data, []byte("\n"))
			return ev, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Event = string(value)
			seen = true
		case "data":
			data = append(data, append([]byte(nil), value...))
			seen = true
		}
	}
	if err := r.sc.Err(); err != nil {
		return ev, err
	}
	if seen {
		// A final event without its blank line: deliver it; a cut is
		// detected by the caller from the protocol (no [DONE], no
		// message_stop).
		ev.Data = bytes.Join(data, []byte("\n"))
		return ev, nil
	}
	return ev, io.EOF
}
