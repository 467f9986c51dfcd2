package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A state file that cannot be written stops the executor at its start:
// it used to start, fail on every write, and take nothing, or worse, go
// on with a position only its memory held.
func TestExecutorStopsOnAnUnwritableStateFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "executor.json")
	os.WriteFile(cfg, []byte(`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"]}}}`), 0o644)
	var out bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // were it to start, it would stop at once
	err := run(ctx, []string{"--key", "k", "--url", "http://127.0.0.1:1", "--config", cfg,
		"--state", filepath.Join(dir, "missing", "state.json")}, &out)
	if err == nil || !strings.Contains(err.Error(), "state file") {
		t.Fatalf("run: %v, want an error about the state file", err)
	}
}

// A second executor on the same state file is refused at its start: the
// two overwrote each other's runs in it (a run of one missing from the
// file, lost at a crash) and its position.
func TestExecutorRefusesAStateFileInUse(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "executor.json")
	os.WriteFile(cfg, []byte(`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"]}}}`), 0o644)
	state := filepath.Join(dir, "state.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	args := []string{"--key", "k", "--url", "http://127.0.0.1:1", "--config", cfg, "--state", state}
	first := make(chan error, 1)
	out1 := &syncBuffer{}
	go func() { first <- run(ctx, args, out1) }()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out1.String(), "baton-executor started"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first executor did not start: %s", out1.String())
		}
	}
	var out2 bytes.Buffer
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2() // were it to start, it would stop at once
	if err := run(ctx2, args, &out2); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second executor: %v, want the state file in use", err)
	}
	cancel()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// Once the first has stopped, the file is free again.
	if err := run(ctx2, args, &out2); err != nil {
		t.Fatalf("after the first stopped: %v", err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Each write of the state file syncs its directory after the rename: the
// rename alone could be lost at a power cut, and the state before it come
// back.
func TestStateSyncsItsDirectory(t *testing.T) {
	dir := t.TempDir()
	st, err := openState(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var synced []string
	old := syncDir
	syncDir = func(d string) { synced = append(synced, d) }
	defer func() { syncDir = old }()
	if err := st.Put(Run{HandoffID: "h", ExecutorRunID: "run-1", Phase: phaseRunning}); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || synced[0] != dir {
		t.Fatalf("synced %v, want %s", synced, dir)
	}
}

// A reported run leaves the state file for the reported file, one line
// appended: every run ever reported stayed in the state file, rewritten
// whole and synced at every event and every step of every run. Its
// receipts are still there after a restart, and a crash between the two
// writes, or in the middle of the append, loses nothing.
func TestStateMovesReportedRunsOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	s, err := openState(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		id := fmt.Sprintf("h%03d", i)
		r := Run{HandoffID: id, ExecutorRunID: "run-" + id, Protocol: "p.v1", Phase: phaseRunning}
		s.Put(r)
		r.Phase, r.Receipts = phaseReported, []string{"proof 3 abc", "result 4 def"}
		if err := s.Put(r); err != nil {
			t.Fatal(err)
		}
	}
	s.Put(Run{HandoffID: "open", ExecutorRunID: "run-open", Phase: phaseFinished, Output: "done"})
	s.SetLastEventID("42")
	if b, _ := os.ReadFile(path); len(b) > 1<<10 {
		t.Fatalf("the state file holds %d bytes for one unfinished run:\n%s", len(b), b)
	}
	// A crash after the append, before the state file was written: the
	// run is in both files, finished in the state file.
	finished := Run{HandoffID: "both", ExecutorRunID: "run-both", Phase: phaseFinished}
	s.Put(finished)
	b, _ := os.ReadFile(path)
	reported := finished
	reported.Phase, reported.Receipts = phaseReported, []string{"proof 1 a", "result 2 b"}
	s.Put(reported)
	os.WriteFile(path, b, 0o600)
	// A crash in the middle of an append: a line without its end.
	f, _ := os.OpenFile(path+".reported", os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"handoffId":"open","executorRunId":"run-open","pha`)
	f.Close()

	s, err = openState(path)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := s.Run("h007"); !ok || r.Phase != phaseReported || len(r.Receipts) != 2 {
		t.Fatalf("reported run after a restart: %+v", r)
	}
	if r, _ := s.Run("both"); r.Phase != phaseReported || len(r.Receipts) != 2 {
		t.Fatalf("run reported before a crash: %+v", r)
	}
	if r, _ := s.Run("open"); r.Phase != phaseFinished || r.Output != "done" {
		t.Fatalf("unfinished run: %+v", r)
	}
	if u := s.Unfinished(); len(u) != 1 || s.LastEventID() != "42" {
		t.Fatalf("unfinished %+v, position %q", u, s.LastEventID())
	}
	// Taken again after a release: the new run is the state file's.
	s.Put(Run{HandoffID: "h001", ExecutorRunID: "run-again", Phase: phaseRunning})
	s, _ = openState(path)
	if r, _ := s.Run("h001"); r.ExecutorRunID != "run-again" || r.Phase != phaseRunning {
		t.Fatalf("run taken again: %+v", r)
	}
	if b, _ := os.ReadFile(path + ".reported"); bytes.Count(b, []byte("\n")) != 201 || !bytes.HasSuffix(b, []byte("}\n")) {
		t.Fatalf("reported file: %d lines", bytes.Count(b, []byte("\n")))
	}
}

// The reported file keeps the latest keepReported runs: past twice as
// many, the older ones go to the archive, which is never read. Kept
// whole, every run ever reported was read and held in memory at every
// start, and the file grew without end.
func TestStateBoundsTheReportedRuns(t *testing.T) {
	defer func(n int) { keepReported = n }(keepReported)
	keepReported = 10
	path := filepath.Join(t.TempDir(), "state.json")
	s, err := openState(path)
	if err != nil {
		t.Fatal(err)
	}
	report := func(s *State, id, run string) {
		t.Helper()
		if err := s.Put(Run{HandoffID: id, ExecutorRunID: run, Phase: phaseReported, Receipts: []string{"result 2 " + run}}); err != nil {
			t.Fatal(err)
		}
	}
	// h000 is reported, taken again after a release, and reported again.
	report(s, "h000", "run-first")
	for i := range 100 {
		id := fmt.Sprintf("h%03d", i)
		report(s, id, "run-"+id)
		if n := len(s.logged); n > 2*keepReported {
			t.Fatalf("after %d runs, %d held in memory", i+1, n)
		}
	}
	// An unfinished run of an old handoff is not the archive's.
	s.Put(Run{HandoffID: "h001", ExecutorRunID: "run-again", Phase: phaseRunning})
	for i := 100; i < 125; i++ {
		id := fmt.Sprintf("h%03d", i)
		report(s, id, "run-"+id)
	}
	lines := func(p string) []string {
		b, _ := os.ReadFile(p)
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	kept, archived := lines(path+".reported"), lines(path+".reported.archive")
	if len(kept) > 2*keepReported || len(kept) < keepReported {
		t.Fatalf("the reported file holds %d runs", len(kept))
	}
	if len(kept)+len(archived) != 126 {
		t.Fatalf("%d runs kept and %d archived of 126 reported: a receipt was lost", len(kept), len(archived))
	}
	s, err = openState(path)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := s.Run("h124"); !ok || r.Phase != phaseReported || len(r.Receipts) != 1 {
		t.Fatalf("the latest run after a restart: %+v", r)
	}
	if _, ok := s.Run("h050"); ok {
		t.Fatal("an archived run is still held")
	}
	if r, _ := s.Run("h001"); r.ExecutorRunID != "run-again" || r.Phase != phaseRunning {
		t.Fatalf("the run under way of an archived handoff: %+v", r)
	}
}
