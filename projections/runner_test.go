package projections

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
)

// tempStore is an embedded store in a fresh directory, closed after the
// test.
func tempStore(t testing.TB) (string, *bolt.Store) {
	t.Helper()
	dir := t.TempDir()
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return dir, store
}

// Batches no projector wants move the position without a commit; the
// checkpoint catches up with the next commit, Flush or Close, and a reopen
// resumes from it.
func TestUnwantedBatchesMoveThePositionOnly(t *testing.T) {
	dir, store := tempStore(t)
	ctx := context.Background()
	appendOne := func(stream, typ string, data any) eventstore.Position {
		b, _ := json.Marshal(data)
		res, err := store.Append(ctx, stream, eventstore.NoStream(), eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: typ, Data: b})
		if err != nil {
			t.Fatal(err)
		}
		return res.Position
	}
	path := filepath.Join(dir, "readmodel.db")
	r, err := Open(path, store, NewHandoffs(), Keys{})
	if err != nil {
		t.Fatal(err)
	}
	p1 := appendOne("usage-a", "UsageRecorded", map[string]any{"tenant": "a"})
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Checkpoint() != p1 {
		t.Fatalf("position %+v, want %+v", r.Checkpoint(), p1)
	}
	_, ev, _ := domain.NewKey("a", false, "")
	p2 := appendOne(domain.KeysStream, domain.EventKeyCreated, ev)
	p3 := appendOne("catalog", "ModelHealthChecked", map[string]any{})
	// Applied one by one (as a live subscription might deliver them).
	for _, p := range []eventstore.Position{p2, p3} {
		evs, err := store.ReadAll(ctx, r.Checkpoint(), 1)
		if err != nil || len(evs) != 1 || evs[0].Position != p {
			t.Fatalf("%v %v", evs, err)
		}
		if err := r.apply(evs); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := r.KeyCount(); err != nil || n != 1 || r.Checkpoint() != p3 || !r.dirty.Load() {
		t.Fatalf("keys %d %v, position %+v, dirty %v", n, err, r.Checkpoint(), r.dirty.Load())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r, err = Open(path, store, NewHandoffs(), Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Checkpoint() != p3 {
		t.Fatalf("reopened at %+v, want %+v", r.Checkpoint(), p3)
	}
}

// At start, quarantined handoffs are folded again from the store, and
// their views come out as a rebuild from zero makes them: one that folds now
// (quarantined by hand here, as an older Baton that did not know an event
// type would have) is released; one that still fails stays, naming the event
// that fails now; one whose stream is gone is removed.
func TestRecheckReleasesHandoffsThatFoldNow(t *testing.T) {
	dir, store := tempStore(t)
	ctx := context.Background()
	put := func(stream string, evs ...eventstore.RecordedEvent) {
		for _, ev := range evs {
			if ev.ID == uuid.Nil {
				ev.ID = uuid.Must(uuid.NewV7())
			}
			exp := eventstore.Revision(ev.Revision - 1)
			if ev.Revision == 0 {
				exp = eventstore.NoStream()
			}
			if _, err := store.Append(ctx, stream, exp, ev.EventData); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, b := handoffEvents(t, "A", "acme"), handoffEvents(t, "B", "beta")
	put(domain.StreamID("A"), a[:3]...)
	bad := a[4] // ProofReviewed: not allowed right after the contract
	bad.EventData.ID, bad.Revision = uuid.Must(uuid.NewV7()), 1
	put(domain.StreamID("B"), b[0], bad)

	open := func(name string) (*Runner, *Handoffs, *[]string) {
		h := NewHandoffs()
		logged := new([]string)
		h.OnQuarantine = func(id string, q Quarantine) { *logged = append(*logged, id) }
		r, err := Open(filepath.Join(dir, name), store, h, Keys{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		if err := r.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		return r, h, logged
	}
	r, h, logged := open("readmodel.db")
	if _, n, _ := r.Quarantined(0); n != 1 || len(*logged) != 1 || (*logged)[0] != "B" {
		t.Fatalf("%d quarantined, logged %v", n, *logged)
	}
	// As an older Baton would have left them: A refused at seq 2 (its
	// seq 3 counted), B refused at its first event (seq 2 counted), and C
	// quarantined, its stream since removed.
	for id, q := range map[string]Quarantine{
		"A": {Seq: 2, Type: "Unknown", Reason: "an older version did not know it", Skipped: 1, LastSeq: 3},
		"B": {Seq: 1, Type: "Unknown", Reason: "an older version did not know it", Skipped: 1, LastSeq: 2},
		"C": {Seq: 1, Type: "Unknown", Reason: "removed since"},
	} {
		b, _ := json.Marshal(q)
		if err := r.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketQuarantine).Put([]byte(id), b) }); err != nil {
			t.Fatal(err)
		}
	}
	released, err := r.Recheck(ctx, h)
	if err != nil || len(released) != 2 || released[0] != "A" || released[1] != "C" {
		t.Fatalf("released %v, %v", released, err)
	}
	fresh, _, _ := open("rebuilt.db")
	dump := func(r *Runner) string {
		var out string
		r.View(func(tx *bbolt.Tx) error {
			for _, name := range [][]byte{bucketContracts, bucketByTenant, bucketLedger, bucketTenantOf} {
				tx.Bucket(name).ForEach(func(k, v []byte) error { out += fmt.Sprintf("%s %q %q\n", name, k, v); return nil })
			}
			return tx.Bucket(bucketQuarantine).ForEach(func(k, v []byte) error {
				out += fmt.Sprintf("quarantine %s %s\n", k, v)
				return nil
			})
		})
		return out
	}
	if got, want := dump(r), dump(fresh); got != want {
		t.Fatalf("after the recheck:\n%s\na rebuild from zero:\n%s", got, want)
	}
	var qe *QuarantinedError
	if _, _, _, err := r.Contract("B"); !errors.As(err, &qe) || qe.Seq != 2 {
		t.Fatalf("B after the recheck: %v", err)
	}
	if entries, err := r.Ledger("A"); err != nil || len(entries) != 3 {
		t.Fatalf("A's ledger after the recheck: %d entries, %v", len(entries), err)
	}
}

// Streams only a writer around Baton can make are quarantined, never
// stop the read models: a name with a control character (an id with a 0
// byte would reach into another handoff's ledger rows, keyed id 0x00 seq),
// and a stream that starts past seq 1 (removed and written again). A
// recheck keeps a quarantine whose stream it cannot read back.
func TestOddStreamsAreQuarantined(t *testing.T) {
	dir, store := tempStore(t)
	h := NewHandoffs()
	r, err := Open(filepath.Join(dir, "readmodel.db"), store, h, Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := &readModel{r: r, h: h}
	a := handoffEvents(t, "A", "acme")
	if err := m.apply(a[:2]...); err != nil {
		t.Fatal(err)
	}
	nul := handoffEvents(t, "A\x00z", "evil")
	for i := range nul {
		nul[i].StreamID = domain.StreamID("A\x00z")
	}
	late := handoffEvents(t, "L", "acme")[2]
	bare := a[0]
	bare.StreamID = "handoff-" // names no handoff: ignored
	huge := handoffEvents(t, "H", "acme")[0]
	huge.StreamID = domain.StreamID("H")
	huge.Data = []byte(strings.Replace(string(huge.Data), `"tenant":"acme"`, `"tenant":"`+strings.Repeat("t", 40000)+`"`, 1))
	if err := m.apply(append(nul[:2], late, bare, huge)...); err != nil {
		t.Fatalf("odd streams stopped the read models: %v", err)
	}
	if _, _, _, err := r.Contract("H"); !errors.As(err, new(*QuarantinedError)) {
		t.Fatalf("a contract whose tenant cannot be a key: %v", err)
	}
	var qe *QuarantinedError
	for _, id := range []string{"A\x00z", "L"} {
		if _, err := r.Ledger(id); !errors.As(err, &qe) {
			t.Fatalf("%q: %v", id, err)
		}
	}
	if entries, err := r.Ledger("A"); err != nil || len(entries) != 2 {
		t.Fatalf("A's ledger: %d entries, %v", len(entries), err)
	}
	if _, err := r.Recheck(context.Background(), h); err != nil {
		t.Fatalf("recheck: %v", err)
	}
	// The unreadable one stays; L, absent from this store (it was only
	// fed to the projection), is removed as a stream that is gone.
	if q, n, _ := r.Quarantined(10); n != 1 || q["A\x00z"].Seq != 1 { // H's stream is not in this store either
		t.Fatalf("after the recheck: %d quarantined, %v", n, q)
	}
}

// An event delivered without readable metadata (a KurrentDB event written
// around Baton) quarantines its handoff; on the keys stream it stops the
// read models, as authentication cannot go on on a guess.
func TestUnreadableMetadata(t *testing.T) {
	m := openReadModel(t, false)
	a := handoffEvents(t, "A", "acme")
	if err := m.apply(a[:2]...); err != nil {
		t.Fatal(err)
	}
	odd := a[2]
	odd.Metadata, odd.Unreadable = eventstore.Metadata{}, "metadata: not JSON"
	if err := m.apply(odd); err != nil {
		t.Fatalf("stopped the read models: %v", err)
	}
	var qe *QuarantinedError
	if _, err := m.r.Ledger("A"); !errors.As(err, &qe) || qe.Seq != 3 || !strings.Contains(qe.Reason, "not JSON") {
		t.Fatalf("A: %v", err)
	}
	key := eventstore.RecordedEvent{StreamID: domain.KeysStream, EventData: eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "KeyCreated", Data: []byte(`{}`)}, Unreadable: "metadata: not JSON"}
	if err := m.apply(key); err == nil {
		t.Fatal("an unreadable key event was applied")
	}
}

// A read-model file with damaged pages is moved aside and rebuilt, never
// a panic at every start.
func TestDamagedFileIsRebuilt(t *testing.T) {
	dir, store := tempStore(t)
	path := filepath.Join(dir, "readmodel.db")
	r, err := Open(path, store, NewHandoffs(), Keys{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	for _, pages := range [][2]int64{{2, 3}, {0, 8}} {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		page := int64(os.Getpagesize())
		f.WriteAt(bytes.Repeat([]byte{0xA5}, int(pages[1]*page)), pages[0]*page)
		f.Close()
		r, _, err := OpenOrRebuild(path, store, NewHandoffs(), Keys{})
		if err != nil {
			t.Fatalf("pages %v: %v", pages, err)
		}
		r.Close()
		if _, err := os.Stat(path + ".broken"); err != nil {
			t.Fatalf("pages %v: not moved aside: %v", pages, err)
		}
		os.Remove(path + ".broken")
	}
}

// A read-model file cut short inside bbolt's pages (a first start on a
// full disk stops while bbolt writes the new file's first pages) is moved
// aside and rebuilt: reading the page past its end killed the process
// with SIGBUS at that start and at every later one, space freed or not.
func TestFileCutShortIsRebuilt(t *testing.T) {
	dir, store := tempStore(t)
	path := filepath.Join(dir, "readmodel.db")
	db, err := bbolt.Open(path, 0o600, nil) // a new file's first pages
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := os.Truncate(path, 3*int64(os.Getpagesize())); err != nil { // its root page cut off
		t.Fatal(err)
	}
	r, to, err := OpenOrRebuild(path, store, NewHandoffs(), Keys{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if to != path+".broken" {
		t.Fatalf("moved aside to %q", to)
	}
}

// Each damaged file moved aside is kept (the first is the evidence of
// the first fault), up to KeepAside of them: a second move replaced the
// first, and a damage recurring at every start must not fill the disk.
func TestDamagedFilesMovedAsideAreKeptBounded(t *testing.T) {
	dir, store := tempStore(t)
	path := filepath.Join(dir, "readmodel.db")
	first := []byte(nil)
	for i := 0; i < KeepAside+3; i++ {
		r, err := Open(path, store, NewHandoffs(), Keys{})
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		page := int64(os.Getpagesize())
		f.WriteAt(bytes.Repeat([]byte{byte(i + 1)}, int(3*page)), 2*page)
		f.Close()
		r, to, err := OpenOrRebuild(path, store, NewHandoffs(), Keys{})
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		if i == 0 {
			if first, err = os.ReadFile(to); err != nil {
				t.Fatal(err)
			}
		}
		want := path + ".broken"
		if i > 0 {
			want = fmt.Sprintf("%s.broken.%d", path, min(i, KeepAside-1))
		}
		if to != want {
			t.Fatalf("move %d went to %s, want %s", i, to, want)
		}
	}
	if b, err := os.ReadFile(path + ".broken"); err != nil || !bytes.Equal(b, first) {
		t.Fatalf("the first damaged file was not kept (%v)", err)
	}
	aside, _ := filepath.Glob(path + ".broken*")
	if len(aside) != KeepAside {
		t.Fatalf("%d files kept aside, want %d: %v", len(aside), KeepAside, aside)
	}
}

// fillingProjector fails every commit with the disk full while full is
// set, as bbolt's commit does when its file cannot grow.
type fillingProjector struct{ full *atomic.Bool }

func (fillingProjector) Buckets() [][]byte { return [][]byte{[]byte("filling")} }

func (p fillingProjector) Apply(tx *bbolt.Tx, ev eventstore.RecordedEvent) error {
	if p.full.Load() {
		return &os.PathError{Op: "write", Path: "readmodel.db", Err: syscall.ENOSPC}
	}
	return tx.Bucket([]byte("filling")).Put([]byte(ev.ID.String()), []byte{1})
}

// A full disk under the read-model file holds the read models back, and
// they go on by themselves once space is freed: Run does not end (ending
// it stopped the server, and the restart refused while the disk was full).
func TestReadModelsWaitForSpace(t *testing.T) {
	defer func(d time.Duration) { FullRetry = d }(FullRetry)
	FullRetry = 10 * time.Millisecond
	dir, store := tempStore(t)
	var full atomic.Bool
	full.Store(true)
	r, err := Open(filepath.Join(dir, "readmodel.db"), store, NewHandoffs(), fillingProjector{&full})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	told := 0
	r.OnFull = func(err error) {
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("OnFull(%v)", err)
		}
		told++
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	ctx0 := context.Background()
	for i := range 5 {
		if _, err := store.Append(ctx0, fmt.Sprintf("s%d", i), eventstore.NoStream(), eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "Tick", Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.WaitForHead(ctx0, 200*time.Millisecond); !errors.Is(err, ErrBehind) {
		t.Fatalf("read with the disk full: %v, want ErrBehind", err)
	}
	select {
	case err := <-done:
		t.Fatalf("Run ended with the disk full: %v", err)
	default:
	}
	if !errors.Is(r.Full(), syscall.ENOSPC) {
		t.Fatalf("Full = %v", r.Full())
	}
	full.Store(false) // space freed
	if err := r.WaitForHead(ctx0, 5*time.Second); err != nil {
		t.Fatalf("once space is freed: %v", err)
	}
	if r.Full() != nil || told != 1 {
		t.Fatalf("Full = %v, told %d times, want nil and once", r.Full(), told)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// A read-model file with a damaged page that the open itself does not
// touch (a bucket's root, below the top level) is found damaged when it
// opens, moved aside and rebuilt, rather than served with the page
// panicking at each read that reaches it.
func TestDamagedPageIsFoundWhenTheFileOpens(t *testing.T) {
	dir, store := tempStore(t)
	ctx := context.Background()
	for i := range 300 {
		_, ev, _ := domain.NewKey(fmt.Sprintf("t%d", i), false, "")
		b, _ := json.Marshal(ev)
		exp := eventstore.Revision(uint64(i - 1))
		if i == 0 {
			exp = eventstore.NoStream()
		}
		if _, err := store.Append(ctx, domain.KeysStream, exp, eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: domain.EventKeyCreated, Data: b}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "readmodel.db")
	r, err := Open(path, store, NewHandoffs(), Keys{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	var root uint64
	r.View(func(tx *bbolt.Tx) error { root = uint64(tx.Bucket(bucketKeys).Root()); return nil })
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if root == 0 {
		t.Fatal("the keys bucket is inline: nothing to damage")
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(bytes.Repeat([]byte{0xff}, 64), int64(root)*int64(os.Getpagesize()))
	f.Close()
	r, _, err = OpenOrRebuild(path, store, NewHandoffs(), Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := os.Stat(path + ".broken"); err != nil {
		t.Fatalf("the damaged file was not moved aside: %v", err)
	}
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := r.KeyCount(); err != nil || n != 300 {
		t.Fatalf("rebuilt: %d keys, %v", n, err)
	}
}
