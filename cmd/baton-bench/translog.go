package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/eventstore/translog"
)

// logResult is the transparency log's benchmark.
type logResult struct {
	Rate      int
	Events    int
	Interval  time.Duration
	Int50     time.Duration // commit to the first checkpoint covering it
	Int99     time.Duration
	IntMax    time.Duration
	Claims    int // checkpoints signed during the run
	Rebuilt   int // events in the rebuild
	RebuildIn time.Duration
	RebuildMB float64 // the log file's size after the rebuild
	// Lifecycle callbacks/s at 64 executors, the log off and on,
	// alternated (off, on, off, on).
	LifeOff, LifeOn []float64
}

// benchLog measures, on a durable store in dir, (1) how long after its
// commit a handoff event is covered by a signed checkpoint, with contracts
// created through the ledger service at rate per second for about d and
// the log signing at its default interval, and (2) the log rebuilt from
// zero over a store of rebuildN handoff events.
func benchLog(ctx context.Context, dir string, rate int, d time.Duration, rebuildN int) (logResult, error) {
	res := logResult{Rate: rate, Interval: translog.DefaultInterval}
	defer func() { lifecycleWithLog = false }()
	for i, on := range []bool{false, true, false, true} {
		lifecycleWithLog = on
		r, err := benchLifecycles(ctx, filepath.Join(dir, fmt.Sprintf("lifecycle-%d", i)), 64, d, false)
		if err != nil {
			return res, err
		}
		cps := float64(r.Callbacks) / r.Elapsed.Seconds()
		if on {
			res.LifeOn = append(res.LifeOn, cps)
		} else {
			res.LifeOff = append(res.LifeOff, cps)
		}
	}
	if err := benchLogIntegration(ctx, filepath.Join(dir, "integration"), rate, d, &res); err != nil {
		return res, err
	}
	if err := benchLogRebuild(ctx, filepath.Join(dir, "rebuild"), rebuildN, &res); err != nil {
		return res, err
	}
	return res, nil
}

func benchLogIntegration(ctx context.Context, dir string, rate int, d time.Duration, res *logResult) error {
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	skey, _, err := translog.GenerateKey("bench.baton/log", nil)
	if err != nil {
		return err
	}
	type signedAt struct {
		size int64
		at   time.Time
	}
	var (
		cmu    sync.Mutex
		signed []signedAt
	)
	tl, err := translog.Open(filepath.Join(dir, translog.FileName), store, translog.Options{SignerKey: skey,
		OnCheckpoint: func(cp translog.Checkpoint) {
			at := time.Now()
			cmu.Lock()
			signed = append(signed, signedAt{cp.Size, at})
			cmu.Unlock()
		}})
	if err != nil {
		return err
	}
	defer tl.Close()
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); tl.Run(rctx) }()
	go func() { defer wg.Done(); tl.RunSigner(rctx) }()
	defer func() { cancel(); wg.Wait() }()

	svc := ledger.New(store, ledger.Options{})
	n := int(float64(rate) * d.Seconds())
	committed, _, err := createPaced(ctx, svc, n, rate)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, cp := tl.Checkpoint(); cp.Size >= int64(n) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no checkpoint covered the %d events within 30 s of the last commit", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmu.Lock()
	defer cmu.Unlock()
	var lat []time.Duration
	for id, c := range committed {
		rs, err := tl.Receipts(id)
		if err != nil || len(rs) != 1 {
			return fmt.Errorf("handoff %s: %d receipts, %v", id, len(rs), err)
		}
		i, _ := slices.BinarySearchFunc(signed, rs[0].LeafIndex+1, func(s signedAt, size int64) int {
			switch {
			case s.size < size:
				return -1
			case s.size > size:
				return 1
			}
			return 0
		})
		if i == len(signed) {
			return fmt.Errorf("no checkpoint covers leaf %d", rs[0].LeafIndex)
		}
		lat = append(lat, max(0, signed[i].at.Sub(c)))
	}
	slices.Sort(lat)
	res.Events, res.Claims = n, len(signed)
	res.Int50, res.Int99, res.IntMax = pct(lat, 0.5), pct(lat, 0.99), lat[len(lat)-1]
	return nil
}

// benchLogRebuild fills a store with n handoff events (n/10,000 handoffs of
// 10,000 events, appended 1,000 at a time), then times a log built from a
// new file over it.
func benchLogRebuild(ctx context.Context, dir string, n int, res *logResult) error {
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	data := json.RawMessage(`{"objective":"Rotate the staging TLS certificate","targetExecutor":"ops-bot","executorProtocol":"ops_bot.v1","riskLevel":"medium","proof":{"artifactType":"log","uri":"s3://bench/run.log"}}`)
	const perAppend = 1000
	handoffs := max(1, n/perAppend/10)
	revs := make([]int, handoffs)
	ids := make([]string, handoffs)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-%06d", i)
	}
	at := time.Now().UTC()
	for done, k := 0, 0; done < n; k++ {
		h := k % handoffs
		m := min(perAppend, n-done)
		evs := make([]eventstore.EventData, m)
		for j := range evs {
			evs[j] = eventstore.NewEvent("ProofReceived", data, eventstore.Metadata{Tenant: "bench", Actor: "bench", RecordedAt: at.Add(time.Duration(done+j) * time.Microsecond)})
		}
		exp := eventstore.NoStream()
		if revs[h] > 0 {
			exp = eventstore.Revision(uint64(revs[h] - 1))
		}
		if _, err := store.Append(ctx, domain.StreamID(ids[h]), exp, evs...); err != nil {
			return err
		}
		revs[h] += m
		done += m
	}
	path := filepath.Join(dir, translog.FileName)
	t0 := time.Now()
	tl, err := translog.Open(path, store, translog.Options{})
	if err != nil {
		return err
	}
	if err := tl.CatchUp(ctx); err != nil {
		tl.Close()
		return err
	}
	res.RebuildIn = time.Since(t0)
	res.Rebuilt = int(tl.Size())
	tl.Close()
	if fi, err := os.Stat(path); err == nil {
		res.RebuildMB = float64(fi.Size()) / (1 << 20)
	}
	if res.Rebuilt != n {
		return fmt.Errorf("the rebuilt log holds %d entries, want %d", res.Rebuilt, n)
	}
	return nil
}

func logLine(r logResult) string {
	return fmt.Sprintf("transparency log: lifecycle callbacks/s at 64 executors, log off %.0f, on %.0f; %d events at %d/s, commit to covering checkpoint p50 %v p99 %v max %v (%d checkpoints); rebuilt from zero over %d events in %v (%.0f events/s, %.0f MiB)\n",
		mean(r.LifeOff), mean(r.LifeOn), r.Events, r.Rate, round(r.Int50), round(r.Int99), round(r.IntMax), r.Claims, r.Rebuilt, r.RebuildIn.Round(time.Millisecond), float64(r.Rebuilt)/r.RebuildIn.Seconds(), r.RebuildMB)
}

func logReport(r logResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Transparency log\n\n")
	fmt.Fprintf(&b, "Checkpoint integration: on a durable store, contracts are created through the ledger service (one `ContractCreated` event each) at a paced %d events/s from %d goroutines, while the log follows the feed and signs a checkpoint at most every %v (the default `--log-interval`), each claimed in the store; the log takes in what arrives within 100 ms in one commit of its file. Latency is timed from the append's return to the moment the log takes in the first signed checkpoint that covers the event (what `GET /v1/log/checkpoint` then serves). Goal: p99 under 1 s.\n\n", r.Rate, eventsWriters, r.Interval)
	fmt.Fprintf(&b, "| events/s | events | checkpoints | p50 | p99 | max |\n|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| %d | %d | %d | %v | %v | %v |\n\n", r.Rate, r.Events, r.Claims, round(r.Int50), round(r.Int99), round(r.IntMax))
	fmt.Fprintf(&b, "Lifecycle callbacks/s at 64 executors (the lifecycle benchmark above) with the log off and on (`baton serve --log=false` and the default: following the feed, signing every 500 ms, its routes served), alternated off, on, off, on. Goal: on within 10%% of off.\n\n")
	fmt.Fprintf(&b, "| log | runs (callbacks/s) | mean | vs off |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| off | %s | %.0f | |\n| on | %s | %.0f | %+.1f%% |\n\n", joinRates(r.LifeOff), mean(r.LifeOff), joinRates(r.LifeOn), mean(r.LifeOn), 100*(mean(r.LifeOn)/mean(r.LifeOff)-1))
	fmt.Fprintf(&b, "Rebuild from zero: a new log file built over a store of handoff events (a ~200-byte proof payload each; n/10,000 handoffs, appended 1,000 events at a time) with `CatchUp`, as after deleting `translog.db`.\n\n")
	fmt.Fprintf(&b, "| events | time | events/s | log file |\n|---:|---:|---:|---:|\n| %d | %v | %.0f | %.0f MiB |\n", r.Rebuilt, r.RebuildIn.Round(time.Millisecond), float64(r.Rebuilt)/r.RebuildIn.Seconds(), r.RebuildMB)
	fmt.Fprintf(&b, "\n%s\n", logHistory)
	return b.String()
}

// logHistory is what earlier runs of this section showed.
const logHistory = "History, 2026-11-26: the first full `make bench` with the log, on a quiet machine, put its cost at -24.0% (2,378 against 1,808 callbacks/s). By profile the log's follower took about a tenth of the CPU in the runs with it on, nearly half of that re-canonicalizing each event's JSON. Two changes followed, each measured with `baton-bench --only log`, the binaries before and after alternated: the follower gathering 25 ms of events into one commit of its file (the log's cost from -16% and -11% to -8% and -13%, within the noise, for 48 ms more to a checkpoint; a full run with it alone gave -18.6%), then `domain.CanonicalJSON` taking a one-pass path for the documents Baton writes, 5 to 6 times faster than decoding and re-encoding (`BenchmarkCanonicalFast`), which the ledger's hash chain uses on every write too (-14% and -10% before, -1% and +3% after; the log's follower then takes about 7% of the CPU of the runs with it on). A full run then still gave -12.5% (2,172 against 1,902), larger than the section's runs alone: with the files of the sections before it on the disk, the log's own commits cost more. The follower then gathered 100 ms per commit and stopped writing bbolt's freelist at each one (the table above: the first full run within the goal), for about 75 ms more to a checkpoint."

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}

func joinRates(xs []float64) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf("%.0f", x))
	}
	return strings.Join(parts, ", ")
}
