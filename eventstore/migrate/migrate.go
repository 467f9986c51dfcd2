// Package migrate copies one event store into another: every event of the
// source's global feed, in feed order, to the same stream at the same
// revision, with its id, type, data and metadata unchanged. Each append
// expects the revision the event had in the source, so a run after an
// interruption confirms what an earlier run copied instead of writing it
// twice. Compare then checks the target against the source event by event.
//
// Source and target are any eventstore.Store; `baton migrate` wires the
// embedded store to KurrentDB (docs/operations.md).
package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/batonhq/baton/eventstore"
)

// ErrLimitReached ends a copy after Options.Limit events.
var ErrLimitReached = errors.New("limit reached")

// Options tune a copy. The zero value copies everything, in appends of up
// to 100 events with no size cap.
type Options struct {
	// MaxAppendSize is the target's cap on the bytes of one append (0: none).
	// Appends are kept to three quarters of it, as their size is estimated.
	MaxAppendSize int
	// Limit stops the copy after the first this many events of the feed,
	// copied now or confirmed from an earlier run (0: no limit).
	Limit int
	// Progress, when set, is called after each append with the counts so far.
	Progress func(Stats)
	// RetryWait is the first pause before retrying a failed append (1 s
	// when zero); it doubles with each retry.
	RetryWait time.Duration
}

// Stats counts a copy's progress.
type Stats struct {
	Events  int             // source events copied or confirmed
	Appends int             // appends sent to the target, retries included
	Resumed int             // groups the target held in part
	Retries int             // appends retried after a failure
	Streams map[string]bool // the streams copied, for Compare
}

// groupMax caps the events of one append.
const groupMax = 100

// Copy copies every event of src's feed to dst (see the package comment).
// It stops with ErrLimitReached at opts.Limit. Call SameStart first: Copy
// refuses a foreign event only when it meets one in its way.
func Copy(ctx context.Context, src, dst eventstore.Store, opts Options) (Stats, error) {
	budget := math.MaxInt
	if opts.MaxAppendSize > 0 {
		budget = opts.MaxAppendSize * 3 / 4
	}
	c := copier{dst: dst, budget: budget, progress: opts.Progress, retryWait: opts.RetryWait}
	return c.copyAll(ctx, src, opts.Limit)
}

// copier copies events to dst in the order it is given them.
type copier struct {
	dst eventstore.Store
	// budget caps the estimated bytes of one append.
	budget    int
	progress  func(Stats)
	retryWait time.Duration
}

func (c *copier) copyAll(ctx context.Context, src eventstore.Store, limit int) (Stats, error) {
	st := Stats{Streams: map[string]bool{}}
	// Consecutive events of one stream travel in one append, as they were
	// most likely written; the group's size is estimated as the target
	// counts it.
	var group []eventstore.RecordedEvent
	size := 0
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		err := c.copyGroup(ctx, group, &st)
		if err == nil {
			st.Events += len(group)
			if c.progress != nil {
				c.progress(st)
			}
		}
		group, size = group[:0], 0
		return err
	}
	for page, err := range eventstore.FeedPages(ctx, src, 1000) {
		if err != nil {
			return st, err
		}
		for _, ev := range page {
			if ev.Unreadable != "" {
				// Copied, it would be written without metadata and read back
				// as an ordinary event stamped with the target's time.
				return st, fmt.Errorf("%s@%d: the source cannot read its metadata (%s); nothing of it was copied", ev.StreamID, ev.Revision, ev.Unreadable)
			}
			if limit > 0 && st.Events+len(group) == limit {
				if err := flush(); err != nil {
					return st, err
				}
				return st, ErrLimitReached
			}
			n := estimateSize(ev)
			if len(group) > 0 {
				prev := group[len(group)-1]
				if prev.StreamID != ev.StreamID || ev.Revision != prev.Revision+1 || len(group) == groupMax || size+n > c.budget {
					if err := flush(); err != nil {
						return st, err
					}
				}
			}
			group = append(group, ev)
			size += n
			st.Streams[ev.StreamID] = true
		}
	}
	return st, flush()
}

// estimateSize is about what KurrentDB counts against --max-append-size:
// data, metadata (which its adapter writes as JSON) and the type.
func estimateSize(ev eventstore.RecordedEvent) int {
	meta, _ := json.Marshal(ev.Metadata)
	return len(ev.Data) + len(meta) + 2*len(ev.Type)
}

func eventData(evs []eventstore.RecordedEvent) []eventstore.EventData {
	out := make([]eventstore.EventData, len(evs))
	for i, ev := range evs {
		out[i] = ev.EventData
	}
	return out
}

// expectedAt is the expectation under which events starting at revision
// first were appended: no stream for the first event, else the revision
// before it.
func expectedAt(first uint64) eventstore.ExpectedRevision {
	if first == 0 {
		return eventstore.NoStream()
	}
	return eventstore.Revision(first - 1)
}

// copyGroup appends consecutive events of one stream at their source
// revisions. Events the target already holds there (an earlier run) make
// the append an idempotent retry; when it holds only the first part of the
// group, the rest is appended after it. Anything else there is an error.
func (c *copier) copyGroup(ctx context.Context, group []eventstore.RecordedEvent, st *Stats) error {
	stream, first := group[0].StreamID, group[0].Revision
	err := c.append(ctx, stream, expectedAt(first), group, st)
	var wrong *eventstore.WrongExpectedRevisionError
	if !errors.As(err, &wrong) {
		return err
	}
	have, rerr := c.dst.ReadStream(ctx, stream, first, len(group))
	if rerr != nil {
		return fmt.Errorf("%w (and reading the target stream failed: %v)", err, rerr)
	}
	k := 0
	for k < len(have) && have[k].ID == group[k].ID && have[k].Revision == group[k].Revision {
		k++
	}
	switch {
	case k < len(have):
		return fmt.Errorf("target stream %q holds event %s (%s) at revision %d where the source has %s (%s): the target is not a copy of this store, or something else wrote to it",
			stream, have[k].ID, have[k].Type, have[k].Revision, group[k].ID, group[k].Type)
	case k == len(group):
		return nil // all there
	case k == 0:
		return fmt.Errorf("target stream %q does not reach revision %d (%v): events before it are missing there", stream, first, err)
	}
	st.Resumed++
	return c.append(ctx, stream, eventstore.Revision(first+uint64(k)-1), group[k:], st)
}

// append appends with the given expectation, retrying failures that are
// neither conflicts nor refusals: with the same ids, a retry of an append
// whose outcome is unknown is safe.
func (c *copier) append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs []eventstore.RecordedEvent, st *Stats) error {
	wait := c.retryWait
	if wait <= 0 {
		wait = time.Second
	}
	for attempt := 0; ; attempt++ {
		st.Appends++
		_, err := c.dst.Append(ctx, stream, exp, eventData(evs)...)
		if err == nil || errors.Is(err, eventstore.ErrConflict) || errors.Is(err, eventstore.ErrInvalidEvent) ||
			errors.Is(err, eventstore.ErrClosed) || ctx.Err() != nil || attempt == 4 {
			if err != nil {
				err = fmt.Errorf("append of %d events to %q at revision %d: %w", len(evs), stream, evs[0].Revision, err)
			}
			return err
		}
		st.Retries++
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		wait *= 2
	}
}
