package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/kurrent"
	"github.com/batonhq/baton/eventstore/kurrent/kurrenttest"
	"github.com/batonhq/baton/eventstore/storebench"
)

// The KurrentDB adapter benchmark runs the append and lifecycle benchmarks
// through eventstore/kurrent against the in-process test double. The double
// keeps everything in memory and fsyncs nothing, so these figures are the
// adapter's and the gRPC client's overhead only, not KurrentDB's: no real
// server was measured here.

type kurrentResult struct {
	Appends    []storebench.AppendResult
	Lifecycles []lifecycleResult
}

func benchKurrent(ctx context.Context, tmp func(string) (string, error), d time.Duration, stdout io.Writer) (kurrentResult, error) {
	var res kurrentResult
	var doubles []*kurrenttest.Server
	defer func() {
		for _, s := range doubles {
			s.Stop()
		}
	}()
	open := func(string) (eventstore.Store, error) {
		srv, err := kurrenttest.Start(kurrenttest.Options{})
		if err != nil {
			return nil, err
		}
		doubles = append(doubles, srv)
		return kurrent.Open(ctx, kurrent.Config{URL: srv.URL()})
	}
	for _, w := range []int{1, 16, 64} {
		dir, err := tmp(fmt.Sprintf("kurrent-append-%d", w))
		if err != nil {
			return res, err
		}
		r, err := storebench.Appends(ctx, open, dir, w, d)
		if err != nil {
			return res, err
		}
		fmt.Fprintf(stdout, "kurrent adapter (test double), append, %2d writers: %8.0f appends/s  p50 %v  p99 %v\n", w, r.PerSec, r.P50, r.P99)
		res.Appends = append(res.Appends, r)
	}
	for _, x := range []int{1, 64} {
		dir, err := tmp(fmt.Sprintf("kurrent-lifecycle-%d", x))
		if err != nil {
			return res, err
		}
		store, err := open(dir)
		if err != nil {
			return res, err
		}
		r, err := benchLifecyclesOn(ctx, store, dir, x, d, false)
		store.Close()
		if err != nil {
			return res, err
		}
		fmt.Fprintf(stdout, "kurrent adapter (test double), lifecycles, %2d executors: %6.0f callbacks/s, p50 %v p99 %v per call\n",
			x, float64(r.Callbacks)/r.Elapsed.Seconds(), r.All50, r.All99)
		res.Lifecycles = append(res.Lifecycles, r)
	}
	return res, nil
}

func kurrentReport(r kurrentResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## KurrentDB adapter, against the in-process test double (adapter overhead only)\n\n")
	fmt.Fprintf(&b, "The same append and lifecycle benchmarks through `eventstore/kurrent` (EventStore-Client-Go v4.2.0 over loopback gRPC) against `kurrenttest`, the in-memory test double. The double fsyncs nothing and runs in this process, so these figures measure the adapter, the client and gRPC, not a KurrentDB server: no real server was available here. Compare with the embedded store above only as \"what the adapter path costs\".\n\n")
	fmt.Fprintf(&b, "| writers | appends | appends/s | p50 latency | p99 latency |\n|---:|---:|---:|---:|---:|\n")
	for _, a := range r.Appends {
		fmt.Fprintf(&b, "| %d | %d | %.0f | %v | %v |\n", a.Writers, a.Appends, a.PerSec, round(a.P50), round(a.P99))
	}
	fmt.Fprintf(&b, "\n| executors | lifecycles | callbacks/s | p50 per call | p99 per call |\n|---:|---:|---:|---:|---:|\n")
	for _, l := range r.Lifecycles {
		fmt.Fprintf(&b, "| %d | %d | %.0f | %v | %v |\n", l.Executors, l.Lifecycles, float64(l.Callbacks)/l.Elapsed.Seconds(), round(l.All50), round(l.All99))
	}
	return b.String()
}
