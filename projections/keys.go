package projections

import (
	"encoding/json"
	"errors"

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
	keys, byID := tx.Bucket(bucketKeys), tx.Bucket(bucketKeyHashe)
	switch ev.Type {
	case domain.EventKeyCreated:
		var d domain.KeyCreated
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		rec, err := json.Marshal(domain.KeyRecord{KeyID: d.KeyID, Tenant: d.Tenant, Admin: d.Admin, Display: d.Display, Label: d.Label, CreatedAt: ev.Metadata.RecordedAt})
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
		t := ev.Metadata.RecordedAt
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

// KeyByHash looks a key up by the SHA-256 of its secret.
func (r *Runner) KeyByHash(hash string) (domain.KeyRecord, error) {
	var rec domain.KeyRecord
	err := r.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketKeys).Get([]byte(hash))
		if v == nil {
			return ErrNoKey
		}
		return json.Unmarshal(v, &rec)
	})
	if err == nil && rec.RevokedAt != nil {
		return rec, ErrNoKey
	}
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
