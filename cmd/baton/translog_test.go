package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	bbolt "go.etcd.io/bbolt"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/eventstore/records"
	"github.com/batonhq/baton/eventstore/translog"
	"github.com/batonhq/baton/eventstore/translog/translogtest"
	batonhttp "github.com/batonhq/baton/http"
	"github.com/batonhq/baton/projections"
)

// serveWitnesses are the witnesses serveWithLog's log takes
// cosignatures of; tests that set them restore them.
var serveWitnesses []string

// serveWithLog serves the store in dir with its transparency log signing
// with the key file in dir, until stop, and waits until a checkpoint
// covers every handoff event.
func serveWithLog(t *testing.T, dir string) (url, admin string, stop func()) {
	t.Helper()
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	proj, err := projections.Open(filepath.Join(dir, "readmodel.db"), store, projections.NewHandoffs(), projections.Keys{})
	if err != nil {
		t.Fatal(err)
	}
	skey, err := os.ReadFile(filepath.Join(dir, KeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	tl, err := translog.Open(filepath.Join(dir, translog.FileName), store, translog.Options{SignerKey: string(skey), Interval: 10 * time.Millisecond, Witnesses: serveWitnesses, SignedFile: filepath.Join(dir, translog.SignedFileName)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 3)
	go func() { proj.Run(ctx); done <- struct{}{} }()
	go func() { tl.Run(ctx); done <- struct{}{} }()
	go func() { tl.RunSigner(ctx); done <- struct{}{} }()
	srv := httptest.NewServer(batonhttp.NewServer(batonhttp.Config{Store: store, Projections: proj, Log: zerolog.Nop(), TransparencyLog: tl}).Handler())
	k, err := ledger.NewKeys(store).Create(context.Background(), "test", "", "t", true, "")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for page, err := range eventstoreFeed(store) {
		if err != nil {
			t.Fatal(err)
		}
		n += page
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, cp := tl.Checkpoint(); cp.Size < int64(n); _, cp = tl.Checkpoint() {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint covers the %d handoff events (at %d)", n, cp.Size)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return srv.URL, k.Key, func() {
		srv.Close()
		cancel()
		<-done
		<-done
		<-done
		tl.Close()
		proj.Close()
		store.Close()
	}
}

// eventstoreFeed yields the number of handoff events in each page of the
// store's feed.
func eventstoreFeed(s *bolt.Store) func(func(int, error) bool) {
	return func(yield func(int, error) bool) {
		for page, err := range feedPages(s) {
			n := 0
			for _, ev := range page {
				if _, _, ok := translog.Leaf(ev); ok {
					n++
				}
			}
			if !yield(n, err) {
				return
			}
		}
	}
}

func runOK(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), args, &out, &out); err != nil {
		t.Fatalf("baton %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func runBroken(t *testing.T, want error, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), args, &out, &out); !errors.Is(err, want) {
		t.Fatalf("baton %s = %v, want %v\n%s", strings.Join(args, " "), err, want, out.String())
	}
	return out.String()
}

// rewriteHandoff rewrites a handoff's whole stream in the data file as
// someone holding the file would: the objective changed, then every
// chain hash recomputed and every record's checksum fixed, so that the
// store check and baton ledger verify both pass.
func rewriteHandoff(t *testing.T, dir, id, from, to string) {
	t.Helper()
	edit := func(f func(v []byte) []byte) {
		db, err := bbolt.Open(filepath.Join(dir, bolt.FileName), 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		err = db.Update(func(tx *bbolt.Tx) error {
			b := tx.Bucket([]byte("events"))
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				rec := f(bytes.Clone(v))
				if bytes.Equal(rec, v) {
					continue
				}
				body := rec[:len(rec)-4]
				binary.BigEndian.PutUint32(rec[len(rec)-4:], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
				if err := b.Put(bytes.Clone(k), rec); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	edit(func(v []byte) []byte { return bytes.ReplaceAll(v, []byte(from), []byte(to)) })
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := records.ReadHandoff(context.Background(), store, id)
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	prev, swap := domain.GenesisHash(id), map[string]string{}
	for _, r := range recs {
		c, err := domain.Canonical(id, r.Seq, r.Type, r.Actor, r.RecordedAt, r.Data)
		if err != nil {
			t.Fatal(err)
		}
		h := domain.ChainHash(prev, c)
		swap[r.Hash] = h
		prev = h
	}
	edit(func(v []byte) []byte {
		for old, h := range swap {
			v = bytes.ReplaceAll(v, []byte(old), []byte(h))
		}
		return v
	})
}

// The acceptance test of the transparency log: a handoff rewritten
// consistently in the data file passes the store check and baton ledger
// verify, but the checkpoint an auditor kept no longer holds (the first
// divergent entry named from the auditor's mirror) and the handoff's
// kept receipts fail, naming the event and its leaf.
func TestTransparencyLogCatchesAConsistentRewrite(t *testing.T) {
	dir, aud := t.TempDir(), t.TempDir()
	vkey := strings.TrimSpace(runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", filepath.Join(dir, KeyFileName)))
	ids := runHandoffs(t, dir)

	// The auditor keeps a checkpoint, a mirror and one handoff's bundle.
	url, admin, stop := serveWithLog(t, dir)
	if got := runOK(t, "log", "verify", "--url", url, "--log-key", vkey, "--old", writeCheckpoint(t, url, filepath.Join(aud, "cp0"))); !strings.Contains(got, "ok: ") {
		t.Fatal(got)
	}
	saved := writeCheckpoint(t, url, filepath.Join(aud, "saved.checkpoint"))
	if got := runOK(t, "log", "verify", "--url", url, "--log-key", vkey, "--old", saved, "--mirror", filepath.Join(aud, "mirror"), "--key", admin); !strings.Contains(got, " of the entries, each checked against its tile\n") || strings.Contains(got, "NOT KEPT") {
		t.Fatalf("mirror: %s", got)
	}
	oldBundle := filepath.Join(aud, "old.bundle")
	os.WriteFile(oldBundle, []byte(runOK(t, "ledger", "export", "--url", url, "--key", admin, ids[1])), 0o600)
	if got := runOK(t, "ledger", "verify", "--bundle", oldBundle, "--log-key", vkey); !strings.Contains(got, "ok "+ids[1]) {
		t.Fatal(got)
	}
	// The same bundle with its events taken out proves nothing, and says so.
	var emptied map[string]any
	json.Unmarshal([]byte(mustRead(t, oldBundle)), &emptied)
	emptied["events"], emptied["receipts"] = []any{}, []any{}
	emptyBundle := filepath.Join(aud, "empty.bundle")
	eb, _ := json.Marshal(emptied)
	os.WriteFile(emptyBundle, eb, 0o600)
	if got := runBroken(t, errChainBroken, "ledger", "verify", "--bundle", emptyBundle, "--log-key", vkey); !strings.Contains(got, "holds no events") {
		t.Fatal(got)
	}
	stop()
	// From the data directory, the server stopped: the same bundle.
	if got := runOK(t, "ledger", "export", "--data", dir, ids[1]); got != mustRead(t, oldBundle) {
		t.Fatalf("export from the data directory:\n%s\nthrough the API:\n%s", got, mustRead(t, oldBundle))
	}

	// The rewrite, and a log rebuilt from zero over it; new handoffs come,
	// and the operator's key signs the new log. Baton's signer signs
	// nothing over the checkpoints its key signed of the old log (they
	// are in the store): the operator signs with the key file instead.
	rewriteHandoff(t, dir, ids[1], "Rotate certificate 1", "Rotate certificate 7")
	os.Remove(filepath.Join(dir, translog.FileName))
	os.Remove(filepath.Join(dir, "readmodel.db")) // the read models too, rebuilt over the rewrite
	runOK(t, "store", "check", "--data", dir)
	if got := runOK(t, "ledger", "verify", "--data", dir); !strings.Contains(got, "0 broken") {
		t.Fatal(got)
	}
	runHandoffs(t, dir)
	signRewrittenLog(t, dir)
	url, admin, stop = serveWithLog(t, dir)
	defer stop()
	// The server itself signs nothing over its key's earlier checkpoints,
	// and says so.
	if h, err := get(context.Background(), http.DefaultClient, url, "/healthz", ""); err != nil || !strings.Contains(string(h), `"status":"degraded"`) || !strings.Contains(string(h), `"logForked":"checkpoint baton.test/log/`) {
		t.Fatalf("healthz %s %v", h, err)
	}

	// The kept checkpoint: today's log does not extend it; the mirror
	// names the entry.
	got := runBroken(t, errLogBroken, "log", "verify", "--url", url, "--log-key", vkey, "--old", saved, "--mirror", filepath.Join(aud, "mirror"), "--key", admin)
	if !strings.Contains(got, "FORK: today's log") || !strings.Contains(got, "first divergence: entry") ||
		!strings.Contains(got, fmt.Sprintf("handoff %q event 1 (%q)", ids[1], domain.EventContractCreated)) {
		t.Fatalf("log verify said:\n%s", got)
	}
	// The bundle exported today verifies alone (the operator holds the
	// key), but the receipts kept earlier fail for the rewritten event.
	newBundle := filepath.Join(aud, "new.bundle")
	os.WriteFile(newBundle, []byte(runOK(t, "ledger", "export", "--url", url, "--key", admin, ids[1])), 0o600)
	runOK(t, "ledger", "verify", "--bundle", newBundle, "--log-key", vkey)
	got = runBroken(t, errChainBroken, "ledger", "verify", "--bundle", newBundle, "--log-key", vkey, "--old", oldBundle)
	if !strings.Contains(got, fmt.Sprintf("BROKEN handoff %s: event 1, leaf ", ids[1])) || !strings.Contains(got, "the ledger was rewritten") {
		t.Fatalf("bundle verify said:\n%s", got)
	}
}

// signRewrittenLog signs, with the key file of dir, the checkpoint of the
// log of dir's store as it is now, and claims it in the store, as an
// operator rewriting the store would (the server stopped).
func signRewrittenLog(t *testing.T, dir string) {
	t.Helper()
	skey, err := os.ReadFile(filepath.Join(dir, KeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tl, err := translog.Open(filepath.Join(t.TempDir(), translog.FileName), store, translog.Options{SignerKey: string(skey)})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	ctx := context.Background()
	if err := tl.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := tl.OwnFork(); !ok {
		t.Fatal("the rewritten log holds no fork of the key's earlier checkpoints")
	}
	root, err := tl.Root(tl.Size())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tl.SignAt(ctx, translog.Checkpoint{Origin: tl.Origin(), Size: tl.Size(), Root: root}, tl.Claims()); err != nil {
		t.Fatal(err)
	}
}

// Two roots signed for one size: baton log verify reports the fork, and
// so does a bundle holding both.
func TestTwoRootsAtOneSizeAreReportedAsAFork(t *testing.T) {
	dir, aud := t.TempDir(), t.TempDir()
	vkey := strings.TrimSpace(runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", filepath.Join(dir, KeyFileName)))
	runHandoffs(t, dir)
	url, _, stop := serveWithLog(t, dir)
	defer stop()
	good := writeCheckpoint(t, url, filepath.Join(aud, "good"))
	signedGood, _ := os.ReadFile(good)
	v, _ := note.NewVerifier(vkey)
	cp, err := translog.OpenCheckpoint(signedGood, v)
	if err != nil {
		t.Fatal(err)
	}
	skey, _ := os.ReadFile(filepath.Join(dir, KeyFileName))
	signer, err := note.NewSigner(strings.TrimSpace(string(skey)))
	if err != nil {
		t.Fatal(err)
	}
	other := cp
	other.Root[3] ^= 0x40
	forged, err := note.Sign(&note.Note{Text: other.Text()}, signer)
	if err != nil {
		t.Fatal(err)
	}
	forkPath := filepath.Join(aud, "fork")
	os.WriteFile(forkPath, forged, 0o600)
	got := runBroken(t, errLogBroken, "log", "verify", "--url", url, "--log-key", vkey, "--old", forkPath)
	if !strings.Contains(got, fmt.Sprintf("FORK: both checkpoints are of size %d", cp.Size)) {
		t.Fatalf("log verify said:\n%s", got)
	}
}

func writeCheckpoint(t *testing.T, url, path string) string {
	t.Helper()
	resp, err := http.Get(url + "/v1/log/checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("checkpoint: %d %s", resp.StatusCode, b.String())
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func feedPages(s *bolt.Store) func(func([]eventstore.RecordedEvent, error) bool) {
	return eventstore.FeedPages(context.Background(), s, 1000)
}

func FuzzSplitBundle(f *testing.F) {
	f.Add([]byte("\x00\x01a\x00\x02bc"), 2)
	f.Add([]byte("\x00"), 1)
	f.Fuzz(func(t *testing.T, b []byte, w int) {
		es, err := splitBundle(b, w)
		if err != nil {
			return
		}
		n := 0
		for _, e := range es {
			n += 2 + len(e)
		}
		if len(es) != w || n != len(b) {
			t.Fatalf("%d entries of %d bytes from %d bytes, want %d", len(es), n, len(b), w)
		}
	})
}

// serve keeps the log with the key in DATA/log.key, and signs; with
// --log=false it serves none of the log's routes.
func TestServeKeepsTheLog(t *testing.T) {
	dir := t.TempDir()
	vkey := strings.TrimSpace(runOK(t, "log", "keygen", "--origin", "baton.test/serve", "--out", filepath.Join(dir, KeyFileName)))
	start := func(extra ...string) (string, string, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		var out syncBuffer
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, append([]string{"serve", "--data", dir, "--addr", "127.0.0.1:0"}, extra...), &out, &out)
		}()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(out.String(), "baton serving") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		s := out.String()
		i := strings.Index(s, `"addr":"`)
		if i < 0 {
			t.Fatalf("no address in %s", s)
		}
		addr, _, _ := strings.Cut(s[i+8:], `"`)
		key := ""
		if j := strings.Index(s, "export BATON_API_KEY="); j >= 0 {
			key, _, _ = strings.Cut(s[j+len("export BATON_API_KEY="):], "\n")
		}
		return "http://" + addr, key, func() {
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("serve: %v\n%s", err, out.String())
			}
		}
	}
	url, key, stop := start("--log-interval", "20ms")
	got, err := get(context.Background(), http.DefaultClient, url, "/v1/log/key", "")
	if err != nil || strings.TrimSpace(string(got)) != vkey {
		t.Fatalf("key %q %v", got, err)
	}
	req, _ := http.NewRequest("POST", url+"/v1/handoff/contracts", strings.NewReader(`{"objective":"Rotate certificate","targetExecutor":"ops","executorProtocol":"ops.v1","riskLevel":"low"}`))
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 201 && resp.StatusCode != 200 {
		t.Fatalf("contract: %v %v", resp, err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		cp, err := get(context.Background(), http.DefaultClient, url, "/v1/log/checkpoint", "")
		if err == nil && strings.HasPrefix(string(cp), "baton.test/serve\n1\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint of size 1: %q %v", cp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	url, _, stop = start("--log=false")
	if _, err := get(context.Background(), http.DefaultClient, url, "/v1/log/key", ""); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("with --log=false: %v", err)
	}
	stop()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--log-interval", "2s"}, &out, &out); err == nil || !strings.Contains(err.Error(), "--log-interval") {
		t.Fatalf("--log-interval 2s: %v", err)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A log ahead of its store (a store restored from an older backup) is
// moved aside and rebuilt.
func TestServeRebuildsALogAheadOfItsStore(t *testing.T) {
	dir := t.TempDir()
	runHandoffs(t, dir)
	runHandoffs(t, dir)
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := translog.Open(filepath.Join(dir, translog.FileName), store, translog.Options{})
	if err == nil {
		err = tl.CatchUp(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	tl.Close()
	store.Close()
	// The store from before: a fresh one with two handoffs.
	os.Remove(filepath.Join(dir, bolt.FileName))
	os.Remove(filepath.Join(dir, "events.journal"))
	os.Remove(filepath.Join(dir, "readmodel.db"))
	runHandoffs(t, dir)
	store, err = bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var out bytes.Buffer
	lf := logFlags{on: new(bool), keyFile: new(string), origin: new(string), interval: new(time.Duration), witnesses: new(string)}
	*lf.on, *lf.interval = true, 100*time.Millisecond
	tl, err = lf.open(context.Background(), dir, storeBolt, store, zerolog.New(&out))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	if !strings.Contains(out.String(), "moved aside and rebuilt") || tl.Size() != 10 {
		t.Fatalf("size %d, log:\n%s", tl.Size(), out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, translog.FileName+".ahead")); err != nil {
		t.Fatal(err)
	}
}

// A new log key (operations.md, Backups: after a restore) makes a new
// log: serve starts, moving aside the file whose checkpoints the old key
// signed, and rebuilds it.
func TestServeStartsWithANewLogKey(t *testing.T) {
	dir := t.TempDir()
	runHandoffs(t, dir)
	runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", filepath.Join(dir, KeyFileName))
	_, _, stop := serveWithLog(t, dir) // signs a checkpoint of the log
	stop()
	newKey := filepath.Join(t.TempDir(), "new.key")
	runOK(t, "log", "keygen", "--origin", "baton.test/log-2", "--out", newKey)
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var out bytes.Buffer
	lf := logFlags{on: new(bool), keyFile: new(string), origin: new(string), interval: new(time.Duration), witnesses: new(string)}
	*lf.on, *lf.keyFile, *lf.interval = true, newKey, 100*time.Millisecond
	tl, err := lf.open(context.Background(), dir, storeBolt, store, zerolog.New(&out))
	if err != nil {
		t.Fatalf("serve with a new key: %v", err)
	}
	defer tl.Close()
	if n, f := tl.Forks(); n != 0 || tl.Size() != 10 || tl.Origin() != "baton.test/log-2" {
		t.Fatalf("size %d, %d forks (%s), log:\n%s", tl.Size(), n, f, out.String())
	}
	aside := filepath.Join(dir, translog.FileName+".another-key")
	first, err := os.ReadFile(aside)
	if err != nil {
		t.Fatal(err)
	}
	// The new key signs a checkpoint, as a server would.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { tl.Run(ctx); done <- struct{}{} }()
	go func() { tl.RunSigner(ctx); done <- struct{}{} }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if signed, _ := tl.Checkpoint(); signed != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the new key signed no checkpoint")
		}
	}
	cancel()
	<-done
	<-done
	tl.Close()

	// Another key again: the first key's file moved aside stays as it was
	// (its checkpoints are what an auditor holds the operator to); the
	// second key's goes beside it.
	third := filepath.Join(t.TempDir(), "third.key")
	runOK(t, "log", "keygen", "--origin", "baton.test/log-3", "--out", third)
	*lf.keyFile = third
	out.Reset()
	tl, err = lf.open(context.Background(), dir, storeBolt, store, zerolog.New(&out))
	if err != nil {
		t.Fatalf("serve with a third key: %v", err)
	}
	defer tl.Close()
	if again, err := os.ReadFile(aside); err != nil || !bytes.Equal(again, first) {
		t.Fatalf("the first file moved aside was replaced (%v); log:\n%s", err, out.String())
	}
	if _, err := os.Stat(aside + ".1"); err != nil || !strings.Contains(out.String(), aside+".1") {
		t.Fatalf("the second file moved aside: %v; log:\n%s", err, out.String())
	}
	tl.Close()

	// Back to the first key, the store as it signed it: its checkpoint,
	// in the file moved aside, is held, and it starts.
	*lf.keyFile = ""
	if tl, err = lf.open(context.Background(), dir, storeBolt, store, zerolog.New(&out)); err != nil {
		t.Fatalf("serve with the first key again: %v", err)
	}
	tl.Close()
}

// A quorum of witnesses: a bundle whose checkpoint a configured witness
// cosigned (through POST /v1/log/cosignature) verifies with a quorum of
// one, not of two; so does today's checkpoint in baton log verify.
func TestWitnessQuorum(t *testing.T) {
	dir, aud := t.TempDir(), t.TempDir()
	vkey := strings.TrimSpace(runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", filepath.Join(dir, KeyFileName)))
	w1, w2 := newWitness(t, "w1.example"), newWitness(t, "w2.example")
	serveWitnesses = []string{w1.VKey, w2.VKey}
	defer func() { serveWitnesses = nil }()
	ids := runHandoffs(t, dir)
	url, admin, stop := serveWithLog(t, dir)
	defer stop()
	signed, err := get(context.Background(), http.DefaultClient, url, "/v1/log/checkpoint", "")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]string{"checkpoint": string(w1.Cosign(signed))})
	resp, err := http.Post(url+"/v1/log/cosignature", "application/json", bytes.NewReader(body))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("cosignature: %v %v", resp, err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cp, _ := get(context.Background(), http.DefaultClient, url, "/v1/log/checkpoint", "")
		if strings.Contains(string(cp), "— w1.example ") {
			os.WriteFile(filepath.Join(aud, "cp"), cp, 0o600)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cosignature is not served: %q", cp)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b := filepath.Join(aud, "trail.bundle")
	os.WriteFile(b, []byte(runOK(t, "ledger", "export", "--url", url, "--key", admin, ids[0])), 0o600)
	runOK(t, "ledger", "verify", "--bundle", b, "--log-key", vkey, "--witness", w1.VKey, "--witness", w2.VKey, "--witness-quorum", "1")
	got := runBroken(t, errChainBroken, "ledger", "verify", "--bundle", b, "--log-key", vkey, "--witness", w1.VKey, "--witness", w2.VKey, "--witness-quorum", "2")
	if !strings.Contains(got, "1 of the witnesses cosigned it, 2 required") {
		t.Fatalf("quorum 2 said:\n%s", got)
	}
	runOK(t, "log", "verify", "--url", url, "--log-key", vkey, "--old", filepath.Join(aud, "cp"), "--witness", w1.VKey, "--witness-quorum", "1")
	got = runBroken(t, errLogBroken, "log", "verify", "--url", url, "--log-key", vkey, "--old", filepath.Join(aud, "cp"), "--witness", w1.VKey, "--witness", w2.VKey, "--witness-quorum", "2")
	if !strings.Contains(got, "2 required") {
		t.Fatalf("log verify, quorum 2 said:\n%s", got)
	}
}

func newWitness(t *testing.T, name string) *translogtest.Witness {
	w, err := translogtest.NewWitness(name)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// store check recomputes the log file's hashes from its entries: a leaf
// hash changed on disk, which the server would serve in its tiles against
// the signed root, is named, and the check fails.
func TestStoreCheckCatchesAChangedLogFile(t *testing.T) {
	dir := t.TempDir()
	runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", filepath.Join(dir, KeyFileName))
	runHandoffs(t, dir)
	_, _, stop := serveWithLog(t, dir)
	stop()
	if got := runOK(t, "store", "check", "--data", dir); !strings.Contains(got, "translog.db: ok, ") || !strings.Contains(got, " entries, every hash recomputed from its entry") {
		t.Fatalf("store check: %s", got)
	}
	db, err := bbolt.Open(filepath.Join(dir, translog.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("hashes"))
		k := binary.BigEndian.AppendUint64(nil, uint64(tlog.StoredHashIndex(0, 3)))
		v := append([]byte(nil), b.Get(k)...)
		v[0] ^= 1
		return b.Put(k, v)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = run(context.Background(), []string{"store", "check", "--data", dir}, &out, &out)
	if !errors.Is(err, translog.ErrCorruptLog) || !strings.Contains(err.Error(), "level 0, index 3") {
		t.Fatalf("store check of a changed log file: %v\n%s", err, out.String())
	}
}

// A log file another process holds (a replica on KurrentDB serving this
// --data, beside the embedded store migrated from) is said to be held:
// store check took the lock's timeout for a damaged file, and said to move
// the sound file aside.
func TestStoreCheckOfAHeldLogFile(t *testing.T) {
	dir := t.TempDir()
	runOK(t, "keys", "create", "--data", dir, "--tenant", "acme")
	db, err := bbolt.Open(filepath.Join(dir, translog.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out bytes.Buffer
	err = run(context.Background(), []string{"store", "check", "--data", dir}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "held by another process") || strings.Contains(err.Error(), "aside") {
		t.Fatalf("store check of a held log file: %v\n%s", err, out.String())
	}
}

// A --log-key that is not a verifier key says what it is: the signing key
// (a secret, pasted where the public key goes), or the error GET
// /v1/log/key answered (a server without a log key), which the README's
// $(curl .../v1/log/key) passes on. Both were "--log-key: malformed
// verifier id".
func TestLogKeyThatIsNoVerifierKey(t *testing.T) {
	skey, _, err := translog.GenerateKey("baton.test/log", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b, cp := filepath.Join(dir, "trail.bundle"), filepath.Join(dir, "kept.checkpoint")
	os.WriteFile(b, []byte("{}"), 0o600)
	os.WriteFile(cp, []byte("x\n"), 0o600)
	problem := `{"type":"urn:baton:problem:no_log_key","title":"Not Found","status":404,"code":"no_log_key","detail":"This server has no transparency log key."}`
	for key, want := range map[string]string{skey: "signing key, a secret", problem: "no_log_key"} {
		for _, args := range [][]string{
			{"ledger", "verify", "--bundle", b, "--log-key", key},
			{"log", "verify", "--url", "http://127.0.0.1:1", "--old", cp, "--log-key", key},
		} {
			var out bytes.Buffer
			err := run(context.Background(), args, &out, &out)
			if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "PRIVATE+KEY+baton") {
				t.Errorf("%s %s --log-key %.20q: %v; want %q", args[0], args[1], key, err, want)
			}
		}
	}
}

// log keygen refuses an origin the server refuses at its start (a control
// character, one too long for a checkpoint): it wrote the key, which is
// never overwritten, and printed its verifier key to publish, for a log
// that could not start.
func TestLogKeygenRefusesAnOriginServeRefuses(t *testing.T) {
	for _, origin := range []string{"bad\x07origin", strings.Repeat("a", 5000), "bad\xffutf8"} {
		out := filepath.Join(t.TempDir(), "log.key")
		var buf bytes.Buffer
		err := run(context.Background(), []string{"log", "keygen", "--origin", origin, "--out", out}, &buf, &buf)
		if err == nil || !strings.Contains(err.Error(), "--origin") {
			t.Errorf("origin %.20q: %v, want --origin refused", origin, err)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("origin %.20q: the key was written", origin)
		}
	}
}

// An empty bundle (what '> trail.bundle' leaves of an export that failed)
// is said to be empty, not "bundle: EOF".
func TestLedgerVerifySaysABundleIsEmpty(t *testing.T) {
	_, vkey, err := translog.GenerateKey("baton.test/log", nil)
	if err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(t.TempDir(), "trail.bundle")
	os.WriteFile(b, nil, 0o600)
	var out bytes.Buffer
	err = run(context.Background(), []string{"ledger", "verify", "--bundle", b, "--log-key", vkey}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "is empty") || !strings.Contains(err.Error(), "ledger export") {
		t.Fatalf("err = %v", err)
	}
}

// An empty --out is refused by name: it said "--out: open : no such file
// or directory (a key is never overwritten)".
func TestLogKeygenRefusesAnEmptyOut(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"log", "keygen", "--origin", "baton.test/log", "--out", ""}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "--out is empty") {
		t.Fatalf("err = %v", err)
	}
}

// A witness key given twice is one witness (a verifier counting it twice
// found the checkpoint's signatures "ambiguous").
func TestWitnessGivenTwiceIsOne(t *testing.T) {
	var s stringsFlag
	for _, v := range []string{"w1+00000001+AQ", "w2+00000002+AQ", "w1+00000001+AQ"} {
		s.Set(v)
	}
	if len(s) != 2 {
		t.Fatalf("%v", s)
	}
}

// A handoff's ledger over 64 MiB (many large proofs) is exported whole:
// a bundle may be up to 256 MiB (translog.MaxBundleSize), and the
// answer was cut at 64 MiB, failing with "unexpected end of JSON input".
func TestLedgerExportReadsALargeLedger(t *testing.T) {
	ev := `{"seq":%d,"type":"ProofReceived","data":{"output":"` + strings.Repeat("x", 1<<20) + `"},"actor":"a","recordedAt":"2026-11-28T00:00:00Z","prevHash":"p","hash":"h"}`
	const events = 65
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/receipts") {
			fmt.Fprint(w, `{"receipts":[]}`)
			return
		}
		fmt.Fprint(w, `{"events":[`)
		for i := 1; i <= events; i++ {
			if i > 1 {
				fmt.Fprint(w, ",")
			}
			fmt.Fprintf(w, ev, i)
		}
		fmt.Fprint(w, `]}`)
	}))
	defer srv.Close()
	var out countingWriter
	if err := run(context.Background(), []string{"ledger", "export", "--url", srv.URL, "--key", "k", "--wait", "0s", "h1"}, &out, &out); err != nil {
		t.Fatalf("export of a %d MiB ledger: %v", events, err)
	}
	if out < events<<20 {
		t.Fatalf("a bundle of %d bytes", out)
	}
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// The log may have read an event the ledger's read did not show yet (each
// follows the feed on its own): the export leaves out its receipt, as it
// does the event, and the bundle stays one that ledger verify reads.
func TestLedgerExportLeavesOutReceiptsBeyondTheLedger(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/receipts") {
			fmt.Fprint(w, `{"handoffId":"h1","logSize":3,"receipts":[{"seq":1,"leafIndex":0},{"seq":2,"leafIndex":1},{"seq":3,"leafIndex":2}]}`)
			return
		}
		fmt.Fprint(w, `{"events":[{"seq":1,"type":"ContractCreated","data":{},"actor":"a","recordedAt":"2026-11-28T00:00:00Z","prevHash":"p","hash":"h"},`+
			`{"seq":2,"type":"ApprovalDecided","data":{},"actor":"a","recordedAt":"2026-11-28T00:00:01Z","prevHash":"h","hash":"i"}]}`)
	}))
	defer srv.Close()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"ledger", "export", "--url", srv.URL, "--key", "k", "--wait", "0s", "h1"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	b, err := translog.ReadBundle(&out)
	if err != nil {
		t.Fatalf("the exported bundle does not read: %v", err)
	}
	if len(b.Events) != 2 || len(b.Receipts) != 2 {
		t.Fatalf("%d events, %d receipts", len(b.Events), len(b.Receipts))
	}
}

// Replicas follow the store apart: the checkpoint an auditor kept from one
// may be newer than the one another serves a moment later. That is no
// removal: the kept checkpoint extends today's, which the server's tiles
// prove. A kept checkpoint that does not extend it is still a fork.
func TestLogVerifyTakesAnOlderCheckpointOfABehindReplica(t *testing.T) {
	dir, aud := t.TempDir(), t.TempDir()
	vkey := strings.TrimSpace(runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", filepath.Join(dir, KeyFileName)))
	runHandoffs(t, dir)
	skey, _ := os.ReadFile(filepath.Join(dir, KeyFileName))
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tl, err := translog.Open(filepath.Join(dir, translog.FileName), store, translog.Options{SignerKey: string(skey)})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	ctx := context.Background()
	if err := tl.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	sign := func(size int64, claims uint64, flip bool) []byte {
		root, err := tl.Root(size)
		if err != nil {
			t.Fatal(err)
		}
		if flip {
			root[0] ^= 1
		}
		signed, err := tl.SignAt(ctx, translog.Checkpoint{Origin: tl.Origin(), Size: size, Root: root}, claims)
		if err != nil {
			t.Fatal(err)
		}
		return signed
	}
	older, newer, forked := sign(6, 0, false), sign(10, 1, false), sign(10, 2, true)
	tiles := batonhttp.NewServer(batonhttp.Config{Store: store, Log: zerolog.Nop(), TransparencyLog: tl}).Handler()
	// The replica behind: its tree holds the 10 entries, its checkpoint
	// is the one of 6 it read before the claim of 10.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/log/checkpoint" {
			w.Write(older)
			return
		}
		tiles.ServeHTTP(w, r)
	}))
	defer srv.Close()
	kept := filepath.Join(aud, "kept")
	os.WriteFile(kept, newer, 0o600)
	if got := runOK(t, "log", "verify", "--url", srv.URL, "--log-key", vkey, "--old", kept); !strings.Contains(got, "ok: ") {
		t.Fatal(got)
	}
	os.WriteFile(kept, forked, 0o600)
	if got := runBroken(t, errLogBroken, "log", "verify", "--url", srv.URL, "--log-key", vkey, "--old", kept); !strings.Contains(got, "FORK") {
		t.Fatal(got)
	}
}

// A restored backup with the key that signed past it: the log file found
// ahead of the store holds a checkpoint the restored store's log cannot
// reach with the same entries. Signing again with that key would sign a
// second tree of one log, so serve refuses, naming the new key to make
// (operations.md, Backups); with a new key it starts.
func TestServeRefusesToForkTheLogAfterARestore(t *testing.T) {
	dir := t.TempDir()
	runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", filepath.Join(dir, KeyFileName))
	runHandoffs(t, dir)
	runHandoffs(t, dir)
	_, _, stop := serveWithLog(t, dir) // signs the 20 entries
	stop()
	// The backup restored: a store of one run of handoffs, other entries.
	os.Remove(filepath.Join(dir, bolt.FileName))
	os.Remove(filepath.Join(dir, "events.journal"))
	os.Remove(filepath.Join(dir, "readmodel.db"))
	runHandoffs(t, dir)
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	lf := logFlags{on: new(bool), keyFile: new(string), origin: new(string), interval: new(time.Duration), witnesses: new(string)}
	*lf.on, *lf.interval = true, 100*time.Millisecond
	tl, err := lf.open(context.Background(), dir, storeBolt, store, zerolog.Nop())
	if err == nil {
		tl.Close()
		t.Fatal("serve signs with the key of a checkpoint the restored log does not reach")
	}
	if !strings.Contains(err.Error(), "new log key") {
		t.Fatal(err)
	}
	// And again at the next start with that key.
	if tl, err = lf.open(context.Background(), dir, storeBolt, store, zerolog.Nop()); err == nil {
		tl.Close()
		t.Fatal("the second start signs with the key")
	}
	*lf.keyFile = filepath.Join(t.TempDir(), "new.key")
	runOK(t, "log", "keygen", "--origin", "baton.test/log-2", "--out", *lf.keyFile)
	if tl, err = lf.open(context.Background(), dir, storeBolt, store, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	tl.Close()
}

// A restore, then translog.db deleted (or lost with its disk, or moved
// aside files cleaned up): the log is rebuilt from a store that no longer
// holds what the key signed past the backup, and only translog.signed,
// which outlives the log's file, tells. The start refuses the key; it
// signed the restored log, a second tree under the key.
func TestServeRefusesToForkTheLogAfterARestoreWithoutItsFile(t *testing.T) {
	dir := t.TempDir()
	runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", filepath.Join(dir, KeyFileName))
	runHandoffs(t, dir)
	runHandoffs(t, dir)
	_, _, stop := serveWithLog(t, dir) // signs the 20 entries
	stop()
	if _, err := os.Stat(filepath.Join(dir, translog.SignedFileName)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{bolt.FileName, "events.journal", "readmodel.db", translog.FileName, logMarker} {
		os.Remove(filepath.Join(dir, name))
	}
	runHandoffs(t, dir) // the backup: one run of handoffs, other entries
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	lf := logFlags{on: new(bool), keyFile: new(string), origin: new(string), interval: new(time.Duration), witnesses: new(string)}
	*lf.on, *lf.interval = true, 100*time.Millisecond
	tl, err := lf.open(context.Background(), dir, storeBolt, store, zerolog.Nop())
	if err == nil {
		tl.Close()
		t.Fatal("serve signs with the key of a checkpoint the rebuilt log does not hold")
	}
	if !strings.Contains(err.Error(), translog.SignedFileName) || !strings.Contains(err.Error(), "new log key") {
		t.Fatal(err)
	}
	// A new key of the old origin would sign a second tree of that log.
	*lf.keyFile = filepath.Join(t.TempDir(), "same-origin.key")
	runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", *lf.keyFile)
	if tl, err = lf.open(context.Background(), dir, storeBolt, store, zerolog.Nop()); err == nil {
		tl.Close()
		t.Fatal("a new key of the old origin signs the restored log")
	} else if !strings.Contains(err.Error(), "needs a new origin") {
		t.Fatal(err)
	}
	// A new key and origin is a new log.
	*lf.keyFile = filepath.Join(t.TempDir(), "new.key")
	runOK(t, "log", "keygen", "--origin", "baton.test/log-2", "--out", *lf.keyFile)
	if tl, err = lf.open(context.Background(), dir, storeBolt, store, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	tl.Close()
}

// A restart on the store the key signed, translog.db deleted, rebuilds the
// log and signs on: the recorded checkpoint is held.
func TestServeRebuildsTheLogOverTheStoreItSigned(t *testing.T) {
	dir := t.TempDir()
	runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", filepath.Join(dir, KeyFileName))
	runHandoffs(t, dir)
	_, _, stop := serveWithLog(t, dir)
	stop()
	os.Remove(filepath.Join(dir, translog.FileName))
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	lf := logFlags{on: new(bool), keyFile: new(string), origin: new(string), interval: new(time.Duration), witnesses: new(string)}
	*lf.on, *lf.interval = true, 100*time.Millisecond
	tl, err := lf.open(context.Background(), dir, storeBolt, store, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	tl.Close()
}

// failingCatchUp is a store whose feed reads fail (a start killed, or its
// context ended, while the log is rebuilt); the store's identity, one
// event read alone, is still read.
type failingCatchUp struct{ eventstore.Store }

func (s failingCatchUp) ReadAll(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	if limit == 1 {
		return s.Store.ReadAll(ctx, after, limit)
	}
	return nil, context.Canceled
}

// A start after a restore that ends while the log is rebuilt (killed,
// a signal, a store that stops answering) leaves the file that holds the
// key's checkpoint where the next start finds it: that start refuses the
// key as the first would have. The rebuilt file was in its place, at the
// store's head, so the next start went on with it and signed the restored
// log, a second tree under the key.
func TestServeRefusesToForkTheLogAfterAnInterruptedStart(t *testing.T) {
	dir := t.TempDir()
	runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", filepath.Join(dir, KeyFileName))
	runHandoffs(t, dir)
	runHandoffs(t, dir)
	_, _, stop := serveWithLog(t, dir) // signs the 20 entries
	stop()
	os.Remove(filepath.Join(dir, bolt.FileName))
	os.Remove(filepath.Join(dir, "events.journal"))
	os.Remove(filepath.Join(dir, "readmodel.db"))
	runHandoffs(t, dir)
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	lf := logFlags{on: new(bool), keyFile: new(string), origin: new(string), interval: new(time.Duration), witnesses: new(string)}
	*lf.on, *lf.interval = true, 100*time.Millisecond
	if tl, err := lf.open(context.Background(), dir, storeBolt, failingCatchUp{store}, zerolog.Nop()); err == nil {
		tl.Close()
		t.Fatal("the start whose rebuild failed went on")
	}
	tl, err := lf.open(context.Background(), dir, storeBolt, store, zerolog.Nop())
	if err == nil {
		tl.Close()
		t.Fatal("the start after an interrupted one signs with the key of a checkpoint the restored log does not reach")
	}
	if !strings.Contains(err.Error(), "new log key") {
		t.Fatal(err)
	}
}

// A restore, a start without the key (which cannot check the file's
// checkpoint as its own), then a start with it: the checkpoint the key
// signed past the restored store is still known, and the key signs
// nothing over the restored log (its own fork). The keyless start moved
// the file aside with nothing kept of it, and the next start signed.
func TestServeWithTheKeyAfterAKeylessStartAfterARestore(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, KeyFileName)
	runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", keyFile)
	runHandoffs(t, dir)
	runHandoffs(t, dir)
	_, _, stop := serveWithLog(t, dir) // signs the 20 entries
	stop()
	os.Remove(filepath.Join(dir, bolt.FileName))
	os.Remove(filepath.Join(dir, "events.journal"))
	os.Remove(filepath.Join(dir, "readmodel.db"))
	runHandoffs(t, dir)
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	lf := logFlags{on: new(bool), keyFile: new(string), origin: new(string), interval: new(time.Duration), witnesses: new(string)}
	*lf.on, *lf.interval = true, 100*time.Millisecond
	if err := os.Rename(keyFile, keyFile+".away"); err != nil {
		t.Fatal(err)
	}
	tl, err := lf.open(context.Background(), dir, storeBolt, store, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	tl.Close()
	if err := os.Rename(keyFile+".away", keyFile); err != nil {
		t.Fatal(err)
	}
	tl, err = lf.open(context.Background(), dir, storeBolt, store, zerolog.Nop())
	if err != nil {
		return // refused: as good
	}
	defer tl.Close()
	if f, own := tl.OwnFork(); !own || f.Checkpoint.Size != 20 {
		t.Fatalf("the start with the key after a keyless one: OwnFork() = %+v, %v; it signs the restored log", f, own)
	}
}

// ledger export --data reads the log file and leaves it as it was: it
// holds no key, and a keyless read of the store's claims cannot tell a
// checkpoint this key signed over another tree (a fork of the key) from
// any other. It read the feed on into the server's file, past such a
// claim, which the next serve with the key then never read: it signed
// over the fork instead of stopping.
func TestLedgerExportLeavesTheLogFileAsItWas(t *testing.T) {
	dir := t.TempDir()
	runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", filepath.Join(dir, KeyFileName))
	ids := runHandoffs(t, dir)
	_, _, stop := serveWithLog(t, dir)
	stop()
	// While the server is stopped, the store gets a claim of the key over
	// another root (the store's events changed after they were signed).
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	skey, _ := os.ReadFile(filepath.Join(dir, KeyFileName))
	tl, err := translog.Open(filepath.Join(t.TempDir(), translog.FileName), store, translog.Options{SignerKey: string(skey)})
	if err == nil {
		err = tl.CatchUp(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tl.SignAt(context.Background(), translog.Checkpoint{Origin: tl.Origin(), Size: tl.Size(), Root: tlog.RecordHash([]byte("another tree"))}, tl.Claims()); err != nil {
		t.Fatal(err)
	}
	tl.Close()
	store.Close()
	before := mustRead(t, filepath.Join(dir, translog.FileName))
	runOK(t, "ledger", "export", "--data", dir, ids[0])
	if mustRead(t, filepath.Join(dir, translog.FileName)) != before {
		t.Error("ledger export --data changed the log file")
	}
	store, err = bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	lf := logFlags{on: new(bool), keyFile: new(string), origin: new(string), interval: new(time.Duration), witnesses: new(string)}
	*lf.on, *lf.interval = true, 100*time.Millisecond
	if tl, err = lf.open(context.Background(), dir, storeBolt, store, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	if _, own := tl.OwnFork(); !own {
		t.Fatal("serve after ledger export --data does not know of the fork of its key: it signs over it")
	}
}

// Only a bundle the server cannot serve (422 entry_too_large) is left out
// of the mirror on a NOT KEPT line: a key the server refuses keeps no
// entry at all, and says so rather than ending ok.
func TestLogVerifyMirrorWithARefusedKeyFails(t *testing.T) {
	dir, aud := t.TempDir(), t.TempDir()
	vkey := strings.TrimSpace(runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", filepath.Join(dir, KeyFileName)))
	runHandoffs(t, dir)
	url, _, stop := serveWithLog(t, dir)
	defer stop()
	kept := writeCheckpoint(t, url, filepath.Join(aud, "kept"))
	var out bytes.Buffer
	err := run(context.Background(), []string{"log", "verify", "--url", url, "--log-key", vkey, "--old", kept, "--mirror", filepath.Join(aud, "mirror"), "--key", "btn_sk_not_a_key"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("log verify with a refused key: %v\n%s", err, out.String())
	}
}

// An origin other than the signing key's name is warned of at the start:
// verifiers find the key by the origin (C2SP tlog-checkpoint) and refuse
// such checkpoints. The key's own name is not.
func TestServeWarnsOfAnOriginThatIsNotTheKeysName(t *testing.T) {
	dir := t.TempDir()
	runHandoffs(t, dir)
	key := filepath.Join(dir, KeyFileName)
	runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", key)
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, c := range []struct {
		origin string
		warns  bool
	}{{"", false}, {"baton.test/log", false}, {"baton.test/other", true}} {
		var out bytes.Buffer
		lf := logFlags{on: new(bool), keyFile: new(string), origin: new(string), interval: new(time.Duration), witnesses: new(string)}
		*lf.on, *lf.keyFile, *lf.origin, *lf.interval = true, key, c.origin, 100*time.Millisecond
		tl, err := lf.open(context.Background(), dir, storeBolt, store, zerolog.New(&out))
		if err != nil {
			t.Fatalf("origin %q: %v", c.origin, err)
		}
		tl.Close()
		if warned := strings.Contains(out.String(), "the origin is not the signing key's name"); warned != c.warns {
			t.Fatalf("origin %q: warned %v, want %v; log:\n%s", c.origin, warned, c.warns, out.String())
		}
	}
}

// The reproduction with the real binary: a restore, a start with a new
// key (which moves the old key's file aside, holding the checkpoint the
// old key signed past the restored store), then a start with the old key
// again. That start must not sign the restored log under the old key: it
// signed 3 entries, then 6, then, over the restored store, another tree
// of 6 (checked here as an auditor would, from the served tiles with
// golang.org/x/mod/sumdb/tlog). It is refused, naming the file.
func TestServeWithTheOldKeyAfterANewKeyAfterARestore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildCommand(t, t.TempDir(), ".")
	dir, backup := t.TempDir(), t.TempDir()
	runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", filepath.Join(dir, KeyFileName))
	serve := func(name string, args ...string) (*proc, string) {
		p := startProc(t, name, bin, append([]string{"serve", "--data", dir, "--addr", "127.0.0.1:0", "--log-interval", "20ms"}, args...)...)
		return p, "http://" + p.await(reServing, 30*time.Second)[1]
	}
	client := &http.Client{Timeout: 10 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	api := &apiClient{t: t, c: client}
	create := func(base string, n int) {
		for i := 0; i < n; i++ {
			r := api.do("POST", base+"/v1/handoff/contracts", map[string]any{"objective": fmt.Sprintf("Rotate certificate %d", i), "targetExecutor": "ops", "executorProtocol": "ops.v1", "riskLevel": "low"})
			if r.status != 201 {
				t.Fatalf("create: %d %s", r.status, r.raw)
			}
		}
	}
	// checkpoint waits for a checkpoint of at least size entries.
	checkpoint := func(base string, size int64) translog.Checkpoint {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			r := api.do("GET", base+"/v1/log/checkpoint", nil)
			if cp, err := translog.ParseCheckpoint(string(r.raw[:bytes.Index(r.raw, []byte("\n\n"))+1])); r.status == 200 && err == nil && cp.Size >= size {
				return cp
			}
			if time.Now().After(deadline) {
				t.Fatalf("no checkpoint of %d entries: %d %s", size, r.status, r.raw)
			}
		}
	}
	copyFiles := func(from, to string) {
		for _, f := range []string{bolt.FileName, "events.journal"} {
			b, err := os.ReadFile(filepath.Join(from, f))
			if err == nil {
				err = os.WriteFile(filepath.Join(to, f), b, 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}

	p, base := serve("first")
	api.key = p.await(reBootKey, 10*time.Second)[1]
	create(base, 3)
	checkpoint(base, 3)
	p.stop()
	copyFiles(dir, backup)
	p, base = serve("second")
	create(base, 3)
	six := checkpoint(base, 6)
	p.stop()
	copyFiles(backup, dir)
	newKey := filepath.Join(dir, "log2.key")
	runOK(t, "log", "keygen", "--origin", "baton.test/log2", "--out", newKey)
	p, _ = serve("new key", "--log-key-file", newKey)
	p.stop()

	p = startProc(t, "old key", bin, "serve", "--data", dir, "--addr", "127.0.0.1:0", "--log-interval", "20ms")
	for deadline := time.Now().Add(30 * time.Second); !reServing.MatchString(p.output()); time.Sleep(20 * time.Millisecond) {
		select {
		case <-p.done:
			if p.err == nil || !strings.Contains(p.output(), translog.FileName+".another-key, moved aside, holds a checkpoint this key signed, 6 entries") {
				t.Fatalf("the start with the old key exited (%v) for another reason:\n%s", p.err, p.output())
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the start with the old key neither served nor exited:\n%s", p.output())
		}
	}
	base = "http://" + p.await(reServing, time.Second)[1]
	create(base, 3)
	now := checkpoint(base, 6)
	tiles := tlog.TileHashReader(tlog.Tree{N: now.Size, Hash: now.Root}, auditorTiles{t: t, api: api, base: base})
	root, err := tlog.TreeHash(six.Size, tiles)
	if err != nil {
		t.Fatal(err)
	}
	if root != six.Root {
		t.Fatalf("the old key signed %d entries with root %s, then, after the restore, a tree of %d whose first %d have root %s: a fork", six.Size, six.Root, now.Size, six.Size, root)
	}
}

// auditorTiles reads a server's tiles (C2SP tlog-tiles, height 8) for tlog.
type auditorTiles struct {
	t    *testing.T
	api  *apiClient
	base string
}

func (h auditorTiles) Height() int { return 8 }

func (h auditorTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, tl := range tiles {
		r := h.api.do("GET", h.base+"/v1/log/"+strings.Replace(tl.Path(), "tile/8/", "tile/", 1), nil)
		if r.status != 200 {
			return nil, fmt.Errorf("tile %s: %d %s", tl.Path(), r.status, r.raw)
		}
		out[i] = r.raw
	}
	return out, nil
}

func (h auditorTiles) SaveTiles([]tlog.Tile, [][]byte) {}

// A restored backup that has grown past the log's position before the
// log's next start (a start with --log=false wrote to it): its head no
// longer shows the log ahead, but the store no longer holds the log's
// last entry. The log went on from its position over other events, under
// the checkpoint of entries the store lost, and a rebuild from zero signed
// another tree of the same size with the key. It is now taken as ahead of
// the store: the start with the key that signed past the backup is refused.
func TestServeRefusesALogTheRestoredStoreGrewPast(t *testing.T) {
	dir, backup := t.TempDir(), t.TempDir()
	runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", filepath.Join(dir, KeyFileName))
	runHandoffs(t, dir)
	copyFile := func(from, to, name string) {
		b, err := os.ReadFile(filepath.Join(from, name))
		if err == nil {
			err = os.WriteFile(filepath.Join(to, name), b, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	copyFile(dir, backup, bolt.FileName)
	copyFile(dir, backup, "events.journal")
	runHandoffs(t, dir)
	_, _, stop := serveWithLog(t, dir) // signs the 20 entries
	stop()
	copyFile(backup, dir, bolt.FileName)
	copyFile(backup, dir, "events.journal")
	os.Remove(filepath.Join(dir, "readmodel.db"))
	for range 3 {
		runHandoffs(t, dir) // past the log's position
	}
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	lf := logFlags{on: new(bool), keyFile: new(string), origin: new(string), interval: new(time.Duration), witnesses: new(string)}
	*lf.on, *lf.interval = true, 100*time.Millisecond
	tl, err := lf.open(context.Background(), dir, storeBolt, store, zerolog.Nop())
	if err == nil {
		signed, cp := tl.Checkpoint()
		tl.Close()
		t.Fatalf("the start with the key went on with the log of the store before the restore (%d entries, checkpoint %d: %s)", tl.Size(), cp.Size, signed)
	}
	if !strings.Contains(err.Error(), "new log key") {
		t.Fatal(err)
	}
}

// After a restore, a new key of the old key's origin (baton log keygen
// without --origin names the key after the host, as the old one may have
// been): it signed the restored log under the name the old key had signed
// a longer tree of, a second tree of one log for every verifier that
// knows the log by its origin. It is refused, asking for a new origin; a
// new key with a new origin starts.
func TestServeRefusesANewKeyOfTheOldOriginAfterARestore(t *testing.T) {
	dir := t.TempDir()
	runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", filepath.Join(dir, KeyFileName))
	runHandoffs(t, dir)
	runHandoffs(t, dir)
	_, _, stop := serveWithLog(t, dir) // signs the 20 entries
	stop()
	os.Remove(filepath.Join(dir, bolt.FileName))
	os.Remove(filepath.Join(dir, "events.journal"))
	os.Remove(filepath.Join(dir, "readmodel.db"))
	runHandoffs(t, dir)
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	lf := logFlags{on: new(bool), keyFile: new(string), origin: new(string), interval: new(time.Duration), witnesses: new(string)}
	*lf.on, *lf.interval = true, 100*time.Millisecond
	*lf.keyFile = filepath.Join(t.TempDir(), "same-origin.key")
	runOK(t, "log", "keygen", "--origin", "baton.test/log", "--out", *lf.keyFile)
	tl, err := lf.open(context.Background(), dir, storeBolt, store, zerolog.Nop())
	if err == nil {
		tl.Close()
		t.Fatal("a new key of the old key's origin signs the restored log")
	}
	if !strings.Contains(err.Error(), "new origin") {
		t.Fatal(err)
	}
	*lf.keyFile = filepath.Join(t.TempDir(), "new.key")
	runOK(t, "log", "keygen", "--origin", "baton.test/log-2", "--out", *lf.keyFile)
	if tl, err = lf.open(context.Background(), dir, storeBolt, store, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	tl.Close()
}

// A server without a log key, where nothing was ever signed, is told at
// once: export waited the whole --wait, then wrote a bundle with no proof
// that no key verifies.
func TestLedgerExportFromAServerWithoutALogKey(t *testing.T) {
	dir := t.TempDir()
	ids := fillStore(t, dir)
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	proj, err := projections.Open(filepath.Join(dir, "readmodel.db"), store, projections.NewHandoffs(), projections.Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	tl, err := translog.Open(filepath.Join(dir, translog.FileName), store, translog.Options{Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { proj.Run(ctx); done <- struct{}{} }()
	go func() { tl.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done }()
	srv := httptest.NewServer(batonhttp.NewServer(batonhttp.Config{Store: store, Projections: proj, Log: zerolog.Nop(), TransparencyLog: tl}).Handler())
	defer srv.Close()
	k, err := ledger.NewKeys(store).Create(context.Background(), "test", "", "t", true, "")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	start := time.Now()
	err = run(context.Background(), []string{"ledger", "export", "--url", srv.URL, "--key", k.Key, "--wait", "30s", ids[0]}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "no_log_key") || !strings.Contains(err.Error(), "baton log keygen") {
		t.Fatalf("export from a server without a log key = %v\n%s", err, errOut.String())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("it took %v to say so", d)
	}
	if out.Len() > 0 {
		t.Fatalf("a bundle was written: %s", out.String())
	}
	// With no wait, too: the bundle was written at once.
	err = run(context.Background(), []string{"ledger", "export", "--url", srv.URL, "--key", k.Key, "--wait", "0s", ids[0]}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "no_log_key") || out.Len() > 0 {
		t.Fatalf("export --wait 0s from a server without a log key = %v\n%s", err, out.String())
	}
}

// log keygen takes --data as the other commands do: the key goes to
// DATA/log.key, where serve --data DATA finds it (it took --out alone,
// and --data was refused as an unknown flag).
func TestLogKeygenTakesData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	var out bytes.Buffer
	if err := run(context.Background(), []string{"log", "keygen", "--origin", "baton.test/log", "--data", dir}, &out, &out); err != nil {
		t.Fatalf("log keygen --data: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, KeyFileName)); err != nil {
		t.Fatalf("no key in the data directory: %v", err)
	}
	if !strings.HasPrefix(out.String(), "baton.test/log+") {
		t.Fatalf("printed %q, not the verifier key", out.String())
	}
	err := run(context.Background(), []string{"log", "keygen", "--data", dir, "--out", filepath.Join(dir, "other.key")}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("--data with --out = %v", err)
	}
}

// A second keygen on the same data directory says which file exists and
// what to do: it said "--out: open data/log.key: file exists" to a user
// who gave no --out.
func TestLogKeygenSaysTheKeyExists(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"log", "keygen", "--origin", "baton.test/log", "--data", dir}, &out, &out); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, KeyFileName))
	err := run(context.Background(), []string{"log", "keygen", "--origin", "baton.test/log", "--data", dir}, &out, &out)
	if err == nil || strings.Contains(err.Error(), "--out:") || !strings.Contains(err.Error(), filepath.Join(dir, KeyFileName)+" exists") || !strings.Contains(err.Error(), "--log-key-file") {
		t.Fatalf("a second keygen = %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, KeyFileName)); !bytes.Equal(before, after) {
		t.Fatal("the key was overwritten")
	}
}

// Likewise from a data directory whose log no key ever signed: it said
// "export again later" of a bundle no later export would complete.
func TestLedgerExportFromADataDirectoryWithoutASignedCheckpoint(t *testing.T) {
	dir := t.TempDir()
	ids := fillStore(t, dir)
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := translog.Open(filepath.Join(dir, translog.FileName), store, translog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	tl.Close()
	store.Close()
	var out, errOut bytes.Buffer
	err = run(context.Background(), []string{"ledger", "export", "--data", dir, ids[0]}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "was ever signed") || !strings.Contains(err.Error(), "baton log keygen --data "+dir) {
		t.Fatalf("export from a log nothing signed = %v\n%s", err, errOut.String())
	}
	if out.Len() > 0 {
		t.Fatalf("a bundle was written: %s", out.String())
	}
}

// A server that keeps no log (--log=false) is named as such: export
// quoted a 404 "No route for GET .../receipts" and left the user to guess.
func TestLedgerExportFromAServerWithoutTheLog(t *testing.T) {
	dir := t.TempDir()
	ids := fillStore(t, dir)
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	proj, err := projections.Open(filepath.Join(dir, "readmodel.db"), store, projections.NewHandoffs(), projections.Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { proj.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	srv := httptest.NewServer(batonhttp.NewServer(batonhttp.Config{Store: store, Projections: proj, Log: zerolog.Nop()}).Handler())
	defer srv.Close()
	k, err := ledger.NewKeys(store).Create(context.Background(), "test", "", "t", true, "")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err = run(context.Background(), []string{"ledger", "export", "--url", srv.URL, "--key", k.Key, ids[0]}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "keeps no transparency log") || !strings.Contains(err.Error(), "--log=false") || out.Len() > 0 {
		t.Fatalf("export from a server without the log = %v\n%s", err, out.String())
	}
}

// log verify --old with a file that holds no signed checkpoint (empty: a
// curl that failed; or a bundle, an error page) says so: it said "the
// checkpoint's signature does not verify with the log key", as of a
// forgery.
func TestLogVerifySaysTheOldCheckpointIsNone(t *testing.T) {
	_, vkey, err := translog.GenerateKey("baton.test/log", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	empty, page := filepath.Join(dir, "empty"), filepath.Join(dir, "page")
	os.WriteFile(empty, nil, 0o600)
	os.WriteFile(page, []byte(`{"code":"no_checkpoint"}`), 0o600)
	for _, tt := range []struct{ file, want string }{{empty, "is empty"}, {page, "not a signed checkpoint"}} {
		var out bytes.Buffer
		err := run(context.Background(), []string{"log", "verify", "--log-key", vkey, "--old", tt.file, "--url", "http://127.0.0.1:1"}, &out, &out)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "signature does not verify") {
			t.Errorf("--old %s: %v, want %q", tt.file, err, tt.want)
		}
	}
}

// An empty signing key file (DATA/log.key, or --log-key-file) stops the
// start: read as no key, it served a log that signed nothing, said only
// as "signing":false.
func TestServeRefusesAnEmptyLogKey(t *testing.T) {
	for _, named := range []bool{false, true} {
		dir := t.TempDir()
		keyFile := filepath.Join(dir, KeyFileName)
		if err := os.WriteFile(keyFile, []byte("\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"serve", "--data", dir, "--addr", "127.0.0.1:0"}
		if named {
			args = append(args, "--log-key-file", keyFile)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var out syncBuffer
		err := run(ctx, args, &out, &out)
		served := ctx.Err() != nil // stopped by the timeout, not refused
		cancel()
		if err == nil || served || !strings.Contains(err.Error(), keyFile+" is empty") {
			t.Fatalf("serve with an empty key file (named %v) = %v\n%s", named, err, out.String())
		}
	}
}

// A log turned off with a setting that only the log reads is refused,
// naming both as they were given: --log=false --log-key-file F started
// without a word, and the operator believed checkpoints were signed.
func TestServeRefusesLogSettingsWithTheLogOff(t *testing.T) {
	key := filepath.Join(t.TempDir(), "log.key")
	runOK(t, "log", "keygen", "--out", key)
	for _, c := range []struct {
		env       []string
		flags     []string
		want, off string
	}{
		{nil, []string{"--log=false", "--log-key-file", key}, "--log-key-file", "--log=false"},
		{nil, []string{"--log=false", "--log-origin", "baton.test/x"}, "--log-origin", "--log=false"},
		{nil, []string{"--log=false", "--log-witnesses", "w+01234567+AQ"}, "--log-witnesses", "--log=false"},
		{nil, []string{"--log=false", "--log-interval", "20ms"}, "--log-interval", "--log=false"},
		{[]string{"BATON_LOG_KEY_FILE", key}, []string{"--log=false"}, "BATON_LOG_KEY_FILE", "--log=false"},
		{[]string{"BATON_LOG", "false"}, []string{"--log-key-file", key}, "--log-key-file", "BATON_LOG=false"},
	} {
		t.Run(strings.Join(c.flags, " "), func(t *testing.T) {
			if c.env != nil {
				t.Setenv(c.env[0], c.env[1])
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // were it to start
			defer cancel()
			data := filepath.Join(t.TempDir(), "data")
			var out syncBuffer
			err := run(ctx, append([]string{"serve", "--data", data, "--addr", "127.0.0.1:0"}, c.flags...), &out, &out)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.off) {
				t.Fatalf("err = %v; want %s and %s named\n%s", err, c.want, c.off, out.String())
			}
			if got := dirState(t, data); got != "absent" {
				t.Fatalf("the refused start left:\n%s", got)
			}
		})
	}
}

// A server with no signed checkpoint yet is said to have none, exit 2
// (nothing was checked; a log proved broken is 1): it was a raw 404 and
// its JSON quoted, exit 1 as for a broken log.
func TestLogVerifyAgainstAServerWithNoCheckpoint(t *testing.T) {
	skey, vkey, err := translog.GenerateKey("baton.test/log", nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := note.Sign(&note.Note{Text: translog.Checkpoint{Origin: "baton.test/log", Size: 3}.Text()}, signer)
	if err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(t.TempDir(), "kept.checkpoint")
	os.WriteFile(kept, signed, 0o600)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"type":"urn:baton:problem:no_checkpoint","title":"Not Found","status":404,"code":"no_checkpoint","detail":"The transparency log has no signed checkpoint yet: no replica holding the signing key has signed one.","instance":"/v1/log/checkpoint"}`)
	}))
	defer srv.Close()
	var out bytes.Buffer
	err = run(context.Background(), []string{"log", "verify", "--url", srv.URL, "--log-key", vkey, "--old", kept}, &out, &out)
	var ec interface{ ExitCode() int }
	if err == nil || !errors.As(err, &ec) || ec.ExitCode() != 2 {
		t.Fatalf("err = %v; want an error of exit code 2\n%s", err, out.String())
	}
	if msg := err.Error(); !strings.Contains(msg, "no signed checkpoint yet") || strings.Contains(msg, "{") || strings.Contains(msg, "404") {
		t.Fatalf("err = %v; want it said plainly, without the answer's JSON", err)
	}
	if errors.Is(err, errLogBroken) || strings.Contains(out.String(), "BROKEN") {
		t.Fatalf("a log with no checkpoint was called broken: %v\n%s", err, out.String())
	}
}

// A kept checkpoint file that holds no checkpoint says what it holds: the
// error answer `curl .../v1/log/checkpoint > kept.checkpoint` saved from a
// server with none yet, or nothing (a fetch that failed). Both were "the
// checkpoint's signature does not verify with the log key", which reads
// as a forgery.
func TestLogVerifySaysWhatAKeptFileHolds(t *testing.T) {
	_, vkey, err := translog.GenerateKey("baton.test/log", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for content, want := range map[string]string{
		`{"type":"urn:baton:problem:no_checkpoint","title":"Not Found","status":404,"code":"no_checkpoint","detail":"The transparency log has no signed checkpoint yet."}` + "\n": "an error answer (no_checkpoint",
		"":     "is empty",
		"\n\n": "is empty",
	} {
		kept := filepath.Join(dir, "kept.checkpoint")
		os.WriteFile(kept, []byte(content), 0o600)
		var out bytes.Buffer
		err := run(context.Background(), []string{"log", "verify", "--url", "http://127.0.0.1:1", "--log-key", vkey, "--old", kept}, &out, &out)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "signature") {
			t.Errorf("kept %.30q: %v; want %q", content, err, want)
		}
	}
}

// A server that says its signed checkpoints contradict its log (500
// log_forked) is reported as the fork it is, BROKEN and exit 1: it was
// the raw 500 and its JSON, which reads as a server failing, to be asked
// again.
func TestLogVerifyReportsAServerThatSaysItForked(t *testing.T) {
	skey, vkey, err := translog.GenerateKey("baton.test/log", nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := note.Sign(&note.Note{Text: translog.Checkpoint{Origin: "baton.test/log", Size: 3}.Text()}, signer)
	if err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(t.TempDir(), "kept.checkpoint")
	os.WriteFile(kept, signed, 0o600)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"type":"urn:baton:problem:log_forked","title":"Internal Server Error","status":500,"code":"log_forked","detail":"The transparency log has 2 signed checkpoints that do not match the log this server built from its store (the last: baton.test/log 3 abc). The store's events changed after they were signed.","instance":"/v1/log/checkpoint"}`)
	}))
	defer srv.Close()
	var out bytes.Buffer
	err = run(context.Background(), []string{"log", "verify", "--url", srv.URL, "--log-key", vkey, "--old", kept}, &out, &out)
	if !errors.Is(err, errLogBroken) || !strings.Contains(out.String(), "BROKEN") || !strings.Contains(out.String(), "do not match the log") || strings.Contains(out.String(), "{") {
		t.Fatalf("err = %v\n%s", err, out.String())
	}
}
