package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// JournalFileName is the journal inside the data directory, beside FileName.
// An append is acknowledged once its records are in the journal (one write
// and one fdatasync, where a bbolt commit takes two); the indexer then moves
// them into the bbolt file, and Open moves over what the file lacks before
// serving. The frame format, and why a run ends where it does:
// docs/eventstore.md ("The journal file").
const JournalFileName = "events.journal"

const (
	frameHeader = 8
	// frameAlign: every frame starts on a page of its own, so a write
	// never touches a page whose fdatasync is still running.
	frameAlign = 4096
	// maxFrame bounds one frame's payload (the length field is 32 bits);
	// a group commit larger than this writes several frames.
	maxFrame = 1 << 30
)

// journalMinCap is the journal's first size; it doubles up to
// journalWrapCap, past which the writer waits for the indexer and starts
// over at offset 0 instead of growing. Variables so that a test can make
// the journal start over often.
var journalMinCap, journalWrapCap int64 = 1 << 20, 16 << 20

type journal struct {
	f      *os.File // writes, growth and zeroing
	syncFD *os.File // the syncer's: fdatasync reports a writeback error once per open file description
	path   string
	off    int64 // where the next frame goes
	cap    int64 // the file's size: zeros prepared ahead of off
}

// openJournal opens dir's journal, creating it (zero-filled, fsynced, with
// the directory entry fsynced) when it is missing.
func openJournal(dir string) (*journal, error) {
	path := filepath.Join(dir, JournalFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("eventstore: journal %s: %w", path, err)
	}
	j := &journal{f: f, path: path}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("eventstore: journal %s: %w", path, err)
	}
	j.cap = st.Size()
	if j.cap < journalMinCap {
		if err := j.extend(journalMinCap); err != nil {
			f.Close()
			return nil, err
		}
		if err := syncDir(dir); err != nil {
			f.Close()
			return nil, err
		}
	}
	if j.syncFD, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
		j.close()
		return nil, fmt.Errorf("eventstore: journal %s: %w", path, err)
	}
	return j, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("eventstore: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("eventstore: sync %s: %w", dir, err)
	}
	return nil
}

// extend fills the file with zeros up to at least size bytes and fsyncs it,
// size and all.
func (j *journal) extend(size int64) error {
	if size <= j.cap {
		return nil
	}
	if err := j.zero(j.cap, size); err != nil {
		return err
	}
	j.cap = size
	return nil
}

// zero writes zeros over [from, to) and fsyncs the file.
func (j *journal) zero(from, to int64) error {
	zeros := make([]byte, 1<<20)
	for at := from; at < to; {
		n := min(int64(len(zeros)), to-at)
		if _, err := j.f.WriteAt(zeros[:n], at); err != nil {
			if diskFull(err) {
				// Beyond the journal's end: nothing it holds is touched.
				return noRoom{fmt.Errorf("eventstore: journal %s: %w", j.path, err)}
			}
			return fmt.Errorf("eventstore: journal %s: %w", j.path, err)
		}
		at += n
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("eventstore: journal %s: %w", j.path, err)
	}
	return nil
}

// readAll returns the journal's bytes.
func (j *journal) readAll() ([]byte, error) {
	b := make([]byte, j.cap)
	n, err := j.f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("eventstore: journal %s: %w", j.path, err)
	}
	return b[:n], nil
}

// write puts the frames at off; the caller fdatasyncs. The caller has
// made room (extend, or off set back to 0).
func (j *journal) write(frames []byte) error {
	if _, err := j.f.WriteAt(frames, j.off); err != nil {
		return fmt.Errorf("eventstore: journal %s: %w", j.path, err)
	}
	j.off += int64(len(frames))
	return nil
}

func (j *journal) close() error {
	errs := []error{j.f.Close()}
	if j.syncFD != nil {
		errs = append(errs, j.syncFD.Close())
	}
	return errors.Join(errs...)
}

// frameBuilder lays out the frames of one group commit.
type frameBuilder struct {
	buf   []byte
	start int // where the current frame's header is; -1: none open
}

func (b *frameBuilder) reset() {
	b.buf, b.start = b.buf[:0], -1
}

// add appends one record, opening a new frame when there is none or the
// current one would grow past maxFrame.
func (b *frameBuilder) add(rec []byte) {
	if b.start >= 0 && len(b.buf)-b.start-frameHeader+len(rec)+binary.MaxVarintLen64 > maxFrame {
		b.seal()
	}
	if b.start < 0 {
		b.start = len(b.buf)
		b.buf = append(b.buf, make([]byte, frameHeader)...)
	}
	b.buf = binary.AppendUvarint(b.buf, uint64(len(rec)))
	b.buf = append(b.buf, rec...)
}

// seal finishes the current frame by filling in its header.
func (b *frameBuilder) seal() {
	if b.start < 0 {
		return
	}
	payload := b.buf[b.start+frameHeader:]
	binary.BigEndian.PutUint32(b.buf[b.start:], uint32(len(payload)))
	binary.BigEndian.PutUint32(b.buf[b.start+4:], crc32.Checksum(payload, castagnoli))
	b.buf = append(b.buf, make([]byte, alignUp(len(b.buf))-len(b.buf))...)
	b.start = -1
}

func alignUp(n int) int { return (n + frameAlign - 1) &^ (frameAlign - 1) }

// bytes returns the sealed frames.
func (b *frameBuilder) bytes() []byte {
	b.seal()
	return b.buf
}

// nextFrame reads the frame at the start of b: its records (sub-slices of
// b) and its length in b, padding to the next page included. ok is false
// at the end of the run: a zero or impossible length, a checksum that
// fails, or a payload that does not parse. It never panics on any input.
func nextFrame(b []byte) (recs [][]byte, n int, ok bool) {
	if len(b) < frameHeader {
		return nil, 0, false
	}
	size := binary.BigEndian.Uint32(b)
	if size == 0 || uint64(size) > uint64(len(b)-frameHeader) {
		return nil, 0, false
	}
	payload := b[frameHeader : frameHeader+int(size)]
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(b[4:]) {
		return nil, 0, false
	}
	for len(payload) > 0 {
		l, k := binary.Uvarint(payload)
		if k <= 0 || l == 0 || l > uint64(len(payload)-k) {
			return nil, 0, false
		}
		recs = append(recs, payload[k:k+int(l)])
		payload = payload[k+int(l):]
	}
	return recs, min(alignUp(frameHeader+int(size)), len(b)), true
}
