package http_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	batonhttp "github.com/batonhq/baton/http"
)

// sseEvent is one event of GET /v1/events as a client reads it.
type sseEvent struct {
	id, event string
	data      map[string]any
}

func (ev sseEvent) str(k string) string {
	switch v := ev.data[k].(type) {
	case string:
		return v
	case float64:
		return fmt.Sprint(int64(v))
	}
	return ""
}

// key names an event by handoff and seq.
func (ev sseEvent) key() string { return ev.str("handoffId") + "#" + ev.str("seq") }

// eventStream is an open GET /v1/events, read on its own goroutine.
type eventStream struct {
	header http.Header
	events chan sseEvent
	pings  chan struct{}
	// lastID is the last event id the stream gave, as an EventSource
	// keeps it: an event's, or an id sent without an event.
	lastID atomic.Value
	done   chan struct{} // closed when the stream has ended
	cancel context.CancelFunc
	once   sync.Once
}

// close ends the stream from the client's side and waits for its reader.
func (s *eventStream) close() {
	s.once.Do(s.cancel)
	<-s.done
}

// next is the stream's next event, failing the test when none comes within
// guard or the stream ends.
func (s *eventStream) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case ev := <-s.events:
		return ev
	case <-s.done:
		select {
		case ev := <-s.events:
			return ev
		default:
		}
		t.Fatal("the stream ended")
	case <-time.After(guard):
		t.Fatal("no event within the guard")
	}
	return sseEvent{}
}

// openEvents opens GET /v1/events on base (a server's URL) with the query
// and headers (name, value pairs). A 200 gives the stream; any other status
// the answer, read whole.
func openEvents(t *testing.T, base, key, query string, headers ...string) (*eventStream, response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/v1/events?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", key)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1]) // a name given twice is sent twice
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		defer cancel()
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		out := response{status: resp.StatusCode, header: resp.Header, raw: raw}
		json.Unmarshal(raw, &out.body)
		return nil, out
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	s := &eventStream{header: resp.Header, events: make(chan sseEvent, 4096), pings: make(chan struct{}, 1), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch {
			case line == "":
				if ev.id != "" {
					s.lastID.Store(ev.id)
				}
				if ev.data != nil {
					s.events <- ev
				} else if ev.event != "" {
					t.Errorf("event %q without data", ev.event)
				}
				ev = sseEvent{}
			case field == "" && value == "ping":
				select {
				case s.pings <- struct{}{}:
				default:
				}
			case field == "id":
				ev.id = value
			case field == "event":
				ev.event = value
			case field == "data":
				if err := json.Unmarshal([]byte(value), &ev.data); err != nil {
					t.Errorf("data %q: %v", value, err)
				}
			default:
				t.Errorf("unexpected line %q", line)
			}
		}
	}()
	t.Cleanup(s.close)
	return s, response{status: 200, header: resp.Header}
}

// mustOpen opens a stream that must start.
func mustOpen(t *testing.T, base, key, query string, headers ...string) *eventStream {
	t.Helper()
	s, r := openEvents(t, base, key, query, headers...)
	if s == nil {
		t.Fatalf("GET /v1/events?%s: %d %s", query, r.status, r.raw)
	}
	return s
}

// expect reads events and fails unless they are, in order, these (each
// "<handoffId>#<seq> <type>").
func (s *eventStream) expect(t *testing.T, want ...string) []sseEvent {
	t.Helper()
	var got []sseEvent
	for i, w := range want {
		ev := s.next(t)
		got = append(got, ev)
		if g := ev.key() + " " + ev.event; g != w {
			t.Fatalf("event %d: %s, want %s", i, g, w)
		}
	}
	return got
}

// TestEventsLifecycle: a stream started before a contract sees its events
// as they commit, each with its position as id and the ledger entry's
// fields as data.
func TestEventsLifecycle(t *testing.T) {
	e := newEnv(t)
	s := mustOpen(t, e.srv.URL, e.tenantA, "")
	id := e.contract(e.tenantA, nil)
	e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
	e.must(e.post(id, "proof", e.tenantA, proofBody("run-1")), 200)
	got := s.expect(t, id+"#1 ContractCreated", id+"#2 ApprovalDecided", id+"#3 ExecutorStarted", id+"#4 ProofReceived")
	ledger := e.ledger(id, e.tenantA)
	entries, _ := ledger.body["events"].([]any)
	var prev eventstore.Position
	for i, ev := range got {
		pos, err := batonhttp.ParsePosition(ev.id)
		if err != nil {
			t.Fatalf("event %d: id %q: %v", i, ev.id, err)
		}
		if !prev.Less(pos) {
			t.Fatalf("event %d: id %s does not follow %s", i, ev.id, batonhttp.FormatPosition(prev))
		}
		prev = pos
		want, _ := entries[i].(map[string]any)
		for _, k := range []string{"seq", "type", "actor", "recordedAt", "prevHash", "hash"} {
			if fmt.Sprint(ev.data[k]) != fmt.Sprint(want[k]) {
				t.Errorf("event %d: %s %v, ledger has %v", i, k, ev.data[k], want[k])
			}
		}
		wd, _ := json.Marshal(want["data"])
		gd, _ := json.Marshal(ev.data["data"])
		if string(wd) != string(gd) {
			t.Errorf("event %d: data %s, ledger has %s", i, gd, wd)
		}
		if ev.str("tenant") != "a" || ev.str("targetExecutor") != "ops-bot" || ev.str("type") != ev.event {
			t.Errorf("event %d: tenant %q, targetExecutor %q, type %q", i, ev.str("tenant"), ev.str("targetExecutor"), ev.str("type"))
		}
	}
	// An event's id is the position its write answered.
	r := e.must(e.post(id, "proof", e.tenantA, proofBody("run-1")), 200)
	if ev := s.next(t); ev.id != r.header.Get(batonhttp.PositionHeader) {
		t.Fatalf("event id %s, the write answered %s", ev.id, r.header.Get(batonhttp.PositionHeader))
	}
}

// TestEventsFromHead: without Last-Event-ID or after, a stream starts at
// the store's head, named in Baton-Position; events before it are not sent.
func TestEventsFromHead(t *testing.T) {
	e := newEnv(t)
	old := e.contract(e.tenantA, nil)
	head, err := e.store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, e.srv.URL, e.tenantA, "")
	if got := s.header.Get(batonhttp.PositionHeader); got != batonhttp.FormatPosition(head) {
		t.Fatalf("Baton-Position %q, want the head %s", got, batonhttp.FormatPosition(head))
	}
	e.must(e.post(old, "approval", e.tenantA, approveBody()), 200)
	s.expect(t, old+"#2 ApprovalDecided")
}

// TestEventsTenants: a tenant's stream never carries another tenant's
// events; an admin's carries every tenant's.
func TestEventsTenants(t *testing.T) {
	e := newEnv(t)
	a := mustOpen(t, e.srv.URL, e.tenantA, "")
	b := mustOpen(t, e.srv.URL, e.tenantB, "")
	admin := mustOpen(t, e.srv.URL, e.admin, "")
	idB := e.contract(e.tenantB, nil)
	e.must(e.post(idB, "approval", e.tenantB, rejectBody()), 200)
	idA := e.contract(e.tenantA, nil)
	a.expect(t, idA+"#1 ContractCreated")
	b.expect(t, idB+"#1 ContractCreated", idB+"#2 ApprovalDecided", idB+"#3 LedgerClosed")
	got := admin.expect(t, idB+"#1 ContractCreated", idB+"#2 ApprovalDecided", idB+"#3 LedgerClosed", idA+"#1 ContractCreated")
	if got[0].str("tenant") != "b" || got[3].str("tenant") != "a" {
		t.Fatalf("admin stream tenants %q, %q", got[0].str("tenant"), got[3].str("tenant"))
	}

	// An event whose metadata names another tenant than its contract (a
	// writer around Baton) goes to neither.
	stream := domain.StreamID(idA)
	ev := eventstore.NewEvent(domain.EventApprovalDecided, json.RawMessage(`{"status":"APPROVED","decidedBy":"mallory"}`), eventstore.Metadata{Tenant: "b", Actor: "mallory"})
	if _, err := e.store.Append(context.Background(), stream, eventstore.Revision(0), ev); err != nil {
		t.Fatal(err)
	}
	idA2 := e.contract(e.tenantA, nil)
	idB2 := e.contract(e.tenantB, nil)
	a.expect(t, idA2+"#1 ContractCreated")
	b.expect(t, idB2+"#1 ContractCreated")
}

// TestEventsKeyRevoked: revoking a key ends the streams it holds open,
// before the tenant's next event; a stream of another key of the tenant
// goes on.
func TestEventsKeyRevoked(t *testing.T) {
	e := newEnv(t)
	k := e.must(e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "a"}), 201)
	revoked := mustOpen(t, e.srv.URL, k.str("key"), "")
	other := mustOpen(t, e.srv.URL, e.tenantA, "")
	e.must(e.do("DELETE", "/v1/admin/keys/"+k.str("keyId"), e.admin, nil), 200)
	id := e.contract(e.tenantA, nil)
	other.expect(t, id+"#1 ContractCreated")
	select {
	case ev := <-revoked.events:
		t.Fatalf("a revoked key's stream was sent %s %s", ev.key(), ev.event)
	case <-revoked.done:
	case <-time.After(guard):
		t.Fatal("a revoked key's stream goes on")
	}
	select {
	case ev := <-revoked.events:
		t.Fatalf("a revoked key's stream was sent %s %s", ev.key(), ev.event)
	default:
	}
	if _, r := openEvents(t, e.srv.URL, k.str("key"), ""); r.status != 401 {
		t.Fatalf("a revoked key opened a stream: %d %s", r.status, r.raw)
	}
}

// TestEventsFilters: handoffId, targetExecutor and type, repeated and
// comma-separated.
func TestEventsFilters(t *testing.T) {
	e := newEnv(t)
	// Created before the streams start: their target executors come from
	// the read models.
	x := e.contract(e.tenantA, nil)
	y := e.contract(e.tenantA, map[string]any{"targetExecutor": "deploy-bot"})
	z := e.contract(e.tenantA, map[string]any{"targetExecutor": "deploy,bot"})
	byID := mustOpen(t, e.srv.URL, e.tenantA, "handoffId="+y+","+z)
	byIDRepeated := mustOpen(t, e.srv.URL, e.tenantA, "handoffId="+y+"&handoffId="+z)
	byTarget := mustOpen(t, e.srv.URL, e.tenantA, "targetExecutor=deploy-bot&targetExecutor="+url.QueryEscape("deploy,bot"))
	byType := mustOpen(t, e.srv.URL, e.tenantA, "type=ApprovalDecided,LedgerClosed")
	byTypeRepeated := mustOpen(t, e.srv.URL, e.tenantA, "type=ContractCreated&type=LedgerClosed")
	all := mustOpen(t, e.srv.URL, e.tenantA, "handoffId="+y+","+z+"&targetExecutor="+url.QueryEscape("deploy,bot")+"&type=ApprovalDecided,ExecutorStarted")

	e.must(e.post(x, "approval", e.tenantA, approveBody()), 200)
	e.must(e.post(y, "approval", e.tenantA, rejectBody()), 200)
	e.must(e.post(z, "approval", e.tenantA, approveBody()), 200)
	// Created after the streams start: its target executor comes from the
	// feed.
	w := e.contract(e.tenantA, map[string]any{"targetExecutor": "deploy-bot"})
	e.must(e.post(w, "approval", e.tenantA, approveBody()), 200)

	byID.expect(t, y+"#2 ApprovalDecided", y+"#3 LedgerClosed", z+"#2 ApprovalDecided")
	byIDRepeated.expect(t, y+"#2 ApprovalDecided", y+"#3 LedgerClosed", z+"#2 ApprovalDecided")
	got := byTarget.expect(t, y+"#2 ApprovalDecided", y+"#3 LedgerClosed", z+"#2 ApprovalDecided", w+"#1 ContractCreated", w+"#2 ApprovalDecided")
	if got[2].str("targetExecutor") != "deploy,bot" || got[4].str("targetExecutor") != "deploy-bot" {
		t.Fatalf("targetExecutor %q, %q", got[2].str("targetExecutor"), got[4].str("targetExecutor"))
	}
	byType.expect(t, x+"#2 ApprovalDecided", y+"#2 ApprovalDecided", y+"#3 LedgerClosed", z+"#2 ApprovalDecided", w+"#2 ApprovalDecided")
	byTypeRepeated.expect(t, y+"#3 LedgerClosed", w+"#1 ContractCreated")
	all.expect(t, z+"#2 ApprovalDecided")

	// Events that pass each filter, last: the next event of each stream is
	// the first of them, so nothing else came in between.
	v := e.contract(e.tenantA, map[string]any{"targetExecutor": "deploy-bot"})
	e.must(e.post(v, "approval", e.tenantA, approveBody()), 200)
	e.must(e.post(z, "proof", e.tenantA, proofBody("run-z")), 200)
	byID.expect(t, z+"#3 ExecutorStarted", z+"#4 ProofReceived")
	byIDRepeated.expect(t, z+"#3 ExecutorStarted", z+"#4 ProofReceived")
	byTarget.expect(t, v+"#1 ContractCreated", v+"#2 ApprovalDecided", z+"#3 ExecutorStarted", z+"#4 ProofReceived")
	byType.expect(t, v+"#2 ApprovalDecided")
	byTypeRepeated.expect(t, v+"#1 ContractCreated")
	all.expect(t, z+"#3 ExecutorStarted")
}

// secondFront serves another Baton front on e's store and read models (a
// replica), and returns its URL.
func (e *env) secondFront(t *testing.T) string {
	t.Helper()
	cfg := batonhttp.Config{Store: e.store, Projections: e.proj, Log: zerolog.New(testLogWriter(t)).Level(zerolog.ErrorLevel), Version: "test",
		EventsPing: envEventsPing, EventStreams: envEventStreams}
	front := batonhttp.NewServer(cfg)
	srv := httptest.NewServer(checkOpenAPI(func() testing.TB { return t }, front.Handler()))
	t.Cleanup(func() {
		srv.Close()
		front.Close()
	})
	return srv.URL
}

// TestEventsResume: a stream resumed after an event's id, on the same
// server or another on the same store, by Last-Event-ID or after, sends
// exactly the events after it: none twice, none missing.
func TestEventsResume(t *testing.T) {
	e := newEnv(t)
	other := e.secondFront(t)
	s := mustOpen(t, e.srv.URL, e.tenantA, "")
	id := e.contract(e.tenantA, nil)
	e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
	idB := e.contract(e.tenantB, nil) // another tenant's, between them
	e.must(e.post(id, "proof", e.tenantA, proofBody("run-1")), 200)
	got := s.expect(t, id+"#1 ContractCreated", id+"#2 ApprovalDecided", id+"#3 ExecutorStarted", id+"#4 ProofReceived")
	s.close()
	// Written while no stream is open.
	e.must(e.post(id, "result", e.tenantA, resultBody("run-1")), 200)
	e.must(e.post(idB, "approval", e.tenantB, approveBody()), 200)
	id2 := e.contract(e.tenantA, nil)

	rest := []string{id + "#3 ExecutorStarted", id + "#4 ProofReceived", id + "#5 ResultReceived", id2 + "#1 ContractCreated"}
	cases := []struct {
		name, base, query string
		headers           []string
	}{
		{"Last-Event-ID", e.srv.URL, "", []string{"Last-Event-ID", got[1].id}},
		{"Last-Event-ID on another replica", other, "", []string{"Last-Event-ID", got[1].id}},
		{"after on another replica", other, "after=" + url.QueryEscape(got[1].id), nil},
		// A reconnecting client keeps its first URL: the header wins.
		{"Last-Event-ID over after", other, "after=" + url.QueryEscape(got[0].id), []string{"Last-Event-ID", got[1].id}},
	}
	for _, c := range cases {
		r := mustOpen(t, c.base, e.tenantA, c.query, c.headers...)
		r.expect(t, rest...)
		// Then only what comes next.
		idN := e.contract(e.tenantA, nil)
		r.expect(t, idN+"#1 ContractCreated")
		r.close()
		rest = append(rest, idN+"#1 ContractCreated")
	}
}

// TestEventsResumeBeforeAnyEvent: a client that reconnects as EventSource
// does, with the last id the stream gave, before any event came, misses
// nothing committed while it was away.
func TestEventsResumeBeforeAnyEvent(t *testing.T) {
	e := newEnv(t)
	for _, empty := range []bool{true, false} {
		if !empty {
			e.contract(e.tenantA, nil)
		}
		s := mustOpen(t, e.srv.URL, e.tenantA, "")
		deadline := time.Now().Add(guard)
		for s.lastID.Load() == nil && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		last, _ := s.lastID.Load().(string)
		if last == "" {
			t.Fatalf("empty store %v: the stream gave no id to resume from", empty)
		}
		s.close()
		id := e.contract(e.tenantA, nil) // while it is away
		r := mustOpen(t, e.srv.URL, e.tenantA, "", "Last-Event-ID", last)
		r.expect(t, id+"#1 ContractCreated")
		r.close()
	}
}

// TestEventsFromTheStartNamesIt: a stream resumed from 0/0 on a store
// with events names where it started in Baton-Position, as any resumed
// stream does.
func TestEventsFromTheStartNamesIt(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, nil)
	for _, h := range [][]string{{}, {"Last-Event-ID", "0/0"}} {
		query := "after=0/0"
		if len(h) > 0 {
			query = ""
		}
		s := mustOpen(t, e.srv.URL, e.tenantA, query, h...)
		if got := s.header.Get("Baton-Position"); got != "0/0" {
			t.Errorf("%v %q: Baton-Position %q, want 0/0", h, query, got)
		}
		s.expect(t, id+"#1 ContractCreated")
		s.close()
	}
}

// An id past the store's newest event (another store's, or one restored
// from an older backup) is refused at once, not waited on in silence.
func TestEventsResumePastTheHead(t *testing.T) {
	e := newEnv(t)
	e.contract(e.tenantA, nil)
	head, err := e.store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ahead := batonhttp.FormatPosition(eventstore.Position{Commit: head.Commit + 1000, Prepare: head.Prepare + 1000})
	for _, h := range [][]string{{"Last-Event-ID", ahead}, nil} {
		q := "?after=" + url.QueryEscape(ahead)
		if h != nil {
			q = ""
		}
		r := e.do("GET", "/v1/events"+q, e.tenantA, nil, h...)
		if r.status != 409 || r.str("code") != "position_ahead" || !strings.Contains(r.str("detail"), "past this store's newest event") {
			t.Fatalf("%v %s: %d %s", h, q, r.status, r.raw)
		}
	}
	// The head itself is where a client that saw the last event resumes.
	mustOpen(t, e.srv.URL, e.tenantA, "", "Last-Event-ID", batonhttp.FormatPosition(head)).close()
}

// TestEventsHeartbeat: a quiet stream sends ": ping".
func TestEventsHeartbeat(t *testing.T) {
	envEventsPing = 20 * time.Millisecond
	t.Cleanup(func() { envEventsPing = 0 })
	e := newEnv(t)
	s := mustOpen(t, e.srv.URL, e.tenantA, "")
	for range 2 {
		select {
		case <-s.pings:
		case <-s.done:
			t.Fatal("the stream ended")
		case <-time.After(guard):
			t.Fatal("no ping")
		}
	}
	id := e.contract(e.tenantA, nil)
	s.expect(t, id+"#1 ContractCreated")
}

// TestEventsBadQuery: malformed positions and filters are 422
// validation_failed on the parameter.
func TestEventsBadQuery(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for i := range 101 {
		ids = append(ids, fmt.Sprintf("h%d", i))
	}
	long := strings.Join(ids, ",")
	for _, c := range []struct {
		query   string
		headers []string
		pointer string
	}{
		{"", []string{"Last-Event-ID", "12"}, "header:Last-Event-ID"},
		{"", []string{"Last-Event-ID", "1/x"}, "header:Last-Event-ID"},
		// Two ids: the first was taken, whichever the client meant.
		{"", []string{"Last-Event-ID", "1/1", "Last-Event-ID", "2/2"}, "header:Last-Event-ID"},
		{"after=-1/2", nil, "query:after"},
		{"after=1/2&after=3/4", nil, "query:after"},
		// An empty after (a script's unset position) started at the head,
		// past what came since the client's last event, as if resumed.
		{"after=", nil, "query:after"},
		{"type=approval_decided", nil, "query:type"},
		{"type=ApprovalDecided,", nil, "query:type"},
		{"type=", nil, "query:type"},
		{"handoffId=", nil, "query:handoffId"},
		{"handoffId=" + url.QueryEscape("a b"), nil, "query:handoffId"},
		{"handoffId=" + long, nil, "query:handoffId"},
		{"targetExecutor=" + url.QueryEscape("ops\nbot"), nil, "query:targetExecutor"},
	} {
		s, r := openEvents(t, e.srv.URL, e.tenantA, c.query, c.headers...)
		if s != nil {
			t.Fatalf("%s %v: the stream started", c.query, c.headers)
		}
		if r.status != 422 || r.str("code") != "validation_failed" || !strings.Contains(r.str("fields"), `"pointer":"`+c.pointer+`"`) {
			t.Errorf("%s %v: %d %s", c.query, c.headers, r.status, r.raw)
		}
	}
	// A well-formed type no event has yet is taken (types are added to the
	// lifecycle).
	mustOpen(t, e.srv.URL, e.tenantA, "type=ExecutorHeartbeat,ApprovalExpired").close()
	// No key: 401.
	if _, r := openEvents(t, e.srv.URL, "", ""); r.status != 401 {
		t.Fatalf("no key: %d %s", r.status, r.raw)
	}
}

// TestEventsBound: a tenant holds at most EventStreams streams; the next
// is 429 with Retry-After, another tenant is not held back, and a client
// leaving frees its slot.
func TestEventsBound(t *testing.T) {
	envEventStreams = 2
	t.Cleanup(func() { envEventStreams = 0 })
	e := newEnv(t)
	s1 := mustOpen(t, e.srv.URL, e.tenantA, "")
	mustOpen(t, e.srv.URL, e.tenantA2, "") // the tenant's, whatever its key
	_, r := openEvents(t, e.srv.URL, e.tenantA, "")
	if r.status != 429 || r.str("code") != "too_many_streams" || r.header.Get("Retry-After") == "" ||
		r.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("third stream: %d %v %s", r.status, r.header, r.raw)
	}
	mustOpen(t, e.srv.URL, e.tenantB, "")
	s1.close()
	deadline := time.Now().Add(guard)
	for batonhttp.OpenEventStreams(e.front, "a") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the closed stream still holds its slot")
		}
		time.Sleep(time.Millisecond)
	}
	s3 := mustOpen(t, e.srv.URL, e.tenantA, "")
	id := e.contract(e.tenantA, nil)
	s3.expect(t, id+"#1 ContractCreated")
}

// TestEventsClientGone: a client leaving ends its stream at once: the
// subscription and the slot are released (TestMain's leak check covers
// the goroutines).
func TestEventsClientGone(t *testing.T) {
	e := newEnv(t)
	var streams []*eventStream
	for range 3 {
		streams = append(streams, mustOpen(t, e.srv.URL, e.tenantA, ""))
	}
	if n := batonhttp.OpenEventStreams(e.front, "a"); n != 3 {
		t.Fatalf("%d streams open", n)
	}
	for _, s := range streams {
		s.close()
	}
	deadline := time.Now().Add(guard)
	for batonhttp.OpenEventStreams(e.front, "a") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the streams were not released")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestEventsShutdown: StopWaits ends the streams.
func TestEventsShutdown(t *testing.T) {
	e := newEnv(t)
	s := mustOpen(t, e.srv.URL, e.tenantA, "")
	e.front.StopWaits()
	select {
	case <-s.done:
	case <-time.After(guard):
		t.Fatal("the stream outlived the shutdown")
	}
	if n := batonhttp.OpenEventStreams(e.front, "a"); n != 0 {
		t.Fatalf("%d streams still open", n)
	}
}

// feedFault is a store whose feed fails on demand: SubscribeAll refuses
// when refuse is set, and a subscription's Recv fails once cut is closed.
type feedFault struct {
	eventstore.Store
	mu     sync.Mutex
	refuse bool
	cut    chan struct{}
}

// set arms the fault for the subscriptions to come.
func (f *feedFault) set(refuse bool, cut chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse, f.cut = refuse, cut
}

func (f *feedFault) SubscribeAll(ctx context.Context, after eventstore.Position) (eventstore.Subscription, error) {
	f.mu.Lock()
	refuse, cut := f.refuse, f.cut
	f.mu.Unlock()
	if refuse {
		return nil, eventstore.ErrUnavailable
	}
	sub, err := f.Store.SubscribeAll(ctx, after)
	if err != nil {
		return nil, err
	}
	return &cutSubscription{Subscription: sub, cut: cut}, nil
}

type cutSubscription struct {
	eventstore.Subscription
	cut chan struct{}
}

func (s *cutSubscription) Recv() (eventstore.RecordedEvent, error) {
	select {
	case <-s.cut:
		return eventstore.RecordedEvent{}, eventstore.ErrUnavailable
	default:
	}
	return s.Subscription.Recv()
}

// TestEventsFeedFails: a feed that cannot start is 503 store_unavailable
// with Retry-After; one that fails mid-stream ends the stream, freeing its
// slot, and the client resumes after the last event it has.
func TestEventsFeedFails(t *testing.T) {
	f := &feedFault{refuse: true}
	e := newEnvStore(t, nil, func(s eventstore.Store) eventstore.Store { f.Store = s; return f })
	_, r := openEvents(t, e.srv.URL, e.tenantA, "")
	if r.status != 503 || r.str("code") != "store_unavailable" || r.header.Get("Retry-After") != "1" {
		t.Fatalf("refused feed: %d %v %s", r.status, r.header, r.raw)
	}
	cut := make(chan struct{})
	f.set(false, cut)
	s := mustOpen(t, e.srv.URL, e.tenantA, "")
	id := e.contract(e.tenantA, nil)
	got := s.expect(t, id+"#1 ContractCreated")
	close(cut)
	e.must(e.post(id, "approval", e.tenantA, approveBody()), 200) // wakes the Recv that waits
	select {
	case <-s.done:
	case <-time.After(guard):
		t.Fatal("the stream outlived its feed")
	}
	if n := batonhttp.OpenEventStreams(e.front, "a"); n != 0 {
		t.Fatalf("%d streams still open", n)
	}
	f.set(false, make(chan struct{}))
	mustOpen(t, e.srv.URL, e.tenantA, "", "Last-Event-ID", got[0].id).expect(t, id+"#2 ApprovalDecided")
}

// Every name a contract takes as targetExecutor (up to 200 characters)
// is a name its executor can follow, on the event stream and in a
// webhook's targetExecutors: both measured bytes, so a name of 100
// characters outside ASCII (300 bytes of UTF-8) was refused by the
// filters though its contracts were created.
func TestExecutorFiltersTakeEveryTargetExecutor(t *testing.T) {
	e := newEnv(t)
	name := strings.Repeat("运维机器人", 40) // 200 characters, 600 bytes
	s := mustOpen(t, e.srv.URL, e.tenantA, "targetExecutor="+url.QueryEscape(name))
	id := e.contract(e.tenantA, map[string]any{"targetExecutor": name})
	if got := s.expect(t, id+"#1 ContractCreated"); got[0].str("targetExecutor") != name {
		t.Fatalf("targetExecutor %q", got[0].str("targetExecutor"))
	}
	e.must(e.do("POST", "/v1/webhooks", e.tenantA, map[string]any{"url": "https://hooks.example.com/baton", "eventTypes": []string{"*"}, "targetExecutors": []string{name}}), 201)
	// One character more is refused by each, as by the contract.
	longer := name + "x"
	e.must(e.do("POST", "/v1/handoff/contracts", e.tenantA, map[string]any{"objective": "o", "targetExecutor": longer, "executorProtocol": "ops_bot.v1", "riskLevel": "low"}), 422)
	if _, r := openEvents(t, e.srv.URL, e.tenantA, "targetExecutor="+url.QueryEscape(longer)); r.status != 422 {
		t.Fatalf("GET /v1/events with a 201-character target: %d %s", r.status, r.raw)
	}
	e.must(e.do("POST", "/v1/webhooks", e.tenantA, map[string]any{"url": "https://hooks.example.com/baton", "eventTypes": []string{"*"}, "targetExecutors": []string{longer}}), 422)
}

// A quiet interval after events the stream's filters left out tells the
// client how far it has read, as an id alone, in place of the ping: its
// reconnect resumes there, not at the last event it was sent, from which
// a narrow filter read the whole tenant's events again.
func TestEventsQuietIntervalTellsHowFarItRead(t *testing.T) {
	envEventsPing = 20 * time.Millisecond
	t.Cleanup(func() { envEventsPing = 0 })
	e := newEnv(t)
	mine := e.contract(e.tenantA, nil)
	s := mustOpen(t, e.srv.URL, e.tenantA, "handoffId="+mine)
	start, _ := s.lastID.Load().(string)
	for range 3 {
		e.contract(e.tenantA, nil) // left out by the filter
	}
	head, err := e.store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := batonhttp.FormatPosition(head)
	deadline := time.Now().Add(guard)
	for {
		if last, _ := s.lastID.Load().(string); last == want {
			break
		}
		if time.Now().After(deadline) {
			last, _ := s.lastID.Load().(string)
			t.Fatalf("last id %q (started at %q), want the head %q", last, start, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.close()
}
