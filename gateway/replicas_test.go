package gateway

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/kurrent"
	"github.com/batonhq/baton/eventstore/kurrent/kurrenttest"
)

// replicaEnv, set to a KurrentDB connection string, makes the test binary
// a budget replica on it (budgetReplica) instead of running tests.
const replicaEnv = "BATON_TEST_BUDGET_REPLICA"

// Replica parameters, also from the environment.
const (
	replicaCallsEnv = "BATON_TEST_BUDGET_CALLS"
	replicaWorstEnv = "BATON_TEST_BUDGET_WORST"
)

// budgetReplica is one replica process: its own connection to the store,
// its own Budgets caught up on the store. It says "ready", waits for a
// line on stdin, makes its calls at once, appends their usage, and prints
// "passed N failed F" (failed: errors other than refusals).
func budgetReplica() int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "replica:", err); return 1 }
	calls, err := strconv.Atoi(os.Getenv(replicaCallsEnv))
	if err != nil {
		return fail(err)
	}
	worst, err := strconv.ParseFloat(os.Getenv(replicaWorstEnv), 64)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store, err := kurrent.Open(ctx, kurrent.Config{URL: os.Getenv(replicaEnv)})
	if err != nil {
		return fail(err)
	}
	defer store.Close()
	b := NewBudgets(nil)
	b.UseStore(store, func(err error) { fmt.Fprintln(os.Stderr, "replica:", err) })
	if err := (&Follower{Store: store, Appliers: []Applier{b}}).CatchUp(ctx); err != nil {
		return fail(err)
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fail(fmt.Errorf("no start signal: %w", err))
	}
	w := NewUsageWriter(store, func(_ uuid.UUID, _ UsageRecord, err error) { fmt.Fprintln(os.Stderr, "replica: usage:", err) })
	passed, errs := raceCalls([]*Budgets{b}, w, "t", calls, worst)
	w.Close()
	for _, err := range errs {
		fmt.Fprintln(os.Stderr, "replica:", err)
	}
	fmt.Printf("passed %d failed %d\n", passed[0], len(errs))
	return 0
}

// Three replica processes (this test binary, started again), each with its
// own connection to one KurrentDB double served on a loopback port, make
// 100 calls at once (34, 33, 33) against a budget that covers 10: exactly
// 10 pass, and a fourth replica following the store then counts 10 calls'
// cost spent and nothing held.
func TestBudgetHoldsAcrossReplicaProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	srv, err := kurrenttest.Start(kurrenttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	store, err := kurrent.Open(t.Context(), kurrent.Config{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	const worst, calls, fit = 0.125, 100, 10
	limit := worst * fit
	watcher := newReplica(t, store, nil)
	if err := watcher.SetBudget(t.Context(), store, BudgetSet{Tenant: "t", Limits: Limits{DailyUSD: &limit}}, eventstore.Metadata{}); err != nil {
		t.Fatal(err)
	}

	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		lines  chan string
		stderr bytes.Buffer
	}
	var children []*child
	for i := range 3 {
		n := calls / 3
		if i < calls%3 {
			n++
		}
		c := &child{cmd: exec.Command(exe, "-test.run=^$"), lines: make(chan string, 4)}
		c.cmd.Env = append(os.Environ(), replicaEnv+"="+srv.URL(), replicaCallsEnv+"="+strconv.Itoa(n), replicaWorstEnv+"="+strconv.FormatFloat(worst, 'g', -1, 64))
		c.cmd.Stderr = &c.stderr
		stdout, err := c.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			defer close(c.lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				c.lines <- sc.Text()
			}
		}()
		t.Cleanup(func() { c.stdin.Close(); c.cmd.Process.Kill(); c.cmd.Wait() })
		children = append(children, c)
	}
	next := func(i int, c *child) string {
		t.Helper()
		select {
		case l, ok := <-c.lines:
			if !ok {
				c.cmd.Wait()
				t.Fatalf("replica %d ended early: %s", i+1, c.stderr.String())
			}
			return l
		case <-time.After(2 * time.Minute):
			t.Fatalf("replica %d said nothing for 2 minutes: %s", i+1, c.stderr.String())
		}
		return ""
	}
	for i, c := range children {
		if l := next(i, c); l != "ready" {
			t.Fatalf("replica %d: %q", i+1, l)
		}
	}
	for _, c := range children {
		io.WriteString(c.stdin, "go\n")
	}
	total := 0
	var each []int
	for i, c := range children {
		var passed, failed int
		l := next(i, c)
		if _, err := fmt.Sscanf(l, "passed %d failed %d", &passed, &failed); err != nil {
			t.Fatalf("replica %d: %q: %v", i+1, l, err)
		}
		if err := c.cmd.Wait(); err != nil || failed > 0 {
			t.Errorf("replica %d: exit %v, %d calls failed: %s", i+1, err, failed, c.stderr.String())
		}
		total += passed
		each = append(each, passed)
	}
	lost := 0 // hold appends that lost the race to another process's and read again
	for _, a := range srv.Appends() {
		if a.Stream == BudgetStream("t") && a.Outcome == "wrong_expected_version" {
			lost++
		}
	}
	t.Logf("%d of %d calls passed a budget covering %d (per replica process %v); %d hold appends lost a race and read again", total, calls, fit, each, lost)
	if total != fit {
		t.Fatalf("%d calls passed, want %d", total, fit)
	}
	watcher.catchUp(t)
	if s := watcher.Status("t"); s.DaySpent != limit || s.ReservedUSD != 0 {
		t.Errorf("after the calls: %+v, want %v spent and nothing held", s, limit)
	}
	evs, err := eventstore.ReadWholeStream(t.Context(), store, BudgetStream("t"))
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, ev := range evs {
		if ev.Type == EventBudgetHeld {
			held++
		}
	}
	if held != fit {
		t.Errorf("%d holds in the budget stream, want %d", held, fit)
	}
}
