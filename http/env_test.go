package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain/contextpack"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/eventstore/translog"
	"github.com/batonhq/baton/gateway"
	batonhttp "github.com/batonhq/baton/http"
	"github.com/batonhq/baton/projections"
)

// env is a whole Baton front on a real store, real read models and real
// HTTP, with an admin key and two tenants' keys.
type env struct {
	t        testing.TB
	srv      *httptest.Server
	store    *bolt.Store
	proj     *projections.Runner
	front    *batonhttp.Server
	dir      string
	admin    string
	tenantA  string
	tenantA2 string // a second key of tenant a
	tenantB  string
	catalog  *gateway.Catalog
	budgets  *gateway.Budgets
	services *ledger.Services // the front's command side when envLedgerOptions set it
	tlog     *translog.Log    // with envLogKey
}

func newEnv(t testing.TB) *env { return newEnvWith(t, nil) }

// envStreamIdle is the front's StreamIdle for the envs a test builds (0:
// the default); tests that set it restore it.
var envStreamIdle time.Duration

// envModelBodies is the front's ModelBodies for the envs a test builds
// (0: the default); tests that set it restore it.
var envModelBodies int64

// envMetricsPublic serves /metrics without a key in the envs a test
// builds; tests that set it restore it.
var envMetricsPublic bool

// envEventsPing and envEventStreams are the front's EventsPing and
// EventStreams for the envs a test builds (0: the defaults); tests that set
// them restore them.
var (
	envEventsPing   time.Duration
	envEventStreams int
)

// envLedgerOptions, when set, builds the front's command side with these
// options (the webhook tests' clock and private addresses); tests that set
// it restore it.
var envLedgerOptions *ledger.Options

// envScanner, when set, is the front's scanner for the envs a test
// builds; tests that set it restore it.
var envScanner batonhttp.SecretScanner

// envLogKey, when set, gives the envs a test builds a transparency log
// signing with this key every 20 ms; tests that set it restore it.
var envLogKey string

// envLogWitnesses are the witnesses' verifier keys the envs' logs take
// cosignatures of (with envLogKey); tests that set them restore them.
var envLogWitnesses []string

// envConsoleURL is the front's ConsoleURL for the envs a test builds;
// tests that set it restore it.
var envConsoleURL string

// envLog, when set, is where the envs a test builds log, at every level
// (the access log included); tests that set it restore it.
var envLog io.Writer

// newEnvWith also serves the model gateway with the given catalog.
func newEnvWith(t testing.TB, catalog *gateway.Catalog) *env {
	t.Helper()
	return newEnvStore(t, catalog, nil)
}

// newEnvStore is newEnvWith with the front's store wrapped (fault
// injection); the read models follow the store itself.
func newEnvStore(t testing.TB, catalog *gateway.Catalog, wrap func(eventstore.Store) eventstore.Store) *env {
	t.Helper()
	dir := t.TempDir()
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	proj, err := projections.Open(filepath.Join(dir, "readmodel.db"), store, projections.NewHandoffs(), projections.Keys{}, projections.WebhookDeliveries{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { proj.Run(ctx); close(done) }()
	scanner, err := newTestScanner()
	if err != nil {
		t.Fatal(err)
	}
	if envScanner != nil {
		scanner = envScanner
	}
	budgets := gateway.NewBudgets(nil)
	followDone := make(chan struct{})
	if catalog != nil {
		f := &gateway.Follower{Store: store, Appliers: []gateway.Applier{catalog, budgets}}
		if err := f.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		go func() { f.Run(ctx); close(followDone) }()
	} else {
		close(followDone)
	}
	var frontStore eventstore.Store = store
	if wrap != nil {
		frontStore = wrap(store)
	}
	log := zerolog.New(testLogWriter(t)).Level(zerolog.ErrorLevel)
	if envLog != nil {
		log = zerolog.New(envLog)
	}
	var tl *translog.Log
	logDone := make(chan struct{}, 2)
	if envLogKey != "" {
		if tl, err = translog.Open(filepath.Join(dir, translog.FileName), store, translog.Options{SignerKey: envLogKey, Interval: 20 * time.Millisecond, Witnesses: envLogWitnesses}); err != nil {
			t.Fatal(err)
		}
		go func() { tl.Run(ctx); logDone <- struct{}{} }()
		go func() { tl.RunSigner(ctx); logDone <- struct{}{} }()
	} else {
		logDone <- struct{}{}
		logDone <- struct{}{}
	}
	var services *ledger.Services
	if envLedgerOptions != nil {
		o := *envLedgerOptions
		o.Redactor, _ = scanner.(contextpack.Redactor)
		services = ledger.New(frontStore, o)
	}
	front := batonhttp.NewServer(batonhttp.Config{Store: frontStore, Ledger: services, Projections: proj, Scanner: scanner, Catalog: catalog, Budgets: budgets, Log: log, Version: "test", MaxBody: 64 << 10, StreamIdle: envStreamIdle,
		EventsPing: envEventsPing, EventStreams: envEventStreams, MetricsPublic: envMetricsPublic, TransparencyLog: tl, ModelBodies: envModelBodies, ConsoleURL: envConsoleURL})
	var e *env
	srv := httptest.NewServer(checkOpenAPI(func() testing.TB { return e.t }, front.Handler()))
	e = &env{t: t, srv: srv, store: store, proj: proj, front: front, dir: dir, catalog: catalog, budgets: budgets, services: services, tlog: tl}
	t.Cleanup(func() {
		srv.Close()
		front.Close()
		cancel()
		<-done
		<-followDone
		<-logDone
		<-logDone
		if tl != nil {
			tl.Close()
		}
		proj.Close()
		store.Close()
	})
	mk := func(tenant string, admin bool) string {
		k, err := ledger.NewKeys(store).Create(context.Background(), "test", "", tenant, admin, "")
		if err != nil {
			t.Fatal(err)
		}
		return k.Key
	}
	e.admin, e.tenantA, e.tenantA2, e.tenantB = mk("ops", true), mk("a", false), mk("a", false), mk("b", false)
	return e
}

// testLogWriter is where the front of a test logs: the test's log, or for
// a fuzz target (whose *testing.F must not log from inside the target)
// standard error.
func testLogWriter(t testing.TB) io.Writer {
	if _, fuzz := t.(*testing.F); fuzz {
		return os.Stderr
	}
	return zerolog.NewTestWriter(t)
}

// response is an answer with its decoded body.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// num is the number at path, or -1 when there is none.
func (r response) num(path string) float64 {
	f, err := strconv.ParseFloat(r.str(path), 64)
	if err != nil {
		return -1
	}
	return f
}

func (r response) str(path string) string {
	var cur any = r.body
	for _, p := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[p]
	}
	switch v := cur.(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

func (e *env) do(method, path, key string, body any, headers ...string) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	json.Unmarshal(raw, &out.body)
	return out
}

func (e *env) must(r response, status int) response {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	return r
}

// contract creates a manual-approval contract requiring a "log" artifact.
func (e *env) contract(key string, extra map[string]any) string {
	e.t.Helper()
	body := map[string]any{
		"objective": "Rotate the staging TLS certificate", "targetExecutor": "ops-bot",
		"executorProtocol": "ops_bot.v1", "riskLevel": "medium", "approvalMode": "manual",
		"proofRequired": []string{"log"},
	}
	for k, v := range extra {
		body[k] = v
	}
	r := e.must(e.do("POST", "/v1/handoff/contracts", key, body), 201)
	return r.str("handoffId")
}

var nonce int

func next() int { nonce++; return nonce }

func approveBody() map[string]any {
	return map[string]any{"status": "APPROVED", "approvedBy": fmt.Sprintf("alice-%d", next())}
}
func rejectBody() map[string]any {
	return map[string]any{"status": "REJECTED", "approvedBy": "alice", "reason": fmt.Sprintf("not this week %d", next())}
}
func proofBody(run string) map[string]any {
	return map[string]any{"executorType": "ops-bot", "executorRunId": run, "status": "RUNNING",
		"proof": map[string]any{"summary": fmt.Sprintf("renewed %d", next()), "artifacts": []any{map[string]any{"type": "log", "text": "certbot renew: ok"}}}}
}
func resultBody(run string) map[string]any {
	return map[string]any{"executorType": "ops-bot", "executorRunId": run, "status": "SUCCEEDED",
		"result": map[string]any{"summary": fmt.Sprintf("done %d", next()), "output": "cert valid until 2027-02-20"}}
}
func reviewBody(verdict string) map[string]any {
	return map[string]any{"verdict": verdict, "reviewer": "verifier-1", "notes": fmt.Sprintf("checked %d", next())}
}

func (e *env) post(id, cb, key string, body any, headers ...string) response {
	e.t.Helper()
	return e.do("POST", "/v1/executions/"+id+"/"+cb, key, body, headers...)
}

// ledger reads the trail.
func (e *env) ledger(id, key string) response {
	e.t.Helper()
	return e.must(e.do("GET", "/v1/executions/"+id+"/ledger", key, nil), 200)
}

func (e *env) events(id string) int {
	e.t.Helper()
	evs, err := e.store.ReadStream(context.Background(), "handoff-"+id, 0, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(evs)
}
