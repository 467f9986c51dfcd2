package ledger_test

import (
	"context"
	"errors"
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
