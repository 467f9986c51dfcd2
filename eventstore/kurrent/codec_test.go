package kurrent

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
)

var created = time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)

func TestMetadataEncoding(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 30, 0, 123_456_789, time.FixedZone("x", 3600))
	full := eventstore.Metadata{Tenant: "t", Actor: "a", RequestID: "r", CausationID: "c", SchemaVersion: 7, RecordedAt: at, PrevHash: "p", Hash: "h"}
	tests := []struct {
		name string
		in   eventstore.Metadata
		wire string
		want eventstore.Metadata
	}{
		{"zero is no metadata", eventstore.Metadata{}, "", eventstore.Metadata{RecordedAt: created}},
		{"no recordedAt takes the server's time", eventstore.Metadata{Tenant: "t"}, `{"tenant":"t"}`, eventstore.Metadata{Tenant: "t", RecordedAt: created}},
		{"everything", full, `{"tenant":"t","actor":"a","requestId":"r","causationId":"c","schemaVersion":7,"prevHash":"p","hash":"h","recordedAt":"2026-11-22T10:30:00.123456789+01:00"}`, full},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := encodeMetadata(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.wire {
				t.Fatalf("wire = %s, want %s", b, tc.wire)
			}
			got, err := decodeMetadata(b, created)
			if err != nil {
				t.Fatal(err)
			}
			if !got.RecordedAt.Equal(tc.want.RecordedAt) {
				t.Fatalf("recordedAt = %v, want %v", got.RecordedAt, tc.want.RecordedAt)
			}
			got.RecordedAt, tc.want.RecordedAt = time.Time{}, time.Time{}
			if got != tc.want {
				t.Fatalf("decoded %+v, want %+v", got, tc.want)
			}
		})
	}
	for _, bad := range []string{"\xff", "[]", `{"schemaVersion":-1}`, `{"recordedAt":"yesterday"}`, `{"tenant":1}`, `{} x`} {
		if _, err := decodeMetadata([]byte(bad), created); err == nil {
			t.Errorf("decodeMetadata(%q) succeeded", bad)
		}
	}
}

// FuzzDecodeMetadata feeds the metadata decoder what a server (or another
// client's events) may hold: it never panics, and what it accepts encodes
// and decodes back to the same metadata.
func FuzzDecodeMetadata(f *testing.F) {
	for _, s := range []string{"", "null", "{}", `{"tenant":"t","schemaVersion":3,"recordedAt":"2026-11-22T10:30:00.123Z"}`,
		`{"recordedAt":null}`, `{"recordedAt":"0001-01-01T00:00:00Z"}`, `{"hash":"\u00e9","unknown":[1,2]}`, "\x00\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// What the adapter delivers: never an error; marked unreadable, with
		// empty metadata, exactly when the metadata does not decode.
		rec := toRecorded(&esdb.RecordedEvent{EventID: uuid.New(), EventType: "T", StreamID: "s", UserMetadata: b, CreatedDate: created})
		m, err := decodeMetadata(b, created)
		if (rec.Unreadable != "") != (err != nil) || (err != nil && rec.Metadata != (eventstore.Metadata{})) || (err == nil && rec.Metadata.RecordedAt.IsZero()) {
			t.Fatalf("%q: delivered %+v (decode error %v)", b, rec, err)
		}
		if err != nil {
			return
		}
		if m.RecordedAt.IsZero() {
			t.Fatalf("decoded metadata without a recordedAt from %q", b)
		}
		enc, err := encodeMetadata(m)
		if err != nil {
			// Only times json cannot write (years outside 0..9999) may fail.
			if _, merr := json.Marshal(m.RecordedAt); merr == nil {
				t.Fatalf("re-encoding %+v: %v", m, err)
			}
			return
		}
		back, err := decodeMetadata(enc, created.Add(time.Hour))
		if err != nil {
			t.Fatalf("decoding our own %s: %v", enc, err)
		}
		if !back.RecordedAt.Equal(m.RecordedAt) {
			t.Fatalf("recordedAt %v became %v", m.RecordedAt, back.RecordedAt)
		}
		back.RecordedAt, m.RecordedAt = time.Time{}, time.Time{}
		if back != m {
			t.Fatalf("%+v became %+v", m, back)
		}
	})
}

func TestParseWrongVersion(t *testing.T) {
	tests := []struct {
		msg    string
		actual uint64
		exists bool
		ok     bool
	}{
		{"wrong expected version: expecting '0' but got '2'", 2, true, true},
		{"wrong expected version: expecting 'no_stream' but got '0'", 0, true, true},
		{"wrong expected version: expecting 'stream_exists' but got 'no_stream'", 0, false, true},
		{"wrong expected version: expecting '4' but got 'no_stream'", 0, false, true},
		{"wrong expected version: expecting '4' but got '-1'", 0, false, false},
		{"wrong expected version: expecting '4' but got '01'", 0, false, false},
		{"wrong expected version: expecting '4' but got '99999999999999999999'", 0, false, false},
		{"wrong expected version: expecting '4' but got '2' ", 0, false, false},
		{"something else", 0, false, false},
		{"", 0, false, false},
	}
	for _, tc := range tests {
		actual, exists, ok := parseWrongVersion(tc.msg)
		if actual != tc.actual || exists != tc.exists || ok != tc.ok {
			t.Errorf("parseWrongVersion(%q) = %d, %v, %v; want %d, %v, %v", tc.msg, actual, exists, ok, tc.actual, tc.exists, tc.ok)
		}
	}
}

// FuzzParseWrongVersion: the conflict text comes from the server's answer;
// parsing never panics, and the client's own format always parses back.
func FuzzParseWrongVersion(f *testing.F) {
	f.Add("wrong expected version: expecting '0' but got '2'", uint64(3), true)
	f.Add("wrong expected version: expecting 'any' but got 'no_stream'", uint64(0), false)
	f.Fuzz(func(t *testing.T, msg string, rev uint64, exists bool) {
		parseWrongVersion(msg)
		rev >>= 1 // the client prints int(rev); revisions stay below 2^63
		current := "no_stream"
		if exists {
			current = strconv.Itoa(int(rev))
		}
		got, gotExists, ok := parseWrongVersion(fmt.Sprintf("wrong expected version: expecting '%s' but got '%s'", "1", current))
		if !ok || gotExists != exists || (exists && got != rev) {
			t.Fatalf("rev %d exists %v parsed as %d %v %v", rev, exists, got, gotExists, ok)
		}
	})
}

func TestExpectedRevisionMapping(t *testing.T) {
	tests := []struct {
		in   eventstore.ExpectedRevision
		want esdb.ExpectedRevision
	}{
		{eventstore.NoStream(), esdb.NoStream{}},
		{eventstore.StreamExists(), esdb.StreamExists{}},
		{eventstore.Revision(0), esdb.StreamRevision{Value: 0}},
		{eventstore.Revision(41), esdb.StreamRevision{Value: 41}},
	}
	for _, tc := range tests {
		got, err := expectedRevision(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("expectedRevision(%s) = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
	}
	if got, err := expectedRevision(eventstore.ExpectedRevision{}); got != nil || err != eventstore.ErrNoExpectedRevision {
		t.Errorf("unset expectation mapped to %#v, %v", got, err)
	}
	if _, ok := allPosition(eventstore.Start).(esdb.Start); !ok {
		t.Error("Start does not map to esdb.Start{}")
	}
	if got := allPosition(eventstore.Position{Commit: 5, Prepare: 4}); got != (esdb.Position{Commit: 5, Prepare: 4}) {
		t.Errorf("position mapped to %#v", got)
	}
	if eventSize("é𝄞", []byte("ab"), []byte("c")) != 3+2*3 {
		t.Error("eventSize counts UTF-16 code units twice")
	}
}
