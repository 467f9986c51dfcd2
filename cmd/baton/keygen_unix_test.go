//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// log keygen that cannot write the whole key (a full disk; here a file
// size limit, which fails a write as a full disk does) leaves no file:
// the empty or cut-short file it left was refused by serve ("the signing
// key ... is empty") and by the next keygen ("exists, and a key is never
// overwritten: a server with it signs already"), so the directory had no
// way back but a file removed by hand. Run in a process of its own, as
// the limit is the process's.
func TestKeygenThatCannotWriteLeavesNoKey(t *testing.T) {
	if dir := os.Getenv("BATON_TEST_KEYGEN_LIMIT"); dir != "" {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 10, Max: 10}); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err := run(context.Background(), []string{"log", "keygen", "--data", dir}, &out, &out)
		fmt.Printf("keygen: %v\n", err)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKeygenThatCannotWriteLeavesNoKey$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BATON_TEST_KEYGEN_LIMIT="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "keygen: writing the key to") {
		t.Fatalf("keygen under a file size limit (%v):\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "log.key")); !os.IsNotExist(err) {
		t.Fatalf("a key file was left: %v", err)
	}
	var buf bytes.Buffer
	if err := run(context.Background(), []string{"log", "keygen", "--data", dir}, &buf, &buf); err != nil {
		t.Fatalf("keygen once there is room: %v", err)
	}
}
