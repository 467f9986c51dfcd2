package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/domain/secrets"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/ledger"
	batonhttp "github.com/batonhq/baton/http"
	"github.com/batonhq/baton/projections"
)

// eventsRate is the pace of the event stream benchmark's appends.
const eventsRate = 1000

// eventsWriters is how many goroutines share the paced appends, so that
// one slow append does not hold back the slots after it.
const eventsWriters = 16

// eventsResult is the event stream's delivery benchmark.
type eventsResult struct {
	Rate    int           // events/s asked for
	Events  int           // appended, each received once
	Elapsed time.Duration // from the first slot to the last append's return
	// From the append's return (the commit acknowledged to its writer) to
	// the client's receipt; an event the client had before its writer
	// learnt of the commit counts as 0 (Early of them).
	Commit50, Commit99 time.Duration
	Early              int
	// From the event's recordedAt (set just before the append) to the
	// client's receipt: the durable commit included.
	Rec50, Rec99 time.Duration
}

// benchEvents serves Baton on loopback over real TCP, on a durable store
// in dir, holds one GET /v1/events stream open, and appends contracts
// (one ContractCreated event each) through the ledger service at rate per
// second for about d, timing each event from commit to the client.
func benchEvents(ctx context.Context, dir string, rate int, d time.Duration) (eventsResult, error) {
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		return eventsResult{}, err
	}
	defer store.Close()
	proj, err := projections.Open(filepath.Join(dir, "readmodel.db"), store, projections.NewHandoffs(), projections.Keys{})
	if err != nil {
		return eventsResult{}, err
	}
	defer proj.Close()
	rctx, cancel := context.WithCancel(ctx)
	runDone := make(chan struct{})
	go func() { proj.Run(rctx); close(runDone) }()
	defer func() { cancel(); <-runDone }()
	svc := ledger.New(store, ledger.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return eventsResult{}, err
	}
	front := batonhttp.NewServer(batonhttp.Config{Store: store, Ledger: svc, Projections: proj, Scanner: secrets.NewLazy(), Log: zerolog.Nop()})
	srv := &http.Server{Handler: front.Handler()}
	go srv.Serve(ln)
	defer func() { srv.Close(); front.Close() }()
	key, err := svc.Keys.Create(ctx, "bench", "", "bench", false, "")
	if err != nil {
		return eventsResult{}, err
	}

	sctx, stop := context.WithCancel(ctx)
	defer stop()
	req, _ := http.NewRequestWithContext(sctx, http.MethodGet, "http://"+ln.Addr().String()+"/v1/events", nil)
	req.Header.Set("x-api-key", key.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return eventsResult{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return eventsResult{}, fmt.Errorf("GET /v1/events: %s", resp.Status)
	}
	n := int(float64(rate) * d.Seconds())
	type receipt struct {
		at, recorded time.Time
	}
	received := make(map[string]receipt, n)
	readDone := make(chan error, 1)
	go func() {
		br := bufio.NewReaderSize(resp.Body, 64<<10)
		for len(received) < n {
			line, err := br.ReadSlice('\n')
			at := time.Now()
			if err != nil {
				readDone <- fmt.Errorf("reading the stream after %d events: %w", len(received), err)
				return
			}
			data, ok := bytes.CutPrefix(line, []byte("data: "))
			if !ok {
				continue
			}
			var ev struct {
				HandoffID  string    `json:"handoffId"`
				RecordedAt time.Time `json:"recordedAt"`
			}
			if err := json.Unmarshal(data, &ev); err != nil {
				readDone <- err
				return
			}
			if _, twice := received[ev.HandoffID]; twice {
				readDone <- fmt.Errorf("event of %s received twice", ev.HandoffID)
				return
			}
			received[ev.HandoffID] = receipt{at, ev.RecordedAt}
		}
		readDone <- nil
	}()

	committed, elapsed, err := createPaced(ctx, svc, n, rate)
	if err != nil {
		return eventsResult{}, err
	}
	select {
	case err := <-readDone:
		if err != nil {
			return eventsResult{}, err
		}
	case <-time.After(30 * time.Second):
		stop()
		<-readDone
		return eventsResult{}, fmt.Errorf("the stream delivered %d of %d events within 30 s of the last append", len(received), n)
	}
	res := eventsResult{Rate: rate, Events: n, Elapsed: elapsed}
	var fromCommit, fromRecorded []time.Duration
	for id, c := range committed {
		r, ok := received[id]
		if !ok {
			return eventsResult{}, fmt.Errorf("the event of %s was never received", id)
		}
		lat := r.at.Sub(c)
		if lat < 0 {
			lat, res.Early = 0, res.Early+1
		}
		fromCommit = append(fromCommit, lat)
		fromRecorded = append(fromRecorded, r.at.Sub(r.recorded))
	}
	slices.Sort(fromCommit)
	slices.Sort(fromRecorded)
	res.Commit50, res.Commit99 = pct(fromCommit, 0.5), pct(fromCommit, 0.99)
	res.Rec50, res.Rec99 = pct(fromRecorded, 0.5), pct(fromRecorded, 0.99)
	return res, nil
}

// eventsLine is the benchmark's line on standard output.
func eventsLine(r eventsResult) string {
	return fmt.Sprintf("event stream, %d events/s asked: %.0f events/s appended, delivery p50 %v p99 %v from commit, p50 %v p99 %v from recordedAt\n",
		r.Rate, float64(r.Events)/r.Elapsed.Seconds(), round(r.Commit50), round(r.Commit99), round(r.Rec50), round(r.Rec99))
}

func eventsReport(r eventsResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Coordination ledger: event stream delivery\n\n")
	fmt.Fprintf(&b, "Baton serves on loopback over real TCP, on a durable store, read models following. One client holds `GET /v1/events` open while contracts are created through the ledger service (one `ContractCreated` event each, fsynced before the append returns) at a paced %d events/s, from %d goroutines sharing the schedule. Delivery latency is timed from the append's return (the commit as its writer learns of it; an event the client had first counts as 0) and from the event's `recordedAt` (set just before the append, so the durable commit is included) to the moment the client reads the event's `data` line. Every event was received once.\n\n", r.Rate, eventsWriters)
	fmt.Fprintf(&b, "| events/s asked | events | events/s appended | p50 from commit | p99 from commit | p50 from recordedAt | p99 from recordedAt |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| %d | %d | %.0f | %v | %v | %v | %v |\n", r.Rate, r.Events, float64(r.Events)/r.Elapsed.Seconds(), round(r.Commit50), round(r.Commit99), round(r.Rec50), round(r.Rec99))
	if r.Early > 0 {
		fmt.Fprintf(&b, "\n%d of the %d events reached the client before their append returned.\n", r.Early, r.Events)
	}
	return b.String()
}

// benchCall is who the benchmarks that use the ledger service act as.
var benchCall = ledger.Call{Principal: domain.Principal{Tenant: "bench", KeyID: "bench"}}

// benchContract is their contract, approved by hand (manual) or when
// created (auto).
func benchContract(approvalMode string) domain.CreateContract {
	return domain.CreateContract{Objective: "Rotate the staging TLS certificate", TargetExecutor: "ops-bot",
		ExecutorProtocol: "ops_bot.v1", RiskLevel: "medium", ApprovalMode: approvalMode, ProofRequired: []string{"log"}}
}

// createPaced creates n contracts through the ledger service at rate per
// second from eventsWriters goroutines (one ContractCreated event each)
// and returns when each append returned, by handoff id, and how long the
// creating took from the first one's due time.
func createPaced(ctx context.Context, svc *ledger.Services, n, rate int) (map[string]time.Time, time.Duration, error) {
	call, contract := benchCall, benchContract(domain.ApprovalModeManual)
	period := time.Second / time.Duration(rate)
	var (
		mu        sync.Mutex
		committed = make(map[string]time.Time, n)
		first     error
		wg        sync.WaitGroup
	)
	start := time.Now().Add(10 * time.Millisecond)
	for w := range eventsWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += eventsWriters {
				time.Sleep(time.Until(start.Add(time.Duration(i) * period)))
				out, err := svc.Handoffs.Create(ctx, call, contract)
				at := time.Now()
				mu.Lock()
				if err != nil {
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
				committed[out.Handoff.ID] = at
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return committed, time.Since(start), first
}
