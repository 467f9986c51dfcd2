package timed_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/timed"
)

// Every Append is timed, a refused one too, and the wrapped store's
// answers pass through, Exclusive included.
func TestAppendsAreTimed(t *testing.T) {
	s, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var took []time.Duration
	ts := timed.New(s, func(d time.Duration) { took = append(took, d) })
	ev := eventstore.NewEvent("Thing", json.RawMessage(`{}`), eventstore.Metadata{})
	if _, err := ts.Append(context.Background(), "things-1", eventstore.NoStream(), ev); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Append(context.Background(), "things-1", eventstore.NoStream(), eventstore.NewEvent("Thing", json.RawMessage(`{}`), eventstore.Metadata{})); err == nil {
		t.Fatal("a second append to a new stream was not refused")
	}
	if len(took) != 2 || took[0] <= 0 {
		t.Fatalf("timed %v", took)
	}
	if x, ok := eventstore.Store(ts).(eventstore.Exclusive); !ok || !x.Exclusive() {
		t.Fatal("the embedded store's Exclusive was lost")
	}
	if head, err := ts.Head(context.Background()); err != nil || head.Commit != 1 {
		t.Fatalf("head %v, %v", head, err)
	}
}
