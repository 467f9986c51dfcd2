package kurrent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/kurrent"
	"github.com/batonhq/baton/eventstore/kurrent/kurrenttest"
)

// Reads against a server that went away are ErrUnavailable, as appends
// are: the API answers 503 with Retry-After, not 500.
func TestReadsUnavailable(t *testing.T) {
	if inChild(t) {
		return
	}
	srv := startDouble(t, kurrenttest.Options{})
	s := openStore(t, kurrent.Config{URL: srv.URL()})
	if _, err := s.Append(context.Background(), "r-1", eventstore.NoStream(), ev("A")); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, aerr := s.Append(ctx, "r-1", eventstore.Revision(0), ev("B"))
	t.Logf("append: %v (ErrUnavailable=%v)", aerr, errors.Is(aerr, eventstore.ErrUnavailable))
	_, rerr := s.ReadStream(ctx, "r-1", 0, 10)
	t.Logf("read stream: %v (ErrUnavailable=%v)", rerr, errors.Is(rerr, eventstore.ErrUnavailable))
	_, herr := s.Head(ctx)
	t.Logf("head: %v (ErrUnavailable=%v)", herr, errors.Is(herr, eventstore.ErrUnavailable))
	_, allerr := s.ReadAll(ctx, eventstore.Start, 10)
	t.Logf("read all: %v (ErrUnavailable=%v)", allerr, errors.Is(allerr, eventstore.ErrUnavailable))
	for _, e := range []error{rerr, herr, allerr} {
		if e == nil || !errors.Is(e, eventstore.ErrUnavailable) {
			t.Errorf("read error not ErrUnavailable: %v", e)
		}
	}
}
