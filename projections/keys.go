package projections

import (
	"cmp"
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
)

// Keys projects the keys stream into the auth read model.
type Keys struct{}

func (Keys) Buckets() [][]byte { return [][]byte{bucketKeys, bucketKeyHashe} }

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
