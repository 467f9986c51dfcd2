//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A marker that cannot be written whole (a full disk: here a file size
// limit) is left as it was, not cut short: written in place, a migrated
// directory's marker cut empty no longer read as migrated.
func TestAMarkerNotWrittenWholeIsLeftAsItWas(t *testing.T) {
	if path := os.Getenv("BATON_TEST_MARKER_LIMIT"); path != "" {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 10, Max: 10}); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("marker: %v\n", writeMarker(path, storeMark(storeKurrent, "a-longer-identity-than-ten-bytes")))
		return
	}
	path := filepath.Join(t.TempDir(), readModelMarker)
	was := storeMark(storeKurrent, "migrated")
	if err := writeMarker(path, was); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAMarkerNotWrittenWholeIsLeftAsItWas$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BATON_TEST_MARKER_LIMIT="+path)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "marker: write") {
		t.Fatalf("a marker written under a file size limit (%v):\n%s", err, out)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, was) {
		t.Fatalf("the marker holds %q (%v), want %q", got, err, was)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("a temporary file was left: %v", err)
	}
}
