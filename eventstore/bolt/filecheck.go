package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"

	"github.com/batonhq/baton/eventstore"
)

// bbolt's meta page, as laid out by go.etcd.io/bbolt/internal/common: a
// 16-byte page header, then magic, version, page size, flags (4 bytes each),
// root bucket (root page id, sequence), freelist page id, high-water page id,
// transaction id (8 bytes each) and an FNV-64a checksum of what precedes it.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16
	metaSumOffset  = 56
	metaSize       = 64
)

type boltMeta struct {
	pageSize uint32
	pgid     uint64 // high-water mark: pages [0, pgid) are in use
	txid     uint64
}

// checkFile turns the common ways a data file is unusable into errors that
// say what is wrong, before bbolt maps the file. The size check matters:
// bbolt touches pages up to the high-water mark while opening, some of them
// on goroutines of its own, and a page past the end of a truncated file
// faults there and kills the process instead of returning an error.
func checkFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("eventstore: cannot open %s: permission denied (the data directory must be readable and writable by this user)", path)
	}
	if err != nil {
		return fmt.Errorf("eventstore: data file %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("eventstore: data file %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("eventstore: data file %s is not a regular file", path)
	}
	if st.Size() == 0 {
		return unbornError{fmt.Errorf("%w: %s is empty (a crash before the first commit, or a truncated copy); move it away to start a new store", eventstore.ErrCorrupt, path)}
	}
	meta, ok := newestMeta(f)
	if !ok {
		return fmt.Errorf("%w: %s has no valid bbolt meta page (not a Baton data file, or both meta pages are damaged)", eventstore.ErrCorrupt, path)
	}
	// pgid pages of pageSize bytes, compared without multiplying: a
	// damaged pgid could overflow the product and pass.
	if pages := uint64(st.Size()) / uint64(meta.pageSize); meta.pgid > pages {
		err := fmt.Errorf("%w: %s is truncated: %d bytes, but its last commit uses %d pages of %d", eventstore.ErrCorrupt, path, st.Size(), meta.pgid, meta.pageSize)
		if meta.txid <= 1 {
			// bbolt writes a new file's first pages with transactions 0
			// and 1; Open commits from 2 on.
			return unbornError{err}
		}
		return err
	}
	return nil
}

// unbornError is checkFile's error about a data file that was never
// committed to: empty, or bbolt's first pages cut short, what the creation
// of a store leaves when it fails (a full disk). It holds no event.
type unbornError struct{ err error }

func (e unbornError) Error() string { return e.err.Error() }
func (e unbornError) Unwrap() error { return e.err }

// newestMeta reads both meta pages and returns the valid one with the higher
// transaction id, as bbolt itself chooses.
func newestMeta(r io.ReaderAt) (boltMeta, bool) {
	var best boltMeta
	found := false
	offsets := []int64{0}
	if m, ok := readMeta(r, 0); ok {
		offsets = append(offsets, int64(m.pageSize))
	} else {
		offsets = append(offsets, int64(os.Getpagesize()), 4096)
	}
	for _, off := range offsets {
		if m, ok := readMeta(r, off); ok && (!found || m.txid > best.txid) {
			best, found = m, true
		}
	}
	return best, found
}

func readMeta(r io.ReaderAt, pageOffset int64) (boltMeta, bool) {
	buf := make([]byte, metaSize)
	if _, err := r.ReadAt(buf, pageOffset+pageHeaderSize); err != nil {
		return boltMeta{}, false
	}
	le := binary.LittleEndian
	h := fnv.New64a()
	h.Write(buf[:metaSumOffset])
	if le.Uint32(buf[0:]) != boltMagic || le.Uint32(buf[4:]) != boltVersion || h.Sum64() != le.Uint64(buf[metaSumOffset:]) {
		return boltMeta{}, false
	}
	m := boltMeta{pageSize: le.Uint32(buf[8:]), pgid: le.Uint64(buf[40:]), txid: le.Uint64(buf[48:])}
	if m.pageSize < 512 || m.pageSize > 1<<16 {
		return boltMeta{}, false
	}
	return m, true
}
