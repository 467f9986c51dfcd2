package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore/kurrent"
	"github.com/batonhq/baton/eventstore/kurrent/kurrenttest"
	"github.com/batonhq/baton/eventstore/ledger"
)

// On KurrentDB, whose --max-append-size is 1 MiB by default, a proof under
// the 1 MiB body limit can make an append over it (the first proof of a
// run appends ExecutorStarted too, each event with its metadata). The
// store refuses it before sending; the callback is 413 event_too_large,
// as an event over the store's own limit is, with nothing recorded. It
// was a 500 internal_error, which executors retry for ever.
func TestProofOverKurrentAppendSize(t *testing.T) {
	srv, err := kurrenttest.Start(kurrenttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := kurrent.Open(ctx, kurrent.Config{URL: srv.URL(), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := ledger.NewHandoffs(st, nil)
	c := contract()
	c.ApprovalMode = domain.ApprovalModeAuto
	out, err := s.Create(ctx, tenantA, c)
	if err != nil {
		t.Fatal(err)
	}
	id := out.Handoff.ID
	before := streamLen(t, st, id)
	p := &domain.Proof{Summary: "s"}
	for range 16 { // 16 × 65,500 bytes: a body of about 1,048,550 bytes
		p.Artifacts = append(p.Artifacts, domain.Artifact{Type: "log", Text: strings.Repeat("x", 65500)})
	}
	_, err = s.Handle(ctx, tenantA, id, domain.ProofCommand{ExecutorRunID: "run-1", Status: "RUNNING", Proof: p})
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindTooLarge || de.Code != "event_too_large" {
		t.Fatalf("a proof over the server's append size: %v, want event_too_large", err)
	}
	if n := streamLen(t, st, id); n != before {
		t.Fatalf("the refused proof left %d events, want %d", n, before)
	}
}

// On a shared store, two requests with one key both pass the lookup
// (Check) before either claims it; the one that loses the claim with
// another body is told the key is reused (422), as it would be a moment
// later or once the first had answered, and one with the same body that
// it is in flight (409). Both losers were 409 idempotency_in_flight, and
// the client with the other body retried for ever, or until the first
// finished, to be told 422 then.
func TestIdempotencyRacingOtherBodyIsKeyReused(t *testing.T) {
	srv, err := kurrenttest.Start(kurrenttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := kurrent.Open(ctx, kurrent.Config{URL: srv.URL(), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	idem := ledger.NewIdempotency(st, 0)
	for i, c := range []struct {
		body, code string
		target     string
	}{
		{`{"a":2}`, "idempotency_key_reused", ""},
		{`{"a": 1}`, "idempotency_in_flight", ""}, // the same JSON
		{`{"a":2}`, "idempotency_key_reused", "h-2"},
		{`{"a":1}`, "idempotency_in_flight", "h-2"},
	} {
		key := "race-" + string(rune('a'+i))
		first, _, err := idem.Check(ctx, tenantA, "contracts", key, []byte(`{"a":1}`))
		if err != nil {
			t.Fatal(err)
		}
		second, _, err := idem.Check(ctx, otherRequest(), "contracts", key, []byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if err := first.TakeFor(ctx, c.target); err != nil {
			t.Fatal(err)
		}
		var de *domain.Error
		if err := second.TakeFor(ctx, c.target); !errors.As(err, &de) || de.Code != c.code {
			t.Fatalf("%s racing a claim of %s (target %q): %v, want %s", c.body, `{"a":1}`, c.target, err, c.code)
		}
	}
}

// otherRequest is tenant a's call from another request.
func otherRequest() ledger.Call {
	c := tenantA
	c.RequestID = "req-a2"
	return c
}
