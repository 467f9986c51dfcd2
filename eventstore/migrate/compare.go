package migrate

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/eventstore"
)

// SameStart refuses, before anything is written, a target whose feed does
// not start with the source's first event: one that other writers used,
// which a copy would otherwise fill in part before it met a stream in its
// way. An empty target is a first run.
func SameStart(ctx context.Context, src, dst eventstore.Store) error {
	there, err := dst.ReadAll(ctx, eventstore.Start, 1)
	if err != nil {
		return fmt.Errorf("migrate: reading the target: %w", err)
	}
	if len(there) == 0 {
		return nil
	}
	here, err := src.ReadAll(ctx, eventstore.Start, 1)
	if err != nil {
		return err
	}
	if len(here) == 0 || here[0].ID != there[0].ID {
		return fmt.Errorf("migrate: the target is not empty and does not start with this store's first event (it holds %s %s in stream %q first): it is not a copy of this store; nothing was written", there[0].Type, there[0].ID, there[0].StreamID)
	}
	return nil
}

// Compare checks that dst holds every event of src's feed exactly once and
// unchanged, in the same order. It takes from dst only the events of
// streams (Stats.Streams of the copy), as a shared database may hold
// others, and returns how many events it compared.
func Compare(ctx context.Context, src, dst eventstore.Store, streams map[string]bool) (int, error) {
	next := feedReader(ctx, src)
	n := 0
	var after eventstore.Position
	for {
		page, err := dst.ReadAll(ctx, after, 1000)
		if err != nil {
			return n, err
		}
		if len(page) == 0 {
			break
		}
		for _, got := range page {
			if !streams[got.StreamID] {
				continue
			}
			want, ok, err := next()
			if err != nil {
				return n, err
			}
			if !ok {
				return n, fmt.Errorf("the target holds event %s (%s) in %q at revision %d after the last event of the source", got.ID, got.Type, got.StreamID, got.Revision)
			}
			if why := Diff(want, got); why != "" {
				return n, fmt.Errorf("event %d of the feed (%s in %q at revision %d): %s", n+1, want.ID, want.StreamID, want.Revision, why)
			}
			n++
		}
		after = page[len(page)-1].Position
	}
	if want, ok, err := next(); err != nil {
		return n, err
	} else if ok {
		return n, fmt.Errorf("the target lacks event %s (%s) in %q at revision %d, and everything after it", want.ID, want.Type, want.StreamID, want.Revision)
	}
	return n, nil
}

// feedReader returns a function that yields store's feed one event at a
// time.
func feedReader(ctx context.Context, store eventstore.Store) func() (eventstore.RecordedEvent, bool, error) {
	var page []eventstore.RecordedEvent
	var after eventstore.Position
	done := false
	return func() (eventstore.RecordedEvent, bool, error) {
		if len(page) == 0 && !done {
			p, err := store.ReadAll(ctx, after, 1000)
			if err != nil {
				return eventstore.RecordedEvent{}, false, err
			}
			if len(p) == 0 {
				done = true
			} else {
				page, after = p, p[len(p)-1].Position
			}
		}
		if len(page) == 0 {
			return eventstore.RecordedEvent{}, false, nil
		}
		ev := page[0]
		page = page[1:]
		return ev, true, nil
	}
}

// Diff says how got, a copy of want, differs from it ("" when it does not).
// Positions differ between stores by design and are not compared.
func Diff(want, got eventstore.RecordedEvent) string {
	switch {
	case want.ID != got.ID:
		return fmt.Sprintf("the target has event %s (%s in %q) in its place", got.ID, got.Type, got.StreamID)
	case want.StreamID != got.StreamID || want.Revision != got.Revision:
		return fmt.Sprintf("the target has it in %q at revision %d", got.StreamID, got.Revision)
	case want.Type != got.Type:
		return fmt.Sprintf("type %q in the target", got.Type)
	case !bytes.Equal(want.Data, got.Data):
		return "its data differs in the target"
	}
	wm, gm := want.Metadata, got.Metadata
	if !wm.RecordedAt.Equal(gm.RecordedAt) {
		return fmt.Sprintf("recorded at %s in the source, %s in the target", wm.RecordedAt.Format(time.RFC3339Nano), gm.RecordedAt.Format(time.RFC3339Nano))
	}
	wm.RecordedAt, gm.RecordedAt = time.Time{}, time.Time{}
	if wm != gm {
		return fmt.Sprintf("its metadata differs: %+v in the source, %+v in the target", wm, gm)
	}
	return ""
}
