package http_test

import (
	"context"
	"strings"
	"testing"

	"github.com/batonhq/baton/eventstore"
)

// closedForStore answers the appends of the given event types as a closed
// store does; it hides the embedded store's exclusivity, so that keys are
// claimed by events, as on KurrentDB.
type closedForStore struct {
	eventstore.Store
	types map[string]bool
}

func (s *closedForStore) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if s.types[evs[0].Type] {
		return eventstore.AppendResult{}, eventstore.ErrClosed
	}
	return s.Store.Append(ctx, stream, exp, evs...)
}

// A keyed request's answer or release whose write is not tried again (a
// closed store, a key another request took over) is logged as such: the
// log said "trying again" whatever the failure, and an operator waited
// for a write that never came.
func TestIdempotencyWriteNotRetriedIsLoggedSo(t *testing.T) {
	contract := map[string]any{"objective": "x", "targetExecutor": "ops-bot", "executorProtocol": "ops_bot.v1", "riskLevel": "low"}
	for _, c := range []struct {
		types  []string
		status int
		msg    string
	}{
		{[]string{"IdempotencyCompleted"}, 201, "idempotent answer not stored; not tried again"},
		{[]string{"ContractCreated", "IdempotencyReleased"}, 503, "idempotency key not released; not tried again"},
	} {
		t.Run(c.types[0], func(t *testing.T) {
			var logs syncBuffer
			envLog = &logs
			t.Cleanup(func() { envLog = nil })
			types := map[string]bool{}
			for _, typ := range c.types {
				types[typ] = true
			}
			e := newEnvStore(t, nil, func(s eventstore.Store) eventstore.Store { return &closedForStore{Store: s, types: types} })
			if r := e.do("POST", "/v1/handoff/contracts", e.tenantA, contract, "Idempotency-Key", "k1"); r.status != c.status {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			out := logs.String()
			if strings.Contains(out, "trying again") || !strings.Contains(out, c.msg) {
				t.Fatalf("logged:\n%s", out)
			}
		})
	}
}
