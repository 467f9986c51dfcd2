// Command baton-bench is Baton's benchmark harness (`make bench`). It
// measures the embedded store, whole handoff lifecycles over HTTP, the event
// stream's delivery latency, what the model gateway and generate add to a
// model call, and the KurrentDB adapter, and writes docs/benchmarks.md. The gateway and generate benchmarks run
// `baton serve` as a child process, with this binary's bare forwarding
// proxy (`baton-bench proxy`) beside it as the floor.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/batonhq/baton/cmd/internal/profile"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/storebench"
)

const usage = `usage: baton-bench [--out docs/benchmarks.md] [--only store|lifecycle|events|log|gateway|generate|kurrent] [flags]
       baton-bench proxy --upstream URL [--addr 127.0.0.1:0]

baton-bench measures Baton and writes the figures as Markdown (make bench).
proxy is the gateway benchmark's bare forwarding proxy, run as its child.
`

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "baton-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var err error
	if len(args) > 0 && args[0] == "proxy" {
		err = benchProxy(ctx, args[1:], stdout, stderr)
	} else {
		err = bench(ctx, args, stdout, stderr)
	}
	if errors.Is(err, flag.ErrHelp) {
		return nil // the usage is printed
	}
	return err
}

// batonModule is the package the gateway and generate benchmarks build
// their child process from, unless --baton names a binary.
const batonModule = "github.com/batonhq/baton/cmd/baton"

// buildBaton builds the baton command into dir with the go command.
func buildBaton(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "baton")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, batonModule).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building %s (run from the module's folder, or give --baton PATH): %w\n%s", batonModule, err, out)
	}
	return bin, nil
}

// bench measures the embedded store, the ledger over HTTP and the model
// gateway, and writes the figures as Markdown.
func bench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("baton-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage+"\nflags:\n"); fs.PrintDefaults() }
	out := fs.String("out", "docs/benchmarks.md", "Markdown file to write ('-' for stdout only)")
	dur := fs.Duration("duration", 5*time.Second, "length of each append run")
	readN := fs.Int("read-events", 1_000_000, "events in the global-feed read benchmark")
	base := fs.String("dir", os.TempDir(), "directory for the benchmark stores (its disk is what is measured)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	blockprofile := fs.String("blockprofile", "", "write a blocking profile to this file")
	only := fs.String("only", "", "run one part: store, lifecycle, events, log, gateway, generate or kurrent (prints figures, writes no file)")
	logN := fs.Int("log-events", 1_000_000, "events in the transparency log's rebuild from zero")
	gwDur := fs.Duration("gw-duration", 4*time.Second, "gateway benchmark: length of each side (direct, through Baton) of each row")
	modelTime := fs.Duration("model-time", 20*time.Millisecond, "gateway and generate benchmarks: how long the paced upstream model takes before it answers (0: only the model answering at once; negative: only the paced model, taking its absolute value)")
	fs.BoolVar(&benchPin, "pin", false, "gateway benchmark: also run the paced model's rows at 1 and 16 callers with Baton and the bare proxy on CPU 1 and the load generator and upstream on CPU 0 (Linux, 2 or more CPUs)")
	fs.IntVar(&gwRows.conc, "gw-conc", 0, "gateway benchmark: only this many concurrent callers (0: 1, 16 and 64)")
	fs.StringVar(&gwRows.kind, "gw-kind", "", "gateway benchmark: only plain or only stream calls (empty: both)")
	fs.StringVar(&childCPUProfile, "child-cpuprofile", "", "gateway and generate benchmarks: the Baton child process writes its CPU profile to this file")
	fs.StringVar(&proxyCPUProfile, "proxy-cpuprofile", "", "gateway benchmark: the bare proxy child process writes its CPU profile to this file")
	fs.StringVar(&childMemProfile, "child-memprofile", "", "gateway and generate benchmarks: the Baton child process writes its heap profile (allocations) to this file when it stops")
	fs.StringVar(&batonBinary, "baton", "", "gateway and generate benchmarks: the baton binary to serve with (default: built from "+batonModule+" with go build)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch gwRows.kind {
	case "", "plain", "stream":
	default:
		return fmt.Errorf("bench: --gw-kind %q: want plain or stream", gwRows.kind)
	}
	if gwRows.conc < 0 {
		return fmt.Errorf("bench: --gw-conc %d: want a number of callers, or 0 for 1, 16 and 64", gwRows.conc)
	}
	if (gwRows.conc != 0 || gwRows.kind != "") && *only != "gateway" {
		// A partial gateway section must not overwrite docs/benchmarks.md.
		return errors.New("bench: --gw-conc and --gw-kind go with --only gateway")
	}
	switch *only {
	case "", "store", "lifecycle", "events", "log", "gateway", "generate", "kurrent":
	default:
		return fmt.Errorf("bench: --only %q: want store, lifecycle, events, log, gateway, generate or kurrent", *only)
	}
	stopProfile, err := profile.StartCPU(*cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	open := func(dir string) (eventstore.Store, error) { return bolt.Open(dir, bolt.Options{}) }
	var cleanup []string
	defer func() {
		for _, d := range cleanup {
			os.RemoveAll(d)
		}
	}()
	tmp := func(name string) (string, error) {
		d, err := storebench.TempDir(*base, "baton-bench-"+name)
		if err == nil {
			cleanup = append(cleanup, d)
		}
		return d, err
	}

	if batonBinary == "" && (*only == "" || *only == "gateway" || *only == "generate") {
		// Built before anything is measured, so the compiler's work
		// falls on no figure.
		dir, err := tmp("bin")
		if err != nil {
			return err
		}
		if batonBinary, err = buildBaton(ctx, dir); err != nil {
			return err
		}
	}

	if *blockprofile != "" {
		runtime.SetBlockProfileRate(10_000) // one sample per 10 us blocked
		defer func() {
			if f, err := os.Create(*blockprofile); err == nil {
				pprof.Lookup("block").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	var long longLedgerResult
	lifecycleRuns := func() ([]lifecycleResult, error) {
		var out []lifecycleResult
		dir, err := tmp("long-ledger")
		if err != nil {
			return nil, err
		}
		if long, err = benchLongLedger(ctx, dir, longLedgerEvents, 200); err != nil {
			return nil, err
		}
		fmt.Fprintf(stdout, "a proof on a ledger of %d events: p50 %v p99 %v, on a fresh handoff p50 %v p99 %v (setup %v)\n",
			long.Events, long.Long50, long.Long99, long.Fresh50, long.Fresh99, long.Setup.Round(time.Millisecond))
		for i, run := range []struct {
			x      int
			active bool
		}{{1, false}, {64, false}, {64, true}} {
			dir, err := tmp(fmt.Sprintf("lifecycle-%d", i))
			if err != nil {
				return nil, err
			}
			r, err := benchLifecycles(ctx, dir, run.x, *dur, run.active)
			if err != nil {
				return nil, err
			}
			drained := fmt.Sprintf("all in %v after", r.Drain)
			if r.Drain < 0 {
				drained = "not all within a minute after"
			}
			fmt.Fprintf(stdout, "lifecycles, %2d executors%s: %6.0f lifecycles/s, %6.0f callbacks/s, p50 %v p99 %v per call, %d webhook deliveries during the run, %s\n",
				run.x, map[bool]string{true: " (timers, webhook)"}[run.active], float64(r.Lifecycles)/r.Elapsed.Seconds(), float64(r.Callbacks)/r.Elapsed.Seconds(), r.All50, r.All99, r.Delivered, drained)
			out = append(out, r)
		}
		return out, nil
	}
	if *only == "lifecycle" {
		_, err := lifecycleRuns()
		return err
	}
	eventsRun := func() (eventsResult, error) {
		dir, err := tmp("events")
		if err != nil {
			return eventsResult{}, err
		}
		r, err := benchEvents(ctx, dir, eventsRate, *dur)
		if err == nil {
			fmt.Fprint(stdout, eventsLine(r))
		}
		return r, err
	}
	if *only == "events" {
		r, err := eventsRun()
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, eventsReport(r))
		return nil
	}
	logRun := func() (logResult, error) {
		dir, err := tmp("log")
		if err != nil {
			return logResult{}, err
		}
		r, err := benchLog(ctx, dir, eventsRate, *dur, *logN)
		if err == nil {
			fmt.Fprint(stdout, logLine(r))
		}
		return r, err
	}
	if *only == "log" {
		r, err := logRun()
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, logReport(r))
		return nil
	}
	gatewayRun := func() (gatewayResult, error) {
		dir, err := tmp("gateway")
		if err != nil {
			return gatewayResult{}, err
		}
		return benchGateway(ctx, dir, *gwDur, *modelTime, stdout)
	}
	if *only == "gateway" {
		r, err := gatewayRun()
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, gatewayReport(r))
		return nil
	}
	generateRun := func() (generateResult, error) {
		dir, err := tmp("generate")
		if err != nil {
			return generateResult{}, err
		}
		return benchGenerate(ctx, dir, *gwDur, *modelTime, stdout)
	}
	if *only == "kurrent" {
		r, err := benchKurrent(ctx, tmp, *dur, stdout)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, kurrentReport(r))
		return nil
	}
	if *only == "generate" {
		r, err := generateRun()
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, generateReport(r, nil))
		return nil
	}
	dir, err := tmp("fsync")
	if err != nil {
		return err
	}
	fsyncs, err := storebench.FsyncRate(dir, 2*time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "disk: %.0f write+fsync/s\n", fsyncs)

	var appends []storebench.AppendResult
	for _, w := range []int{1, 16, 64} {
		dir, err := tmp(fmt.Sprintf("append-%d", w))
		if err != nil {
			return err
		}
		r, err := storebench.Appends(ctx, open, dir, w, *dur)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "append, %2d writers: %8.0f appends/s  p50 %v  p99 %v\n", w, r.PerSec, r.P50, r.P99)
		appends = append(appends, r)
	}

	dir, err = tmp("read")
	if err != nil {
		return err
	}
	s, err := open(dir)
	if err != nil {
		return err
	}
	fillStart := time.Now()
	if err := storebench.Fill(ctx, s, *readN); err != nil {
		s.Close()
		return err
	}
	fillTook := time.Since(fillStart)
	read, err := storebench.ReadAll(ctx, s, 1000)
	s.Close()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "global feed read: %d events in %v, %.0f events/s\n", read.Events, read.Elapsed.Round(time.Millisecond), read.PerSec)
	if *only == "store" {
		return nil
	}

	lifecycles, err := lifecycleRuns()
	if err != nil {
		return err
	}
	events, err := eventsRun()
	if err != nil {
		return err
	}
	tlog, err := logRun()
	if err != nil {
		return err
	}
	gw, err := gatewayRun()
	if err != nil {
		return err
	}
	gen, err := generateRun()
	if err != nil {
		return err
	}
	kr, err := benchKurrent(ctx, tmp, *dur, stdout)
	if err != nil {
		return err
	}
	md := report(fsyncs, appends, read, fillTook) + lifecycleReport(lifecycles, long) + eventsReport(events) + logReport(tlog) + gatewayReport(gw) + generateReport(gen, appends) + kurrentReport(kr)
	if *out == "-" {
		fmt.Fprint(stdout, md)
		return nil
	}
	fmt.Fprint(stdout, gatewayReport(gw))
	return os.WriteFile(*out, []byte(md), 0o644)
}

func report(fsyncs float64, appends []storebench.AppendResult, read storebench.ReadResult, fillTook time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\nWritten by `make bench` (`baton-bench`). Figures from one run; compare them as\nratios within the run, since these machines are noisy. Unit tests never assert timings.\n\n")
	fmt.Fprintf(&b, "- Date: %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- Machine: %s, %d cores, %s/%s, %s\n", storebench.Machine(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(&b, "- Disk: %.0f write+fsync pairs per second on the benchmark directory's file system (the ceiling for commits one after another)\n\n", fsyncs)

	fmt.Fprintf(&b, "## Event store (embedded, bbolt): durable appends\n\n")
	fmt.Fprintf(&b, "Each writer appends one event (%s) per call to its own stream with the right expected revision; an append returns only after its group commit is in the journal, fdatasynced (the bbolt file follows in the background, see `docs/eventstore.md`). Goals: at least 2,000/s for one writer and 20,000/s at 64 writers.\n\n", "a ~230-byte proof callback")
	fmt.Fprintf(&b, "| writers | appends | appends/s | p50 latency | p99 latency | vs 1 writer | appends per disk fsync |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	one := appends[0].PerSec
	for _, r := range appends {
		fmt.Fprintf(&b, "| %d | %d | %.0f | %v | %v | %.1fx | %.2f |\n", r.Writers, r.Appends, r.PerSec, round(r.P50), round(r.P99), r.PerSec/one, r.PerSec/fsyncs)
	}
	fmt.Fprintf(&b, "\n## Event store: global feed read\n\n")
	fmt.Fprintf(&b, "Reading the whole global feed from position zero in pages of 1,000 (as a projection rebuild does). Goal: at least 500,000 events/s.\n\n")
	fmt.Fprintf(&b, "| events | time | events/s |\n|---:|---:|---:|\n| %d | %v | %.0f |\n\n", read.Events, read.Elapsed.Round(time.Millisecond), read.PerSec)
	fmt.Fprintf(&b, "Loading those events (appends of 1,000 events each) took %v.\n", fillTook.Round(time.Millisecond))
	return b.String()
}

func round(d time.Duration) time.Duration {
	switch {
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}

// longLedgerEvents is the ledger length of the long-ledger row: an
// executor reporting every few seconds for a couple of hours.
const longLedgerEvents = 2500

func lifecycleReport(rs []lifecycleResult, long longLedgerResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Coordination ledger: whole handoff lifecycles over HTTP\n\n")
	fmt.Fprintf(&b, "Baton serves on loopback over real TCP, on a durable store (every call's events fsynced before it answers), read models following. Each executor runs lifecycles one after another: create (manual approval, `log` proof required), approve, proof, review, result, which closes the ledger. Secret scanning is on. The load generator runs in the same process on the same two cores, so it takes CPU from the server; successive runs on this machine differ by about 20%%. Goal: at least 3,000 callbacks/s at 64 executors with p99 under 50 ms.\n\n")
	label := func(r lifecycleResult) string {
		if r.Active {
			return fmt.Sprintf("%d, timers and a webhook on", r.Executors)
		}
		return fmt.Sprint(r.Executors)
	}
	fmt.Fprintf(&b, "| executors | lifecycles | lifecycles/s | callbacks/s | p50 per call | p99 per call | webhook deliveries |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %v | %v | %d |\n", label(r), r.Lifecycles, float64(r.Lifecycles)/r.Elapsed.Seconds(), float64(r.Callbacks)/r.Elapsed.Seconds(), round(r.All50), round(r.All99), r.Delivered)
	}
	fmt.Fprintf(&b, "\nPer call (p50 / p99):\n\n| executors |")
	for _, c := range lifecycleCalls {
		fmt.Fprintf(&b, " %s |", c)
	}
	fmt.Fprintf(&b, "\n|---|")
	for range lifecycleCalls {
		fmt.Fprintf(&b, "---:|")
	}
	fmt.Fprintf(&b, "\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s |", label(r))
		for _, c := range lifecycleCalls {
			fmt.Fprintf(&b, " %v / %v |", round(r.P50[c]), round(r.P99[c]))
		}
		fmt.Fprintf(&b, "\n")
	}
	cps := func(r lifecycleResult) float64 { return float64(r.Callbacks) / r.Elapsed.Seconds() }
	if len(rs) >= 2 {
		fmt.Fprintf(&b, "\n64 executors complete %.1fx the callbacks per second of one.\n", cps(rs[1])/cps(rs[0]))
	}
	if len(rs) >= 3 && rs[2].Active {
		fmt.Fprintf(&b, "\nWith the coordination on (each contract carrying an approval deadline, a heartbeat lease and a result deadline, so the read models keep a timer index and the timer loop wakes on every change; and one webhook endpoint on loopback subscribed to every event type, each event scheduled, claimed and delivered through the store), 64 executors complete %.2fx the callbacks per second of the same run without (same binary, same run, one after the other). Deliveries still in their first attempt when the run ends are not counted.\n", cps(rs[2])/cps(rs[1]))
	}
	if long.Events > 0 {
		fmt.Fprintf(&b, "\nA callback on a long ledger (the ledger service on a durable store, no HTTP; one caller): %d proofs on a handoff whose ledger already holds %d events took p50 %v and p99 %v, against p50 %v and p99 %v for the first proof of %d fresh handoffs, alternated (%.1fx at p50). A command reads only the events after the state its process kept from its last command on that handoff (eventstore/ledger, folds).\n",
			long.LongRun, long.Events, round(long.Long50), round(long.Long99), round(long.Fresh50), round(long.Fresh99), long.FreshRuns, float64(long.Long50)/float64(long.Fresh50))
		fmt.Fprintf(&b, "\nHistory, 2026-11-28, fifteenth stop: before that kept state, every command read and folded the handoff's whole stream again: in `BenchmarkCallbackOnLongLedger` (eventstore/ledger; one more proof, 200 runs) 23.7 ms a proof at 2,500 events against 1.8 ms at 10, and after it 1.8 to 4.5 ms against 1.4 ms (the rest is a copy of the handoff's lists, which grow with it).\n")
	}
	fmt.Fprintf(&b, "\nHistory, 2026-11-26: when the command side moved from `http` to `eventstore/ledger` (and the secret scanner gained its look-alike and joined passes), the binary of the day before and the new one, alternated, gave 4,074 and 3,241 against 3,950 and 3,185 callbacks/s at 64 executors, 1,389 and 1,344 against 1,379 and 1,057 at one: within the run-to-run spread of that hour.\n")
	return b.String()
}
