package http_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/http/metrics"
)

// scrape reads /metrics with key and parses the text format: metric
// families by name.
func (e *env) scrape(key string) map[string]*dto.MetricFamily {
	e.t.Helper()
	r := e.must(e.do("GET", "/metrics", key, nil), 200)
	if mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type")); mt != "text/plain" {
		e.t.Fatalf("Content-Type %q", r.header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(r.raw))
	if err != nil {
		e.t.Fatalf("the scrape does not parse: %v\n%s", err, r.raw)
	}
	return fams
}

// value is the value of the series of family name whose labels include
// labels (name, value pairs): a counter's or gauge's value, a histogram's
// count. -1 when there is no such series.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// /metrics takes an admin key: no key is a 401 as on every route, a
// tenant key the 403 of the other admin routes.
func TestMetricsNeedAnAdminKey(t *testing.T) {
	e := newEnv(t)
	r := e.must(e.do("GET", "/metrics", "", nil), 401)
	if r.str("code") != "missing_api_key" || r.header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no key: %s %v", r.raw, r.header)
	}
	if r := e.must(e.do("GET", "/metrics", e.tenantA, nil), 403); r.str("code") != "admin_key_required" {
		t.Fatalf("tenant key: %s", r.raw)
	}
	if fams := e.scrape(e.admin); fams["baton_http_requests_total"] == nil || fams["go_goroutines"] == nil {
		t.Fatalf("the admin's scrape lacks the request counter or Go's metrics: %d families", len(fams))
	}
}

// A scraper that asks for OpenMetrics (Prometheus's Accept) gets it, and
// ends with its "# EOF"; one that does not, the text format.
func TestMetricsOpenMetricsWhenAsked(t *testing.T) {
	e := newEnv(t)
	r := e.must(e.do("GET", "/metrics", e.admin, nil, "Accept", "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"), 200)
	if mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type")); mt != "application/openmetrics-text" || !bytes.HasSuffix(r.raw, []byte("# EOF\n")) {
		t.Fatalf("Content-Type %q, ends %q", r.header.Get("Content-Type"), r.raw[max(0, len(r.raw)-20):])
	}
	e.scrape(e.admin)
}

// With MetricsPublic (baton serve --metrics-public) a scraper needs no key.
func TestMetricsPublic(t *testing.T) {
	envMetricsPublic = true
	t.Cleanup(func() { envMetricsPublic = false })
	e := newEnv(t)
	if fams := e.scrape(""); fams["baton_handoffs"] == nil {
		t.Fatal("the public scrape lacks baton_handoffs")
	}
	e.scrape(e.tenantA) // a key changes nothing
}

// Requests are counted by route template and status, never by raw path;
// the model fronts' POSTs (served before the router) by their path.
func TestMetricsCountRequestsByRoute(t *testing.T) {
	e := newEnvWith(t, catalogWith(t, nil))
	id := e.contract(e.tenantA, nil)
	const tpl = "/v1/handoff/contracts/{handoffId}"
	before := e.scrape(e.admin)
	for range 2 {
		e.must(e.do("GET", "/v1/handoff/contracts/"+id, e.tenantA, nil), 200)
	}
	e.must(e.do("GET", "/v1/handoff/contracts/01a204b7-8b62-7bab-bcd2-379a918f5f57", e.tenantA, nil), 404)
	e.must(e.do("GET", "/v1/nowhere/"+id, e.tenantA, nil), 404)
	chat := map[string]any{"model": "local:echo", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, chat), 200)
	after := e.scrape(e.admin)

	moved := func(name string, want float64, labels ...string) {
		t.Helper()
		b := max(value(before, name, labels...), 0)
		if got := value(after, name, labels...) - b; got != want {
			t.Errorf("%s%v moved by %v, want %v", name, labels, got, want)
		}
	}
	moved("baton_http_requests_total", 2, "route", tpl, "method", "GET", "code", "200")
	moved("baton_http_requests_total", 1, "route", tpl, "method", "GET", "code", "404")
	moved("baton_http_request_duration_seconds", 3, "route", tpl, "method", "GET")
	moved("baton_http_requests_total", 1, "route", "unmatched", "method", "GET", "code", "404")
	moved("baton_http_requests_total", 1, "route", "/v1/chat/completions", "method", "POST", "code", "200")
	moved("baton_http_request_duration_seconds", 1, "route", "/v1/chat/completions", "method", "POST")
	// The first scrape itself, counted under its own route.
	moved("baton_http_requests_total", 1, "route", "/metrics", "method", "GET", "code", "200")
	for _, m := range after["baton_http_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "route" && bytes.Contains([]byte(l.GetValue()), []byte(id)) {
				t.Fatalf("a route label holds the handoff id: %s", l.GetValue())
			}
		}
	}
}

// The handoffs by state, the pending approvals and the read models' lag
// come from the read models at scrape time.
func TestMetricsHandoffsByState(t *testing.T) {
	e := newEnv(t)
	ids := []string{e.contract(e.tenantA, nil), e.contract(e.tenantA, nil), e.contract(e.tenantB, nil)}
	e.must(e.post(ids[0], "approval", e.tenantA, approveBody()), 200)
	if err := e.proj.WaitForHead(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	fams := e.scrape(e.admin)
	for state, want := range map[string]float64{"contract_created": 2, "approval_decided": 1, "executor_started": 0, "ledger_closed": 0} {
		if got := value(fams, "baton_handoffs", "state", state); got != want {
			t.Errorf("baton_handoffs{state=%q} = %v, want %v", state, got, want)
		}
	}
	if got := value(fams, "baton_approvals_pending"); got != 2 {
		t.Errorf("baton_approvals_pending = %v, want 2", got)
	}
	if age := value(fams, "baton_approvals_pending_oldest_age_seconds"); age < 0 || age > 60 {
		t.Errorf("baton_approvals_pending_oldest_age_seconds = %v", age)
	}
	if got := value(fams, "baton_handoffs_quarantined"); got != 0 {
		t.Errorf("baton_handoffs_quarantined = %v", got)
	}
	// Caught up (the scrape's own request appends nothing).
	if got := value(fams, "baton_read_model_lag", "read_model", "projections"); got != 0 {
		t.Errorf("baton_read_model_lag{read_model=projections} = %v, want 0", got)
	}
}

// The counters other parts of Baton call appear in the scrape.
func TestMetricsTimersAndWebhooks(t *testing.T) {
	e := newEnv(t)
	before := e.scrape(e.admin)
	metrics.TimerFired("approval_timeout")
	metrics.TimerFired("approval_timeout")
	metrics.WebhookAttempt("delivered")
	after := e.scrape(e.admin)
	for _, c := range []struct {
		name, label, value string
		want               float64
	}{
		{"baton_timers_fired_total", "kind", "approval_timeout", 2},
		{"baton_webhook_attempts_total", "outcome", "delivered", 1},
	} {
		if got := value(after, c.name, c.label, c.value) - max(value(before, c.name, c.label, c.value), 0); got != c.want {
			t.Errorf("%s{%s=%q} moved by %v, want %v", c.name, c.label, c.value, got, c.want)
		}
	}
}

// failedStore is a store that has failed: it refuses writes until reopened.
type failedStore struct{ eventstore.Store }

func (failedStore) Failed() error { return errors.New("write events.journal: no space left on device") }

// A store that takes no more writes makes /healthz a 503 naming why, so
// that whatever watches it drains or restarts the process.
func TestHealthSaysTheStoreFailed(t *testing.T) {
	e := newEnvStore(t, nil, func(s eventstore.Store) eventstore.Store { return failedStore{s} })
	r := e.do("GET", "/healthz", "", nil)
	if r.status != 503 || r.str("code") != "store_failed" || !strings.Contains(r.str("detail"), "no space left on device") {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}

// fullStore is a store whose disk is full: appends are refused with
// nothing written until space is freed.
type fullStore struct{ eventstore.Store }

func (fullStore) Full() error { return errors.New("write events.db: no space left on device") }

func (fullStore) Append(context.Context, string, eventstore.ExpectedRevision, ...eventstore.EventData) (eventstore.AppendResult, error) {
	return eventstore.AppendResult{}, fmt.Errorf("%w: write events.journal: no space left on device", eventstore.ErrFull)
}

// A full disk is told apart from a failed store: /healthz names it, and a
// write hears that nothing was recorded and when to try again, since the
// store takes writes again once space is freed, without a restart.
func TestHealthAndWritesSayTheDiskIsFull(t *testing.T) {
	e := newEnvStore(t, nil, func(s eventstore.Store) eventstore.Store { return fullStore{s} })
	r := e.do("GET", "/healthz", "", nil)
	if r.status != 503 || r.str("code") != "store_full" || !strings.Contains(r.str("detail"), "no space left on device") {
		t.Fatalf("healthz: %d %s", r.status, r.raw)
	}
	r = e.do("POST", "/v1/handoff/contracts", e.tenantA, map[string]any{"objective": "x", "targetExecutor": "ops-bot", "executorProtocol": "ops_bot.v1", "riskLevel": "low"})
	if r.status != 503 || r.str("code") != "store_unavailable" || !strings.Contains(r.str("detail"), "nothing was recorded") || r.header.Get("Retry-After") == "" {
		t.Fatalf("a write with the disk full: %d %v %s", r.status, r.header, r.raw)
	}
}

// unavailableStore is a store whose appends have an unknown outcome, as
// KurrentDB's do while it is away.
type unavailableStore struct{ eventstore.Store }

func (unavailableStore) Append(context.Context, string, eventstore.ExpectedRevision, ...eventstore.EventData) (eventstore.AppendResult, error) {
	return eventstore.AppendResult{}, fmt.Errorf("kurrent: append: %w: connection refused", eventstore.ErrUnavailable)
}

// The 503 of a write whose outcome is unknown tells how to retry it
// safely: it said a retry with "the same body" was answered from the
// ledger, which holds for callbacks only; a contract created again
// without a key is a second contract (docs/operations.md).
func TestUnknownOutcomeSaysHowToRetry(t *testing.T) {
	e := newEnvStore(t, nil, func(s eventstore.Store) eventstore.Store { return unavailableStore{s} })
	r := e.do("POST", "/v1/handoff/contracts", e.tenantA, map[string]any{"objective": "x", "targetExecutor": "ops-bot", "executorProtocol": "ops_bot.v1", "riskLevel": "low"})
	if r.status != 503 || r.str("code") != "store_unavailable" || strings.Contains(r.str("detail"), "(or the same body)") || !strings.Contains(r.str("detail"), "created again") {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}
