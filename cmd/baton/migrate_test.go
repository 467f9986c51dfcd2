package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/kurrent"
	"github.com/batonhq/baton/eventstore/kurrent/kurrenttest"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/eventstore/migrate"
	batonhttp "github.com/batonhq/baton/http"
	"github.com/batonhq/baton/projections"
)

// fillStore drives handoffs through the API on an embedded store in dir:
// manual ones (approval and result each a callback of its own) and
// automatically approved ones, whose creation appends two events at once.
func fillStore(t *testing.T, dir string) []string {
	t.Helper()
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
	front := batonhttp.NewServer(batonhttp.Config{Store: store, Projections: proj, Log: zerolog.Nop()})
	srv := httptest.NewServer(front.Handler())
	defer front.Close()
	defer srv.Close()
	k, err := ledger.NewKeys(store).Create(context.Background(), "test", "", "t", true, "")
	if err != nil {
		t.Fatal(err)
	}
	post := func(path string, body string) map[string]any {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("x-api-key", k.Key)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %d %v", path, resp.StatusCode, out)
		}
		return out
	}
	var ids []string
	for i := 0; i < 6; i++ {
		mode := "manual"
		if i%2 == 1 {
			mode = "auto"
		}
		id := post("/v1/handoff/contracts", fmt.Sprintf(`{"objective":"Rotate certificate %d","targetExecutor":"ops","executorProtocol":"ops.v1","riskLevel":"low","approvalMode":%q}`, i, mode))["handoffId"].(string)
		if mode == "manual" {
			post("/v1/executions/"+id+"/approval", fmt.Sprintf(`{"status":"APPROVED","approvedBy":"alice-%d"}`, i))
		}
		if i < 4 {
			post("/v1/executions/"+id+"/result", `{"executorRunId":"r1","status":"SUCCEEDED","result":{"summary":"done","output":"ok"}}`)
		}
		ids = append(ids, id)
	}
	srv.Client().CloseIdleConnections()
	return ids
}

// readFeed reads a store's whole feed.
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

func sourceFeed(t *testing.T, dir string) []eventstore.RecordedEvent {
	t.Helper()
	s, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return readFeed(t, s)
}

func openTarget(t *testing.T, url string) *kurrent.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := kurrent.Open(ctx, kurrent.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
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
		if got[i].Metadata.Hash != want[i].Metadata.Hash || got[i].Metadata.PrevHash != want[i].Metadata.PrevHash {
			t.Fatalf("event %d: hashes differ", i)
		}
	}
}

// TestMigrateBoltToKurrent migrates in steps: a run stopped by --limit in
// the middle of a two-event append, then a run that completes it, then a
// run over a complete copy. Each event is written once, the copy equals
// the source, and the ledger verifies in the target.
func TestMigrateBoltToKurrent(t *testing.T) {
	dir := t.TempDir()
	ids := fillStore(t, dir)
	src := sourceFeed(t, dir)

	// Stop right after the first half of a creation with its automatic
	// approval, which the source wrote in one append.
	cut := -1
	for i := 1; i < len(src); i++ {
		if src[i].Type == "ApprovalDecided" && bytes.Contains(src[i].Data, []byte(`"automatic":true`)) && src[i].StreamID == src[i-1].StreamID {
			cut = i
			break
		}
	}
	if cut < 0 {
		t.Fatal("no creation with an automatic approval in the source")
	}

	double, err := kurrenttest.Start(kurrenttest.Options{SystemEventEvery: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(double.Stop)
	url := double.URL()
	migrateRun := func(extra ...string) string {
		t.Helper()
		var out bytes.Buffer
		args := append([]string{"migrate", "--from", "bolt", "--data", dir, "--to", "kurrent", "--kurrentdb-url", url}, extra...)
		if err := run(context.Background(), args, &out, &out); err != nil {
			t.Fatalf("baton %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}

	out := migrateRun("--limit", fmt.Sprint(cut))
	if !strings.Contains(out, fmt.Sprintf("stopped after the first %d of %d events", cut, len(src))) {
		t.Fatalf("limited run said:\n%s", out)
	}
	target := openTarget(t, url)
	sameFeeds(t, src[:cut], readFeed(t, target))

	out = migrateRun()
	t.Logf("completing run:\n%s", out)
	// The completing run proposed the stream's events from its first one
	// again, in one append; the target held the first, so the append was
	// refused and the rest appended after it.
	var resumed []kurrenttest.AppendCall
	for _, c := range double.Appends() {
		if c.Stream == src[cut].StreamID {
			resumed = append(resumed, c)
		}
	}
	if len(resumed) != 3 || resumed[1].Outcome != "wrong_expected_version" || resumed[1].Expected != kurrenttest.ExpectNoStream ||
		resumed[2].Outcome != "written" || resumed[2].Expected != kurrenttest.ExpectRevision || resumed[2].Revision != 0 ||
		resumed[2].EventIDs[0] != src[cut].ID || len(resumed[1].EventIDs) != len(resumed[2].EventIDs)+1 {
		t.Fatalf("appends to the stream cut in two: %+v", resumed)
	}
	for _, want := range []string{
		fmt.Sprintf("%d events in", len(src)),
		fmt.Sprintf("compared %d events", len(src)),
		fmt.Sprintf("%d handoffs, %d events, 0 broken", len(ids), countHandoffEvents(src)),
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("completing run did not say %q:\n%s", want, out)
		}
	}
	sameFeeds(t, src, readFeed(t, target))

	// A run over a complete copy writes nothing.
	writtenBefore := written(double)
	out = migrateRun()
	if !strings.Contains(out, fmt.Sprintf("compared %d events", len(src))) {
		t.Fatalf("third run said:\n%s", out)
	}
	sameFeeds(t, src, readFeed(t, target))
	if w := written(double); w != writtenBefore {
		t.Fatalf("the third run wrote %d events", w-writtenBefore)
	}

	// Each source event was written exactly once, in one append.
	count := map[uuid.UUID]int{}
	for _, c := range double.Appends() {
		if c.Outcome == "written" {
			for _, id := range c.EventIDs {
				count[id]++
			}
		}
	}
	for _, ev := range src {
		if count[ev.ID] != 1 {
			t.Fatalf("event %s (%s) was written %d times", ev.ID, ev.Type, count[ev.ID])
		}
	}

	// The same data directory now serves from KurrentDB: the read models
	// built from the embedded store are set aside and rebuilt.
	proj, err := openReadModels(context.Background(), dir, storeKurrent, target, zerolog.Nop(), projections.NewHandoffs(), projections.Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	if _, err := os.Stat(filepath.Join(dir, "readmodel.db.bolt")); err != nil {
		t.Fatalf("the embedded store's read models were not set aside: %v", err)
	}
	if err := proj.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, _, ok, err := proj.Contract(id); !ok || err != nil {
			t.Fatalf("contract %s not in the rebuilt read models (%v)", id, err)
		}
	}
	if n, err := proj.KeyCount(); n != 1 || err != nil {
		t.Fatalf("rebuilt read models hold %d keys (%v)", n, err)
	}
}

// written counts the events the double wrote for clients.
func written(s *kurrenttest.Server) int {
	n := 0
	for _, c := range s.Appends() {
		if c.Outcome == "written" {
			n += len(c.EventIDs)
		}
	}
	return n
}

func countHandoffEvents(evs []eventstore.RecordedEvent) int {
	n := 0
	for _, ev := range evs {
		if strings.HasPrefix(ev.StreamID, "handoff-") {
			n++
		}
	}
	return n
}

// TestMigrateRefusesAForeignTarget: a target whose stream holds another
// event where the source's belongs is not overwritten or skipped.
func TestMigrateRefusesAForeignTarget(t *testing.T) {
	dir := t.TempDir()
	ids := fillStore(t, dir)
	double, err := kurrenttest.Start(kurrenttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(double.Stop)
	target := openTarget(t, double.URL())
	other := eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "ContractCreated", Data: json.RawMessage(`{}`)}
	if _, err := target.Append(context.Background(), "handoff-"+ids[2], eventstore.NoStream(), other); err != nil {
		t.Fatal(err)
	}
	// A target that other writers used is refused before anything is
	// written.
	var out bytes.Buffer
	err = run(context.Background(), []string{"migrate", "--data", dir, "--kurrentdb-url", double.URL()}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("migrate onto a used target = %v\n%s", err, out.String())
	}
	if got := readFeed(t, target); len(got) != 1 {
		t.Fatalf("the refused migration left %d events in the target", len(got))
	}

	// A target that is a copy in part, with a foreign event where a later
	// stream belongs: the copy stops at that stream, naming it.
	double2, err := kurrenttest.Start(kurrenttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(double2.Stop)
	out.Reset()
	if err := run(context.Background(), []string{"migrate", "--data", dir, "--kurrentdb-url", double2.URL(), "--limit", "1"}, &out, &out); err != nil {
		t.Fatalf("first event: %v\n%s", err, out.String())
	}
	target2 := openTarget(t, double2.URL())
	if _, err := target2.Append(context.Background(), "handoff-"+ids[2], eventstore.NoStream(), other); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = run(context.Background(), []string{"migrate", "--data", dir, "--kurrentdb-url", double2.URL()}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "holds event "+other.ID.String()) {
		t.Fatalf("migrate onto a foreign stream = %v\n%s", err, out.String())
	}
}

// A --data with no store (a typo) is refused before anything is made or
// connected: it was created empty, "0 events" were migrated, and the
// command succeeded, as if the store had been moved to KurrentDB.
func TestMigrateRefusesADataDirWithoutAStore(t *testing.T) {
	double, err := kurrenttest.Start(kurrenttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(double.Stop)
	missing := filepath.Join(t.TempDir(), "typo")
	var out bytes.Buffer
	err = run(context.Background(), []string{"migrate", "--data", missing, "--kurrentdb-url", double.URL()}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "no store in") {
		t.Fatalf("migrate from a directory without a store = %v\n%s", err, out.String())
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("a store was made at %s: %v", missing, err)
	}
}

// TestReadModelsFollowTheirStore: read models whose checkpoint lies beyond
// the store's head were built from another store; they are set aside and
// rebuilt rather than continued.
func TestReadModelsFollowTheirStore(t *testing.T) {
	dir := t.TempDir()
	fillStore(t, dir) // leaves readmodel.db with its checkpoint in dir
	other, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	proj, err := openReadModels(context.Background(), dir, storeBolt, other, zerolog.Nop(), projections.NewHandoffs(), projections.Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	if cp := proj.Checkpoint(); cp != eventstore.Start {
		t.Fatalf("read models of another store kept their checkpoint %+v", cp)
	}
	if _, err := os.Stat(filepath.Join(dir, "readmodel.db.ahead")); err != nil {
		t.Fatalf("the old read models were not set aside: %v", err)
	}
	if n, err := proj.KeyCount(); n != 0 || err != nil {
		t.Fatalf("rebuilt read models hold %d keys (%v)", n, err)
	}
	// A second process on the same --data is refused, and the first one's
	// file is left alone.
	_, err = openReadModels(context.Background(), dir, storeKurrent, other, zerolog.Nop(), projections.NewHandoffs(), projections.Keys{})
	if err == nil || !strings.Contains(err.Error(), "held by another process") {
		t.Fatalf("second open of the read models = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "readmodel.db.bolt")); !os.IsNotExist(err) {
		t.Fatalf("the second open moved the first one's file aside (%v)", err)
	}
}

// TestReadModelsOfAnotherLongerStore: another store copied in under the
// same name, longer than the one the read models were built from, is told
// by its first event: the read models are rebuilt, not continued on it
// (they served the old store's keys and handoffs).
func TestReadModelsOfAnotherLongerStore(t *testing.T) {
	ctx := context.Background()
	appendN := func(s eventstore.Store, n int) {
		for range n {
			if _, err := s.Append(ctx, "x-"+uuid.NewString(), eventstore.NoStream(), eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "X", Data: json.RawMessage(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := t.TempDir()
	first, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	appendN(first, 1)
	proj, err := openReadModels(ctx, dir, storeBolt, first, zerolog.Nop(), projections.Keys{})
	if err != nil {
		t.Fatal(err)
	}
	if err := proj.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	proj.Close()
	other, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	appendN(other, 5)
	proj, err = openReadModels(ctx, dir, storeBolt, other, zerolog.Nop(), projections.Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	if cp := proj.Checkpoint(); cp != eventstore.Start {
		t.Fatalf("read models of another store kept their checkpoint %+v", cp)
	}
	if _, err := os.Stat(filepath.Join(dir, "readmodel.db.another-store")); err != nil {
		t.Fatalf("the old read models were not set aside: %v", err)
	}
}

// TestDamagedReadModelsKeptAside: a second damaged read-model file moved
// aside at start is kept beside the first (it replaced it), and the log
// names where each went.
func TestDamagedReadModelsKeptAside(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	path := filepath.Join(dir, "readmodel.db")
	for i, want := range []string{path + ".broken", path + ".broken.1"} {
		proj, err := openReadModels(ctx, dir, storeBolt, store, zerolog.Nop(), projections.Keys{})
		if err != nil {
			t.Fatal(err)
		}
		proj.Close()
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt(bytes.Repeat([]byte{byte(i + 1)}, 3*os.Getpagesize()), 2*int64(os.Getpagesize()))
		f.Close()
		var logged bytes.Buffer
		if proj, err = openReadModels(ctx, dir, storeBolt, store, zerolog.New(&logged), projections.Keys{}); err != nil {
			t.Fatal(err)
		}
		proj.Close()
		if !strings.Contains(logged.String(), `"file":"`+want+`"`) {
			t.Fatalf("damage %d: the log does not name %s:\n%s", i, want, logged.String())
		}
		if b, err := os.ReadFile(want); err != nil || b[2*os.Getpagesize()] != byte(i+1) {
			t.Fatalf("damage %d: %s is not the damaged file (%v)", i, want, err)
		}
	}
}

// A migrated directory served without --store (the default, the embedded
// store) is refused: it served events.db, the backup the migration left,
// moved the read models aside and took writes no replica saw. --store
// bolt, given on purpose, goes back to the embedded store.
func TestServeRefusesAMigratedDirectoryByDefault(t *testing.T) {
	t.Setenv("BATON_STORE", "")
	dir := t.TempDir()
	fillStore(t, dir)
	if err := os.WriteFile(filepath.Join(dir, readModelMarker), storeMark(storeKurrent, "migrated"), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, bolt.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	refused, stop := context.WithTimeout(context.Background(), 30*time.Second) // a start that serves is stopped
	defer stop()
	err = run(refused, []string{"serve", "--data", dir, "--addr", "127.0.0.1:0"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "follow KurrentDB") || !strings.Contains(err.Error(), "--store bolt") {
		t.Fatalf("serve on a migrated directory = %v\n%s", err, out.String())
	}
	after, _ := os.ReadFile(filepath.Join(dir, bolt.FileName))
	if !bytes.Equal(before, after) {
		t.Fatal("the refused start wrote to the backup store")
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "readmodel.db.*")); len(matches) > 0 {
		t.Fatalf("the refused start moved the read models aside: %v", matches)
	}
	// Given on purpose, the embedded store serves.
	ctx, cancel := context.WithCancel(context.Background())
	var out2 syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--store", "bolt", "--data", dir, "--addr", "127.0.0.1:0"}, &out2, &out2)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out2.String(), "baton serving") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil || !strings.Contains(out2.String(), "baton serving") {
		t.Fatalf("--store bolt: %v\n%s", err, out2.String())
	}
}

// The commands that read the store (ledger verify, ledger export, store
// check) refuse a migrated directory when no store is chosen: they read
// events.db, the backup the migration left, and reported "ok" of it as
// of the ledger. --store bolt reads the backup on purpose.
func TestReadingCommandsRefuseAMigratedDirectoryByDefault(t *testing.T) {
	t.Setenv("BATON_STORE", "")
	dir := t.TempDir()
	ids := fillStore(t, dir)
	if err := os.WriteFile(filepath.Join(dir, readModelMarker), storeMark(storeKurrent, "migrated"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"ledger", "verify", "--data", dir},
		{"ledger", "export", "--data", dir, ids[0]},
		{"store", "check", "--data", dir},
	} {
		var out bytes.Buffer
		err := run(context.Background(), args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), "follow KurrentDB") || !strings.Contains(err.Error(), "--store bolt") || out.Len() > 0 {
			t.Errorf("%v on a migrated directory = %v\n%s", args, err, out.String())
		}
	}
	// Chosen on purpose, the backup is read.
	for _, args := range [][]string{
		{"ledger", "verify", "--store", "bolt", "--data", dir},
		{"store", "check", "--store", "bolt", "--data", dir},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out, &out); err != nil || !strings.Contains(out.String(), "ok") {
			t.Errorf("%v = %v\n%s", args, err, out.String())
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"store", "check", "--store", "kurrent", "--data", dir}, &out, &out); err == nil || !strings.Contains(err.Error(), "ledger verify --store kurrent") {
		t.Errorf("store check --store kurrent = %v", err)
	}
}

// baton migrate on a directory that was migrated, and served on KurrentDB
// since, says so: it copied nothing and failed its comparison, "the target
// does not match the source", for events the replicas wrote.
func TestMigrateRefusesAMigratedDirectory(t *testing.T) {
	dir := t.TempDir()
	fillStore(t, dir)
	if err := os.WriteFile(filepath.Join(dir, readModelMarker), storeMark(storeKurrent, "migrated"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := run(context.Background(), []string{"migrate", "--data", dir, "--kurrentdb-url", "esdb://127.0.0.1:1?tls=false"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "migrated already") || !strings.Contains(err.Error(), "--store kurrent") {
		t.Fatalf("migrate of a migrated directory = %v\n%s", err, out.String())
	}
}

// A replica's own directory on KurrentDB (read models that follow it, no
// events.db) is not called migrated: the commands run there without
// --store said its events.db was the backup a migration left, and to give
// --store bolt to read it, where there is none.
func TestAReplicaDirectoryIsNotCalledMigrated(t *testing.T) {
	t.Setenv("BATON_STORE", "")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, readModelMarker), storeMark(storeKurrent, "replica"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"ledger", "verify", "--data", dir},
		{"store", "check", "--data", dir},
		{"keys", "create", "--tenant", "acme", "--data", dir},
		{"console", "link", "--tenant", "acme", "--name", "a", "--role", "approver", "--data", dir},
		{"serve", "--data", dir, "--addr", "127.0.0.1:0"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), "a replica on KurrentDB") || strings.Contains(err.Error(), "migrated") || strings.Contains(err.Error(), "--store bolt") {
			t.Errorf("%v = %v", args, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, bolt.FileName)); err == nil {
		t.Fatal("a command made an embedded store in the replica's directory")
	}
}

// A directory migrated to the end is refused to a start and to keys
// create without --store kurrent at once, not only once a replica has
// served it from KurrentDB: right after the migration, `make run` served
// the events.db left behind, and keys create made a key there, which no
// replica would see.
func TestMigratedDirectoryIsRefusedWithoutTheStore(t *testing.T) {
	t.Setenv("BATON_STORE", "")
	dir := t.TempDir()
	fillStore(t, dir)
	double, err := kurrenttest.Start(kurrenttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(double.Stop)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"migrate", "--data", dir, "--kurrentdb-url", double.URL(), "--limit", "1"}, &out, &out); err != nil {
		t.Fatalf("migrate --limit 1: %v\n%s", err, out.String())
	}
	if migrated(dir) {
		t.Fatal("a migration stopped by --limit marked the directory migrated")
	}
	if err := run(context.Background(), []string{"migrate", "--data", dir, "--kurrentdb-url", double.URL()}, &out, &out); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out.String())
	}
	refused, stop := context.WithTimeout(context.Background(), 30*time.Second) // a start that serves is stopped
	defer stop()
	err = run(refused, []string{"serve", "--data", dir, "--addr", "127.0.0.1:0"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "follow KurrentDB") {
		t.Fatalf("serve right after the migration = %v\n%s", err, out.String())
	}
	if err := run(context.Background(), []string{"keys", "create", "--data", dir, "--tenant", "acme"}, &out, &out); err == nil || !strings.Contains(err.Error(), "follow KurrentDB") {
		t.Fatalf("keys create right after the migration = %v", err)
	}
	// The read models built from the embedded store were set aside, as
	// the first start on KurrentDB would have, which then builds its own.
	if _, err := os.Stat(filepath.Join(dir, "readmodel.db.bolt")); err != nil {
		t.Fatalf("the read models were not set aside: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out2 syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--store", "kurrent", "--kurrentdb-url", double.URL(), "--data", dir, "--addr", "127.0.0.1:0"}, &out2, &out2)
	}()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out2.String(), "baton serving") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil || !strings.Contains(out2.String(), "baton serving") {
		t.Fatalf("--store kurrent: %v\n%s", err, out2.String())
	}
}
