package main

import (
	"bytes"
	"context"
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
