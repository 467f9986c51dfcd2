package gateway

import (
	"context"
	"sync/atomic"

	"github.com/batonhq/baton/eventstore"
)

// Applier folds events of the global feed into in-memory state.
type Applier interface {
	Apply(ev eventstore.RecordedEvent) error
}

// Follower feeds the store's global feed to the gateway's in-memory state
// (catalog, budgets), so that every replica following the same store
// agrees on them. CatchUp applies what is stored; Run then follows new
// events until its context ends.
type Follower struct {
	Store    eventstore.Store
	Appliers []Applier
	// OnError hears events that could not be applied; they are skipped.
	OnError func(ev eventstore.RecordedEvent, err error)
	pos     eventstore.Position
	applied atomic.Pointer[eventstore.Position] // pos, for readers on other goroutines
}

// Position is the position of the last event applied (Start before the
// first), for the metrics' lag; safe to call while Run follows the feed.
func (f *Follower) Position() eventstore.Position {
	if p := f.applied.Load(); p != nil {
		return *p
	}
	return eventstore.Start
}

func (f *Follower) apply(evs []eventstore.RecordedEvent) {
	for _, ev := range evs {
		// An event with unreadable metadata (written around Baton) is
		// applied too: the gateway's events carry what they mean in their
		// data, and skipping a usage event would under-count spending.
		for _, a := range f.Appliers {
			if err := a.Apply(ev); err != nil && f.OnError != nil {
				f.OnError(ev, err)
			}
		}
		f.pos = ev.Position
	}
	if len(evs) > 0 {
		pos := f.pos
		f.applied.Store(&pos)
	}
}

// CatchUp applies every event stored after the last one applied.
func (f *Follower) CatchUp(ctx context.Context) error {
	for {
		evs, err := f.Store.ReadAll(ctx, f.pos, 1024)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return nil
		}
		f.apply(evs)
	}
}

// Run follows the feed from where CatchUp stopped until ctx ends.
func (f *Follower) Run(ctx context.Context) error {
	sub, err := f.Store.SubscribeAll(ctx, f.pos)
	if err != nil {
		return err
	}
	defer sub.Close()
	for {
		evs, err := sub.RecvBatch(256)
		if err != nil {
			if ctx.Err() != nil {
				return nil // asked to stop
			}
			return err // the feed ended under a live server (the store closed): say why
		}
		f.apply(evs)
	}
}
