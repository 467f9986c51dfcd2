package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batonhttp "github.com/batonhq/baton/http"
)

// guard bounds a request that should answer long before its wait ends: a
// failure guard only, never a timing assertion.
const guard = 30 * time.Second

// waitLedger GETs the ledger with the query, failing (not hanging) when the
// answer does not come within guard. Safe off the test goroutine.
func waitLedger(e *env, id, key, query string) (response, error) {
	req, err := http.NewRequest("GET", e.srv.URL+"/v1/executions/"+id+"/ledger?"+query, nil)
	if err != nil {
		return response{}, err
	}
	req.Header.Set("x-api-key", key)
	resp, err := (&http.Client{Timeout: guard}).Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	out := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	json.Unmarshal(raw, &out.body)
	return out, err
}

// seqs lists the seq of each event answered.
func seqs(r response) []int {
	evs, _ := r.body["events"].([]any)
	out := []int{}
	for _, ev := range evs {
		m, _ := ev.(map[string]any)
		f, _ := m["seq"].(float64)
		out = append(out, int(f))
	}
	return out
}

// approve posts an approval without the test's *testing.T, so that a
// handler's hook may call it; it returns the Baton-Position answered.
func approve(e *env, id, key string) (string, error) {
	b, _ := json.Marshal(approveBody())
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/executions/"+id+"/approval", bytes.NewReader(b))
	req.Header.Set("x-api-key", key)
	resp, err := (&http.Client{Timeout: guard}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("approval: status %d", resp.StatusCode)
	}
	return resp.Header.Get(batonhttp.PositionHeader), nil
}

// mustLedger fails the test unless the read answered 200.
func mustLedger(t *testing.T) func(response, error) response {
	return func(r response, err error) response {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.raw)
		}
		return r
	}
}

// TestLedgerWaitAlreadyThere: events past after answer at once; without
// wait, after only filters.
func TestLedgerWaitAlreadyThere(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, nil)
	r := mustLedger(t)(waitLedger(e, id, e.tenantA, "after=0&wait=60s"))
	if got := seqs(r); len(got) != 1 || got[0] != 1 || r.str("head.seq") != "1" {
		t.Fatalf("after=0: events %v, head %s", got, r.str("head"))
	}
	r = mustLedger(t)(waitLedger(e, id, e.tenantA, "after=1"))
	if got := seqs(r); len(got) != 0 || r.str("head.seq") != "1" || r.str("chain.intact") != "true" {
		t.Fatalf("after=1 without wait: events %v, head %s, chain %s", got, r.str("head"), r.str("chain"))
	}
	if _, err := approve(e, id, e.tenantA); err != nil {
		t.Fatal(err)
	}
	r = mustLedger(t)(waitLedger(e, id, e.tenantA, "after=1&wait=60"))
	if got := seqs(r); len(got) != 1 || got[0] != 2 || r.str("head.seq") != "2" || r.str("state") != "approval_decided" {
		t.Fatalf("after=1: events %v, head %s, state %s", got, r.str("head"), r.str("state"))
	}
	// Another tenant's handoff is absent at once, before any wait.
	if r, err := waitLedger(e, id, e.tenantB, "after=5&wait=60s"); err != nil || r.status != 404 {
		t.Fatalf("other tenant: %d %v", r.status, err)
	}
}

// TestLedgerWaitWokenByCallback: a callback posted while the read waits
// wakes it with the new event.
func TestLedgerWaitWokenByCallback(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, nil)
	waiting := make(chan struct{}, 1)
	defer batonhttp.SetLedgerWaitHook(func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	})()
	type answer struct {
		r   response
		err error
	}
	done := make(chan answer, 1)
	go func() {
		r, err := waitLedger(e, id, e.tenantA, "after=1&wait=60s")
		done <- answer{r, err}
	}()
	select {
	case <-waiting:
	case a := <-done:
		t.Fatalf("answered before waiting: %d %s %v", a.r.status, a.r.raw, a.err)
	case <-time.After(guard):
		t.Fatal("the read never waited")
	}
	if _, err := approve(e, id, e.tenantA); err != nil {
		t.Fatal(err)
	}
	a := <-done
	r := mustLedger(t)(a.r, a.err)
	if got := seqs(r); len(got) != 1 || got[0] != 2 || r.str("head.seq") != "2" {
		t.Fatalf("woken read: events %v, head %s", got, r.str("head"))
	}
}

// TestLedgerWaitKeyRevoked: a read waiting with a key revoked meanwhile is
// answered 401, not the events recorded after the revocation.
func TestLedgerWaitKeyRevoked(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, nil)
	k := e.must(e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "a"}), 201)
	waiting := make(chan struct{}, 1)
	defer batonhttp.SetLedgerWaitHook(func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	})()
	done := make(chan response, 1)
	go func() {
		r, _ := waitLedger(e, id, k.str("key"), "after=1&wait=60s")
		done <- r
	}()
	select {
	case <-waiting:
	case <-time.After(guard):
		t.Fatal("the read never waited")
	}
	e.must(e.do("DELETE", "/v1/admin/keys/"+k.str("keyId"), e.admin, nil), 200)
	if _, err := approve(e, id, e.tenantA); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.status != 401 || bytes.Contains(r.raw, []byte("ApprovalDecided")) {
		t.Fatalf("a revoked key's waiting read: %d %s", r.status, r.raw)
	}
}

// TestLedgerWaitKeyRevokedAnswersAtOnce: the revocation itself ends a
// waiting read of the revoked key, with no event of its handoff after it
// (it was held, answering nothing, until its wait of up to a minute ran out).
func TestLedgerWaitKeyRevokedAnswersAtOnce(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, nil)
	k := e.must(e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "a"}), 201)
	waiting := make(chan struct{}, 1)
	defer batonhttp.SetLedgerWaitHook(func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	})()
	done := make(chan response, 1)
	go func() {
		r, _ := waitLedger(e, id, k.str("key"), "after=1&wait=60s")
		done <- r
	}()
	select {
	case <-waiting:
	case <-time.After(guard):
		t.Fatal("the read never waited")
	}
	e.must(e.do("DELETE", "/v1/admin/keys/"+k.str("keyId"), e.admin, nil), 200)
	select {
	case r := <-done:
		if r.status != 401 || !bytes.Contains(r.raw, []byte("invalid_api_key")) {
			t.Fatalf("a revoked key's waiting read: %d %s", r.status, r.raw)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a revoked key's read still waits after the revocation")
	}
	// Another key's creation wakes the read too; it goes on waiting.
	k2 := e.must(e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "a"}), 201)
	go func() {
		r, _ := waitLedger(e, id, k2.str("key"), "after=1&wait=2s")
		done <- r
	}()
	<-waiting
	e.must(e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "b"}), 201)
	if r := <-done; r.status != 200 || len(seqs(r)) != 0 {
		t.Fatalf("a live key's read woken by a key's creation: %d %s", r.status, r.raw)
	}
}

// TestLedgerWaitRace: an event applied after the handler's read and before
// its wait still wakes it (the wait is registered before the read).
func TestLedgerWaitRace(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, nil)
	var once sync.Once
	var hookErr error
	defer batonhttp.SetLedgerWaitHook(func() {
		once.Do(func() {
			tok, err := approve(e, id, e.tenantA)
			if err == nil {
				p, perr := batonhttp.ParsePosition(tok)
				if perr != nil {
					err = perr
				} else {
					ctx, cancel := context.WithTimeout(context.Background(), guard)
					err = e.proj.WaitFor(ctx, p) // applied before the handler waits
					cancel()
				}
			}
			hookErr = err
		})
	})()
	r := mustLedger(t)(waitLedger(e, id, e.tenantA, "after=1&wait=60s"))
	if hookErr != nil {
		t.Fatal(hookErr)
	}
	if got := seqs(r); len(got) != 1 || got[0] != 2 {
		t.Fatalf("events %v: the event landed between read and wait was missed", got)
	}
}

// TestLedgerWaitTimeout: nothing new within the wait answers the head and
// no events.
func TestLedgerWaitTimeout(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, nil)
	r := mustLedger(t)(waitLedger(e, id, e.tenantA, "after=1&wait=300ms"))
	if got := seqs(r); len(got) != 0 || r.str("head.seq") != "1" || r.str("state") != "contract_created" {
		t.Fatalf("timed out read: events %v, head %s, state %s", got, r.str("head"), r.str("state"))
	}
	if r.str("events") != "[]" {
		t.Fatalf("events = %s, want []", r.str("events"))
	}
}

// serveWaiting runs a waiting ledger read straight through the handler and
// returns once it waits, with the channel closed when the handler returns.
func serveWaiting(t *testing.T, e *env, ctx context.Context, id string) (*httptest.ResponseRecorder, chan struct{}) {
	t.Helper()
	waiting := make(chan struct{}, 1)
	t.Cleanup(batonhttp.SetLedgerWaitHook(func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	}))
	req := httptest.NewRequestWithContext(ctx, "GET", "/v1/executions/"+id+"/ledger?after=1&wait=60s", nil)
	req.Header.Set("x-api-key", e.tenantA)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() { e.front.Handler().ServeHTTP(rec, req); close(done) }()
	select {
	case <-waiting:
	case <-done:
		t.Fatalf("answered before waiting: %d %s", rec.Code, rec.Body)
	case <-time.After(guard):
		t.Fatal("the read never waited")
	}
	return rec, done
}

// TestLedgerWaitClientGone: a client that goes away frees the handler.
func TestLedgerWaitClientGone(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, nil)
	ctx, cancel := context.WithCancel(context.Background())
	_, done := serveWaiting(t, e, ctx, id)
	cancel()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("the handler still waits for a client that is gone")
	}
}

// TestLedgerWaitShutdown: StopWaits answers a waiting read with what it has.
func TestLedgerWaitShutdown(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, nil)
	rec, done := serveWaiting(t, e, context.Background(), id)
	e.front.StopWaits()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("the handler still waits after StopWaits")
	}
	var body struct {
		Events []any          `json:"events"`
		Head   map[string]any `json:"head"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); rec.Code != 200 || err != nil || body.Events == nil || len(body.Events) != 0 || body.Head["seq"] != 1.0 {
		t.Fatalf("at shutdown: %d %s", rec.Code, rec.Body)
	}
}

// TestLedgerWaitBadParameters: a malformed or out-of-range after or wait is
// a 422 naming it, as the listing's query parameters answer.
func TestLedgerWaitBadParameters(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, nil)
	for _, c := range []struct{ query, pointer string }{
		{"after=-1", "query:after"},
		{"after=1.5", "query:after"},
		{"after=x&wait=1s", "query:after"},
		{"wait=61s", "query:wait"},
		{"wait=61", "query:wait"},
		{"wait=2m", "query:wait"},
		{"wait=-1s", "query:wait"},
		{"wait=soon", "query:wait"},
		{"wait=1.5", "query:wait"},
		// Whole seconds whose nanoseconds overflow: 2^64 ns is about
		// 18446744074 s, which wrapped to a 0.3 s wait and was taken.
		{"wait=18446744074", "query:wait"},
		{"wait=18446744100", "query:wait"},
		{"wait=9223372037", "query:wait"},
		{"after=5&after=0", "query:after"}, // read as its first value, it hid the events past 0
		{"wait=0&wait=30s", "query:wait"},
	} {
		r, err := waitLedger(e, id, e.tenantA, c.query)
		if err != nil {
			t.Fatal(err)
		}
		fields, _ := r.body["fields"].([]any)
		var ptr any
		if len(fields) > 0 {
			ptr = fields[0].(map[string]any)["pointer"]
		}
		if r.status != 422 || r.header.Get("Content-Type") != "application/problem+json" || ptr != c.pointer {
			t.Errorf("%s: %d %s %s", c.query, r.status, r.header.Get("Content-Type"), r.raw)
		}
	}
}

// TestLedgerWaitWokenByItsHandoffOnly: a waiting read is woken by its own
// handoff's events, not by every change of any handoff: it waits once and
// reads its trail once, when an event past after is there. Every event of
// any tenant woke every waiting read, so one tenant's thousands of waits
// slowed every other tenant's writes (9,000 waits took another tenant's
// heartbeats from 2 ms to 33 ms on average); before that, each wake read and
// decoded the whole trail (50 waits on a ledger of 15 MB held the server to
// about one contract created a second).
func TestLedgerWaitWokenByItsHandoffOnly(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, nil)
	// The keys stream wakes a wait too (a revoked key): the env's keys,
	// made on the store, must be in the read models before it waits.
	if err := e.proj.WaitForHead(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var reads, waits atomic.Int32
	defer batonhttp.SetLedgerReadHook(func() { reads.Add(1) })()
	waiting := make(chan struct{}, 100)
	defer batonhttp.SetLedgerWaitHook(func() { waits.Add(1); waiting <- struct{}{} })()
	done := make(chan response, 1)
	go func() {
		r, err := waitLedger(e, id, e.tenantA, "after=1&wait=60s")
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	<-waiting
	// Other handoffs move, the tenant's own and another tenant's, and are
	// read back: the read models have applied them.
	for _, key := range []string{e.tenantA, e.tenantB, e.tenantB} {
		other := e.contract(key, nil)
		if _, err := approve(e, other, key); err != nil {
			t.Fatal(err)
		}
		e.must(e.do("GET", "/v1/handoff/contracts/"+other, key, nil), 200)
	}
	if _, err := approve(e, id, e.tenantA); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if got := seqs(r); len(got) != 1 || got[0] != 2 {
		t.Fatalf("events %v, want [2]", got)
	}
	if n, m := waits.Load(), reads.Load(); n != 1 || m != 1 {
		t.Fatalf("the read waited %d times and read the trail %d times, want once each", n, m)
	}
}
