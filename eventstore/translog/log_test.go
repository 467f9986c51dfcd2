package translog_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	bbolt "go.etcd.io/bbolt"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/translog"
)

func openStore(t *testing.T) eventstore.Store {
	t.Helper()
	s, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// appendEvents appends n events, round robin over handoffs h0..h(k-1),
// and one event of another stream every 10.
func appendEvents(t *testing.T, s eventstore.Store, k, n int) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("h%d", i%k)
		rev, _ := s.ReadStream(ctx, domain.StreamID(id), 0, 100000)
		exp := eventstore.NoStream()
		if len(rev) > 0 {
			exp = eventstore.Revision(rev[len(rev)-1].Revision)
		}
		ev := eventstore.NewEvent("Noted", json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), eventstore.Metadata{Actor: "a", RecordedAt: time.Unix(int64(i), 0)})
		if _, err := s.Append(ctx, domain.StreamID(id), exp, ev); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			if _, err := s.Append(ctx, "other-"+uuid.NewString(), eventstore.NoStream(), eventstore.NewEvent("X", json.RawMessage(`{}`), eventstore.Metadata{})); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// leaves reads the store's handoff events as the log's entries,
// independently of the log's file.
func leaves(t *testing.T, s eventstore.Store) [][]byte {
	var out [][]byte
	for page, err := range eventstore.FeedPages(context.Background(), s, 1000) {
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range page {
			if _, e, ok := translog.Leaf(ev); ok {
				out = append(out, e)
			}
		}
	}
	return out
}

// memoryRoot computes the RFC 6962 root of entries in memory.
func memoryRoot(t *testing.T, entries [][]byte) tlog.Hash {
	var stored []tlog.Hash
	r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = stored[x]
		}
		return out, nil
	})
	for i, e := range entries {
		hs, err := tlog.StoredHashes(int64(i), e, r)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, hs...)
	}
	h, err := tlog.TreeHash(int64(len(entries)), r)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func openLog(t *testing.T, s eventstore.Store, opts translog.Options) *translog.Log {
	t.Helper()
	l, err := translog.Open(filepath.Join(t.TempDir(), translog.FileName), s, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestLogBuildsTilesAndRebuildsToTheSameRoot(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, 3, 300)
	l := openLog(t, s, translog.Options{})
	if err := l.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries := leaves(t, s)
	if l.Size() != 300 || len(entries) != 300 {
		t.Fatalf("size %d, %d entries; want 300", l.Size(), len(entries))
	}
	root, err := l.Root(300)
	if err != nil || root != memoryRoot(t, entries) {
		t.Fatalf("root %s (%v), want %s", root, err, memoryRoot(t, entries))
	}
	// The first level-0 tile is the first 256 leaf hashes; the partial
	// one the next 44.
	full, err := l.Tile(translog.TilePath{L: 0, N: 0, W: 256})
	if err != nil || len(full) != 256*32 {
		t.Fatalf("full tile: %d bytes, %v", len(full), err)
	}
	for i := 0; i < 256; i++ {
		if h := tlog.RecordHash(entries[i]); string(full[i*32:i*32+32]) != string(h[:]) {
			t.Fatalf("tile hash %d is not the leaf hash", i)
		}
	}
	if _, err := l.Tile(translog.TilePath{L: 0, N: 1, W: 44}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []translog.TilePath{{L: 0, N: 1, W: 45}, {L: 0, N: 1, W: 256}, {L: 1, N: 0, W: 2}, {L: 2, N: 0, W: 1}} {
		if _, err := l.Tile(p); err != translog.ErrNotFound {
			t.Errorf("%s: %v, want not found", p, err)
		}
	}
	if _, err := l.Tile(translog.TilePath{L: 1, N: 0, W: 1}); err != nil {
		t.Fatal(err)
	}
	bundle, err := l.Tile(translog.TilePath{Entries: true, N: 1, W: 44})
	if err != nil {
		t.Fatal(err)
	}
	for i := 256; i < 300; i++ {
		n := int(binary.BigEndian.Uint16(bundle))
		if string(bundle[2:2+n]) != string(entries[i]) {
			t.Fatalf("bundle entry %d differs", i)
		}
		bundle = bundle[2+n:]
	}
	if len(bundle) != 0 {
		t.Fatal("bytes after the last entry")
	}
	// A new file over the same store: the same root.
	l2 := openLog(t, s, translog.Options{})
	if err := l2.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r2, _ := l2.Root(300); r2 != root {
		t.Fatalf("rebuilt root %s, want %s", r2, root)
	}
}

// Replicas sharing a store sign; each size is claimed once, the sizes
// grow, every claim verifies, and receipts prove inclusion.
func TestReplicasSignEachSizeOnce(t *testing.T) {
	s := openStore(t)
	skey, vkey, err := translog.GenerateKey("example.test/baton", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var logs []*translog.Log
	for i := 0; i < 3; i++ {
		l := openLog(t, s, translog.Options{SignerKey: skey, Interval: 20 * time.Millisecond, OnFork: func(f translog.Fork) { t.Errorf("fork: %s", f) }})
		logs = append(logs, l)
		wg.Add(2)
		go func() { defer wg.Done(); l.Run(ctx) }()
		go func() { defer wg.Done(); l.RunSigner(ctx) }()
	}
	for i := 0; i < 5; i++ {
		appendEvents(t, s, 4, 40)
		time.Sleep(15 * time.Millisecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, l := range logs {
		for {
			_, cp := l.Checkpoint()
			if cp.Size == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no checkpoint at 200 (at %d)", cp.Size)
			}
			select {
			case <-l.Changed():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	cancel()
	wg.Wait()
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := eventstore.ReadWholeStream(context.Background(), s, translog.CheckpointStream)
	if err != nil {
		t.Fatal(err)
	}
	last := int64(0)
	for _, c := range claims {
		var rec struct{ Checkpoint string }
		json.Unmarshal(c.Data, &rec)
		n, err := note.Open([]byte(rec.Checkpoint), note.VerifierList(v))
		if err != nil {
			t.Fatal(err)
		}
		cp, err := translog.ParseCheckpoint(n.Text)
		if err != nil {
			t.Fatal(err)
		}
		if cp.Size <= last {
			t.Fatalf("size %d claimed after %d", cp.Size, last)
		}
		last = cp.Size
	}
	signed, cp := logs[0].Checkpoint()
	rs, err := logs[1].Receipts("h2")
	if err != nil || len(rs) != 50 {
		t.Fatalf("%d receipts, %v", len(rs), err)
	}
	entries := leaves(t, s)
	for _, r := range rs {
		p, err := translog.ParseProof([]byte(r.Proof))
		if err != nil {
			t.Fatal(err)
		}
		if string(p.Checkpoint) != string(signed) || p.Index != r.LeafIndex {
			t.Fatal("proof against another checkpoint")
		}
		if err := tlog.CheckRecord(p.Hashes, cp.Size, cp.Root, r.LeafIndex, tlog.RecordHash(entries[r.LeafIndex])); err != nil {
			t.Fatalf("seq %d: %v", r.Seq, err)
		}
	}
}

// A checkpoint in the store with a root that is not the log's at its size
// is reported, and not served.
func TestForkedCheckpointIsReported(t *testing.T) {
	s := openStore(t)
	skey, _, _ := translog.GenerateKey("example.test/baton", nil)
	appendEvents(t, s, 2, 20)
	var forks []translog.Fork
	l := openLog(t, s, translog.Options{SignerKey: skey, OnFork: func(f translog.Fork) { forks = append(forks, f) }})
	ctx := context.Background()
	if err := l.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	root, _ := l.Root(20)
	if _, err := l.SignAt(ctx, translog.Checkpoint{Origin: l.Origin(), Size: 20, Root: root}, 0); err != nil {
		t.Fatal(err)
	}
	other := root
	other[0] ^= 1
	if _, err := l.SignAt(ctx, translog.Checkpoint{Origin: l.Origin(), Size: 20, Root: other}, 1); err != nil {
		t.Fatal(err)
	}
	// Claiming with a stale expectation fails: the size was claimed.
	if _, err := l.SignAt(ctx, translog.Checkpoint{Origin: l.Origin(), Size: 20, Root: other}, 1); err == nil {
		t.Fatal("a second claim at the same revision was accepted")
	}
	if err := l.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if len(forks) != 1 || forks[0].Checkpoint.Root != other || forks[0].Ours != root {
		t.Fatalf("forks %v", forks)
	}
	if n, last := l.Forks(); n != 1 || last.Checkpoint.Root != other {
		t.Fatalf("Forks() = %d, %v", n, last)
	}
	if _, cp := l.Checkpoint(); cp.Root != root {
		t.Fatalf("serving %s, want %s", cp.Root, root)
	}
}

// A replica without the key (and no origin given) serves what a signing
// replica claimed, checked against its own tree.
func TestKeylessReplicaServesTheClaims(t *testing.T) {
	s := openStore(t)
	skey, _, _ := translog.GenerateKey("example.test/baton", nil)
	appendEvents(t, s, 2, 30)
	ctx := context.Background()
	signer := openLog(t, s, translog.Options{SignerKey: skey})
	if err := signer.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	root, _ := signer.Root(30)
	if _, err := signer.SignAt(ctx, translog.Checkpoint{Origin: signer.Origin(), Size: 30, Root: root}, 0); err != nil {
		t.Fatal(err)
	}
	keyless := openLog(t, s, translog.Options{OnFork: func(f translog.Fork) { t.Errorf("fork: %s", f) }})
	if err := keyless.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if signed, cp := keyless.Checkpoint(); signed == nil || cp.Size != 30 || cp.Origin != "example.test/baton" {
		t.Fatalf("keyless replica serves %+v", cp)
	}
	rs, err := keyless.Receipts("h1")
	if err != nil || len(rs) != 15 || rs[0].Proof == "" {
		t.Fatalf("%d receipts, %v", len(rs), err)
	}
}

// A new key with a new origin (operations.md: after a restore) is a new
// log: the old key's claims in the store are another log's, not forks,
// and the new log signs its first checkpoint at once, not only after the
// next event.
func TestANewKeyIsANewLogNotAFork(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, 2, 30)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	oldKey, _, _ := translog.GenerateKey("example.test/baton", nil)
	old := openLog(t, s, translog.Options{SignerKey: oldKey})
	if err := old.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	root, _ := old.Root(30)
	if _, err := old.SignAt(ctx, translog.Checkpoint{Origin: old.Origin(), Size: 30, Root: root}, 0); err != nil {
		t.Fatal(err)
	}
	newKey, _, _ := translog.GenerateKey("example.test/baton-2", nil)
	l := openLog(t, s, translog.Options{SignerKey: newKey, Interval: 10 * time.Millisecond, OnFork: func(f translog.Fork) { t.Errorf("fork: %s", f) }})
	if err := l.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if n, f := l.Forks(); n != 0 {
		t.Fatalf("%d forks, the last %s", n, f)
	}
	go l.Run(ctx)
	go l.RunSigner(ctx)
	deadline := time.After(30 * time.Second)
	for {
		changed := l.Changed()
		if signed, cp := l.Checkpoint(); signed != nil {
			if cp.Origin != "example.test/baton-2" || cp.Size != 30 || cp.Root != root {
				t.Fatalf("serving %+v", cp)
			}
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("the new key signed no checkpoint of the 30 entries")
		}
	}
}

// An entry over 65,535 bytes is in the tree, but no entry bundle can
// carry it.
func TestLargeEntryIsInTheTreeButNotInABundle(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, 1, 3)
	big := json.RawMessage(`{"output":"` + strings.Repeat("x", 70000) + `"}`)
	if _, err := s.Append(context.Background(), domain.StreamID("h0"), eventstore.Revision(2),
		eventstore.NewEvent("Big", big, eventstore.Metadata{Actor: "a", RecordedAt: time.Unix(9, 0)})); err != nil {
		t.Fatal(err)
	}
	l := openLog(t, s, translog.Options{})
	if err := l.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.Size() != 4 {
		t.Fatalf("size %d", l.Size())
	}
	if _, err := l.Tile(translog.TilePath{L: 0, N: 0, W: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Tile(translog.TilePath{Entries: true, N: 0, W: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Tile(translog.TilePath{Entries: true, N: 0, W: 4}); err != translog.ErrEntryTooLarge {
		t.Fatalf("bundle with the large entry: %v", err)
	}
}

// damage writes garbage over pages 2 to 4 of a bbolt file, as a disk's
// bad sectors might: bbolt panics on such a page.
func damage(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := os.Getpagesize()
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, 3*page), int64(2*page)); err != nil {
		t.Fatal(err)
	}
}

// A damaged log file is an error naming it, never a panic: the server
// rebuilds it, and the check says it is damaged.
func TestDamagedFileIsAnError(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, 3, 40)
	path := filepath.Join(t.TempDir(), translog.FileName)
	l, err := translog.Open(path, s, translog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.Close()
	damage(t, path)
	if _, err := translog.Open(path, s, translog.Options{}); !errors.Is(err, translog.ErrDamaged) {
		t.Fatalf("Open = %v, want ErrDamaged", err)
	}
	if _, err := translog.CheckFile(path); !errors.Is(err, translog.ErrCorruptLog) {
		t.Fatalf("CheckFile = %v, want ErrCorruptLog", err)
	}
}

// A log file cut short inside bbolt's pages (a first start on a full disk
// stops while bbolt writes the new file's first pages) is damaged, an
// error naming it: reading the page past its end killed the process with
// SIGBUS, at every start and in store check.
func TestFileCutShortIsAnError(t *testing.T) {
	s := openStore(t)
	path := filepath.Join(t.TempDir(), translog.FileName)
	db, err := bbolt.Open(path, 0o600, nil) // a new file's first pages
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := os.Truncate(path, 3*int64(os.Getpagesize())); err != nil { // its root page cut off
		t.Fatal(err)
	}
	// Told as a file cut short, not in the runtime's words for a fault.
	told := func(err error) bool {
		return strings.Contains(err.Error(), "past the end of the file") && !strings.Contains(err.Error(), "nil pointer")
	}
	if _, err := translog.Open(path, s, translog.Options{}); !errors.Is(err, translog.ErrDamaged) || !told(err) {
		t.Fatalf("Open = %v, want ErrDamaged", err)
	}
	if _, err := translog.CheckFile(path); !errors.Is(err, translog.ErrCorruptLog) || !told(err) {
		t.Fatalf("CheckFile = %v, want ErrCorruptLog", err)
	}
}

// A log file another process holds (a server on this --data, while a
// command reads it) is said to be held, not damaged: a damaged file is
// moved aside and rebuilt, and "damaged" sent an operator to do that to a
// sound file a running server was using.
func TestHeldFileIsNotDamaged(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, 3, 40)
	path := filepath.Join(t.TempDir(), translog.FileName)
	l, err := translog.Open(path, s, translog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err = translog.Open(path, s, translog.Options{ReadOnly: true})
	if err == nil || errors.Is(err, translog.ErrDamaged) || !strings.Contains(err.Error(), "held by another process") {
		t.Fatalf("Open of a held file = %v, want it said to be held, not damaged", err)
	}
}

// A log file this user may not read (left by a start as root, say) is a
// permission error, not a damaged file: the server moved it aside as
// translog.db.broken and rebuilt the log, logging "the file is damaged".
// Root reads any file, so as root the test runs its check again in a
// process of the nobody user (CI runs as root).
func TestUnreadableFileIsNotDamaged(t *testing.T) {
	if path := os.Getenv("BATON_TEST_UNREADABLE_LOG"); path != "" {
		_, err := translog.Open(path, nil, translog.Options{})
		if err == nil || errors.Is(err, translog.ErrDamaged) || !errors.Is(err, os.ErrPermission) {
			t.Fatalf("Open of an unreadable file = %v, want a permission error, not ErrDamaged", err)
		}
		return
	}
	s := openStore(t)
	appendEvents(t, s, 3, 4)
	dir := t.TempDir()
	path := filepath.Join(dir, translog.FileName)
	l, err := translog.Open(path, s, translog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() != 0 {
		_, err = translog.Open(path, s, translog.Options{})
		if err == nil || errors.Is(err, translog.ErrDamaged) || !errors.Is(err, os.ErrPermission) {
			t.Fatalf("Open of an unreadable file = %v, want a permission error, not ErrDamaged", err)
		}
		return
	}
	// The directories down to the file must let nobody reach it.
	for d := dir; d != filepath.Dir(d) && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// And the test binary too: go test builds it where only root enters.
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "translog.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestUnreadableFileIsNotDamaged$", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BATON_TEST_UNREADABLE_LOG="+path)
	asNobody(t, cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if errors.Is(err, os.ErrPermission) || strings.Contains(string(out), "permission denied") && !strings.Contains(string(out), "Open of an unreadable file") {
			t.Skipf("cannot run a process as nobody here: %v %s", err, out)
		}
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

// A key that is not a signing key (the verifier key keygen printed, put in
// the key file) is told as such: it was "the signing key: malformed
// verifier id", the note library's words, which pointed at the wrong key.
func TestOpenNamesAKeyThatIsNotASigningKey(t *testing.T) {
	s := openStore(t)
	skey, vkey, err := translog.GenerateKey("baton.test/log", nil)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		vkey:                        "a verifier key",
		"garbage":                   "PRIVATE+KEY+",
		skey[:len(skey)-4] + "AAAA": "PRIVATE+KEY+",
	} {
		_, err := translog.Open(filepath.Join(t.TempDir(), translog.FileName), s, translog.Options{SignerKey: key})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "baton log keygen") {
			t.Errorf("Open with %q: %v; want %q and baton log keygen named", key, err, want)
		}
	}
}

// An origin too long for a checkpoint to read back (over the 4 KiB a
// checkpoint's text may be) is refused when the log opens: each
// checkpoint signed with it was a fork of this log, and signed again at
// every interval.
func TestOriginTooLongIsRefused(t *testing.T) {
	_, err := translog.Open(filepath.Join(t.TempDir(), translog.FileName), openStore(t), translog.Options{Origin: "example.test/" + strings.Repeat("o", 5000)})
	if err == nil || !strings.Contains(err.Error(), "origin") {
		t.Fatalf("Open = %v", err)
	}
}

// An origin a signed note cannot carry (a control character, bytes that
// are not UTF-8) is refused when the log opens: note.Sign wrote such a
// checkpoint, note.Open refused it when the follower read it back, so each
// one was a fork of this log and the signer claimed the next at once, a
// claim in the store every few milliseconds.
func TestOriginANoteCannotCarryIsRefused(t *testing.T) {
	skey, _, err := translog.GenerateKey("example.test/log", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, origin := range []string{"example.test\tlog", "example.test/\x00log", "example.test/\xfflog"} {
		l, err := translog.Open(filepath.Join(t.TempDir(), translog.FileName), openStore(t), translog.Options{Origin: origin, SignerKey: skey})
		if err == nil {
			l.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "origin") {
			t.Errorf("Open with origin %q = %v, want it refused", origin, err)
		}
	}
	// Any other text is an origin: spaces inside, a plus, non-ASCII.
	openLog(t, openStore(t), translog.Options{Origin: "example.test/log one+two é", SignerKey: skey})
}

// A handoff's receipts come with the log's size as of the same read:
// every leaf index is below it, while the follower commits beside them
// (the size read apart could lag a commit the receipts already saw).
func TestReceiptsAreBelowTheirSize(t *testing.T) {
	s := openStore(t)
	l := openLog(t, s, translog.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		appendEvents(t, s, 1, 400)
	}()
	stop := make(chan struct{})
	go func() { wg.Wait(); close(stop) }()
	for reads := 0; ; reads++ {
		rs, size, err := l.ReceiptsAndSize("h0")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.LeafIndex >= size {
				t.Fatalf("read %d: leaf %d of seq %d at a size of %d", reads, r.LeafIndex, r.Seq, size)
			}
		}
		select {
		case <-stop:
			cancel()
			<-done
			return
		default:
		}
	}
}

// runLog follows the store and signs until the returned stop.
func runLog(l *translog.Log) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); l.Run(ctx) }()
	go func() { defer wg.Done(); l.RunSigner(ctx) }()
	return func() { cancel(); wg.Wait() }
}

func waitSize(t *testing.T, l *translog.Log, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for l.Size() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the log has %d entries, want %d", l.Size(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A claim of this log's own key whose root the tree built here
// contradicts (the store's events changed after it was signed) stops the
// signer: another checkpoint of the key would be a second tree of one
// log (C2SP tlog-checkpoint). It says so once, and the file keeps the
// fork across a restart, which reads the feed on from where it was.
func TestSignerSignsNothingOverAForkOfItsOwnKey(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, 2, 20)
	skey, _, _ := translog.GenerateKey("example.test/baton", nil)
	ctx := context.Background()
	before := openLog(t, s, translog.Options{SignerKey: skey})
	if err := before.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	root, _ := before.Root(20)
	signedRoot := root
	signedRoot[0] ^= 1 // what the key signed before the rewrite
	if _, err := before.SignAt(ctx, translog.Checkpoint{Origin: before.Origin(), Size: 20, Root: signedRoot}, 0); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, s, 2, 10) // the log is past the largest size claimed
	path := filepath.Join(t.TempDir(), translog.FileName)
	for start, size := 0, int64(40); start < 2; start, size = start+1, size+10 {
		halts := make(chan translog.Fork, 4)
		l, err := translog.Open(path, s, translog.Options{SignerKey: skey, Interval: 10 * time.Millisecond, OnHalt: func(f translog.Fork) { halts <- f }})
		if err != nil {
			t.Fatal(err)
		}
		stop := runLog(l)
		select {
		case f := <-halts:
			if f.Checkpoint.Size != 20 || f.Checkpoint.Root != signedRoot || f.Ours != root || !f.Own {
				t.Fatalf("start %d: halted on %+v", start, f)
			}
		case <-time.After(30 * time.Second):
			stop()
			t.Fatalf("start %d: the signer did not halt (claims %d)", start, l.Claims())
		}
		appendEvents(t, s, 2, 10)
		waitSize(t, l, size)
		time.Sleep(10 * 10 * time.Millisecond) // ten intervals
		stop()
		claims, err := eventstore.ReadWholeStream(ctx, s, translog.CheckpointStream)
		if err != nil || len(claims) != 1 {
			t.Fatalf("start %d: %d claims in the store, %v; want only the forked one", start, len(claims), err)
		}
		if signed, _ := l.Checkpoint(); signed != nil {
			t.Fatalf("start %d: serving %q", start, signed)
		}
		if f, ok := l.OwnFork(); !ok || f.Checkpoint.Root != signedRoot {
			t.Fatalf("start %d: OwnFork() = %+v, %v", start, f, ok)
		}
		if len(halts) != 0 {
			t.Fatalf("start %d: told of the halt %d more times", start, len(halts))
		}
		l.Close()
	}
}

// A file read on without the key (a replica started once without it)
// cannot tell whether a contradicting claim is the key's: it keeps each
// one, and a later start with the key finds its own among them. The file
// kept none, and that start, reading the feed on past the claim, signed
// over the fork.
func TestAForkReadWithoutTheKeyStopsTheSignerLater(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, 2, 20)
	skey, _, _ := translog.GenerateKey("example.test/baton", nil)
	ctx := context.Background()
	signer := openLog(t, s, translog.Options{SignerKey: skey})
	if err := signer.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	root, _ := signer.Root(20)
	signedRoot := root
	signedRoot[0] ^= 1
	if _, err := signer.SignAt(ctx, translog.Checkpoint{Origin: signer.Origin(), Size: 20, Root: signedRoot}, 0); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, s, 2, 10)
	path := filepath.Join(t.TempDir(), translog.FileName)
	keyless, err := translog.Open(path, s, translog.Options{})
	if err == nil {
		err = keyless.CatchUp(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := keyless.Forks(); n != 1 {
		t.Fatalf("the keyless log read %d forks", n)
	}
	keyless.Close()
	for _, readOnly := range []bool{true, false} {
		l, err := translog.Open(path, s, translog.Options{SignerKey: skey, ReadOnly: readOnly})
		if err != nil {
			t.Fatal(err)
		}
		f, ok := l.OwnFork()
		l.Close()
		if !ok || f.Checkpoint.Root != signedRoot || f.Ours != root {
			t.Fatalf("read only %v: OwnFork() = %+v, %v after the fork was read without the key", readOnly, f, ok)
		}
	}
	// A claim that does not verify with the key is no fork of it.
	other, _, _ := translog.GenerateKey("example.test/baton", nil)
	if l, err := translog.Open(path, s, translog.Options{SignerKey: other}); err == nil {
		_, ok := l.OwnFork()
		l.Close()
		if ok {
			t.Fatal("another key's claim is taken as a fork of this key")
		}
	}
}

// Contradicting claims that are not of this log's key do not stop it: one
// of the origin of a key this one replaced is another log's, and one that
// does not verify with this key was not signed by it. A file that kept a
// fork of the key replaced signs under the new key.
func TestSignerSignsOverForksOfAnotherKey(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, 2, 20)
	ctx := context.Background()
	oldKey, _, _ := translog.GenerateKey("example.test/baton", nil)
	newKey, _, _ := translog.GenerateKey("example.test/baton-2", nil)
	impostor, _, _ := translog.GenerateKey("example.test/baton-2", nil)
	old := openLog(t, s, translog.Options{SignerKey: oldKey})
	if err := old.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	root, _ := old.Root(20)
	other := root
	other[0] ^= 1
	if _, err := old.SignAt(ctx, translog.Checkpoint{Origin: old.Origin(), Size: 20, Root: other}, 0); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, s, 2, 10) // past the sizes claimed
	// The old key's log, built over the claims, holds its own fork.
	path := filepath.Join(t.TempDir(), translog.FileName)
	l, err := translog.Open(path, s, translog.Options{SignerKey: oldKey})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.OwnFork(); !ok {
		t.Fatal("the old key's log holds no fork of its own key")
	}
	l.Close()
	imp := openLog(t, s, translog.Options{SignerKey: impostor})
	if _, err := imp.SignAt(ctx, translog.Checkpoint{Origin: imp.Origin(), Size: 20, Root: other}, 1); err != nil {
		t.Fatal(err)
	}

	l, err = translog.Open(path, s, translog.Options{SignerKey: newKey, Interval: 10 * time.Millisecond,
		OnHalt: func(f translog.Fork) { t.Errorf("halted on %s", f) }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stop := runLog(l)
	defer stop()
	deadline := time.After(30 * time.Second)
	for {
		changed := l.Changed()
		if signed, cp := l.Checkpoint(); signed != nil {
			if root, _ := l.Root(30); cp.Origin != "example.test/baton-2" || cp.Size != 30 || cp.Root != root {
				t.Fatalf("serving %+v", cp)
			}
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the new key signed nothing (claims %d)", l.Claims())
		}
	}
	if f, ok := l.OwnFork(); ok {
		t.Fatalf("OwnFork() = %s", f)
	}
	if n, f := l.Forks(); n != 1 || f.Own || f.Checkpoint.Origin != "example.test/baton-2" {
		t.Fatalf("Forks() = %d, %+v; want the impostor's claim only", n, f)

	}
}

// refusingStore refuses the first n claims appended to the checkpoint
// stream as an unreachable store does.
type refusingStore struct {
	eventstore.Store
	mu      sync.Mutex
	refuse  int
	refused int
}

func (s *refusingStore) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if stream == translog.CheckpointStream {
		s.mu.Lock()
		if s.refused < s.refuse {
			s.refused++
			s.mu.Unlock()
			return eventstore.AppendResult{}, fmt.Errorf("%w: no leader", eventstore.ErrUnavailable)
		}
		s.mu.Unlock()
	}
	return s.Store.Append(ctx, stream, exp, evs...)
}

// A store that refuses the signer's claims for a while (a KurrentDB
// election) does not end the signer, which ended the server: it is told,
// and the claim is made once the store answers.
func TestSignerOutlastsAStoreThatDoesNotAnswer(t *testing.T) {
	t.Cleanup(translog.SetSignRetryPause(10 * time.Millisecond))
	base := openStore(t)
	s := &refusingStore{Store: base, refuse: 3}
	appendEvents(t, base, 2, 20)
	var mu sync.Mutex
	var told []error
	skey, _, _ := translog.GenerateKey("example.test/baton", nil)
	l := openLog(t, s, translog.Options{SignerKey: skey, Interval: time.Millisecond, OnSignError: func(err error) {
		mu.Lock()
		told = append(told, err)
		mu.Unlock()
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); done <- l.Run(ctx) }()
	go func() { defer wg.Done(); done <- l.RunSigner(ctx) }()
	defer func() { cancel(); wg.Wait() }()
	deadline := time.After(20 * time.Second)
	for {
		if _, cp := l.Checkpoint(); cp.Size == 20 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the log stopped: %v", err)
		case <-deadline:
			t.Fatal("no checkpoint of 20 entries")
		case <-time.After(5 * time.Millisecond):
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 3 || !errors.Is(told[0], eventstore.ErrUnavailable) {
		t.Fatalf("told %v; want the 3 refusals", told)
	}
}

// A claim this log's key did not sign claims no size of it: one signed
// by another key under the log's origin, at the log's whole size, kept
// the log's own key from signing that size until the next event.
func TestAClaimOfAnotherKeyClaimsNoSize(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, 2, 20)
	ctx := context.Background()
	impostor, _, _ := translog.GenerateKey("example.test/baton", nil)
	skey, _, _ := translog.GenerateKey("example.test/baton", nil)
	imp := openLog(t, s, translog.Options{SignerKey: impostor})
	if err := imp.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := imp.SignAt(ctx, translog.Checkpoint{Origin: "example.test/baton", Size: 20, Root: tlog.Hash{1}}, 0); err != nil {
		t.Fatal(err)
	}
	l := openLog(t, s, translog.Options{SignerKey: skey, Interval: time.Millisecond})
	if err := l.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	stop := runLog(l)
	defer stop()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, cp := l.Checkpoint(); cp.Size == 20 {
			return
		}
		if time.Now().After(deadline) {
			_, cp := l.Checkpoint()
			t.Fatalf("the log's own key signed no checkpoint of its 20 entries (latest %d)", cp.Size)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A full disk under the log's file holds the log back, and it goes on by
// itself once space is freed: Run does not end (ending it stopped the
// server, and the restart refused while the disk was full).
func TestLogWaitsForSpace(t *testing.T) {
	defer func(d time.Duration) { translog.FullRetry = d }(translog.FullRetry)
	translog.FullRetry = 10 * time.Millisecond
	s := openStore(t)
	var mu sync.Mutex
	var told []error
	l := openLog(t, s, translog.Options{OnFull: func(err error) {
		mu.Lock()
		told = append(told, err)
		mu.Unlock()
	}})
	var full atomic.Bool
	full.Store(true)
	translog.FailUpdates(l, func() error {
		if full.Load() {
			return &os.PathError{Op: "write", Path: "translog.db", Err: syscall.ENOSPC}
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	appendEvents(t, s, 2, 10)
	for deadline := time.Now().Add(30 * time.Second); l.Full() == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the log never found the disk full")
		}
	}
	time.Sleep(50 * time.Millisecond) // a few tries
	select {
	case err := <-done:
		t.Fatalf("the log stopped with the disk full: %v", err)
	default:
	}
	if l.Size() != 0 {
		t.Fatalf("size %d with nothing committed", l.Size())
	}
	full.Store(false) // space freed
	for deadline := time.Now().Add(30 * time.Second); l.Size() != 10; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("size %d once space was freed, want 10", l.Size())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if l.Full() != nil || len(told) != 1 || !errors.Is(told[0], syscall.ENOSPC) {
		t.Fatalf("Full = %v, told %v; want nil, and the full disk once", l.Full(), told)
	}
}
