package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/batonhq/baton/eventstore"
)

// A route's metrics are resolved once: the same route gets the same
// handle, and counting a request allocates nothing once its status has
// been seen.
func TestRouteCountsWithoutAllocating(t *testing.T) {
	m := New()
	r := m.Route("/v1/x/{id}", "GET")
	if m.Route("/v1/x/{id}", "GET") != r {
		t.Fatal("a second handle for the same route")
	}
	r.Observe(0, time.Millisecond) // nothing written: net/http's 200
	r.Observe(404, time.Millisecond)
	if n := testing.AllocsPerRun(100, func() { r.Observe(200, time.Millisecond) }); n != 0 {
		t.Fatalf("%v allocations per request", n)
	}
	if got := counted(m.requests.WithLabelValues("/v1/x/{id}", "GET", "200")); got != 102 {
		t.Fatalf("200s counted %v", got)
	}
	if got := counted(m.requests.WithLabelValues("/v1/x/{id}", "GET", "404")); got != 1 {
		t.Fatalf("404s counted %v", got)
	}
	if m.Unmatched("BREW") != m.Unmatched("other") || m.Unmatched("GET") == m.Unmatched("other") {
		t.Fatal("unmatched methods: a client's method must not make a series")
	}
}

// The lag is head minus checkpoint, never below zero.
func TestLag(t *testing.T) {
	for _, c := range []struct {
		head, cp eventstore.Position
		want     float64
	}{
		{eventstore.Position{Commit: 10, Prepare: 10}, eventstore.Position{Commit: 7, Prepare: 7}, 3},
		{eventstore.Position{Commit: 10, Prepare: 10}, eventstore.Position{Commit: 10, Prepare: 10}, 0},
		{eventstore.Position{Commit: 10, Prepare: 10}, eventstore.Position{Commit: 12, Prepare: 12}, 0},
		{eventstore.Position{Commit: 10, Prepare: 10}, eventstore.Start, 10},
	} {
		if got := lag(c.head, c.cp); got != c.want {
			t.Errorf("lag(%v, %v) = %v, want %v", c.head, c.cp, got, c.want)
		}
	}
}

type headStore struct {
	eventstore.Store
	head eventstore.Position
	err  error
}

func (s headStore) Head(context.Context) (eventstore.Position, error) { return s.head, s.err }

// A store that does not answer leaves the lag out; the rest is served.
func TestScrapeWithoutTheStore(t *testing.T) {
	m := New()
	m.Store(headStore{err: eventstore.ErrUnavailable})
	m.ReadModel("r", func() eventstore.Position { return eventstore.Start })
	m.ObserveAppend(3 * time.Millisecond)
	m.Route("/v1/never", "GET")
	var logged []error
	rec := httptest.NewRecorder()
	m.Handler(func(err error) { logged = append(logged, err) }).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if rec.Code != http.StatusOK || strings.Contains(body, "baton_read_model_lag{") || !strings.Contains(body, "baton_store_append_duration_seconds_count 1") {
		t.Fatalf("%d:\n%s", rec.Code, body)
	}
	if len(logged) == 0 {
		t.Fatal("the failed collector was not logged")
	}
	if strings.Contains(body, "/v1/never") || strings.Contains(body, "unmatched") {
		t.Fatal("a route never called is in the scrape")
	}

	m.Store(headStore{head: eventstore.Position{Commit: 5, Prepare: 5}})
	rec = httptest.NewRecorder()
	m.Handler(nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `baton_read_model_lag{read_model="r"} 5`) {
		t.Fatalf("no lag:\n%s", rec.Body.String())
	}
}

func counted(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// Requests of one route counted from many goroutines, each status first
// seen by several of them at once, are all counted, in one series each.
func TestRouteCountsConcurrently(t *testing.T) {
	m := New()
	r := m.Route("/v1/y", "POST")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				r.Observe(200+(g+i)%4, time.Microsecond)
			}
		}()
	}
	wg.Wait()
	for code := 200; code < 204; code++ {
		if got := counted(m.requests.WithLabelValues("/v1/y", "POST", strconv.Itoa(code))); got != 2000 {
			t.Errorf("code %d counted %v, want 2000", code, got)
		}
	}
	if n := len(r.resolved.Load().codes); n != 4 {
		t.Errorf("%d cached counters, want 4", n)
	}
}
