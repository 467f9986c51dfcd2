package translog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	bbolt "go.etcd.io/bbolt"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// GenerateKey makes an Ed25519 signing key named name (the log's origin)
// and its verifier key, in sumdb/note form.
func GenerateKey(name string, r io.Reader) (skey, vkey string, err error) {
	if r == nil {
		r = rand.Reader
	}
	return note.GenerateKey(r, name)
}

func ed25519VerifierKey(name, b64 string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(b) != 1+ed25519.SeedSize || b[0] != 1 {
		return "", errors.New("transparency log: the signing key is not an Ed25519 sumdb/note key")
	}
	pub := ed25519.NewKeyFromSeed(b[1:]).Public().(ed25519.PublicKey)
	return note.NewEd25519VerifierKey(name, pub)
}

// MaxEntrySize is the largest entry an entry bundle can carry (its length
// is a big-endian uint16).
const MaxEntrySize = 1<<16 - 1

// ErrEntryTooLarge: an entry bundle would hold an entry longer than
// MaxEntrySize. The tree still covers the entry; its bytes are read from
// the ledger (GET /v1/executions/{id}/ledger) instead.
var ErrEntryTooLarge = errors.New("translog: an entry of this bundle is longer than 65,535 bytes")

// Tile returns the bytes of the tile or entry bundle p names, provided
// the log holds every hash or entry it spans.
func (l *Log) Tile(p TilePath) ([]byte, error) {
	size := l.Size()
	if p.L < 0 || p.L > 7 || p.W < 1 || p.W > TileWidth {
		return nil, ErrNotFound
	}
	avail := size >> (TileHeight * p.L) // hashes at level L
	if p.N > avail/TileWidth || p.N*TileWidth+int64(p.W) > avail {
		return nil, ErrNotFound
	}
	var out []byte
	err := l.db.View(func(tx *bbolt.Tx) error {
		if !p.Entries {
			var err error
			out, err = tlog.ReadTileData(tlog.Tile{H: TileHeight, L: p.L, N: p.N, W: p.W}, hashReader(tx.Bucket(bucketHashes)))
			return err
		}
		eb := tx.Bucket(bucketEntries)
		var buf bytes.Buffer
		for i := int64(0); i < int64(p.W); i++ {
			e := eb.Get(u64(uint64(p.N*TileWidth + i)))
			if e == nil {
				return fmt.Errorf("transparency log: entry %d is missing", p.N*TileWidth+i)
			}
			if len(e) > MaxEntrySize {
				return ErrEntryTooLarge
			}
			buf.Write(binary.BigEndian.AppendUint16(nil, uint16(len(e))))
			buf.Write(e)
		}
		out = buf.Bytes()
		return nil
	})
	return out, err
}

// Entry returns the log's entry at index i.
func (l *Log) Entry(i int64) ([]byte, error) {
	var out []byte
	err := l.db.View(func(tx *bbolt.Tx) error {
		out = bytes.Clone(tx.Bucket(bucketEntries).Get(u64(uint64(i))))
		return nil
	})
	if err == nil && out == nil {
		err = ErrNotFound
	}
	return out, err
}

// Receipt is where one event of a handoff is in the log: its leaf index,
// and once a signed checkpoint covers it, its C2SP tlog-proof against the
// latest one.
type Receipt struct {
	Seq       uint64 `json:"seq"`
	LeafIndex int64  `json:"leafIndex"`
	Proof     string `json:"proof,omitempty"`
}

// Receipts lists the receipts of handoff id's events the log holds, by
// seq. With witnesses configured, an event's proof is against the latest
// checkpoint they cosigned that covers it, when there is one.
func (l *Log) Receipts(id string) ([]Receipt, error) {
	rs, _, err := l.ReceiptsAndSize(id)
	return rs, err
}

// ReceiptsAndSize is Receipts and the log's size as of the same read, so
// that every receipt's leaf index is below it (Size, read apart, can lag
// a commit the receipts already see).
func (l *Log) ReceiptsAndSize(id string) ([]Receipt, int64, error) {
	signed, cp := l.Checkpoint()
	var out []Receipt
	var size int64
	err := l.db.View(func(tx *bbolt.Tx) error {
		size = int64(getU64(tx.Bucket(bucketMeta).Get(keySize)))
		hr := hashReader(tx.Bucket(bucketHashes))
		var wSigned []byte
		var wCP Checkpoint
		if len(l.witnesses) > 0 {
			if k, lines := tx.Bucket(bucketCosigs).Cursor().Last(); k != nil {
				if n := tx.Bucket(bucketCheckpoints).Get(k); n != nil {
					wSigned = append(bytes.Clone(n), lines...)
					wCP, _ = ParseCheckpoint(noteText(n))
				}
			}
		}
		prefix := append([]byte(id), 0)
		c := tx.Bucket(bucketLeaves).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8; k, v = c.Next() {
			r := Receipt{Seq: binary.BigEndian.Uint64(k[len(prefix):]), LeafIndex: int64(getU64(v))}
			against, size := signed, cp.Size
			if wSigned != nil && r.LeafIndex < wCP.Size {
				against, size = wSigned, wCP.Size
			}
			if against != nil && r.LeafIndex < size {
				p, err := tlog.ProveRecord(size, r.LeafIndex, hr)
				if err != nil {
					return err
				}
				r.Proof = Proof{Index: r.LeafIndex, Hashes: p, Checkpoint: against}.Text()
			}
			out = append(out, r)
		}
		return nil
	})
	return out, size, err
}

// TreeProof proves that the log at size n is a prefix of the log at the
// latest checkpoint's size (RFC 6962 consistency proof); the tools fetch
// tiles instead, this is for tests and the bench.
func (l *Log) TreeProof(t, n int64) (tlog.TreeProof, error) {
	var p tlog.TreeProof
	err := l.db.View(func(tx *bbolt.Tx) error {
		var err error
		p, err = tlog.ProveTree(t, n, hashReader(tx.Bucket(bucketHashes)))
		return err
	})
	return p, err
}

// Root is the log's root hash at size n (n at most Size()).
func (l *Log) Root(n int64) (tlog.Hash, error) {
	var h tlog.Hash
	err := l.db.View(func(tx *bbolt.Tx) error {
		var err error
		h, err = tlog.TreeHash(n, hashReader(tx.Bucket(bucketHashes)))
		return err
	})
	return h, err
}
