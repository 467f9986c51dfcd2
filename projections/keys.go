package projections

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

var (
	bucketKeys     = []byte("keys")       // SHA-256 of the key -> KeyRecord JSON
	bucketKeyHashe = []byte("keys_by_id") // keyId -> SHA-256 of the key
	bucketKeysMeta = []byte("keys_meta")  // keyNext -> the keys stream's next revision
	keyNext        = []byte("next")
)

// Keys projects the keys stream into the auth read model.
type Keys struct{}

func (Keys) Buckets() [][]byte { return [][]byte{bucketKeys, bucketKeyHashe, bucketKeysMeta} }

// Wants: the keys stream.
func (Keys) Wants(ev eventstore.RecordedEvent) bool { return ev.StreamID == domain.KeysStream }

func (Keys) Apply(tx *bbolt.Tx, ev eventstore.RecordedEvent) error {
	if ev.StreamID != domain.KeysStream {
		return nil
	}
	if ev.Unreadable != "" {
		return fmt.Errorf("keys: %s", ev.Unreadable) // authentication does not go on on a guess
	}
	keys, byID := tx.Bucket(bucketKeys), tx.Bucket(bucketKeyHashe)
	// How far the stream is applied: authentication waits for the read
	// models only while the store holds a key event past it (WaitForKeys).
	if err := tx.Bucket(bucketKeysMeta).Put(keyNext, binary.BigEndian.AppendUint64(nil, ev.Revision+1)); err != nil {
		return err
	}
	switch ev.Type {
	case domain.EventKeyCreated:
		var d domain.KeyCreated
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		rec, err := json.Marshal(domain.KeyRecord{KeyID: d.KeyID, Tenant: d.Tenant, Admin: d.Admin, Display: d.Display, Label: d.Label, CreatedAt: ev.Metadata.RecordedAt.UTC().Truncate(time.Microsecond)})
		if err != nil {
			return err
		}
		if err := keys.Put([]byte(d.Hash), rec); err != nil {
			return err
		}
		return byID.Put([]byte(d.KeyID), []byte(d.Hash))
	case domain.EventKeyRevoked:
		var d domain.KeyRevoked
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		hash := byID.Get([]byte(d.KeyID))
		if hash == nil {
			return nil
		}
		var rec domain.KeyRecord
		if err := json.Unmarshal(keys.Get(hash), &rec); err != nil {
			return err
		}
		if rec.RevokedAt != nil {
			return nil // revoked already (a second revocation, e.g. two replicas at once): the first time stands
		}
		t := ev.Metadata.RecordedAt.UTC().Truncate(time.Microsecond)
		rec.RevokedAt = &t
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return keys.Put(append([]byte(nil), hash...), b)
	}
	return nil
}

// ErrNoKey means no live key has that hash.
var ErrNoKey = errors.New("projections: no such key")

// keyCache keeps the key records authentication has looked up, so a call
// does not open a read transaction to find its key. Every committed batch
// that touches the keys stream drops the whole cache (keys change rarely);
// the generation keeps a lookup that raced with such a commit from caching
// what it read before it.
type keyCache struct {
	mu   sync.Mutex
	gen  uint64
	recs map[string]domain.KeyRecord
}

// keyCacheMax bounds the cache; past it, it starts over.
const keyCacheMax = 10_000

func (c *keyCache) get(hash string) (domain.KeyRecord, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.recs[hash]
	return rec, c.gen, ok
}

func (c *keyCache) put(hash string, rec domain.KeyRecord, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return // the keys moved while this was read
	}
	if c.recs == nil || len(c.recs) >= keyCacheMax {
		c.recs = map[string]domain.KeyRecord{}
	}
	c.recs[hash] = rec
}

func (c *keyCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.recs = nil
}

// KeyByHash looks a key up by the SHA-256 of its secret.
func (r *Runner) KeyByHash(hash string) (domain.KeyRecord, error) {
	rec, gen, ok := r.keys.get(hash)
	if !ok {
		var err error
		if rec, err = r.keyFromDB(hash); err != nil {
			return rec, err
		}
		r.keys.put(hash, rec, gen)
	}
	if rec.RevokedAt != nil {
		return rec, ErrNoKey
	}
	return rec, nil
}

func (r *Runner) keyFromDB(hash string) (domain.KeyRecord, error) {
	var rec domain.KeyRecord
	err := r.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketKeys).Get([]byte(hash))
		if v == nil {
			return ErrNoKey
		}
		return json.Unmarshal(v, &rec)
	})
	return rec, err
}

// KeyByID looks a key up by its id, revoked or not.
func (r *Runner) KeyByID(keyID string) (domain.KeyRecord, error) {
	var rec domain.KeyRecord
	err := r.View(func(tx *bbolt.Tx) error {
		hash := tx.Bucket(bucketKeyHashe).Get([]byte(keyID))
		if hash == nil {
			return ErrNoKey
		}
		return json.Unmarshal(tx.Bucket(bucketKeys).Get(hash), &rec)
	})
	return rec, err
}

// KeyCount returns how many keys were ever created.
func (r *Runner) KeyCount() (int, error) {
	n := 0
	err := r.View(func(tx *bbolt.Tx) error {
		n = tx.Bucket(bucketKeyHashe).Stats().KeyN
		return nil
	})
	return n, err
}

// KeyList is every key ever created, of tenant when it is not "", oldest
// first: records only (id, tenant, role, display, label, times), never a
// hash.
func (r *Runner) KeyList(tenant string) ([]domain.KeyRecord, error) {
	var out []domain.KeyRecord
	err := r.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketKeys).ForEach(func(_, v []byte) error {
			var rec domain.KeyRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return err
			}
			if tenant == "" || rec.Tenant == tenant {
				out = append(out, rec)
			}
			return nil
		})
	})
	slices.SortFunc(out, func(a, b domain.KeyRecord) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.KeyID, b.KeyID))
	})
	return out, err
}

// WaitForKeys waits, bounded by timeout, until the read models include
// every key event the store holds, so that a key created a moment ago
// through another replica or the CLI is known. It waits only while such an
// event is not applied: a made-up key costs a read of the keys stream's
// tail (shared, as the head's are: one in flight and one more due), not a
// wait for the read models to reach the store's head, which took the whole
// timeout while they trailed other writes. A file written before the keys
// stream's revision was kept waits for the head, as before.
func (r *Runner) WaitForKeys(ctx context.Context, timeout time.Duration) error {
	if _, known, err := r.keysNext(); err != nil || !known {
		if err != nil {
			return err
		}
		return r.WaitForHead(ctx, timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		pos, err := r.keyTails.Head(ctx, timeout)
		if err != nil {
			return err
		}
		if pos == eventstore.Start {
			return nil // every key event is applied
		}
		if err := r.WaitFor(ctx, pos); err != nil {
			return err
		}
	}
}

// keyTail reads, as its Head, the position of the first key event the
// read models have not applied, or Start when there is none.
type keyTail struct {
	eventstore.Store
	r *Runner
}

func (k keyTail) Head(ctx context.Context) (eventstore.Position, error) {
	next, known, err := k.r.keysNext()
	if err != nil {
		return eventstore.Start, err
	}
	if !known {
		return k.Store.Head(ctx)
	}
	evs, err := k.Store.ReadStream(ctx, domain.KeysStream, next, 1)
	if err != nil || len(evs) == 0 {
		return eventstore.Start, err
	}
	return evs[0].Position, nil
}

// keysNext is the revision of the keys stream's next event as the read
// models have applied it; known is false for a file that holds keys but
// was written before the revision was kept.
func (r *Runner) keysNext() (next uint64, known bool, err error) {
	err = r.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bucketKeysMeta).Get(keyNext); len(v) == 8 {
			next, known = binary.BigEndian.Uint64(v), true
			return nil
		}
		k, _ := tx.Bucket(bucketKeyHashe).Cursor().First()
		known = k == nil // no key event applied yet
		return nil
	})
	return next, known, err
}
