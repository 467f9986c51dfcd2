package kurrent

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/batonhq/baton/eventstore"
)

// wireMetadata is eventstore.Metadata as it travels in an event's user
// metadata: the same JSON, except that a zero RecordedAt is left out rather
// than written as year 1. Fields added to eventstore.Metadata travel without
// a change here (they are promoted from the embedded struct); the outer
// RecordedAt shadows the embedded one because it is shallower.
type wireMetadata struct {
	eventstore.Metadata
	RecordedAt *time.Time `json:"recordedAt,omitempty"`
}

// encodeMetadata returns the user metadata of an event, nil when every field
// is zero.
func encodeMetadata(m eventstore.Metadata) ([]byte, error) {
	if m == (eventstore.Metadata{}) {
		return nil, nil
	}
	w := wireMetadata{Metadata: m}
	if !m.RecordedAt.IsZero() {
		at := m.RecordedAt
		w.RecordedAt = &at
	}
	return json.Marshal(w)
}

// decodeMetadata reads the user metadata of a stored event. Empty metadata
// is all zero. An event written without a recordedAt (the caller left it
// zero) gets the server's created time: KurrentDB stamps every event at
// commit, so that is the moment the embedded store would have recorded.
// Metadata that is not a JSON object of the expected shape is an error: the
// store never guesses.
func decodeMetadata(b []byte, created time.Time) (eventstore.Metadata, error) {
	var w wireMetadata
	if len(b) > 0 {
		if err := json.Unmarshal(b, &w); err != nil {
			return eventstore.Metadata{}, err
		}
	}
	m := w.Metadata
	m.RecordedAt = time.Time{}
	if w.RecordedAt != nil {
		m.RecordedAt = *w.RecordedAt
	}
	if m.RecordedAt.IsZero() {
		m.RecordedAt = created
	}
	return m, nil
}

// toRecorded converts an event read from KurrentDB; it never fails.
func toRecorded(r *esdb.RecordedEvent) eventstore.RecordedEvent {
	// Metadata Baton cannot decode (written around it) does not stop the
	// feed: the event is delivered marked, and each reader decides.
	unreadable := ""
	md, err := decodeMetadata(r.UserMetadata, r.CreatedDate)
	if err != nil {
		md, unreadable = eventstore.Metadata{}, fmt.Sprintf("event %s at revision %d of %q: metadata: %v", r.EventID, r.EventNumber, r.StreamID, err)
	}
	var data json.RawMessage
	if len(r.Data) > 0 {
		data = r.Data
	}
	return eventstore.RecordedEvent{
		Unreadable: unreadable,
		StreamID:   r.StreamID,
		Revision:   r.EventNumber,
		Position:   fromPosition(r.Position),
		EventData: eventstore.EventData{
			ID:       r.EventID,
			Type:     r.EventType,
			Data:     data,
			Metadata: md,
		},
	}
}

func fromPosition(p esdb.Position) eventstore.Position {
	return eventstore.Position{Commit: p.Commit, Prepare: p.Prepare}
}

// allPosition maps a feed position to where a read or subscription starts.
// The client's zero value means the end of $all, so Start must be explicit.
func allPosition(p eventstore.Position) esdb.AllPosition {
	if p == eventstore.Start {
		return esdb.Start{}
	}
	return esdb.Position{Commit: p.Commit, Prepare: p.Prepare}
}

// unknownPosition is how the client shows a position the server did not
// send (the server's -1 as an unsigned number).
const unknownPosition = ^uint64(0)

// isSystem reports whether an event type (or stream id) is KurrentDB's own
// ($-prefixed): statistics, metadata, links, users, scavenges. They are not
// Baton's events, so reads of $all skip them.
func isSystem(typ string) bool { return strings.HasPrefix(typ, "$") }

// expectedRevision maps the store's expectation exactly. There is no path to
// esdb.Any: the client turns a nil expectation into Any, which switches the
// check off, so an unset expectation is refused before it gets here.
func expectedRevision(e eventstore.ExpectedRevision) (esdb.ExpectedRevision, error) {
	switch {
	case e.IsNoStream():
		return esdb.NoStream{}, nil
	case e.IsStreamExists():
		return esdb.StreamExists{}, nil
	}
	if rev, ok := e.Value(); ok {
		return esdb.StreamRevision{Value: rev}, nil
	}
	return nil, eventstore.ErrNoExpectedRevision
}

// wrongVersionMessage is the text the client gives a WrongExpectedVersion
// result (esdb.Client.AppendToStream); the server's structured answer is not
// exposed, so the actual revision is read back from it.
var wrongVersionMessage = regexp.MustCompile(`^wrong expected version: expecting '([^']*)' but got '([^']*)'$`)

// parseWrongVersion extracts the stream's actual revision from the message
// of a wrong-expected-version error. ok is false when the message is not
// in the client's format.
func parseWrongVersion(msg string) (actual uint64, exists, ok bool) {
	m := wrongVersionMessage.FindStringSubmatch(msg)
	if m == nil {
		return 0, false, false
	}
	if m[2] == "no_stream" {
		return 0, false, true
	}
	// The client prints the revision with strconv.Itoa(int(rev)).
	n, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil || n < 0 || m[2] != strconv.FormatInt(n, 10) {
		return 0, false, false
	}
	return uint64(n), true, true
}

// eventSize is the size KurrentDB counts against --max-append-size: data,
// metadata and two bytes per UTF-16 code unit of the type.
func eventSize(typ string, data, meta []byte) int {
	units := 0
	for _, r := range typ {
		units++
		if r > 0xFFFF {
			units++
		}
	}
	return len(data) + len(meta) + 2*units
}
