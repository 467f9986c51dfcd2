// Package records turns stored handoff events into the domain's form. The
// write side (eventstore/ledger), the read side (projections) and the
// auditor's tools fold stored events through it, so they accept and refuse
// the same events for the same reasons.
package records

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

// Recorded converts a stored handoff event to the domain's form.
func Recorded(ev eventstore.RecordedEvent) domain.Recorded {
	return domain.Recorded{
		Seq: ev.Revision + 1, Type: ev.Type, Data: ev.Data, Actor: ev.Metadata.Actor,
		RecordedAt: ev.Metadata.RecordedAt, PrevHash: ev.Metadata.PrevHash, Hash: ev.Metadata.Hash,
	}
}

// ReadHandoff reads a handoff's whole stream in the domain's form; a
// missing handoff reads as no events.
func ReadHandoff(ctx context.Context, store eventstore.Store, id string) ([]domain.Recorded, error) {
	evs, err := eventstore.ReadWholeStream(ctx, store, domain.StreamID(id))
	if err != nil {
		return nil, err
	}
	recs := make([]domain.Recorded, 0, len(evs))
	for _, ev := range evs {
		recs = append(recs, Recorded(ev))
	}
	return recs, nil
}

// ApplyHandoff folds one stored event of handoff id's stream onto h, with
// the checks every reader of a stream written by others makes: metadata it
// can read, a stream that starts at seq 1, a step the state machine allows,
// a contract naming this handoff.
func ApplyHandoff(h *domain.Handoff, id string, ev eventstore.RecordedEvent) error {
	switch {
	case ev.Unreadable != "":
		return errors.New(ev.Unreadable) // no actor, time or hash chain to record it with
	case h.Head.Seq == 0 && ev.Revision > 0:
		return StartsLate(ev.Revision + 1)
	}
	if err := h.Apply(Recorded(ev)); err != nil {
		return err
	}
	if h.ID != id {
		// Folding it would show one handoff's events as another's.
		return fmt.Errorf("its contract names handoff %q", h.ID)
	}
	return nil
}

// StartsLate is the refusal of a stream whose first event Baton sees is
// past seq 1.
func StartsLate(seq uint64) error {
	return fmt.Errorf("the stream starts at seq %d: its earlier events are not in the store (removed?)", seq)
}
