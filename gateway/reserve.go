package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
)

// Budget hold events share the tenant's budget stream with its limits, so
// a hold appended at the revision its check read was checked against every
// hold and every limit before it (docs/budgets.md).
const (
	EventBudgetHeld         = "BudgetHeld"
	EventBudgetHoldRenewed  = "BudgetHoldRenewed"
	EventBudgetHoldReleased = "BudgetHoldReleased"
)

// BudgetHeld holds a call's worst case against its tenant's budget until
// the usage event UsageEvent lands, a BudgetHoldReleased says otherwise,
// or ExpiresAt passes. The hold's id is its event's id.
type BudgetHeld struct {
	Tenant     string    `json:"tenant"`
	Model      string    `json:"model"`
	WorstUSD   float64   `json:"worstUsd"`
	ExpiresAt  time.Time `json:"expiresAt"`
	UsageEvent uuid.UUID `json:"usageEvent"`
}

// BudgetHoldRenewed moves a hold's expiry on while its call runs.
type BudgetHoldRenewed struct {
	Hold      uuid.UUID `json:"hold"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// BudgetHoldReleased names the usage event that ends a hold when it is
// not the one the hold named; uuid.Nil: no usage event follows, the hold
// ends here.
type BudgetHoldReleased struct {
	Hold       uuid.UUID `json:"hold"`
	UsageEvent uuid.UUID `json:"usageEvent"`
}

// DefaultHoldTTL is how long a shared hold counts without renewal: what a
// replica that dies mid-call costs its tenants' budgets at most. A running
// call renews its hold every third of it.
const DefaultHoldTTL = 2 * time.Minute

const (
	// maxHoldAttempts bounds the appends of one reservation that lose the
	// race to other replicas; each loss brings their holds in first.
	maxHoldAttempts = 64
	// storeWriteTimeout bounds a renewal or release append.
	storeWriteTimeout = 5 * time.Second
)

// holdWait bounds a reservation's time with the store (its turn among the
// tenant's holds on this replica, its appends and reads): past it the
// store is taken as unavailable and the call refused (503), not left to
// wait for a client that waits up to a minute for an absent store, behind
// the tenant's other calls that each wait as long.
var holdWait = 10 * time.Second

// ErrHoldUnavailable marks a call refused because the store did not take
// its budget hold: the call was not made (a hold that may have committed
// expires).
var ErrHoldUnavailable = errors.New("gateway: budget hold")

// UseStore shares holds through store: every Budgets on the same store
// (one per replica) enforces one budget per tenant. onErr, if not nil,
// hears renewals and releases that could not be appended (those holds
// expire instead). Call it before the first Reserve. A store only this
// process writes (eventstore.Exclusive) needs none of it.
func (b *Budgets) UseStore(store eventstore.Store, onErr func(error)) {
	b.mu.Lock()
	b.store, b.onError = store, onErr
	b.mu.Unlock()
}

type hold struct {
	worst   float64
	expires time.Time // zero: held until settled (this process's own)
	usage   uuid.UUID // the usage event that releases it
}

type holdRef struct {
	tenant string
	hold   uuid.UUID
}

// holdBook is a tenant's holds and how far its budget stream is folded.
type holdBook struct {
	tenant string
	rev    uint64 // the last revision folded, when exists
	exists bool
	holds  map[uuid.UUID]*hold
	sum    float64   // of holds' worst cases
	next   time.Time // the earliest expiry among holds; zero when none expires
	gate   chan struct{}
}

func (b *Budgets) holdBook(tenant string) *holdBook {
	hb := b.holds[tenant]
	if hb == nil {
		hb = &holdBook{tenant: tenant, holds: map[uuid.UUID]*hold{}, gate: make(chan struct{}, 1)}
		b.holds[tenant] = hb
	}
	return hb
}

func (hb *holdBook) add(b *Budgets, id uuid.UUID, h hold) {
	if _, dup := hb.holds[id]; dup {
		return
	}
	hb.holds[id] = &h
	hb.sum += h.worst
	if !h.expires.IsZero() && (hb.next.IsZero() || h.expires.Before(hb.next)) {
		hb.next = h.expires
	}
	if h.usage != uuid.Nil {
		b.awaiting[h.usage] = holdRef{hb.tenant, id}
	}
}

func (b *Budgets) dropHoldLocked(tenant string, id uuid.UUID) {
	hb := b.holds[tenant]
	if hb == nil {
		return
	}
	h := hb.holds[id]
	if h == nil {
		return
	}
	delete(hb.holds, id)
	if h.usage != uuid.Nil {
		delete(b.awaiting, h.usage)
	}
	hb.sum -= h.worst
	if len(hb.holds) == 0 {
		hb.sum, hb.next = 0, time.Time{} // no rounding left behind
	}
}

// held is the sum of the holds that have not expired at now.
func (hb *holdBook) held(b *Budgets, now time.Time) float64 {
	if hb.next.IsZero() || now.Before(hb.next) {
		return hb.sum
	}
	hb.sum, hb.next = 0, time.Time{}
	for id, h := range hb.holds {
		if !h.expires.IsZero() && !now.Before(h.expires) {
			delete(hb.holds, id) // its replica died mid-call, or could not renew it
			if h.usage != uuid.Nil {
				delete(b.awaiting, h.usage)
			}
			continue
		}
		hb.sum += h.worst
		if !h.expires.IsZero() && (hb.next.IsZero() || h.expires.Before(hb.next)) {
			hb.next = h.expires
		}
	}
	return hb.sum
}

// expected is the revision the next hold's append expects.
func (hb *holdBook) expected() eventstore.ExpectedRevision {
	if !hb.exists {
		return eventstore.NoStream()
	}
	return eventstore.Revision(hb.rev)
}

// applyBudgetEvent folds an event of a budget stream in revision order:
// one already folded (read by a reservation before the follower brought
// it) or beyond a gap (read in order later) is skipped. A BudgetSet from
// elsewhere (no stream) sets limits as it always did.
func (b *Budgets) applyBudgetEvent(ev eventstore.RecordedEvent) error {
	tenant, inStream := strings.CutPrefix(ev.StreamID, "budget-")
	var (
		set      BudgetSet
		held     BudgetHeld
		renewed  BudgetHoldRenewed
		released BudgetHoldReleased
		err      error
	)
	switch ev.Type {
	case EventBudgetSet:
		err = json.Unmarshal(ev.Data, &set)
	case EventBudgetHeld:
		err = json.Unmarshal(ev.Data, &held)
	case EventBudgetHoldRenewed:
		err = json.Unmarshal(ev.Data, &renewed)
	case EventBudgetHoldReleased:
		err = json.Unmarshal(ev.Data, &released)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !inStream {
		if ev.Type != EventBudgetSet {
			return nil // a hold outside a budget stream orders against nothing
		}
	} else {
		// The first event seen may be past 0: KurrentDB goes on counting
		// the revisions of a stream deleted and written again.
		hb := b.holdBook(tenant)
		if hb.exists && ev.Revision != hb.rev+1 {
			return nil
		}
		hb.rev, hb.exists = ev.Revision, true // undecodable or not, it is past
	}
	if err != nil {
		return fmt.Errorf("gateway: budget event %s: %w", ev.ID, err)
	}
	switch ev.Type {
	case EventBudgetSet:
		b.limits[set.Tenant] = set.Limits
	case EventBudgetHeld:
		// Kept even if expired by now: a renewal further on may extend it
		// (held drops it otherwise). Its usage event comes soon after it
		// in the feed, so catching up from the start keeps few.
		if held.WorstUSD > 0 {
			b.holdBook(tenant).add(b, ev.ID, hold{worst: held.WorstUSD, expires: held.ExpiresAt, usage: held.UsageEvent})
		}
	case EventBudgetHoldRenewed:
		if h := b.holdBook(tenant).holds[renewed.Hold]; h != nil && renewed.ExpiresAt.After(h.expires) {
			h.expires = renewed.ExpiresAt // hb.next may now be early: held recomputes it then
		}
	case EventBudgetHoldReleased:
		h := b.holdBook(tenant).holds[released.Hold]
		switch {
		case h == nil:
		case released.UsageEvent == uuid.Nil:
			b.dropHoldLocked(tenant, released.Hold)
		default: // held on until that event lands: it carries the cost
			delete(b.awaiting, h.usage)
			h.usage = released.UsageEvent
			b.awaiting[h.usage] = holdRef{tenant, released.Hold}
		}
	}
	return nil
}

// catchUp folds the tenant's budget stream from store up to its end.
func (b *Budgets) catchUp(ctx context.Context, store eventstore.Store, tenant string) error {
	const page = 256
	for {
		b.mu.Lock()
		hb := b.holdBook(tenant)
		from := uint64(0)
		if hb.exists {
			from = hb.rev + 1
		}
		b.mu.Unlock()
		evs, err := store.ReadStream(ctx, BudgetStream(tenant), from, page)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			b.applyBudgetEvent(ev) // an undecodable event is past all the same; the follower reports it
		}
		if len(evs) < page {
			return nil
		}
	}
}

// reserveShared appends the hold at the revision of the budget stream its
// check saw. Losing the race to another replica (a conflict) means reading
// what it wrote and checking again.
func (b *Budgets) reserveShared(ctx context.Context, tenant, model string, worst float64) (*Reservation, error) {
	b.mu.Lock()
	hb := b.holdBook(tenant)
	b.mu.Unlock()
	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, holdWait)
	defer cancel()
	failed := func(err error) error {
		if caller.Err() == nil && ctx.Err() != nil {
			// holdWait passed, not the caller's time: the store did not
			// answer (an append may have committed: it expires).
			return fmt.Errorf("%w for tenant %s: %w: no answer within %v (%v)", ErrHoldUnavailable, tenant, eventstore.ErrUnavailable, holdWait, err)
		}
		return fmt.Errorf("%w for tenant %s: %w", ErrHoldUnavailable, tenant, err)
	}
	// One append at a time per tenant from this replica: concurrent ones
	// would only lose the race to each other and read again.
	select {
	case hb.gate <- struct{}{}:
	case <-ctx.Done():
		return nil, failed(ctx.Err())
	}
	defer func() { <-hb.gate }()

	id, usage := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	for attempt := 1; ; attempt++ {
		b.mu.Lock()
		l := b.limits[tenant]
		if !limited(l) { // the limits went while this call waited
			b.mu.Unlock()
			return &Reservation{b: b, tenant: tenant}, nil
		}
		if e := b.refusalLocked(tenant, model, l, hb, worst); e != nil {
			b.mu.Unlock()
			return nil, e
		}
		expected := hb.expected()
		h := BudgetHeld{Tenant: tenant, Model: model, WorstUSD: worst, ExpiresAt: b.now().UTC().Add(b.holdTTL), UsageEvent: usage}
		b.mu.Unlock()

		data, err := json.Marshal(h)
		if err != nil {
			return nil, err
		}
		ev := eventstore.EventData{ID: id, Type: EventBudgetHeld, Data: data,
			Metadata: eventstore.Metadata{Tenant: tenant, SchemaVersion: eventstore.SchemaVersion}}
		res, err := b.store.Append(ctx, BudgetStream(tenant), expected, ev)
		if err == nil {
			b.applyBudgetEvent(eventstore.RecordedEvent{StreamID: BudgetStream(tenant), Revision: res.NextRevision, Position: res.Position, EventData: ev})
			r := &Reservation{b: b, tenant: tenant, worst: worst, limited: true, hold: id, usage: usage, shared: true}
			r.mu.Lock()
			r.renewal = time.AfterFunc(b.holdTTL/3, r.renew)
			r.mu.Unlock()
			return r, nil
		}
		if attempt == maxHoldAttempts && errors.Is(err, eventstore.ErrConflict) {
			// Contended past all reason: the store is busy for this
			// tenant; the caller may retry in a moment.
			return nil, fmt.Errorf("%w for tenant %s: %w (%v)", ErrHoldUnavailable, tenant, eventstore.ErrUnavailable, err)
		}
		if !errors.Is(err, eventstore.ErrConflict) {
			// An append that may have committed holds until it expires.
			return nil, failed(err)
		}
		if err := b.catchUp(ctx, b.store, tenant); err != nil {
			return nil, failed(err)
		}
	}
}

// renew moves the hold's expiry on while the call runs, and again a third
// of the TTL later, until Settle (which waits for a renewal under way, so
// nothing is written for the call after it).
func (r *Reservation) renew() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	b := r.b
	expires := b.now().UTC().Add(b.holdTTL)
	if b.appendHoldEvent(r.tenant, EventBudgetHoldRenewed, BudgetHoldRenewed{Hold: r.hold, ExpiresAt: expires}) == nil {
		b.mu.Lock()
		if h := b.holdBook(r.tenant).holds[r.hold]; h != nil && expires.After(h.expires) {
			h.expires = expires
		}
		b.mu.Unlock()
	}
	r.renewal.Reset(b.holdTTL / 3)
}

func (r *Reservation) stopRenewal() {
	r.mu.Lock()
	r.done = true
	if r.renewal != nil {
		r.renewal.Stop()
	}
	r.mu.Unlock()
}

// releaseShared tells other replicas which usage event ends the hold, or
// (uuid.Nil) that none does.
func (b *Budgets) releaseShared(r *Reservation, usage uuid.UUID) {
	b.appendHoldEvent(r.tenant, EventBudgetHoldReleased, BudgetHoldReleased{Hold: r.hold, UsageEvent: usage})
}

// appendHoldEvent appends a renewal or release. Neither needs the check a
// hold does, so neither expects a revision beyond the stream's existence;
// a hold's append that races one reads it and checks again.
func (b *Budgets) appendHoldEvent(tenant, typ string, v any) error {
	data, err := json.Marshal(v)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), storeWriteTimeout)
		_, err = b.store.Append(ctx, BudgetStream(tenant), eventstore.StreamExists(),
			eventstore.NewEvent(typ, data, eventstore.Metadata{Tenant: tenant}))
		cancel()
	}
	if err != nil && b.onError != nil {
		b.onError(fmt.Errorf("gateway: %s for tenant %s not recorded (the hold expires instead): %w", typ, tenant, err))
	}
	return err
}
