package projections

import (
	"time"

	"github.com/tidwall/gjson"
	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/domain"
)

// HandoffStats is a count of the handoffs in the read models, for the
// metrics.
type HandoffStats struct {
	ByState map[domain.State]int // every state of domain.States, 0 included
	// PendingApprovals counts the open handoffs whose approval is
	// PENDING_APPROVAL; OldestPending is the creation time of the oldest
	// of them (zero when there is none).
	PendingApprovals int
	OldestPending    time.Time
}

// HandoffStats reads every contract's view once: a scan, linear in the
// handoffs, run per scrape rather than an index kept by the projector, which
// would change the read-model file's layout (and need a rebuild) for a
// number a scrape can afford to count. A quarantined handoff counts in the
// state its view stopped at.
func (r *Runner) HandoffStats() (HandoffStats, error) {
	st := HandoffStats{ByState: make(map[domain.State]int, len(domain.States))}
	for _, s := range domain.States {
		st.ByState[s] = 0
	}
	err := r.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketContracts).ForEach(func(_, v []byte) error {
			f := gjson.GetManyBytes(v, "state", "approvalPolicy.status", "createdAt")
			state := domain.State(f[0].String())
			st.ByState[state]++
			if f[1].String() == domain.ApprovalPending && state != domain.StateLedgerClosed {
				st.PendingApprovals++
				if at, err := time.Parse(time.RFC3339Nano, f[2].String()); err == nil && (st.OldestPending.IsZero() || at.Before(st.OldestPending)) {
					st.OldestPending = at
				}
			}
			return nil
		})
	})
	return st, err
}
