package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batonhttp "github.com/batonhq/baton/http"
)

// buildCommand builds the command in the package folder pkg (relative to
// this one) into dir, with the race detector when the test binary has it,
// and skips the test when it cannot be built.
func buildCommand(t *testing.T, dir, pkg string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the replica test stops its processes with SIGINT, which Windows does not have")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("cannot build %s: no go command in PATH (%v)", pkg, err)
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	if pkg == "." {
		bin = filepath.Join(dir, "baton")
	}
	args := []string{"build", "-o", bin}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" && s.Value == "true" {
				args = append(args, "-race")
			}
		}
	}
	cmd := exec.Command(goTool, append(args, pkg)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build %s (go %s %s): %v\n%s", pkg, strings.Join(args, " "), pkg, err, out)
	}
	return bin
}

// proc is a child process whose output (stdout and stderr, line by line) the
// test reads as it comes.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd

	mu    sync.Mutex
	lines []string
	done  chan struct{} // closed when the process has exited and its output is read
	err   error         // Wait's result, once done is closed
}

// startProc starts bin with args and stops it when the test ends: SIGINT
// first, then SIGKILL if it has not exited within 15 s.
func startProc(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "BATON_STORE=", "BATON_KURRENTDB_URL=", "BATON_DATA_DIR=", "BATON_API_KEY=")
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var readers sync.WaitGroup
	for _, r := range []io.Reader{stdout, stderr} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				p.mu.Lock()
				p.lines = append(p.lines, sc.Text())
				p.mu.Unlock()
			}
		}()
	}
	go func() {
		readers.Wait() // the pipes must be drained before Wait
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop() })
	return p
}

// stop ends the process (SIGINT, then SIGKILL after 15 s) and returns how
// it exited.
func (p *proc) stop() error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.t.Errorf("%s did not stop within 15 s of SIGINT; killing it", p.name)
		p.cmd.Process.Kill()
		<-p.done
	}
	return p.err
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// await waits for a line matching re and returns its submatches.
func (p *proc) await(re *regexp.Regexp, timeout time.Duration) []string {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for seen := 0; ; {
		p.mu.Lock()
		lines := p.lines[seen:]
		seen = len(p.lines)
		p.mu.Unlock()
		for _, l := range lines {
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		}
		select {
		case <-p.done:
			p.t.Fatalf("%s exited (%v) before printing %s:\n%s", p.name, p.err, re, p.output())
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s did not print %s within %v:\n%s", p.name, re, timeout, p.output())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var (
	reDoubleURL = regexp.MustCompile(`^BATON_KURRENTDB_URL=(esdb://\S+)$`)
	reServing   = regexp.MustCompile(`"addr":"([^"]+)".*"message":"baton serving"`)
	reBootKey   = regexp.MustCompile(`export BATON_API_KEY=(btn_sk_[A-Za-z0-9]+)`)
)

// answer is an HTTP answer with its decoded body.
type answer struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

type apiClient struct {
	t   *testing.T
	c   *http.Client
	key string
}

func (a *apiClient) do(method, url string, body any, headers ...string) answer {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("x-api-key", a.key)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := a.c.Do(req)
	if err != nil {
		a.t.Errorf("%s %s: %v", method, url, err)
		return answer{}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := answer{status: resp.StatusCode, header: resp.Header, raw: raw}
	json.Unmarshal(raw, &out.body)
	return out
}

// TestReplicasShareKurrentDB runs the test double as a process of its own
// (baton-kurrent-double) and three `baton serve --store kurrent`
// processes on it, each with its own read models. It checks that exactly
// one replica creates the bootstrap key, that a write through one replica
// is read through another with the consistency token, that approvals raced
// across the replicas make exactly one transition (the ledger's
// expected-revision appends), that each deadline is recorded once though
// every replica runs a timer loop, and that every replica stops cleanly.
func TestReplicasShareKurrentDB(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four processes")
	}
	// Every replica holds the transparency log's key and signs.
	logKey := filepath.Join(t.TempDir(), "log.key")
	var kout bytes.Buffer
	if err := run(context.Background(), []string{"log", "keygen", "--origin", "baton.test/replicas", "--out", logKey}, &kout, &kout); err != nil {
		t.Fatal(err)
	}
	set := startReplicaSet(t, []string{"--system-event-every", "5"}, "--log-key-file", logKey, "--log-interval", "20ms")
	bin, url, base := set.bin, set.url, set.base
	key, printed := "", 0
	for _, r := range set.replicas {
		if m := reBootKey.FindStringSubmatch(r.output()); m != nil {
			key = m[1]
			printed++
		}
	}
	if printed != 1 {
		t.Fatalf("%d replicas printed a bootstrap key, want exactly 1", printed)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	api := &apiClient{t: t, c: client, key: key}
	for i, b := range base {
		// Each replica knows the key, whichever created it.
		if r := api.do("GET", b+"/v1/handoff/contracts", nil); r.status != 200 {
			t.Fatalf("replica %d refuses the bootstrap key: %d %s", i+1, r.status, r.raw)
		}
	}

	position := func(r answer) string {
		t.Helper()
		v := r.header.Get(batonhttp.PositionHeader)
		if _, err := batonhttp.ParsePosition(v); err != nil {
			t.Fatalf("answer %d without a valid %s (%q): %s", r.status, batonhttp.PositionHeader, v, r.raw)
		}
		return v
	}
	create := func(via string, objective string) (id, pos string) {
		t.Helper()
		r := api.do("POST", via+"/v1/handoff/contracts", map[string]any{
			"objective": objective, "targetExecutor": "ops-bot", "executorProtocol": "ops_bot.v1",
			"riskLevel": "medium", "approvalMode": "manual",
		})
		if r.status != 201 {
			t.Fatalf("create through %s: %d %s", via, r.status, r.raw)
		}
		return r.body["handoffId"].(string), position(r)
	}

	// A write through replica 1, read through replica 2 with its token.
	id1, pos1 := create(base[0], "Rotate the staging TLS certificate")
	r := api.do("GET", base[1]+"/v1/handoff/contracts/"+id1, nil, batonhttp.ReadAfterHeader, pos1)
	if r.status != 200 || r.body["handoffId"] != id1 {
		t.Fatalf("read through replica 2 after %s: %d %s", pos1, r.status, r.raw)
	}

	const racers = 30
	race := func(id string, body func(i int) map[string]any, headers ...string) []answer {
		out := make([]answer, racers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := 0; i < racers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				out[i] = api.do("POST", base[i%3]+"/v1/executions/"+id+"/approval", body(i), headers...)
			}()
		}
		close(start)
		wg.Wait()
		return out
	}
	// checkLedger reads the trail through every replica after pos and
	// returns the approval events each shows.
	checkLedger := func(id, pos string) []map[string]any {
		t.Helper()
		var first []map[string]any
		for i, b := range base {
			l := api.do("GET", b+"/v1/executions/"+id+"/ledger", nil, batonhttp.ReadAfterHeader, pos)
			if l.status != 200 {
				t.Fatalf("ledger through replica %d: %d %s", i+1, l.status, l.raw)
			}
			if chain, _ := l.body["chain"].(map[string]any); chain["intact"] != true {
				t.Fatalf("ledger through replica %d: chain %v", i+1, l.body["chain"])
			}
			var approvals []map[string]any
			evs, _ := l.body["events"].([]any)
			for _, e := range evs {
				if m, _ := e.(map[string]any); m["type"] == "ApprovalDecided" {
					approvals = append(approvals, m)
				}
			}
			if len(approvals) != 1 || len(evs) != 2 {
				t.Fatalf("ledger through replica %d: %d events, %d approvals, want 2 and 1:\n%s", i+1, len(evs), len(approvals), l.raw)
			}
			if first == nil {
				first = approvals
			} else if approvals[0]["hash"] != first[0]["hash"] {
				t.Fatalf("replica %d shows approval %v, replica 1 %v", i+1, approvals[0]["hash"], first[0]["hash"])
			}
		}
		return first
	}

	// 1. The same approval, with the same Idempotency-Key, through all three
	// replicas at once: one is recorded, the others are replays of it.
	idA, _ := create(base[1], "Renew the production database credentials")
	same := race(idA, func(int) map[string]any { return map[string]any{"status": "APPROVED", "approvedBy": "alice"} }, "Idempotency-Key", "approve-"+idA)
	fresh, replayed, tokens := 0, 0, map[string]bool{}
	for i, a := range same {
		switch {
		case a.status == 200 && a.header.Get("Idempotent-Replayed") == "true":
			replayed++
		case a.status == 200:
			fresh++
		default:
			t.Fatalf("same approval %d through replica %d: %d %s", i, i%3+1, a.status, a.raw)
		}
		tokens[position(a)] = true
	}
	if fresh != 1 || replayed != racers-1 || len(tokens) != 1 {
		t.Fatalf("same approval x%d: %d recorded, %d replayed, %d distinct positions; want 1, %d, 1", racers, fresh, replayed, len(tokens), racers-1)
	}
	var posA string
	for p := range tokens {
		posA = p
	}
	checkLedger(idA, posA)

	// 2. Different approvers race: exactly one decides, the others are told
	// the approval was already decided.
	idB, _ := create(base[2], "Rotate the signing key")
	diff := race(idB, func(i int) map[string]any {
		return map[string]any{"status": "APPROVED", "approvedBy": fmt.Sprintf("approver-%02d", i)}
	})
	winners, refused := 0, 0
	winner, posB := "", ""
	for i, a := range diff {
		switch {
		case a.status == 200 && a.header.Get("Idempotent-Replayed") == "":
			winners++
			winner, posB = fmt.Sprintf("approver-%02d", i), position(a)
		case a.status == 409 && a.body["code"] == "approval_already_decided":
			refused++
		default:
			t.Fatalf("approval by approver-%02d through replica %d: %d %s", i, i%3+1, a.status, a.raw)
		}
	}
	if winners != 1 || refused != racers-1 {
		t.Fatalf("different approvers x%d: %d recorded, %d refused; want 1 and %d", racers, winners, refused, racers-1)
	}
	approvals := checkLedger(idB, posB)
	if d, _ := approvals[0]["data"].(map[string]any); d["decidedBy"] != winner {
		t.Fatalf("the ledger's approval %v is not the winner's (%s)", approvals[0]["data"], winner)
	}

	// 3. Deadlines: every replica runs a timer loop over its own read
	// models; each deadline is recorded once, by whichever fires first.
	var timed []string
	for i := 0; i < 3; i++ {
		r := api.do("POST", base[i]+"/v1/handoff/contracts", map[string]any{
			"objective": "Left alone", "targetExecutor": "ops-bot", "executorProtocol": "ops_bot.v1",
			"riskLevel": "high", "approvalTimeoutSeconds": 1,
		})
		if r.status != 201 {
			t.Fatalf("create with a deadline: %d %s", r.status, r.raw)
		}
		timed = append(timed, r.body["handoffId"].(string))
	}
	var idL string
	if r := api.do("POST", base[1]+"/v1/handoff/contracts", map[string]any{
		"objective": "An executor that never calls back", "targetExecutor": "ops-bot", "executorProtocol": "ops_bot.v1",
		"riskLevel": "high", "heartbeatSeconds": 1,
	}); r.status != 201 {
		t.Fatalf("create with a lease: %d %s", r.status, r.raw)
	} else {
		idL = r.body["handoffId"].(string)
	}
	if r := api.do("POST", base[2]+"/v1/executions/"+idL+"/approval", map[string]any{"status": "APPROVED", "approvedBy": "alice"}); r.status != 200 {
		t.Fatalf("approve: %d %s", r.status, r.raw)
	}
	timed = append(timed, idL)
	for _, id := range timed {
		for i, b := range base {
			l := api.do("GET", b+"/v1/executions/"+id+"/ledger?after=2&wait=20s", nil)
			if l.status != 200 || l.body["state"] != "ledger_closed" {
				t.Fatalf("ledger of %s through replica %d: %d %s", id, i+1, l.status, l.raw)
			}
			l = api.do("GET", b+"/v1/executions/"+id+"/ledger", nil)
			n := map[string]int{}
			evs, _ := l.body["events"].([]any)
			for _, e := range evs {
				m, _ := e.(map[string]any)
				n[m["type"].(string)]++
			}
			if n["ApprovalExpired"]+n["ExecutorTimedOut"] != 1 || n["LedgerClosed"] != 1 {
				t.Fatalf("ledger of %s through replica %d: %v", id, i+1, n)
			}
		}
	}
	// Info lines leave a server in batches, up to 100 ms late (logWindow):
	// count once they have had the time to come, and once more after a
	// window, so that a second firing would be seen too.
	count := func() (fired int) {
		for _, r := range set.replicas {
			fired += strings.Count(r.output(), "deadline recorded")
		}
		return fired
	}
	for end := time.Now().Add(30 * time.Second); count() < len(timed) && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(2 * logWindow)
	if fired := count(); fired != len(timed) {
		t.Fatalf("the replicas recorded %d deadlines for %d handoffs", fired, len(timed))
	}

	// The store itself, checked from outside the replicas.
	verify := exec.Command(bin, "ledger", "verify", "--store", "kurrent", "--kurrentdb-url", url)
	out, err := verify.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "7 handoffs, 18 events, 0 broken") {
		t.Fatalf("ledger verify against the double: %v\n%s", err, out)
	}

	// 4. The transparency log: the three replicas, each signing, come to
	// serve the same checkpoint over all 18 events, and none saw a claim
	// that did not match its own tree.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var cps []string
		for _, b := range base {
			r := api.do("GET", b+"/v1/log/checkpoint", nil)
			cps = append(cps, string(r.raw))
		}
		if strings.HasPrefix(cps[0], "baton.test/replicas\n18\n") && cps[1] == cps[0] && cps[2] == cps[0] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replicas serve different checkpoints, or none over 18 events:\n%q", cps)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, r := range set.replicas {
		if strings.Contains(r.output(), "does not match the log built") {
			t.Fatalf("%s saw a fork:\n%s", r.name, r.output())
		}
	}

	client.CloseIdleConnections()
	set.stop()
}

// replicaSet is the KurrentDB test double, as a process of its own, and
// three `baton serve --store kurrent` processes on it, each with its own
// read models, started together on the empty store with no providers
// beyond the built-in ones (whatever file the machine has).
type replicaSet struct {
	t        *testing.T
	bin, url string // the baton binary; the double's URL
	double   *proc
	replicas []*proc
	base     []string // each replica's http://host:port
}

// startReplicaSet starts the set; the double takes doubleArgs, every
// replica serveArgs too.
func startReplicaSet(t *testing.T, doubleArgs []string, serveArgs ...string) *replicaSet {
	t.Helper()
	tmp := t.TempDir()
	set := &replicaSet{t: t, bin: buildCommand(t, tmp, ".")}
	doubleBin := buildCommand(t, tmp, "../baton-kurrent-double")
	set.double = startProc(t, "kurrent-double", doubleBin, append([]string{"--addr", "127.0.0.1:0"}, doubleArgs...)...)
	set.url = set.double.await(reDoubleURL, 20*time.Second)[1]
	noProviders := filepath.Join(tmp, "no-providers.json")
	if err := os.WriteFile(noProviders, []byte(`{"providers": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		args := append([]string{"serve", "--store", "kurrent", "--kurrentdb-url", set.url, "--addr", "127.0.0.1:0",
			"--data", filepath.Join(tmp, fmt.Sprintf("replica-%d", i)), "--providers", noProviders}, serveArgs...)
		set.replicas = append(set.replicas, startProc(t, fmt.Sprintf("replica %d", i), set.bin, args...))
	}
	for _, r := range set.replicas {
		set.base = append(set.base, "http://"+r.await(reServing, 30*time.Second)[1])
	}
	return set
}

// stop stops every replica, then the double, and checks each stopped
// cleanly, without a race report.
func (set *replicaSet) stop() {
	t := set.t
	for _, r := range set.replicas {
		if err := r.stop(); err != nil {
			t.Errorf("%s exited with %v:\n%s", r.name, err, r.output())
		}
		if o := r.output(); strings.Contains(o, "DATA RACE") || !strings.Contains(o, "shutting down") {
			t.Errorf("%s output:\n%s", r.name, o)
		}
	}
	if err := set.double.stop(); err != nil {
		t.Errorf("the double exited with %v:\n%s", err, set.double.output())
	}
}

// TestReplicasShareABudget is #20's acceptance of budgets across replicas,
// through real model calls: three `baton serve --store kurrent` replicas,
// a loopback model that takes 200 ms and bills what Baton held, and a
// tenant whose daily budget covers 10 calls. 100 concurrent calls spread
// over the replicas: at most 10 go through (each call's hold is reserved
// through the store), every other is refused 429 budget_exceeded before
// any upstream call, and the spending every replica reports is the same.
func TestReplicasShareABudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four processes")
	}
	var upstreamCalls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upstreamCalls.Add(1)
		io.Copy(io.Discard, r.Body)
		time.Sleep(200 * time.Millisecond) // the calls overlap across the replicas
		w.Header().Set("Content-Type", "application/json")
		// The whole output cap, and a small prompt: the cost is close to
		// the hold, so a settled call leaves no room for another.
		io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"length"}],"usage":{"prompt_tokens":20,"completion_tokens":100000}}`)
	}))
	t.Cleanup(up.Close)
	providers := filepath.Join(t.TempDir(), "providers.json")
	spec := fmt.Sprintf(`{"providers":[{"name":"up","kind":"openai-compatible","baseUrl":%q,"models":[{"name":"m","contextTokens":200000,`+
		`"pricing":{"inputPerMTok":1,"outputPerMTok":10,"source":"test"}}]}]}`, up.URL)
	if err := os.WriteFile(providers, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	set := startReplicaSet(t, nil, "--providers", providers)
	defer set.stop()
	key := ""
	for _, r := range set.replicas {
		if m := reBootKey.FindStringSubmatch(r.output()); m != nil {
			key = m[1]
		}
	}
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
	t.Cleanup(client.CloseIdleConnections)
	admin := &apiClient{t: t, c: client, key: key}
	r := admin.do("POST", set.base[0]+"/v1/admin/keys", map[string]any{"tenant": "t1"})
	tenantKey, _ := r.body["key"].(string)
	if r.status != 201 || tenantKey == "" {
		t.Fatalf("tenant key: %d %s", r.status, r.raw)
	}
	// A call holds a little over $1 (100,000 output tokens at $10/M, its
	// prompt's bytes at $1/M) and costs $1.00002: ten fit $10.01, an
	// eleventh does not, held or settled.
	if r := admin.do("PUT", set.base[1]+"/v1/admin/budgets/t1", map[string]any{"dailyUsd": 10.01}); r.status != 200 {
		t.Fatalf("budget: %d %s", r.status, r.raw)
	}
	// Every replica must know the budget before the race starts.
	for i, b := range set.base {
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := admin.do("GET", b+"/v1/admin/budgets/t1", nil)
			if lim, _ := r.body["limits"].(map[string]any); lim != nil && lim["dailyUsd"] == 10.01 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d does not see the budget: %s", i+1, r.raw)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	statuses := make([]int, 100)
	bodies := make([]string, 100)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			body := `{"model":"up:m","max_tokens":100000,"messages":[{"role":"user","content":"hi"}]}`
			req, _ := http.NewRequest("POST", set.base[i%3]+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tenantKey)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				bodies[i] = err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			statuses[i], bodies[i] = resp.StatusCode, string(b)
		}()
	}
	close(start)
	wg.Wait()
	passed, perReplica := 0, [3]int{}
	for i, st := range statuses {
		switch {
		case st == 200:
			passed++
			perReplica[i%3]++
		case st == 429 && strings.Contains(bodies[i], "budget_exceeded"):
		default:
			t.Errorf("call %d: %d %s", i, st, bodies[i])
		}
	}
	t.Logf("%d of 100 calls went through (per replica %v); the upstream took %d", passed, perReplica, upstreamCalls.Load())
	if passed < 1 || passed > 10 {
		t.Fatalf("%d calls went through on a budget that covers 10", passed)
	}
	if n := upstreamCalls.Load(); n != int64(passed) {
		t.Fatalf("the upstream took %d calls, %d answered: a refused call reached it", n, passed)
	}
	// Each replica follows the others' usage: the same spending, nothing
	// held, within the budget but for the last call's rounding.
	want := ""
	for i, b := range set.base {
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := admin.do("GET", b+"/v1/admin/budgets/t1", nil)
			spent, _ := r.body["daySpentUsd"].(float64)
			reserved, _ := r.body["reservedUsd"].(float64)
			got := fmt.Sprintf("%.6f", spent)
			if reserved == 0 && spent >= float64(passed)-1e-9 && (want == "" || got == want) {
				want = got
				if spent > 10.01+1.01 {
					t.Fatalf("replica %d: spent %v on a budget of 10.01", i+1, spent)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d: budget %s, want %d calls' spending (%s) and nothing held", i+1, r.raw, passed, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	client.CloseIdleConnections()
}
