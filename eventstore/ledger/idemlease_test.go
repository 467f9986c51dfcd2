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
