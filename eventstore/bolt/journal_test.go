package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/eventstore"
)

// record makes the stored record of one event.
func record(t testing.TB, stream string, rev, pos uint64) []byte {
	t.Helper()
	ev := eventstore.RecordedEvent{StreamID: stream, Revision: rev, Position: eventstore.Position{Commit: pos, Prepare: pos},
		EventData: eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "Tick", Data: []byte(`{"n":1}`)}}
	return encodeRecord(nil, &ev)
}

func frames(recs ...[]byte) []byte {
	var b frameBuilder
	b.reset()
	for _, r := range recs {
		b.add(r)
	}
	return b.bytes()
}

func TestFramesReadBack(t *testing.T) {
	a, b, c := record(t, "s", 0, 1), record(t, "s", 1, 2), record(t, "t", 0, 3)
	data := append(frames(a, b), frames(c)...)
	data = append(data, make([]byte, 64)...) // the zeros after the run
	evs, err := journalEvents(data, 0)
	if err != nil || len(evs) != 3 {
		t.Fatalf("read %d events, %v", len(evs), err)
	}
	for i, want := range [][]byte{a, b, c} {
		if !bytes.Equal(evs[i].rec, want) || evs[i].pos != uint64(i+1) {
			t.Fatalf("event %d: position %d, record differs: %v", i, evs[i].pos, !bytes.Equal(evs[i].rec, want))
		}
	}
	if evs[2].stream != "t" || evs[1].rev != 1 {
		t.Fatalf("stream/revision not read: %+v", evs)
	}
	// Events the file holds already are skipped.
	if evs, err := journalEvents(data, 2); err != nil || len(evs) != 1 || evs[0].pos != 3 {
		t.Fatalf("after 2: %d events, %v", len(evs), err)
	}
	// A torn last frame ends the run: its append was never acknowledged.
	torn := append(frames(a, b), frames(c)...)
	torn[len(frames(a, b))+frameHeader+5] ^= 0xff
	if evs, err := journalEvents(torn, 0); err != nil || len(evs) != 2 {
		t.Fatalf("torn: %d events, %v", len(evs), err)
	}
	// A frame from before the journal started again (positions that do
	// not continue) ends the run too.
	stale := append(frames(record(t, "s", 5, 9)), frames(record(t, "s", 1, 2))...)
	if evs, err := journalEvents(stale, 8); err != nil || len(evs) != 1 || evs[0].pos != 9 {
		t.Fatalf("stale: %d events, %v", len(evs), err)
	}
}

// TestJournalGapIsCorruption: the journal's first frame is the first
// written after everything before it was in the file, so a run that starts
// past the file's newest event means acknowledged events are missing.
func TestJournalGapIsCorruption(t *testing.T) {
	if _, err := journalEvents(frames(record(t, "s", 0, 3)), 1); err == nil || !strings.Contains(err.Error(), "continues at position 3") {
		t.Fatalf("gap = %v", err)
	}
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(context.Background(), "s", eventstore.NoStream(), eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "Tick"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, JournalFileName), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(frames(record(t, "s", 2, 3)), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Open(dir, Options{}); !errors.Is(err, eventstore.ErrCorrupt) {
		t.Fatalf("open with a gap in the journal = %v, want ErrCorrupt", err)
	}
	// A frame whose checksum holds but whose records do not parse is
	// damage, not a torn write.
	bad := frames(append(record(t, "s", 1, 2)[:5], 0xff))
	if _, err := journalEvents(bad, 1); err == nil {
		t.Fatal("a frame with a bad record read as events")
	}
}

// TestJournalZeroedAtOpen: once its events are in the file, the journal
// holds nothing from before, so no old frame can pass for a continuation
// of the frames this run of the store writes.
func TestJournalZeroedAtOpen(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		s, err := Open(dir, Options{IndexDelay: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		// The first run writes three frames, the second one.
		for k := 0; k < 3-2*i; k++ {
			if _, err := s.Append(context.Background(), fmt.Sprintf("s%d-%d", i, k), eventstore.NoStream(), eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "Tick"}); err != nil {
				t.Fatal(err)
			}
		}
		if i == 0 {
			s.Close()
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, JournalFileName))
		if err != nil {
			t.Fatal(err)
		}
		if _, n, ok := nextFrame(b); !ok || !bytes.Equal(b[n:], make([]byte, len(b)-n)) {
			t.Fatal("the journal holds more than the one frame written since the open")
		}
		s.Close()
	}
}

// TestJournalStartsAgain writes several times the journal's largest size:
// the journal stops growing and starts again at offset 0, and every event
// is there after a reopen.
func TestJournalStartsAgain(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pad := `"` + strings.Repeat("x", 8000) + `"`
	const appends, per = 500, 10 // about 40 MB of records
	exp := eventstore.NoStream()
	for i := 0; i < appends; i++ {
		evs := make([]eventstore.EventData, per)
		for j := range evs {
			evs[j] = eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "Fill", Data: []byte(pad)}
		}
		res, err := s.Append(ctx, "fill", exp, evs...)
		if err != nil {
			t.Fatal(err)
		}
		exp = eventstore.Revision(res.NextRevision)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, JournalFileName))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != journalWrapCap {
		t.Fatalf("journal is %d bytes, want it to stop growing at %d", st.Size(), journalWrapCap)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	for from := uint64(0); ; {
		evs, err := s.ReadStream(ctx, "fill", from, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		n += len(evs)
		from = evs[len(evs)-1].Revision + 1
	}
	if n != appends*per {
		t.Fatalf("read %d events after reopen, want %d", n, appends*per)
	}
	if _, err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// FuzzJournalEvents feeds the journal reader arbitrary files: it never
// panics, and what it returns continues the file's positions.
func FuzzJournalEvents(f *testing.F) {
	f.Add(frames(record(f, "s", 0, 1), record(f, "s", 1, 2)), uint64(0))
	f.Add(append(frames(record(f, "s", 0, 1)), frames(record(f, "t", 0, 2))...), uint64(1))
	f.Add(make([]byte, 32), uint64(0))
	f.Add([]byte{0, 0, 0, 9, 1, 2, 3, 4, 5}, uint64(3))
	f.Fuzz(func(t *testing.T, data []byte, after uint64) {
		evs, err := journalEvents(data, after)
		if err != nil {
			return
		}
		for i, e := range evs {
			if e.pos != after+1+uint64(i) {
				t.Fatalf("event %d at position %d after %d", i, e.pos, after)
			}
			if _, err := decodeRecord(e.rec); err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
		}
	})
}

// TestReplayAfterAFailedSyncFails: a retry of an append whose group is
// still waiting for its fdatasync is answered from that group's events; when
// the fdatasync then fails, the retry must fail too, not succeed with an
// event that never reached the disk.
func TestReplayAfterAFailedSyncFails(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{MaxBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var syncs atomic.Int32
	s.syncJournal = func(*os.File) error {
		syncs.Add(1)
		<-release
		return errors.New("injected fdatasync failure")
	}
	ctx := context.Background()
	ev := eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "Tick"}
	first, retry := make(chan error, 1), make(chan error, 1)
	go func() { _, err := s.Append(ctx, "s", eventstore.NoStream(), ev); first <- err }()
	waitFor(t, func() bool { return syncs.Load() == 1 }) // the first group waits for its fdatasync
	go func() { _, err := s.Append(ctx, "s", eventstore.NoStream(), ev); retry <- err }()
	waitFor(t, func() bool { return s.groupsPlaced.Load() == 2 }) // the retry is answered from pending, behind it
	close(release)
	if err := <-first; !errors.Is(err, eventstore.ErrUnavailable) {
		t.Fatalf("first append = %v, want outcome unknown", err)
	}
	if err := <-retry; err == nil {
		t.Fatal("the retry succeeded although its event's fdatasync failed")
	}
	if evs, err := s.ReadStream(ctx, "s", 0, 0); err != nil || len(evs) != 0 {
		t.Fatalf("read %d events, %v", len(evs), err)
	}
	s.Close()
}

// TestOneFdatasyncCoversTheGroupsWrittenMeanwhile: while an fdatasync
// runs, the writer goes on writing groups, and the next fdatasync covers
// all of them: ten appends made one group each (MaxBatch 1) behind a held
// fdatasync take two fdatasyncs, not eleven. A failure of the second fails
// all ten.
func TestOneFdatasyncCoversTheGroupsWrittenMeanwhile(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(map[bool]string{false: "ok", true: "failing"}[fail], func(t *testing.T) {
			s, err := Open(t.TempDir(), Options{MaxBatch: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			release := make(chan struct{})
			free := sync.OnceFunc(func() { close(release) })
			defer free() // before Close, should the test fail holding it
			var syncs atomic.Int32
			s.syncJournal = func(*os.File) error {
				if syncs.Add(1) == 1 {
					<-release
					return nil
				}
				if fail {
					return errors.New("injected fdatasync failure")
				}
				return nil
			}
			ctx := context.Background()
			held, errs := make(chan error, 1), make(chan error, 10)
			appendOne := func(stream string, to chan<- error) {
				_, err := s.Append(ctx, stream, eventstore.NoStream(), eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "Tick"})
				to <- err
			}
			go appendOne("held", held)
			waitFor(t, func() bool { return syncs.Load() == 1 })
			for i := range 10 {
				go appendOne(fmt.Sprintf("s%d", i), errs)
			}
			waitFor(t, func() bool { return s.groupsPlaced.Load() == 11 })
			free()
			if err := <-held; err != nil {
				t.Fatalf("the held append: %v", err)
			}
			for range 10 {
				if err := <-errs; (err != nil) != fail {
					t.Fatalf("append behind the held fdatasync: %v (failing: %v)", err, fail)
				}
			}
			if n := syncs.Load(); n != 2 {
				t.Fatalf("%d fdatasyncs, want 2", n)
			}
		})
	}
}

// TestMaxSizeReopens: with a size cap, the journal never holds what the
// data file cannot take, so the store opens again with the same cap and
// holds every acknowledged append.
func TestMaxSizeReopens(t *testing.T) {
	for _, max := range []int{1 << 20, 3 << 19} { // a power of two, and 1.5 MiB
		t.Run(fmt.Sprint(max), func(t *testing.T) { maxSizeReopens(t, max) })
	}
}

func maxSizeReopens(t *testing.T, max int) {
	dir := t.TempDir()
	opts := Options{MaxSize: max}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	acked := FillToMaxSize(t, s, "max")
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	s, err = Open(dir, opts)
	if err != nil {
		t.Fatalf("reopen with the same cap: %v", err)
	}
	defer s.Close()
	evs, err := s.ReadStream(context.Background(), "max", 0, 0)
	if err != nil || len(evs) != acked {
		t.Fatalf("after reopen: %d of %d acknowledged events, %v", len(evs), acked, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
	}
}

// TestJournalStartsAgainUnderLoad: with a small journal, writers append
// while readers scan the feed, so the journal starts again at offset 0
// many times while groups are in flight and the indexer runs. Every append
// is readable as soon as it is acknowledged, the feed stays gapless, and
// after a reopen every acknowledged event is there.
func TestJournalStartsAgainUnderLoad(t *testing.T) {
	defer SmallJournal()()
	dir := t.TempDir()
	s, err := Open(dir, Options{IndexDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const writers, each = 8, 300
	data := []byte(`{"pad":"` + strings.Repeat("x", 500) + `"}`)
	type acked struct {
		stream string
		rev    uint64
		id     uuid.UUID
	}
	var (
		mu   sync.Mutex
		all  []acked
		done atomic.Bool
		wg   sync.WaitGroup
	)
	errc := make(chan error, writers+2)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			stream := fmt.Sprintf("load-%d", w)
			exp := eventstore.NoStream()
			for i := 0; i < each; i++ {
				ev := eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "Tick", Data: data}
				res, err := s.Append(ctx, stream, exp, ev)
				if err != nil {
					errc <- err
					return
				}
				// Read your write, at once.
				got, err := s.ReadStream(ctx, stream, res.NextRevision, 1)
				if err != nil || len(got) != 1 || got[0].ID != ev.ID {
					errc <- fmt.Errorf("%s revision %d not readable right after its append: %d events, %v", stream, res.NextRevision, len(got), err)
					return
				}
				mu.Lock()
				all = append(all, acked{stream, res.NextRevision, ev.ID})
				mu.Unlock()
				exp = eventstore.Revision(res.NextRevision)
			}
		}(w)
	}
	var readers sync.WaitGroup
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for !done.Load() {
				after := eventstore.Start
				for {
					page, err := s.ReadAll(ctx, after, 200)
					if err != nil {
						errc <- err
						return
					}
					if len(page) == 0 {
						break
					}
					for _, ev := range page {
						if ev.Position.Commit != after.Commit+1 {
							errc <- fmt.Errorf("feed jumps from %d to %d", after.Commit, ev.Position.Commit)
							return
						}
						after = ev.Position
					}
				}
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	readers.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, JournalFileName))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > journalWrapCap {
		t.Fatalf("journal grew to %d bytes; it should have started again at %d", st.Size(), journalWrapCap)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, a := range all {
		got, err := s.ReadStream(ctx, a.stream, a.rev, 1)
		if err != nil || len(got) != 1 || got[0].ID != a.id {
			t.Fatalf("after reopen: %s revision %d: %d events, %v", a.stream, a.rev, len(got), err)
		}
	}
	if rep, err := s.Check(ctx); err != nil || rep.Events != writers*each {
		t.Fatalf("check: %d events, %v", rep.Events, err)
	}
	t.Logf("summary: %d appends, up to %d KiB of frames through a %d KiB journal", len(all), len(all)*frameAlign/1024, journalWrapCap/1024)
}

// TestCloseNamesWhyEventsWaitInTheJournal: when the indexer cannot move
// acknowledged events into the bbolt file, Close says which events wait in
// the journal and why; when the store had failed for another reason first
// (a journal fdatasync), it names both.
func TestCloseNamesWhyEventsWaitInTheJournal(t *testing.T) {
	indexFailure := errors.New("injected index failure")
	syncFailure := errors.New("injected fdatasync failure")
	for _, alsoSync := range []bool{false, true} {
		t.Run(map[bool]string{false: "indexer", true: "fdatasync, then indexer"}[alsoSync], func(t *testing.T) {
			s, err := Open(t.TempDir(), Options{IndexDelay: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			s.indexCommit = func(*bbolt.Tx, []pendingEvent) error { return indexFailure }
			ctx := context.Background()
			for i := range 3 {
				if _, err := s.Append(ctx, fmt.Sprintf("s%d", i), eventstore.NoStream(), eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "Tick"}); err != nil {
					t.Fatal(err)
				}
			}
			if alsoSync {
				s.syncJournal = func(*os.File) error { return syncFailure }
				if _, err := s.Append(ctx, "s3", eventstore.NoStream(), eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "Tick"}); !errors.Is(err, eventstore.ErrFailed) {
					t.Fatalf("append with a failing fdatasync: %v", err)
				}
			}
			err = s.Close()
			if err == nil || !strings.Contains(err.Error(), "events 1 to 3 are in the journal only") || !errors.Is(err, indexFailure) {
				t.Fatalf("Close = %v, want events 1 to 3 in the journal only, because of the index failure", err)
			}
			if alsoSync != strings.Contains(err.Error(), syncFailure.Error()) {
				t.Fatalf("Close = %v; the fdatasync failure named: %v, want %v", err, !alsoSync, alsoSync)
			}
		})
	}
}

// TestAcknowledgedOnlyAfterACoveringFdatasync: every acknowledged position
// was in the journal file when an fdatasync that then succeeded began, and
// no append at or after the first position a failed fdatasync was to cover
// is acknowledged. Twelve writers, groups of up to four, a journal that
// starts over every 256 KiB, fdatasyncs of random length, and in every
// other round one fdatasync fails. (The SIGKILL crash tests cannot catch
// an acknowledgement that came too early: the page cache outlives a killed
// process.)
func TestAcknowledgedOnlyAfterACoveringFdatasync(t *testing.T) {
	defer SmallJournal()()
	for round := 0; round < 6; round++ {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir, Options{IndexDelay: time.Millisecond, MaxBatch: 4})
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu        sync.Mutex
				durable   = map[uint64]bool{} // positions present at the start of a successful sync
				nsync     atomic.Int64
				failAt    = int64(20 + rand.IntN(200))
				failed    atomic.Bool
				failFloor atomic.Uint64
			)
			failFloor.Store(1 << 62)
			if round%2 == 0 {
				failAt = 1 << 60
			}
			s.syncJournal = func(f *os.File) error {
				data, err := os.ReadFile(f.Name()) // the frames written before this fdatasync
				if err != nil {
					return err
				}
				var seen []uint64
				for b := data; len(b) > 0; {
					recs, n, ok := nextFrame(b)
					if !ok {
						if len(b) <= frameAlign {
							break
						}
						b = b[frameAlign:]
						continue
					}
					for _, r := range recs {
						ev, err := decodeRecord(r)
						if err == nil {
							seen = append(seen, ev.Position.Commit)
						}
					}
					b = b[n:]
				}
				time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
				if nsync.Add(1) == failAt {
					mu.Lock()
					floor := uint64(1 << 62)
					for _, p := range seen {
						if !durable[p] && p < floor {
							floor = p
						}
					}
					failFloor.Store(floor)
					mu.Unlock()
					failed.Store(true)
					return errors.New("injected")
				}
				if err := fdatasync(f); err != nil {
					return err
				}
				mu.Lock()
				for _, p := range seen {
					durable[p] = true
				}
				mu.Unlock()
				return nil
			}
			ctx := context.Background()
			var wg sync.WaitGroup
			var maxAck atomic.Uint64
			errc := make(chan error, 100)
			for w := 0; w < 12; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					exp := eventstore.NoStream()
					for i := 0; i < 150; i++ {
						ev := eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "T", Data: []byte(`{"x":1}`)}
						res, err := s.Append(ctx, fmt.Sprintf("w%d", w), exp, ev)
						if err != nil {
							if !errors.Is(err, eventstore.ErrFailed) {
								errc <- err
							}
							return
						}
						p := res.Position.Commit
						mu.Lock()
						ok := durable[p]
						mu.Unlock()
						if p >= failFloor.Load() {
							errc <- fmt.Errorf("position %d acknowledged at or after the failed fdatasync's first new position %d", p, failFloor.Load())
							return
						}
						if !ok {
							errc <- fmt.Errorf("position %d acknowledged but not in the journal at the start of a successful fdatasync", p)
							return
						}
						for {
							m := maxAck.Load()
							if p <= m || maxAck.CompareAndSwap(m, p) {
								break
							}
						}
						exp = eventstore.Revision(res.NextRevision)
					}
				}(w)
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Fatal(err)
			}
			s.Close()
			t.Logf("syncs %d, failed %v, max acked %d", nsync.Load(), failed.Load(), maxAck.Load())
		})
	}
}

// TestDiskFullPassesWithoutAReopen: while the bbolt file cannot grow (the
// disk full), appends go on into the journal's room; the one that needs
// the indexer is refused with nothing written (ErrFull, not ErrFailed).
// Once space is freed the store takes appends again by itself, and after a
// reopen every acknowledged event is there and no refused one.
func TestDiskFullPassesWithoutAReopen(t *testing.T) {
	defer SmallJournal()()
	defer func(d time.Duration) { fullRetry = d }(fullRetry)
	fullRetry = 10 * time.Millisecond
	dir := t.TempDir()
	s, err := Open(dir, Options{IndexDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var full atomic.Bool
	full.Store(true)
	s.indexCommit = func(tx *bbolt.Tx, evs []pendingEvent) error {
		if full.Load() {
			return &os.PathError{Op: "write", Path: s.path, Err: syscall.ENOSPC}
		}
		return s.indexTx(tx, evs)
	}
	ctx := context.Background()
	pad := []byte(`"` + strings.Repeat("x", 4000) + `"`)
	var acked, refused []uuid.UUID
	rev := eventstore.NoStream()
	for len(refused) < 3 {
		id := uuid.Must(uuid.NewV7())
		res, err := s.Append(ctx, "full", rev, eventstore.EventData{ID: id, Type: "Fill", Data: pad})
		switch {
		case err == nil:
			acked = append(acked, id)
			rev = eventstore.Revision(res.NextRevision)
		case errors.Is(err, eventstore.ErrFull) && !errors.Is(err, eventstore.ErrFailed) && !eventstore.MayHaveCommitted(err):
			refused = append(refused, id)
		default:
			t.Fatalf("append %d with the disk full: %v", len(acked), err)
		}
		if len(acked) > 10000 {
			t.Fatal("the journal took appends without end while nothing could be indexed")
		}
	}
	if s.Failed() != nil || !errors.Is(s.Full(), syscall.ENOSPC) {
		t.Fatalf("Failed = %v, Full = %v; want a full disk, not a failed store", s.Failed(), s.Full())
	}
	full.Store(false) // space freed
	waitFor(t, func() bool { return s.Full() == nil })
	for range 100 {
		id := uuid.Must(uuid.NewV7())
		res, err := s.Append(ctx, "full", rev, eventstore.EventData{ID: id, Type: "Fill", Data: pad})
		if err != nil {
			t.Fatalf("append once space is freed: %v", err)
		}
		acked = append(acked, id)
		rev = eventstore.Revision(res.NextRevision)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.ReadStream(ctx, "full", 0, len(acked)+10)
	if err != nil || len(evs) != len(acked) {
		t.Fatalf("after reopen: %d events of %d acknowledged, %v", len(evs), len(acked), err)
	}
	for i, ev := range evs {
		if ev.ID != acked[i] {
			t.Fatalf("revision %d is %s, want %s", i, ev.ID, acked[i])
		}
	}
	if rep, err := s.Check(ctx); err != nil || rep.Events != uint64(len(acked)) {
		t.Fatalf("check: %d events, %v", rep.Events, err)
	}
	t.Logf("summary: %d acknowledged while the disk was full, %d refused, then 100 more once it was freed", len(acked)-100, len(refused))
}

// CheckDir reads a store it may not write, and writes nothing: the
// journal's events the file lacks are checked and counted, not moved in,
// and a journal whose run skips a position is damaged.
func TestCheckDirReadsTheJournalWithoutMovingIt(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 3; k++ {
		exp := eventstore.NoStream()
		if k > 0 {
			exp = eventstore.Revision(uint64(k - 1))
		}
		if _, err := s.Append(context.Background(), "s", exp, eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "Tick"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	jpath := filepath.Join(dir, JournalFileName)
	journal, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	// Two events acknowledged in the journal and not yet in the file, as
	// after a crash or in a snapshot of a running server.
	copy(journal, frames(record(t, "t", 0, 4), record(t, "t", 1, 5)))
	os.WriteFile(jpath, journal, 0o600)
	before := map[string][]byte{}
	for _, name := range []string{FileName, JournalFileName} {
		before[name], _ = os.ReadFile(filepath.Join(dir, name))
		os.Chmod(filepath.Join(dir, name), 0o444)
	}
	os.Chmod(dir, 0o555)
	defer os.Chmod(dir, 0o700)
	rep, err := CheckDir(context.Background(), dir, Options{})
	if err != nil || rep.Events != 3 || rep.Streams != 1 || rep.Journaled != 2 {
		t.Fatalf("CheckDir = %+v, %v", rep, err)
	}
	for name, b := range before {
		if now, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(now, b) {
			t.Errorf("the check changed %s", name)
		}
	}
	os.Chmod(dir, 0o700)
	os.Chmod(jpath, 0o600)
	copy(journal, frames(record(t, "t", 0, 5))) // position 4 missing
	os.WriteFile(jpath, journal, 0o600)
	if _, err := CheckDir(context.Background(), dir, Options{}); !errors.Is(err, eventstore.ErrCorrupt) {
		t.Fatalf("a journal that skips a position: %v", err)
	}
}

// OpenReadOnly reads a store it may not write, journal included, and
// writes nothing: reads see the journal's events the file lacks, as after
// Open, and appends fail.
func TestOpenReadOnlyReadsTheJournalAndWritesNothing(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(context.Background(), "s", eventstore.NoStream(), eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "Tick"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	jpath := filepath.Join(dir, JournalFileName)
	journal, _ := os.ReadFile(jpath)
	copy(journal, frames(record(t, "t", 0, 2), record(t, "t", 1, 3)))
	os.WriteFile(jpath, journal, 0o600)
	before := map[string][]byte{}
	for _, name := range []string{FileName, JournalFileName} {
		before[name], _ = os.ReadFile(filepath.Join(dir, name))
		os.Chmod(filepath.Join(dir, name), 0o444)
	}
	os.Chmod(dir, 0o555)
	defer os.Chmod(dir, 0o700)
	ro, err := OpenReadOnly(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	all, err := ro.ReadAll(context.Background(), eventstore.Start, 10)
	if err != nil || len(all) != 3 {
		t.Fatalf("ReadAll = %d events, %v", len(all), err)
	}
	if evs, err := ro.ReadStream(context.Background(), "t", 0, 10); err != nil || len(evs) != 2 || evs[1].Revision != 1 {
		t.Fatalf("ReadStream of the journal's stream = %v, %v", evs, err)
	}
	if h, _ := ro.Head(context.Background()); h.Commit != 3 {
		t.Fatalf("head %d", h.Commit)
	}
	if _, err := ro.Append(context.Background(), "u", eventstore.NoStream(), eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "Tick"}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("append: %v", err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	for name, b := range before {
		if now, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(now, b) {
			t.Errorf("reading changed %s", name)
		}
	}
}
