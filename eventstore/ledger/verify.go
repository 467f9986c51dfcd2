package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/records"
)

// ChainStatus is what verifying one handoff's ledger found.
type ChainStatus int

const (
	// ChainIntact: the hash chain recomputes, the ledger folds and every
	// receipt given holds.
	ChainIntact ChainStatus = iota
	// ChainMissing: the handoff has no events.
	ChainMissing
	// ChainBroken: ChainReport.Break names the first problem.
	ChainBroken
)

// ChainReport is the verification of one handoff's ledger.
type ChainReport struct {
	HandoffID string
	Status    ChainStatus
	Events    int               // events read (0 when the stream could not be)
	Head      domain.LedgerHead // the last event as read; zero without events
	// Break, for ChainBroken, names the handoff and the first problem (and
	// its event, where there is one), e.g. "handoff h1: event 3
	// (ProofReceived): hash does not match the event's content".
	Break string
}

func (r ChainReport) broken(format string, args ...any) ChainReport {
	r.Status, r.Break = ChainBroken, fmt.Sprintf(format, args...)
	return r
}

// VerifyHandoffs verifies the ledgers of the handoffs ids in store (every
// handoff, in the order of the global feed, when ids is nil), each against
// the receipts given for it, and hands each report to report as it is
// made. A broken ledger is a report; the error is the store's.
func VerifyHandoffs(ctx context.Context, store eventstore.Store, ids []string, receipts map[string][]domain.LedgerHead, report func(ChainReport)) error {
	if ids == nil {
		var err error
		if ids, err = handoffsInFeed(ctx, store); err != nil {
			return err
		}
	}
	for _, id := range ids {
		r, err := verifyStoredHandoff(ctx, store, id, receipts[id])
		if err != nil {
			return err
		}
		report(r)
	}
	return nil
}

// verifyStoredHandoff reads handoff id's stream and checks it: readable
// metadata, the hash chain, a fold the state machine allows (a writer
// around Baton can recompute the chain), then the receipts.
func verifyStoredHandoff(ctx context.Context, store eventstore.Store, id string, receipts []domain.LedgerHead) (ChainReport, error) {
	r := ChainReport{HandoffID: id}
	evs, err := eventstore.ReadWholeStream(ctx, store, domain.StreamID(id))
	if errors.Is(err, eventstore.ErrInvalidEvent) {
		// A stream name only a writer around Baton can make; quoted, as
		// it may not print as it is.
		return r.broken("handoff %q: its stream name cannot be read back: %v", id, err), nil
	}
	if err != nil {
		return r, err
	}
	r.Events = len(evs)
	if i := slices.IndexFunc(evs, func(ev eventstore.RecordedEvent) bool { return ev.Unreadable != "" }); i >= 0 {
		return r.broken("handoff %s: event %d (%s): its metadata cannot be read: %q", id, i+1, evs[i].Type, evs[i].Unreadable), nil
	}
	recs := make([]domain.Recorded, len(evs))
	for i, ev := range evs {
		recs[i] = records.Recorded(ev)
	}
	r = checkLedger(id, recs, receipts, evs)
	return r, nil
}

// CheckChain checks a ledger as someone else shows it (a server's
// GET /v1/executions/{id}/ledger): its hash chain, then the receipts. It
// does not fold the events: a ledger read from the store is checked by
// VerifyHandoffs, which does.
func CheckChain(id string, events []domain.Recorded, receipts []domain.LedgerHead) ChainReport {
	return checkLedger(id, events, receipts, nil)
}

// checkLedger checks recs' chain, then, when the stored events are given,
// that they fold, then the receipts.
func checkLedger(id string, recs []domain.Recorded, receipts []domain.LedgerHead, stored []eventstore.RecordedEvent) ChainReport {
	r := ChainReport{HandoffID: id, Events: len(recs)}
	if len(recs) == 0 {
		r.Status = ChainMissing
		return r
	}
	last := recs[len(recs)-1]
	r.Head = domain.LedgerHead{Seq: last.Seq, Hash: last.Hash}
	if br := domain.VerifyChain(id, recs); br != nil {
		return r.broken("%s", br)
	}
	if stored != nil {
		if msg := refusedStep(id, stored); msg != "" {
			return r.broken("handoff %s: %s", id, msg)
		}
	}
	if msg := failedReceipt(recs, receipts); msg != "" {
		return r.broken("handoff %s: %s", id, msg)
	}
	r.Status = ChainIntact
	return r
}

// refusedStep names the first event of an intact chain that Baton does not
// fold (a writer around Baton can recompute the chain), by the rule the
// read models and the write side fold stored events by; "" when the whole
// ledger folds.
func refusedStep(id string, evs []eventstore.RecordedEvent) string {
	h := &domain.Handoff{}
	for _, ev := range evs {
		if err := records.ApplyHandoff(h, id, ev); err != nil {
			return fmt.Sprintf("event %d (%s) is not a step Baton allows: %v", ev.Revision+1, ev.Type, err)
		}
	}
	return ""
}

// failedReceipt holds a chain to the receipts an executor kept (the
// ledgerHead a callback answered): the event at each one's seq must still
// be there with that hash. A ledger cut back, or rewritten from an earlier
// point and chained again, fails it though its own chain is intact. It
// names the first receipt, in the order given, that does not hold.
func failedReceipt(recs []domain.Recorded, receipts []domain.LedgerHead) string {
	for _, r := range receipts {
		switch {
		case r.Seq == 0:
			return fmt.Sprintf("receipt %d:%s names no event (seqs start at 1)", r.Seq, r.Hash)
		case r.Seq > uint64(len(recs)):
			return fmt.Sprintf("receipt %d:%s is beyond the ledger's head (%d events): events are missing", r.Seq, r.Hash, len(recs))
		case recs[r.Seq-1].Hash != r.Hash:
			return fmt.Sprintf("receipt %d:%s does not match event %d, whose hash is now %s: the ledger was rewritten", r.Seq, r.Hash, r.Seq, recs[r.Seq-1].Hash)
		}
	}
	return ""
}

// handoffsInFeed lists every handoff with events in store, in the order
// of the global feed.
func handoffsInFeed(ctx context.Context, store eventstore.Store) ([]string, error) {
	var ids []string
	seen := map[string]bool{}
	prefix := domain.StreamID("")
	for page, err := range eventstore.FeedPages(ctx, store, 5000) {
		if err != nil {
			return nil, err
		}
		for _, ev := range page {
			if id, ok := strings.CutPrefix(ev.StreamID, prefix); ok && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	return ids, nil
}
