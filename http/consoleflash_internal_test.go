package http

import (
	"strings"
	"testing"
	"time"
)

// The refusals held for the page after a redirect are bounded: gone after
// their 10 minutes, and the oldest go first past the bytes held in all.
func TestConsoleFlashesAreBounded(t *testing.T) {
	var f consoleFlashes
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	first := f.put(now, "s1", "h1", Problem{Code: "handoff_changed"}, map[string]string{"reason": "mine"})
	if _, form, ok := f.get(now.Add(flashTTL), first, "s1", "h1"); !ok || form["reason"] != "mine" {
		t.Fatal("a refusal is not held for its 10 minutes")
	}
	if _, _, ok := f.get(now.Add(flashTTL+time.Second), first, "s1", "h1"); ok {
		t.Fatal("a refusal outlived its 10 minutes")
	}
	big := map[string]string{"reason": strings.Repeat("x", 1<<20)}
	for range 20 {
		f.put(now, "s1", "h1", Problem{}, big)
	}
	if _, _, ok := f.get(now, first, "s1", "h1"); ok || f.bytes > flashMaxBytes || len(f.byID) != len(f.order) {
		t.Fatalf("past the bound: %d bytes held in %d refusals; the first still held: %v", f.bytes, len(f.byID), ok)
	}
}
