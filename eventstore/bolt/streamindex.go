package bolt

import (
	"encoding/binary"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/eventstore"
)

// chunkSize is how many revisions of a stream one index chunk holds. The
// open chunk (the newest revisions) lives inline in the stream's head record,
// so appends to many streams dirty the few pages of the heads, not a page per
// stream; a full chunk is sealed into the revs bucket under (stream, chunk
// number). Why, measured: docs/eventstore.md.
const chunkSize = 32

// streamHead is a stream's head record: its last revision and the positions
// of the revisions in its open chunk.
//
// Stored as: last revision (8 bytes, big-endian), uvarint count, then the
// positions as a uvarint first value and uvarint deltas. The count is always
// (last+1) mod chunkSize: a full chunk is sealed at once.
type streamHead struct {
	exists bool
	last   uint64
	tail   []uint64 // positions of revisions last+1-len(tail) .. last
}

func (h *streamHead) encode() []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8+1+len(h.tail)*3), h.last)
	b = binary.AppendUvarint(b, uint64(len(h.tail)))
	return appendPositions(b, h.tail)
}

func appendPositions(b []byte, ps []uint64) []byte {
	var prev uint64
	for i, p := range ps {
		if i == 0 {
			b = binary.AppendUvarint(b, p)
		} else {
			b = binary.AppendUvarint(b, p-prev)
		}
		prev = p
	}
	return b
}

// decodePositions reads exactly n strictly increasing positions from b.
func decodePositions(b []byte, n int) ([]uint64, error) {
	ps := make([]uint64, 0, n)
	var prev uint64
	for i := 0; i < n; i++ {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, fmt.Errorf("bad position %d of %d", i, n)
		}
		b = b[k:]
		if i > 0 {
			if v == 0 || v > ^uint64(0)-prev {
				return nil, fmt.Errorf("positions not increasing at %d", i)
			}
			v += prev
		}
		ps = append(ps, v)
		prev = v
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%d trailing bytes", len(b))
	}
	return ps, nil
}

func decodeHead(b []byte) (streamHead, error) {
	if len(b) < 9 {
		return streamHead{}, fmt.Errorf("head of %d bytes", len(b))
	}
	h := streamHead{exists: true, last: binary.BigEndian.Uint64(b)}
	n, k := binary.Uvarint(b[8:])
	if k <= 0 || n != (h.last+1)%chunkSize {
		return streamHead{}, fmt.Errorf("head of revision %d holds a chunk of %d", h.last, n)
	}
	tail, err := decodePositions(b[8+k:], int(n))
	if err != nil {
		return streamHead{}, err
	}
	h.tail = tail
	return h, nil
}

// chunkKey is a sealed chunk's key in the revs bucket: the stream id, a zero
// byte (stream ids hold no control characters) and the chunk number,
// big-endian, so one stream's chunks sort together and in order.
func chunkKey(stream string, chunk uint64) []byte {
	k := make([]byte, 0, len(stream)+9)
	k = append(k, stream...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, chunk)
}

// streamIndex reads and writes stream heads and chunks in one transaction.
type streamIndex struct {
	path          string
	streams, revs *bbolt.Bucket
}

func (x streamIndex) corrupt(stream string, err error) error {
	return fmt.Errorf("%w: %s: index of stream %q: %v", eventstore.ErrCorrupt, x.path, stream, err)
}

func (x streamIndex) head(stream string) (streamHead, error) {
	v := x.streams.Get([]byte(stream))
	if v == nil {
		return streamHead{}, nil
	}
	h, err := decodeHead(v)
	if err != nil {
		return streamHead{}, x.corrupt(stream, err)
	}
	return h, nil
}

// add records pos as the stream's next revision, sealing the open chunk
// when it fills. The caller stores the head with putHead afterwards.
func (x streamIndex) add(stream string, h *streamHead, pos uint64) error {
	if h.exists {
		h.last++
	} else {
		h.exists, h.last = true, 0
	}
	h.tail = append(h.tail, pos)
	if len(h.tail) == chunkSize {
		chunk := h.last / chunkSize
		if err := x.revs.Put(chunkKey(stream, chunk), appendPositions(nil, h.tail)); err != nil {
			return err
		}
		h.tail = h.tail[:0]
	}
	return nil
}

func (x streamIndex) putHead(stream string, h *streamHead) error {
	return x.streams.Put([]byte(stream), h.encode())
}

// positions returns the global positions of up to limit revisions of the
// stream starting at from, and the revision of the first one (== from when
// the stream reaches it).
func (x streamIndex) positions(stream string, from uint64, limit int) ([]uint64, error) {
	h, err := x.head(stream)
	if err != nil || !h.exists || from > h.last {
		return nil, err
	}
	sealed := (h.last + 1) / chunkSize // chunks 0..sealed-1 are in revs
	var out []uint64
	for rev := from; rev <= h.last && len(out) < limit; {
		chunk := rev / chunkSize
		var ps []uint64
		if chunk < sealed {
			v := x.revs.Get(chunkKey(stream, chunk))
			if v == nil {
				return nil, x.corrupt(stream, fmt.Errorf("chunk %d is missing", chunk))
			}
			if ps, err = decodePositions(v, chunkSize); err != nil {
				return nil, x.corrupt(stream, fmt.Errorf("chunk %d: %v", chunk, err))
			}
		} else {
			ps = h.tail
		}
		for i := rev % chunkSize; i < uint64(len(ps)) && len(out) < limit; i++ {
			out = append(out, ps[i])
			rev++
		}
		if rev%chunkSize != 0 && rev <= h.last && len(out) < limit {
			return nil, x.corrupt(stream, fmt.Errorf("chunk %d ends early", chunk))
		}
	}
	return out, nil
}

// position returns the global position of one revision.
func (x streamIndex) position(stream string, rev uint64) (uint64, bool, error) {
	ps, err := x.positions(stream, rev, 1)
	if err != nil || len(ps) == 0 {
		return 0, false, err
	}
	return ps[0], true, nil
}
