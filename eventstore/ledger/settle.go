package ledger

import (
	"context"
	"time"

	"github.com/batonhq/baton/eventstore"
)

// settleWaits are the pauses before appending again an append whose
// outcome is unknown: some 3 s in all, a store's brief loss of its leader
// or connection.
var settleWaits = []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second}

// appendSettled appends evs and, when the outcome is unknown (the store
// went away mid-write: eventstore.MayHaveCommitted), appends the same
// events again: the store knows their ids, so an append that committed is
// answered as it was and one that did not is written now. A create that
// committed was otherwise answered 503, and the client's retry under its
// Idempotency-Key (whose claim a 503 frees) made a second one. The tries
// run on even if the request's context ends, so the outcome is known.
func appendSettled(ctx context.Context, store eventstore.Store, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	res, err := store.Append(ctx, stream, exp, evs...)
	if err == nil || !eventstore.MayHaveCommitted(err) {
		return res, err
	}
	// 10 s in all, whatever each try waits for: the client is waiting.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, wait := range settleWaits {
		t := time.NewTimer(wait)
		select {
		case <-sctx.Done():
			t.Stop()
			return res, err
		case <-t.C:
		}
		res, err = store.Append(sctx, stream, exp, evs...)
		if err == nil || !eventstore.MayHaveCommitted(err) {
			return res, err
		}
	}
	return res, err
}
