package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// background runs e until the returned stop is called, which ends it and
// waits for Run to return; stop may be called again.
func background(e *Executor) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	var once sync.Once
	return func() { once.Do(func() { cancel(); <-done }) }
}

// streamExecutor is an executor of ops-bot for a fake Baton, srv, whose
// event stream it follows from position last ("" for a first start).
func streamExecutor(t *testing.T, srv *httptest.Server, last string) *Executor {
	st := mustState(t)
	if last != "" {
		st.SetLastEventID(last)
	}
	return &Executor{Base: srv.URL, Key: "k", Config: Config{Executor: "ops-bot"}, State: st, Log: zerolog.Nop(),
		Backoff: 10 * time.Millisecond}
}

// resumedRun is an executor of ops-bot for a fake Baton, srv, whose state
// holds run-1 of handoff h as a previous start left it (running), with
// command as the protocol's.
func resumedRun(t *testing.T, srv *httptest.Server, command Protocol) *Executor {
	t.Helper()
	st := mustState(t)
	if err := st.Put(Run{HandoffID: "h", ExecutorRunID: "run-1", Protocol: "ops_bot.v1", Phase: phaseRunning}); err != nil {
		t.Fatal(err)
	}
	e := &Executor{Base: srv.URL, Key: "k", State: st, Log: zerolog.Nop(), Client: srv.Client(), Backoff: 10 * time.Millisecond, CallTimeout: 5 * time.Second,
		Config: Config{Executor: "ops-bot", Protocols: map[string]Protocol{"ops_bot.v1": command}}}
	e.running, e.stops, e.slots = map[string]bool{}, map[string]context.CancelCauseFunc{}, 1
	return e
}

// contractH is handoff h's contract, with a lease of heartbeatSeconds
// (none when 0).
func contractH(heartbeatSeconds int) *contract {
	c := &contract{HandoffID: "h", ExecutorProtocol: "ops_bot.v1", raw: []byte(`{}`)}
	if heartbeatSeconds > 0 {
		c.Deadlines = &deadlines{HeartbeatSeconds: heartbeatSeconds}
	}
	return c
}

// batonExecutor is an executor of ops-bot for a real Baton at base (itself,
// or a front), logging to the test, with command as the protocol's.
func batonExecutor(t *testing.T, base, key string, command Protocol) *Executor {
	t.Helper()
	state, err := openState(filepath.Join(t.TempDir(), "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	return &Executor{Base: base, Key: key, State: state, Log: zerolog.New(zerolog.NewTestWriter(t)), Backoff: 50 * time.Millisecond,
		Config: Config{Executor: "ops-bot", Protocols: map[string]Protocol{"ops_bot.v1": command}}}
}

// behindFront starts baton serve behind a front of the test's own: handle
// answers a request itself (true), or leaves it to Baton (false). The
// front closes as the test ends, before Baton.
func behindFront(t *testing.T, handle func(w http.ResponseWriter, r *http.Request) bool) (*server, *httptest.Server) {
	t.Helper()
	s := startServer(t)
	target, _ := url.Parse(s.base)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !handle(w, r) {
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(func() { front.CloseClientConnections(); front.Close() })
	return s, front
}

// waitFor waits until handoff id's ledger holds an event of type typ.
func (s *server) waitFor(id, typ string) {
	s.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !slices.Contains(types(s.trail(id, "")), typ); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			s.t.Fatalf("no %s", typ)
		}
	}
}

// A server that takes a request and never answers is asked again: the
// executor waited on it for ever, its run and heartbeats stuck.
func TestExecutorCallDoesNotWaitForEver(t *testing.T) {
	var n atomic.Int32
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		w.Write([]byte(`{"state":"executor_started"}`))
	}))
	defer srv.Close()
	defer close(hang) // before the server closes: it waits for its handlers
	e := &Executor{Base: srv.URL, Key: "k", State: mustState(t), Log: zerolog.Nop(), Client: srv.Client(),
		Backoff: 10 * time.Millisecond, CallTimeout: 200 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	status, _, err := e.call(ctx, "POST", "/v1/executions/h/heartbeat", "", map[string]any{"executorRunId": "run-1"})
	if err != nil || status != 200 || n.Load() != 2 {
		t.Fatalf("status %d, err %v after %d requests: want 200 from a second request", status, err, n.Load())
	}
}

// An event stream that goes silent (a network cut sends no end) is
// dropped and resumed.
func TestExecutorResumesASilentStream(t *testing.T) {
	var n atomic.Int32
	again := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 2 {
			close(again)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // silence
	}))
	defer srv.Close()
	e := streamExecutor(t, srv, "1-0") // no listing: the stream alone
	e.StreamIdle = 300 * time.Millisecond
	defer background(e)()
	select {
	case <-again:
	case <-time.After(10 * time.Second):
		t.Fatal("the executor never dropped the silent stream")
	}
}

// A first listing cut short is made again: the stream's position was kept
// before it, so the next attempt resumed the stream and never listed the
// handoffs approved before the executor started.
func TestExecutorListsAgainAfterAnInterruptedCatchUp(t *testing.T) {
	var lists atomic.Int32
	again := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/handoff/contracts" {
			switch lists.Add(1) {
			case 1:
				http.Error(w, `{"code":"forbidden"}`, http.StatusForbidden)
			case 2:
				close(again)
				fallthrough
			default:
				w.Write([]byte(`{"data":[]}`))
			}
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Baton-Position", "5-0")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	e := streamExecutor(t, srv, "")
	defer background(e)()
	select {
	case <-again:
	case <-time.After(30 * time.Second):
		t.Fatalf("the handoffs were listed %d times: the interrupted listing was not made again", lists.Load())
	}
}

// A key Baton refuses stops the executor with an error (exit status 2):
// it used to retry for ever, a warning a minute, looking alive.
func TestExecutorStopsOnARefusedKey(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"code":"invalid_api_key","status":401}`))
	}))
	defer srv.Close()
	e := streamExecutor(t, srv, "")
	e.Key = "wrong"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := e.Run(ctx); err == nil || ctx.Err() != nil {
		t.Fatalf("Run: %v (context: %v), want the refused key as an error", err, ctx.Err())
	}
}

// A --url where no Baton answers (a web server's 404, or a path Baton has
// no route for) stops the executor with an error (exit status 2) naming
// --url: no retry makes it Baton, and it retried for ever, a warning a
// minute, quoting the page.
func TestExecutorStopsWhereNoBatonAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("<html><body><h1>Error response</h1></body></html>"))
	}))
	defer srv.Close()
	e := streamExecutor(t, srv, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := e.Run(ctx); err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "--url") {
		t.Fatalf("Run: %v (context: %v), want an error naming --url", err, ctx.Err())
	}
}

// A stream that was up and dropped is resumed after the first wait, not
// after the longest wait an earlier outage grew.
func TestExecutorBackoffStartsOverAfterAStream(t *testing.T) {
	var n atomic.Int32
	var upEnded atomic.Int64
	gap := make(chan time.Duration, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch i := n.Add(1); {
		case i <= 5: // an outage: the wait grows to 320ms
			http.Error(w, "{}", http.StatusServiceUnavailable)
		case i == 6: // back up, then dropped
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			upEnded.Store(time.Now().UnixNano())
		case i == 7:
			gap <- time.Since(time.Unix(0, upEnded.Load()))
			http.Error(w, "{}", http.StatusServiceUnavailable)
		default:
			http.Error(w, "{}", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	e := streamExecutor(t, srv, "1-0")
	defer background(e)()
	select {
	case d := <-gap:
		if d > 200*time.Millisecond {
			t.Fatalf("reconnected %v after the stream dropped, want about the first wait (10ms)", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no reconnection")
	}
}

// Withheld output is said in the executor's log: it said only "reported",
// and the operator learnt of the withheld output from the ledger alone.
func TestExecutorLogsWithheldOutput(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Idempotency-Key") == "proof-run-1" {
			w.WriteHeader(422)
			w.Write([]byte(`{"code":"secret_detected","detail":"the body holds what looks like a secret (baton-key at /proof/artifacts/0/text)"}`))
			return
		}
		w.Write([]byte(`{"state":"result_received","ledgerHead":{"seq":1,"hash":"h"}}`))
	}))
	defer srv.Close()
	var buf bytes.Buffer
	e := &Executor{Base: srv.URL, Key: "k", Config: Config{Executor: "ops-bot"}, State: mustState(t), Log: zerolog.New(&buf),
		Backoff: 10 * time.Millisecond, CallTimeout: 5 * time.Second, Client: srv.Client()}
	run := Run{HandoffID: "h", ExecutorRunID: "run-1", Phase: phaseFinished, Output: "btn_sk_..."}
	e.State.Put(run)
	e.report(context.Background(), run, e.Log)
	if !strings.Contains(buf.String(), "output withheld") || !strings.Contains(buf.String(), "baton-key") {
		t.Fatalf("log: %s", buf.String())
	}
}

// An event whose handoff could not be read because the executor was
// stopping (Baton answering 503 meanwhile) keeps the stream's position
// before it: the position went past it, and after the restart the
// approval was never seen again, its handoff never taken.
func TestExecutorStoppedMidEventKeepsItsPosition(t *testing.T) {
	asked := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/handoff/contracts/") {
			select {
			case asked <- struct{}{}:
			default:
			}
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"code":"store_unavailable","status":503}`))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.Write([]byte("id: 7-0\nevent: ApprovalDecided\ndata: {\"handoffId\":\"h1\",\"type\":\"ApprovalDecided\"}\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	e := streamExecutor(t, srv, "6-0") // no listing: the stream alone
	stop := background(e)
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the executor never read the handoff")
	}
	stop()
	if got := e.State.LastEventID(); got != "6-0" {
		t.Fatalf("position %q after a stop mid-event: want 6-0, the event not handled", got)
	}
}

// The same for the first listing: stopped while a listed handoff was being
// read, the listing counted as complete and the stream's position was kept,
// so the next start never listed again.
func TestExecutorStoppedMidListingListsAgain(t *testing.T) {
	asked := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/handoff/contracts/"):
			select {
			case asked <- struct{}{}:
			default:
			}
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"code":"store_unavailable","status":503}`))
		case r.URL.Path == "/v1/handoff/contracts":
			w.Write([]byte(`{"data":[{"handoffId":"h1"}]}`))
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Baton-Position", "5-0")
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	e := streamExecutor(t, srv, "")
	stop := background(e)
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the executor never read the listed handoff")
	}
	stop()
	if got := e.State.LastEventID(); got != "" {
		t.Fatalf("position %q kept after a listing cut short", got)
	}
}

// An event whose contract Baton would not let the executor read (its key
// refused, 401) is not passed over: the executor stops, its position before
// the event, and a start with a good key reads the event again.
func TestExecutorKeyRefusedMidEventKeepsItsPosition(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/handoff/contracts/") {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"code":"invalid_api_key","status":401}`))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.Write([]byte("id: 7-0\nevent: ApprovalDecided\ndata: {\"handoffId\":\"h1\",\"type\":\"ApprovalDecided\"}\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	e := streamExecutor(t, srv, "6-0")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.Run(ctx); err == nil || ctx.Err() != nil {
		t.Fatalf("Run: %v (context: %v), want the refused key as an error", err, ctx.Err())
	}
	if got := e.State.LastEventID(); got != "6-0" {
		t.Fatalf("position %q: want 6-0, the event not handled", got)
	}
}

// A run's callbacks, retried through an outage shorter than its lease,
// renew the lease before it runs out: the retries doubled to a minute,
// the renewal came after the lease had ended, and Baton, back in time,
// closed the run all the same.
func TestExecutorRenewsTheLeaseThroughAnOutage(t *testing.T) {
	start := time.Now()
	var mu sync.Mutex
	var renewed []time.Duration // when each lease-renewing callback was taken
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Since(start)
		if at > time.Second && at < 5*time.Second { // Baton restarting
			http.Error(w, "{}", http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		renewed = append(renewed, at)
		mu.Unlock()
		w.Write([]byte(`{"state":"executor_started"}`))
	}))
	defer srv.Close()
	e := resumedRun(t, srv, Protocol{Command: []string{"sleep", "7"}})
	e.Backoff, e.CallTimeout = 300*time.Millisecond, 2*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e.carry(ctx, "h", contractH(6))
	mu.Lock()
	defer mu.Unlock()
	last := time.Duration(0)
	for _, at := range renewed {
		if at-last >= 6*time.Second {
			t.Fatalf("lease renewed at %v, then not until %v: the 6s lease ran out though Baton answered again at 5s (renewals %v)", last, at, renewed)
		}
		last = at
	}
}

// A heartbeat lost on the way (a network that dropped it, then came back)
// is given up and sent again before the lease runs out: it was waited on
// for the whole CallTimeout, and a blip of a second cost a shorter lease.
func TestExecutorResendsALostHeartbeatWithinTheLease(t *testing.T) {
	start := time.Now()
	var mu sync.Mutex
	var renewed []time.Duration
	var beats atomic.Int32
	lost := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/heartbeat") && beats.Add(1) == 2 {
			select { // lost: no answer ever comes
			case <-lost:
			case <-r.Context().Done():
			}
			return
		}
		mu.Lock()
		renewed = append(renewed, time.Since(start))
		mu.Unlock()
		w.Write([]byte(`{"state":"executor_started"}`))
	}))
	defer srv.Close()
	defer close(lost) // before the server closes: it waits for its handlers
	e := resumedRun(t, srv, Protocol{Command: []string{"sleep", "8"}})
	e.Backoff, e.CallTimeout = 300*time.Millisecond, 30*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e.carry(ctx, "h", contractH(6))
	mu.Lock()
	defer mu.Unlock()
	last := time.Duration(0)
	for _, at := range renewed {
		if at-last >= 6*time.Second {
			t.Fatalf("lease renewed at %v, then not until %v: the 6s lease ran out while a lost heartbeat was waited on (renewals %v)", last, at, renewed)
		}
		last = at
	}
}

// A run refused lease_expired (its lease ran out, and Baton has not yet
// recorded the release) is one the release frees: it was taken for a run
// given up for good, and the handoff, approval_decided again once the
// release was recorded, was never taken again.
func TestExecutorTakesAgainARunRefusedLeaseExpired(t *testing.T) {
	var released atomic.Bool
	var mu sync.Mutex
	var beats []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET":
			state := "executor_started"
			if released.Load() {
				state = "approval_decided"
			}
			w.Write([]byte(`{"handoffId":"h","protocolVersion":"svc.agent_os.v1","schemaVersion":"svc.handoff.v1","targetExecutor":"ops-bot",
				"executorProtocol":"ops_bot.v1","state":"` + state + `","approvalPolicy":{"status":"APPROVED"},"deadlines":{"heartbeatSeconds":30}}`))
		case strings.HasSuffix(r.URL.Path, "/heartbeat"):
			var b struct {
				ExecutorRunID string `json:"executorRunId"`
			}
			json.NewDecoder(r.Body).Decode(&b)
			mu.Lock()
			beats = append(beats, b.ExecutorRunID)
			mu.Unlock()
			if b.ExecutorRunID == "run-1" {
				// The lease ran out; the timer records the release just after.
				defer released.Store(true)
				w.WriteHeader(409)
				w.Write([]byte(`{"type":"urn:baton:problem:lease_expired","status":409,"code":"lease_expired"}`))
				return
			}
			w.Write([]byte(`{"state":"executor_started"}`))
		default:
			w.Write([]byte(`{"state":"result_received"}`))
		}
	}))
	defer srv.Close()
	e := resumedRun(t, srv, Protocol{Command: []string{"true"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.start(ctx, "h", nil) // resumed after a restart
	e.wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if r, _ := e.State.Run("h"); len(beats) != 2 || r.ExecutorRunID == "run-1" || r.Phase != phaseReported {
		t.Fatalf("heartbeats of runs %v; the handoff's run now %+v: want a new run to take the released handoff", beats, r)
	}
}

// Through an outage, the event stream is tried again at least every
// StreamRetryMax: the wait doubled to a minute, and a handoff approved as
// Baton came back, its lease counted from the approval, timed out before
// the executor resumed the stream.
func TestExecutorResumesTheStreamSoonAfterAnOutage(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		http.Error(w, "{}", http.StatusServiceUnavailable) // Baton away
	}))
	defer srv.Close()
	e := streamExecutor(t, srv, "1-0")
	e.StreamRetryMax = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	e.Run(ctx)
	mu.Lock()
	defer mu.Unlock()
	if len(at) < 6 {
		t.Fatalf("%d attempts in 700ms", len(at))
	}
	for i := 1; i < len(at); i++ {
		if d := at[i].Sub(at[i-1]); d > 300*time.Millisecond {
			t.Fatalf("attempt %d came %v after the one before: want at most about StreamRetryMax (50ms)", i+1, d)
		}
	}
}

// A command that hangs is stopped at its time limit, with everything it
// started (a child that ignores SIGTERM is killed after the grace), and its
// run reported FAILED once, saying so: with no deadline on its contract it
// ran for ever, holding its slot.
func TestExecutorStopsACommandAtItsTimeLimit(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	two := 2
	e := batonExecutor(t, s.base, s.key, shell(
		`(trap '' TERM; exec sleep 1000) & echo $! > `+pidFile+`; trap 'echo stopping; exit 0' TERM; echo started; sleep 1000 & wait`))
	e.StopGrace, e.Config.TimeoutSeconds = time.Second, &two
	defer background(e)()
	id := s.create(map[string]any{"heartbeatSeconds": 3})
	s.approve(id)
	d := s.result(id)
	if d["status"] != "FAILED" || !strings.HasPrefix(d["result"].(map[string]any)["summary"].(string), "timed out after 2s") {
		t.Fatalf("result %v", d)
	}
	b, _ := os.ReadFile(pidFile)
	var pid int
	fmt.Sscan(string(b), &pid)
	if pid <= 1 {
		t.Fatalf("no child pid: %q", b)
	}
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(st), ") Z ") {
		exec.Command("kill", "-9", fmt.Sprint(pid)).Run()
		t.Fatalf("the command's child %d, which ignores SIGTERM, still runs", pid)
	}
	n := 0
	for _, ev := range s.trail(id, "ledger_closed") {
		if ev["type"] == "ResultReceived" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d results", n)
	}
}

// A command Baton stops (its handoff closed under it) gets SIGTERM, so that
// it may clean up, and what of it ignores SIGTERM is killed after the
// grace, as at its time limit: it was killed outright, at once.
func TestExecutorStopsAClosedRunsCommandWithAGrace(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	pidFile, cleaned := filepath.Join(dir, "child.pid"), filepath.Join(dir, "cleaned")
	e := batonExecutor(t, s.base, s.key, shell(
		`(trap '' TERM; exec sleep 1000) & echo $! > `+pidFile+`; trap 'echo cleaned > `+cleaned+`; exit 3' TERM; sleep 1000 & wait`))
	e.StopGrace = time.Second
	defer background(e)()
	id := s.create(map[string]any{"heartbeatSeconds": 3, "resultTimeoutSeconds": 2})
	s.approve(id)
	s.trail(id, "ledger_closed")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if r, ok := e.State.Run(id); ok && r.Phase == phaseReported {
			if !strings.Contains(r.Note, "ledger_closed") {
				t.Fatalf("run given up with %q", r.Note)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command still runs on a closed handoff")
		}
	}
	if _, err := os.Stat(cleaned); err != nil {
		t.Errorf("the command was not given SIGTERM to clean up: %v", err)
	}
	b, _ := os.ReadFile(pidFile)
	var pid int
	fmt.Sscan(string(b), &pid)
	if pid <= 1 {
		t.Fatalf("no child pid: %q", b)
	}
	waitKilled(t, pid)
}

// waitKilled waits for pid, which ignores SIGTERM, to be gone or a zombie
// once the SIGKILL after its grace is taken; a loaded machine may take a
// moment to deliver it.
func waitKilled(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(st), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			exec.Command("kill", "-9", fmt.Sprint(pid)).Run()
			t.Fatalf("the command's child %d, which ignores SIGTERM, still runs", pid)
		}
	}
}

// The executor stopping (SIGTERM, as systemd stops it) stops a command as
// Baton or its time limit does: SIGTERM to its process group, so that it
// may clean up, and SIGKILL after the grace for what is left. It was
// killed outright, its cleanup never run; the run stays "running", to be
// run again at the next start.
func TestExecutorStopsItsCommandsWithAGraceAsItStops(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"state":"executor_started","ledgerHead":{"seq":1,"hash":"h"}}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	pidFile, started, cleaned := filepath.Join(dir, "child.pid"), filepath.Join(dir, "started"), filepath.Join(dir, "cleaned")
	e := resumedRun(t, srv, shell(`(trap '' TERM; exec sleep 1000) & echo $! > `+pidFile+
		`; trap 'echo cleaned > `+cleaned+`; exit 3' TERM; touch `+started+`; sleep 1000 & wait`))
	e.Log, e.StopGrace = zerolog.New(zerolog.NewTestWriter(t)), time.Second
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		e.carry(ctx, "h", contractH(0))
		close(done)
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never ran")
		}
	}
	cancel()
	<-done
	if _, err := os.Stat(cleaned); err != nil {
		t.Errorf("the command was not given SIGTERM to clean up as the executor stopped: %v", err)
	}
	b, _ := os.ReadFile(pidFile)
	var pid int
	fmt.Sscan(string(b), &pid)
	if pid <= 1 {
		t.Fatalf("no child pid: %q", b)
	}
	waitKilled(t, pid) // SIGKILLed as the grace ended
	if r, _ := e.State.Run("h"); r.Phase != phaseRunning {
		t.Fatalf("run %+v: want it running, to be run again at the next start", r)
	}
}

// A run's callbacks are retried within its lease: a 503 with a Retry-After
// of a minute (a proxy's, say), or a heartbeat that gets no answer, held
// the next attempt past a lease of three seconds, and Baton timed the run
// out under a command that was working.
func TestExecutorRetriesWithinTheLease(t *testing.T) {
	const (
		pass = iota
		busyBeats
		hangBeats
		busyProof
	)
	var mode atomic.Int32
	proofRefused := make(chan struct{}, 1)
	s, front := behindFront(t, func(w http.ResponseWriter, r *http.Request) bool {
		m := mode.Load()
		beat, proof := strings.HasSuffix(r.URL.Path, "/heartbeat"), strings.HasSuffix(r.URL.Path, "/proof")
		switch {
		case m == busyBeats && beat, m == busyProof && proof:
			if proof {
				select {
				case proofRefused <- struct{}{}:
				default:
				}
			}
			w.Header().Set("Retry-After", "60")
			http.Error(w, `{"code":"maintenance"}`, http.StatusServiceUnavailable)
		case m == hangBeats && beat:
			io.Copy(io.Discard, r.Body) // then a client that gives up is seen
			<-r.Context().Done()
		default:
			return false
		}
		return true
	})
	e := batonExecutor(t, front.URL, s.key, shell(`sleep 8; echo done`))
	defer background(e)()
	id := s.create(map[string]any{"heartbeatSeconds": 3})
	s.approve(id)
	s.waitFor(id, "ExecutorHeartbeat")
	for _, phase := range []struct {
		mode int32
		d    time.Duration
	}{{busyBeats, 1200 * time.Millisecond}, {pass, 1500 * time.Millisecond}, {hangBeats, 1200 * time.Millisecond}, {pass, 1500 * time.Millisecond}} {
		mode.Store(phase.mode)
		time.Sleep(phase.d)
	}
	mode.Store(busyProof)
	select {
	case <-proofRefused:
	case <-time.After(30 * time.Second):
		t.Fatal("no proof")
	}
	time.Sleep(time.Second)
	mode.Store(pass)
	evs := s.closeWithReview(id)
	if last := evs[len(evs)-1]["data"].(map[string]any); last["finalStatus"] != "SUCCEEDED" || slices.Contains(types(evs), "ExecutorTimedOut") {
		t.Fatalf("closed %v: %v", last, types(evs))
	}
}

// A heartbeat refused because the lease ran out (lease_expired: the lapse
// passed and no timer has recorded it yet, as a replica whose timers lag
// answers) stops the command at once, and under onExecutorTimeout release
// the handoff is taken again by a new run once the release is recorded:
// the command ran on until the next beat, which a replica that had caught
// up could even accept.
func TestExecutorStopsARunWhoseLeaseRanOut(t *testing.T) {
	var expired atomic.Bool
	var refused atomic.Int32
	s, front := behindFront(t, func(w http.ResponseWriter, r *http.Request) bool {
		if expired.Load() && strings.HasSuffix(r.URL.Path, "/heartbeat") {
			io.Copy(io.Discard, r.Body)
			refused.Add(1)
			expired.Store(false) // one refusal: the next replica asked has caught up
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"type":"urn:baton:problem:lease_expired","title":"Conflict","status":409,"code":"lease_expired","detail":"the executor's lease ran out (heartbeatSeconds 2); nothing was recorded"}`))
			return true
		}
		return false
	})
	marker := filepath.Join(t.TempDir(), "first")
	e := batonExecutor(t, front.URL, s.key, shell(`if [ -f `+marker+` ]; then echo renewed; else touch `+marker+`; sleep 100; fi`))
	defer background(e)()
	id := s.create(map[string]any{"heartbeatSeconds": 2, "onExecutorTimeout": "release"})
	s.approve(id)
	s.waitFor(id, "ExecutorHeartbeat")
	first, _ := e.State.Run(id)
	expired.Store(true)
	evs := s.closeWithReview(id) // within a minute: long before the first command's end
	if last := evs[len(evs)-1]["data"].(map[string]any); last["finalStatus"] != "SUCCEEDED" || refused.Load() != 1 {
		t.Fatalf("closed %v after %d refusals: %v", last, refused.Load(), types(evs))
	}
	for _, ev := range evs {
		d := ev["data"].(map[string]any)
		if ev["type"] == "ResultReceived" && d["executorRunId"] == first.ExecutorRunID {
			t.Fatalf("the first run, whose lease ran out, reported: %v", d)
		}
	}
}

// The claim (the first heartbeat) is retried within the lease too: under
// onExecutorTimeout close the lease runs from the approval, and a 503
// with a Retry-After of a minute held the claim past it, the handoff
// closed TIMED_OUT before its command ran.
func TestExecutorClaimsWithinTheLease(t *testing.T) {
	var busy atomic.Bool
	busy.Store(true)
	refused := make(chan struct{}, 1)
	s, front := behindFront(t, func(w http.ResponseWriter, r *http.Request) bool {
		if busy.Load() && strings.HasSuffix(r.URL.Path, "/heartbeat") {
			io.Copy(io.Discard, r.Body)
			select {
			case refused <- struct{}{}:
			default:
			}
			w.Header().Set("Retry-After", "60")
			http.Error(w, `{"code":"maintenance"}`, http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	e := batonExecutor(t, front.URL, s.key, shell(`echo done`))
	defer background(e)()
	id := s.create(map[string]any{"heartbeatSeconds": 3})
	s.approve(id)
	select {
	case <-refused:
	case <-time.After(30 * time.Second):
		t.Fatal("no claim")
	}
	time.Sleep(1200 * time.Millisecond)
	busy.Store(false)
	if d := s.result(id); d["status"] != "SUCCEEDED" {
		t.Fatalf("result %v: %v", d, types(s.trail(id, "")))
	}
}

// A proof refused because the lease ran out (lease_expired: the lapse not
// yet recorded) under onExecutorTimeout release leaves the handoff to a
// new run once the release is recorded: the run was given up for good,
// and the released handoff waited for ever.
func TestExecutorTakesAgainAHandoffWhoseProofCameTooLate(t *testing.T) {
	var once atomic.Bool
	s, front := behindFront(t, func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasSuffix(r.URL.Path, "/proof") && once.CompareAndSwap(false, true) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"type":"urn:baton:problem:lease_expired","title":"Conflict","status":409,"code":"lease_expired","detail":"the executor's lease ran out (heartbeatSeconds 2); nothing was recorded"}`))
			return true
		}
		return false
	})
	e := batonExecutor(t, front.URL, s.key, shell(`echo renewed`))
	defer background(e)()
	id := s.create(map[string]any{"heartbeatSeconds": 2, "onExecutorTimeout": "release"})
	s.approve(id)
	evs := s.closeWithReview(id)
	if last := evs[len(evs)-1]["data"].(map[string]any); last["finalStatus"] != "SUCCEEDED" || !slices.Contains(types(evs), "ExecutorTimedOut") {
		t.Fatalf("closed %v: %v", last, types(evs))
	}
}

// A stop that comes after the command has exited, while what it left in
// the background still holds its output, leaves its outcome as it is: the
// executor stopping left the run "running", and the next start ran the
// command again; a stop from Baton gave the run up unreported.
func TestExecutorKeepsTheOutcomeOfACommandThatEndedBeforeItsStop(t *testing.T) {
	for _, stop := range []string{"executor", "baton"} {
		t.Run(stop, func(t *testing.T) {
			var results atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/result") {
					results.Add(1)
				}
				w.Write([]byte(`{"state":"result_received","ledgerHead":{"seq":1,"hash":"h"}}`))
			}))
			defer srv.Close()
			dir := t.TempDir()
			ended := filepath.Join(dir, "ended")
			e := resumedRun(t, srv, shell(`echo done; sleep 3 & touch `+ended))
			e.Log, e.StopGrace = zerolog.New(zerolog.NewTestWriter(t)), time.Second
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			done := make(chan struct{})
			go func() {
				e.carry(ctx, "h", contractH(0))
				close(done)
			}()
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(ended); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the command never ran")
				}
			}
			time.Sleep(300 * time.Millisecond) // exited, its output held by the sleep
			switch stop {
			case "executor":
				cancel()
			case "baton":
				e.mu.Lock()
				e.stops["h"](errors.New("the handoff closed (ledger_closed: executor_timed_out)"))
				e.mu.Unlock()
			}
			<-done
			r, _ := e.State.Run("h")
			switch {
			case stop == "executor" && (r.Phase != phaseFinished || r.ExitCode != 0 || r.Ended != ""):
				t.Fatalf("run %+v: want it finished, exit status 0, to be reported at the next start", r)
			case stop == "baton" && (r.Phase != phaseReported || r.Note != "" || r.Ended != "" || results.Load() != 1):
				t.Fatalf("run %+v after %d results: want it reported once, exit status 0", r, results.Load())
			}
		})
	}
}

// A key Baton refuses is logged once, not at every heartbeat, and Baton
// taking it again is logged once too: a revoked key filled the log with
// an error a beat for as long as the command ran.
func TestExecutorLogsARefusedKeyOnce(t *testing.T) {
	var beats atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/heartbeat") {
			if n := beats.Add(1); n >= 2 && n <= 5 { // the claim passes, then the key is refused for a while
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(`{"code":"invalid_api_key","status":401}`))
				return
			}
		}
		w.Write([]byte(`{"state":"result_received","ledgerHead":{"seq":1,"hash":"h"}}`))
	}))
	defer srv.Close()
	var mu sync.Mutex
	var buf bytes.Buffer
	e := resumedRun(t, srv, shell(`sleep 3`))
	e.Log = zerolog.New(zerolog.SyncWriter(lockedWriter{&mu, &buf}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e.carry(ctx, "h", contractH(1))
	mu.Lock()
	defer mu.Unlock()
	log := buf.String()
	if n := strings.Count(log, "refused the key"); beats.Load() < 7 || n != 1 || strings.Count(log, "takes the key again") != 1 {
		t.Fatalf("%d heartbeats, the refusal logged %d times: want once, and once that Baton takes the key again:\n%s", beats.Load(), n, log)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A stream refused with a Retry-After (429 too_many_streams, which asks for
// 5 seconds; a 503) is asked again no sooner than that, within
// StreamRetryMax: it was asked again after the first wait, a second, then
// two, then four, each a refusal and a warning.
func TestExecutorWaitsTheStreamsRetryAfter(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"code":"too_many_streams","status":429}`))
	}))
	defer srv.Close()
	e := streamExecutor(t, srv, "1-0")
	e.StreamRetryMax = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	e.Run(ctx)
	mu.Lock()
	defer mu.Unlock()
	if len(at) < 2 || len(at) > 3 {
		t.Fatalf("%d attempts in 2.5s, each answered Retry-After: 1", len(at))
	}
	for i := 1; i < len(at); i++ {
		if d := at[i].Sub(at[i-1]); d < 900*time.Millisecond {
			t.Fatalf("attempt %d came %v after the one before: want the Retry-After's second", i+1, d)
		}
	}
}

// A callback Baton answers 408 body_timeout (its body did not arrive within
// 30 seconds: a stalled network; nothing was done) is sent again, as a 5xx
// is: it was taken for a refusal, and a claim so answered gave the handoff
// up for good, a proof so answered gave the run up with its outcome never
// reported.
func TestExecutorRetriesABodyTimeout(t *testing.T) {
	var claims, proofs atomic.Int32
	s, front := behindFront(t, func(w http.ResponseWriter, r *http.Request) bool {
		claim := strings.HasSuffix(r.URL.Path, "/heartbeat") && claims.Add(1) == 1
		proof := strings.HasSuffix(r.URL.Path, "/proof") && proofs.Add(1) == 1
		if !claim && !proof {
			return false
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusRequestTimeout)
		w.Write([]byte(`{"type":"urn:baton:problem:body_timeout","title":"Request Timeout","status":408,"code":"body_timeout","detail":"the request body did not arrive within 30s of its headers (the server's limit); nothing was done: send it again"}`))
		return true
	})
	e := batonExecutor(t, front.URL, s.key, shell(`echo renewed`))
	defer background(e)()
	id := s.create(map[string]any{"heartbeatSeconds": 5})
	s.approve(id)
	if d := s.result(id); d["status"] != "SUCCEEDED" || proofs.Load() < 2 || claims.Load() < 2 {
		t.Fatalf("result %v after %d claims and %d proofs", d, claims.Load(), proofs.Load())
	}
}

// The read of a handoff's contract, which its claim waits on, is retried
// within StreamRetryMax too, a Retry-After included: under
// onExecutorTimeout close the lease runs from the approval, and a proxy's
// 503 asking for a minute held the claim a minute after it.
func TestExecutorReadsTheContractSoonAgain(t *testing.T) {
	var reads atomic.Int32
	claimed := make(chan time.Time, 1)
	var first atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/handoff/contracts/"):
			if reads.Add(1) == 1 {
				first.Store(time.Now().UnixNano())
				w.Header().Set("Retry-After", "60")
				http.Error(w, `{"code":"maintenance"}`, http.StatusServiceUnavailable)
				return
			}
			w.Write([]byte(`{"handoffId":"h1","protocolVersion":"svc.agent_os.v1","schemaVersion":"svc.handoff.v1","targetExecutor":"ops-bot",
				"executorProtocol":"ops_bot.v1","state":"approval_decided","approvalPolicy":{"status":"APPROVED"},"deadlines":{"heartbeatSeconds":10}}`))
		case strings.HasSuffix(r.URL.Path, "/heartbeat"):
			select {
			case claimed <- time.Now():
			default:
			}
			w.Write([]byte(`{"state":"executor_started"}`))
		case r.URL.Path == "/v1/events":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.Write([]byte("id: 7-0\nevent: ApprovalDecided\ndata: {\"handoffId\":\"h1\",\"type\":\"ApprovalDecided\"}\n\n"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			w.Write([]byte(`{"state":"result_received"}`))
		}
	}))
	defer srv.Close()
	e := streamExecutor(t, srv, "6-0")
	e.StreamRetryMax = time.Second
	e.Config.Protocols = map[string]Protocol{"ops_bot.v1": shell(`echo done`)}
	defer background(e)()
	select {
	case at := <-claimed:
		if d := at.Sub(time.Unix(0, first.Load())); d > 3*time.Second {
			t.Fatalf("claimed %v after the first read was refused: want within about StreamRetryMax (1s)", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no claim 10s after the approval (%d reads of the contract)", reads.Load())
	}
}

// So is the first start's listing of the handoffs approved before it: a
// 503 asking for a minute held every claim of them a minute.
func TestExecutorListsSoonAgain(t *testing.T) {
	var lists atomic.Int32
	claimed := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/handoff/contracts":
			if lists.Add(1) == 1 {
				w.Header().Set("Retry-After", "60")
				http.Error(w, `{"code":"maintenance"}`, http.StatusServiceUnavailable)
				return
			}
			w.Write([]byte(`{"data":[{"handoffId":"h1"}]}`))
		case strings.HasPrefix(r.URL.Path, "/v1/handoff/contracts/"):
			w.Write([]byte(`{"handoffId":"h1","protocolVersion":"svc.agent_os.v1","schemaVersion":"svc.handoff.v1","targetExecutor":"ops-bot",
				"executorProtocol":"ops_bot.v1","state":"approval_decided","approvalPolicy":{"status":"APPROVED"},"deadlines":{"heartbeatSeconds":10}}`))
		case strings.HasSuffix(r.URL.Path, "/heartbeat"):
			select {
			case claimed <- struct{}{}:
			default:
			}
			w.Write([]byte(`{"state":"executor_started"}`))
		case r.URL.Path == "/v1/events":
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Baton-Position", "5-0")
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			w.Write([]byte(`{"state":"result_received"}`))
		}
	}))
	defer srv.Close()
	e := streamExecutor(t, srv, "")
	e.StreamRetryMax = time.Second
	e.Config.Protocols = map[string]Protocol{"ops_bot.v1": shell(`echo done`)}
	defer background(e)()
	select {
	case <-claimed:
	case <-time.After(5 * time.Second):
		t.Fatalf("no claim 5s after a refused listing (%d listings)", lists.Load())
	}
}

// Two considers of one released handoff (the one after its run ended, and
// the one for the release's event on the stream) are one after the other:
// the second read the contract before the first run's claim, and wrote a
// run id of its own to the state file over the claimed one, so a restart
// then resumed a run Baton refused (executor_run_mismatch), and the
// claimed one was carried by no one.
func TestExecutorConsidersAHandoffOnceAtATime(t *testing.T) {
	var reads atomic.Int32
	claimed := make(chan string, 1)
	var claimedID atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET":
			if reads.Add(1) == 2 {
				// Answered as Baton did just before the first run's claim,
				// delivered after it.
				claimedID.Store(<-claimed)
			}
			w.Write([]byte(`{"handoffId":"h","protocolVersion":"svc.agent_os.v1","schemaVersion":"svc.handoff.v1","targetExecutor":"ops-bot",
				"executorProtocol":"ops_bot.v1","state":"approval_decided","approvalPolicy":{"status":"APPROVED"}}`))
		case strings.HasSuffix(r.URL.Path, "/heartbeat"):
			var b struct {
				ExecutorRunID string `json:"executorRunId"`
			}
			json.NewDecoder(r.Body).Decode(&b)
			select {
			case claimed <- b.ExecutorRunID:
			default:
			}
			w.Write([]byte(`{"state":"executor_started"}`))
		default:
			w.Write([]byte(`{"state":"result_received"}`))
		}
	}))
	defer srv.Close()
	e := resumedRun(t, srv, shell(`sleep 1000`))
	e.StopGrace = time.Second
	if err := e.State.Put(Run{HandoffID: "h", ExecutorRunID: "run-1", Protocol: "ops_bot.v1", Phase: phaseReported,
		Note: `heartbeat refused: 409 {"code":"executor_run_released"}`}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var considers sync.WaitGroup
	for range 2 {
		considers.Add(1)
		go func() { defer considers.Done(); e.consider(ctx, "h") }()
	}
	considers.Wait()
	r, _ := e.State.Run("h")
	want, _ := claimedID.Load().(string)
	if want == "" { // the second consider read nothing
		select {
		case want = <-claimed:
		case <-time.After(10 * time.Second):
		}
	}
	cancel()
	e.wg.Wait()
	if want == "" || r.ExecutorRunID != want {
		t.Fatalf("run %s claimed the handoff; the state file has %+v", want, r)
	}
}

// A LedgerClosed that comes as the run is claimed, before its command
// starts, stops it all the same: it found no command to stop, and a run
// without a lease (no heartbeat to be refused) ran its command to the end
// on a closed handoff.
func TestExecutorStopsARunWhoseHandoffClosedAsItWasClaimed(t *testing.T) {
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	var ep atomic.Pointer[Executor]
	closeEv := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/events":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.Write([]byte("id: 2-0\ndata: {\"handoffId\":\"h\",\"type\":\"ApprovalDecided\"}\n\n"))
			w.(http.Flusher).Flush()
			select {
			case <-closeEv:
				w.Write([]byte("id: 3-0\ndata: {\"handoffId\":\"h\",\"type\":\"LedgerClosed\",\"data\":{\"reason\":\"result_timed_out\"}}\n\n"))
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
			}
			<-r.Context().Done()
		case r.Method == "GET":
			w.Write([]byte(`{"handoffId":"h","protocolVersion":"svc.agent_os.v1","schemaVersion":"svc.handoff.v1","targetExecutor":"ops-bot",
				"executorProtocol":"ops_bot.v1","state":"approval_decided","approvalPolicy":{"status":"APPROVED"}}`))
		case strings.HasSuffix(r.URL.Path, "/heartbeat"):
			// The handoff closes as the claim is answered: the event is
			// handled before the answer reaches the run.
			close(closeEv)
			for deadline := time.Now().Add(10 * time.Second); ep.Load().State.LastEventID() != "3-0" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			}
			w.Write([]byte(`{"state":"executor_started"}`))
		default:
			w.WriteHeader(409)
			w.Write([]byte(`{"code":"ledger_closed","status":409}`))
		}
	}))
	defer srv.Close()
	e := streamExecutor(t, srv, "1-0")
	ep.Store(e)
	e.Config.Protocols = map[string]Protocol{"ops_bot.v1": shell(`touch ` + started + `; sleep 1000`)}
	e.StopGrace = time.Second
	defer background(e)()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r, ok := e.State.Run("h"); ok && r.Phase == phaseReported {
			if !strings.Contains(r.Note, "ledger_closed") {
				t.Fatalf("run given up with %q", r.Note)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command still runs on a closed handoff")
		}
	}
	if _, err := os.Stat(started); err == nil {
		t.Error("the command started on a handoff already closed")
	}
}

// A run resumed at a start whose contract could not be read (a proxy's
// 403) goes on at the next event for its handoff (its release, say): it
// stayed "running" in the state file, and every event for it was skipped
// as taken until the next start; released by Baton, the handoff waited,
// taken by no one.
func TestExecutorResumesARunWhoseContractItCouldNotRead(t *testing.T) {
	var reads atomic.Int32
	var mu sync.Mutex
	var beats []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET":
			if reads.Add(1) == 1 {
				w.WriteHeader(403)
				w.Write([]byte(`<html>Forbidden</html>`))
				return
			}
			w.Write([]byte(`{"handoffId":"h","protocolVersion":"svc.agent_os.v1","schemaVersion":"svc.handoff.v1","targetExecutor":"ops-bot",
				"executorProtocol":"ops_bot.v1","state":"executor_started","approvalPolicy":{"status":"APPROVED"}}`))
		case strings.HasSuffix(r.URL.Path, "/heartbeat"):
			var b struct {
				ExecutorRunID string `json:"executorRunId"`
			}
			json.NewDecoder(r.Body).Decode(&b)
			mu.Lock()
			beats = append(beats, b.ExecutorRunID)
			mu.Unlock()
			w.Write([]byte(`{"state":"executor_started"}`))
		default:
			w.Write([]byte(`{"state":"result_received","ledgerHead":{"seq":1,"hash":"h"}}`))
		}
	}))
	defer srv.Close()
	e := resumedRun(t, srv, Protocol{Command: []string{"true"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.start(ctx, "h", nil) // resumed after a restart: its contract refused
	e.wg.Wait()
	if err := e.consider(ctx, "h"); err != nil { // an event for the handoff
		t.Fatal(err)
	}
	e.wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if r, _ := e.State.Run("h"); !slices.Equal(beats, []string{"run-1"}) || r.Phase != phaseReported {
		t.Fatalf("heartbeats of runs %v; the run now %+v: want run-1 to go on and be reported", beats, r)
	}
}

// A proof or result retried through an outage is tried again before the
// contract's resultDueAt: the wait doubled up to a minute, and Baton, back
// before the deadline, timed the run out before the retry came.
func TestExecutorRetriesBeforeTheResultIsDue(t *testing.T) {
	for _, c := range []struct{ d, left, want time.Duration }{
		{time.Minute, 10 * time.Second, 5 * time.Second},
		{time.Second, 10 * time.Second, time.Second},
		{time.Minute, 50 * time.Millisecond, 100 * time.Millisecond},
		{time.Minute, 0, time.Minute}, // past it: Baton refuses, whenever asked
		{time.Minute, -time.Second, time.Minute},
	} {
		if got := beforeDue(c.d, c.left); got != c.want {
			t.Errorf("beforeDue(%s, %s) = %s, want %s", c.d, c.left, got, c.want)
		}
	}
	var proofs atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/proof") && proofs.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // Baton away, back at once
			return
		}
		w.Write([]byte(`{"state":"result_received","ledgerHead":{"seq":1,"hash":"h"}}`))
	}))
	defer srv.Close()
	e := resumedRun(t, srv, Protocol{Command: []string{"true"}})
	e.Backoff = time.Hour
	due := time.Now().Add(3 * time.Second)
	c := contractH(0)
	c.Deadlines = &deadlines{ResultDueAt: &due}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		e.carry(ctx, "h", c)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cancel()
		<-done
		t.Fatalf("the proof was not tried again before the result was due: %d attempts", proofs.Load())
	}
	cancel()
	if r, _ := e.State.Run("h"); r.Phase != phaseReported {
		t.Fatalf("run %+v: want it reported", r)
	}
}

// Every wait before a retry (a callback, the event stream) is drawn
// between half of it and it whole: executors that lost Baton at once
// asked it again in lockstep, each at the same moment after it was back.
func TestExecutorRetriesWithJitter(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 3, time.Second, time.Minute} {
		lo, hi := d, time.Duration(0)
		for range 1000 {
			j := jitter(d)
			if j < d/2 || j > d {
				t.Fatalf("jitter(%s) = %s: want %s to %s", d, j, d/2, d)
			}
			lo, hi = min(lo, j), max(hi, j)
		}
		if d >= time.Second && (lo > d*6/10 || hi < d*9/10) {
			t.Fatalf("jitter(%s) drew %s to %s: want them spread from %s to %s", d, lo, hi, d/2, d)
		}
	}
	// The waits the log names, each within its bounds, not all the
	// nominal ones.
	waits := func(log string, msg string) []float64 {
		var out []float64
		for _, line := range strings.Split(log, "\n") {
			var l struct {
				Message string  `json:"message"`
				RetryIn float64 `json:"retryIn"`
			}
			if json.Unmarshal([]byte(line), &l) == nil && l.Message == msg {
				out = append(out, l.RetryIn)
			}
		}
		return out
	}
	check := func(got []float64, first, longest float64) {
		t.Helper()
		if len(got) < 6 {
			t.Fatalf("%d waits: %v", len(got), got)
		}
		nominal, same := first, 0
		for _, g := range got[:6] {
			if g < nominal/2 || g > nominal {
				t.Fatalf("waits %v: %v is not within %v to %v", got, g, nominal/2, nominal)
			}
			if g == nominal {
				same++
			}
			nominal = min(nominal*2, longest)
		}
		if same == 6 {
			t.Fatalf("waits %v: every one the nominal one", got)
		}
	}
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 6 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	var log syncBuffer
	e := streamExecutor(t, srv, "")
	e.Log, e.Backoff, e.CallTimeout, e.Client = zerolog.New(&log), 4*time.Millisecond, 5*time.Second, srv.Client()
	if st, _, err := e.call(context.Background(), "GET", "/v1/handoff/contracts/h", "", nil); err != nil || st != 200 {
		t.Fatalf("call: %d %v", st, err)
	}
	check(waits(log.String(), "retrying"), 4, 60_000)

	stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer stream.Close()
	var slog syncBuffer
	e = streamExecutor(t, stream, "1-0")
	e.Log, e.Backoff, e.StreamRetryMax = zerolog.New(&slog), 4*time.Millisecond, 64*time.Millisecond
	stop := background(e)
	for deadline := time.Now().Add(10 * time.Second); len(waits(slog.String(), "event stream interrupted")) < 6; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stream was not tried again")
		}
	}
	stop()
	check(waits(slog.String(), "event stream interrupted"), 4, 64)
}

// A proof sent as the result's deadline nears, and lost on the way (no
// answer), is given up in time for its retry to come before resultDueAt:
// it was waited on for the whole CallTimeout, past the deadline.
func TestExecutorGivesUpALostCallBeforeTheResultIsDue(t *testing.T) {
	var proofs atomic.Int32
	quit := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/proof") && proofs.Add(1) == 1 {
			select { // lost: never answered
			case <-r.Context().Done():
			case <-quit:
			}
			return
		}
		w.Write([]byte(`{"state":"result_received","ledgerHead":{"seq":1,"hash":"h"}}`))
	}))
	defer srv.Close()
	defer close(quit)
	e := resumedRun(t, srv, Protocol{Command: []string{"true"}})
	e.CallTimeout = time.Hour
	due := time.Now().Add(3 * time.Second)
	c := contractH(0)
	c.Deadlines = &deadlines{ResultDueAt: &due}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		e.carry(ctx, "h", c)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cancel()
		<-done
		t.Fatalf("the lost proof was waited on past the result's deadline: %d attempts", proofs.Load())
	}
	cancel()
	if r, _ := e.State.Run("h"); r.Phase != phaseReported || proofs.Load() != 2 {
		t.Fatalf("run %+v after %d proofs: want it reported at the second", r, proofs.Load())
	}
}
