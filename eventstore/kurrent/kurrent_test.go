package kurrent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/kurrent"
	"github.com/batonhq/baton/eventstore/kurrent/kurrenttest"
	"github.com/batonhq/baton/eventstore/storetest"
)

// childEnv marks a child test process (see inChild).
const childEnv = "KURRENT_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		// The client leaks connections in what the child tests (see
		// inChild): no leak check here.
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}

// inChild runs the calling test in a child process and reports whether the
// caller is the parent (and must return). Tests that make the server go away
// under the client use it: esdb v4.2.0 reconnects by dialling a new
// *grpc.ClientConn and dropping the old one without closing it
// (connectionStateMachine, case reconnect), and such a connection may keep
// reconnecting in the background for the rest of the process, which the
// leak check of this one would report.
func inChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv(childEnv) != "" {
		return false
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	return true
}

// startDouble serves a kurrenttest double for the test's lifetime.
func startDouble(t testing.TB, opts kurrenttest.Options) *kurrenttest.Server {
	t.Helper()
	srv, err := kurrenttest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

func testLog(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

func openStore(t testing.TB, cfg kurrent.Config) *kurrent.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := kurrent.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func opener(cfg kurrent.Config) storetest.Opener {
	return func() (eventstore.Store, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return kurrent.Open(ctx, cfg)
	}
}

// TestConformance runs the whole suite against a fresh double per case. The
// double interleaves system events, as a real node's $all has them.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		srv := startDouble(t, kurrenttest.Options{SystemEventEvery: 7})
		return opener(kurrent.Config{URL: srv.URL(), Log: testLog(t)})
	})
}

// TestConformanceSharedServer runs the suite the way it runs against a real
// database: one server for every case, each case in its own StreamPrefix, so
// every case reads the others' events (and system events) in $all and must
// skip them.
func TestConformanceSharedServer(t *testing.T) {
	srv := startDouble(t, kurrenttest.Options{SystemEventEvery: 11})
	runShared(t, srv.URL(), "shared-"+uuid.NewString()[:8])
}

// TestConformanceKurrentDB runs the suite against a real KurrentDB when
// KURRENTDB_URL is set.
func TestConformanceKurrentDB(t *testing.T) {
	url := os.Getenv("KURRENTDB_URL")
	if url == "" {
		t.Skip(`set KURRENTDB_URL to run the conformance suite against a real KurrentDB, e.g.
  docker run --rm -p 2113:2113 docker.kurrent.io/kurrent-latest/kurrentdb --insecure --run-projections=None
  KURRENTDB_URL='esdb://127.0.0.1:2113?tls=false' go test -run TestConformanceKurrentDB -v ./eventstore/kurrent
(every case writes to streams of its own prefix, so any database will do)`)
	}
	runShared(t, url, "baton-conformance-"+time.Now().UTC().Format("20060102T150405")+"-"+uuid.NewString()[:8])
}

func runShared(t *testing.T, url, run string) {
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		prefix := fmt.Sprintf("%s-%d-", run, n.Add(1))
		return opener(kurrent.Config{URL: url, Log: testLog(t), StreamPrefix: prefix})
	})
}

func ev(typ string) eventstore.EventData { return storetest.Event(typ, map[string]string{"t": typ}) }

// TestExpectationsSentAsIs checks what reaches the server: every append
// carries the expectation it was given, and none carries Any (which would
// switch the check off), whatever the outcome.
func TestExpectationsSentAsIs(t *testing.T) {
	srv := startDouble(t, kurrenttest.Options{})
	s := openStore(t, kurrent.Config{URL: srv.URL()})
	ctx := context.Background()
	a := ev("A")
	type step struct {
		exp  eventstore.ExpectedRevision
		evs  []eventstore.EventData
		want kurrenttest.ExpectedKind
		ok   bool
	}
	steps := []step{
		{eventstore.NoStream(), []eventstore.EventData{a}, kurrenttest.ExpectNoStream, true},
		{eventstore.NoStream(), []eventstore.EventData{a}, kurrenttest.ExpectNoStream, true}, // idempotent
		{eventstore.NoStream(), []eventstore.EventData{ev("B")}, kurrenttest.ExpectNoStream, false},
		{eventstore.Revision(0), []eventstore.EventData{ev("C")}, kurrenttest.ExpectRevision, true},
		{eventstore.Revision(0), []eventstore.EventData{ev("D")}, kurrenttest.ExpectRevision, false},
		{eventstore.StreamExists(), []eventstore.EventData{ev("E")}, kurrenttest.ExpectStreamExists, true},
		{eventstore.StreamExists(), []eventstore.EventData{a}, kurrenttest.ExpectStreamExists, true}, // idempotent
	}
	for i, st := range steps {
		_, err := s.Append(ctx, "expect-1", st.exp, st.evs...)
		if (err == nil) != st.ok {
			t.Fatalf("step %d (%s): err = %v, want success %v", i, st.exp, err, st.ok)
		}
	}
	// Refused before anything is sent.
	if _, err := s.Append(ctx, "expect-1", eventstore.ExpectedRevision{}, ev("F")); !errors.Is(err, eventstore.ErrNoExpectedRevision) {
		t.Fatalf("unset expectation: err = %v", err)
	}
	if _, err := s.Append(ctx, "expect-2", eventstore.StreamExists(), ev("G")); !errors.Is(err, eventstore.ErrConflict) {
		t.Fatalf("stream exists on a missing stream: err = %v", err)
	}
	calls := srv.Appends()
	if len(calls) != len(steps)+1 {
		t.Fatalf("server saw %d appends, want %d: %+v", len(calls), len(steps)+1, calls)
	}
	for i, c := range calls {
		if c.Expected == kurrenttest.ExpectAny || c.Expected == kurrenttest.ExpectMissing {
			t.Fatalf("append %d reached the server with expectation %s", i, c.Expected)
		}
		if i < len(steps) && c.Expected != steps[i].want {
			t.Fatalf("append %d: server saw %s, want %s", i, c.Expected, steps[i].want)
		}
		if i < len(steps) && c.EventIDs[0] != steps[i].evs[0].ID {
			t.Fatalf("append %d: server saw event id %s, want the caller's %s", i, c.EventIDs[0], steps[i].evs[0].ID)
		}
	}
	if calls[3].Revision != 0 || calls[1].Outcome != "idempotent" || calls[6].Outcome != "idempotent" {
		t.Fatalf("calls = %+v", calls)
	}

	// The recorder does see Any when a client sends it: the client's default.
	cfg, err := esdb.ParseConnectionString(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = esdb.NoopLogging()
	raw, err := esdb.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.AppendToStream(ctx, "raw-1", esdb.AppendToStreamOptions{}, esdb.EventData{EventType: "X", ContentType: esdb.ContentTypeJson, Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if c := srv.Appends(); c[len(c)-1].Expected != kurrenttest.ExpectAny {
		t.Fatalf("raw client's default expectation reached the double as %s, want any", c[len(c)-1].Expected)
	}
}

// syncBuffer collects log output from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// recvN receives n events within a deadline.
func recvN(t *testing.T, sub eventstore.Subscription, n int) []eventstore.RecordedEvent {
	t.Helper()
	type res struct {
		evs []eventstore.RecordedEvent
		err error
	}
	done := make(chan res, 1)
	go func() {
		var out []eventstore.RecordedEvent
		for len(out) < n {
			e, err := sub.Recv()
			if err != nil {
				done <- res{out, err}
				return
			}
			out = append(out, e)
		}
		done <- res{out, nil}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("recv after %d of %d: %v", len(r.evs), n, r.err)
		}
		return r.evs
	case <-time.After(20 * time.Second):
		sub.Close()
		<-done
		t.Fatalf("received fewer than %d events in time", n)
	}
	return nil
}

// TestResubscribeAfterDrop drops the subscription on the server, repeatedly
// and while events are being written: the store resubscribes from the last
// event it delivered, logs the drop, and the consumer sees every event once,
// in order.
func TestResubscribeAfterDrop(t *testing.T) {
	srv := startDouble(t, kurrenttest.Options{SystemEventEvery: 3})
	logs := &syncBuffer{}
	s := openStore(t, kurrent.Config{
		URL: srv.URL(), Log: zerolog.New(logs),
		ResubscribeMin: 5 * time.Millisecond, ResubscribeMax: 50 * time.Millisecond,
		SubscriptionBuffer: 4, // so that drops also hit a pump that is waiting for its consumer
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub, err := s.SubscribeAll(ctx, eventstore.Start)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	var want []uuid.UUID
	appendN := func(n int) error {
		for i := 0; i < n; i++ {
			e := ev("E")
			exp := eventstore.NoStream()
			if len(want) > 0 {
				exp = eventstore.Revision(uint64(len(want) - 1))
			}
			if _, err := s.Append(ctx, "drop-1", exp, e); err != nil {
				return err
			}
			want = append(want, e.ID)
		}
		return nil
	}
	if err := appendN(3); err != nil {
		t.Fatal(err)
	}
	got := recvN(t, sub, 3)
	waitFor(t, "the subscription on the server", func() bool { return srv.Subscriptions() == 1 })
	if n := srv.DropSubscriptions(); n != 1 {
		t.Fatalf("dropped %d subscriptions, want 1", n)
	}
	if err := appendN(3); err != nil {
		t.Fatal(err)
	}
	got = append(got, recvN(t, sub, 3)...)
	waitFor(t, "the drop to be logged", func() bool { return strings.Contains(logs.String(), "subscription dropped") })
	waitFor(t, "the resubscription to be logged", func() bool { return strings.Contains(logs.String(), "subscription resumed") })

	// Drops while writing and reading: a dropper drops every few
	// milliseconds, and the writer waits for a drop after every 25 events,
	// so drops land in every phase (catch-up, live, a full buffer).
	var drops atomic.Int64
	stop := make(chan struct{})
	dropperDone := make(chan struct{})
	go func() {
		defer close(dropperDone)
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
				drops.Add(int64(srv.DropSubscriptions()))
			}
		}
	}()
	const live = 150
	writerDone := make(chan error, 1)
	go func() {
		for i := 0; i < live; i += 25 {
			seen := drops.Load()
			if err := appendN(25); err != nil {
				writerDone <- err
				return
			}
			for deadline := time.Now().Add(30 * time.Second); drops.Load() == seen && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
		writerDone <- nil
	}()
	got = append(got, recvN(t, sub, live)...)
	if err := <-writerDone; err != nil {
		t.Fatalf("writer: %v", err)
	}
	close(stop)
	<-dropperDone
	if drops.Load() < live/25 {
		t.Fatalf("only %d drops while writing", drops.Load())
	}
	t.Logf("%d drops while writing", drops.Load())

	if len(got) != len(want) {
		t.Fatalf("received %d events, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].ID != want[i] || got[i].Revision != uint64(i) {
			t.Fatalf("event %d is %s (revision %d), want %s", i, got[i].ID, got[i].Revision, want[i])
		}
		if i > 0 && !got[i-1].Position.Less(got[i].Position) {
			t.Fatalf("positions not increasing at %d", i)
		}
	}
	// Nothing more is pending: a duplicate would show up here.
	extra := make(chan error, 1)
	go func() { _, err := sub.Recv(); extra <- err }()
	select {
	case err := <-extra:
		t.Fatalf("unexpected extra receive (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	sub.Close()
	if err := <-extra; !errors.Is(err, eventstore.ErrSubscriptionClosed) {
		t.Fatalf("recv after close = %v", err)
	}
}

// TestServerRestart restarts the server under a live store: appends fail
// while it is down and work again after, and the subscription resumes.
func TestServerRestart(t *testing.T) {
	if inChild(t) {
		return
	}
	srv := startDouble(t, kurrenttest.Options{})
	s := openStore(t, kurrent.Config{URL: srv.URL(), Log: testLog(t), ResubscribeMin: 10 * time.Millisecond, ResubscribeMax: 100 * time.Millisecond})
	ctx := context.Background()
	sub, err := s.SubscribeAll(ctx, eventstore.Start)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	first := ev("Before")
	if _, err := s.Append(ctx, "restart-1", eventstore.NoStream(), first); err != nil {
		t.Fatal(err)
	}
	if got := recvN(t, sub, 1); got[0].ID != first.ID {
		t.Fatalf("got %s", got[0].ID)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	second := ev("After")
	var appendErr error
	waitFor(t, "an append after the restart", func() bool {
		_, appendErr = s.Append(ctx, "restart-1", eventstore.Revision(0), second)
		if appendErr != nil && !errors.Is(appendErr, eventstore.ErrConflict) && !errors.Is(appendErr, eventstore.ErrUnavailable) {
			// While the server is away, an append's outcome is unknown,
			// and the store says so (the API answers 503, retry).
			t.Errorf("append while the server restarts: %v, want ErrUnavailable", appendErr)
		}
		return appendErr == nil || errors.Is(appendErr, eventstore.ErrConflict)
	})
	if appendErr != nil {
		// An earlier attempt committed but its answer was lost: the retry
		// with the same id is idempotent, so this cannot happen.
		t.Fatalf("append after restart: %v", appendErr)
	}
	if got := recvN(t, sub, 1); got[0].ID != second.ID {
		t.Fatalf("after restart got %s, want %s", got[0].ID, second.ID)
	}
}

// TestClientGivesUp: with the server down long enough, the client stops
// discovering and refuses every call for good; the store replaces it, and
// works again once the server is back.
func TestClientGivesUp(t *testing.T) {
	if inChild(t) {
		return
	}
	srv := startDouble(t, kurrenttest.Options{})
	s := openStore(t, kurrent.Config{URL: srv.URL() + "&maxDiscoverAttempts=1&discoveryInterval=1", Log: testLog(t)})
	ctx := context.Background()
	if _, err := s.Append(ctx, "gives-up-1", eventstore.NoStream(), ev("A")); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	for i := 0; i < 4; i++ { // the connection breaks, discovery fails, the client is dead, renewed, dead again
		_, err := s.Append(ctx, "gives-up-1", eventstore.Revision(0), ev("B"))
		if err == nil {
			t.Fatal("append to a stopped server succeeded")
		}
		if !errors.Is(err, eventstore.ErrUnavailable) && !errors.Is(err, eventstore.ErrClosed) {
			t.Fatalf("append to a stopped server: %v, want ErrUnavailable", err)
		}
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	b := ev("B")
	var err error
	waitFor(t, "an append after the server came back", func() bool {
		_, err = s.Append(ctx, "gives-up-1", eventstore.Revision(0), b)
		return err == nil
	})
	if evs, err := s.ReadStream(ctx, "gives-up-1", 0, 10); err != nil || len(evs) != 2 {
		t.Fatalf("read = %d events, %v", len(evs), err)
	}
}

// TestClusterDiscovery connects through gossip (esdb+discover://).
func TestClusterDiscovery(t *testing.T) {
	srv := startDouble(t, kurrenttest.Options{})
	s := openStore(t, kurrent.Config{URL: "esdb+discover://" + srv.Addr() + "?tls=false"})
	if _, err := s.Append(context.Background(), "gossip-1", eventstore.NoStream(), ev("A")); err != nil {
		t.Fatal(err)
	}
}

func TestOpenFailsFast(t *testing.T) {
	srv := startDouble(t, kurrenttest.Options{})
	addr := srv.Addr()
	srv.Stop()
	start := time.Now()
	_, err := kurrent.Open(context.Background(), kurrent.Config{URL: "esdb://" + addr + "?tls=false&maxDiscoverAttempts=2&discoveryInterval=10"})
	if err == nil {
		t.Fatal("open of a stopped server succeeded")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("open took %v", d)
	}
	for _, bad := range []string{"", "http://localhost:2113", "esdb://u:secret@h:1/path"} {
		_, err := kurrent.Open(context.Background(), kurrent.Config{URL: bad})
		if err == nil {
			t.Fatalf("open %q succeeded", bad)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Fatalf("error shows the password: %v", err)
		}
	}
	if _, err := kurrent.Open(context.Background(), kurrent.Config{URL: "esdb://h:1", StreamPrefix: "$x"}); err == nil {
		t.Fatal("a $ prefix was accepted")
	}
}

// TestAppendLimits: the local check against --max-append-size, and the
// server's refusal when it is configured lower than the store believes.
func TestAppendLimits(t *testing.T) {
	srv := startDouble(t, kurrenttest.Options{MaxAppendSize: 2000})
	s := openStore(t, kurrent.Config{URL: srv.URL(), MaxAppendSize: 4000})
	ctx := context.Background()
	big := storetest.Event("Big", strings.Repeat("x", 4000))
	if _, err := s.Append(ctx, "limits-1", eventstore.NoStream(), big); !errors.Is(err, eventstore.ErrTooLarge) {
		t.Fatalf("append over Config.MaxAppendSize: err = %v, want ErrTooLarge", err)
	}
	if n := len(srv.Appends()); n != 0 {
		t.Fatalf("an append over the limit reached the server (%d calls)", n)
	}
	mid := storetest.Event("Mid", strings.Repeat("x", 3000))
	if _, err := s.Append(ctx, "limits-1", eventstore.NoStream(), mid); !errors.Is(err, eventstore.ErrTooLarge) {
		t.Fatalf("append the server refuses: err = %v, want ErrTooLarge", err)
	}
	if evs, err := s.ReadStream(ctx, "limits-1", 0, 10); err != nil || len(evs) != 0 {
		t.Fatalf("read after refused appends = %d events, %v", len(evs), err)
	}
}

// TestIdempotentRetryWithoutPosition: a server that answers a retry
// without a position still gives the original result.
func TestIdempotentRetryWithoutPosition(t *testing.T) {
	srv := startDouble(t, kurrenttest.Options{NoIdempotentPosition: true})
	s := openStore(t, kurrent.Config{URL: srv.URL()})
	ctx := context.Background()
	a, b := ev("A"), ev("B")
	first, err := s.Append(ctx, "retry-1", eventstore.NoStream(), a, b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Append(ctx, "retry-1", eventstore.NoStream(), a, b)
	if err != nil || again != first {
		t.Fatalf("retry = %+v, %v; want %+v", again, err, first)
	}
	if c := srv.Appends(); c[1].Outcome != "idempotent" {
		t.Fatalf("second append was %s", c[1].Outcome)
	}
}

// TestReservedNames: $-prefixed types and streams are KurrentDB's; an event
// of such a type would never reach the feed, so it is refused.
func TestReservedNames(t *testing.T) {
	srv := startDouble(t, kurrenttest.Options{})
	s := openStore(t, kurrent.Config{URL: srv.URL()})
	ctx := context.Background()
	if _, err := s.Append(ctx, "ok-1", eventstore.NoStream(), ev("A"), ev("$B")); !errors.Is(err, eventstore.ErrInvalidEvent) {
		t.Fatalf("$ type: err = %v", err)
	}
	if _, err := s.Append(ctx, "$ok", eventstore.NoStream(), ev("A")); !errors.Is(err, eventstore.ErrInvalidEvent) {
		t.Fatalf("$ stream: err = %v", err)
	}
	if n := len(srv.Appends()); n != 0 {
		t.Fatalf("%d refused appends reached the server", n)
	}
}

// TestForeignEvents: events that other clients wrote. An event with
// metadata Baton cannot decode (binary) is delivered marked Unreadable, its
// metadata empty, rather than guessed at or stopping the feed; events
// without metadata read with the server's created time; system events stay
// out of the feed.
func TestForeignEvents(t *testing.T) {
	srv := startDouble(t, kurrenttest.Options{})
	s := openStore(t, kurrent.Config{URL: srv.URL()})
	ctx := context.Background()
	cfg, err := esdb.ParseConnectionString(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = esdb.NoopLogging()
	raw, err := esdb.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	before := time.Now().Add(-time.Second)
	if _, err := raw.AppendToStream(ctx, "foreign-1", esdb.AppendToStreamOptions{ExpectedRevision: esdb.NoStream{}},
		esdb.EventData{EventID: uuid.New(), EventType: "Plain", ContentType: esdb.ContentTypeJson, Data: []byte(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	srv.AppendSystemEvent("$stats-x", "$statsCollected", `{}`)
	evs, err := s.ReadStream(ctx, "foreign-1", 0, 10)
	if err != nil || len(evs) != 1 {
		t.Fatalf("read = %d events, %v", len(evs), err)
	}
	if at := evs[0].Metadata.RecordedAt; at.Before(before) || at.After(time.Now().Add(time.Second)) {
		t.Fatalf("recordedAt = %v, want the server's created time", at)
	}
	all, err := s.ReadAll(ctx, eventstore.Start, 100)
	if err != nil || len(all) != 1 || all[0].StreamID != "foreign-1" {
		t.Fatalf("feed = %+v, %v; want only foreign-1", all, err)
	}
	if h, err := s.Head(ctx); err != nil || h != all[0].Position {
		t.Fatalf("head = %+v, %v; want %+v (system events come later)", h, err, all[0].Position)
	}

	if _, err := raw.AppendToStream(ctx, "foreign-2", esdb.AppendToStreamOptions{ExpectedRevision: esdb.NoStream{}},
		esdb.EventData{EventID: uuid.New(), EventType: "Binary", ContentType: esdb.ContentTypeBinary, Data: []byte{1}, Metadata: []byte{0xff, 0x00}}); err != nil {
		t.Fatal(err)
	}
	// Metadata Baton cannot decode: the event is delivered, marked, with
	// empty metadata, on every read; the feed goes on past it.
	unreadable := func(what string, evs []eventstore.RecordedEvent, err error) {
		t.Helper()
		if err != nil || len(evs) == 0 {
			t.Fatalf("%s: %d events, %v", what, len(evs), err)
		}
		ev := evs[len(evs)-1]
		if ev.StreamID != "foreign-2" || ev.Unreadable == "" || !strings.Contains(ev.Unreadable, "metadata") || ev.Metadata != (eventstore.Metadata{}) || string(ev.Data) != "\x01" {
			t.Fatalf("%s: %+v", what, ev)
		}
	}
	evs, err = s.ReadStream(ctx, "foreign-2", 0, 10)
	unreadable("stream read", evs, err)
	all, err = s.ReadAll(ctx, eventstore.Start, 100)
	unreadable("feed", all, err)
	sub, err := s.SubscribeAll(ctx, all[0].Position)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ev, err := sub.Recv()
	unreadable("subscription", []eventstore.RecordedEvent{ev}, err)
	if _, err := raw.AppendToStream(ctx, "foreign-3", esdb.AppendToStreamOptions{ExpectedRevision: esdb.NoStream{}},
		esdb.EventData{EventID: uuid.New(), EventType: "Plain", ContentType: esdb.ContentTypeJson, Data: []byte(`{"a":2}`)}); err != nil {
		t.Fatal(err)
	}
	if ev, err := sub.Recv(); err != nil || ev.StreamID != "foreign-3" || ev.Unreadable != "" {
		t.Fatalf("after the unreadable event: %+v, %v", ev, err)
	}
}

// TestCloseEndsSubscriptions: closing the store ends a waiting Recv and
// refuses new calls.
func TestCloseEndsSubscriptions(t *testing.T) {
	srv := startDouble(t, kurrenttest.Options{})
	s, err := kurrent.Open(context.Background(), kurrent.Config{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := s.SubscribeAll(context.Background(), eventstore.Start)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { _, err := sub.Recv(); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, eventstore.ErrClosed) {
			t.Fatalf("recv after store close = %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("recv still waiting after the store closed")
	}
	if _, err := s.SubscribeAll(context.Background(), eventstore.Start); !errors.Is(err, eventstore.ErrClosed) {
		t.Fatalf("subscribe after close = %v", err)
	}
	if _, err := s.ReadAll(context.Background(), eventstore.Start, 1); !errors.Is(err, eventstore.ErrClosed) {
		t.Fatalf("read after close = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close = %v", err)
	}
}

// TestNotLeader: a node that is not (or no longer) the leader refuses calls
// that need the leader and names the leader; the client reconnects there and
// the store sends the call again, so appends, reads and subscriptions go on.
func TestNotLeader(t *testing.T) {
	if inChild(t) {
		return // the client's reconnection leaves its old connection behind
	}
	srv := startDouble(t, kurrenttest.Options{})
	s := openStore(t, kurrent.Config{URL: srv.URL(), Log: testLog(t), ResubscribeMin: 10 * time.Millisecond})
	ctx := context.Background()

	a := ev("A")
	srv.AnswerNotLeader(1)
	if _, err := s.Append(ctx, "leader-1", eventstore.NoStream(), a); err != nil {
		t.Fatalf("append refused once by a follower: %v", err)
	}
	calls := srv.Appends()
	if len(calls) != 2 || calls[0].Outcome != "not_leader" || calls[1].Outcome != "written" || calls[1].EventIDs[0] != a.ID {
		t.Fatalf("appends seen: %+v", calls)
	}
	srv.AnswerNotLeader(2)
	evs, err := s.ReadStream(ctx, "leader-1", 0, 10)
	if err != nil || len(evs) != 1 || evs[0].ID != a.ID {
		t.Fatalf("read refused twice by a follower = %+v, %v", evs, err)
	}
	srv.AnswerNotLeader(1)
	if h, err := s.Head(ctx); err != nil || h != evs[0].Position {
		t.Fatalf("head = %+v, %v", h, err)
	}
	srv.AnswerNotLeader(1)
	sub, err := s.SubscribeAll(ctx, eventstore.Start)
	if err != nil {
		t.Fatalf("subscribe refused once by a follower: %v", err)
	}
	got := recvN(t, sub, 1)
	// Closed before the refusals below: a subscription resubscribing (the
	// client's reconnection drops it) would take some of them, and the
	// append would then get fewer than the store retries.
	sub.Close()
	if got[0].ID != a.ID {
		t.Fatalf("subscription got %s", got[0].ID)
	}
	// More refusals in a row than the store retries: the caller hears it,
	// and nothing was written.
	srv.AnswerNotLeader(10)
	if _, err := s.Append(ctx, "leader-1", eventstore.Revision(0), ev("B")); err == nil {
		t.Fatal("an append refused by followers throughout succeeded")
	}
	srv.AnswerNotLeader(0)
	if evs, err := s.ReadStream(ctx, "leader-1", 0, 10); err != nil || len(evs) != 1 {
		t.Fatalf("after the refused append the stream holds %d events (%v)", len(evs), err)
	}
}

// TestFollowerPreference: with nodePreference=follower the calls do not
// require the leader, so a follower serves them (the double then refuses
// nothing).
func TestFollowerPreference(t *testing.T) {
	srv := startDouble(t, kurrenttest.Options{})
	s := openStore(t, kurrent.Config{URL: srv.URL() + "&nodePreference=follower"})
	srv.AnswerNotLeader(1)
	if _, err := s.Append(context.Background(), "follower-1", eventstore.NoStream(), ev("A")); err != nil {
		t.Fatal(err)
	}
	if calls := srv.Appends(); len(calls) != 1 || calls[0].Outcome != "written" {
		t.Fatalf("appends seen: %+v", calls)
	}
}

// TestSubscriptionsOutliveAClientThatGaveUp: calls queued inside the
// client while its discovery fails are never answered once it gives up
// (esdb v4.2.0 leaves their sends on its channel blocked). Subscriptions
// resubscribing then hung for good: after the server came back, the read
// models, the gateway's state and the log never moved again, and Close,
// which waits for them, never returned (a SIGTERM did not stop the
// process). They now go on with the store's new client, and Close ends.
func TestSubscriptionsOutliveAClientThatGaveUp(t *testing.T) {
	if inChild(t) {
		return
	}
	srv := startDouble(t, kurrenttest.Options{})
	s, err := kurrent.Open(context.Background(), kurrent.Config{URL: srv.URL() + "&maxDiscoverAttempts=3&discoveryInterval=200", Log: testLog(t),
		ResubscribeMin: 10 * time.Millisecond, ResubscribeMax: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var subs []eventstore.Subscription
	for range 6 {
		sub, err := s.SubscribeAll(ctx, eventstore.Start)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		subs = append(subs, sub)
	}
	srv.Stop()
	// Calls from elsewhere while the server is away, as the API's and the
	// health checks' are: they see the client give up and renew it.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				s.Head(hctx)
				cancel()
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	time.Sleep(4 * time.Second)
	close(stop)
	wg.Wait()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	after := ev("AfterTheOutage")
	waitFor(t, "an append once the server is back", func() bool {
		_, err := s.Append(ctx, "outage-1", eventstore.NoStream(), after)
		return err == nil || errors.Is(err, eventstore.ErrConflict)
	})
	for i, sub := range subs {
		got := make(chan error, 1)
		go func() {
			for {
				e, err := sub.Recv()
				if err != nil || e.ID == after.ID {
					got <- err
					return
				}
			}
		}()
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("subscription %d: %v", i, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("subscription %d never delivered the event appended after the outage", i)
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
}

// A connection string mistyped around its scheme still has its password
// hidden: without "://" it was shown whole, in the error that named it
// ("kurrent: connection string u:secret@h:2113: an invalid scheme ...").
func TestRedactHidesThePasswordOfAMalformedString(t *testing.T) {
	for _, s := range []string{
		"u:secret@h:2113",
		"esdb:/u:secret@h:2113",
		"esdb//u:secret@h:2113",
		"esdb:u:secret@h:2113?tls=false",
		"esdb://u:secret@h1:2113,h2:2113?tls=false",
		"esdb://u:sec@ret@h:2113",
	} {
		if got := kurrent.Redact(s); strings.Contains(got, "secret") || strings.Contains(got, "ret@") {
			t.Errorf("Redact(%q) = %q", s, got)
		}
		_, err := kurrent.Open(context.Background(), kurrent.Config{URL: s + "&maxDiscoverAttempts=1"})
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q): the error shows the password: %v", s, err)
		}
	}
}
