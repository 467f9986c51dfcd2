package projections

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

var (
	bucketContracts = []byte("contracts")           // handoffId -> ContractView JSON
	bucketByTenant  = []byte("contracts_by_tenant") // tenant 0x00 handoffId -> empty
	bucketLedger    = []byte("ledger")              // handoffId 0x00 seq -> ledgerRow JSON
	bucketTenantOf  = []byte("contract_tenant")     // handoffId -> tenant
)

// Handoffs projects handoff streams into the contracts and ledger read
// models.
type Handoffs struct{}

func (Handoffs) Buckets() [][]byte {
	return [][]byte{bucketContracts, bucketByTenant, bucketLedger, bucketTenantOf}
}

// ledgerRow is the stored form of one ledger event: the recorded event with
// raw data (so the contract can be folded again) and the state after it.
type ledgerRow struct {
	domain.Recorded
	StateAfter domain.State `json:"stateAfter"`
}

// RecordedFrom converts a stored handoff event to the domain's form.
func RecordedFrom(ev eventstore.RecordedEvent) domain.Recorded {
	return domain.Recorded{
		Seq: ev.Revision + 1, Type: ev.Type, Data: ev.Data, Actor: ev.Metadata.Actor,
		RecordedAt: ev.Metadata.RecordedAt, PrevHash: ev.Metadata.PrevHash, Hash: ev.Metadata.Hash,
	}
}

func ledgerKey(id string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(id), 0), seq)
}

func (Handoffs) Apply(tx *bbolt.Tx, ev eventstore.RecordedEvent) error {
	id, ok := strings.CutPrefix(ev.StreamID, "handoff-")
	if !ok {
		return nil
	}
	ledger := tx.Bucket(bucketLedger)
	var rows []domain.Recorded
	prefix := append([]byte(id), 0)
	c := ledger.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var row ledgerRow
		if err := json.Unmarshal(v, &row); err != nil {
			return err
		}
		rows = append(rows, row.Recorded)
	}
	rec := RecordedFrom(ev)
	if rec.Seq != uint64(len(rows))+1 {
		// Already applied (a replay from an older checkpoint) or a gap.
		if rec.Seq <= uint64(len(rows)) {
			return nil
		}
		return fmt.Errorf("handoff %s: event seq %d after %d", id, rec.Seq, len(rows))
	}
	h, err := domain.Fold(append(rows, rec))
	if err != nil {
		return err
	}
	row, err := json.Marshal(ledgerRow{Recorded: rec, StateAfter: h.State})
	if err != nil {
		return err
	}
	if err := ledger.Put(ledgerKey(id, rec.Seq), row); err != nil {
		return err
	}
	view, err := json.Marshal(h.View())
	if err != nil {
		return err
	}
	if err := tx.Bucket(bucketContracts).Put([]byte(id), view); err != nil {
		return err
	}
	if rec.Seq == 1 {
		if err := tx.Bucket(bucketTenantOf).Put([]byte(id), []byte(h.Tenant)); err != nil {
			return err
		}
		return tx.Bucket(bucketByTenant).Put(append(append([]byte(h.Tenant), 0), id...), nil)
	}
	return nil
}

// ContractFilter narrows a contract listing.
type ContractFilter struct {
	State          string
	ApprovalStatus string
	TargetExecutor string
	After          string // cursor: the last handoffId of the previous page
	Limit          int
}

// ListContracts returns one tenant's contracts, oldest first (ids are
// time-ordered), and the cursor of the next page ("" when there is none).
func (r *Runner) ListContracts(tenant string, f ContractFilter) ([]json.RawMessage, string, error) {
	var out []json.RawMessage
	next := ""
	err := r.View(func(tx *bbolt.Tx) error {
		idx, contracts := tx.Bucket(bucketByTenant), tx.Bucket(bucketContracts)
		prefix := append([]byte(tenant), 0)
		start := prefix
		if f.After != "" {
			start = append(append([]byte(nil), prefix...), f.After...)
			start = append(start, 0) // strictly after the cursor
		}
		c := idx.Cursor()
		for k, _ := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			id := k[len(prefix):]
			v := contracts.Get(id)
			if v == nil {
				continue
			}
			if f.State != "" && gjson.GetBytes(v, "state").String() != f.State {
				continue
			}
			if f.ApprovalStatus != "" && gjson.GetBytes(v, "approvalPolicy.status").String() != f.ApprovalStatus {
				continue
			}
			if f.TargetExecutor != "" && gjson.GetBytes(v, "targetExecutor").String() != f.TargetExecutor {
				continue
			}
			if len(out) == f.Limit {
				next = gjson.GetBytes(out[len(out)-1], "handoffId").String()
				return nil
			}
			out = append(out, append(json.RawMessage(nil), v...))
		}
		return nil
	})
	return out, next, err
}

// Contract returns one contract's view and the tenant that owns it.
func (r *Runner) Contract(id string) (view json.RawMessage, tenant string, found bool, err error) {
	err = r.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bucketContracts).Get([]byte(id)); v != nil {
			view = append(json.RawMessage(nil), v...)
			tenant = string(tx.Bucket(bucketTenantOf).Get([]byte(id)))
		}
		return nil
	})
	return view, tenant, view != nil, err
}

// Ledger returns a handoff's trail as auditors read it.
func (r *Runner) Ledger(id string) ([]domain.LedgerEntry, error) {
	var out []domain.LedgerEntry
	err := r.View(func(tx *bbolt.Tx) error {
		prefix := append([]byte(id), 0)
		c := tx.Bucket(bucketLedger).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var row ledgerRow
			if err := json.Unmarshal(v, &row); err != nil {
				return err
			}
			out = append(out, domain.LedgerEntry{
				Seq: row.Seq, Type: row.Type, StateAfter: row.StateAfter, RecordedAt: row.RecordedAt,
				Actor: row.Actor, Data: row.Data, PrevHash: row.PrevHash, Hash: row.Hash,
			})
		}
		return nil
	})
	return out, err
}
