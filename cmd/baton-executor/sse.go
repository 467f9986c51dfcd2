package main

import (
	"bufio"
	"errors"
	"io"
	"strings"
)

// sseEvent is one server-sent event.
type sseEvent struct {
	ID, Type, Data string
}

// maxSSELine bounds one line of the stream: an event's data line is one
// ledger event, a few hundred KiB at most.
const maxSSELine = 4 << 20

// sseReader reads events from a text/event-stream body, as the WHATWG
// grammar defines them: fields up to a blank line, comments skipped,
// data lines joined with newlines, an id that persists across events.
type sseReader struct {
	sc     *bufio.Scanner
	lastID string
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxSSELine)
	return &sseReader{sc: sc}
}

// errStreamEnded is the end of the body.
var errStreamEnded = errors.New("event stream ended")

// Next returns the next event with data; a stream cut mid-event drops it.
func (r *sseReader) Next() (sseEvent, error) {
	var ev sseEvent
	var data []string
	hasData := false
	for r.sc.Scan() {
		line := strings.TrimSuffix(r.sc.Text(), "\r")
		if line == "" {
			if hasData {
				ev.ID, ev.Data = r.lastID, strings.Join(data, "\n")
				return ev, nil
			}
			ev, data = sseEvent{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment: the server's heartbeat
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Type = value
		case "data":
			data, hasData = append(data, value), true
		case "id":
			if !strings.ContainsRune(value, 0) {
				r.lastID = value
			}
		}
	}
	if err := r.sc.Err(); err != nil {
		return sseEvent{}, err
	}
	return sseEvent{}, errStreamEnded
}
