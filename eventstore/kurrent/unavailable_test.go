package kurrent_test

import (
	"context"
	"errors"
	"sync"
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

// Reads made while the server is away and the client gives up, again and
// again, under calls of others that replace it, are ErrUnavailable too: a
// read queued inside a client that another call replaced was answered as
// a failure of its own (500) instead of the outage it is (503).
func TestReadsUnavailableWhileTheClientIsReplaced(t *testing.T) {
	if inChild(t) {
		return
	}
	srv := startDouble(t, kurrenttest.Options{})
	s := openStore(t, kurrent.Config{URL: srv.URL() + "&maxDiscoverAttempts=1&discoveryInterval=1", Log: testLog(t)})
	if _, err := s.Append(context.Background(), "r-1", eventstore.NoStream(), ev("A")); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	var mu sync.Mutex
	var wrong []error
	var wg sync.WaitGroup
	deadline := time.Now().Add(3 * time.Second)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := s.ReadStream(ctx, "r-1", 0, 10)
				cancel()
				if err != nil && !errors.Is(err, eventstore.ErrUnavailable) && !errors.Is(err, eventstore.ErrClosed) && !errors.Is(err, context.DeadlineExceeded) {
					mu.Lock()
					wrong = append(wrong, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(wrong) > 0 {
		t.Fatalf("%d reads failed with an error that is not ErrUnavailable, such as: %v", len(wrong), wrong[0])
	}
}
