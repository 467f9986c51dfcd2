package ledger_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/ledger"
)

// shared hides the embedded store's exclusivity: a claim is then a
// Started event with a lease, as on KurrentDB.
type shared struct{ eventstore.Store }

// A claim held while its request runs is renewed, so another request does
// not take the key over; one whose lease ran out unrenewed and was taken
// over is told so (ErrLeaseLost), and its request must end.
func TestIdempotencyClaimHeldAndLost(t *testing.T) {
	idem := ledger.NewIdempotency(shared{openStore(t)}, 0)
	idem.Lease = 90 * time.Millisecond
	ctx := t.Context()
	call := ledger.Call{Principal: domain.Principal{KeyID: "key_t", Tenant: "a"}}
	held, _, err := idem.Begin(ctx, call, "generate", "k1", []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	hctx, stop := context.WithCancel(ctx)
	lost := make(chan error, 1)
	go held.Hold(hctx, func(err error) { lost <- err })
	time.Sleep(4 * idem.Lease)
	if _, _, err := idem.Begin(ctx, call, "generate", "k1", []byte(`{"a":1}`)); !isCode(err, "idempotency_in_flight") {
		t.Fatalf("a retry four leases into a held claim: %v, want idempotency_in_flight", err)
	}
	stop()
	select {
	case err := <-lost:
		t.Fatalf("a held claim was lost: %v", err)
	default:
	}
	// Not renewed: after its lease another request takes the key over,
	// and the first claim's next renewal finds it so.
	time.Sleep(2 * idem.Lease)
	if _, _, err := idem.Begin(ctx, call, "generate", "k1", []byte(`{"a":1}`)); err != nil {
		t.Fatalf("taking over a lapsed claim: %v", err)
	}
	go held.Hold(ctx, func(err error) { lost <- err })
	select {
	case err := <-lost:
		if !errors.Is(err, ledger.ErrLeaseLost) {
			t.Fatalf("lost with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a claim taken over was never told")
	}
}

func isCode(err error, code string) bool {
	var de *domain.Error
	return errors.As(err, &de) && de.Code == code
}

// A create whose claim recorded its target and whose request then failed
// (a store away mid-write for longer than the create waits: its 503 frees
// the key) may have been written all the same: the retry makes that
// target, or finds it made, rather than a second one. The key was freed
// of it, and the retry made a second handoff. A refusal frees it.
func TestReleasedClaimKeepsItsTarget(t *testing.T) {
	for _, c := range []struct {
		name  string
		store eventstore.Store
	}{{"embedded", openStore(t)}, {"shared", shared{openStore(t)}}} {
		t.Run(c.name, func(t *testing.T) {
			idem := ledger.NewIdempotency(c.store, 0)
			ctx := t.Context()
			call := ledger.Call{Principal: domain.Principal{KeyID: "key_t", Tenant: "a"}, RequestID: "req-1"}
			first, _, err := idem.Check(ctx, call, "contracts", "k1", []byte(`{"a":1}`))
			if err != nil {
				t.Fatal(err)
			}
			if err := first.TakeFor(ctx, "h-1"); err != nil {
				t.Fatal(err)
			}
			if err := first.Abandon(ctx); err != nil {
				t.Fatal(err)
			}
			call.RequestID = "req-2"
			retry, kept, err := idem.Check(ctx, call, "contracts", "k1", []byte(`{"a":1}`))
			if err != nil || kept != nil {
				t.Fatalf("retry: %v, %+v", err, kept)
			}
			if target, by := retry.Resume(); target != "h-1" || by != "req-1" {
				t.Fatalf("retry resumes %q of %q, want h-1 of req-1", target, by)
			}
			if _, _, err := idem.Check(ctx, call, "contracts", "k1", []byte(`{"a":2}`)); !isCode(err, "idempotency_key_reused") {
				t.Fatalf("another body: %v", err)
			}
			// A request refused (nothing made) frees the key of its target:
			// a corrected body runs under it.
			if err := retry.TakeFor(ctx, "h-1"); err != nil {
				t.Fatal(err)
			}
			if err := retry.Release(ctx); err != nil {
				t.Fatal(err)
			}
			next, _, err := idem.Check(ctx, call, "contracts", "k1", []byte(`{"a":2}`))
			if err != nil {
				t.Fatalf("a corrected body after a refusal: %v", err)
			}
			if target, _ := next.Resume(); target != "" {
				t.Fatalf("a refused request's target %q is resumed", target)
			}
		})
	}
}

// lostReplies commits an append of the named type and answers it as a
// store that went away mid-write does: unavailable, outcome unknown.
type lostReplies struct {
	eventstore.Store
	lose sync.Map // event type -> true: its next append's answer is lost
}

func (l *lostReplies) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	res, err := l.Store.Append(ctx, stream, exp, evs...)
	if _, lose := l.lose.LoadAndDelete(evs[0].Type); lose && err == nil {
		return eventstore.AppendResult{}, eventstore.ErrUnavailable
	}
	return res, err
}

// A claim's own write whose answer was lost (it committed) is not taken
// for another request's when the claim writes next: its output kept, its
// renewal or its claim. The answer's write conflicted with the output and
// gave up, leaving the key in flight for the lease; a renewal after a lost
// renewal ended the request as if its key were taken over.
func TestIdempotencyClaimAfterItsOwnLostReply(t *testing.T) {
	store := &lostReplies{Store: openStore(t)}
	idem := ledger.NewIdempotency(shared{store}, 0)
	ctx := t.Context()
	body := []byte(`{"a":1}`)
	begin := func(key, req string) *ledger.Claim {
		t.Helper()
		call := ledger.Call{Principal: domain.Principal{KeyID: "key_t", Tenant: "a"}, RequestID: req}
		c, _, err := idem.Check(ctx, call, "generate", key, body)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := begin("k1", "r1")
	if err := c.Take(ctx); err != nil {
		t.Fatal(err)
	}
	store.lose.Store("IdempotencyOutput", true)
	if err := c.Keep(ctx, 1, []byte(`{"text":"x"}`)); !errors.Is(err, eventstore.ErrUnavailable) {
		t.Fatalf("keep: %v", err)
	}
	if err := c.Complete(ctx, ledger.Answer{Status: 200, ContentType: "application/json", Body: `{}`, RequestID: "r1"}); err != nil {
		t.Fatalf("the answer after an output whose write's answer was lost: %v", err)
	}
	call := ledger.Call{Principal: domain.Principal{KeyID: "key_t", Tenant: "a"}, RequestID: "r2"}
	if _, kept, err := idem.Check(ctx, call, "generate", "k1", body); err != nil || kept == nil {
		t.Fatalf("the retry: %+v %v, want the kept answer", kept, err)
	}

	idem.Lease = 150 * time.Millisecond
	c = begin("k2", "r3")
	if err := c.Take(ctx); err != nil {
		t.Fatal(err)
	}
	store.lose.Store("IdempotencyRenewed", true)
	hctx, stop := context.WithCancel(ctx)
	lost := make(chan error, 1)
	go c.Hold(hctx, func(err error) { lost <- err })
	time.Sleep(4 * idem.Lease)
	stop()
	select {
	case err := <-lost:
		t.Fatalf("a claim whose renewal's answer was lost was taken for lost: %v", err)
	default:
	}

	// Two requests with one key and one request id (a client's own, kept
	// across its retries) are not each other's: one holds the key.
	c1, c2 := begin("k4", "same"), begin("k4", "same")
	if err := c1.Take(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c2.Take(ctx); !isCode(err, "idempotency_in_flight") {
		t.Fatalf("a second request with the same request id took a held key: %v", err)
	}

	// A claim whose own append's answer was lost is freed by Release.
	c = begin("k3", "r4")
	store.lose.Store("IdempotencyStarted", true)
	if err := c.Take(ctx); !errors.Is(err, eventstore.ErrUnavailable) {
		t.Fatalf("take: %v", err)
	}
	if err := c.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if _, _, err := idem.Check(ctx, call, "generate", "k3", body); err != nil {
		t.Fatalf("a retry after the release: %v", err)
	}
}

// exclusiveLost is lostReplies on a store only this process writes: a
// claim is held in memory, and a create's Started event is appended too.
type exclusiveLost struct{ *lostReplies }

func (exclusiveLost) Exclusive() bool { return true }

// On the embedded store, a create's Started event (naming its target)
// whose answer was lost is freed by the Release a refusal makes: a
// corrected body runs under the key. The Started counted as not written,
// the release appended nothing, and the corrected body was 422
// idempotency_key_reused against a target never made.
func TestIdempotencyRecordedTargetAfterItsLostReply(t *testing.T) {
	store := &lostReplies{Store: openStore(t)}
	idem := ledger.NewIdempotency(exclusiveLost{store}, 0)
	ctx := t.Context()
	call := ledger.Call{Principal: domain.Principal{KeyID: "key_t", Tenant: "a"}, RequestID: "r1"}
	c, _, err := idem.Check(ctx, call, "contracts", "k1", []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	store.lose.Store("IdempotencyStarted", true)
	if err := c.TakeFor(ctx, "h-1"); !errors.Is(err, eventstore.ErrUnavailable) {
		t.Fatalf("take: %v", err)
	}
	if err := c.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if _, _, err := idem.Check(ctx, call, "contracts", "k1", []byte(`{"a":2}`)); err != nil {
		t.Fatalf("a corrected body after the refusal: %v", err)
	}
}

// closedStore answers every append of the named type as a store closed
// under it (the process stopping), and counts those appends.
type closedStore struct {
	eventstore.Store
	typ       string
	exclusive bool
	tries     atomic.Int32
}

func (c *closedStore) Exclusive() bool { return c.exclusive }

func (c *closedStore) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if evs[0].Type == c.typ {
		c.tries.Add(1)
		return eventstore.AppendResult{}, eventstore.ErrClosed
	}
	return c.Store.Append(ctx, stream, exp, evs...)
}

// A closed store is not written again, by an answer's write as by a
// release's: nothing could get through it. The answer's write was tried
// again in the background (and its key held meanwhile) while a release's
// was not.
func TestIdempotencyClosedStoreIsNotWrittenAgain(t *testing.T) {
	for _, exclusive := range []bool{true, false} {
		for _, typ := range []string{"IdempotencyCompleted", "IdempotencyReleased"} {
			store := &closedStore{Store: openStore(t), typ: typ, exclusive: exclusive}
			idem := ledger.NewIdempotency(store, 0)
			ctx := t.Context()
			call := ledger.Call{Principal: domain.Principal{KeyID: "key_t", Tenant: "a"}, RequestID: "r1"}
			c, _, err := idem.Check(ctx, call, "contracts", "k1", []byte(`{"a":1}`))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.TakeFor(ctx, "h-1"); err != nil { // a write of the claim, on either store
				t.Fatal(err)
			}
			if typ == "IdempotencyCompleted" {
				err = c.Complete(ctx, ledger.Answer{Status: 201, ContentType: "application/json", Body: `{}`, RequestID: "r1"})
			} else {
				err = c.Release(ctx)
			}
			if !errors.Is(err, eventstore.ErrClosed) {
				t.Fatalf("exclusive %v, %s: %v", exclusive, typ, err)
			}
			if _, _, err := idem.Check(ctx, call, "contracts", "k1", []byte(`{"a":1}`)); exclusive && err != nil {
				t.Fatalf("%s failed on a closed store, and the key is still held: %v", typ, err)
			}
			time.Sleep(300 * time.Millisecond)
			if n := store.tries.Load(); n != 1 {
				t.Fatalf("exclusive %v: %s was tried %d times on a closed store, want 1", exclusive, typ, n)
			}
		}
	}
}

// failFirst fails the first append of the named type, as a store that
// lost its connection for a moment; while down, it fails every one.
type failFirst struct {
	eventstore.Store
	typ    string
	failed atomic.Bool
	down   atomic.Bool
}

func (f *failFirst) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if evs[0].Type == f.typ && (f.down.Load() || f.failed.CompareAndSwap(false, true)) {
		return eventstore.AppendResult{}, eventstore.ErrUnavailable
	}
	return f.Store.Append(ctx, stream, exp, evs...)
}

// Settle waits for an answer whose first write failed to be written
// again, so that a stop can let it through before it closes the store;
// it gives up when its context ends first.
func TestIdempotencySettleWaitsForAnswersWrittenAgain(t *testing.T) {
	for _, exclusive := range []bool{true, false} {
		store := &failFirst{Store: openStore(t), typ: "IdempotencyCompleted"}
		var st eventstore.Store = shared{store}
		if exclusive {
			st = exclusiveOf{store}
		}
		idem := ledger.NewIdempotency(st, 0)
		ctx := t.Context()
		call := ledger.Call{Principal: domain.Principal{KeyID: "key_t", Tenant: "a"}, RequestID: "r1"}
		body := []byte(`{"a":1}`)
		c, _, err := idem.Begin(ctx, call, "generate", "k1", body)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Complete(ctx, ledger.Answer{Status: 200, ContentType: "application/json", Body: `{}`, RequestID: "r1"}); !errors.Is(err, eventstore.ErrUnavailable) {
			t.Fatalf("exclusive %v: %v", exclusive, err)
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if !idem.Settle(sctx) {
			t.Fatalf("exclusive %v: the answer was not written again within 5 s", exclusive)
		}
		cancel()
		if _, kept, err := idem.Check(ctx, call, "generate", "k1", body); err != nil || kept == nil {
			t.Fatalf("exclusive %v: after Settle: %+v %v, want the kept answer", exclusive, kept, err)
		}

		store.down.Store(true)
		c, _, err = idem.Begin(ctx, call, "generate", "k2", body)
		if err != nil {
			t.Fatal(err)
		}
		c.Complete(ctx, ledger.Answer{Status: 200, ContentType: "application/json", Body: `{}`, RequestID: "r1"})
		sctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
		if idem.Settle(sctx) {
			t.Fatalf("exclusive %v: settled while the store was down", exclusive)
		}
		cancel()
		store.down.Store(false)
		sctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		if !idem.Settle(sctx) {
			t.Fatalf("exclusive %v: not settled once the store was back", exclusive)
		}
		cancel()
	}
}

// exclusiveOf is a store only this process writes: claims are held in
// memory.
type exclusiveOf struct{ eventstore.Store }

func (exclusiveOf) Exclusive() bool { return true }
