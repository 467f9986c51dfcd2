package projections

import (
	"bytes"
	"encoding/binary"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/domain"
)

var (
	// due time (unix ns, big-endian) handoffId -> timer kind: each open
	// handoff's earliest deadline, in time order.
	bucketTimers  = []byte("timers_due")
	bucketTimerOf = []byte("timer_of") // handoffId -> its key in timers_due
)

// DueTimer is a handoff's earliest deadline as the read models hold it.
type DueTimer struct {
	HandoffID string
	Kind      string
	At        time.Time
}

func timerKey(id string, at time.Time) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano())), id...)
}

// putTimer keeps the timer index on h's earliest deadline.
func putTimer(tx *bbolt.Tx, id string, h *domain.Handoff) error {
	var next *domain.Timer
	if ts := h.Timers(); len(ts) > 0 {
		next = &ts[0]
	}
	var key []byte
	if next != nil {
		key = timerKey(id, next.At)
	}
	of := tx.Bucket(bucketTimerOf)
	if old := of.Get([]byte(id)); old != nil {
		if key != nil && bytes.Equal(old, key) {
			return tx.Bucket(bucketTimers).Put(key, []byte(next.Kind))
		}
		if err := tx.Bucket(bucketTimers).Delete(old); err != nil {
			return err
		}
	}
	if next == nil {
		return of.Delete([]byte(id))
	}
	if err := tx.Bucket(bucketTimers).Put(key, []byte(next.Kind)); err != nil {
		return err
	}
	return of.Put([]byte(id), key)
}

func dropTimer(tx *bbolt.Tx, id string) error {
	of := tx.Bucket(bucketTimerOf)
	if old := of.Get([]byte(id)); old != nil {
		if err := tx.Bucket(bucketTimers).Delete(old); err != nil {
			return err
		}
	}
	return of.Delete([]byte(id))
}

// DueTimers returns up to limit timers due at now, earliest first, and
// when the next one not yet due falls (zero when there is none).
func (r *Runner) DueTimers(now time.Time, limit int) ([]DueTimer, time.Time, error) {
	var due []DueTimer
	var next time.Time
	err := r.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketTimers).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(k) < 8 {
				continue
			}
			at := time.Unix(0, int64(binary.BigEndian.Uint64(k[:8])))
			if at.After(now) {
				next = at
				return nil
			}
			if len(due) == limit {
				next = at
				return nil
			}
			due = append(due, DueTimer{HandoffID: string(k[8:]), Kind: string(v), At: at})
		}
		return nil
	})
	return due, next, err
}

// DueHandoffs is DueTimers as the timer loop takes it: the ids only.
func (r *Runner) DueHandoffs(now time.Time, limit int) ([]string, time.Time, error) {
	due, next, err := r.DueTimers(now, limit)
	ids := make([]string, len(due))
	for i, d := range due {
		ids[i] = d.HandoffID
	}
	return ids, next, err
}
