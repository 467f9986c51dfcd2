package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/storetest"
)

// fill writes n events over a few streams and returns what the feed holds.
func fill(t *testing.T, dir string, n int) []eventstore.RecordedEvent {
	t.Helper()
	s, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	revs := map[string]uint64{}
	for i := 0; i < n; i += 10 {
		stream := fmt.Sprintf("fill-%d", (i/10)%7)
		exp := eventstore.NoStream()
		if r, ok := revs[stream]; ok {
			exp = eventstore.Revision(r)
		}
		evs := make([]eventstore.EventData, 10)
		for j := range evs {
			evs[j] = storetest.Event("Filled", map[string]any{"i": i + j, "text": strings.Repeat("baton ", 20)})
		}
		res, err := s.Append(ctx, stream, exp, evs...)
		if err != nil {
			t.Fatal(err)
		}
		revs[stream] = res.NextRevision
	}
	all, err := readEverything(s)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// readEverything reads the global feed and every stream; any error stops it.
func readEverything(s *bolt.Store) ([]eventstore.RecordedEvent, error) {
	ctx := context.Background()
	var all []eventstore.RecordedEvent
	streams := map[string]bool{}
	for after := eventstore.Start; ; {
		page, err := s.ReadAll(ctx, after, 1000)
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			break
		}
		for _, ev := range page {
			streams[ev.StreamID] = true
		}
		all = append(all, page...)
		after = page[len(page)-1].Position
	}
	for st := range streams {
		if _, err := s.ReadStream(ctx, st, 0, 100000); err != nil {
			return nil, err
		}
	}
	return all, nil
}

func TestCorruptMetaPagesRefuseToOpen(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 100)
	path := filepath.Join(dir, bolt.FileName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, 2*os.Getpagesize())
	for i := range garbage {
		garbage[i] = byte(i * 31)
	}
	f.WriteAt(garbage, 0)
	f.Close()
	_, err = bolt.Open(dir, bolt.Options{})
	if !errors.Is(err, eventstore.ErrCorrupt) {
		t.Fatalf("open = %v, want ErrCorrupt", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Fatalf("error %q does not name the file", err)
	}
}

func TestTruncatedFileIsReported(t *testing.T) {
	for _, keep := range []float64{0, 0.1, 0.5, 0.9} {
		t.Run(fmt.Sprintf("keep %.0f%%", keep*100), func(t *testing.T) {
			dir := t.TempDir()
			fill(t, dir, 3000)
			used := usedBytes(t, dir)
			path := filepath.Join(dir, bolt.FileName)
			if err := os.Truncate(path, int64(float64(used)*keep)); err != nil {
				t.Fatal(err)
			}
			s, err := bolt.Open(dir, bolt.Options{})
			if err == nil {
				_, err = readEverything(s)
				if err == nil {
					_, err = s.Check(context.Background())
				}
				s.Close()
			}
			if !errors.Is(err, eventstore.ErrCorrupt) {
				t.Fatalf("truncated to %.0f%%: err = %v, want ErrCorrupt", keep*100, err)
			}
		})
	}
}

// usedBytes is the high-water mark of the file's pages: truncating below it
// cuts data, while the tail beyond it is space grown ahead of need.
func usedBytes(t *testing.T, dir string) int64 {
	t.Helper()
	s, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep, err := s.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep.Bytes
}

// TestDamagedPagesNeverReadSilently flips bytes at random places past the
// meta pages. Whatever the damage hits, the store either reports it or reads
// back exactly what was written (the damage hit free space): it never returns
// different events as if nothing happened.
func TestDamagedPagesNeverReadSilently(t *testing.T) {
	clean := t.TempDir()
	want := fill(t, clean, 2000)
	used := int(usedBytes(t, clean))
	orig, err := os.ReadFile(filepath.Join(clean, bolt.FileName))
	if err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()
	seeds := uint64(40)
	if testing.Short() {
		seeds = 10
	}
	var reported, unharmed int
	for seed := uint64(0); seed < seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		damaged := append([]byte(nil), orig...)
		for i := 0; i < 1+rng.IntN(8); i++ {
			off := 2*page + rng.IntN(used-2*page)
			damaged[off] ^= byte(1 + rng.IntN(255))
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, bolt.FileName), damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := openAndRead(dir)
		if err != nil {
			if !errors.Is(err, eventstore.ErrCorrupt) {
				t.Fatalf("seed %d: err = %v, want ErrCorrupt", seed, err)
			}
			reported++
			continue
		}
		if len(got) != len(want) {
			t.Fatalf("seed %d: read %d events without error, wrote %d", seed, len(got), len(want))
		}
		for i := range got {
			if got[i].ID != want[i].ID || string(got[i].Data) != string(want[i].Data) || got[i].Metadata != want[i].Metadata {
				t.Fatalf("seed %d: event %d silently differs", seed, i)
			}
		}
		unharmed++
	}
	t.Logf("summary: %d damaged copies: %d reported as corrupt, %d read back intact", seeds, reported, unharmed)
}

func openAndRead(dir string) ([]eventstore.RecordedEvent, error) {
	s, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	got, err := readEverything(s)
	if err != nil {
		return nil, err
	}
	if _, err := s.Check(context.Background()); err != nil {
		return nil, err
	}
	return got, nil
}

func TestSecondOpenIsLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Another process, as a second `baton serve` would be.
	cmd, out := startChild(t, "open", dir)
	_, rest := readAcks(out)
	cmd.Wait()
	msg := strings.Join(rest, "\n")
	if !strings.Contains(msg, "locked by another process") || !strings.Contains(msg, "another baton") {
		t.Fatalf("second process said %q, want a lock error", msg)
	}
	// And a second Open in this process.
	if _, err := bolt.Open(dir, bolt.Options{}); !errors.Is(err, eventstore.ErrLocked) {
		t.Fatalf("second open = %v, want ErrLocked", err)
	}
}

func TestDataDirectoryWithoutPermission(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "data")
	fill(t, dir, 10)
	if err := os.Chmod(dir, 0o000); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)

	var msg string
	if os.Geteuid() != 0 {
		_, err := bolt.Open(dir, bolt.Options{})
		if err == nil {
			t.Fatal("open of an unreadable data directory succeeded")
		}
		msg = err.Error()
	} else {
		// Root ignores permission bits, so the check runs as nobody in a child.
		bin := filepath.Join(t.TempDir(), "child.test")
		copyExecutable(t, os.Args[0], bin)
		for d := filepath.Dir(bin); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
			os.Chmod(d, 0o755)
		}
		os.Chmod(parent, 0o755)
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=open", childDirEnv+"="+dir)
		asNobody(t, cmd)
		out, err := cmd.CombinedOutput()
		if err != nil && len(out) == 0 {
			t.Skipf("cannot run a child as nobody here: %v", err)
		}
		msg = string(out)
	}
	if !strings.Contains(msg, "permission denied") {
		t.Fatalf("open said %q, want a permission error", msg)
	}
}

func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestFullDiskRefusesAndKeepsAcknowledged fills the store under a file-size
// limit (RLIMIT_FSIZE makes write(2) fail with EFBIG, as a full disk fails
// with ENOSPC). The append that hits it fails clearly, the store refuses
// further writes, and on reopen every acknowledged event is there.
func TestFullDiskRefusesAndKeepsAcknowledged(t *testing.T) {
	skipUnlessUnix(t)
	dir := t.TempDir()
	// The file grows ahead in 16 MiB steps: 20 MiB lets the first step
	// through and stops the second.
	cmd, out := startChild(t, "limited-writer", dir, fmt.Sprintf("%s=%d", childFSize, 20<<20))
	acks, rest := readAcks(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v (%v)", err, rest)
	}
	if len(acks) < 500 {
		t.Fatalf("only %d appends before the limit: %v", len(acks), rest)
	}
	var full, after string
	for _, l := range rest {
		if strings.HasPrefix(l, "full ") {
			full = l
		}
		if strings.HasPrefix(l, "after ") {
			after = l
		}
	}
	if !strings.Contains(full, "file too large") {
		t.Fatalf("the failing append said %q, want the storage error", full)
	}
	if !strings.Contains(after, "refuses writes until reopened") {
		t.Fatalf("the next append said %q, want the store to refuse writes", after)
	}
	verifyAfterCrash(t, dir, acks)
	t.Logf("summary: full disk: %d acknowledged before the limit, all present after reopen; failing append: %s", len(acks), full)
}

func TestMaxSizeActsLikeAFullDisk(t *testing.T) {
	dir := t.TempDir()
	s, err := bolt.Open(dir, bolt.Options{MaxSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	appended := bolt.FillToMaxSize(t, s, "max")
	evs, err := s.ReadStream(context.Background(), "max", 0, 0)
	if err != nil || len(evs) != min(appended, bolt.DefaultPageSize) {
		t.Fatalf("after the limit: read %d of %d, %v", len(evs), appended, err)
	}
}

// A store that refuses writes says why, for /healthz.
func TestFailedSaysWhy(t *testing.T) {
	s, err := bolt.Open(t.TempDir(), bolt.Options{MaxSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Failed(); err != nil {
		t.Fatalf("a new store failed: %v", err)
	}
	bolt.FillToMaxSize(t, s, "max")
	if err := s.Failed(); err == nil || !strings.Contains(err.Error(), "maximum size") {
		t.Fatalf("Failed = %v after the limit", err)
	}
}

// TestDamagedPageInUseRefusedAtOpen damages one page of the file at a
// time: a store whose damage Check would report is refused at open, not
// opened to fail later, in requests, on whichever page the damage sits
// (an index page made a 500 of every append or read that reached it,
// while the server said it was well).
func TestDamagedPageInUseRefusedAtOpen(t *testing.T) {
	clean := t.TempDir()
	s, err := bolt.Open(clean, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ { // many streams: the indexes span pages too
		evs := []eventstore.EventData{storetest.Event("Filled", map[string]any{"i": i}), storetest.Event("Filled", map[string]any{"i": i})}
		if _, err := s.Append(context.Background(), fmt.Sprintf("handoff-%d", i), eventstore.NoStream(), evs...); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	used := int(usedBytes(t, clean))
	orig, err := os.ReadFile(filepath.Join(clean, bolt.FileName))
	if err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()
	rng := rand.New(rand.NewPCG(7, 7))
	var refused int
	for p := 2; p < used/page; p++ {
		damaged := append([]byte(nil), orig...)
		for i := p * page; i < (p+1)*page; i++ {
			damaged[i] = byte(rng.Uint32())
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, bolt.FileName), damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := bolt.Open(dir, bolt.Options{})
		if err != nil {
			if !errors.Is(err, eventstore.ErrCorrupt) {
				t.Fatalf("page %d: err = %v, want ErrCorrupt", p, err)
			}
			refused++
			continue
		}
		_, err = s.Check(context.Background())
		s.Close()
		if err != nil {
			t.Errorf("page %d: opened, but Check reports %v", p, err)
		}
	}
	t.Logf("%d of %d pages refused at open", refused, used/page-2)
}

// A start on a full disk that fails while it creates the store leaves the
// data file empty, or bbolt's first pages cut short, and no journal (made
// after the file). No event was ever in it: the next open makes the store
// again. It refused it as damaged ("is empty (a crash before the first
// commit, or a truncated copy)"), with the advice to restore a backup of
// a store that had never held anything, and baton serve never started
// again on that data directory. A file cut short after a commit, or one
// beside a journal, is still refused.
func TestAFileAFailedCreationLeftIsMadeAgain(t *testing.T) {
	fresh := t.TempDir() // bbolt's first pages, as a new store's creation writes them
	db, err := bbolt.Open(filepath.Join(fresh, bolt.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	first, err := os.ReadFile(filepath.Join(fresh, bolt.FileName))
	if err != nil || len(first) < 4*os.Getpagesize() {
		t.Fatalf("a new bbolt file: %d bytes, %v", len(first), err)
	}
	for _, keep := range []int{0, 2 * os.Getpagesize()} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, bolt.FileName), first[:keep], 0o600)
		if rep, err := bolt.CheckDir(context.Background(), dir, bolt.Options{}); err != nil || rep.Events != 0 {
			t.Fatalf("check of %d bytes left by a failed creation: %+v, %v", keep, rep, err)
		}
		s, err := bolt.Open(dir, bolt.Options{})
		if err != nil {
			t.Fatalf("%d bytes left by a failed creation: %v", keep, err)
		}
		if _, err := s.Append(context.Background(), "s", eventstore.NoStream(), eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "Tick"}); err != nil {
			t.Fatal(err)
		}
		s.Close()
		s, err = bolt.Open(dir, bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if evs, err := readEverything(s); err != nil || len(evs) != 1 {
			t.Fatalf("after the store was made again: %d events, %v", len(evs), err)
		}
		s.Close()
	}
	// Beside a journal: a store that took events, cut short.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, bolt.FileName), nil, 0o600)
	os.WriteFile(filepath.Join(dir, bolt.JournalFileName), make([]byte, 1<<20), 0o600)
	if _, err := bolt.Open(dir, bolt.Options{}); !errors.Is(err, eventstore.ErrCorrupt) {
		t.Fatalf("an empty file beside a journal: %v", err)
	}
	// Cut short after commits (its meta pages name a later transaction).
	dir = t.TempDir()
	fill(t, dir, 10)
	os.Remove(filepath.Join(dir, bolt.JournalFileName))
	if err := os.Truncate(filepath.Join(dir, bolt.FileName), int64(2*os.Getpagesize())); err != nil {
		t.Fatal(err)
	}
	if _, err := bolt.Open(dir, bolt.Options{}); !errors.Is(err, eventstore.ErrCorrupt) {
		t.Fatalf("a committed file cut short: %v", err)
	}
}
