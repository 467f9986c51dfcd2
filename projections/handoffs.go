package projections

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/records"
)

var (
	bucketContracts = []byte("contracts")           // handoffId -> ContractView JSON
	bucketByTenant  = []byte("contracts_by_tenant") // tenant 0x00 handoffId -> empty
	bucketLedger    = []byte("ledger")              // handoffId 0x00 seq -> ledgerRow JSON
	bucketTenantOf  = []byte("contract_tenant")     // handoffId -> tenant
	// tenant 0x00 state 0x00 handoffId -> empty: listings by state read only
	// the handoffs in it, not every handoff the tenant ever had.
	bucketByState = []byte("contracts_by_state")
	bucketStateOf = []byte("contract_state") // handoffId -> state
	// handoffId -> Quarantine JSON: handoffs whose stream holds an event the
	// projection cannot apply.
	bucketQuarantine = []byte("handoffs_quarantined")
)

// Quarantine records why a handoff's read model stopped: the first event of
// its stream that could not be applied (a payload that does not decode, a
// step the state machine does not allow, a contract naming another
// handoff). Its read model stays as it was before that event and later events
// of the stream are counted, not applied; every other handoff goes on.
type Quarantine struct {
	Seq      uint64              `json:"seq"`
	EventID  string              `json:"eventId"`
	Type     string              `json:"type"`
	Position eventstore.Position `json:"position"`
	Reason   string              `json:"reason"`
	Skipped  uint64              `json:"skipped"` // later events of the stream not applied
	LastSeq  uint64              `json:"lastSeq"` // the last of them (a re-delivered one is not counted again)
}

// newQuarantine records ev as the event a handoff's views stop before.
// Skipped counts the stream's later events the feed delivered, up to
// lastSeq; was, when set, is the quarantine this one replaces (its position
// is kept when it names the same event: stream reads on some KurrentDB
// servers carry no position, the feed's does).
func newQuarantine(ev eventstore.RecordedEvent, reason string, skipped uint64, was *Quarantine) Quarantine {
	q := Quarantine{Seq: ev.Revision + 1, EventID: ev.ID.String(), Type: ev.Type, Position: ev.Position, Reason: reason, Skipped: skipped}
	if skipped > 0 {
		q.LastSeq = q.Seq + skipped
	}
	if was != nil && was.EventID == q.EventID {
		q.Position = was.Position
	}
	return q
}

// QuarantinedError is what reads of a quarantined handoff return.
type QuarantinedError struct {
	HandoffID string
	Quarantine
}

func (e *QuarantinedError) Error() string {
	return fmt.Sprintf("handoff %s: event %d (%s, id %s) cannot be applied: %s", e.HandoffID, e.Seq, e.Type, e.EventID, e.Reason)
}

// refusal marks an error of the event itself (as opposed to the read-model
// file's): the handoff is quarantined, the feed goes on.
type refusal struct{ error }

func (r refusal) Unwrap() error { return r.error }

// Handoffs projects handoff streams into the contracts and ledger read
// models. It keeps recently folded handoffs in memory so that an event does
// not re-read and re-fold its whole handoff; the cache is only a shortcut to
// the same fold, so the read models are the same bytes with or without it.
type Handoffs struct {
	// OnQuarantine, when set, hears each handoff the projection quarantined,
	// after the read models' transaction that recorded it has committed.
	OnQuarantine func(id string, q Quarantine)

	mu      sync.Mutex
	cache   map[string]*domain.Handoff
	pending []pendingQuarantine // recorded in the open transaction
}

type pendingQuarantine struct {
	id string
	q  Quarantine
}

// NewHandoffs returns the projector.
func NewHandoffs() *Handoffs { return &Handoffs{cache: map[string]*domain.Handoff{}} }

// cacheLimit bounds the folded handoffs kept; past it the cache starts over.
const cacheLimit = 10_000

func (p *Handoffs) cached(id string, seq uint64) *domain.Handoff {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h := p.cache[id]; h != nil && h.Head.Seq == seq {
		return h
	}
	return nil
}

// keep caches h under its stream's id (never an id its events name).
func (p *Handoffs) keep(id string, h *domain.Handoff) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cache == nil || len(p.cache) >= cacheLimit {
		p.cache = map[string]*domain.Handoff{}
	}
	if h.State == domain.StateLedgerClosed {
		delete(p.cache, id) // closed: no more events
		return
	}
	p.cache[id] = h
}

// Forget drops the cache; the runner calls it when a transaction fails, as
// the cache may then be ahead of the file. Quarantines of that transaction
// were not recorded.
func (p *Handoffs) Forget() {
	p.mu.Lock()
	p.cache = map[string]*domain.Handoff{}
	p.pending = nil
	p.mu.Unlock()
}

// Committed tells OnQuarantine of the quarantines the runner's last
// transaction recorded.
func (p *Handoffs) Committed() {
	p.mu.Lock()
	done := p.pending
	p.pending = nil
	p.mu.Unlock()
	if p.OnQuarantine != nil {
		for _, d := range done {
			p.OnQuarantine(d.id, d.q)
		}
	}
}

func (*Handoffs) Buckets() [][]byte {
	return [][]byte{bucketContracts, bucketByTenant, bucketLedger, bucketTenantOf, bucketQuarantine, bucketTimers, bucketTimerOf, bucketByState, bucketStateOf}
}

// Prepare builds the state index of a file written before it existed,
// from the views it holds: the same keys a rebuild from zero writes.
func (*Handoffs) Prepare(tx *bbolt.Tx) error {
	if k, _ := tx.Bucket(bucketStateOf).Cursor().First(); k != nil {
		return nil
	}
	tenants := tx.Bucket(bucketTenantOf)
	return tx.Bucket(bucketContracts).ForEach(func(id, view []byte) error {
		tenant := tenants.Get(id)
		if tenant == nil {
			return nil
		}
		return putState(tx, string(tenant), string(id), gjson.GetBytes(view, "state").String())
	})
}

func stateKey(tenant, state, id string) []byte {
	k := make([]byte, 0, len(tenant)+len(state)+len(id)+2)
	return append(append(append(append(append(k, tenant...), 0), state...), 0), id...)
}

// putState moves handoff id to state in the state index.
func putState(tx *bbolt.Tx, tenant, id, state string) error {
	of := tx.Bucket(bucketStateOf)
	was := of.Get([]byte(id))
	if was != nil && string(was) == state {
		return nil
	}
	idx := tx.Bucket(bucketByState)
	if was != nil {
		if err := idx.Delete(stateKey(tenant, string(was), id)); err != nil {
			return err
		}
	}
	if err := idx.Put(stateKey(tenant, state, id), nil); err != nil {
		return err
	}
	return of.Put([]byte(id), []byte(state))
}

// dropState removes handoff id from the state index.
func dropState(tx *bbolt.Tx, tenant, id string) error {
	of := tx.Bucket(bucketStateOf)
	if was := of.Get([]byte(id)); was != nil {
		if err := tx.Bucket(bucketByState).Delete(stateKey(tenant, string(was), id)); err != nil {
			return err
		}
	}
	return of.Delete([]byte(id))
}

// ledgerRow is the stored form of one ledger event: the recorded event with
// raw data (so the contract can be folded again) and the state after it.
type ledgerRow struct {
	domain.Recorded
	StateAfter domain.State `json:"stateAfter"`
}

func ledgerKey(id string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(id), 0), seq)
}

// Wants: the handoff streams.
func (p *Handoffs) Wants(ev eventstore.RecordedEvent) bool {
	return strings.HasPrefix(ev.StreamID, "handoff-")
}

func (p *Handoffs) Apply(tx *bbolt.Tx, ev eventstore.RecordedEvent) error {
	id, ok := strings.CutPrefix(ev.StreamID, "handoff-")
	if !ok || id == "" {
		return nil // "handoff-" alone names no handoff any reader could ask for
	}
	quarantine := tx.Bucket(bucketQuarantine)
	if v := quarantine.Get([]byte(id)); v != nil {
		var q Quarantine
		if err := json.Unmarshal(v, &q); err != nil {
			return err
		}
		if ev.Revision+1 <= max(q.Seq, q.LastSeq) {
			return nil // a replay from an older checkpoint
		}
		q.Skipped, q.LastSeq = q.Skipped+1, ev.Revision+1
		b, err := json.Marshal(q)
		if err != nil {
			return err
		}
		return quarantine.Put([]byte(id), b)
	}
	var h *domain.Handoff
	err := eventstore.ValidateStreamID(ev.StreamID)
	if err != nil {
		// A name only a writer around Baton can make (a shared store):
		// Baton cannot read the stream back, and an id with a 0 byte would
		// reach into another handoff's ledger rows (keyed id 0x00 seq).
		err = refusal{fmt.Errorf("stream name %q: %w", ev.StreamID, err)}
	} else {
		h, err = p.fold(tx, id, ev)
	}
	var bad refusal
	if errors.As(err, &bad) {
		p.drop(id) // Apply may have changed the cached fold before refusing
		q := newQuarantine(ev, bad.Error(), 0, nil)
		b, err := json.Marshal(q)
		if err != nil {
			return err
		}
		p.mu.Lock()
		p.pending = append(p.pending, pendingQuarantine{id, q})
		p.mu.Unlock()
		if err := dropTimer(tx, id); err != nil {
			return err
		}
		return quarantine.Put([]byte(id), b)
	}
	if h == nil || err != nil {
		return err
	}
	p.keep(id, h)
	return p.write(tx, id, records.Recorded(ev), h)
}

// fold is the handoff after ev: from the cache, or folded from the stored
// rows (nil when ev was applied already). Errors of the event itself are
// refusals.
func (p *Handoffs) fold(tx *bbolt.Tx, id string, ev eventstore.RecordedEvent) (*domain.Handoff, error) {
	h := p.cached(id, ev.Revision)
	if h == nil {
		var err error
		if h, err = p.foldFromRows(tx, id, ev.Revision+1); h == nil || err != nil {
			return nil, err
		}
	}
	if err := records.ApplyHandoff(h, id, ev); err != nil {
		return nil, refusal{err}
	}
	return h, nil
}

func (p *Handoffs) drop(id string) {
	p.mu.Lock()
	delete(p.cache, id)
	p.mu.Unlock()
}

// foldFromRows folds a handoff from its stored ledger rows, before the
// event at seq. It returns nil when that event was applied already (a
// replay from an older checkpoint).
func (p *Handoffs) foldFromRows(tx *bbolt.Tx, id string, seq uint64) (*domain.Handoff, error) {
	ledger := tx.Bucket(bucketLedger)
	var rows []domain.Recorded
	prefix := append([]byte(id), 0)
	c := ledger.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var row ledgerRow
		if err := json.Unmarshal(v, &row); err != nil {
			return nil, err
		}
		rows = append(rows, row.Recorded)
	}
	if seq <= uint64(len(rows)) {
		return nil, nil // applied already: a replay from an older checkpoint
	}
	if len(rows) > 0 && seq != uint64(len(rows))+1 {
		// A gap: the feed delivers a stream's events in order, so rows are
		// missing from the file (or its checkpoint is wrong), the file's
		// fault. (With no rows at all, a stream that starts past seq 1 is
		// the event's fault: records.ApplyHandoff refuses it.)
		return nil, fmt.Errorf("handoff %s: the read models hold %d events of it, the feed delivers seq %d: the read-model file is damaged or older than its checkpoint (delete it to rebuild)", id, len(rows), seq)
	}
	// The stored rows folded before; if they no longer do, the file is
	// damaged: that stops the read models rather than blaming the event.
	h, err := domain.Fold(rows)
	if err != nil {
		return nil, fmt.Errorf("handoff %s: its stored rows no longer fold (the read-model file is damaged; delete it to rebuild): %w", id, err)
	}
	return h, nil
}

func (p *Handoffs) write(tx *bbolt.Tx, id string, rec domain.Recorded, h *domain.Handoff) error {
	ledger := tx.Bucket(bucketLedger)
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
	if err := putTimer(tx, id, h); err != nil {
		return err
	}
	if err := putState(tx, h.Tenant, id, string(h.State)); err != nil {
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
	RiskLevel      string
	States         []string  // any of them, when set (beside State)
	CreatedSince   time.Time // zero: any age
	After          string    // cursor: the last handoffId of the previous page
	Limit          int
	// MaxBytes ends a page early once its contracts come to this many
	// bytes (at least one contract a page; 0: no bound). A contract with
	// many proofs runs to megabytes, and a page of a hundred of them
	// would be built whole in memory.
	MaxBytes int
}

// ListContracts returns one tenant's contracts, oldest first (ids are
// time-ordered), and the cursor of the next page ("" when there is none).
func (r *Runner) ListContracts(tenant string, f ContractFilter) ([]json.RawMessage, string, error) {
	var out []json.RawMessage
	next := ""
	err := r.View(func(tx *bbolt.Tx) error {
		contracts := tx.Bucket(bucketContracts)
		if f.After != "" && tx.Bucket(bucketByTenant).Get(append(append([]byte(tenant), 0), f.After...)) == nil {
			// Not one of the tenant's handoffs: a cursor mangled, or
			// from another tenant's listing, would otherwise seek to an
			// arbitrary place and answer a wrong page, or an empty last one.
			return ErrBadCursor
		}
		w, rest := newIDWalk(tx, tenant, f)
		size := 0
		for id := w.seek([]byte(f.After)); id != nil; id = w.next() {
			v := contracts.Get(id)
			if v == nil {
				continue
			}
			if !rest.matches(v) {
				continue
			}
			if len(out) == f.Limit || f.MaxBytes > 0 && size >= f.MaxBytes {
				next = gjson.GetBytes(out[len(out)-1], "handoffId").String()
				return nil
			}
			item := append(json.RawMessage(nil), v...)
			if q := tx.Bucket(bucketQuarantine).Get(id); q != nil && len(item) > 1 && item[0] == '{' {
				// The view stops before an event it could not apply: say so
				// in the listing (a read of the handoff itself is an error).
				rest := item[1:]
				if len(bytes.TrimSpace(rest)) > 1 { // more than the closing brace
					rest = append([]byte{','}, rest...)
				}
				item = append(append([]byte(`{"quarantined":`), q...), rest...)
			}
			out = append(out, item)
			size += len(item)
		}
		return nil
	})
	return out, next, err
}

// matches says whether a contract's view passes the filter's narrowing
// (not its cursor or bounds).
func (f ContractFilter) matches(v []byte) bool {
	if f.State != "" && gjson.GetBytes(v, "state").String() != f.State {
		return false
	}
	if len(f.States) > 0 && !slices.Contains(f.States, gjson.GetBytes(v, "state").String()) {
		return false
	}
	if f.ApprovalStatus != "" && gjson.GetBytes(v, "approvalPolicy.status").String() != f.ApprovalStatus {
		return false
	}
	if f.TargetExecutor != "" && gjson.GetBytes(v, "targetExecutor").String() != f.TargetExecutor {
		return false
	}
	if f.RiskLevel != "" && gjson.GetBytes(v, "riskLevel").String() != f.RiskLevel {
		return false
	}
	if !f.CreatedSince.IsZero() {
		if at, err := time.Parse(time.RFC3339Nano, gjson.GetBytes(v, "createdAt").String()); err != nil || at.Before(f.CreatedSince) {
			return false
		}
	}
	return true
}

// scanChunk bounds the index entries one read transaction of a scan
// walks: a long read transaction holds bbolt's file from growing, and so
// the read models' writes, for as long as it lasts.
const scanChunk = 256

// ScanContracts calls fn with each of a tenant's contracts that the filter
// matches, oldest first, from the start (the filter's cursor and bounds
// are not used), until fn returns false. The view is fn's to read during
// the call only: nothing is copied, so a scan of every handoff holds no
// more than one at a time. It reads in short transactions, each going on
// after the last id the one before read.
func (r *Runner) ScanContracts(tenant string, f ContractFilter, fn func(view []byte) bool) error {
	var last []byte
	for {
		done := false
		err := r.View(func(tx *bbolt.Tx) error {
			contracts := tx.Bucket(bucketContracts)
			w, rest := newIDWalk(tx, tenant, f)
			n := 0
			id := w.seek(last)
			for ; id != nil && n < scanChunk; id = w.next() {
				n++
				last = append(last[:0], id...)
				v := contracts.Get(id)
				if v == nil || !rest.matches(v) {
					continue
				}
				if !fn(v) {
					done = true
					return nil
				}
			}
			done = id == nil
			return nil
		})
		if err != nil || done {
			return err
		}
	}
}

// idWalk walks a tenant's handoff ids in order (time order: they are
// UUIDv7s), from the tenant index, or, when the filter names states, from
// the state index: one cursor a state, merged.
type idWalk struct {
	prefixes [][]byte
	cursors  []*bbolt.Cursor
	keys     [][]byte // each cursor's current key; nil when it is done
}

// newIDWalk also returns the part of f the walk does not decide: a walk of
// the state index has the states asked for, read in the same transaction
// as the views, so their states are not read again.
func newIDWalk(tx *bbolt.Tx, tenant string, f ContractFilter) (*idWalk, ContractFilter) {
	w := &idWalk{}
	states := f.States
	if f.State != "" {
		states = []string{f.State}
		if len(f.States) > 0 && !slices.Contains(f.States, f.State) {
			return w, f // both given and apart: nothing matches
		}
	}
	if len(states) == 0 {
		w.prefixes = [][]byte{append([]byte(tenant), 0)}
		w.cursors = []*bbolt.Cursor{tx.Bucket(bucketByTenant).Cursor()}
	} else {
		for _, st := range slices.Compact(slices.Sorted(slices.Values(states))) {
			w.prefixes = append(w.prefixes, stateKey(tenant, st, ""))
			w.cursors = append(w.cursors, tx.Bucket(bucketByState).Cursor())
		}
		f.State, f.States = "", nil
	}
	w.keys = make([][]byte, len(w.cursors))
	return w, f
}

// seek places the walk on the first id after after (from the start when
// after is empty) and returns it, nil when there is none.
func (w *idWalk) seek(after []byte) []byte {
	for i, c := range w.cursors {
		start := w.prefixes[i]
		if len(after) > 0 {
			start = append(append(append([]byte(nil), start...), after...), 0) // strictly after it
		}
		k, _ := c.Seek(start)
		w.keys[i] = w.within(i, k)
	}
	return w.current()
}

func (w *idWalk) within(i int, k []byte) []byte {
	if k == nil || !bytes.HasPrefix(k, w.prefixes[i]) {
		return nil
	}
	return k
}

// current is the smallest id the cursors are on.
func (w *idWalk) current() []byte {
	var min []byte
	for i, k := range w.keys {
		if k != nil && (min == nil || bytes.Compare(k[len(w.prefixes[i]):], min) < 0) {
			min = k[len(w.prefixes[i]):]
		}
	}
	return min
}

// next moves past the current id and returns the one after it.
func (w *idWalk) next() []byte {
	cur := w.current()
	if cur == nil {
		return nil
	}
	for i, k := range w.keys {
		if k != nil && bytes.Equal(k[len(w.prefixes[i]):], cur) {
			nk, _ := w.cursors[i].Next()
			w.keys[i] = w.within(i, nk)
		}
	}
	return w.current()
}

// Contract returns one contract's view and the tenant that owns it.
func (r *Runner) Contract(id string) (view json.RawMessage, tenant string, found bool, err error) {
	err = r.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bucketContracts).Get([]byte(id)); v != nil {
			view = append(json.RawMessage(nil), v...)
			tenant = string(tx.Bucket(bucketTenantOf).Get([]byte(id)))
		}
		return quarantined(tx, id)
	})
	return view, tenant, view != nil, err
}

// quarantined is a QuarantinedError when handoff id is quarantined.
func quarantined(tx *bbolt.Tx, id string) error {
	v := tx.Bucket(bucketQuarantine).Get([]byte(id))
	if v == nil {
		return nil
	}
	e := &QuarantinedError{HandoffID: id}
	if err := json.Unmarshal(v, &e.Quarantine); err != nil {
		return err
	}
	return e
}

// Quarantined lists the quarantined handoffs (at most limit), by id.
func (r *Runner) Quarantined(limit int) (map[string]Quarantine, int, error) {
	out := map[string]Quarantine{}
	n := 0
	err := r.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketQuarantine).ForEach(func(k, v []byte) error {
			n++
			if len(out) >= limit {
				return nil
			}
			var q Quarantine
			if err := json.Unmarshal(v, &q); err != nil {
				return err
			}
			out[string(k)] = q
			return nil
		})
	})
	return out, n, err
}

// Ledger returns a handoff's trail as auditors read it.
func (r *Runner) Ledger(id string) ([]domain.LedgerEntry, error) {
	var out []domain.LedgerEntry
	err := r.View(func(tx *bbolt.Tx) error {
		if err := quarantined(tx, id); err != nil {
			return err
		}
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

// LedgerPast reports whether handoff id's trail has an event past seq
// after: one key looked up, where Ledger reads and decodes the whole trail
// (a waiting read asks it each time any handoff changes).
func (r *Runner) LedgerPast(id string, after uint64) (bool, error) {
	if after == math.MaxUint64 {
		return false, nil
	}
	var found bool
	err := r.View(func(tx *bbolt.Tx) error {
		if err := quarantined(tx, id); err != nil {
			return err
		}
		k, _ := tx.Bucket(bucketLedger).Cursor().Seek(ledgerKey(id, after+1))
		found = k != nil && bytes.HasPrefix(k, append([]byte(id), 0))
		return nil
	})
	return found, err
}

// Recheck folds every quarantined handoff again from the store, as far as
// the feed has delivered it, rebuilding its views as a rebuild from zero
// would: one that folds now leaves the quarantine, one that still fails
// stays, naming the event that fails now, and one whose stream is gone is
// removed (docs/operations.md, Failures). Run it at start, before Run; it
// returns the handoffs that left the quarantine.
func (r *Runner) Recheck(ctx context.Context, p *Handoffs) ([]string, error) {
	all, n, err := r.Quarantined(1 << 30)
	if err != nil || n == 0 {
		return nil, err
	}
	var released []string
	for id, q := range all {
		stored, err := eventstore.ReadWholeStream(ctx, r.store, domain.StreamID(id))
		if errors.Is(err, eventstore.ErrUnavailable) || ctx.Err() != nil {
			return released, err
		}
		if err != nil {
			continue // a stream Baton cannot read back (its name, its events): it stays quarantined
		}
		// Revisions, not positions: some KurrentDB servers report no
		// position on stream reads.
		last := max(q.Seq, q.LastSeq, q.Seq+q.Skipped)
		var evs []eventstore.RecordedEvent
		for _, ev := range stored {
			if ev.Revision+1 <= last {
				evs = append(evs, ev)
			}
		}
		if n := len(evs); n > 0 && evs[n-1].Revision+1 < last {
			continue // the read lags what the feed delivered (a follower node): next start
		}
		var still *Quarantine
		err = r.db.Update(func(tx *bbolt.Tx) error {
			if err := forgetHandoff(tx, id, len(evs) == 0); err != nil {
				return err
			}
			h := &domain.Handoff{}
			for _, ev := range evs {
				rec := records.Recorded(ev)
				if err := records.ApplyHandoff(h, id, ev); err != nil {
					if h.Head.Seq == 0 { // nothing of it folds: no view
						if err := forgetHandoff(tx, id, true); err != nil {
							return err
						}
					}
					nq := newQuarantine(ev, err.Error(), last-rec.Seq, &q)
					still = &nq
					b, err := json.Marshal(still)
					if err != nil {
						return err
					}
					return tx.Bucket(bucketQuarantine).Put([]byte(id), b)
				}
				if err := p.write(tx, id, rec, h); err != nil {
					return err
				}
			}
			return tx.Bucket(bucketQuarantine).Delete([]byte(id))
		})
		if err != nil {
			return released, err
		}
		p.drop(id)
		switch {
		case still == nil:
			released = append(released, id)
		case still.Seq != q.Seq && p.OnQuarantine != nil:
			p.OnQuarantine(id, *still) // it now fails at another event
		}
	}
	slices.Sort(released)
	return released, nil
}

// forgetHandoff deletes a handoff's ledger rows and, with all, its view and
// tenant entries too.
func forgetHandoff(tx *bbolt.Tx, id string, all bool) error {
	prefix := append([]byte(id), 0)
	c := tx.Bucket(bucketLedger).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	if !all {
		return nil
	}
	if tenant := tx.Bucket(bucketTenantOf).Get([]byte(id)); tenant != nil {
		if err := tx.Bucket(bucketByTenant).Delete(append(append(append([]byte(nil), tenant...), 0), id...)); err != nil {
			return err
		}
		if err := dropState(tx, string(tenant), id); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bucketTenantOf).Delete([]byte(id)); err != nil {
		return err
	}
	if err := dropTimer(tx, id); err != nil {
		return err
	}
	return tx.Bucket(bucketContracts).Delete([]byte(id))
}
