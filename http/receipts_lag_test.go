package http_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/translog"
	batonhttp "github.com/batonhq/baton/http"
)

// slowFeed hands a subscriber each event late, as a log that follows the
// feed behind the read models does.
type slowFeed struct{ eventstore.Store }

func (s slowFeed) SubscribeAll(ctx context.Context, after eventstore.Position) (eventstore.Subscription, error) {
	sub, err := s.Store.SubscribeAll(ctx, after)
	return slowSub{sub}, err
}

type slowSub struct{ eventstore.Subscription }

func (s slowSub) Recv() (eventstore.RecordedEvent, error) {
	ev, err := s.Subscription.Recv()
	time.Sleep(300 * time.Millisecond)
	return ev, err
}

func (s slowSub) RecvBatch(max int) ([]eventstore.RecordedEvent, error) {
	evs, err := s.Subscription.RecvBatch(max)
	time.Sleep(300 * time.Millisecond)
	return evs, err
}

// TestReceiptsIncludeWhatWasCommitted: a receipts read lists the events
// the store had committed when it started, as every read does, though the
// log follows the feed apart from the read models and behind them.
func TestReceiptsIncludeWhatWasCommitted(t *testing.T) {
	e := newEnv(t)
	skey, _, err := translog.GenerateKey("baton.example/test", nil)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := translog.Open(filepath.Join(t.TempDir(), translog.FileName), slowFeed{e.store}, translog.Options{SignerKey: skey, Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tl.Run(ctx); close(done) }()
	front := batonhttp.NewServer(batonhttp.Config{Store: e.store, Projections: e.proj, TransparencyLog: tl,
		Log: zerolog.New(testLogWriter(t)).Level(zerolog.ErrorLevel), Version: "test"})
	srv := httptest.NewServer(checkOpenAPI(func() testing.TB { return t }, front.Handler()))
	t.Cleanup(func() {
		srv.Close()
		front.Close()
		cancel()
		<-done
		tl.Close()
	})
	id := e.contract(e.tenantA, nil)
	e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
	// Through the slow log's front, at once.
	slow := *e
	slow.srv = srv
	r := slow.must(slow.do("GET", "/v1/executions/"+id+"/receipts", e.tenantA, nil), 200)
	rs, _ := r.body["receipts"].([]any)
	if len(rs) != 2 {
		t.Fatalf("%d receipts right after the writes, want 2: %s", len(rs), r.raw)
	}
}
