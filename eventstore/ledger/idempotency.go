package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

// Idempotency keeps the answers of requests sent with an Idempotency-Key,
// Stripe's way; docs/api.md describes the rules and docs/idempotency.md the
// design. One stream per tenant and key: IdempotencyStarted claims the key
// (of racing requests exactly one appends it), IdempotencyCompleted holds
// the answer, IdempotencyReleased frees the key for a retry, and
// IdempotencyOutput keeps what a request paid for before its answer (a
// model's output), for a retry that resumes it after a crash.
type Idempotency struct {
	store     eventstore.Store
	retention time.Duration
	// Lease bounds how long a started request holds its key: a process
	// that died mid-request leaves a Started event with no Completed.
	Lease    time.Duration
	inFlight sync.Map // stream -> Hashes, while its request runs (exclusive stores)
	now      func() time.Time
	// The background writes (writeLater) still running, for Settle.
	laterMu sync.Mutex
	later   int
	idle    chan struct{} // closed when later falls to 0 (Settle waits on it)
}

// DefaultIdempotencyRetention is how long a key and its answer are kept.
const DefaultIdempotencyRetention = 24 * time.Hour

// DefaultIdempotencyLease is how long a started request holds its key.
const DefaultIdempotencyLease = 10 * time.Minute

const (
	evIdemStarted   = "IdempotencyStarted"
	evIdemCompleted = "IdempotencyCompleted"
	evIdemReleased  = "IdempotencyReleased"
	evIdemRenewed   = "IdempotencyRenewed"
	evIdemOutput    = "IdempotencyOutput"
)

// NewIdempotency is the idempotency record service on store, keeping
// answers for retention (DefaultIdempotencyRetention when 0).
func NewIdempotency(store eventstore.Store, retention time.Duration) *Idempotency {
	if retention <= 0 {
		retention = DefaultIdempotencyRetention
	}
	return &Idempotency{store: store, retention: retention, Lease: DefaultIdempotencyLease, now: time.Now}
}

// Answer is a kept answer, written again to every retry.
type Answer struct {
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
	Body        string `json:"body"` // the answer's bytes (JSON text)
	Location    string `json:"location,omitempty"`
	RetryAfter  string `json:"retryAfter,omitempty"`
	RequestID   string `json:"requestId"`
}

type idemStarted struct {
	Endpoint     string    `json:"endpoint"`
	BodyHash     string    `json:"bodyHash"`               // of the body's bytes
	BodyJSONHash string    `json:"bodyJsonHash,omitempty"` // of its canonical JSON, when it has one
	RequestID    string    `json:"requestId"`
	StartedAt    time.Time `json:"startedAt"`
	// Target is the id of what the request creates (a handoff, a context
	// packet, a plan, a webhook endpoint or rotation), recorded before it
	// is written: if its answer is never kept (the process died
	// between the two appends), a retry makes the same one, or finds it
	// made, rather than a second.
	Target string `json:"target,omitempty"`
}

// idemOutput is one step of a request's paid work (a generation's
// attempt: the model's answer), kept before the request answers.
type idemOutput struct {
	Step         int             `json:"step"` // from 1
	BodyHash     string          `json:"bodyHash"`
	BodyJSONHash string          `json:"bodyJsonHash,omitempty"`
	Output       json.RawMessage `json:"output"`
	RecordedAt   time.Time       `json:"recordedAt"`
}

type idemCompleted struct {
	Answer
	// Set when no Started event holds them (the claim was in memory).
	BodyHash     string    `json:"bodyHash,omitempty"`
	BodyJSONHash string    `json:"bodyJsonHash,omitempty"`
	CompletedAt  time.Time `json:"completedAt"`
}

func idemStream(tenant, key string) string {
	sum := sha256.Sum256([]byte(key))
	return "idem-" + tenant + "-" + hex.EncodeToString(sum[:16])
}

// Claim is a key held by the request that runs; Complete or Release ends it.
type Claim struct {
	s      *Idempotency
	lease  time.Duration // s.Lease when the request began: Hold reads it on its own goroutine
	stream string
	meta   eventstore.Metadata
	hashes Hashes
	memory bool // held in inFlight, not by a Started event
	// pending: a claim on a shared store not appended yet (Check): Take
	// appends its Started event, before the request's first write.
	pending bool
	started idemStarted // the Started event's data, for Take
	// recorded: a claim held in memory whose Started event was appended
	// too (TakeFor named a target), so Release appends its release.
	recorded bool
	// resume is the Started event of an earlier request of the key that
	// named its target and kept no answer: this request makes that target.
	resume *idemStarted
	// outputs: those an earlier request with this key and body kept
	// (Keep) and never answered, its process gone: the steps this request
	// need not pay for again.
	outputs []json.RawMessage
	// mu guards expected and done: Hold renews the claim while the
	// request's own goroutine completes or releases it.
	mu       sync.Mutex
	expected eventstore.ExpectedRevision
	done     bool
	sent     map[uuid.UUID]bool // the ids of the events the claim appended, or tried to
}

// ErrKeyReused and the in-flight error are the answers for a key another
// request holds or held with another body.
func keyReused() error {
	return domain.E("idempotency", domain.KindInvalid, "idempotency_key_reused",
		"This Idempotency-Key was used with a different request (another body, or another endpoint); use a new key for a new request.")
}

func keyInFlight() error { return keyInFlightFor(1) }

// keyInFlightFor is the in-flight error with Retry-After wait seconds.
func keyInFlightFor(wait int) error {
	e := domain.E("idempotency", domain.KindConflict, "idempotency_in_flight",
		"A request with this Idempotency-Key is still being processed; retry after it finishes to get its answer.")
	e.RetryAfter = wait
	return e
}

// maxInFlightWait bounds the Retry-After of a key in flight: a client
// still looks again within a minute, and the OpenAI and Anthropic SDKs
// ignore a longer one.
const maxInFlightWait = 60

// inFlightWait is the Retry-After, in seconds, for a key whose claim was
// started or last renewed at at: 1, unless the claim has missed its
// renewal (they come every third of the lease; a twentieth more allows
// for a slow append or another replica's clock). Its process has most
// likely died, and the key is free only once the lease runs out: the time
// left on it, within maxInFlightWait. Told 1 s, a retry came back about
// 600 times over a dead claim's lease.
func (s *Idempotency) inFlightWait(at time.Time) int {
	since := s.now().Sub(at)
	if since <= s.Lease/3+s.Lease/20 {
		return 1
	}
	left := (s.Lease - since + time.Second - 1) / time.Second
	return int(min(max(left, 1), maxInFlightWait))
}

// Begin claims key for a request of endpoint with body. When the key holds
// a kept answer for the same body, that answer is returned (and no claim);
// a key held or kept for another body, or still running, is an error.
func (s *Idempotency) Begin(ctx context.Context, call Call, endpoint, key string, body []byte) (*Claim, *Answer, error) {
	hashes := BodyHashes(endpoint, body)
	stream := idemStream(call.Principal.Tenant, key)
	c := &Claim{s: s, stream: stream, hashes: hashes, lease: s.Lease,
		meta: eventstore.Metadata{Tenant: call.Principal.Tenant, Actor: call.Principal.Actor(), RequestID: call.RequestID}}
	// On a store only this process writes (the embedded one), every
	// request for the key comes here, so the claim is held in memory; on a
	// shared store (several replicas) it is an append that exactly one of
	// racing requests wins.
	if exclusive(s.store) {
		if other, busy := s.inFlight.LoadOrStore(stream, hashes); busy {
			o := other.(Hashes)
			if !hashes.match(o.Raw, o.JSON) {
				return nil, nil, keyReused()
			}
			return nil, nil, keyInFlight()
		}
		c.memory = true
		c.started = idemStarted{Endpoint: endpoint, BodyHash: hashes.Raw, BodyJSONHash: hashes.JSON, RequestID: call.RequestID}
		evs, err := eventstore.ReadWholeStream(ctx, s.store, stream)
		if err == nil {
			var kept *Answer
			c.expected, kept, c.resume, c.outputs, err = s.lookup(evs, hashes, true)
			if err == nil && kept == nil {
				return c, nil, nil
			}
			c.release()
			return nil, kept, err
		}
		c.release()
		return nil, nil, err
	}
	for range 5 {
		c, kept, err := s.Check(ctx, call, endpoint, key, body)
		if err != nil || kept != nil {
			return nil, kept, err
		}
		c.mu.Lock()
		err = c.take(ctx)
		c.mu.Unlock()
		if errors.Is(err, eventstore.ErrConflict) {
			continue // someone else started or finished: look again
		}
		if err != nil {
			return nil, nil, err
		}
		return c, nil, nil
	}
	return nil, nil, keyInFlight()
}

// Check is Begin whose claim, on a shared store, is not appended yet: the
// key is looked up (a kept answer, or an error for another body or a
// request still running), and the claim is appended by Take, just before
// the request's first write, or with its answer by Complete. A request
// refused before it writes then appends nothing to the key's stream. Two
// racing requests both pass Check; only one Take (or Complete) succeeds.
func (s *Idempotency) Check(ctx context.Context, call Call, endpoint, key string, body []byte) (*Claim, *Answer, error) {
	if exclusive(s.store) {
		return s.Begin(ctx, call, endpoint, key, body)
	}
	hashes := BodyHashes(endpoint, body)
	stream := idemStream(call.Principal.Tenant, key)
	evs, err := eventstore.ReadWholeStream(ctx, s.store, stream)
	if err != nil {
		return nil, nil, err
	}
	exp, kept, resume, outputs, err := s.lookup(evs, hashes, false)
	if err != nil || kept != nil {
		return nil, kept, err
	}
	started := idemStarted{Endpoint: endpoint, BodyHash: hashes.Raw, BodyJSONHash: hashes.JSON, RequestID: call.RequestID}
	return &Claim{s: s, stream: stream, hashes: hashes, lease: s.Lease, expected: exp, pending: true, started: started, resume: resume, outputs: outputs,
		meta: eventstore.Metadata{Tenant: call.Principal.Tenant, Actor: call.Principal.Actor(), RequestID: call.RequestID}}, nil, nil
}

// Resume is the id this request is to create and the id of the request
// that first meant to, when an earlier request of the key recorded its
// target (TakeFor) and kept no answer: it died between its create and its
// answer, or before its create. "" when the request makes a new one.
func (c *Claim) Resume() (target, requestID string) {
	if c == nil || c.resume == nil {
		return "", ""
	}
	return c.resume.Target, c.resume.RequestID
}

// TakeFor is Take for a request that creates target (the id of a new
// handoff, say): the claim's Started event names it, and is appended before
// the create on every store, also where the claim is otherwise held in
// memory, so that what the key made is known if its answer never is.
func (c *Claim) TakeFor(ctx context.Context, target string) error {
	if target == "" {
		return c.Take(ctx)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || !c.pending && !c.memory || c.recorded {
		return nil
	}
	c.started.Target = target
	if !c.memory {
		err := c.take(ctx)
		if errors.Is(err, eventstore.ErrConflict) {
			c.done = true
			return c.taken(ctx)
		}
		return err
	}
	// Held in memory: no other request of this process writes the key.
	err := c.take(ctx)
	if err == nil || eventstore.MayHaveCommitted(err) {
		c.recorded = true // perhaps written: a Release must free it
	}
	return err
}

// Take appends a pending claim (Check); a claim held already is kept. A
// key another request took meanwhile is the in-flight error, and the claim
// is given up.
func (c *Claim) Take(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pending || c.done {
		return nil
	}
	err := c.take(ctx)
	if errors.Is(err, eventstore.ErrConflict) {
		c.done = true
		return c.taken(ctx)
	}
	return err
}

// taken is the answer for a pending claim another request took first:
// as the lookup answers once it is taken, another body is the key reused
// (422), the same body the key in flight (409). Both passed Check before
// either took the key, and a request with another body was told to retry
// what could never run.
func (c *Claim) taken(ctx context.Context) error {
	evs, err := eventstore.ReadWholeStream(ctx, c.s.store, c.stream)
	if err != nil {
		return keyInFlight()
	}
	if _, _, _, _, err := c.s.lookup(evs, c.hashes, false); isKeyReused(err) {
		return err
	}
	return keyInFlight()
}

func isKeyReused(err error) bool {
	var de *domain.Error
	return errors.As(err, &de) && de.Code == "idempotency_key_reused"
}

// take appends the pending claim's Started event; c.mu is held.
func (c *Claim) take(ctx context.Context) error {
	st := c.started
	st.StartedAt = c.s.stamp()
	data, _ := json.Marshal(st)
	err := c.append(ctx, eventstore.NewEvent(evIdemStarted, data, c.meta))
	if err == nil || eventstore.MayHaveCommitted(err) {
		// Held, or perhaps held: a Release must free it.
		c.pending = false
	}
	return err
}

// append writes ev at the claim's revision and moves the claim on; c.mu is
// held. A conflict may come from the claim's own earlier write whose
// answer was lost (the store went away mid-write): when every event after
// the claim's revision is this request's, the claim goes on from the last
// of them (ev among them: it was written). Else a claim renewed, or its
// answer kept, after such a write was taken for one another request had
// taken over: the request was ended (409 idempotency_lease_lost), or its
// answer never kept and the key held for the rest of its lease.
func (c *Claim) append(ctx context.Context, ev eventstore.EventData) error {
	if c.sent == nil {
		c.sent = map[uuid.UUID]bool{}
	}
	c.sent[ev.ID] = true
	res, err := c.s.store.Append(ctx, c.stream, c.expected, ev)
	if errors.Is(err, eventstore.ErrConflict) {
		var written bool
		switch written, err = c.resync(ctx, ev); {
		case written:
			return nil
		case err == nil:
			res, err = c.s.store.Append(ctx, c.stream, c.expected, ev)
		}
	}
	if err != nil {
		return err
	}
	c.expected = eventstore.Revision(res.NextRevision)
	return nil
}

// resync reads the events after the claim's revision: if they are all the
// claim's own (by their ids: a request id is the client's to choose, and
// two retries may share one), the claim's revision becomes the last of
// them (written: ev is one), else the conflict stands.
func (c *Claim) resync(ctx context.Context, ev eventstore.EventData) (written bool, err error) {
	conflict := fmt.Errorf("%w: the key's stream moved", eventstore.ErrConflict)
	from := uint64(0)
	if rev, ok := c.expected.Value(); ok {
		from = rev + 1
	} else if !c.expected.IsNoStream() {
		return false, conflict
	}
	evs, err := eventstore.ReadStreamFrom(ctx, c.s.store, c.stream, from)
	if err != nil {
		return false, err
	}
	if len(evs) == 0 {
		return false, conflict
	}
	for _, e := range evs {
		if !c.sent[e.ID] {
			return false, conflict
		}
		written = written || e.ID == ev.ID
	}
	c.expected = eventstore.Revision(evs[len(evs)-1].Revision)
	return written, nil
}

func (s *Idempotency) stamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Leased reports whether the claim is held by a Started event, which
// another request may take over once the lease has passed; a claim held
// in memory (a store only this process writes) has no lease.
func (c *Claim) Leased() bool { return !c.memory }

// ErrLeaseLost: the claim's lease ran out before it was renewed, and the
// key may be another request's now.
var ErrLeaseLost = errors.New("idempotency: the key's lease ran out before it was renewed")

// Hold keeps a leased claim while its request runs, renewing it every
// third of the lease (an IdempotencyRenewed event at the claim's
// revision), until ctx ends or the claim is completed or released. If a
// renewal cannot be made before the lease runs out, or another request has
// taken the key over, lost is called: the request must end, since a retry
// may now run it again. A claim held in memory needs no renewal.
func (c *Claim) Hold(ctx context.Context, lost func(error)) {
	if c.memory {
		return
	}
	every := max(c.lease/3, time.Millisecond)
	last := c.s.now()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		switch err := c.renew(ctx); {
		case err == nil:
			last = c.s.now()
		case errors.Is(err, errClaimDone) || ctx.Err() != nil:
			return
		case errors.Is(err, eventstore.ErrConflict):
			lost(ErrLeaseLost) // another request wrote to the key: it took it over
			return
		case c.s.now().Sub(last) >= c.lease:
			lost(fmt.Errorf("%w: %v", ErrLeaseLost, err))
			return
		}
	}
}

var errClaimDone = errors.New("idempotency: the claim is completed or released")

func (c *Claim) renew(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return errClaimDone
	}
	if c.pending {
		return nil // nothing held yet
	}
	data, _ := json.Marshal(idemRenewed{RenewedAt: c.s.stamp()})
	return c.append(ctx, eventstore.NewEvent(evIdemRenewed, data, c.meta))
}

type idemRenewed struct {
	RenewedAt time.Time `json:"renewedAt"`
}

// Outputs are those of steps 1 to n an earlier request with this key and
// body kept (Keep) and never answered: its process died between paying
// for them and keeping its answer. The request uses them in place of
// doing those steps again.
func (c *Claim) Outputs() []json.RawMessage {
	if c == nil {
		return nil
	}
	return c.outputs
}

// Keep records the output of the request's step (from 1), paid for and
// not yet answered, in the key's stream, so that a retry after a crash
// resumes from it (Outputs) instead of paying for it again. On a shared
// store it renews the claim too. A failed write is returned; the request
// goes on, its output unprotected.
func (c *Claim) Keep(ctx context.Context, step int, output json.RawMessage) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || c.pending {
		return errClaimDone
	}
	data, err := json.Marshal(idemOutput{Step: step, BodyHash: c.hashes.Raw, BodyJSONHash: c.hashes.JSON, Output: output, RecordedAt: c.s.stamp()})
	if err != nil {
		return err
	}
	return c.append(ctx, eventstore.NewEvent(evIdemOutput, data, c.meta))
}

func (c *Claim) release() {
	if c.memory && !c.done {
		c.s.inFlight.Delete(c.stream)
	}
	c.done = true
}

// Complete keeps a final answer for the key's retries and frees the claim.
// An answer the store refuses (eventstore.ErrInvalidEvent: too large)
// leaves the claim held, so that the caller can keep another answer in its
// place. Any other failed write is returned, and the same event (the same
// id: a write that did commit is answered as it was) is appended again in
// the background until it is written, another request has taken the key,
// or a lease has passed; the claim is held meanwhile, so a retry is told
// the request is in flight (409) rather than run it a second time. A
// closed store (the process stops) is not written again, as by free. It was
// freed at once on the embedded store (the retry ran again: a second paid
// generation), and left to its lease on a shared one (ten minutes of 409s).
func (c *Claim) Complete(ctx context.Context, a Answer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return nil
	}
	data, err := json.Marshal(idemCompleted{Answer: a, BodyHash: c.hashes.Raw, BodyJSONHash: c.hashes.JSON, CompletedAt: c.s.stamp()})
	if err != nil {
		c.release()
		return err
	}
	ev := eventstore.NewEvent(evIdemCompleted, data, c.meta)
	err = c.append(ctx, ev)
	switch {
	case errors.Is(err, eventstore.ErrInvalidEvent):
	case !retryable(err): // written, the key another request's now, or the store closed
		c.release()
	default:
		c.done = true // nothing else is written for it; the key stays held
		c.s.goLater(func() { c.writeLater(ctx, ev) })
	}
	return err
}

// completeWaits are the pauses before appending again an answer whose
// write failed; the last is repeated.
var completeWaits = []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second, 5 * time.Second}

// retryable reports whether a failed write of the claim may succeed if
// made again: not when it was written, the key was taken over (a
// conflict), the store refuses the event, or the store was closed (the
// process stops).
func retryable(err error) bool {
	return err != nil && !errors.Is(err, eventstore.ErrConflict) && !errors.Is(err, eventstore.ErrInvalidEvent) && !errors.Is(err, eventstore.ErrClosed)
}

// WrittenLater reports whether a failed Complete, Release or Abandon is
// written again in the background: not after a conflict (another request
// took the key over), an event the store refuses, or a closed store.
func WrittenLater(err error) bool { return retryable(err) }

// goLater runs write, a background write of a claim, counted for Settle.
func (s *Idempotency) goLater(write func()) {
	s.laterMu.Lock()
	s.later++
	s.laterMu.Unlock()
	go func() {
		defer func() {
			s.laterMu.Lock()
			defer s.laterMu.Unlock()
			if s.later--; s.later == 0 && s.idle != nil {
				close(s.idle)
				s.idle = nil
			}
		}()
		write()
	}()
}

// Settle waits until the answers and releases whose first write failed
// are written again (or given up: the key taken over, a lease passed), or
// ctx ends first (false). A stop calls it within its grace, before it
// closes the store: closed under them, they were never written, and a
// key whose answer the request had sent stayed in flight for its lease.
func (s *Idempotency) Settle(ctx context.Context) bool {
	s.laterMu.Lock()
	if s.later == 0 {
		s.laterMu.Unlock()
		return true
	}
	if s.idle == nil {
		s.idle = make(chan struct{})
	}
	idle := s.idle
	s.laterMu.Unlock()
	select {
	case <-idle:
		return true
	case <-ctx.Done():
		return false
	}
}

// writeLater appends ev, the claim's Completed or Released event whose
// first write failed, until it is written, the key was taken over (a
// conflict), or a lease has passed (a shared store's claim may be taken
// over then anyway); then it frees the claim held in memory.
func (c *Claim) writeLater(ctx context.Context, ev eventstore.EventData) {
	if c.memory {
		defer c.s.inFlight.Delete(c.stream)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.lease)
	defer cancel()
	for i := 0; ; i++ {
		t := time.NewTimer(completeWaits[min(i, len(completeWaits)-1)])
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		c.mu.Lock()
		err := c.append(ctx, ev)
		c.mu.Unlock()
		if !retryable(err) {
			return
		}
	}
}

// Release frees the key without keeping an answer, so that a retry runs
// again: the request was refused, and made nothing. A failed write is
// returned, and written again in the background as Complete's is: the key
// was left taken for the rest of its lease, ten minutes of 409s for the
// retry a 503 asks for.
func (c *Claim) Release(ctx context.Context) error { return c.free(ctx, false) }

// Abandon is Release for a request that failed (a 5xx, a panic) and may
// have made its target all the same (a store that went away mid-write for
// longer than the create waits): a claim that recorded its target
// (TakeFor) keeps it, and the retry makes that target or finds it made,
// not a second one.
func (c *Claim) Abandon(ctx context.Context) error { return c.free(ctx, true) }

func (c *Claim) free(ctx context.Context, keepTarget bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return nil
	}
	if c.memory && !c.recorded || c.pending || keepTarget && c.memory {
		// Nothing to write (with a target kept in memory, the Started
		// event stands, and no request holds it).
		c.release()
		return nil
	}
	var rel idemReleased
	if keepTarget {
		rel.Target = c.started.Target
	}
	data, _ := json.Marshal(rel)
	ev := eventstore.NewEvent(evIdemReleased, data, c.meta)
	err := c.append(ctx, ev)
	if !retryable(err) {
		c.release()
		return err
	}
	c.done = true
	c.s.goLater(func() { c.writeLater(ctx, ev) })
	return err
}

// idemReleased: the request holding the key ended without an answer. With
// Target (the Started event's), the key stays that request's, for a retry
// to make the target or find it made.
type idemReleased struct {
	Target string `json:"target,omitempty"`
}

// lookup reads a key's stream: a live entry is answered (the kept answer,
// or an error for another body or a request still running); else expected
// is where a new entry goes (no stream, or after an expired one), and
// resume the Started event of a request that named its target and kept no
// answer, and outputs those kept for this body by a request that never
// answered (Keep). On a store only this process writes (exclusive), a request
// still running holds the key in memory, so a Started event with no
// answer is a request that ended without one.
func (s *Idempotency) lookup(evs []eventstore.RecordedEvent, hashes Hashes, exclusive bool) (eventstore.ExpectedRevision, *Answer, *idemStarted, []json.RawMessage, error) {
	if len(evs) == 0 {
		return eventstore.NoStream(), nil, nil, nil, nil
	}
	started, completed, at, kept := idemState(evs)
	fresh := false
	switch {
	case completed != nil:
		fresh = s.now().Sub(completed.CompletedAt) < s.retention
	case started != nil:
		fresh = !exclusive && s.now().Sub(at) < s.Lease
	}
	if !fresh {
		var resume *idemStarted
		if completed == nil && started != nil && started.Target != "" && s.now().Sub(started.StartedAt) < s.retention {
			// It may have made its target: the key is that request's,
			// and its retry makes the same target or finds it made.
			if !hashes.match(started.BodyHash, started.BodyJSONHash) {
				return eventstore.ExpectedRevision{}, nil, nil, nil, keyReused()
			}
			resume = started
		}
		// Expired, or never held here (its process died): take the key
		// over, from what it paid for with this body.
		var outputs []json.RawMessage
		for _, o := range kept {
			if o.Step != len(outputs)+1 || !hashes.match(o.BodyHash, o.BodyJSONHash) || s.now().Sub(o.RecordedAt) >= s.retention {
				break
			}
			outputs = append(outputs, o.Output)
		}
		return eventstore.Revision(evs[len(evs)-1].Revision), nil, resume, outputs, nil
	}
	raw, canon := "", ""
	if started != nil {
		raw, canon = started.BodyHash, started.BodyJSONHash
	} else if completed != nil {
		raw, canon = completed.BodyHash, completed.BodyJSONHash
	}
	if raw != "" && !hashes.match(raw, canon) {
		return eventstore.ExpectedRevision{}, nil, nil, nil, keyReused()
	}
	if completed == nil {
		return eventstore.ExpectedRevision{}, nil, nil, nil, keyInFlightFor(s.inFlightWait(at))
	}
	return eventstore.ExpectedRevision{}, &completed.Answer, nil, nil, nil
}

// idemState reads a key's stream: the last Started, the Completed that
// follows it (if any), when the last Started began (or was last renewed),
// and the outputs kept since the last Completed, by step.
func idemState(evs []eventstore.RecordedEvent) (*idemStarted, *idemCompleted, time.Time, []idemOutput) {
	var st *idemStarted
	var done *idemCompleted
	var at time.Time
	var outputs []idemOutput
	for _, ev := range evs {
		switch ev.Type {
		case evIdemStarted:
			var x idemStarted
			if json.Unmarshal(ev.Data, &x) == nil {
				st, done, at = &x, nil, x.StartedAt
			}
		case evIdemCompleted:
			// An answer that could not be written again (no status an
			// HTTP answer can carry, no body hash to match a retry
			// against) is not one: the key is not taken by it.
			var x idemCompleted
			if json.Unmarshal(ev.Data, &x) == nil && x.Status >= 100 && x.Status <= 599 && (st != nil && st.BodyHash != "" || x.BodyHash != "") {
				done, outputs = &x, nil
			}
		case evIdemReleased:
			var x idemReleased
			if json.Unmarshal(ev.Data, &x) == nil && x.Target != "" && st != nil && done == nil && st.Target == x.Target {
				at = time.Time{} // no request holds it, and its target stands
				continue
			}
			st, done = nil, nil // the key is free again
		case evIdemOutput:
			// Kept by a request that held the key; a later request
			// with the same body resumes from it (a step kept again
			// replaces the one before).
			var x idemOutput
			if json.Unmarshal(ev.Data, &x) != nil || x.BodyHash == "" {
				continue
			}
			if len(outputs) > 0 && !(Hashes{outputs[0].BodyHash, outputs[0].BodyJSONHash}).match(x.BodyHash, x.BodyJSONHash) {
				outputs = nil // a request with another body took the key
			}
			if x.Step < 1 || x.Step > len(outputs)+1 {
				continue
			}
			outputs = append(outputs[:x.Step-1:x.Step-1], x)
			if st != nil && done == nil && x.RecordedAt.After(at) {
				at = x.RecordedAt // it renews the claim, as IdempotencyRenewed does
			}
		case evIdemRenewed:
			// The request still runs: its lease counts from here.
			var x idemRenewed
			if json.Unmarshal(ev.Data, &x) == nil && st != nil && done == nil && x.RenewedAt.After(at) {
				at = x.RenewedAt
			}
		}
	}
	return st, done, at, outputs
}

// exclusive reports whether only this process writes the store.
func exclusive(st eventstore.Store) bool {
	x, ok := st.(eventstore.Exclusive)
	return ok && x.Exclusive()
}

// Hashes name a request body for comparing it with the first request of
// its key: the hash of its bytes, and of its canonical JSON when it has one.
// docs/idempotency.md explains why both.
type Hashes struct{ Raw, JSON string }

func (h Hashes) match(raw, canon string) bool {
	return raw == h.Raw || (canon != "" && canon == h.JSON)
}

// canonicalMax bounds the bodies compared as JSON: canonicalizing walks
// every token, and a key holder must not buy much CPU with one header.
const canonicalMax = 64 << 10

// BodyHashes are body's hashes for endpoint.
func BodyHashes(endpoint string, body []byte) Hashes {
	sum := sha256.Sum256(body)
	h := Hashes{Raw: endpoint + ":" + hex.EncodeToString(sum[:])}
	if j := JSONHash(body); j != "" {
		h.JSON = endpoint + ":json:" + j
	}
	return h
}

// JSONHash is the hex SHA-256 of body's canonical JSON, by the rules
// BodyHashes applies (docs/idempotency.md), or "" when it is compared by
// its bytes alone.
func JSONHash(body []byte) string {
	if len(body) > canonicalMax || len(bytes.TrimSpace(body)) == 0 {
		return "" // an empty body is not the JSON null
	}
	c, ok := canonical(body)
	if !ok {
		return ""
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:])
}

// canonical returns body's canonical JSON (domain.CanonicalJSON's), or
// false when it has none or when an object in it has two keys that
// encoding/json would take for the same field.
func canonical(body []byte) ([]byte, bool) {
	if !utf8.Valid(body) || domain.LoneSurrogateAt(body) >= 0 {
		// Its canonical form would hold U+FFFD where the body has or
		// escapes no character, a body the handlers refuse: compared by
		// its bytes.
		return nil, false
	}
	c, v, err := domain.CanonicalValue(body)
	if err != nil || !foldDistinct(v) {
		return nil, false
	}
	return c, true
}

// foldDistinct reports whether no object in v has two keys that
// encoding/json would take for the same field (it matches names ignoring
// case, so {"Type":"a","type":"b"} decodes by the order of its keys).
func foldDistinct(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		seen := make(map[string]struct{}, len(v))
		for k, x := range v {
			f := foldKey(k)
			if _, dup := seen[f]; dup || !foldDistinct(x) {
				return false
			}
			seen[f] = struct{}{}
		}
	case []any:
		for _, x := range v {
			if !foldDistinct(x) {
				return false
			}
		}
	}
	return true
}

// foldKey maps k to one representative of the keys equal to it under
// Unicode simple case folding (what strings.EqualFold compares): each rune
// becomes the smallest rune of its folding orbit.
func foldKey(k string) string {
	ascii, upper := true, true
	for i := 0; i < len(k); i++ {
		c := k[i]
		ascii = ascii && c < utf8.RuneSelf
		upper = upper && !('a' <= c && c <= 'z')
	}
	if ascii {
		if upper {
			return k
		}
		return strings.ToUpper(k)
	}
	return foldOrbits(k)
}

// foldOrbits is foldKey rune by rune through each rune's whole orbit.
func foldOrbits(k string) string {
	b := make([]rune, 0, len(k))
	for _, r := range k {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b = append(b, m)
	}
	return string(b)
}

// Retention is how long a key and its answer are kept.
func (s *Idempotency) Retention() time.Duration { return s.retention }
