// Package metrics is Baton's Prometheus registry: the HTTP front's requests
// and latencies, the store's append latency, the read models' lag and the
// handoffs they hold, and counters other parts of Baton call (TimerFired,
// WebhookAttempt). docs/operations.md, Metrics, lists every metric.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/projections"
)

// Process-wide counters: the parts that count them (timers, webhooks) run
// beside the HTTP front and need no handle on it. Every Metrics serves them.
var (
	timersFired = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "baton_timers_fired_total", Help: "Timers fired, by kind.",
	}, []string{"kind"})
	webhookAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "baton_webhook_attempts_total", Help: "Webhook delivery attempts, by outcome.",
	}, []string{"outcome"})
)

// TimerFired counts one timer of kind firing. kind must come from a fixed
// set (each value is a series of its own): never an id.
func TimerFired(kind string) { timersFired.WithLabelValues(kind).Inc() }

// WebhookAttempt counts one webhook delivery attempt ending in outcome,
// which must come from a fixed set (such as delivered, failed, timeout):
// never a URL or a status text.
func WebhookAttempt(outcome string) { webhookAttempts.WithLabelValues(outcome).Inc() }

// Latency buckets, in seconds. A request's run to 120 s, as a streamed model
// call lasts as long as its stream; appends start below a millisecond (the
// embedded store's group commit) and end at KurrentDB's seconds.
var (
	requestBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	appendBuckets  = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}
)

// Metrics is one server's registry. Its Go and process collectors are the
// process's, so one process serves one Metrics.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	appends  prometheus.Histogram
	state    *stateCollector

	mu        sync.Mutex
	routes    map[[2]string]*Route
	unmatched map[string]*Route // by method; built by New, read-only after
}

// New builds the registry with every Baton metric and Go's runtime and
// process metrics.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_http_requests_total", Help: "HTTP requests answered, by route template, method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "baton_http_request_duration_seconds", Help: "Time from a request's arrival to its handler's return (a stream's whole length), by route template and method.",
			Buckets: requestBuckets,
		}, []string{"route", "method"}),
		appends: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "baton_store_append_duration_seconds", Help: "Time an append to the event store took, failed ones included.",
			Buckets: appendBuckets,
		}),
		state:  newStateCollector(),
		routes: map[[2]string]*Route{},
	}
	m.unmatched = map[string]*Route{}
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace, "other"} {
		m.unmatched[method] = m.Route("unmatched", method)
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.latency, m.appends, m.state, timersFired, webhookAttempts,
	)
	return m
}

// Handler answers a scrape. A collector that fails (the store not
// answering) is left out and logged with errorLog; the rest is served.
func (m *Metrics) Handler(errorLog func(error)) http.Handler {
	// OpenMetrics to a scraper that asks for it (its Accept), the text
	// format otherwise.
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, ErrorLog: logFunc(errorLog), EnableOpenMetrics: true})
}

type logFunc func(error)

func (f logFunc) Println(v ...any) {
	if f == nil {
		return
	}
	for _, x := range v {
		if err, ok := x.(error); ok {
			f(err)
			return
		}
	}
}

// ObserveAppend records one append's duration; eventstore/timed calls it.
func (m *Metrics) ObserveAppend(d time.Duration) { m.appends.Observe(d.Seconds()) }

// Route is the request metrics of one route and method, taken when the
// route is registered. Its series are resolved at its first request (a
// route never called adds nothing to a scrape), then counting a request is
// a few atomic operations, no label lookup.
type Route struct {
	m             *Metrics
	route, method string

	mu       sync.Mutex
	resolved atomic.Pointer[resolved] // copied on write: read without the lock
}

// resolved is a route's series: its latency and a counter per status seen.
type resolved struct {
	latency prometheus.Observer
	codes   []codeCounter
}

type codeCounter struct {
	code int
	c    prometheus.Counter
}

// Route returns the metrics of requests matched to a route template (never
// a raw path: its ids would make a series each) and method.
func (m *Metrics) Route(template, method string) *Route {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{template, method}
	if r := m.routes[k]; r != nil {
		return r
	}
	r := &Route{m: m, route: template, method: method}
	m.routes[k] = r
	return r
}

// Unmatched is the metrics of requests no route took, under route
// "unmatched"; a method outside the standard ones is counted as "other",
// so a client cannot mint series.
func (m *Metrics) Unmatched(method string) *Route {
	if r := m.unmatched[method]; r != nil {
		return r
	}
	return m.unmatched["other"]
}

// Observe counts one request answered with code after d. A code of 0 (the
// handler wrote nothing) is net/http's implicit 200.
func (r *Route) Observe(code int, d time.Duration) {
	if code == 0 {
		code = http.StatusOK
	}
	if p := r.resolved.Load(); p != nil {
		// The codes a route answers are a handful: a scan beats a map.
		for _, c := range p.codes {
			if c.code == code {
				p.latency.Observe(d.Seconds())
				c.c.Inc()
				return
			}
		}
	}
	p := r.resolve(code)
	p.latency.Observe(d.Seconds())
	for _, c := range p.codes {
		if c.code == code {
			c.c.Inc()
		}
	}
}

// resolve adds code's counter (and at the first request, the latency) to
// the route's series.
func (r *Route) resolve(code int) *resolved {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.resolved.Load()
	if cur == nil {
		cur = &resolved{latency: r.m.latency.WithLabelValues(r.route, r.method)}
	}
	for _, c := range cur.codes {
		if c.code == code {
			return cur // resolved by another request meanwhile
		}
	}
	next := &resolved{latency: cur.latency, codes: append(append(make([]codeCounter, 0, len(cur.codes)+1), cur.codes...),
		codeCounter{code, r.m.requests.WithLabelValues(r.route, r.method, strconv.Itoa(code))})}
	r.resolved.Store(next)
	return next
}

// Store is the store whose head the read models' lag is measured from.
func (m *Metrics) Store(s eventstore.Store) {
	m.state.mu.Lock()
	m.state.store = s
	m.state.mu.Unlock()
}

// ReadModel adds a follower of the store's feed under name; its lag is the
// store's head minus checkpoint at each scrape.
func (m *Metrics) ReadModel(name string, checkpoint func() eventstore.Position) {
	m.state.mu.Lock()
	m.state.readModels[name] = checkpoint
	m.state.mu.Unlock()
}

// Projections adds the ledger's read models: their lag (as read model
// "projections") and, counted at each scrape, the handoffs by state and the
// pending approvals.
func (m *Metrics) Projections(r *projections.Runner) {
	m.ReadModel("projections", r.Checkpoint)
	m.state.mu.Lock()
	m.state.proj = r
	m.state.mu.Unlock()
}

// headTimeout bounds the store's head read at a scrape.
const headTimeout = 2 * time.Second

// stateCollector reads, at scrape time, what is not counted as it happens:
// the read models' lag and the handoffs they hold.
type stateCollector struct {
	lag, handoffs, pending, oldest, quarantined *prometheus.Desc

	mu         sync.Mutex
	store      eventstore.Store
	proj       *projections.Runner
	readModels map[string]func() eventstore.Position
}

func newStateCollector() *stateCollector {
	return &stateCollector{
		lag: prometheus.NewDesc("baton_read_model_lag",
			"How far a read model is behind the store's head: events on the embedded store, transaction-log bytes on KurrentDB.", []string{"read_model"}, nil),
		handoffs:    prometheus.NewDesc("baton_handoffs", "Handoffs in the read models, by state.", []string{"state"}, nil),
		pending:     prometheus.NewDesc("baton_approvals_pending", "Open handoffs waiting for an approval decision.", nil, nil),
		oldest:      prometheus.NewDesc("baton_approvals_pending_oldest_age_seconds", "Age of the oldest handoff waiting for an approval decision (0 when none waits).", nil, nil),
		quarantined: prometheus.NewDesc("baton_handoffs_quarantined", "Handoffs whose stream holds an event the read models cannot apply.", nil, nil),
		readModels:  map[string]func() eventstore.Position{},
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.lag, c.handoffs, c.pending, c.oldest, c.quarantined} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	store, proj := c.store, c.proj
	checkpoints := make(map[string]eventstore.Position, len(c.readModels))
	for name, cp := range c.readModels {
		checkpoints[name] = cp() // before the head: the lag is never read below zero by a race
	}
	c.mu.Unlock()
	if store != nil && len(checkpoints) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), headTimeout)
		head, err := store.Head(ctx)
		cancel()
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.lag, err)
		} else {
			for name, cp := range checkpoints {
				ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, lag(head, cp), name)
			}
		}
	}
	if proj == nil {
		return
	}
	st, err := proj.HandoffStats()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.handoffs, err)
		return
	}
	for state, n := range st.ByState {
		ch <- prometheus.MustNewConstMetric(c.handoffs, prometheus.GaugeValue, float64(n), string(state))
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(st.PendingApprovals))
	age := 0.0
	if !st.OldestPending.IsZero() {
		age = max(0, time.Since(st.OldestPending).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age)
	if _, n, err := proj.Quarantined(0); err == nil {
		ch <- prometheus.MustNewConstMetric(c.quarantined, prometheus.GaugeValue, float64(n))
	}
}

// lag is head minus checkpoint in commit positions: a count of events on
// the embedded store, whose positions are gapless; on KurrentDB a distance
// in the transaction log, zero when caught up.
func lag(head, checkpoint eventstore.Position) float64 {
	if !checkpoint.Less(head) {
		return 0
	}
	return float64(head.Commit - checkpoint.Commit)
}
