package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/kurrent"
)

// migrate copies the embedded store into KurrentDB: every event, in the
// order of the global feed, to the same stream at the same revision, with
// its id, type, data and metadata (hashes and recorded time included)
// unchanged. Each append states the revision the event had in the source,
// so that a run after an interruption (or a lost answer) finds the events
// already copied and confirms them instead of writing them twice. When every
// event is copied, it compares the target with the source event by event
// and recomputes every handoff's hash chain in the target, as `baton ledger
// verify` does.
func migrate(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	from := fs.String("from", storeBolt, "source store: bolt (the embedded store in --data)")
	data := fs.String("data", dataDirDefault(), "data directory of the source store (no baton may be serving it)")
	to := fs.String("to", storeKurrent, "target store: kurrent")
	url := fs.String("kurrentdb-url", os.Getenv("BATON_KURRENTDB_URL"), "KurrentDB connection string of the target (or BATON_KURRENTDB_URL)")
	var env envVars
	maxAppend := fs.Int("kurrentdb-max-append-size", int(env.integer("kurrentdb-max-append-size", "BATON_KURRENTDB_MAX_APPEND_SIZE", kurrent.DefaultMaxAppendSize)), "the target server's --max-append-size in bytes")
	limit := fs.Int("limit", 0, "stop after the first this many events of the feed (copied now or confirmed from an earlier run); a run with a larger limit, or none, continues; 0 copies everything")
	if err := env.parse(fs, args); err != nil {
		return err
	}
	if *from != storeBolt || *to != storeKurrent {
		return fmt.Errorf("migrate: only --from bolt --to kurrent is supported (got --from %q --to %q)", *from, *to)
	}
	if *url == "" {
		return errors.New("migrate: --kurrentdb-url (or BATON_KURRENTDB_URL) is required")
	}
	if *limit < 0 {
		return errors.New("migrate: --limit must not be negative")
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	src, err := bolt.Open(*data, bolt.Options{})
	if err != nil {
		return fmt.Errorf("migrate: source: %w", err)
	}
	defer src.Close()
	dst, err := openKurrent(ctx, *url, *maxAppend, zerolog.Nop())
	if err != nil {
		return fmt.Errorf("migrate: target: %w", err)
	}
	defer dst.Close()
	head, err := src.Head(ctx)
	if err != nil {
		return err
	}
	// The embedded store numbers its events 1, 2, 3... without gaps.
	total := int(head.Commit)
	if err := sameStart(ctx, src, dst); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "migrate: %d events from %s to KurrentDB %s\n", total, src.Path(), kurrent.Redact(*url))

	start := time.Now()
	lastReport := start
	c := copier{dst: dst, budget: *maxAppend * 3 / 4, progress: func(st copyStats) {
		if time.Since(lastReport) < time.Second {
			return // at most a line a second
		}
		lastReport = time.Now()
		fmt.Fprintf(stdout, "migrate: %d/%d events copied\n", st.events, total)
	}}
	st, err := c.copyAll(ctx, src, *limit)
	if errors.Is(err, errLimitReached) {
		fmt.Fprintf(stdout, "migrate: stopped after the first %d of %d events (--limit %d counts from the start of the feed); run it again with a larger --limit, or without one, to copy the rest: events already copied are confirmed, not written twice\n", st.events, total, *limit)
		return nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("migrate: interrupted after %d of %d events; run it again to continue (events already copied are confirmed, not written twice): %w", st.events, total, err)
		}
		return fmt.Errorf("migrate: after %d of %d events: %w", st.events, total, err)
	}
	fmt.Fprintf(stdout, "migrate: %d events in %d streams copied in %v (%d appends; %d continued after events an earlier run had copied, %d retried after a failure)\n",
		st.events, len(st.streams), time.Since(start).Round(time.Millisecond), st.appends, st.resumed, st.retries)

	n, err := compareStores(ctx, src, dst, st.streams)
	if err != nil {
		return fmt.Errorf("migrate: the target does not match the source: %w", err)
	}
	fmt.Fprintf(stdout, "migrate: compared %d events: the target holds each once, in the same order, with the same id, stream, revision, type, data and metadata\n", n)
	fmt.Fprintln(stdout, "migrate: verifying the hash chains in the target (baton ledger verify):")
	return verifyStore(ctx, dst, nil, nil, stdout)
}

// sameStart refuses, before anything is written, a target whose feed does
// not start with the source's first event: one that other writers used (a
// Baton that started on it and created its first key), which the copy
// would otherwise fill in part before it met a stream in its way.
func sameStart(ctx context.Context, src, dst eventstore.Store) error {
	there, err := dst.ReadAll(ctx, eventstore.Start, 1)
	if err != nil {
		return fmt.Errorf("migrate: reading the target: %w", err)
	}
	if len(there) == 0 {
		return nil // empty: a first run
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

// errLimitReached ends a copy at --limit.
var errLimitReached = errors.New("limit reached")

// copyStats counts a copy's progress.
type copyStats struct {
	events  int // source events copied or confirmed
	appends int
	resumed int // groups the target held in part
	retries int // appends retried after a failure
	streams map[string]bool
}

// copier copies events to dst in the order it is given them.
type copier struct {
	dst eventstore.Store
	// budget caps the estimated bytes of one append (the target refuses
	// appends above its --max-append-size).
	budget   int
	progress func(copyStats)
	// retryWait is the first pause before retrying a failed append (1 s
	// when zero).
	retryWait time.Duration
}

// groupMax caps the events of one append.
const groupMax = 100

// copyAll copies every event of src's global feed, up to limit events when
// limit > 0 (then it returns errLimitReached).
func (c *copier) copyAll(ctx context.Context, src eventstore.Store, limit int) (copyStats, error) {
	st := copyStats{streams: map[string]bool{}}
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
			st.events += len(group)
			if c.progress != nil {
				c.progress(st)
			}
		}
		group, size = group[:0], 0
		return err
	}
	for after := eventstore.Start; ; {
		page, err := src.ReadAll(ctx, after, 1000)
		if err != nil {
			return st, err
		}
		if len(page) == 0 {
			return st, flush()
		}
		for _, ev := range page {
			if ev.Unreadable != "" {
				// Copied, it would be written without metadata and read back
				// as an ordinary event stamped with the target's time.
				return st, fmt.Errorf("%s@%d: the source cannot read its metadata (%s); nothing of it was copied", ev.StreamID, ev.Revision, ev.Unreadable)
			}
			if limit > 0 && st.events+len(group) == limit {
				if err := flush(); err != nil {
					return st, err
				}
				return st, errLimitReached
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
			st.streams[ev.StreamID] = true
		}
		after = page[len(page)-1].Position
	}
}

// estimateSize is about what KurrentDB counts against --max-append-size:
// data, metadata (which the adapter writes as JSON) and the type.
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
// revisions. Events the target already holds at those revisions (an earlier
// run) make the append an idempotent retry. When the target holds only the
// first part of the group (an earlier run copied it in smaller appends),
// the rest is appended after it. Anything else in their place is an error.
func (c *copier) copyGroup(ctx context.Context, group []eventstore.RecordedEvent, st *copyStats) error {
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
	st.resumed++
	return c.append(ctx, stream, eventstore.Revision(first+uint64(k)-1), group[k:], st)
}

// append appends with the given expectation, retrying failures that are
// neither conflicts nor refusals: with the same ids, a retry of an append
// whose outcome is unknown is safe.
func (c *copier) append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs []eventstore.RecordedEvent, st *copyStats) error {
	wait := c.retryWait
	if wait <= 0 {
		wait = time.Second
	}
	for attempt := 0; ; attempt++ {
		st.appends++
		_, err := c.dst.Append(ctx, stream, exp, eventData(evs)...)
		if err == nil || errors.Is(err, eventstore.ErrConflict) || errors.Is(err, eventstore.ErrInvalidEvent) ||
			errors.Is(err, eventstore.ErrClosed) || ctx.Err() != nil || attempt == 4 {
			if err != nil {
				err = fmt.Errorf("append of %d events to %q at revision %d: %w", len(evs), stream, evs[0].Revision, err)
			}
			return err
		}
		st.retries++
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		wait *= 2
	}
}

// compareStores checks that dst holds every event of src's feed exactly
// once and unchanged, in the same order: it walks both feeds, taking from
// dst only the events of the copied streams (a shared database may hold
// others). It returns how many events it compared.
func compareStores(ctx context.Context, src, dst eventstore.Store, streams map[string]bool) (int, error) {
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
			if why := sameEvent(want, got); why != "" {
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

// sameEvent says how got differs from want ("" when it does not). Positions
// differ between stores by design.
func sameEvent(want, got eventstore.RecordedEvent) string {
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
