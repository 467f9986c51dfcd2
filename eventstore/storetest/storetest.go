// Package storetest is the conformance suite every eventstore backend passes.
// A backend's test calls Run with a function that gives each subtest its own
// empty storage and a way to open it (again).
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
)

// Opener opens the storage a subtest was given. Every call opens the same
// storage, so close-then-open is a restart.
type Opener func() (eventstore.Store, error)

// NewStorage returns an Opener for fresh, empty storage. The caller's
// cleanup (t.Cleanup) removes it.
type NewStorage func(t *testing.T) Opener

// Run runs every conformance test against the backend.
func Run(t *testing.T, newStorage NewStorage) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"ExpectedRevisionRules", testExpectedRevisionRules},
		{"ConflictErrorNamesActualRevision", testConflictError},
		{"IdempotentReappend", testIdempotentReappend},
		{"InvalidAppendsWriteNothing", testInvalidAppends},
		{"MetadataRoundTrip", testMetadataRoundTrip},
		{"Ordering", testOrdering},
		{"Paging", testPaging},
		{"LongStreamReadsFromEveryRevision", testLongStream},
		{"MissingStreamReadsEmpty", testMissingStream},
		{"CatchUpWhileWriting", testCatchUpWhileWriting},
		{"ResumeFromCheckpointWhileWriting", testResumeFromCheckpoint},
		{"SubscriptionLiveAndCancel", testSubscriptionLive},
		{"SlowSubscriberDoesNotBlockWriters", testSlowSubscriber},
		{"HundredRacersOneStream", testHundredRacers},
		{"SixtyFourDistinctStreams", testDistinctStreams},
		{"ReopenKeepsEverything", testReopen},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStorage(t))
		})
	}
}

// Event builds an event with a time-ordered id and JSON data.
func Event(typ string, data any) eventstore.EventData {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	return eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: typ, Data: b}
}

func mustOpen(t *testing.T, open Opener) eventstore.Store {
	t.Helper()
	s, err := open()
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustAppend(t *testing.T, s eventstore.Store, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) eventstore.AppendResult {
	t.Helper()
	res, err := s.Append(context.Background(), stream, exp, evs...)
	if err != nil {
		t.Fatalf("append %s (%s): %v", stream, exp, err)
	}
	return res
}

// noneUnreadable: events the suite wrote itself always read back whole.
func noneUnreadable(t *testing.T, evs []eventstore.RecordedEvent) {
	t.Helper()
	for _, ev := range evs {
		if ev.Unreadable != "" {
			t.Fatalf("%s@%d reads as unreadable: %s", ev.StreamID, ev.Revision, ev.Unreadable)
		}
	}
}

func readStream(t *testing.T, s eventstore.Store, stream string) []eventstore.RecordedEvent {
	t.Helper()
	var out []eventstore.RecordedEvent
	for from := uint64(0); ; {
		page, err := s.ReadStream(context.Background(), stream, from, 100)
		if err != nil {
			t.Fatalf("read %s: %v", stream, err)
		}
		noneUnreadable(t, page)
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		from = page[len(page)-1].Revision + 1
	}
}

func readAll(t *testing.T, s eventstore.Store, after eventstore.Position) []eventstore.RecordedEvent {
	t.Helper()
	var out []eventstore.RecordedEvent
	for {
		page, err := s.ReadAll(context.Background(), after, 500)
		if err != nil {
			t.Fatalf("read all: %v", err)
		}
		noneUnreadable(t, page)
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		after = page[len(page)-1].Position
	}
}

func testExpectedRevisionRules(t *testing.T, open Opener) {
	s := mustOpen(t, open)
	ctx := context.Background()
	tests := []struct {
		name    string
		stream  string
		setup   int // events appended first
		exp     eventstore.ExpectedRevision
		wantErr error
		wantRev uint64
	}{
		{"no stream on new stream", "rules-a", 0, eventstore.NoStream(), nil, 0},
		{"no stream on existing stream", "rules-b", 1, eventstore.NoStream(), eventstore.ErrConflict, 0},
		{"revision on new stream", "rules-c", 0, eventstore.Revision(0), eventstore.ErrConflict, 0},
		{"revision matches", "rules-d", 3, eventstore.Revision(2), nil, 3},
		{"revision behind", "rules-e", 3, eventstore.Revision(1), eventstore.ErrConflict, 0},
		{"revision ahead", "rules-f", 3, eventstore.Revision(7), eventstore.ErrConflict, 0},
		{"exists on new stream", "rules-g", 0, eventstore.StreamExists(), eventstore.ErrConflict, 0},
		{"exists on existing stream", "rules-h", 2, eventstore.StreamExists(), nil, 2},
		{"unset expectation", "rules-i", 0, eventstore.ExpectedRevision{}, eventstore.ErrNoExpectedRevision, 0},
		{"unset expectation on existing stream", "rules-j", 1, eventstore.ExpectedRevision{}, eventstore.ErrNoExpectedRevision, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < tc.setup; i++ {
				exp := eventstore.NoStream()
				if i > 0 {
					exp = eventstore.Revision(uint64(i - 1))
				}
				mustAppend(t, s, tc.stream, exp, Event("Setup", map[string]int{"i": i}))
			}
			res, err := s.Append(ctx, tc.stream, tc.exp, Event("Probe", nil))
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err == nil && res.NextRevision != tc.wantRev {
				t.Fatalf("next revision = %d, want %d", res.NextRevision, tc.wantRev)
			}
			want := tc.setup
			if err == nil {
				want++
			}
			if got := len(readStream(t, s, tc.stream)); got != want {
				t.Fatalf("stream holds %d events, want %d", got, want)
			}
		})
	}
}

func testConflictError(t *testing.T, open Opener) {
	s := mustOpen(t, open)
	mustAppend(t, s, "conflict-1", eventstore.NoStream(), Event("A", 1), Event("B", 2), Event("C", 3))
	_, err := s.Append(context.Background(), "conflict-1", eventstore.Revision(0), Event("D", 4))
	var wrong *eventstore.WrongExpectedRevisionError
	if !errors.As(err, &wrong) {
		t.Fatalf("err = %v, want *WrongExpectedRevisionError", err)
	}
	if !wrong.Exists || wrong.Actual != 2 || wrong.Stream != "conflict-1" {
		t.Fatalf("error = %+v, want stream conflict-1 at actual revision 2", wrong)
	}
	if !errors.Is(err, eventstore.ErrConflict) {
		t.Fatal("errors.Is(err, ErrConflict) is false")
	}
	_, err = s.Append(context.Background(), "conflict-missing", eventstore.Revision(4), Event("A", 1))
	if !errors.As(err, &wrong) || wrong.Exists {
		t.Fatalf("err = %v, want a conflict saying the stream does not exist", err)
	}
}

func testIdempotentReappend(t *testing.T, open Opener) {
	s := mustOpen(t, open)
	ctx := context.Background()
	a, b := Event("A", 1), Event("B", 2)
	first := mustAppend(t, s, "idem-1", eventstore.NoStream(), a, b)
	head, _ := s.Head(ctx)

	tests := []struct {
		name string
		exp  eventstore.ExpectedRevision
		evs  []eventstore.EventData
		want uint64
	}{
		{"same append again", eventstore.NoStream(), []eventstore.EventData{a, b}, first.NextRevision},
		{"prefix of the append", eventstore.NoStream(), []eventstore.EventData{a}, 0},
		{"stream exists", eventstore.StreamExists(), []eventstore.EventData{a, b}, first.NextRevision},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Append(ctx, "idem-1", tc.exp, tc.evs...)
			if err != nil {
				t.Fatalf("re-append: %v", err)
			}
			if res.NextRevision != tc.want {
				t.Fatalf("next revision = %d, want %d", res.NextRevision, tc.want)
			}
		})
	}
	again, err := s.Append(ctx, "idem-1", eventstore.NoStream(), a, b)
	if err != nil || again != first {
		t.Fatalf("re-append = %+v, %v; want the first result %+v", again, err, first)
	}
	if n := len(readStream(t, s, "idem-1")); n != 2 {
		t.Fatalf("stream holds %d events after re-appends, want 2", n)
	}
	if h, _ := s.Head(ctx); h != head {
		t.Fatalf("head moved from %+v to %+v on an idempotent re-append", head, h)
	}

	// A later append at the next revision, retried after the stream moved on.
	c := Event("C", 3)
	mustAppend(t, s, "idem-1", eventstore.Revision(1), c)
	mustAppend(t, s, "idem-1", eventstore.Revision(2), Event("D", 4))
	if res, err := s.Append(ctx, "idem-1", eventstore.Revision(1), c); err != nil || res.NextRevision != 2 {
		t.Fatalf("retry of an older append = %+v, %v; want revision 2", res, err)
	}
	// Known ids mixed with new ones are not a retry.
	if _, err := s.Append(ctx, "idem-1", eventstore.Revision(1), c, Event("E", 5)); !errors.Is(err, eventstore.ErrConflict) {
		t.Fatalf("stored id followed by a new one: err = %v, want conflict", err)
	}
	// The same ids under an expectation that puts them elsewhere: conflict.
	if _, err := s.Append(ctx, "idem-1", eventstore.Revision(0), c); !errors.Is(err, eventstore.ErrConflict) {
		t.Fatalf("stored id at another revision: err = %v, want conflict", err)
	}
	if n := len(readStream(t, s, "idem-1")); n != 4 {
		t.Fatalf("stream holds %d events, want 4", n)
	}
}

func testInvalidAppends(t *testing.T, open Opener) {
	s := mustOpen(t, open)
	ctx := context.Background()
	ok := Event("A", 1)
	dup := Event("B", 2)
	tests := []struct {
		name   string
		stream string
		evs    []eventstore.EventData
	}{
		{"empty stream id", "", []eventstore.EventData{ok}},
		{"control character in stream id", "bad\x00id", []eventstore.EventData{ok}},
		{"overlong stream id", string(make([]byte, eventstore.MaxStreamIDLen+1)), []eventstore.EventData{ok}},
		{"no events", "invalid-1", nil},
		{"nil id", "invalid-1", []eventstore.EventData{{Type: "A", Data: []byte(`{}`)}}},
		{"empty type", "invalid-1", []eventstore.EventData{{ID: uuid.New(), Data: []byte(`{}`)}}},
		{"data not JSON", "invalid-1", []eventstore.EventData{{ID: uuid.New(), Type: "A", Data: []byte(`{`)}}},
		{"same id twice", "invalid-1", []eventstore.EventData{dup, dup}},
		{"oversized data", "invalid-1", []eventstore.EventData{{ID: uuid.New(), Type: "A", Data: []byte(`"` + string(make([]byte, eventstore.MaxEventSize)) + `"`)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Append(ctx, tc.stream, eventstore.NoStream(), tc.evs...)
			if !errors.Is(err, eventstore.ErrInvalidEvent) {
				t.Fatalf("err = %v, want ErrInvalidEvent", err)
			}
		})
	}
	if h, _ := s.Head(ctx); h != eventstore.Start {
		t.Fatalf("head = %+v after refused appends, want start", h)
	}
}

func testMetadataRoundTrip(t *testing.T, open Opener) {
	s := mustOpen(t, open)
	at := time.Date(2026, 11, 22, 10, 30, 0, 123_000_000, time.UTC)
	ev := Event("ContractCreated", map[string]any{"objective": "ship", "n": 1.5, "nested": []any{"x", nil}})
	ev.Metadata = eventstore.Metadata{
		Tenant: "tenant-1", Actor: "key:abc", RequestID: "req-1", CausationID: "cause-1",
		SchemaVersion: 3, RecordedAt: at, PrevHash: "00ff", Hash: "ff00",
	}
	plain := Event("NoMeta", nil)
	plain.Data = nil
	mustAppend(t, s, "meta-1", eventstore.NoStream(), ev, plain)
	got := readStream(t, s, "meta-1")
	if len(got) != 2 {
		t.Fatalf("read %d events, want 2", len(got))
	}
	g := got[0]
	if g.ID != ev.ID || g.Type != ev.Type || g.StreamID != "meta-1" || g.Revision != 0 {
		t.Fatalf("identity = %s %s %s %d", g.ID, g.Type, g.StreamID, g.Revision)
	}
	if !jsonEqual(g.Data, ev.Data) {
		t.Fatalf("data = %s, want %s", g.Data, ev.Data)
	}
	if !g.Metadata.RecordedAt.Equal(at) {
		t.Fatalf("recordedAt = %v, want %v", g.Metadata.RecordedAt, at)
	}
	g.Metadata.RecordedAt = at
	if g.Metadata != ev.Metadata {
		t.Fatalf("metadata = %+v, want %+v", g.Metadata, ev.Metadata)
	}
	if got[1].Metadata.RecordedAt.IsZero() {
		t.Fatal("store did not stamp recordedAt on an event without one")
	}
	if len(got[1].Data) != 0 {
		t.Fatalf("empty data read back as %q", got[1].Data)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func testOrdering(t *testing.T, open Opener) {
	s := mustOpen(t, open)
	var want []uuid.UUID
	streams := []string{"order-a", "order-b", "order-c"}
	revs := map[string]uint64{}
	for i := 0; i < 30; i++ {
		st := streams[i%3]
		exp := eventstore.NoStream()
		if r, ok := revs[st]; ok {
			exp = eventstore.Revision(r)
		}
		ev := Event("E", i)
		res := mustAppend(t, s, st, exp, ev)
		revs[st] = res.NextRevision
		want = append(want, ev.ID)
	}
	all := readAll(t, s, eventstore.Start)
	if len(all) != len(want) {
		t.Fatalf("global feed has %d events, want %d", len(all), len(want))
	}
	for i, ev := range all {
		if ev.ID != want[i] {
			t.Fatalf("global feed[%d] = %s, want %s", i, ev.ID, want[i])
		}
		if i > 0 && !all[i-1].Position.Less(ev.Position) {
			t.Fatalf("positions not increasing at %d: %+v then %+v", i, all[i-1].Position, ev.Position)
		}
	}
	for _, st := range streams {
		for i, ev := range readStream(t, s, st) {
			if ev.Revision != uint64(i) {
				t.Fatalf("%s[%d] has revision %d", st, i, ev.Revision)
			}
		}
	}
	if h, _ := s.Head(context.Background()); h != all[len(all)-1].Position {
		t.Fatalf("head = %+v, want the last event's position %+v", h, all[len(all)-1].Position)
	}
}

func testPaging(t *testing.T, open Opener) {
	s := mustOpen(t, open)
	ctx := context.Background()
	evs := make([]eventstore.EventData, 25)
	for i := range evs {
		evs[i] = Event("E", i)
	}
	mustAppend(t, s, "paging-1", eventstore.NoStream(), evs...)
	var sizes []int
	for from := uint64(0); ; {
		page, err := s.ReadStream(ctx, "paging-1", from, 10)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(page))
		if len(page) == 0 {
			break
		}
		from = page[len(page)-1].Revision + 1
	}
	if fmt.Sprint(sizes) != "[10 10 5 0]" {
		t.Fatalf("stream page sizes = %v, want [10 10 5 0]", sizes)
	}
	mid, err := s.ReadStream(ctx, "paging-1", 17, 3)
	if err != nil || len(mid) != 3 || mid[0].Revision != 17 || mid[0].ID != evs[17].ID {
		t.Fatalf("read from revision 17 = %d events (%v)", len(mid), err)
	}
	sizes = nil
	for after := eventstore.Start; ; {
		page, err := s.ReadAll(ctx, after, 7)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(page))
		if len(page) == 0 {
			break
		}
		after = page[len(page)-1].Position
	}
	if fmt.Sprint(sizes) != "[7 7 7 4 0]" {
		t.Fatalf("global page sizes = %v, want [7 7 7 4 0]", sizes)
	}
}

func testLongStream(t *testing.T, open Opener) {
	s := mustOpen(t, open)
	ctx := context.Background()
	var ids []uuid.UUID
	exp := eventstore.NoStream()
	// Appends of awkward sizes, interleaved with another stream, so that
	// any internal grouping of revisions is crossed in every way.
	for i, n := range []int{1, 31, 32, 33, 1, 100, 7, 64, 2, 229} {
		evs := make([]eventstore.EventData, n)
		for j := range evs {
			evs[j] = Event("L", len(ids)+j)
			ids = append(ids, evs[j].ID)
		}
		res := mustAppend(t, s, "long-1", exp, evs...)
		exp = eventstore.Revision(res.NextRevision)
		other := eventstore.NoStream()
		if i > 0 {
			other = eventstore.Revision(uint64(i - 1))
		}
		mustAppend(t, s, "long-2", other, Event("O", i))
	}
	if got := readStream(t, s, "long-1"); len(got) != len(ids) {
		t.Fatalf("read %d events, want %d", len(got), len(ids))
	}
	for _, from := range []uint64{0, 1, 30, 31, 32, 33, 63, 64, 65, 200, 499, 500} {
		for _, limit := range []int{1, 5, 32, 33, 1000} {
			got, err := s.ReadStream(ctx, "long-1", from, limit)
			if err != nil {
				t.Fatalf("from %d limit %d: %v", from, limit, err)
			}
			want := max(0, min(limit, len(ids)-int(from)))
			if len(got) != want {
				t.Fatalf("from %d limit %d: %d events, want %d", from, limit, len(got), want)
			}
			for i, ev := range got {
				if ev.Revision != from+uint64(i) || ev.ID != ids[from+uint64(i)] {
					t.Fatalf("from %d limit %d: event %d is revision %d %s", from, limit, i, ev.Revision, ev.ID)
				}
			}
		}
	}
	// A retry of an append that spans several groups is still idempotent.
	res, err := s.Append(ctx, "long-1", eventstore.Revision(32), eventstoreData(t, s, "long-1", 33, 100)...)
	if err != nil || res.NextRevision != 132 {
		t.Fatalf("retry across groups = %+v, %v; want revision 132", res, err)
	}
}

// eventstoreData returns the stored events of stream from revision from as
// appendable data, for retry tests.
func eventstoreData(t *testing.T, s eventstore.Store, stream string, from uint64, n int) []eventstore.EventData {
	t.Helper()
	evs, err := s.ReadStream(context.Background(), stream, from, n)
	if err != nil || len(evs) != n {
		t.Fatalf("read back %d of %d: %v", len(evs), n, err)
	}
	out := make([]eventstore.EventData, n)
	for i := range evs {
		out[i] = evs[i].EventData
	}
	return out
}

func testMissingStream(t *testing.T, open Opener) {
	s := mustOpen(t, open)
	evs, err := s.ReadStream(context.Background(), "missing-1", 0, 10)
	if err != nil || len(evs) != 0 {
		t.Fatalf("missing stream read = %d events, %v; want empty, nil", len(evs), err)
	}
	// A stream whose id is a prefix of another must not see the other's events.
	mustAppend(t, s, "prefix-10", eventstore.NoStream(), Event("A", 1))
	if evs, _ := s.ReadStream(context.Background(), "prefix-1", 0, 10); len(evs) != 0 {
		t.Fatalf("prefix-1 read %d events of prefix-10", len(evs))
	}
}

func writeConcurrently(t *testing.T, s eventstore.Store, prefix string, w, n int) []uuid.UUID {
	t.Helper()
	ids, err := write(s, prefix, w, n)
	if err != nil {
		t.Fatalf("writer: %v", err)
	}
	return ids
}

// write appends n events on each of w streams from w goroutines and returns
// every id it appended. It is safe to call from any goroutine.
func write(s eventstore.Store, prefix string, w, n int) ([]uuid.UUID, error) {
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		ids []uuid.UUID
	)
	errs := make(chan error, w)
	for g := 0; g < w; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			stream := fmt.Sprintf("%s-%d", prefix, g)
			exp := eventstore.NoStream()
			for i := 0; i < n; i++ {
				ev := Event("W", i)
				res, err := s.Append(context.Background(), stream, exp, ev)
				if err != nil {
					errs <- err
					return
				}
				exp = eventstore.Revision(res.NextRevision)
				mu.Lock()
				ids = append(ids, ev.ID)
				mu.Unlock()
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	return ids, <-errs
}

func testCatchUpWhileWriting(t *testing.T, open Opener) {
	s := mustOpen(t, open)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	writeConcurrently(t, s, "pre", 4, 25)
	all := readAll(t, s, eventstore.Start)
	checkpoint := all[len(all)/2].Position
	wantBefore := all[len(all)/2+1:]

	sub, err := s.SubscribeAll(ctx, checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var (
		during   []uuid.UUID
		writeErr error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		during, writeErr = write(s, "live", 8, 50)
	}()
	want := len(wantBefore) + 8*50
	got := make([]eventstore.RecordedEvent, 0, want)
	for i := 0; len(got) < want; i++ {
		// Alternate single and batched receives: both must see every event.
		if i%2 == 0 {
			ev, err := sub.Recv()
			if err != nil {
				t.Fatalf("recv after %d of %d: %v", len(got), want, err)
			}
			got = append(got, ev)
			continue
		}
		evs, err := sub.RecvBatch(7)
		if err != nil || len(evs) == 0 || len(evs) > 7 {
			t.Fatalf("recv batch after %d of %d: %d events, %v", len(got), want, len(evs), err)
		}
		got = append(got, evs...)
	}
	<-done
	if writeErr != nil {
		t.Fatalf("writer: %v", writeErr)
	}
	seen := map[uuid.UUID]bool{}
	for i, ev := range got {
		if seen[ev.ID] {
			t.Fatalf("event %s delivered twice", ev.ID)
		}
		seen[ev.ID] = true
		if !checkpoint.Less(ev.Position) {
			t.Fatalf("event at %+v is not after the checkpoint %+v", ev.Position, checkpoint)
		}
		if i > 0 && !got[i-1].Position.Less(ev.Position) {
			t.Fatalf("subscription out of order at %d", i)
		}
	}
	for _, ev := range wantBefore {
		if !seen[ev.ID] {
			t.Fatalf("catch-up skipped %s at %+v", ev.ID, ev.Position)
		}
	}
	for _, id := range during {
		if !seen[id] {
			t.Fatalf("live phase skipped %s", id)
		}
	}
}

func testResumeFromCheckpoint(t *testing.T, open Opener) {
	s := mustOpen(t, open)
	ctx := context.Background()
	done := make(chan []uuid.UUID, 1)
	errc := make(chan error, 1)
	go func() {
		ids, err := write(s, "resume", 16, 40)
		errc <- err
		done <- ids
	}()

	// A projection that reads a small page, "crashes", and resumes from its
	// checkpoint, over and over while the writers run.
	seen := map[uuid.UUID]int{}
	checkpoint := eventstore.Start
	var written []uuid.UUID
	for finished := false; ; {
		page, err := s.ReadAll(ctx, checkpoint, 13)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range page {
			seen[ev.ID]++
			checkpoint = ev.Position
		}
		if finished && len(page) == 0 {
			break
		}
		if !finished {
			select {
			case written = <-done:
				finished = true
			default:
			}
		}
	}
	if err := <-errc; err != nil {
		t.Fatalf("writer: %v", err)
	}
	if len(seen) != len(written) {
		t.Fatalf("resuming reader saw %d distinct events, writers wrote %d", len(seen), len(written))
	}
	for _, id := range written {
		if seen[id] != 1 {
			t.Fatalf("event %s seen %d times", id, seen[id])
		}
	}
}

func testSubscriptionLive(t *testing.T, open Opener) {
	s := mustOpen(t, open)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mustAppend(t, s, "live-1", eventstore.NoStream(), Event("A", 1))
	sub, err := s.SubscribeAll(ctx, eventstore.Start)
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := sub.Recv(); err != nil || ev.Type != "A" {
		t.Fatalf("catch-up recv = %v, %v", ev.Type, err)
	}
	got := make(chan eventstore.RecordedEvent, 1)
	go func() {
		ev, err := sub.Recv()
		if err == nil {
			got <- ev
		}
		close(got)
	}()
	mustAppend(t, s, "live-1", eventstore.Revision(0), Event("B", 2))
	select {
	case ev := <-got:
		if ev.Type != "B" {
			t.Fatalf("live recv = %s, want B", ev.Type)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("live event never arrived")
	}

	// Cancelling the context ends a waiting Recv with the context's error.
	errc := make(chan error, 1)
	go func() { _, err := sub.Recv(); errc <- err }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) && !errors.Is(err, eventstore.ErrSubscriptionClosed) {
		t.Fatalf("recv after cancel = %v, want context.Canceled", err)
	}

	// Close ends a waiting Recv too.
	sub2, err := s.SubscribeAll(context.Background(), eventstore.Position{Commit: ^uint64(0) >> 1, Prepare: ^uint64(0) >> 1})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, err := sub2.Recv(); errc <- err }()
	sub2.Close()
	if err := <-errc; !errors.Is(err, eventstore.ErrSubscriptionClosed) && !errors.Is(err, context.Canceled) {
		t.Fatalf("recv after close = %v, want ErrSubscriptionClosed", err)
	}
	if _, err := sub2.Recv(); !errors.Is(err, eventstore.ErrSubscriptionClosed) {
		t.Fatalf("recv on a closed subscription = %v, want ErrSubscriptionClosed", err)
	}
}

func testSlowSubscriber(t *testing.T, open Opener) {
	s := mustOpen(t, open)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub, err := s.SubscribeAll(ctx, eventstore.Start)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// Nobody calls Recv while 2,000 events are written: writers must not wait
	// for the subscriber, and it must still get every event afterwards.
	ids := writeConcurrently(t, s, "slow", 4, 500)
	for i := range ids {
		if _, err := sub.Recv(); err != nil {
			t.Fatalf("recv %d: %v", i, err)
		}
	}
}

func testHundredRacers(t *testing.T, open Opener) {
	s := mustOpen(t, open)
	mustAppend(t, s, "race-1", eventstore.NoStream(), Event("Created", 0))
	const racers = 100
	var (
		wg        sync.WaitGroup
		start     = make(chan struct{})
		mu        sync.Mutex
		wins      int
		conflicts int
		other     []error
	)
	for i := 0; i < racers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			_, err := s.Append(context.Background(), "race-1", eventstore.Revision(0), Event("Raced", i))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, eventstore.ErrConflict):
				conflicts++
			default:
				other = append(other, err)
			}
		}(i)
	}
	close(start)
	wg.Wait()
	if wins != 1 || conflicts != racers-1 || len(other) > 0 {
		t.Fatalf("wins = %d, conflicts = %d, other errors = %v; want 1 and %d", wins, conflicts, other, racers-1)
	}
	if n := len(readStream(t, s, "race-1")); n != 2 {
		t.Fatalf("stream holds %d events, want 2", n)
	}
}

func testDistinctStreams(t *testing.T, open Opener) {
	s := mustOpen(t, open)
	const writers, each = 64, 20
	ids := writeConcurrently(t, s, "distinct", writers, each)
	if len(ids) != writers*each {
		t.Fatalf("appended %d, want %d", len(ids), writers*each)
	}
	for g := 0; g < writers; g++ {
		evs := readStream(t, s, fmt.Sprintf("distinct-%d", g))
		if len(evs) != each {
			t.Fatalf("stream %d holds %d events, want %d", g, len(evs), each)
		}
		for i, ev := range evs {
			if ev.Revision != uint64(i) {
				t.Fatalf("stream %d event %d has revision %d", g, i, ev.Revision)
			}
		}
	}
	all := readAll(t, s, eventstore.Start)
	if len(all) != writers*each {
		t.Fatalf("global feed holds %d events, want %d", len(all), writers*each)
	}
	got := make([]string, len(all))
	want := make([]string, len(ids))
	for i := range all {
		got[i] = all[i].ID.String()
		want[i] = ids[i].String()
		if i > 0 && !all[i-1].Position.Less(all[i].Position) {
			t.Fatalf("global feed out of order at %d", i)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("global feed and appended ids differ at %d", i)
		}
	}
}

func testReopen(t *testing.T, open Opener) {
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	writeConcurrently(t, s, "reopen", 8, 30)
	before := readAll(t, s, eventstore.Start)
	head, _ := s.Head(context.Background())
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := s.Append(context.Background(), "reopen-x", eventstore.NoStream(), Event("A", 1)); !errors.Is(err, eventstore.ErrClosed) {
		t.Fatalf("append after close = %v, want ErrClosed", err)
	}
	s2 := mustOpen(t, open)
	after := readAll(t, s2, eventstore.Start)
	if len(after) != len(before) {
		t.Fatalf("after reopen %d events, before %d", len(after), len(before))
	}
	for i := range before {
		b, a := before[i], after[i]
		if a.ID != b.ID || a.Position != b.Position || a.StreamID != b.StreamID || a.Revision != b.Revision ||
			a.Type != b.Type || string(a.Data) != string(b.Data) || !a.Metadata.RecordedAt.Equal(b.Metadata.RecordedAt) {
			t.Fatalf("event %d differs after reopen: %+v vs %+v", i, a, b)
		}
	}
	if h, _ := s2.Head(context.Background()); h != head {
		t.Fatalf("head after reopen = %+v, want %+v", h, head)
	}
	// Writing continues where it stopped.
	res := mustAppend(t, s2, "reopen-0", eventstore.Revision(29), Event("More", 1))
	if res.NextRevision != 30 || !head.Less(res.Position) {
		t.Fatalf("append after reopen = %+v", res)
	}
}
