package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
