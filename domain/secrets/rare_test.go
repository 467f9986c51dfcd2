package secrets

import (
	"os"
	"os/exec"
	"runtime"
	"sync"
	"testing"

	"github.com/batonhq/baton/domain/secrets/gitleaks"
)

// A rare check in a process that has loaded no rules finds what ScanText
// finds, keeps neither a scanner nor the rules, and gives their memory
// back. It runs in a child process of its own: the other tests load the
// process-wide rules.
func TestScanTextRareKeepsNoRules(t *testing.T) {
	if os.Getenv("SECRETS_RARE_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestScanTextRareKeepsNoRules$", "-test.v")
		cmd.Env = append(os.Environ(), "SECRETS_RARE_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	if gitleaks.Loaded() {
		t.Fatal("the rules are loaded before any scan")
	}
	token := fakes()["github"].token
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()

	l := NewLazy()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := "label " + token
			if i%2 == 1 {
				v = "nightly reports"
			}
			rule, found := l.ScanTextRare(v)
			if want := i%2 == 0; found != want || (found && rule != "github-pat") {
				t.Errorf("ScanTextRare(%q) = %q, %v", v, rule, found)
			}
		}()
	}
	wg.Wait()

	if gitleaks.Loaded() || l.built.Load() {
		t.Fatal("a rare check kept the rules")
	}
	l.mu.Lock()
	lent, loans := l.lent, l.loans
	l.mu.Unlock()
	if lent != nil || loans != 0 {
		t.Fatalf("still lent: %v, %d loans", lent != nil, loans)
	}
	// The rules take about 5 MB; a little may stay (runtime caches).
	if after := heap(); after > before+1<<20 {
		t.Fatalf("heap %d bytes after the checks, %d before: the rules were kept", after, before)
	}

	// Once the scanner is kept, a rare check uses it.
	if _, err := l.Get(); err != nil {
		t.Fatal(err)
	}
	if rule, found := l.ScanTextRare("label " + token); !found || rule != "github-pat" {
		t.Fatalf("after Get: %q, %v", rule, found)
	}
	l.mu.Lock()
	lent = l.lent
	l.mu.Unlock()
	if lent != nil {
		t.Fatal("a rare check built its own beside the kept scanner")
	}
}
