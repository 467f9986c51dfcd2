package http

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/projections"
)

// maxConflictRetries bounds the load-decide-append loop. Each retry means
// another writer moved the handoff first; the retry sees that write.
const maxConflictRetries = 50

// ledger runs handoff commands against the store: load the stream, fold it,
// let the domain decide, append with the expected revision, and start over
// on a conflict.
type ledger struct {
	store eventstore.Store
	now   func() time.Time
}

// loaded is a handoff with its recorded events and their feed positions.
type loaded struct {
	h         *domain.Handoff
	events    []domain.Recorded
	positions []eventstore.Position
}

func (l *ledger) load(ctx context.Context, id string) (*loaded, error) {
	evs, err := eventstore.ReadWholeStream(ctx, l.store, domain.StreamID(id))
	if err != nil {
		return nil, err
	}
	recs := make([]domain.Recorded, 0, len(evs))
	positions := make([]eventstore.Position, 0, len(evs))
	for _, ev := range evs {
		recs = append(recs, projections.RecordedFrom(ev))
		positions = append(positions, ev.Position)
	}
	if len(recs) == 0 {
		return nil, nil
	}
	h := &domain.Handoff{}
	for i, rec := range recs {
		if err := projections.ApplyStored(h, id, evs[i]); err != nil {
			// Written around Baton (a shared store): nothing is decided on
			// it. Its owner, the tenant its contract names (as reads take
			// it), and admins learn which event; others, as for any handoff
			// not theirs, that there is none. Without a contract of its own
			// (the first event is the bad one) only admins learn it.
			owner := ""
			if i > 0 {
				owner = h.Tenant
			}
			return nil, &unfoldable{tenant: owner, QuarantinedError: projections.QuarantinedError{HandoffID: id,
				Quarantine: projections.Quarantine{Seq: rec.Seq, Type: rec.Type, EventID: evs[i].ID.String(), Position: evs[i].Position, Reason: err.Error()}}}
		}
	}
	return &loaded{h: h, events: recs, positions: positions}, nil
}

// unfoldable is a handoff whose stream holds an event the state machine
// cannot apply, as the read models' quarantine would name it, and the
// tenant its contract names ("" when it has none).
type unfoldable struct {
	projections.QuarantinedError
	tenant string
}

// problem is the answer for p: 404 unless the handoff is p's (or p is an
// admin), else 500 handoff_quarantined naming the event, as reads answer.
func (u *unfoldable) problem(op string, p Principal) error {
	if !p.Admin && (u.tenant == "" || u.tenant != p.Tenant) {
		return domain.E(op, domain.KindNotFound, "handoff_not_found", "no handoff %s", u.HandoffID)
	}
	return quarantinedProblem(&u.QuarantinedError)
}

// record turns domain events into chained store events following head.
func (l *ledger) record(id string, head domain.LedgerHead, evs []domain.Event, meta eventstore.Metadata) ([]eventstore.EventData, error) {
	prev := head.Hash
	if head.Seq == 0 {
		prev = domain.GenesisHash(id)
	}
	// Microseconds: every backend stores them exactly, and the hash covers
	// the time.
	now := l.now().UTC().Truncate(time.Microsecond)
	out := make([]eventstore.EventData, len(evs))
	for i, ev := range evs {
		data, err := json.Marshal(ev.Data)
		if err != nil {
			return nil, err
		}
		seq := head.Seq + uint64(i) + 1
		c, err := domain.Canonical(id, seq, ev.Type, meta.Actor, now, data)
		if err != nil {
			return nil, err
		}
		hash := domain.ChainHash(prev, c)
		m := meta
		m.SchemaVersion = 1
		m.RecordedAt = now
		m.PrevHash, m.Hash = prev, hash
		out[i] = eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: ev.Type, Data: data, Metadata: m}
		prev = hash
	}
	return out, nil
}

// create opens a new handoff. It also returns the feed position of the
// handoff's last event (the consistency token of the answer).
func (l *ledger) create(ctx context.Context, c domain.CreateContract, p Principal, requestID string) (*domain.Handoff, eventstore.Position, error) {
	c.HandoffID = uuid.Must(uuid.NewV7()).String()
	c.Tenant = p.Tenant
	evs, err := domain.DecideCreate(c)
	if err != nil {
		return nil, eventstore.Position{}, err
	}
	meta := eventstore.Metadata{Tenant: p.Tenant, Actor: p.Actor(), RequestID: requestID, CausationID: requestID}
	data, err := l.record(c.HandoffID, domain.LedgerHead{}, evs[:1], meta)
	if err != nil {
		return nil, eventstore.Position{}, err
	}
	if len(evs) > 1 {
		// The automatic approval is the policy's act, not the caller's.
		h, err := foldData(c.HandoffID, data)
		if err != nil {
			return nil, eventstore.Position{}, err
		}
		pm := meta
		pm.Actor = domain.AutoApprovalPolicy
		more, err := l.record(c.HandoffID, h.Head, evs[1:], pm)
		if err != nil {
			return nil, eventstore.Position{}, err
		}
		data = append(data, more...)
	}
	res, err := l.store.Append(ctx, domain.StreamID(c.HandoffID), eventstore.NoStream(), data...)
	if err != nil {
		return nil, eventstore.Position{}, err
	}
	h, err := foldData(c.HandoffID, data)
	return h, res.Position, err
}

// foldData folds events that were just built (not yet read back).
func foldData(id string, data []eventstore.EventData) (*domain.Handoff, error) {
	recs := make([]domain.Recorded, len(data))
	for i, d := range data {
		recs[i] = domain.Recorded{Seq: uint64(i) + 1, Type: d.Type, Data: d.Data, Actor: d.Metadata.Actor,
			RecordedAt: d.Metadata.RecordedAt, PrevHash: d.Metadata.PrevHash, Hash: d.Metadata.Hash}
	}
	return domain.Fold(recs)
}

// outcome is a command's answer: the handoff as of the callback's last
// event, whether it was a replay of an earlier identical callback, and the
// feed position of that last event (the consistency token of the answer).
type outcome struct {
	h        *domain.Handoff
	replayed bool
	pos      eventstore.Position
}

// execute runs a command with optimistic concurrency.
func (l *ledger) execute(ctx context.Context, id string, p Principal, requestID string, kind string, ref domain.RequestRef, cmd domain.Command) (outcome, error) {
	op := "handoff." + kind
	for attempt := 0; ; attempt++ {
		cur, err := l.load(ctx, id)
		var bad *unfoldable
		if errors.As(err, &bad) {
			return outcome{}, bad.problem(op, p)
		}
		if err != nil {
			return outcome{}, err
		}
		if cur == nil || (!p.Admin && cur.h.Tenant != p.Tenant) {
			return outcome{}, domain.E(op, domain.KindNotFound, "handoff_not_found", "no handoff %s", id)
		}
		if seq, ok, err := cur.h.Replay(op, kind, ref); err != nil {
			return outcome{}, err
		} else if ok {
			h, err := domain.Fold(cur.events[:seq])
			return outcome{h: h, replayed: true, pos: cur.positions[seq-1]}, err
		}
		evs, err := cur.h.Decide(cmd)
		if err != nil {
			return outcome{}, err
		}
		meta := eventstore.Metadata{Tenant: cur.h.Tenant, Actor: p.Actor(), RequestID: requestID, CausationID: requestID}
		data, err := l.record(id, cur.h.Head, evs, meta)
		if err != nil {
			return outcome{}, err
		}
		res, err := l.store.Append(ctx, domain.StreamID(id), eventstore.Revision(cur.h.Head.Seq-1), data...)
		if errors.Is(err, eventstore.ErrConflict) && attempt < maxConflictRetries {
			continue // someone else moved the handoff: decide again on what they wrote
		}
		if errors.Is(err, eventstore.ErrConflict) {
			// Lost the race this many times: the handoff is very busy. Not
			// an internal error; the callback is safe to retry.
			return outcome{}, domain.E("handoff."+kind, domain.KindUnavailable, "busy",
				"handoff %s changed %d times while this callback was decided; nothing was recorded, retry it (with the same Idempotency-Key)", id, maxConflictRetries+1)
		}
		if err != nil {
			return outcome{}, err
		}
		next, base := cur.h, cur.h.Head.Seq
		for i, d := range data {
			rec := domain.Recorded{Seq: base + uint64(i) + 1, Type: d.Type, Data: d.Data, Actor: d.Metadata.Actor,
				RecordedAt: d.Metadata.RecordedAt, PrevHash: d.Metadata.PrevHash, Hash: d.Metadata.Hash}
			if err := next.Apply(rec); err != nil {
				return outcome{}, err
			}
		}
		return outcome{h: next, pos: res.Position}, nil
	}
}

// bodyHash identifies a callback body for retries.
func bodyHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}
