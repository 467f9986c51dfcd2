package bolt

import (
	"encoding/binary"
	"hash/fnv"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// metaPage builds a bbolt meta page (header and meta, checksummed) as a
// data file starts with.
func metaPage(pageSize uint32, pgid, txid uint64) []byte {
	b := make([]byte, pageHeaderSize+metaSize)
	m := b[pageHeaderSize:]
	le := binary.LittleEndian
	le.PutUint32(m[0:], boltMagic)
	le.PutUint32(m[4:], boltVersion)
	le.PutUint32(m[8:], pageSize)
	le.PutUint64(m[40:], pgid)
	le.PutUint64(m[48:], txid)
	h := fnv.New64a()
	h.Write(m[:metaSumOffset])
	le.PutUint64(m[metaSumOffset:], h.Sum64())
	return b
}

// FuzzCheckFile runs the data file check over arbitrary file contents: it
// never panics, and it passes a file only when the newest valid meta page's
// last commit fits in the file (computed without overflow).
func FuzzCheckFile(f *testing.F) {
	f.Add(metaPage(4096, 4, 1), uint32(0))
	f.Add(metaPage(4096, 1<<62, 2), uint32(0))     // a pgid whose size overflows int64
	f.Add(metaPage(4096, 1<<63+1, 2), uint32(0))   // negative as an int64
	f.Add(metaPage(1<<16, 1<<48, 3), uint32(8192)) // the product wraps around
	f.Add(metaPage(100, 1, 1), uint32(0))
	f.Add([]byte("not a bolt file"), uint32(0))
	f.Add([]byte{}, uint32(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, head []byte, pad uint32) {
		path := filepath.Join(dir, "events.db")
		data := append(append([]byte{}, head...), make([]byte, pad%(1<<17))...)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		err := checkFile(path)
		if err != nil || len(data) == 0 {
			return
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		m, ok := newestMeta(f)
		if !ok {
			t.Fatal("passed a file without a valid meta page")
		}
		need := new(big.Int).Mul(new(big.Int).SetUint64(m.pgid), big.NewInt(int64(m.pageSize)))
		if need.Cmp(big.NewInt(int64(len(data)))) > 0 {
			t.Fatalf("passed a %d-byte file whose last commit uses %v bytes", len(data), need)
		}
	})
}

// A data file on a read-only file system (a backup's snapshot mounted to
// be checked) is said to be so, and what to do: it was "eventstore: open
// F: open F: read-only file system", the path twice and no way on.
func TestOpenErrorOfAReadOnlyFileSystem(t *testing.T) {
	path := filepath.Join("backup", FileName)
	msg := openError(path, &fs.PathError{Op: "open", Path: path, Err: syscall.EROFS}).Error()
	if !strings.Contains(msg, "read-only") || !strings.Contains(msg, "writable") || strings.Count(msg, path) != 1 {
		t.Fatalf("open said %q", msg)
	}
}
