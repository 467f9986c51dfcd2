package bolt

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
)

func sampleRecord() eventstore.RecordedEvent {
	return eventstore.RecordedEvent{
		StreamID: "handoff-3f1c",
		Revision: 4,
		Position: eventstore.Position{Commit: 1234, Prepare: 1234},
		EventData: eventstore.EventData{
			ID:   uuid.MustParse("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"),
			Type: "ProofReceived",
			Data: []byte(`{"executorRunId":"run-1","proof":{"summary":"done"}}`),
			Metadata: eventstore.Metadata{
				Tenant: "t1", Actor: "key:k1", RequestID: "req-9", CausationID: "cmd-2",
				SchemaVersion: 1, RecordedAt: time.Date(2026, 11, 22, 8, 0, 0, 5, time.UTC),
				PrevHash: "aa", Hash: "bb",
			},
		},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	ev := sampleRecord()
	got, err := decodeRecord(encodeRecord(nil, &ev))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != ev.ID || got.StreamID != ev.StreamID || got.Revision != ev.Revision || got.Position != ev.Position ||
		got.Type != ev.Type || !bytes.Equal(got.Data, ev.Data) || got.Metadata != ev.Metadata {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, ev)
	}
}

func TestRecordDamageIsDetected(t *testing.T) {
	ev := sampleRecord()
	enc := encodeRecord(nil, &ev)
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"short", enc[:10]},
		{"truncated", enc[:len(enc)-1]},
		{"bit flip in data", flip(enc, len(enc)-10)},
		{"bit flip in checksum", flip(enc, len(enc)-1)},
		{"unknown version", withVersion(enc, 9)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeRecord(tc.b); !errors.Is(err, errRecord) {
				t.Fatalf("err = %v, want errRecord", err)
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x10
	return c
}

// withVersion rewrites the version byte and fixes the checksum, so only the
// version check can refuse it.
func withVersion(b []byte, v byte) []byte {
	c := bytes.Clone(b[:len(b)-4])
	c[0] = v
	return appendChecksum(c)
}

// FuzzDecodeRecord feeds arbitrary bytes to the decoder of stored events. It
// must never panic, and whatever it accepts must encode back to bytes that
// decode to the same event.
func FuzzDecodeRecord(f *testing.F) {
	ev := sampleRecord()
	f.Add(encodeRecord(nil, &ev))
	empty := eventstore.RecordedEvent{EventData: eventstore.EventData{ID: uuid.New(), Type: "T"}}
	f.Add(encodeRecord(nil, &empty))
	f.Add([]byte{})
	f.Add([]byte{recordVersion})
	f.Add(withVersion(encodeRecord(nil, &ev), 2))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Fix the checksum half of the time so the fuzzer reaches the fields.
		if len(b) > 4 && b[len(b)-1]&1 == 0 {
			b = appendChecksum(bytes.Clone(b[:len(b)-4]))
		}
		got, err := decodeRecord(b)
		if err != nil {
			if !errors.Is(err, errRecord) {
				t.Fatalf("error %v is not errRecord", err)
			}
			return
		}
		again, err := decodeRecord(encodeRecord(nil, &got))
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if again.ID != got.ID || again.StreamID != got.StreamID || again.Revision != got.Revision ||
			again.Position != got.Position || again.Type != got.Type || !bytes.Equal(again.Data, got.Data) ||
			again.Metadata != got.Metadata {
			t.Fatalf("round trip changed the event:\n%+v\n%+v", got, again)
		}
	})
}

// FuzzDecodeHead feeds arbitrary bytes to the decoder of stream head records
// (last revision plus the open chunk of positions).
func FuzzDecodeHead(f *testing.F) {
	f.Add((&streamHead{exists: true, last: 0, tail: []uint64{1}}).encode())
	f.Add((&streamHead{exists: true, last: 33, tail: []uint64{100, 164}}).encode())
	f.Add((&streamHead{exists: true, last: 31}).encode())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHead(b)
		if err != nil {
			return
		}
		if uint64(len(h.tail)) != (h.last+1)%chunkSize {
			t.Fatalf("accepted a head of revision %d with %d open positions", h.last, len(h.tail))
		}
		for i := 1; i < len(h.tail); i++ {
			if h.tail[i] <= h.tail[i-1] {
				t.Fatalf("accepted positions that do not increase: %v", h.tail)
			}
		}
		again, err := decodeHead(h.encode())
		if err != nil || again.last != h.last || len(again.tail) != len(h.tail) {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, h)
		}
		for i := range h.tail {
			if again.tail[i] != h.tail[i] {
				t.Fatalf("round trip changed position %d", i)
			}
		}
	})
}

// A pending event is read as asDecoded made it, a stored one as
// decodeRecord gives it back: the two must not differ.
func TestAsDecodedIsTheRecordDecoded(t *testing.T) {
	withZone := sampleRecord()
	withZone.Metadata.RecordedAt = time.Now().In(time.FixedZone("X", 3600)) // a monotonic reading too
	empty := sampleRecord()
	empty.Data = json.RawMessage{}
	bare := sampleRecord()
	bare.Metadata = eventstore.Metadata{}
	for i, ev := range []eventstore.RecordedEvent{sampleRecord(), withZone, empty, bare} {
		got := asDecoded(ev)
		want, err := decodeRecord(encodeRecord(nil, &ev))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Fatalf("event %d: pending %+v, stored %+v", i, *got, want)
		}
		if len(ev.Data) > 0 && &got.Data[0] == &ev.Data[0] {
			t.Fatalf("event %d: the shared event must have its own Data", i)
		}
	}
}
