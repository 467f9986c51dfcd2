package migrate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/kurrent"
	"github.com/batonhq/baton/eventstore/kurrent/kurrenttest"
	"github.com/batonhq/baton/eventstore/migrate"
)

// source opens an embedded store holding a small feed: a stream written in
// several appends, one of three events, between single events of other
// streams, with hashes and recorded times set as the ledger sets them.
func source(t *testing.T) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	at := time.Date(2026, 3, 1, 9, 0, 0, 123456789, time.UTC)
	event := func(typ string, i int) eventstore.EventData {
		at = at.Add(time.Second)
		return eventstore.NewEvent(typ, json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), eventstore.Metadata{
			Tenant: "t", Actor: "alice", RecordedAt: at, PrevHash: fmt.Sprintf("h%d", i-1), Hash: fmt.Sprintf("h%d", i),
		})
	}
	ctx := context.Background()
	appendTo := func(stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) {
		t.Helper()
		if _, err := s.Append(ctx, stream, exp, evs...); err != nil {
			t.Fatal(err)
		}
	}
	appendTo("handoff-a", eventstore.NoStream(), event("ContractCreated", 0), event("ApprovalDecided", 1), event("ExecutionStarted", 2))
	appendTo("keys", eventstore.NoStream(), event("KeyCreated", 0))
	appendTo("handoff-a", eventstore.Revision(2), event("ResultRecorded", 3))
	for i := 0; i < 8; i++ {
		appendTo(fmt.Sprintf("handoff-%d", i), eventstore.NoStream(), event("ContractCreated", i))
		if i%2 == 0 {
			appendTo(fmt.Sprintf("handoff-%d", i), eventstore.Revision(0), event("ApprovalDecided", i))
		}
	}
	return s
}

// target starts a KurrentDB test double and opens a store on it.
func target(t *testing.T) (*kurrent.Store, *kurrenttest.Server) {
	t.Helper()
	double, err := kurrenttest.Start(kurrenttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(double.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := kurrent.Open(ctx, kurrent.Config{URL: double.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, double
}

func readFeed(t *testing.T, s eventstore.Store) []eventstore.RecordedEvent {
	t.Helper()
	var out []eventstore.RecordedEvent
	for page, err := range eventstore.FeedPages(context.Background(), s, 100) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
	}
	return out
}

// sameFeeds checks that got is want, event for event, positions aside.
func sameFeeds(t *testing.T, want, got []eventstore.RecordedEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("the target holds %d events, the source %d", len(got), len(want))
	}
	for i := range want {
		if why := migrate.Diff(want[i], got[i]); why != "" {
			t.Fatalf("event %d (%s in %s): %s", i, want[i].ID, want[i].StreamID, why)
		}
	}
}

// copied checks a complete copy: the feeds match and Compare agrees.
func copied(t *testing.T, src, dst eventstore.Store, st migrate.Stats) {
	t.Helper()
	want := readFeed(t, src)
	if st.Events != len(want) {
		t.Fatalf("copy counted %d events, the source holds %d", st.Events, len(want))
	}
	sameFeeds(t, want, readFeed(t, dst))
	if n, err := migrate.Compare(context.Background(), src, dst, st.Streams); err != nil || n != len(want) {
		t.Fatalf("Compare = %d, %v; want %d", n, err, len(want))
	}
}

// TestCopyInterrupted cancels a copy from inside (as SIGINT does) after a
// few appends, then copies again: the second copy confirms what the first
// wrote and the target equals the source.
func TestCopyInterrupted(t *testing.T) {
	src := source(t)
	dst, _ := target(t)
	total := len(readFeed(t, src))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := migrate.Copy(ctx, src, dst, migrate.Options{Progress: func(st migrate.Stats) {
		if st.Events >= 5 {
			cancel()
		}
	}})
	if err == nil || ctx.Err() == nil {
		t.Fatalf("interrupted copy = %+v, %v", st, err)
	}
	if got := readFeed(t, dst); len(got) < 5 || len(got) >= total {
		t.Fatalf("after the interruption the target holds %d of %d events", len(got), total)
	}
	st, err = migrate.Copy(context.Background(), src, dst, migrate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	copied(t, src, dst, st)
}

// TestCopyLimitThenContinue stops inside a three-event append; the next
// run proposes the whole group again, finds its first part there and
// appends the rest after it; a run over a complete copy writes nothing.
func TestCopyLimitThenContinue(t *testing.T) {
	src := source(t)
	dst, double := target(t)
	ctx := context.Background()

	st, err := migrate.Copy(ctx, src, dst, migrate.Options{Limit: 2})
	if !errors.Is(err, migrate.ErrLimitReached) || st.Events != 2 {
		t.Fatalf("limited copy = %+v, %v", st, err)
	}
	if got := readFeed(t, dst); len(got) != 2 {
		t.Fatalf("the limited copy left %d events in the target", len(got))
	}

	st, err = migrate.Copy(ctx, src, dst, migrate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Resumed != 1 || st.Retries != 0 {
		t.Fatalf("completing copy = %+v; want one group continued, no retry", st)
	}
	copied(t, src, dst, st)

	written := func() int {
		n := 0
		for _, c := range double.Appends() {
			if c.Outcome == "written" {
				n += len(c.EventIDs)
			}
		}
		return n
	}
	before := written()
	st, err = migrate.Copy(ctx, src, dst, migrate.Options{})
	if err != nil || st.Resumed != 0 {
		t.Fatalf("copy over a complete copy = %+v, %v", st, err)
	}
	if w := written(); w != before {
		t.Fatalf("the copy over a complete copy wrote %d events", w-before)
	}
	copied(t, src, dst, st)
}

// TestCopyGroupsAppends: consecutive events of a stream travel in one
// append unless the target's size cap is too small for them.
func TestCopyGroupsAppends(t *testing.T) {
	tests := []struct {
		name          string
		maxAppendSize int
		appends       int
	}{
		// handoff-a's first three, keys, handoff-a's fourth, then eight
		// streams whose one or two events follow each other in the feed.
		{name: "no cap", maxAppendSize: 0, appends: 11},
		{name: "room for one event", maxAppendSize: 1, appends: 17},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := source(t)
			dst, _ := target(t)
			st, err := migrate.Copy(context.Background(), src, dst, migrate.Options{MaxAppendSize: tt.maxAppendSize})
			if err != nil {
				t.Fatal(err)
			}
			if st.Appends != tt.appends {
				t.Fatalf("%d appends, want %d", st.Appends, tt.appends)
			}
			copied(t, src, dst, st)
		})
	}
}

// flaky fails appends: before sending them, or after they were written (a
// lost answer).
type flaky struct {
	eventstore.Store
	failures []bool // one per failing append: true when it was written
}

var errUnavailable = errors.New("unavailable")

func (f *flaky) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if len(f.failures) == 0 {
		return f.Store.Append(ctx, stream, exp, evs...)
	}
	written := f.failures[0]
	f.failures = f.failures[1:]
	if written {
		if _, err := f.Store.Append(ctx, stream, exp, evs...); err != nil {
			return eventstore.AppendResult{}, err
		}
	}
	return eventstore.AppendResult{}, errUnavailable
}

// TestCopyRetriesFailedAppends: an append that failed, whether or not it
// was written, is retried with the same ids and lands once.
func TestCopyRetriesFailedAppends(t *testing.T) {
	src := source(t)
	dst, _ := target(t)
	f := &flaky{Store: dst, failures: []bool{false, true}}
	st, err := migrate.Copy(context.Background(), src, f, migrate.Options{RetryWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if st.Retries != 2 {
		t.Fatalf("%d retries, want 2", st.Retries)
	}
	copied(t, src, dst, st)

	// A target that keeps failing ends the copy after five attempts.
	dst2, _ := target(t)
	f = &flaky{Store: dst2, failures: []bool{false, false, false, false, false}}
	st, err = migrate.Copy(context.Background(), src, f, migrate.Options{RetryWait: time.Millisecond})
	if !errors.Is(err, errUnavailable) || st.Appends != 5 || st.Events != 0 {
		t.Fatalf("copy onto a failing target = %+v, %v", st, err)
	}
}

// TestCopyStopsAtAForeignEvent: a target stream holding another event where
// the source's belongs is neither overwritten nor skipped.
func TestCopyStopsAtAForeignEvent(t *testing.T) {
	src := source(t)
	dst, _ := target(t)
	ctx := context.Background()
	other := eventstore.NewEvent("ContractCreated", json.RawMessage(`{}`), eventstore.Metadata{})
	if _, err := dst.Append(ctx, "handoff-3", eventstore.NoStream(), other); err != nil {
		t.Fatal(err)
	}
	_, err := migrate.Copy(ctx, src, dst, migrate.Options{})
	if err == nil || !strings.Contains(err.Error(), "holds event "+other.ID.String()) {
		t.Fatalf("copy onto a foreign stream = %v", err)
	}
	got, err := dst.ReadStream(ctx, "handoff-3", 0, 10)
	if err != nil || len(got) != 1 || got[0].ID != other.ID {
		t.Fatalf("the foreign stream now holds %+v (%v)", got, err)
	}
}

// unreadable marks one event of its feed as one whose metadata the store
// could not decode.
type unreadable struct {
	eventstore.Store
	id uuid.UUID
}

func (u unreadable) ReadAll(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	page, err := u.Store.ReadAll(ctx, after, limit)
	for i := range page {
		if page[i].ID == u.id {
			page[i].Metadata, page[i].Unreadable = eventstore.Metadata{}, "not JSON"
		}
	}
	return page, err
}

// TestCopyRefusesUnreadableMetadata: such an event would be written
// without its metadata, so the copy stops before it.
func TestCopyRefusesUnreadableMetadata(t *testing.T) {
	src := source(t)
	dst, _ := target(t)
	bad := readFeed(t, src)[4]
	_, err := migrate.Copy(context.Background(), unreadable{src, bad.ID}, dst, migrate.Options{})
	if err == nil || !strings.Contains(err.Error(), "cannot read its metadata") {
		t.Fatalf("copy of an unreadable event = %v", err)
	}
	for _, ev := range readFeed(t, dst) {
		if ev.ID == bad.ID {
			t.Fatal("the unreadable event was copied")
		}
	}
}

func TestSameStart(t *testing.T) {
	ctx := context.Background()
	foreign := eventstore.NewEvent("KeyCreated", json.RawMessage(`{}`), eventstore.Metadata{})
	tests := []struct {
		name    string
		prepare func(t *testing.T, src, dst eventstore.Store)
		refused bool
	}{
		{name: "empty target", prepare: func(*testing.T, eventstore.Store, eventstore.Store) {}},
		{name: "copy in part", prepare: func(t *testing.T, src, dst eventstore.Store) {
			if _, err := migrate.Copy(ctx, src, dst, migrate.Options{Limit: 1}); !errors.Is(err, migrate.ErrLimitReached) {
				t.Fatal(err)
			}
		}},
		{name: "used by another writer", refused: true, prepare: func(t *testing.T, _, dst eventstore.Store) {
			if _, err := dst.Append(ctx, "keys", eventstore.NoStream(), foreign); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := source(t)
			dst, _ := target(t)
			tt.prepare(t, src, dst)
			err := migrate.SameStart(ctx, src, dst)
			if refused := err != nil && strings.Contains(err.Error(), "nothing was written"); refused != tt.refused {
				t.Fatalf("SameStart = %v, want refused %v", err, tt.refused)
			}
		})
	}
}

// TestCompareFindsWhatDiffers: events missing from the target, or beyond
// the source's last, fail the comparison; other streams are left out.
func TestCompareFindsWhatDiffers(t *testing.T) {
	ctx := context.Background()
	src := source(t)
	feed := readFeed(t, src)
	last := feed[len(feed)-1]
	dst, _ := target(t)
	st, err := migrate.Copy(ctx, src, dst, migrate.Options{Limit: len(feed) - 1})
	if !errors.Is(err, migrate.ErrLimitReached) {
		t.Fatal(err)
	}
	streams := map[string]bool{}
	for _, ev := range feed {
		streams[ev.StreamID] = true
	}
	if _, err := migrate.Compare(ctx, src, dst, streams); err == nil || !strings.Contains(err.Error(), "lacks event "+last.ID.String()) {
		t.Fatalf("Compare with the last event missing = %v", err)
	}

	if _, err := dst.Append(ctx, "elsewhere", eventstore.NoStream(), eventstore.NewEvent("Other", json.RawMessage(`{}`), eventstore.Metadata{})); err != nil {
		t.Fatal(err)
	}
	if st, err = migrate.Copy(ctx, src, dst, migrate.Options{}); err != nil {
		t.Fatal(err)
	}
	if n, err := migrate.Compare(ctx, src, dst, st.Streams); err != nil || n != len(feed) {
		t.Fatalf("Compare with another stream in the target = %d, %v", n, err)
	}

	extra := eventstore.NewEvent("Extra", json.RawMessage(`{}`), eventstore.Metadata{})
	if _, err := dst.Append(ctx, last.StreamID, eventstore.Revision(last.Revision), extra); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Compare(ctx, src, dst, st.Streams); err == nil || !strings.Contains(err.Error(), "after the last event of the source") {
		t.Fatalf("Compare with an extra event = %v", err)
	}
}

func TestDiff(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	want := eventstore.RecordedEvent{
		StreamID: "handoff-a", Revision: 2, Position: eventstore.Position{Commit: 7, Prepare: 7},
		EventData: eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "ResultRecorded", Data: json.RawMessage(`{"n":1}`),
			Metadata: eventstore.Metadata{Tenant: "t", RecordedAt: at, Hash: "h1", PrevHash: "h0"}},
	}
	tests := []struct {
		name   string
		change func(*eventstore.RecordedEvent)
		diff   string // a part of the answer; "" for none
	}{
		{name: "same", change: func(*eventstore.RecordedEvent) {}},
		{name: "another position", change: func(e *eventstore.RecordedEvent) { e.Position = eventstore.Position{Commit: 900, Prepare: 800} }},
		{name: "same instant in another zone", change: func(e *eventstore.RecordedEvent) { e.Metadata.RecordedAt = at.In(time.FixedZone("x", 3600)) }},
		{name: "another id", change: func(e *eventstore.RecordedEvent) { e.ID = uuid.Must(uuid.NewV7()) }, diff: "in its place"},
		{name: "another stream", change: func(e *eventstore.RecordedEvent) { e.StreamID = "handoff-b" }, diff: `in "handoff-b" at revision 2`},
		{name: "another revision", change: func(e *eventstore.RecordedEvent) { e.Revision = 3 }, diff: "at revision 3"},
		{name: "another type", change: func(e *eventstore.RecordedEvent) { e.Type = "Other" }, diff: `type "Other"`},
		{name: "other data", change: func(e *eventstore.RecordedEvent) { e.Data = json.RawMessage(`{"n":2}`) }, diff: "data differs"},
		{name: "another time", change: func(e *eventstore.RecordedEvent) { e.Metadata.RecordedAt = at.Add(time.Nanosecond) }, diff: "recorded at"},
		{name: "another hash", change: func(e *eventstore.RecordedEvent) { e.Metadata.Hash = "h2" }, diff: "metadata differs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := want
			tt.change(&got)
			d := migrate.Diff(want, got)
			if tt.diff == "" && d != "" || tt.diff != "" && !strings.Contains(d, tt.diff) {
				t.Fatalf("Diff = %q, want %q", d, tt.diff)
			}
		})
	}
}
