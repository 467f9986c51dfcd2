package kurrenttest_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/batonhq/baton/eventstore/kurrent/kurrenttest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// client is the official client on a fresh double.
func client(t *testing.T, opts kurrenttest.Options) (*kurrenttest.Server, *esdb.Client) {
	t.Helper()
	srv, err := kurrenttest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	cfg, err := esdb.ParseConnectionString(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = esdb.NoopLogging()
	c, err := esdb.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return srv, c
}

func event(id uuid.UUID, typ string) esdb.EventData {
	return esdb.EventData{EventID: id, EventType: typ, ContentType: esdb.ContentTypeJson, Data: []byte(`{}`)}
}

// TestCommitCheck walks the server's expected-revision and idempotency
// rules through the official client.
func TestCommitCheck(t *testing.T) {
	srv, c := client(t, kurrenttest.Options{})
	ctx := context.Background()
	a, b, x := uuid.New(), uuid.New(), uuid.New()
	type step struct {
		name   string
		stream string
		exp    esdb.ExpectedRevision
		ids    []uuid.UUID
		rev    uint64 // on success
		wrong  string // the "but got" part of a wrong expected version, or ""
		result string // outcome the double recorded
	}
	steps := []step{
		{"no stream writes", "s", esdb.NoStream{}, []uuid.UUID{a, b}, 1, "", "written"},
		{"same append again", "s", esdb.NoStream{}, []uuid.UUID{a, b}, 1, "", "idempotent"},
		{"prefix again", "s", esdb.NoStream{}, []uuid.UUID{a}, 0, "", "idempotent"},
		{"suffix at its revision", "s", esdb.StreamRevision{Value: 0}, []uuid.UUID{b}, 1, "", "idempotent"},
		{"written then new: corrupted idempotency", "s", esdb.StreamRevision{Value: 0}, []uuid.UUID{b, x}, 0, "1", "wrong_expected_version"},
		{"new event behind the end", "s", esdb.StreamRevision{Value: 0}, []uuid.UUID{x}, 0, "1", "wrong_expected_version"},
		{"ahead of the end", "s", esdb.StreamRevision{Value: 5}, []uuid.UUID{x}, 0, "1", "wrong_expected_version"},
		{"no stream on an existing stream", "s", esdb.NoStream{}, []uuid.UUID{x}, 0, "1", "wrong_expected_version"},
		{"any, all known", "s", esdb.Any{}, []uuid.UUID{a, b}, 1, "", "idempotent"},
		{"any, known then new", "s", esdb.Any{}, []uuid.UUID{a, x}, 0, "1", "wrong_expected_version"},
		{"stream exists, known", "s", esdb.StreamExists{}, []uuid.UUID{b}, 1, "", "idempotent"},
		{"any, new", "s", esdb.Any{}, []uuid.UUID{x}, 2, "", "written"},
		{"exact end", "s", esdb.StreamRevision{Value: 2}, []uuid.UUID{uuid.New()}, 3, "", "written"},
		{"stream exists on a missing stream", "m", esdb.StreamExists{}, []uuid.UUID{uuid.New()}, 0, "no_stream", "wrong_expected_version"},
		{"revision on a missing stream", "m", esdb.StreamRevision{Value: 0}, []uuid.UUID{uuid.New()}, 0, "no_stream", "wrong_expected_version"},
		{"metadata only", "$$m", esdb.Any{}, []uuid.UUID{uuid.New()}, 0, "", "written"},
		{"stream exists with metadata only", "m", esdb.StreamExists{}, []uuid.UUID{uuid.New()}, 0, "", "written"},
		{"an id of another stream is new here", "t", esdb.NoStream{}, []uuid.UUID{a}, 0, "", "written"},
	}
	var first *esdb.WriteResult
	for i, st := range steps {
		evs := make([]esdb.EventData, len(st.ids))
		for j, id := range st.ids {
			evs[j] = event(id, "E")
		}
		res, err := c.AppendToStream(ctx, st.stream, esdb.AppendToStreamOptions{ExpectedRevision: st.exp}, evs...)
		if st.wrong != "" {
			var esErr *esdb.Error
			if !errors.As(err, &esErr) || esErr.Code() != esdb.ErrorCodeWrongExpectedVersion || !strings.HasSuffix(err.Error(), "but got '"+st.wrong+"'") {
				t.Fatalf("%s: err = %v, want wrong expected version, current %s", st.name, err, st.wrong)
			}
		} else {
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if res.NextExpectedVersion != st.rev {
				t.Fatalf("%s: revision %d, want %d", st.name, res.NextExpectedVersion, st.rev)
			}
			if i == 0 {
				first = res
			}
			if i == 1 && *res != *first {
				t.Fatalf("retry answered %+v, the original %+v", res, first)
			}
		}
		calls := srv.Appends()
		if got := calls[len(calls)-1].Outcome; got != st.result {
			t.Fatalf("%s: outcome %q, want %q", st.name, got, st.result)
		}
	}
	rs, err := c.ReadStream(ctx, "s", esdb.ReadStreamOptions{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	n := 0
	for ; ; n++ {
		if _, err := rs.Recv(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if n != 4 {
		t.Fatalf("stream s holds %d events, want 4", n)
	}
}

func TestRefusals(t *testing.T) {
	_, c := client(t, kurrenttest.Options{MaxAppendSize: 100})
	ctx := context.Background()
	big := event(uuid.New(), "E")
	big.Data = []byte(`"` + strings.Repeat("x", 100) + `"`)
	_, err := c.AppendToStream(ctx, "r", esdb.AppendToStreamOptions{ExpectedRevision: esdb.NoStream{}}, big)
	if err == nil || !strings.Contains(err.Error(), "Maximum Append Size of 100 Exceeded") {
		t.Fatalf("oversized append: err = %v", err)
	}
	rs, err := c.ReadStream(ctx, "r", esdb.ReadStreamOptions{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var esErr *esdb.Error
	if _, err := rs.Recv(); !errors.As(err, &esErr) || esErr.Code() != esdb.ErrorCodeResourceNotFound {
		t.Fatalf("read of a stream never written: %v, want not found", err)
	}
}

func readAll(t *testing.T, c *esdb.Client, opts esdb.ReadAllOptions, n uint64) []*esdb.RecordedEvent {
	t.Helper()
	rs, err := c.ReadAll(context.Background(), opts, n)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []*esdb.RecordedEvent
	for {
		ev, err := rs.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev.OriginalEvent())
	}
}

// TestAllPositions: positions grow with every event, never start at 0,
// forward reads include their starting position, backward reads and
// subscriptions exclude it.
func TestAllPositions(t *testing.T) {
	srv, c := client(t, kurrenttest.Options{})
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if _, err := c.AppendToStream(ctx, "p", esdb.AppendToStreamOptions{ExpectedRevision: esdb.Any{}}, event(uuid.New(), "E"), event(uuid.New(), "F")); err != nil {
			t.Fatal(err)
		}
	}
	srv.AppendSystemEvent("$stats", "$statsCollected", `{}`)
	all := readAll(t, c, esdb.ReadAllOptions{From: esdb.Start{}}, 1000)
	if len(all) != 3+10+1 || !strings.HasPrefix(all[0].EventType, "$") {
		t.Fatalf("$all holds %d events, want the 3 of a fresh node, 10 and a system event", len(all))
	}
	for i, ev := range all {
		if ev.Position.Commit == 0 || ev.Position.Commit != ev.Position.Prepare {
			t.Fatalf("event %d at %+v", i, ev.Position)
		}
		if i > 0 && ev.Position.Commit <= all[i-1].Position.Commit {
			t.Fatalf("positions do not grow at %d", i)
		}
	}
	mid := all[6]
	fwd := readAll(t, c, esdb.ReadAllOptions{From: mid.Position}, 2)
	if fwd[0].EventID != mid.EventID {
		t.Fatal("a forward read does not include its starting position")
	}
	back := readAll(t, c, esdb.ReadAllOptions{From: mid.Position, Direction: esdb.Backwards}, 1)
	if back[0].EventID != all[5].EventID {
		t.Fatal("a backward read does not start before its position")
	}
	end := readAll(t, c, esdb.ReadAllOptions{From: esdb.End{}, Direction: esdb.Backwards}, 1)
	if end[0].EventID != all[len(all)-1].EventID {
		t.Fatal("a backward read from the end does not start at the last event")
	}
	sub, err := c.SubscribeToAll(ctx, esdb.SubscribeToAllOptions{From: mid.Position})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if e := sub.Recv(); e.EventAppeared == nil || e.EventAppeared.OriginalEvent().EventID != all[7].EventID {
		t.Fatalf("a subscription from a position does not start after it: %+v", e)
	}
}

// TestFilteredSubscription: the system-event filter leaves system events
// out and sends checkpoints while only they are written, and the
// subscription ends when the double drops it.
func TestFilteredSubscription(t *testing.T) {
	srv, c := client(t, kurrenttest.Options{})
	ctx := context.Background()
	sub, err := c.SubscribeToAll(ctx, esdb.SubscribeToAllOptions{
		From: esdb.Start{}, Filter: esdb.ExcludeSystemEventsFilter(), MaxSearchWindow: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	events := make(chan *esdb.SubscriptionEvent, 100)
	go func() {
		defer close(events)
		for {
			e := sub.Recv()
			events <- e
			if e.SubscriptionDropped != nil {
				return
			}
		}
	}()
	next := func() *esdb.SubscriptionEvent {
		select {
		case e := <-events:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("nothing from the subscription")
		}
		return nil
	}
	// The fresh node's system events: a checkpoint, then caught up.
	var checkpoints int
	for e := next(); e.CaughtUp == nil; e = next() {
		if e.EventAppeared != nil {
			t.Fatalf("system event %s delivered", e.EventAppeared.OriginalEvent().EventType)
		}
		if e.CheckPointReached != nil {
			checkpoints++
		}
	}
	if checkpoints == 0 {
		t.Fatal("no checkpoint during catch-up over system events")
	}
	for i := 0; i < 4; i++ {
		srv.AppendSystemEvent("$stats", "$statsCollected", `{}`)
	}
	if e := next(); e.CheckPointReached == nil {
		t.Fatalf("got %+v, want a checkpoint while only system events are written", e)
	}
	id := uuid.New()
	if _, err := c.AppendToStream(ctx, "f", esdb.AppendToStreamOptions{ExpectedRevision: esdb.NoStream{}}, event(id, "Mine")); err != nil {
		t.Fatal(err)
	}
	for e := next(); ; e = next() {
		if e.EventAppeared != nil {
			if got := e.EventAppeared.OriginalEvent().EventID; got != id {
				t.Fatalf("got %s, want %s", got, id)
			}
			break
		}
		if e.SubscriptionDropped != nil {
			t.Fatalf("dropped: %v", e.SubscriptionDropped.Error)
		}
	}
	if n := srv.DropSubscriptions(); n != 1 {
		t.Fatalf("dropped %d subscriptions", n)
	}
	for e := next(); ; e = next() {
		if e.SubscriptionDropped != nil {
			break
		}
	}
}
