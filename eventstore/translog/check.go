package translog

import (
	"bytes"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"go.etcd.io/bbolt"
	"golang.org/x/mod/sumdb/tlog"
)

// ErrCorruptLog: a stored hash of the log's file is not the one its
// entries give.
var ErrCorruptLog = errors.New("translog: the log file does not match its entries")

// CheckFile recomputes every hash of the log file at path from its
// entries, as `baton store check` does with the server stopped: a file
// changed on disk (a flipped byte in a leaf hash) serves tiles that do
// not match the signed root, which auditors catch and the server itself
// does not. It returns the log's size.
func CheckFile(path string) (_ int64, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // a page past the end of a file cut short
	defer func() {
		if v := recover(); v != nil { // bbolt's answer to a damaged page
			err = fmt.Errorf("%w: %s is damaged: %s", ErrCorruptLog, path, panicText(v))
		}
	}()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 500 * time.Millisecond})
	if errors.Is(err, bbolt.ErrTimeout) { // a server writes it: sound, not checked
		return 0, fmt.Errorf("translog: %s is held by another process (is a baton serving with this data directory? check it while none does): %w", path, err)
	}
	if err != nil {
		return 0, fmt.Errorf("translog: %s: %w", path, err)
	}
	defer db.Close()
	var size int64
	err = db.View(func(tx *bbolt.Tx) error {
		m, hb, eb := tx.Bucket(bucketMeta), tx.Bucket(bucketHashes), tx.Bucket(bucketEntries)
		if m == nil || hb == nil || eb == nil {
			return fmt.Errorf("%w: %s lacks its buckets", ErrCorruptLog, path)
		}
		size = int64(getU64(m.Get(keySize)))
		hr := hashReader(hb)
		for n := int64(0); n < size; n++ {
			entry := eb.Get(u64(uint64(n)))
			if entry == nil {
				return fmt.Errorf("%w: entry %d is missing", ErrCorruptLog, n)
			}
			// The hashes record n adds, from its entry and the hashes
			// before it (checked already): each must be the one stored.
			want, err := tlog.StoredHashesForRecordHash(n, tlog.RecordHash(entry), hr)
			if err != nil {
				return fmt.Errorf("%w: entry %d: %v", ErrCorruptLog, n, err)
			}
			base := tlog.StoredHashIndex(0, n)
			for i, h := range want {
				if got := hb.Get(u64(uint64(base + int64(i)))); !bytes.Equal(got, h[:]) {
					level, index := tlog.SplitStoredHashIndex(base + int64(i))
					return fmt.Errorf("%w: the hash at level %d, index %d (stored hash %d) is not the one entry %d gives", ErrCorruptLog, level, index, base+int64(i), n)
				}
			}
		}
		if hb.Stats().KeyN != int(tlog.StoredHashCount(size)) {
			return fmt.Errorf("%w: %d stored hashes for %d entries, want %d", ErrCorruptLog, hb.Stats().KeyN, size, tlog.StoredHashCount(size))
		}
		return nil
	})
	return size, err
}
