package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/domain/secrets"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/eventstore/translog"
	batonhttp "github.com/batonhq/baton/http"
	"github.com/batonhq/baton/http/webhook"
	"github.com/batonhq/baton/projections"
)

// lifecycleResult is one concurrency level of the end-to-end benchmark.
type lifecycleResult struct {
	Executors int
	// Active: the contracts carry deadlines and a lease (the timer loop
	// runs over them) and a webhook endpoint takes every event.
	Active    bool
	Delivered int // webhook requests the endpoint received during the run
	// Drain is how long after the load stopped the endpoint had every
	// handoff event of the run (0 when not active; -1 when it never did
	// within a minute).
	Drain      time.Duration
	Lifecycles int
	Calls      int
	Callbacks  int
	Elapsed    time.Duration
	P50, P99   map[string]time.Duration
	All50      time.Duration
	All99      time.Duration
}

// lifecycleWithLog runs the lifecycle benchmark's server with the
// transparency log on.
var lifecycleWithLog bool

var lifecycleCalls = []string{"create", "approval", "proof", "review", "result"}

// benchLifecycles serves Baton on loopback over real TCP, on a durable
// store in dir, and runs executors full handoff lifecycles (create, approve,
// proof, review, result) concurrently for about d.
func benchLifecycles(ctx context.Context, dir string, executors int, d time.Duration, active bool) (lifecycleResult, error) {
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		return lifecycleResult{}, err
	}
	defer store.Close()
	return benchLifecyclesOn(ctx, store, dir, executors, d, active)
}

// benchLifecyclesOn is benchLifecycles on any store; the read models go in
// dir.
func benchLifecyclesOn(ctx context.Context, store eventstore.Store, dir string, executors int, d time.Duration, active bool) (lifecycleResult, error) {
	proj, err := projections.Open(filepath.Join(dir, "readmodel.db"), store, projections.NewHandoffs(), projections.Keys{})
	if err != nil {
		return lifecycleResult{}, err
	}
	defer proj.Close()
	rctx, cancel := context.WithCancel(ctx)
	runDone := make(chan struct{})
	go func() { proj.Run(rctx); close(runDone) }()
	defer func() { cancel(); <-runDone }()
	scanner := secrets.NewLazy() // as baton serve's
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return lifecycleResult{}, err
	}
	services := ledger.New(store, ledger.Options{Redactor: scanner, WebhookAllowPrivate: active})
	var tl *translog.Log
	if lifecycleWithLog {
		// The transparency log as baton serve keeps it: following the
		// feed, signing at the default interval, its routes served.
		skey, _, err := translog.GenerateKey("bench.baton/log", nil)
		if err != nil {
			return lifecycleResult{}, err
		}
		if tl, err = translog.Open(filepath.Join(dir, translog.FileName), store, translog.Options{SignerKey: skey}); err != nil {
			return lifecycleResult{}, err
		}
		defer tl.Close()
		logDone := make(chan struct{}, 2)
		go func() { tl.Run(rctx); logDone <- struct{}{} }()
		go func() { tl.RunSigner(rctx); logDone <- struct{}{} }()
		defer func() { cancel(); <-logDone; <-logDone }()
	}
	srv := &http.Server{Handler: batonhttp.NewServer(batonhttp.Config{Store: store, Ledger: services, Projections: proj, Scanner: scanner, Log: zerolog.Nop(), TransparencyLog: tl}).Handler()}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	admin, err := ledger.NewKeys(store).Create(ctx, "bench", "", "bench", true, "")
	if err != nil {
		return lifecycleResult{}, err
	}
	var delivered atomic.Int64
	timing := ""
	if active {
		// As baton serve runs them: the timer loop over the read models'
		// timer index, and a webhook dispatcher with one endpoint taking
		// every event (on loopback, hence private addresses allowed).
		loop := &ledger.TimerLoop{Handoffs: services.Handoffs, Due: proj.DueHandoffs, Changed: proj.Changed, Now: time.Now}
		dispatcher := webhook.New(webhook.Config{Store: store, Webhooks: services.Webhooks, AllowPrivate: true, Log: zerolog.Nop()})
		actx, stopActive := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); loop.Run(actx) }()
		go func() { defer wg.Done(); dispatcher.Run(actx) }()
		defer func() { stopActive(); wg.Wait() }()
		hookLn, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return lifecycleResult{}, err
		}
		hook := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			delivered.Add(1)
			w.WriteHeader(http.StatusNoContent)
		})}
		go hook.Serve(hookLn)
		defer hook.Close()
		reg, _ := json.Marshal(map[string]any{"url": "http://" + hookLn.Addr().String() + "/hook", "eventTypes": []string{"*"}})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/webhooks", bytes.NewReader(reg))
		req.Header.Set("x-api-key", admin.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return lifecycleResult{}, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return lifecycleResult{}, fmt.Errorf("registering the webhook endpoint: %s", resp.Status)
		}
		timing = `,"approvalTimeoutSeconds":3600,"heartbeatSeconds":600,"resultTimeoutSeconds":3600`
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}, Timeout: 30 * time.Second}
	call := func(path string, body []byte) ([]byte, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(body))
		req.Header.Set("x-api-key", admin.Key)
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode >= 300 {
			err = fmt.Errorf("POST %s: %s: %s", path, resp.Status, b)
		}
		return b, err
	}

	var (
		mu    sync.Mutex
		lats  = map[string][]time.Duration{}
		n     int
		first error
	)
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for x := 0; x < executors; x++ {
		wg.Add(1)
		go func(x int) {
			defer wg.Done()
			local := map[string][]time.Duration{}
			done := 0
			for i := 0; time.Now().Before(deadline); i++ {
				run := fmt.Sprintf("run-%d-%d", x, i)
				steps := []struct {
					name string
					path func(id string) string
					body string
				}{
					{"create", func(string) string { return "/v1/handoff/contracts" }, `{"objective":"Rotate the staging TLS certificate","targetExecutor":"ops-bot","executorProtocol":"ops_bot.v1","riskLevel":"medium","proofRequired":["log"]` + timing + `}`},
					{"approval", func(id string) string { return "/v1/executions/" + id + "/approval" }, `{"status":"APPROVED","approvedBy":"alice"}`},
					{"proof", func(id string) string { return "/v1/executions/" + id + "/proof" }, `{"executorRunId":"` + run + `","status":"RUNNING","proof":{"summary":"renewed","artifacts":[{"type":"log","text":"certbot renew: success, deployed to 3 hosts"}]}}`},
					{"review", func(id string) string { return "/v1/executions/" + id + "/review" }, `{"verdict":"verified","reviewer":"verifier-1"}`},
					{"result", func(id string) string { return "/v1/executions/" + id + "/result" }, `{"executorRunId":"` + run + `","status":"SUCCEEDED","result":{"summary":"rotated","output":"valid until 2027-02-20"}}`},
				}
				id := ""
				for _, st := range steps {
					t0 := time.Now()
					b, err := call(st.path(id), []byte(st.body))
					if err != nil {
						mu.Lock()
						if first == nil {
							first = err
						}
						mu.Unlock()
						return
					}
					local[st.name] = append(local[st.name], time.Since(t0))
					if id == "" {
						var c struct {
							HandoffID string `json:"handoffId"`
						}
						json.Unmarshal(b, &c)
						id = c.HandoffID
					}
				}
				done++
			}
			mu.Lock()
			for k, v := range local {
				lats[k] = append(lats[k], v...)
			}
			n += done
			mu.Unlock()
		}(x)
	}
	wg.Wait()
	elapsed := time.Since(start)
	if first != nil {
		return lifecycleResult{}, first
	}
	during := int(delivered.Load())
	var drain time.Duration
	if active {
		events := 0
		for evs, err := range eventstore.FeedPages(ctx, store, 1000) {
			if err != nil {
				return lifecycleResult{}, err
			}
			for _, ev := range evs {
				if strings.HasPrefix(ev.StreamID, "handoff-") {
					events++
				}
			}
		}
		stopped := time.Now()
		for int(delivered.Load()) < events {
			if time.Since(stopped) > time.Minute {
				drain = -1
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if drain == 0 {
			drain = time.Since(stopped)
		}
	}
	res := lifecycleResult{Executors: executors, Active: active, Delivered: during, Drain: drain, Lifecycles: n, Elapsed: elapsed, P50: map[string]time.Duration{}, P99: map[string]time.Duration{}}
	var all []time.Duration
	for k, v := range lats {
		slices.Sort(v)
		res.P50[k], res.P99[k] = pct(v, 0.5), pct(v, 0.99)
		res.Calls += len(v)
		if k != "create" {
			res.Callbacks += len(v)
		}
		all = append(all, v...)
	}
	slices.Sort(all)
	res.All50, res.All99 = pct(all, 0.5), pct(all, 0.99)
	return res, nil
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

// longLedgerResult is what a callback costs on a handoff with a long
// ledger against one on a fresh handoff.
type longLedgerResult struct {
	Events             int
	Fresh50, Long50    time.Duration
	Fresh99, Long99    time.Duration
	Setup              time.Duration
	FreshRuns, LongRun int
}

// benchLongLedger times proofs (an executor's progress reports) through
// the ledger service on a durable store: on handoffs of a few events, and
// on one whose ledger already holds events events.
func benchLongLedger(ctx context.Context, dir string, events, calls int) (longLedgerResult, error) {
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		return longLedgerResult{}, err
	}
	defer store.Close()
	s := ledger.NewHandoffs(store, nil)
	call := benchCall
	open := func() (string, error) {
		out, err := s.Create(ctx, call, benchContract(domain.ApprovalModeAuto))
		if err != nil {
			return "", err
		}
		return out.Handoff.ID, nil
	}
	proof := func(id string, n int) (time.Duration, error) {
		t0 := time.Now()
		_, err := s.Handle(ctx, call, id, domain.ProofCommand{ExecutorRunID: "run-1", Status: domain.RunRunning,
			Proof:   &domain.Proof{Summary: fmt.Sprintf("step %d", n), Artifacts: []domain.Artifact{{Type: "log", Text: "certbot renew: success"}}},
			Request: domain.RequestRef{Kind: domain.KindProof, BodySHA256: fmt.Sprintf("proof-%d", n)}})
		return time.Since(t0), err
	}
	var r longLedgerResult
	r.Events = events
	start := time.Now()
	long, err := open()
	if err != nil {
		return r, err
	}
	for i := 2; i <= events; i++ { // the contract and its approval are two
		if _, err := proof(long, i); err != nil {
			return r, err
		}
	}
	r.Setup = time.Since(start)
	var fresh, onLong []time.Duration
	for i := range calls {
		id, err := open()
		if err != nil {
			return r, err
		}
		d, err := proof(id, 0)
		if err != nil {
			return r, err
		}
		fresh = append(fresh, d)
		if d, err = proof(long, events+i); err != nil {
			return r, err
		}
		onLong = append(onLong, d)
	}
	slices.Sort(fresh)
	slices.Sort(onLong)
	r.Fresh50, r.Fresh99, r.Long50, r.Long99 = pct(fresh, 0.5), pct(fresh, 0.99), pct(onLong, 0.5), pct(onLong, 0.99)
	r.FreshRuns, r.LongRun = len(fresh), len(onLong)
	return r, nil
}
