package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// These tests run the executor against a real `baton serve` on the
// embedded store, over real HTTP: each certification point of the
// executor protocol (GET /v1/executor-protocol) is checked by one of them.

var (
	reServing = regexp.MustCompile(`"addr":"([^"]+)".*"message":"baton serving"`)
	reBootKey = regexp.MustCompile(`export BATON_API_KEY=(btn_sk_[A-Za-z0-9]+)`)
)

// server is a running `baton serve` and a key of its default tenant.
type server struct {
	t     *testing.T
	base  string
	admin string // the bootstrap key: creates, approves, reviews
	key   string // the executor's own key
}

// builtDirs holds the directories of the binaries the tests build once;
// TestMain removes them, since no test's cleanup outlives the package's run.
var builtDirs struct {
	sync.Mutex
	list []string
}

func buildDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	builtDirs.Lock()
	builtDirs.list = append(builtDirs.list, dir)
	builtDirs.Unlock()
	return dir, nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	builtDirs.Lock()
	for _, d := range builtDirs.list {
		os.RemoveAll(d)
	}
	builtDirs.Unlock()
	os.Exit(code)
}

var buildOnce = sync.OnceValues(func() (string, error) {
	dir, err := buildDir("baton-executor-test")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "baton")
	out, err := exec.Command("go", "build", "-o", bin, "../baton").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

func startServer(t *testing.T) *server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts baton serve")
	}
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	providers := filepath.Join(dir, "providers.json")
	os.WriteFile(providers, []byte(`{"providers": []}`), 0o644)
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--providers", providers)
	cmd.Env = append(os.Environ(), "BATON_STORE=", "BATON_API_KEY=")
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait(); pw.Close() })
	s := &server{t: t}
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			if m := reBootKey.FindStringSubmatch(line); m != nil {
				s.admin = m[1]
			}
			if m := reServing.FindStringSubmatch(line); m != nil && s.base == "" {
				s.base = "http://" + m[1]
				close(found)
			}
		}
	}()
	select {
	case <-found:
	case <-time.After(60 * time.Second):
		t.Fatal("baton serve did not start")
	}
	r := s.do("POST", "/v1/admin/keys", s.admin, map[string]any{"tenant": "default", "admin": false}, 201)
	s.key = r["key"].(string)
	return s
}

func (s *server) do(method, path, key string, body any, want int) map[string]any {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.base+path, rd)
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, raw, want)
	}
	var out map[string]any
	json.Unmarshal(raw, &out)
	return out
}

func (s *server) create(extra map[string]any) string {
	s.t.Helper()
	body := map[string]any{"objective": "Rotate the staging TLS certificate", "targetExecutor": "ops-bot",
		"executorProtocol": "ops_bot.v1", "riskLevel": "high", "proofRequired": []string{"log"}}
	for k, v := range extra {
		body[k] = v
	}
	return s.do("POST", "/v1/handoff/contracts", s.admin, body, 201)["handoffId"].(string)
}

func (s *server) approve(id string) {
	s.t.Helper()
	s.do("POST", "/v1/executions/"+id+"/approval", s.admin, map[string]any{"status": "APPROVED", "approvedBy": "alice"}, 200)
}

// trail waits (long poll) until handoff id's ledger rests in state (any
// state when ""), or a guard passes, and returns its events.
func (s *server) trail(id, state string) []map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	after := 0
	for {
		l := s.do("GET", fmt.Sprintf("/v1/executions/%s/ledger?after=%d&wait=2s", id, after), s.admin, nil, 200)
		full := s.do("GET", "/v1/executions/"+id+"/ledger", s.admin, nil, 200)
		var evs []map[string]any
		for _, e := range full["events"].([]any) {
			evs = append(evs, e.(map[string]any))
		}
		after = len(evs)
		if state == "" || l["state"] == state {
			return evs
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("handoff %s did not reach %s: %v", id, state, types(evs))
		}
	}
}

// closeWithReview waits for the result, has a verifier review the proof and
// returns the closed trail.
func (s *server) closeWithReview(id string) []map[string]any {
	s.t.Helper()
	s.trail(id, "result_received")
	s.do("POST", "/v1/executions/"+id+"/review", s.admin, map[string]any{"verdict": "verified", "reviewer": "vic"}, 200)
	return s.trail(id, "ledger_closed")
}

func types(evs []map[string]any) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e["type"].(string))
	}
	return out
}

// executor runs an executor until the test ends (or stop is called).
func (s *server) executor(dir string, protocols map[string]Protocol) (e *Executor, stop func()) {
	s.t.Helper()
	return s.executorWith(dir, Config{Executor: "ops-bot", Protocols: protocols})
}

// executorWith is executor with a configuration of the test's own.
func (s *server) executorWith(dir string, cfg Config) (e *Executor, stop func()) {
	s.t.Helper()
	state, err := openState(filepath.Join(dir, "state.json"))
	if err != nil {
		s.t.Fatal(err)
	}
	e = &Executor{Base: s.base, Key: s.key, Config: cfg, State: state,
		Log: zerolog.New(zerolog.NewTestWriter(s.t)), Backoff: 50 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	s.t.Cleanup(stop)
	return e, stop
}

func shell(script string) Protocol { return Protocol{Command: []string{"sh", "-c", script}} }

// Certification points 1-5, 7 and 8: the executor acts only on approved
// handoffs targeted at it, keeps handoffId and executorRunId, heartbeats,
// returns the command's output as proof and its exit status as the result,
// with idempotency keys; the command runs on the executor's side.
func TestExecutorCarriesApprovedHandoffs(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "acted")
	// Approved before the executor starts: it finds it by the listing.
	early := s.create(nil)
	s.approve(early)

	e, _ := s.executor(dir, map[string]Protocol{"ops_bot.v1": shell(`echo "renewed $BATON_HANDOFF_ID"; echo "$BATON_HANDOFF_ID" >> ` + marker + `; sleep 1`)})
	pending := s.create(map[string]any{"heartbeatSeconds": 2})
	rejected := s.create(nil)
	other := s.create(map[string]any{"targetExecutor": "browser-agent"})
	unknown := s.create(map[string]any{"executorProtocol": "ops_bot.v2"})
	s.do("POST", "/v1/executions/"+rejected+"/approval", s.admin, map[string]any{"status": "REJECTED", "approvedBy": "alice", "reason": "not now"}, 200)
	for _, id := range []string{other, unknown} {
		s.approve(id)
	}
	evs := s.closeWithReview(early)
	if got := strings.Join(types(evs), ","); got != "ContractCreated,ApprovalDecided,ExecutorStarted,ProofReceived,ResultReceived,ProofReviewed,LedgerClosed" {
		t.Fatalf("early handoff trail: %s", got)
	}
	// Still pending: nothing was done on it.
	if got := types(s.trail(pending, "")); len(got) != 1 {
		t.Fatalf("the executor acted on a pending handoff: %v", got)
	}
	s.approve(pending)
	evs = s.closeWithReview(pending)
	var run string
	for _, ev := range evs {
		d := ev["data"].(map[string]any)
		switch ev["type"] {
		case "ExecutorStarted":
			run = d["executorRunId"].(string)
		case "ProofReceived":
			text := d["proof"].(map[string]any)["artifacts"].([]any)[0].(map[string]any)["text"].(string)
			if !strings.Contains(text, "renewed "+pending) || d["executorRunId"] != run {
				t.Fatalf("proof %v", d)
			}
		case "ResultReceived":
			if d["status"] != "SUCCEEDED" || d["executorRunId"] != run || d["request"].(map[string]any)["idempotencyKey"] != "result-"+run {
				t.Fatalf("result %v", d)
			}
		case "LedgerClosed":
			if d["finalStatus"] != "SUCCEEDED" {
				t.Fatalf("closed %v", d)
			}
		}
	}
	if r, ok := e.State.Run(pending); !ok || r.ExecutorRunID != run || r.Phase != phaseReported || len(r.Receipts) != 2 {
		t.Fatalf("state of the run: %+v", r)
	}
	// The command ran here, on the executor's side, once per handoff.
	acted, _ := os.ReadFile(marker)
	if got := strings.Fields(string(acted)); len(got) != 2 || got[0] != early || got[1] != pending {
		t.Fatalf("the command acted for %v", got)
	}
	for _, id := range []string{rejected, other, unknown} {
		if got := types(s.trail(id, "")); strings.Contains(strings.Join(got, ","), "Executor") {
			t.Fatalf("handoff %s: the executor acted: %v", id, got)
		}
	}
}

// Certification point 5 with a failure, and heartbeats: a command that
// fails is reported FAILED; while it runs longer than the lease, its
// heartbeats keep the lease.
func TestExecutorHeartbeatsAndFailure(t *testing.T) {
	s := startServer(t)
	s.executor(t.TempDir(), map[string]Protocol{"ops_bot.v1": shell(`sleep 5; echo "disk full" >&2; exit 3`)})
	// A 3 s lease over a 5 s command: renewed every second, it holds
	// however slow a loaded machine makes one renewal.
	id := s.create(map[string]any{"heartbeatSeconds": 3})
	s.approve(id)
	evs := s.trail(id, "ledger_closed") // a FAILED result closes at once
	n := 0
	for _, ev := range evs {
		if ev["type"] == "ExecutorHeartbeat" {
			n++
		}
		if ev["type"] == "ExecutorTimedOut" {
			t.Fatalf("the lease ran out under heartbeats: %v", types(evs))
		}
	}
	last := evs[len(evs)-1]["data"].(map[string]any)
	if n < 3 || last["finalStatus"] != "FAILED" {
		t.Fatalf("%d heartbeats, closed %v: %v", n, last, types(evs))
	}
}

// Certification point 6: output holding a credential never reaches the
// ledger; the proof says it was withheld.
func TestExecutorWithholdsSecrets(t *testing.T) {
	s := startServer(t)
	s.executor(t.TempDir(), map[string]Protocol{"ops_bot.v1": shell(`echo "key used: btn_sk_Q7fR2mX9kLp4Ws8Tz1Vb6Nc3Hd5Jg0Ye7Ua2Io9P"`)})
	id := s.create(nil)
	s.approve(id)
	evs := s.closeWithReview(id)
	raw, _ := json.Marshal(evs)
	if strings.Contains(string(raw), "Q7fR2mX9kLp4") || !strings.Contains(string(raw), "output withheld") {
		t.Fatalf("trail: %s", raw)
	}
}

// Certification points 2 and 8 across a restart: stopped mid-run, the
// executor goes on with the same executorRunId; a report repeated after a
// crash is answered from the ledger (Idempotent-Replayed) and records
// nothing twice.
func TestExecutorSurvivesRestart(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	proto := map[string]Protocol{"ops_bot.v1": shell(`echo x >> ` + started + `; sleep 2; echo done`)}
	e, stop := s.executor(dir, proto)
	id := s.create(nil)
	s.approve(id)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, _ := os.ReadFile(started); len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	first, _ := e.State.Run(id)
	stop() // mid-run
	if r, _ := e.State.Run(id); r.Phase != phaseRunning {
		t.Fatalf("stopped mid-run, the state says %+v", r)
	}
	e2, stop2 := s.executor(dir, proto)
	evs := s.closeWithReview(id)
	stop2()
	if r, _ := e2.State.Run(id); r.ExecutorRunID != first.ExecutorRunID || r.Phase != phaseReported {
		t.Fatalf("after the restart: %+v, first run %s", r, first.ExecutorRunID)
	}
	starts := 0
	for _, ev := range evs {
		if ev["type"] == "ExecutorStarted" {
			starts++
		}
	}
	if starts != 1 {
		t.Fatalf("trail %v", types(evs))
	}

	// A crash after the result was recorded but before the state said so:
	// the next start reports again, with the same keys.
	r, _ := e2.State.Run(id)
	r.Phase, r.Output = phaseFinished, "done\n" // as the state held it before the report
	e2.State.Put(r)
	_, stop3 := s.executor(dir, proto)
	time.Sleep(500 * time.Millisecond)
	for i := 0; i < 100; i++ {
		if rr, _ := e2.State.Run(id); rr.Phase == phaseReported {
			break
		}
		st, _ := openState(filepath.Join(dir, "state.json"))
		if rr, _ := st.Run(id); rr.Phase == phaseReported {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop3()
	if again := s.trail(id, ""); len(again) != len(evs) {
		t.Fatalf("the repeated report recorded more: %v", types(again))
	}
	st, _ := openState(filepath.Join(dir, "state.json"))
	if rr, _ := st.Run(id); rr.Note != "" {
		t.Fatalf("the repeated report was refused: %s", rr.Note)
	}
}

// Certification point 1: the executor reads protocolVersion and
// schemaVersion before anything else, and does not act on others.
func TestExecutorChecksVersions(t *testing.T) {
	e := &Executor{Config: Config{Executor: "ops-bot", Protocols: map[string]Protocol{"ops_bot.v1": shell("true")}}}
	c := contract{ProtocolVersion: "svc.agent_os.v1", SchemaVersion: "svc.handoff.v1", TargetExecutor: "ops-bot", ExecutorProtocol: "ops_bot.v1", State: "approval_decided"}
	c.ApprovalPolicy.Status = "APPROVED"
	if why := e.why(c); why != "" {
		t.Fatalf("refused a good contract: %s", why)
	}
	for name, mutate := range map[string]func(*contract){
		"protocol v2":    func(c *contract) { c.ProtocolVersion = "svc.agent_os.v2" },
		"schema v2":      func(c *contract) { c.SchemaVersion = "svc.handoff.v2" },
		"pending":        func(c *contract) { c.ApprovalPolicy.Status = "PENDING_APPROVAL" },
		"expired":        func(c *contract) { c.ApprovalPolicy.Status = "EXPIRED" },
		"started":        func(c *contract) { c.State = "proof_received" },
		"other target":   func(c *contract) { c.TargetExecutor = "browser-agent" },
		"no command for": func(c *contract) { c.ExecutorProtocol = "ops_bot.v9" },
	} {
		bad := c
		mutate(&bad)
		if e.why(bad) == "" {
			t.Errorf("%s: acted", name)
		}
	}
}

// A run that missed its lease under onExecutorTimeout release frees the
// handoff: the executor, started again, finds its old run refused and takes
// the handoff with a new run (it watched approvals only, and the released
// handoff waited for ever).
func TestExecutorTakesAReleasedHandoffAgain(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "first")
	proto := map[string]Protocol{"ops_bot.v1": shell(`if [ -f ` + marker + ` ]; then echo renewed; else touch ` + marker + `; sleep 60; fi`)}
	e, stop := s.executor(dir, proto)
	id := s.create(map[string]any{"heartbeatSeconds": 2, "onExecutorTimeout": "release"})
	s.approve(id)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	first, _ := e.State.Run(id)
	stop() // the executor dies mid-run; its lease runs out
	for {
		evs := s.trail(id, "")
		if slices.Contains(types(evs), "ExecutorTimedOut") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no release: %v", types(evs))
		}
		time.Sleep(200 * time.Millisecond)
	}
	e2, stop2 := s.executor(dir, proto)
	evs := s.closeWithReview(id)
	stop2()
	r, _ := e2.State.Run(id)
	if r.ExecutorRunID == first.ExecutorRunID || r.Phase != phaseReported {
		t.Fatalf("after the release: %+v, first run %s; trail %v", r, first.ExecutorRunID, types(evs))
	}
	last := evs[len(evs)-1]["data"].(map[string]any)
	if last["finalStatus"] != "SUCCEEDED" {
		t.Fatalf("closed %v: %v", last, types(evs))
	}
}

// Stopping the executor stops what its command started, not the shell
// alone: a process the shell had started ran on, and the next start ran
// the command again beside it.
func TestExecutorStopStopsTheWholeCommand(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	_, stop := s.executor(dir, map[string]Protocol{"ops_bot.v1": shell(`sleep 60 & echo $! > ` + pidFile + `; wait; echo after`)})
	id := s.create(nil)
	s.approve(id)
	var pid int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			fmt.Sscan(string(b), &pid)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
	}
	stop()
	time.Sleep(100 * time.Millisecond)
	// A zombie (killed, not yet reaped by init) has stopped too.
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(st), ") Z ") {
		exec.Command("kill", fmt.Sprint(pid)).Run()
		t.Fatalf("the command's child %d still runs after the executor stopped", pid)
	}
}

// dropHeartbeats fails every heartbeat while on, as a cut network would.
type dropHeartbeats struct{ on atomic.Bool }

func (d *dropHeartbeats) RoundTrip(r *http.Request) (*http.Response, error) {
	if d.on.Load() && strings.HasSuffix(r.URL.Path, "/heartbeat") {
		return nil, fmt.Errorf("dropped")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A run Baton released (it missed its lease) stops its command at the
// refused heartbeat: the command went on to its end beside the new run,
// which could start only after it.
func TestExecutorStopsAReleasedRun(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "first")
	state, err := openState(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	drop := &dropHeartbeats{}
	e := &Executor{Base: s.base, Key: s.key, State: state, Log: zerolog.New(zerolog.NewTestWriter(t)),
		Backoff: 50 * time.Millisecond, Client: &http.Client{Transport: drop},
		Config: Config{Executor: "ops-bot", Protocols: map[string]Protocol{"ops_bot.v1": shell(`if [ -f ` + marker + ` ]; then echo renewed; else touch ` + marker + `; sleep 100; fi`)}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	id := s.create(map[string]any{"heartbeatSeconds": 2, "onExecutorTimeout": "release"})
	s.approve(id)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	drop.on.Store(true)
	for !slices.Contains(types(s.trail(id, "")), "ExecutorTimedOut") {
		if time.Now().After(deadline) {
			t.Fatal("no release")
		}
		time.Sleep(200 * time.Millisecond)
	}
	drop.on.Store(false)
	evs := s.closeWithReview(id) // within a minute: long before the first command's end
	if last := evs[len(evs)-1]["data"].(map[string]any); last["finalStatus"] != "SUCCEEDED" {
		t.Fatalf("closed %v: %v", last, types(evs))
	}
}

// A handoff closed under a running command (its resultTimeoutSeconds
// passed) stops the command at the refused heartbeat: it ran on to its
// end for a ledger that takes nothing more.
func TestExecutorStopsARunWhoseHandoffClosed(t *testing.T) {
	s := startServer(t)
	e, _ := s.executor(t.TempDir(), map[string]Protocol{"ops_bot.v1": shell(`sleep 100`)})
	id := s.create(map[string]any{"heartbeatSeconds": 3, "resultTimeoutSeconds": 2})
	s.approve(id)
	s.trail(id, "ledger_closed")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if r, ok := e.State.Run(id); ok && r.Phase == phaseReported {
			if !strings.Contains(r.Note, "ledger_closed") {
				t.Fatalf("run given up with %q", r.Note)
			}
			return
		}
		if time.Now().After(deadline) {
			r, _ := e.State.Run(id)
			t.Fatalf("the command still runs on a closed handoff: %+v", r)
		}
	}
}

// A run reported FAILED because the proof policy asks for artifact types
// the command does not produce, and a crash before the state said so: the
// next start reports it again and finds it recorded. It sent the SUCCEEDED
// result again, was refused (the handoff had closed on the FAILED one) and
// logged the run as abandoned.
func TestExecutorRestartAfterAForcedFailure(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	proto := map[string]Protocol{"ops_bot.v1": shell(`echo renewed`)}
	e, stop := s.executor(dir, proto)
	id := s.create(map[string]any{"proofRequired": []string{"log", "screenshot"}})
	s.approve(id)
	evs := s.trail(id, "ledger_closed")
	if last := evs[len(evs)-1]["data"].(map[string]any); last["finalStatus"] != "FAILED" {
		t.Fatalf("closed %v: %v", last, types(evs))
	}
	var r Run
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r, _ = e.State.Run(id); r.Phase == phaseReported {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run was not reported: %+v", r)
		}
	}
	stop()
	if r.Note != "" {
		t.Fatalf("reported with a note: %+v", r)
	}
	// The crash: the result was recorded, the state still says finished.
	r.Phase, r.Receipts, r.Output = phaseFinished, nil, "renewed\n"
	if err := e.State.Put(r); err != nil {
		t.Fatal(err)
	}
	e2, _ := s.executor(dir, proto)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r, _ = e2.State.Run(id); r.Phase == phaseReported {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run was not reported again: %+v", r)
		}
	}
	if r.Note != "" || len(r.Receipts) != 2 {
		t.Fatalf("after the restart: %+v; want the recorded result's receipt, no note", r)
	}
	if again := s.trail(id, ""); len(again) != len(evs) {
		t.Fatalf("the repeated report recorded more: %v", types(again))
	}
}

// A command whose output is only white space (`echo`) is reported: Baton
// refuses a blank artifact text, and the run was abandoned there, its
// handoff left started for ever.
func TestExecutorReportsABlankOutput(t *testing.T) {
	s := startServer(t)
	e, _ := s.executor(t.TempDir(), map[string]Protocol{"ops_bot.v1": shell(`echo; echo " "`)})
	id := s.create(nil)
	s.approve(id)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r, _ := e.State.Run(id); r.Phase == phaseReported {
			if r.Note != "" {
				t.Fatalf("run given up: %s", r.Note)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run was not reported")
		}
	}
	for _, ev := range s.closeWithReview(id) {
		if ev["type"] == "ProofReceived" {
			d := ev["data"].(map[string]any)
			if text := d["proof"].(map[string]any)["artifacts"].([]any)[0].(map[string]any)["text"]; text != "(no output)" {
				t.Fatalf("proof text %q", text)
			}
		}
	}
}

// A key Baton refuses (revoked while a run reports) stops the run where it
// is, not for good: it was given up ("run abandoned"), and the executor,
// restarted with a good key, never reported the command's outcome, its
// handoff left started for ever.
func TestExecutorKeepsARunWhoseKeyWasRefused(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	gate := filepath.Join(dir, "go-on")
	proto := map[string]Protocol{"ops_bot.v1": shell(`while [ ! -f ` + gate + ` ]; do sleep 0.05; done; echo renewed`)}
	k := s.do("POST", "/v1/admin/keys", s.admin, map[string]any{"tenant": "default", "admin": false}, 201)
	good := s.key
	s.key = k["key"].(string)
	e, stop := s.executor(dir, proto)
	id := s.create(nil)
	s.approve(id)
	s.trail(id, "executor_started")
	s.do("DELETE", "/v1/admin/keys/"+k["keyId"].(string), s.admin, nil, 200)
	os.WriteFile(gate, nil, 0o644)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r, _ := e.State.Run(id); r.Phase != phaseRunning {
			time.Sleep(500 * time.Millisecond) // its report is refused
			if r, _ = e.State.Run(id); r.Phase != phaseFinished || r.Note != "" {
				t.Fatalf("the run, its key refused: %+v; want it finished, to be reported", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not finish")
		}
	}
	stop()
	s.key = good
	s.executor(dir, proto)
	evs := s.closeWithReview(id)
	if last := evs[len(evs)-1]["data"].(map[string]any); last["finalStatus"] != "SUCCEEDED" {
		t.Fatalf("closed %v: %v", last, types(evs))
	}
}

// A command that exits 0 and leaves a process holding its output (a
// service it started in the background) succeeded: it was reported FAILED,
// "exit status -1", once the executor stopped waiting for the output.
func TestExecutorReportsACommandThatLeftAProcessBehind(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "bg.pid")
	t.Cleanup(func() {
		var pid int
		if b, err := os.ReadFile(pidFile); err == nil && func() bool { _, err := fmt.Sscan(string(b), &pid); return err == nil }() && pid > 1 {
			exec.Command("kill", fmt.Sprint(pid)).Run()
		}
	})
	s.executor(dir, map[string]Protocol{"ops_bot.v1": shell(`sleep 30 & echo $! > ` + pidFile + `; echo started`)})
	id := s.create(nil)
	s.approve(id)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		for _, ev := range s.trail(id, "") { // a FAILED result closes the handoff at once
			if ev["type"] == "ResultReceived" {
				d := ev["data"].(map[string]any)
				if d["status"] != "SUCCEEDED" || d["result"].(map[string]any)["summary"] != "exit status 0" {
					t.Fatalf("result %v", d)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no result")
		}
	}
}

// A process the command left running that goes on writing to its output
// (a service started in the background, logging) runs on after the report:
// its output was closed five seconds after the command exited, and it was
// killed by SIGPIPE at its next write.
func TestExecutorLeavesABackgroundProcessRunning(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	finished := filepath.Join(dir, "finished")
	s.executor(dir, map[string]Protocol{"ops_bot.v1": shell(`(i=0; while [ $i -lt 8 ]; do echo tick $i; i=$((i+1)); sleep 1; done; touch ` + finished + `) & echo started`)})
	id := s.create(nil)
	s.approve(id)
	if d := s.result(id); d["status"] != "SUCCEEDED" || d["result"].(map[string]any)["summary"] != "exit status 0" {
		t.Fatalf("result %v", d)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(finished); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the process the command left running did not finish: it was killed once its output was closed")
		}
	}
}

// An objective holding a NUL, which Baton takes, reaches the command: no
// environment variable can hold a NUL, and the command did not start at
// all ("environment variable contains NUL"), its run reported FAILED.
func TestExecutorRunsAnObjectiveWithANUL(t *testing.T) {
	s := startServer(t)
	s.executor(t.TempDir(), map[string]Protocol{"ops_bot.v1": shell(`echo "objective: $BATON_OBJECTIVE"`)})
	id := s.create(map[string]any{"objective": "renew\x00now"})
	s.approve(id)
	if d := s.result(id); d["status"] != "SUCCEEDED" || d["result"].(map[string]any)["output"] != "objective: renew\uFFFDnow\n" {
		t.Fatalf("result %v", d)
	}
}

// result waits for handoff id's result (a FAILED one closes the handoff at
// once, a SUCCEEDED one waits for review) and returns its data.
func (s *server) result(id string) map[string]any {
	s.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		for _, ev := range s.trail(id, "") {
			if ev["type"] == "ResultReceived" {
				return ev["data"].(map[string]any)
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("handoff %s: no result", id)
		}
	}
}

// A command killed by a signal (the OOM killer's SIGKILL) says so in its
// result: it said "exit status -1", an exit status no command has.
func TestExecutorSaysACommandWasKilled(t *testing.T) {
	s := startServer(t)
	s.executor(t.TempDir(), map[string]Protocol{"ops_bot.v1": shell(`echo before; kill -9 $$`)})
	id := s.create(nil)
	s.approve(id)
	if d := s.result(id); d["status"] != "FAILED" || d["result"].(map[string]any)["summary"] != "signal: killed" {
		t.Fatalf("result %v", d)
	}
}

// A reported run's output is not kept in the state file: the ledger has
// it. Every run's output stayed, up to 60 KiB each, in a file rewritten
// whole at every event and every step of every run.
func TestExecutorForgetsTheOutputOfAReportedRun(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	e, _ := s.executor(dir, map[string]Protocol{"ops_bot.v1": shell(`head -c 30000 /dev/zero | tr '\0' 'y'; echo`)})
	id := s.create(nil)
	s.approve(id)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r, _ := e.State.Run(id); r.Phase == phaseReported {
			if r.Output != "" || r.Note != "" || len(r.Receipts) != 2 {
				t.Fatalf("reported run: %d bytes of output kept, note %q, receipts %v", len(r.Output), r.Note, r.Receipts)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run was not reported")
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "state.json")); len(b) > 4<<10 {
		t.Fatalf("the state file holds %d bytes", len(b))
	}
}

// The executor's own key is not handed to the commands it runs: any key
// may approve handoffs, and a command (fed contracts others wrote) got it
// in BATON_API_KEY.
func TestExecutorKeepsItsKeyFromTheCommand(t *testing.T) {
	s := startServer(t)
	t.Setenv("BATON_API_KEY", "the-executors-key")
	s.executor(t.TempDir(), map[string]Protocol{"ops_bot.v1": shell(`echo "key=${BATON_API_KEY:-none}"`)})
	id := s.create(nil)
	s.approve(id)
	if d := s.result(id); d["result"].(map[string]any)["output"] != "key=none\n" {
		t.Fatalf("result %v", d)
	}
}

// A handoff closed under a running command that has no lease (no
// heartbeatSeconds, so no heartbeat to be refused) stops the command too:
// it ran on to its end, acting after the handoff had closed.
func TestExecutorStopsAnUnleasedRunWhoseHandoffClosed(t *testing.T) {
	s := startServer(t)
	e, _ := s.executor(t.TempDir(), map[string]Protocol{"ops_bot.v1": shell(`sleep 100`)})
	id := s.create(map[string]any{"resultTimeoutSeconds": 2})
	s.approve(id)
	s.trail(id, "ledger_closed")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if r, ok := e.State.Run(id); ok && r.Phase == phaseReported {
			if !strings.Contains(r.Note, "ledger_closed") {
				t.Fatalf("run given up with %q", r.Note)
			}
			return
		}
		if time.Now().After(deadline) {
			r, _ := e.State.Run(id)
			t.Fatalf("the command still runs on a closed handoff: %+v", r)
		}
	}
}

// At most maxRuns commands run at once; the handoffs approved beyond them
// wait, unclaimed (no ExecutorStarted, so no lease runs out), keep their
// places across a restart, and are all carried. A catch-up of many
// approvals started every command at once.
func TestExecutorBoundsConcurrentCommands(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	active, seen := filepath.Join(dir, "active"), filepath.Join(dir, "seen")
	os.Mkdir(active, 0o755)
	var ids []string
	for range 5 {
		// Under release, the lease starts with the run: one waiting
		// longer than heartbeatSeconds for a slot is not timed out.
		id := s.create(map[string]any{"heartbeatSeconds": 2, "onExecutorTimeout": "release"})
		s.approve(id)
		ids = append(ids, id)
	}
	// Each command notes how many run beside it (itself included).
	script := `touch ` + active + `/$BATON_HANDOFF_ID; ls ` + active + ` | wc -l >> ` + seen + `; sleep 1.5; rm ` + active + `/$BATON_HANDOFF_ID`
	two := 2
	start := func() (*Executor, func()) {
		return s.executorWith(dir, Config{Executor: "ops-bot", Protocols: map[string]Protocol{"ops_bot.v1": shell(script)}, MaxRuns: &two})
	}
	claimed := func() int {
		n := 0
		for _, id := range ids {
			if slices.Contains(types(s.trail(id, "")), "ExecutorStarted") {
				n++
			}
		}
		return n
	}
	e, stop := start()
	for deadline := time.Now().Add(30 * time.Second); claimed() < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no run started")
		}
	}
	time.Sleep(300 * time.Millisecond)
	stop()
	// Stopped while two ran: the others were never claimed, and are in
	// the state file to be taken up again.
	if n := claimed(); n > 3 {
		t.Fatalf("%d handoffs claimed with maxRuns 2, in less than one run's time", n)
	}
	for _, id := range ids {
		if _, ok := e.State.Run(id); !ok {
			t.Fatalf("handoff %s is not in the state file", id)
		}
	}
	start()
	for _, id := range ids {
		if r := s.result(id); r["status"] != "SUCCEEDED" {
			t.Fatalf("handoff %s: result %v", id, r)
		}
	}
	b, _ := os.ReadFile(seen)
	for _, n := range strings.Fields(string(b)) {
		if n != "1" && n != "2" {
			t.Fatalf("commands running at once: %s", b)
		}
	}
}

// A position that names no event of the store (a store restored from an
// older backup) is dropped, and the executor starts again from the
// listing: Baton answered 409 position_ahead, asked again for ever, and
// nothing approved was ever taken.
func TestExecutorStartsOverFromAnUnknownPosition(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	before := s.create(nil)
	s.approve(before)
	os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"lastEventId":"999999/999999","runs":{}}`), 0o600)
	s.executor(dir, map[string]Protocol{"ops_bot.v1": shell(`echo done`)})
	if r := s.result(before); r["status"] != "SUCCEEDED" {
		t.Fatalf("result %v", r)
	}
	after := s.create(nil)
	s.approve(after)
	if r := s.result(after); r["status"] != "SUCCEEDED" {
		t.Fatalf("result %v", r)
	}
}

// beforeFirstHeartbeat runs its hook once, before the first heartbeat
// goes: another executor claims the handoff first.
type beforeFirstHeartbeat struct {
	once sync.Once
	hook func()
}

func (b *beforeFirstHeartbeat) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/heartbeat") {
		b.once.Do(b.hook)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// Two executors of one name take the same handoffs; the one that lost the
// claim takes the handoff when the winner's run is released (it died): the
// run it had given up (executor_run_mismatch) kept it from taking it ever
// again, and the handoff waited for the dead executor.
func TestExecutorTakesOverFromAnotherThatDied(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	id := s.create(map[string]any{"heartbeatSeconds": 2, "onExecutorTimeout": "release"})
	state, err := openState(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The other executor claims the handoff first, then dies: no more
	// heartbeats, and its lease runs out.
	claim := &beforeFirstHeartbeat{hook: func() {
		s.do("POST", "/v1/executions/"+id+"/heartbeat", s.key, map[string]any{"executorRunId": "run-other", "executorType": "ops-bot"}, 200)
	}}
	e := &Executor{Base: s.base, Key: s.key, State: state, Log: zerolog.New(zerolog.NewTestWriter(t)),
		Backoff: 50 * time.Millisecond, Client: &http.Client{Transport: claim},
		Config: Config{Executor: "ops-bot", Protocols: map[string]Protocol{"ops_bot.v1": shell("echo took over")}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	s.approve(id)
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Contains(types(s.trail(id, "")), "ExecutorTimedOut") {
		if time.Now().After(deadline) {
			t.Fatal("no release")
		}
		time.Sleep(200 * time.Millisecond)
	}
	evs := s.closeWithReview(id)
	if last := evs[len(evs)-1]["data"].(map[string]any); last["finalStatus"] != "SUCCEEDED" {
		t.Fatalf("closed %v: %v", last, types(evs))
	}
}
