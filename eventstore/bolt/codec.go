package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/batonhq/baton/eventstore"
)

// recordVersion is the first byte of every stored event record. A reader that
// meets another value refuses the record rather than guess at its layout.
const recordVersion = 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errRecord is wrapped into eventstore.ErrCorrupt by the callers that know
// where the record came from.
var errRecord = errors.New("malformed event record")

// encodeRecord lays an event out as stored in the events bucket and the
// journal (the layout: docs/eventstore.md, "The event record"). The record
// repeats its position, stream and revision, and ends with a crc32c, so that
// a misplaced or mangled page cannot pass as another event.
func encodeRecord(dst []byte, ev *eventstore.RecordedEvent) []byte {
	m := &ev.Metadata
	dst = append(dst, recordVersion)
	dst = append(dst, ev.ID[:]...)
	dst = binary.AppendUvarint(dst, ev.Position.Commit)
	dst = binary.AppendUvarint(dst, ev.Revision)
	dst = appendStr(dst, ev.StreamID)
	dst = appendStr(dst, ev.Type)
	dst = binary.AppendVarint(dst, m.RecordedAt.UnixNano())
	dst = appendStr(dst, m.Tenant)
	dst = appendStr(dst, m.Actor)
	dst = appendStr(dst, m.RequestID)
	dst = appendStr(dst, m.CausationID)
	dst = binary.AppendUvarint(dst, uint64(m.SchemaVersion))
	dst = appendStr(dst, m.PrevHash)
	dst = appendStr(dst, m.Hash)
	dst = binary.AppendUvarint(dst, uint64(len(ev.Data)))
	dst = append(dst, ev.Data...)
	return appendChecksum(dst)
}

// asDecoded returns ev as decodeRecord gives it back from its record: its
// own copy of Data, RecordedAt to the nanosecond in UTC.
func asDecoded(ev eventstore.RecordedEvent) *eventstore.RecordedEvent {
	ev.Metadata.RecordedAt = time.Unix(0, ev.Metadata.RecordedAt.UnixNano()).UTC()
	if len(ev.Data) > 0 {
		ev.Data = append([]byte(nil), ev.Data...)
	} else {
		ev.Data = nil
	}
	return &ev
}

func appendChecksum(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decodeRecord parses a stored record. It never panics on bad input and
// copies everything it returns out of b (b may be memory-mapped).
func decodeRecord(b []byte) (eventstore.RecordedEvent, error) {
	var ev eventstore.RecordedEvent
	if len(b) < 1+16+4 {
		return ev, fmt.Errorf("%w: %d bytes is too short", errRecord, len(b))
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return ev, fmt.Errorf("%w: checksum mismatch", errRecord)
	}
	if body[0] != recordVersion {
		return ev, fmt.Errorf("%w: unknown record version %d", errRecord, body[0])
	}
	d := decoder{b: body[17:]}
	copy(ev.ID[:], body[1:17])
	pos := d.uvarint()
	ev.Position = eventstore.Position{Commit: pos, Prepare: pos}
	ev.Revision = d.uvarint()
	ev.StreamID = d.str()
	ev.Type = d.str()
	ns := d.varint()
	m := &ev.Metadata
	m.Tenant = d.str()
	m.Actor = d.str()
	m.RequestID = d.str()
	m.CausationID = d.str()
	sv := d.uvarint()
	m.PrevHash = d.str()
	m.Hash = d.str()
	data := d.bytes()
	if d.err != nil {
		return eventstore.RecordedEvent{}, d.err
	}
	if len(d.b) != 0 {
		return eventstore.RecordedEvent{}, fmt.Errorf("%w: %d trailing bytes", errRecord, len(d.b))
	}
	if sv > 1<<32-1 {
		return eventstore.RecordedEvent{}, fmt.Errorf("%w: schema version out of range", errRecord)
	}
	m.SchemaVersion = uint32(sv)
	m.RecordedAt = time.Unix(0, ns).UTC()
	if len(data) > 0 {
		ev.Data = append([]byte(nil), data...)
	}
	return ev, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", errRecord, what)
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("unsigned varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("length")
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string { return string(d.bytes()) }
