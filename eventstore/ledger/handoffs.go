package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/records"
)

// maxConflictRetries bounds the load-decide-append loop. Each retry means
// another writer moved the handoff first; the retry sees that write.
const maxConflictRetries = 50

// Handoffs runs handoff commands against the store.
type Handoffs struct {
	store eventstore.Store
	plans *Plans
	now   func() time.Time
	turns turns // one command of a handoff at a time in this process
	folds folds // the handoffs' states after this process's last loads
}

// NewHandoffs is the handoff service on store; now is the ledger's clock
// (time.Now when nil).
func NewHandoffs(store eventstore.Store, now func() time.Time) *Handoffs {
	if now == nil {
		now = time.Now
	}
	return &Handoffs{store: store, plans: NewPlans(store), now: now}
}

// Call says who runs a command and on behalf of which request.
type Call struct {
	Principal domain.Principal
	RequestID string
	// DrawnAt, when not 0, is the ledger head (seq) the command was decided
	// on: a person's form, drawn at that head. A handoff that moved on
	// since (new proof under a verifier's verdict; heartbeats, and the
	// approvals and escalation of a pending approval, are not news)
	// refuses it, 409
	// handoff_changed, rather than record a decision on what was not seen;
	// a command the handoff as it is refuses anyway (decided by another,
	// closed) gets that refusal instead.
	DrawnAt uint64
	// BeforeWrite, when set, runs once a command is known to write, just
	// before its first append (it may run again on a retry of that
	// append): a request's Idempotency-Key is claimed there on a shared
	// store, so that a request refused before it appends nothing. target
	// is the id a create makes, recorded with the key (Claim.TakeFor), or
	// "".
	BeforeWrite func(ctx context.Context, target string) error
	// Resume, when set, is the id a keyed create makes: the one an earlier
	// request of its key recorded and kept no answer for (Claim.Resume). A
	// handoff of that id already written is that request's, and is the
	// answer (replayed), not a second one.
	Resume string
}

func (c Call) beforeWrite(ctx context.Context, target string) error {
	if c.BeforeWrite == nil {
		return nil
	}
	return c.BeforeWrite(ctx, target)
}

// Outcome is a command's answer: the handoff as of the command's last
// event, whether it replayed an earlier identical command, and the feed
// position of that last event (the consistency token of the answer).
type Outcome struct {
	Handoff  *domain.Handoff
	Replayed bool
	Position eventstore.Position
}

// current is a handoff's state for a command to change, and the feed
// position of its last event.
type current struct {
	h   *domain.Handoff
	pos eventstore.Position
}

func handoffNotFound(op, id string) error {
	return domain.E(op, domain.KindNotFound, "handoff_not_found", "no handoff %s", id)
}

// load folds a handoff's stream, from the state kept after this process's
// last load of it (folds) when there is one; nil when it has no stream. A
// stream holding an event the state machine cannot apply (written around
// Baton on a shared store) is refused: its owner and admins learn which
// event, anyone else that there is no such handoff.
func (s *Handoffs) load(ctx context.Context, op, id string, p domain.Principal) (*current, error) {
	base, pos, kept := s.folds.get(id)
	h, from := &domain.Handoff{}, uint64(0)
	if kept {
		h, from = base.Clone(), base.Head.Seq // revisions count from 0, seqs from 1
	}
	evs, err := eventstore.ReadStreamFrom(ctx, s.store, domain.StreamID(id), from)
	if err != nil || (!kept && len(evs) == 0) {
		return nil, err
	}
	for _, ev := range evs {
		if err := records.ApplyHandoff(h, id, ev); err != nil {
			// Without a contract of its own (the first event is the bad
			// one) only admins learn it.
			owner := ""
			if ev.Revision > 0 {
				owner = h.Tenant
			}
			if !p.CanSee(owner) {
				return nil, handoffNotFound(op, id)
			}
			rec := records.Recorded(ev)
			return nil, Quarantined(id, rec.Seq, rec.Type, ev.ID.String(), err.Error())
		}
		pos = ev.Position
	}
	if len(evs) > 0 {
		s.folds.put(id, h, pos)
		h = h.Clone()
	}
	return &current{h: h, pos: pos}, nil
}

// asOf is handoff id as of its event seq, and that event's position: the
// answer to a command replayed after later ones. Only the events up to seq
// are read: a retried approval is not made to read the thousands of
// heartbeats after it.
func (s *Handoffs) asOf(ctx context.Context, id string, seq uint64) (*domain.Handoff, eventstore.Position, error) {
	const page = 1000
	evs := make([]eventstore.RecordedEvent, 0, min(seq, page))
	for from := uint64(0); uint64(len(evs)) < seq; {
		got, err := s.store.ReadStream(ctx, domain.StreamID(id), from, int(min(seq-uint64(len(evs)), page)))
		if err != nil {
			return nil, eventstore.Position{}, err
		}
		if len(got) == 0 {
			break
		}
		evs = append(evs, got...)
		from = got[len(got)-1].Revision + 1
	}
	if uint64(len(evs)) < seq {
		return nil, eventstore.Position{}, fmt.Errorf("handoff %s: %d events read of the %d it had", id, len(evs), seq)
	}
	recs := make([]domain.Recorded, len(evs))
	for i, ev := range evs {
		recs[i] = records.Recorded(ev)
	}
	h, err := domain.Fold(recs)
	return h, evs[len(evs)-1].Position, err
}

// Quarantined is the error for a handoff whose stream holds an event that
// cannot be applied: it names the event, so that a client never takes the
// state before it for the handoff's state.
func Quarantined(handoffID string, seq uint64, typ, eventID, reason string) error {
	return domain.E("handoff.get", domain.KindInternal, "handoff_quarantined",
		"event %d (%s, id %s) of handoff %s cannot be applied (%s); the handoff's views stop before it, every other handoff is served. Run `baton ledger verify` on it (docs/operations.md)",
		seq, typ, eventID, handoffID, reason)
}

// record turns domain events into chained store events following head,
// recorded at now.
func (s *Handoffs) record(id string, head domain.LedgerHead, evs []domain.Event, meta eventstore.Metadata, now time.Time) ([]eventstore.EventData, error) {
	prev := head.Hash
	if head.Seq == 0 {
		prev = domain.GenesisHash(id)
	}
	// Microseconds: every backend stores them exactly, and the hash covers
	// the time.
	now = now.UTC().Truncate(time.Microsecond)
	out := make([]eventstore.EventData, len(evs))
	for i, ev := range evs {
		data, err := eventJSON(ev.Data)
		if err != nil {
			return nil, err
		}
		if len(data) > maxEventData {
			return nil, domain.E(ev.Type, domain.KindTooLarge, "event_too_large",
				"this request would be recorded as a %s event of %d bytes, over the %d bytes an event may hold; send less (a large artifact as a link to where it is kept)", ev.Type, len(data), maxEventData)
		}
		seq := head.Seq + uint64(i) + 1
		c, err := domain.Canonical(id, seq, ev.Type, meta.Actor, now, data)
		if err != nil {
			return nil, err
		}
		hash := domain.ChainHash(prev, c)
		m := meta
		m.RecordedAt = now
		m.PrevHash, m.Hash = prev, hash
		out[i] = eventstore.NewEvent(ev.Type, data, m)
		prev = hash
	}
	return out, nil
}

// maxEventData is the most data a ledger event may carry: the store's
// limit, less room for its metadata.
const maxEventData = eventstore.MaxEventSize - 4096

// eventJSON encodes an event's data with "<", ">" and "&" as themselves,
// not six bytes each: a body under the request limit stays under the
// event limit, and the hash covers the canonical form either way.
func eventJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Create opens a new handoff, from its plan when it names one. Its
// answer's position is that of the handoff's last event.
func (s *Handoffs) Create(ctx context.Context, call Call, c domain.CreateContract) (Outcome, error) {
	if err := s.FromPlan(ctx, call.Principal, &c); err != nil {
		return Outcome{}, err
	}
	c.HandoffID = call.Resume
	if c.HandoffID == "" {
		c.HandoffID = uuid.Must(uuid.NewV7()).String()
	}
	c.Tenant = call.Principal.Tenant
	evs, err := domain.DecideCreate(c)
	if err != nil {
		return Outcome{}, err
	}
	meta := eventstore.Metadata{Tenant: c.Tenant, Actor: call.Principal.Actor(), RequestID: call.RequestID, CausationID: call.RequestID}
	data, err := s.record(c.HandoffID, domain.LedgerHead{}, evs[:1], meta, s.now())
	if err != nil {
		return Outcome{}, err
	}
	if len(evs) > 1 {
		// The automatic approval is the policy's act, not the caller's.
		h, err := foldData(data)
		if err != nil {
			return Outcome{}, err
		}
		pm := meta
		pm.Actor = domain.AutoApprovalPolicy
		more, err := s.record(c.HandoffID, h.Head, evs[1:], pm, s.now())
		if err != nil {
			return Outcome{}, err
		}
		data = append(data, more...)
	}
	if err := call.beforeWrite(ctx, c.HandoffID); err != nil {
		return Outcome{}, err
	}
	res, err := appendSettled(ctx, s.store, domain.StreamID(c.HandoffID), eventstore.NoStream(), data...)
	if errors.Is(err, eventstore.ErrConflict) && call.Resume != "" {
		return s.created(ctx, c.HandoffID)
	}
	if err != nil {
		return Outcome{}, err
	}
	h, err := foldData(data)
	return Outcome{Handoff: h, Position: res.Position}, err
}

// created is handoff id as its create left it, the answer to a keyed
// create whose first request wrote it and kept no answer: the stream's
// first events of that request (the contract, and an automatic approval).
func (s *Handoffs) created(ctx context.Context, id string) (Outcome, error) {
	evs, err := s.store.ReadStream(ctx, domain.StreamID(id), 0, 2)
	if err != nil {
		return Outcome{}, err
	}
	if len(evs) == 0 {
		return Outcome{}, fmt.Errorf("handoff %s: no events after its create conflicted", id)
	}
	recs := make([]domain.Recorded, 0, len(evs))
	for _, ev := range evs {
		if ev.Metadata.RequestID != evs[0].Metadata.RequestID {
			break
		}
		recs = append(recs, records.Recorded(ev))
	}
	h, err := domain.Fold(recs)
	return Outcome{Handoff: h, Replayed: true, Position: evs[len(recs)-1].Position}, err
}

// FromPlan fills a contract's missing fields from the plan it names, if
// any, and holds it to the plan's policy (domain.CreateContract.FromPlan).
// A plan p cannot see is a wrong planId.
func (s *Handoffs) FromPlan(ctx context.Context, p domain.Principal, c *domain.CreateContract) error {
	if c.PlanID == "" {
		return nil
	}
	plan, err := s.plans.Get(ctx, p, c.PlanID)
	if domain.KindOf(err) == domain.KindNotFound {
		return domain.Invalid("handoff.create", domain.FieldError{Pointer: "/planId", Code: "unknown_plan", Message: "no plan with this id for this tenant; create one with POST /v1/agent-plans"})
	}
	if err != nil {
		return err
	}
	return c.FromPlan(plan)
}

// foldData folds events that were just built (not yet read back).
func foldData(data []eventstore.EventData) (*domain.Handoff, error) {
	recs := make([]domain.Recorded, len(data))
	for i, d := range data {
		recs[i] = recordedData(uint64(i)+1, d)
	}
	return domain.Fold(recs)
}

func recordedData(seq uint64, d eventstore.EventData) domain.Recorded {
	return domain.Recorded{Seq: seq, Type: d.Type, Data: d.Data, Actor: d.Metadata.Actor,
		RecordedAt: d.Metadata.RecordedAt, PrevHash: d.Metadata.PrevHash, Hash: d.Metadata.Hash}
}

// Handle runs one callback or review on handoff id with optimistic
// concurrency: load, replay or decide, append at the expected revision,
// and start over when another writer moved the handoff first.
func (s *Handoffs) Handle(ctx context.Context, call Call, id string, cmd domain.Command) (Outcome, error) {
	kind, ref := domain.CommandKind(cmd), domain.CommandRequest(cmd)
	op := "handoff." + kind
	if eventstore.ValidateStreamID(domain.StreamID(id)) != nil {
		return Outcome{}, handoffNotFound(op, id) // no stream can have such a name
	}
	done, err := s.turns.take(ctx, id)
	if err != nil {
		return Outcome{}, err
	}
	defer done()
	for attempt := 0; ; attempt++ {
		cur, err := s.load(ctx, op, id, call.Principal)
		if err != nil {
			return Outcome{}, err
		}
		if cur == nil || !call.Principal.CanSee(cur.h.Tenant) {
			return Outcome{}, handoffNotFound(op, id)
		}
		if seq, ok, err := cur.h.ReplayAs(op, kind, ref, call.Principal.Actor()); err != nil {
			return Outcome{}, err
		} else if ok {
			if seq == cur.h.Head.Seq {
				return Outcome{Handoff: cur.h, Replayed: true, Position: cur.pos}, nil
			}
			h, pos, err := s.asOf(ctx, id, seq)
			return Outcome{Handoff: h, Replayed: true, Position: pos}, err
		}
		// One clock reading decides the deadlines and dates the events: a
		// callback let through just before a deadline is not recorded as
		// after it.
		now := s.now()
		if err := domain.ValidateCommand(cmd); err != nil {
			return Outcome{}, err
		}
		evs, err := cur.h.DecideAs(cmd, call.Principal.Actor())
		if err != nil {
			// Refused on the handoff as it is (decided by another, closed,
			// expired): that says more than "it changed, decide again",
			// which a decision that can no longer be made cannot do, and
			// more than a deadline: it holds whatever the clock says (an
			// approval of a decided handoff is not about its lease).
			// Unless the deadline's own event lifts it (a release frees
			// the handoff for the run refused): then the deadline decides.
			if cur.h.Lifts(err, now) {
				return Outcome{}, cur.h.Overdue(op, now)
			}
			return Outcome{}, err
		}
		if err := cur.h.Overdue(op, now); err != nil {
			return Outcome{}, err
		}
		// Heartbeats since the page was drawn show the person nothing new:
		// counted as changes, an executor heartbeating every second kept
		// its proof from being reviewed.
		if call.DrawnAt != 0 && (cur.h.Changed > call.DrawnAt || call.DrawnAt > cur.h.Head.Seq) {
			return Outcome{}, domain.E(op, domain.KindConflict, "handoff_changed",
				"handoff %s changed since this page was drawn (at event %d; it is at event %d now): nothing was recorded; read what came and decide again", id, call.DrawnAt, cur.h.Head.Seq)
		}
		meta := eventstore.Metadata{Tenant: cur.h.Tenant, Actor: call.Principal.Actor(), RequestID: call.RequestID, CausationID: call.RequestID}
		data, err := s.record(id, cur.h.Head, evs, meta, now)
		if err != nil {
			return Outcome{}, err
		}
		res, err := s.store.Append(ctx, domain.StreamID(id), eventstore.Revision(cur.h.Head.Seq-1), data...)
		if errors.Is(err, eventstore.ErrConflict) {
			if attempt < maxConflictRetries {
				continue // decide again on what the other writer wrote
			}
			// Not an internal error: the handoff is very busy, and the
			// callback is safe to retry.
			e := domain.E(op, domain.KindUnavailable, "busy",
				"handoff %s changed %d times while this callback was decided; nothing was recorded, retry it (with the same Idempotency-Key)", id, maxConflictRetries+1)
			e.RetryAfter = 1
			return Outcome{}, e
		}
		if errors.Is(err, eventstore.ErrTooLarge) {
			// Under the store's event limit but over what it takes in one
			// append (KurrentDB's --max-append-size, 1 MiB by default): a
			// body near the request limit gets there.
			return Outcome{}, domain.E(op, domain.KindTooLarge, "event_too_large",
				"the events this request would record come to more than the event store takes in one append (KurrentDB's --max-append-size); nothing was recorded: send less (a large artifact as a link to where it is kept)")
		}
		if err != nil {
			return Outcome{}, err
		}
		next, base := cur.h, cur.h.Head.Seq
		for i, d := range data {
			if err := next.Apply(recordedData(base+uint64(i)+1, d)); err != nil {
				return Outcome{}, err
			}
		}
		s.folds.put(id, next, res.Position)
		return Outcome{Handoff: next.Clone(), Position: res.Position}, nil
	}
}
