// Command baton is the one Baton binary: it serves the HTTP front and carries
// the operator's tools (keys, ledger verify, store check, migrate, version).
// The benchmark harness is cmd/baton-bench.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/batonhq/baton/cmd/internal/profile"
	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/eventstore/timed"
	"github.com/batonhq/baton/eventstore/translog"
	"github.com/batonhq/baton/gateway"
	_ "github.com/batonhq/baton/gateway/kinds" // every provider kind
	batonhttp "github.com/batonhq/baton/http"
	"github.com/batonhq/baton/http/connlimit"
	"github.com/batonhq/baton/http/metrics"
	"github.com/batonhq/baton/http/webhook"
	"github.com/batonhq/baton/projections"
)

// maxEventStreams bounds --event-streams: each stream holds a connection
// and reads the whole feed.
const maxEventStreams = 10_000

// DefaultConnsPerClient is the most connections one client holds open at
// once by default: far above what a client or an SDK's pool keeps (a
// proxy in front, every client at once, is the exception to configure),
// far below what takes a process's descriptors or memory.
const DefaultConnsPerClient = 1024

// MaxConnsPerClient bounds --max-connections-per-client.
const MaxConnsPerClient = 1 << 20

// defaultAddr is where baton serve listens unless told (the Makefile's ADDR
// too).
const defaultAddr = "127.0.0.1:8080"

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `baton: coordination ledger, model gateway and structured generation.

Usage:
  baton serve [--addr 127.0.0.1:8080] [--data ./data]   serve the HTTP API on the embedded store
        [--store kurrent --kurrentdb-url esdb://host:2113]
                                               ... or on KurrentDB (several replicas may share it)
        [--webhook-allow-private]              let webhooks go to private and loopback addresses
  baton keys create --tenant NAME [--admin]    create an API key (embedded store: server stopped), print it once
  baton console link --tenant NAME --name PERSON --role approver|verifier|auditor [--ttl 15m] [--url BASE]
                                               print a one-time console sign-in link (embedded store: server
                                               stopped; while serving, POST /v1/admin/console-links)
  baton ledger verify [--data DIR | --url URL | --store kurrent --kurrentdb-url URL] [HANDOFF_ID[@SEQ:HASH]...]
                                               recompute the hash chains; exit 1 naming the first break
  baton ledger export [--url URL --key KEY | --data DIR] HANDOFF_ID
                                               write the handoff's audit bundle (events, receipts, checkpoint) to stdout
  baton ledger verify --bundle FILE --log-key KEY [--old FILE]
                                               check an audit bundle offline: chain, receipts, signed checkpoint
  baton log keygen [--origin NAME] [--data ./data | --out FILE]
                                               make the transparency log's signing key; print its verifier key
  baton log verify --log-key KEY --old CHECKPOINT [--url URL] [--mirror DIR]
                                               check that today's log extends a checkpoint kept earlier
  baton store check [--data ./data] [--store bolt]
                                               verify the data file, page by page
  baton migrate --from bolt --data DIR --to kurrent --kurrentdb-url URL
                                               copy every event to KurrentDB (server stopped), then verify
  baton version                                print the version

Development only, commands of their own:
  baton-kurrent-double [--addr 127.0.0.1:2113] serve a TEST DOUBLE of a KurrentDB node for tests and trials:
                                               in memory, not a database; everything is gone when it stops
  baton-bench [--out docs/benchmarks.md]       measure Baton, write the figures (make bench)
`

func main() {
	// Ids (of events, calls, requests: none a secret) come from a buffer of
	// the system's random bytes filled 256 ids at a time, not a read per id
	// (four ids a model call). Here, before any goroutine: it is not safe
	// beside a running generator.
	uuid.EnableRandPool()
	os.Exit(runMain(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// runMain runs the command args names and returns the process's exit
// status, having printed its error. Output that could not be written (a
// full disk under `> file`) fails the command: it exited 0 with a report,
// a bundle or a key that went nowhere.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out := &checkedWriter{w: stdout}
	err := run(ctx, args, out, stderr)
	if err == nil && out.err != nil {
		err = fmt.Errorf("writing the output: %w", out.err)
	}
	if err == nil {
		return 0
	}
	if !errors.Is(err, errChainBroken) && !errors.Is(err, errLogBroken) {
		fmt.Fprintln(stderr, "baton:", err)
	}
	if ec, ok := errors.AsType[interface {
		error
		ExitCode() int
	}](err); ok {
		return ec.ExitCode()
	}
	return 1
}

// checkedWriter keeps the first error of its writes.
type checkedWriter struct {
	w   io.Writer
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// run runs the command args[0] names. `baton COMMAND -h` (or --help) prints
// that command's usage and flags and succeeds; a bad flag prints them on
// stderr before the error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := runCommand(ctx, args, stdout, stderr)
	var fe *flagError
	if errors.As(err, &fe) {
		if errors.Is(err, flag.ErrHelp) {
			printCommandUsage(stdout, fe.fs)
			return nil
		}
		printCommandUsage(stderr, fe.fs)
	}
	return err
}

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{errors.New("no command given")}
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stderr)
	case "keys":
		if len(args) < 2 || args[1] != "create" {
			return missingSubcommand(args, []string{"create"}, "usage: baton keys create --tenant NAME [--admin] [--label TEXT] [--data DIR]", stdout)
		}
		return keysCreate(ctx, args[2:], stdout)
	case "console":
		if len(args) < 2 || args[1] != "link" {
			return missingSubcommand(args, []string{"link"}, "usage: baton console link --tenant NAME --name PERSON --role approver|verifier|auditor [--ttl 15m] [--url BASE] [--data DIR]", stdout)
		}
		return consoleLink(ctx, args[2:], stdout)
	case "ledger":
		if len(args) >= 2 && args[1] == "export" {
			return ledgerExport(ctx, args[2:], stdout)
		}
		if len(args) < 2 || args[1] != "verify" {
			return missingSubcommand(args, []string{"verify", "export"}, "usage: baton ledger verify [--data DIR | --url URL --key KEY] [HANDOFF_ID[@SEQ:HASH]...] | baton ledger verify --bundle FILE --log-key KEY | baton ledger export [--url URL --key KEY | --data DIR] HANDOFF_ID", stdout)
		}
		return ledgerVerify(ctx, args[2:], stdout)
	case "log":
		switch {
		case len(args) >= 2 && args[1] == "keygen":
			return logKeygen(args[2:], stdout)
		case len(args) >= 2 && args[1] == "verify":
			return logVerify(ctx, args[2:], stdout)
		}
		return missingSubcommand(args, []string{"keygen", "verify"}, "usage: baton log keygen [--origin NAME] [--data DIR | --out FILE] | baton log verify --log-key KEY --old CHECKPOINT", stdout)
	case "store":
		if len(args) < 2 || args[1] != "check" {
			return missingSubcommand(args, []string{"check"}, "usage: baton store check [--data DIR] [--store bolt]", stdout)
		}
		return storeCheck(ctx, args[2:], stdout)
	case "migrate":
		return migrateStore(ctx, args[1:], stdout)
	case "version", "--version", "-version":
		if err := parseFlags(flag.NewFlagSet("version", flag.ContinueOnError), args[1:]); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "baton", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usageError{fmt.Errorf("unknown command %q", args[0])}
}

func dataDirDefault() string {
	if d := os.Getenv("BATON_DATA_DIR"); d != "" {
		return d
	}
	return "./data"
}

func serve(ctx context.Context, args []string, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var env envVars
	addr := fs.String("addr", env.str("addr", "BATON_ADDR", defaultAddr), "listen address")
	data := fs.String("data", dataDirDefault(), "data directory: the embedded store and this process's read models")
	defer func() { err = damagedStoreHelp(err, *data, true) }()
	storeOpts := addStoreFlags(fs, &env)
	providers := fs.String("providers", env.str("providers", "BATON_PROVIDERS_FILE", "providers.json"), "providers file (JSON); skipped when absent")
	maxBody := fs.Int64("max-body", env.integer("max-body", "BATON_MAX_BODY_BYTES", batonhttp.DefaultMaxBody), "request body limit in bytes (the ledger, generate, admin)")
	maxModelBody := fs.Int64("max-model-body", env.integer("max-model-body", "BATON_MAX_MODEL_BODY_BYTES", batonhttp.DefaultMaxModelBody), "body limit in bytes of the model calls (/v1/chat/completions, /v1/messages, /v1/messages/count_tokens, /v1/responses)")
	modelBodies := fs.Int64("model-bodies", env.integer("model-bodies", "BATON_MODEL_BODIES_BYTES", batonhttp.DefaultModelBodies), "the most bytes of model-call bodies held at once; a call whose body does not fit is 503 with Retry-After (a translated call peaks at about 4 times its body)")
	modelBodiesPerTenant := fs.Int64("model-bodies-per-tenant", env.integer("model-bodies-per-tenant", "BATON_MODEL_BODIES_PER_TENANT_BYTES", 0), "the most bytes of model-call bodies one tenant's calls hold at once; past it a call is 429 with Retry-After (default: half of --model-bodies)")
	streamIdle := fs.Duration("stream-idle", env.duration("stream-idle", "BATON_STREAM_IDLE", batonhttp.DefaultStreamIdle), "give up a streamed model call whose upstream sends nothing for this long")
	idemRetention := fs.Duration("idempotency-retention", env.duration("idempotency-retention", "BATON_IDEMPOTENCY_RETENTION", ledger.DefaultIdempotencyRetention), "how long an Idempotency-Key and its answer are kept on generate, agent plans, contract creation, context packets and webhook registration and rotation (at least 24h; a callback's key is kept with its ledger for good)")
	usageLinger := fs.Duration("usage-linger", env.duration("usage-linger", "BATON_USAGE_LINGER", gateway.DefaultUsageLinger), "how long the usage writer gathers calls' usage events into one commit (a crash loses at most this window's records)")
	usageEvents := fs.String("usage-events", env.str("usage-events", "BATON_USAGE_EVENTS", usageBatched), "how usage is written: batched (a writer window's records of a tenant in one event) or per-call (one event a call, which versions before 2026-11-28 read: while replicas that share a store are upgraded)")
	cpuprofile := fs.String("cpuprofile", "", "diagnostics: write a CPU profile of this process to the file until it stops")
	consoleURL := fs.String("console-url", env.str("console-url", "BATON_CONSOLE_URL", ""), "the console's public base URL (scheme://host[:port]) that sign-in links from POST /v1/admin/console-links start with; default: the admin request's own host")
	eventStreams := fs.Int64("event-streams", env.integer("event-streams", "BATON_EVENT_STREAMS", batonhttp.DefaultEventStreams), "how many GET /v1/events streams one tenant may hold open on this server at once")
	heapFloorMB := fs.Int64("gc-heap-floor-mb", env.integerFrom("gc-heap-floor-mb", "BATON_GC_HEAP_FLOOR_MB", DefaultHeapFloorMB, 0), "the smallest heap goal of the collector in MiB: no collection until the heap nears it (0: Go's GOGC alone)")
	connsPerClient := fs.Int64("max-connections-per-client", env.integerFrom("max-connections-per-client", "BATON_MAX_CONNECTIONS_PER_CLIENT", DefaultConnsPerClient, 0), "the most connections one client (an IPv4 address, an IPv6 /64) holds open at once; past it a connection is answered 429 and closed (0: no cap, e.g. behind a proxy that is every client)")
	metricsPublic := fs.Bool("metrics-public", env.boolean("metrics-public", "BATON_METRICS_PUBLIC", false), "serve GET /metrics without a key (a scraper on a private network); otherwise it takes an admin key")
	webhookAllowPrivate := fs.Bool("webhook-allow-private", env.boolean("webhook-allow-private", "BATON_WEBHOOK_ALLOW_PRIVATE", false), "let webhook endpoints be private, loopback, link-local and other internal addresses (development; off, such deliveries are refused at connect time)")
	logOpts := addLogFlags(fs, &env)
	memprofile := fs.String("memprofile", "", "diagnostics: write a heap profile (what was allocated, and where, since start) to the file when it stops")
	if err := env.parse(fs, args); err != nil {
		return err
	}
	if *addr == "" {
		// net.Listen takes "" for every interface at a port of the
		// system's choosing, where the default is the loopback's.
		return fmt.Errorf("--addr is empty; give HOST:PORT, such as %s (or :8080 for every interface)", defaultAddr)
	}
	if *heapFloorMB < 0 || *heapFloorMB > MaxHeapFloorMB {
		return fmt.Errorf("%s is %d; it must be from 0 to %d", setting(fs, "gc-heap-floor-mb", "BATON_GC_HEAP_FLOOR_MB"), *heapFloorMB, MaxHeapFloorMB)
	}
	for _, l := range []struct {
		flag, env string
		v         int64
	}{{"max-body", "BATON_MAX_BODY_BYTES", *maxBody}, {"max-model-body", "BATON_MAX_MODEL_BODY_BYTES", *maxModelBody}, {"model-bodies", "BATON_MODEL_BODIES_BYTES", *modelBodies}} {
		if l.v < 1 { // as the variable is: 0 was taken as the default without a word
			return fmt.Errorf("--%s (%s) is %d; it must be a positive number of bytes", l.flag, l.env, l.v)
		}
	}
	// Unset, it is 0: the front takes half of --model-bodies.
	perTenantGiven := false
	fs.Visit(func(f *flag.Flag) { perTenantGiven = perTenantGiven || f.Name == "model-bodies-per-tenant" })
	if *modelBodiesPerTenant < 0 || *modelBodiesPerTenant == 0 && perTenantGiven {
		return fmt.Errorf("--model-bodies-per-tenant (BATON_MODEL_BODIES_PER_TENANT_BYTES) is %d; it must be a positive number of bytes", *modelBodiesPerTenant)
	}
	if *consoleURL != "" {
		if err := checkBaseURL("--console-url (BATON_CONSOLE_URL)", *consoleURL); err != nil {
			return err
		}
	}
	if *connsPerClient < 0 || *connsPerClient > MaxConnsPerClient {
		return fmt.Errorf("--max-connections-per-client (BATON_MAX_CONNECTIONS_PER_CLIENT) is %d; it must be from 0 (no cap) to %d", *connsPerClient, MaxConnsPerClient)
	}
	if *eventStreams < 1 || *eventStreams > maxEventStreams {
		return fmt.Errorf("--event-streams (BATON_EVENT_STREAMS) is %d; it must be from 1 to %d", *eventStreams, maxEventStreams)
	}
	if *streamIdle < time.Second {
		return fmt.Errorf("--stream-idle (BATON_STREAM_IDLE) is %v; it must be at least 1s", *streamIdle)
	}
	if *usageLinger < time.Millisecond || *usageLinger > gateway.MaxUsageLinger {
		return fmt.Errorf("--usage-linger (BATON_USAGE_LINGER) is %v; it must be from 1ms to %v", *usageLinger, gateway.MaxUsageLinger)
	}
	if *usageEvents != usageBatched && *usageEvents != usagePerCall {
		return fmt.Errorf("--usage-events (BATON_USAGE_EVENTS) is %q; it must be %s or %s", *usageEvents, usageBatched, usagePerCall)
	}
	if *idemRetention < ledger.DefaultIdempotencyRetention {
		// A client may retry a day later and must still get its answer.
		return fmt.Errorf("--idempotency-retention (BATON_IDEMPOTENCY_RETENTION) is %v; it must be at least %v", *idemRetention, ledger.DefaultIdempotencyRetention)
	}
	// A migrated directory served on the embedded store by default (its
	// --store forgotten) would serve events.db, the backup the migration
	// left, and take writes there that no replica sees.
	if !storeOpts.chosen(fs) && migrated(*data) {
		if replicaDir(*data) {
			return replicaError(*data, "Serve it with --store kurrent --kurrentdb-url URL (or BATON_STORE, BATON_KURRENTDB_URL); an embedded store goes in a --data of its own")
		}
		return fmt.Errorf("the read models in %s follow KurrentDB (%s): the directory was migrated, and its %s is the store migrated from, which no server has read since. Serve it with --store kurrent --kurrentdb-url URL (or BATON_STORE, BATON_KURRENTDB_URL); to go back to the embedded store on purpose (the events written to KurrentDB since the migration are not in it), start with --store bolt",
			*data, readModelMarker, bolt.FileName)
	}
	if err := storeOpts.check(); err != nil {
		return err
	}
	if err := logOpts.check(*data); err != nil {
		return err
	}
	named := os.Getenv("BATON_PROVIDERS_FILE") != ""
	fs.Visit(func(f *flag.Flag) { named = named || f.Name == "providers" })
	catalog, err := gateway.NewCatalog(gateway.Config{ProvidersFile: *providers, ProvidersRequired: named})
	if err != nil {
		return err
	}
	// Try the address before anything is created: a port in use fails
	// the start before the data directory, its store and its log are
	// created or opened (and before the first key is made and printed).
	// It is taken for good once the start-up is done: held through it, it
	// would accept connections nothing answers until then, which a load
	// balancer sends there rather than to another replica.
	listen := func() (net.Listener, error) {
		ln, err := net.Listen("tcp", *addr)
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("%w (another process listens there, perhaps another baton: stop it, or serve on another address with --addr HOST:PORT, BATON_ADDR, or make run ADDR=HOST:PORT)", err)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", settingIs(fs, "addr", "BATON_ADDR", *addr), err)
		}
		return ln, nil
	}
	probe, err := listen()
	if err != nil {
		return err
	}
	probe.Close()
	stopProfile, err := profile.StartCPU(*cpuprofile)
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err) // as --memprofile says it
	}
	defer stopProfile()
	if *memprofile != "" {
		// Made now: a file that cannot be written was found out at the
		// stop, with the profile of the whole run.
		f, err := os.Create(*memprofile)
		if err != nil {
			return fmt.Errorf("--memprofile: %w", err)
		}
		defer writeHeapProfile(f, stderr)
	}
	// The log's lines leave in batches (logwriter.go); what is gathered
	// goes out before serve returns.
	lw := newLogWriter(stderr, logWindow)
	defer lw.Flush()
	stderr = lw
	log := zerolog.New(lw).With().Timestamp().Logger()

	// With KurrentDB the events live there and --data holds only this
	// process's read models, so several replicas can share one store.
	store, err := storeOpts.open(ctx, *data, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := store.Close(); err != nil {
			log.Error().Err(err).Msg("closing the event store")
		}
	}()
	// Every append is timed for the metrics: the wrapper sits where the
	// store is opened, so no writer needs to know of it.
	mx := metrics.New()
	store = timed.New(store, mx.ObserveAppend)
	handoffs := projections.NewHandoffs()
	handoffs.OnQuarantine = func(id string, q projections.Quarantine) {
		log.Error().Str("handoffId", id).Uint64("seq", q.Seq).Str("eventId", q.EventID).Str("type", q.Type).Str("reason", q.Reason).
			Msg("handoff quarantined: an event of its stream cannot be applied; its views stop before it, other handoffs go on (run baton ledger verify on it)")
	}
	proj, err := openReadModels(ctx, *data, *storeOpts.kind, store, log, handoffs, projections.Keys{}, projections.WebhookDeliveries{})
	if err != nil {
		return err
	}
	defer proj.Close()
	// Quarantined handoffs are folded again first: a newer Baton may apply
	// what an older one refused.
	released, err := proj.Recheck(ctx, handoffs)
	if err != nil {
		return fmt.Errorf("read models: rechecking quarantined handoffs: %w", err)
	}
	for _, id := range released {
		log.Info().Str("handoffId", id).Msg("handoff released from quarantine: its stream folds now, or is gone")
	}
	if err := proj.CatchUp(ctx); err != nil {
		return fmt.Errorf("read models: %w", err)
	}
	proj.OnFull = func(err error) {
		log.Error().Err(err).Msg("read models: the disk is full; reads wait for them (503 read_model_behind after 2 s) and they go on by themselves once space is freed")
	}
	if _, n, err := proj.Quarantined(0); err == nil && n > 0 {
		log.Warn().Int("quarantinedHandoffs", n).Msg("handoffs quarantined: events of their streams cannot be applied (docs/operations.md)")
	}
	tl, err := logOpts.open(ctx, *data, *storeOpts.kind, store, log)
	if err != nil {
		return err // it says "transparency log:"
	}
	if tl != nil {
		defer tl.Close()
	}
	ln, err := listen()
	if err != nil {
		return err
	}
	defer ln.Close() // on the way out before serving; Serve closes it too
	if *connsPerClient > 0 {
		capped := connlimit.New(ln, int(*connsPerClient)).(*connlimit.Listener)
		var saidMu sync.Mutex
		var said time.Time
		capped.OnRefused = func(client netip.Prefix) {
			saidMu.Lock()
			defer saidMu.Unlock()
			if time.Since(said) >= time.Minute {
				said = time.Now()
				log.Warn().Str("client", client.String()).Int64("max", *connsPerClient).
					Msg("a client was refused a connection: it holds the most one client may (--max-connections-per-client; said once a minute)")
			}
		}
		ln = capped
	}
	scanner, err := newScanner()
	if err != nil {
		return err
	}
	// The catalog's sync and health results and the tenants' budgets and
	// spending are events: catch up before serving, then follow.
	budgets := gateway.NewBudgets(nil)
	if ex, ok := store.(eventstore.Exclusive); !ok || !ex.Exclusive() {
		// Other replicas share this store: budget holds go through it.
		budgets.UseStore(store, func(err error) { log.Warn().Err(err).Msg("budget hold") })
	}
	follower := &gateway.Follower{Store: store, Appliers: []gateway.Applier{catalog, budgets},
		OnError: func(ev eventstore.RecordedEvent, err error) {
			log.Error().Str("stream", ev.StreamID).Uint64("revision", ev.Revision).Err(err).Msg("gateway state: event skipped")
		}}
	if err := follower.CatchUp(ctx); err != nil {
		return fmt.Errorf("gateway state: %w", err)
	}
	mx.ReadModel("gateway", follower.Position)
	if tl != nil {
		mx.ReadModel("translog", tl.Position)
	}
	// After every setting was checked: a start that stops on a bad one
	// must not have created (and printed, once) the first key.
	if err := bootstrapKey(ctx, ledger.NewKeys(store), proj, ln.Addr().String(), stderr); errors.Is(err, errStartStopped) {
		log.Info().Msg("shutting down: stopped while the first key was made, which is printed above")
		return nil
	} else if err != nil {
		return err
	}
	warnNoAdminKey(proj, *storeOpts.kind, log)
	// A store new at this start has its first event now: the markers name
	// it, so that another store copied in later is told apart.
	if err := markStore(ctx, *data, *storeOpts.kind, store, tl != nil); err != nil {
		return err
	}

	// Start-up (rule compilation, configuration parsing, catching up)
	// leaves garbage behind; hand it back to the OS before serving.
	runtime.GC()
	debug.FreeOSMemory()
	if pct, ok := serveGCPercent(os.Getenv); ok {
		debug.SetGCPercent(pct)
	}
	stopHeapFloor := startHeapFloor(uint64(*heapFloorMB)<<20, currentGCPercent())
	defer stopHeapFloor()

	services := ledger.New(store, ledger.Options{Redactor: scanner, IdempotencyRetention: *idemRetention, WebhookAllowPrivate: *webhookAllowPrivate})
	front := batonhttp.NewServer(batonhttp.Config{
		Store: store, Ledger: services, Projections: proj, Scanner: scanner, Catalog: catalog, Budgets: budgets, StreamIdle: *streamIdle, UsageLinger: *usageLinger, UsagePerCall: *usageEvents == usagePerCall, EventStreams: int(*eventStreams), ConsoleURL: *consoleURL, Log: log, Version: version, MaxBody: *maxBody, MaxModelBody: *maxModelBody, ModelBodies: *modelBodies, ModelBodiesPerTenant: *modelBodiesPerTenant,
		Metrics: mx, MetricsPublic: *metricsPublic, TransparencyLog: tl,
	})
	defer front.Close() // after Shutdown: appends the usage events it still holds
	srv := newHTTPServer(front.Handler())
	srv.RegisterOnShutdown(front.StopWaits)
	// Every request's context descends from this one, so that requests
	// still running when a stop's grace ends can be ended (and their model
	// calls settled and billed) before the process exits.
	reqCtx, cutRequests := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cutRequests(nil)
	stoppable := batonhttp.WithStop(reqCtx)
	srv.BaseContext = func(net.Listener) context.Context { return stoppable }
	// The read models and the follower stop after the HTTP server has shut
	// down (the deferred stopRunner), not with ctx: stopped with it, they
	// could end first and a clean stop would read as their failure.
	runCtx, stopRunner := context.WithCancel(context.WithoutCancel(ctx))
	runnerDone := make(chan error, 1)
	go func() { runnerDone <- proj.Run(runCtx) }()
	followerDone := make(chan error, 1)
	go func() { followerDone <- follower.Run(runCtx) }()
	// The log's follower and signer end with runCtx; a failure ends serve.
	logFailed := make(chan error, 2)
	var logWG sync.WaitGroup
	if tl != nil {
		logWG.Add(2)
		go func() {
			defer logWG.Done()
			if err := tl.Run(runCtx); err != nil {
				logFailed <- err
			}
		}()
		go func() {
			defer logWG.Done()
			if err := tl.RunSigner(runCtx); err != nil {
				logFailed <- err
			}
		}()
	}
	timersDone := make(chan struct{})
	go func() { defer close(timersDone); timerLoop(services.Handoffs, proj, log).Run(runCtx) }()
	// Webhook deliveries: every replica runs a dispatcher; the claims in
	// each delivery's stream make one of them send each attempt.
	dispatcher := webhook.New(webhook.Config{Store: store, Webhooks: services.Webhooks, AllowPrivate: *webhookAllowPrivate, Log: log, OnAttempt: metrics.WebhookAttempt})
	dispatcherDone := make(chan error, 1)
	go func() { dispatcherDone <- dispatcher.Run(runCtx) }()
	srv.RegisterOnShutdown(dispatcher.Drain) // no attempt begun in the grace, to be cut off
	defer func() {
		stopRunner()
		<-runnerDone
		<-followerDone
		<-timersDone
		<-dispatcherDone
		logWG.Wait()
	}()
	// SIGHUP too (the terminal it ran in closed): a stop, gracefully, as
	// Baton reloads nothing.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// A second signal during the grace ends the grace (Ctrl-C twice, a
	// supervisor that will not wait): the requests still running are ended
	// and billed at once, as when the grace runs out.
	again := make(chan os.Signal, 1)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info().Str("addr", ln.Addr().String()).Str("store", storeOpts.describe(*data)).Str("data", *data).Str("version", version).
		Str("providersFile", providersFileUsed(*providers)).Strs("modelProviders", configuredProviders(catalog)).Msg("baton serving")

	// A part that stops on a fault stops the server as a signal does, the
	// requests in flight answered, and serve then returns the fault: cut
	// off at once, they got no answer (a callback recorded, its client
	// not told; a model call neither told nor billed).
	var fault error
	select {
	case err := <-errc:
		return err
	case err := <-runnerDone:
		runnerDone <- err
		fault = fmt.Errorf("read models stopped: %w", err)
	case err := <-followerDone:
		followerDone <- err
		fault = fmt.Errorf("gateway state follower stopped: %w", err)
	case err := <-dispatcherDone:
		dispatcherDone <- err
		fault = fmt.Errorf("webhook dispatcher stopped: %w", err)
	case err := <-logFailed:
		fault = fmt.Errorf("transparency log stopped: %w", err)
	case <-ctx.Done():
	}
	if fault != nil {
		log.Error().Err(fault).Msg("shutting down: a part of the server stopped on a fault")
	} else {
		log.Info().Msg("shutting down")
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	signal.Notify(again, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(again)
	go func() {
		select {
		case <-again:
			log.Warn().Msg("shutting down: a second signal ends the grace")
			cancel()
		case <-shutdownCtx.Done():
		}
	}()
	err = srv.Shutdown(shutdownCtx)
	if err == nil && !dispatcher.Settle(shutdownCtx) {
		log.Warn().Dur("grace", shutdownGrace).Msg("shutting down: webhook attempts still running after the grace are ended; they are made again once their claims run out (30 s)")
	}
	// A keyed answer (or release) whose write failed is written again in
	// the background: the store must not close under it while the grace
	// lasts.
	if err == nil && !services.Idempotency.Settle(shutdownCtx) {
		log.Warn().Dur("grace", shutdownGrace).Msg("shutting down: answers of keyed requests whose write failed are still not written after the grace; their keys stay in flight until their leases run out (10 minutes)")
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return errors.Join(fault, err)
	}
	// Requests still running after the grace (long model calls, streams)
	// are ended as a client's leaving ends them: each model call settles
	// and is billed for what was sent, and its usage is appended with the
	// rest when the front closes (deferred above).
	log.Warn().Dur("grace", shutdownGrace).Msg("shutting down: requests still running after the grace are ended; their model calls are billed for what was sent")
	cutRequests(batonhttp.ErrShuttingDown)
	cutCtx, cancelCut := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelCut()
	if err := srv.Shutdown(cutCtx); err != nil {
		srv.Close()
		log.Warn().Err(err).Msg("shutting down: requests still running when ended; their connections are closed")
	}
	return fault
}

// shutdownGrace is how long a stop (SIGINT, SIGTERM, SIGHUP) waits for requests
// in flight before it ends them.
var shutdownGrace = 15 * time.Second

// timerLoop fires the handoffs' deadlines from this replica's read models.
func timerLoop(h *ledger.Handoffs, proj *projections.Runner, log zerolog.Logger) *ledger.TimerLoop {
	return &ledger.TimerLoop{
		Handoffs: h,
		Due:      proj.DueHandoffs,
		Changed:  proj.Changed,
		Now:      time.Now,
		OnFired: func(id, kind string) {
			metrics.TimerFired(kind)
			log.Info().Str("handoffId", id).Str("timer", kind).Msg("deadline recorded")
		},
		OnError: func(id string, err error) {
			log.Error().Str("handoffId", id).Err(err).Msg("deadline not recorded; retrying")
		},
	}
}

func storeCheck(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("store check", flag.ContinueOnError)
	data := fs.String("data", dataDirDefault(), "data directory")
	kind := fs.String("store", envOr("BATON_STORE", storeBolt), "bolt: the check reads the embedded store's file only; on a migrated directory, --store bolt checks the backup the migration left on purpose (or BATON_STORE)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *kind == storeKurrent:
		return fmt.Errorf("%s: store check reads the embedded store's file only; check the hash chains in KurrentDB with baton ledger verify --store kurrent --kurrentdb-url URL", settingIs(fs, "store", "BATON_STORE", *kind))
	case *kind != storeBolt:
		return fmt.Errorf("%s: store check reads the embedded store (bolt) only", settingIs(fs, "store", "BATON_STORE", *kind))
	case !(storeFlags{kind: kind}).chosen(fs) && migrated(*data) && replicaDir(*data):
		return replicaError(*data, "store check reads the embedded store's file only: check the hash chains in KurrentDB with baton ledger verify --store kurrent --kurrentdb-url URL")
	case !(storeFlags{kind: kind}).chosen(fs) && migrated(*data):
		// It checked the backup and said "ok" of it, as of the ledger.
		return fmt.Errorf("the read models in %s follow KurrentDB (%s): the directory was migrated, and its %s is the store migrated from, a backup no server has read since. store check reads the embedded store's file only: check the hash chains in KurrentDB with baton ledger verify --store kurrent --kurrentdb-url URL; to check the backup on purpose, give --store bolt",
			*data, readModelMarker, bolt.FileName)
	}
	if err := boltExists(*data, setting(fs, "data", "BATON_DATA_DIR")); err != nil {
		return err
	}
	// Read-only: a backup on a read-only file system, or in files this
	// user may only read, is checked too, and left as it was.
	rep, err := bolt.CheckDir(ctx, *data, bolt.Options{})
	if errors.Is(err, eventstore.ErrLocked) {
		return fmt.Errorf("%w; the check reads the whole file, and runs while no baton serves it: stop the server first", err)
	}
	if err != nil {
		return damagedStoreHelp(err, *data, false)
	}
	journaled := ""
	if rep.Journaled > 0 {
		journaled = fmt.Sprintf(", and %d more in %s, which the next start moves into the file", rep.Journaled, bolt.JournalFileName)
	}
	fmt.Fprintf(stdout, "%s: ok, %d events in %d streams, %d bytes in use%s\n", filepath.Join(*data, bolt.FileName), rep.Events, rep.Streams, rep.Bytes, journaled)
	// The transparency log's copy, when there is one: a start rebuilds a
	// missing one, never one whose hashes were changed on disk.
	logPath := filepath.Join(*data, translog.FileName)
	if _, err := os.Stat(logPath); err != nil {
		return nil
	}
	n, err := translog.CheckFile(logPath)
	if errors.Is(err, berrors.ErrTimeout) {
		return err // held by a server: sound, and not to be moved aside
	}
	if err != nil {
		return fmt.Errorf("%w (stop the server, move %s aside and start it: the log is rebuilt from the store, to the root its checkpoints sign if the store is unchanged)", err, logPath)
	}
	fmt.Fprintf(stdout, "%s: ok, %d entries, every hash recomputed from its entry\n", logPath, n)
	return nil
}

// damagedStoreHelp adds to an error that says the embedded store's file
// is damaged what the operator does about it; check: name the command that
// says what is damaged.
func damagedStoreHelp(err error, data string, check bool) error {
	if !errors.Is(err, eventstore.ErrCorrupt) {
		return err
	}
	first := ""
	if check {
		first = fmt.Sprintf("`baton store check --data %s` says what is damaged. ", data)
	}
	return fmt.Errorf("%w\nThe event store's file is damaged. %sStop every process on this data directory, move %s and %s aside (keep them: their events since the last backup are not elsewhere) and put the last backup of both in their place (docs/operations.md, Backups)",
		err, first, bolt.FileName, bolt.JournalFileName)
}

// consoleHint is the make console-link line that asks this server, which
// listens on addr, for a link. A wildcard address (--addr :8080, which
// listens as [::]:8080) is asked on the loopback, which it serves too:
// zsh would take ADDR=[::]:8080 for a pattern.
func consoleHint(addr string) string {
	addr = loopbackFor(addr)
	if addr == defaultAddr {
		return "make console-link NAME=you@example.com"
	}
	return "make console-link NAME=you@example.com ADDR=" + addr // the link is asked of this server, where it listens
}

// loopbackFor is the listen address addr as a client on this machine
// reaches it: a wildcard one (":8080", "0.0.0.0:8080", "[::]:8080"), no
// address a browser opens, is reached on the loopback, which it serves too.
func loopbackFor(addr string) string {
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			return net.JoinHostPort("127.0.0.1", port)
		}
	}
	return addr
}

// bootstrapKey creates the first admin key on a store that has none and
// prints it once, outside the structured log, so `make run` on a fresh
// machine hands the newcomer a working key. The key is appended only if the
// keys stream does not exist yet: of several replicas starting together on
// an empty store, exactly one creates (and prints) it.
//
// A stop (SIGINT, SIGTERM, SIGHUP) that comes while the key is made waits
// until it is printed, and then ends the start-up (errStartStopped): taken
// at once, it left a key made and never shown, and a store with a key gets
// no other. The key is printed before the read models catch up with it, so
// that their failure does not lose it either.
func bootstrapKey(ctx context.Context, keys *ledger.Keys, proj *projections.Runner, addr string, stderr io.Writer) error {
	n, err := proj.KeyCount()
	if err != nil || n > 0 {
		return err
	}
	held := make(chan os.Signal, 1)
	signal.Notify(held, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(held)
	k, created, err := keys.Bootstrap(ctx)
	if err != nil && k.Key != "" {
		// The store did not say whether it recorded the key: shown, it is
		// the operator's if it was; if not, the next start makes another.
		fmt.Fprintf(stderr, "\n  No API keys existed, so Baton tried to create an admin key for tenant %q, and the store\n  did not answer whether it recorded it (%v).\n  If it did, this is the key, shown only this once (its id is %s):\n\n    export BATON_API_KEY=%s\n\n  If it did not, the next start creates and prints another.\n\n", k.Tenant, err, k.KeyID, k.Key)
		if f, ok := stderr.(interface{ Flush() }); ok {
			f.Flush()
		}
		return err
	}
	if err != nil {
		return err
	}
	if created {
		printFirstKey(k, addr, stderr)
		if f, ok := stderr.(interface{ Flush() }); ok {
			f.Flush() // gathered by the log writer, it would go with the process
		}
	}
	// Once Stop returns, a signal that came before it is in held (it is
	// handed on after the handler ran), and any later one takes its
	// default course.
	signal.Stop(held)
	select {
	case sig := <-held:
		return fmt.Errorf("%w (%v)", errStartStopped, sig)
	default:
	}
	return proj.CatchUp(ctx)
}

// errStartStopped is a stop signal that came during the start-up and was
// held until the first key was printed.
var errStartStopped = errors.New("stopped during the start-up")

// printFirstKey prints the first admin key, once.
func printFirstKey(k ledger.NewKey, addr string, stderr io.Writer) {
	link := consoleHint(addr)
	fmt.Fprintf(stderr, "\n  No API keys existed, so Baton created an admin key for tenant %q.\n  It is shown only this once (Baton stores its hash); its id is %s:\n\n    export BATON_API_KEY=%s\n\n  Create more with POST /v1/admin/keys, or `baton keys create --tenant NAME` while stopped;\n  GET /v1/admin/keys lists their ids, which DELETE /v1/admin/keys/{keyId} revokes.\n  Open the console (/console/) with a one-time link: %s\n  (POST /v1/admin/console-links with this key; docs/console.md).\n\n", k.Tenant, k.KeyID, k.Key, link)
}

// warnNoAdminKey says so when keys exist but none is an admin key that
// works (the first made without --admin, or the last admin key revoked):
// the admin routes then refuse everyone, and only the command line can
// make one; the bootstrap key is made only on a store with no key at all.
func warnNoAdminKey(proj *projections.Runner, kind string, log zerolog.Logger) {
	recs, err := proj.KeyList("")
	if err != nil || len(recs) == 0 || slices.ContainsFunc(recs, func(k domain.KeyRecord) bool { return k.Admin && k.RevokedAt == nil }) {
		return
	}
	how := "stop Baton and run `baton keys create --tenant default --admin`"
	if kind == storeKurrent {
		how = "run `baton keys create --store kurrent --tenant default --admin` (it works while the servers run)"
	}
	log.Warn().Int("keys", len(recs)).Msg("no admin key: every key is a tenant's or revoked, so the admin routes (keys, budgets, reviews, console links, /metrics) refuse everyone; to make one, " + how)
}

// The values of --usage-events.
const (
	usageBatched = "batched"
	usagePerCall = "per-call"
)

// setting names a setting as its operator gave it: --name when the
// command line has it (it wins) or nothing set it, else the variable its
// default was read from. An error about the value names what was set.
func setting(fs *flag.FlagSet, name, variable string) string {
	given := false
	if fs != nil {
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	}
	if !given && os.Getenv(variable) != "" {
		return variable
	}
	return "--" + name
}

// settingIs is a setting and its value as its operator gave them:
// `--store "postgres"` or `BATON_STORE="postgres"`.
func settingIs(fs *flag.FlagSet, name, variable, value string) string {
	if s := setting(fs, name, variable); s == variable {
		return fmt.Sprintf("%s=%q", variable, value)
	}
	return fmt.Sprintf("--%s %q", name, value)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// envVars gives flags their defaults from BATON_ variables and keeps the
// values it could not use: the command refuses them (err) rather than run
// on a default its operator did not choose, unless the flag was given.
// parse names each variable in its flag's help.
type envVars struct {
	bad  map[string]error  // by flag name
	vars map[string]string // the variable each flag's default is read from
}

// from records that flagName's default is read from variable.
func (e *envVars) from(flagName, variable string) {
	if e.vars == nil {
		e.vars = map[string]string{}
	}
	e.vars[flagName] = variable
}

// str reads a string for flagName: the variable when set, else def.
func (e *envVars) str(flagName, variable, def string) string {
	e.from(flagName, variable)
	return envOr(variable, def)
}

func (e *envVars) refuse(flagName string, err error) {
	if e.bad == nil {
		e.bad = map[string]error{}
	}
	e.bad[flagName] = err
}

// duration reads a positive duration (e.g. "50ms", "36h") for flagName.
func (e *envVars) duration(flagName, variable string, def time.Duration) time.Duration {
	e.from(flagName, variable)
	v := os.Getenv(variable)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		e.refuse(flagName, fmt.Errorf("%s=%q is not a positive duration with its unit (such as 50ms, 10m or 36h); fix it, unset it or give --%s", variable, v, flagName))
		return def
	}
	return d
}

// boolean reads true or false (1, t, TRUE, 0, f, False...) for flagName.
func (e *envVars) boolean(flagName, variable string, def bool) bool {
	e.from(flagName, variable)
	v := os.Getenv(variable)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.refuse(flagName, fmt.Errorf("%s=%q is not true or false; fix it, unset it or give --%s", variable, v, flagName))
		return def
	}
	return b
}

// integer reads a positive whole number for flagName.
func (e *envVars) integer(flagName, variable string, def int64) int64 {
	return e.integerFrom(flagName, variable, def, 1)
}

// integerFrom is integer for numbers from least up.
func (e *envVars) integerFrom(flagName, variable string, def, least int64) int64 {
	e.from(flagName, variable)
	v := os.Getenv(variable)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < least {
		what := "a positive whole number"
		if least == 0 {
			what = "a whole number (0 or more)"
		}
		e.refuse(flagName, fmt.Errorf("%s=%q is not %s; fix it, unset it or give --%s", variable, v, what, flagName))
		return def
	}
	return n
}

// parse parses args into fs, then refuses the variables that could not
// be used (err).
func (e *envVars) parse(fs *flag.FlagSet, args []string) error {
	for name, v := range e.vars {
		if f := fs.Lookup(name); f != nil && !strings.Contains(f.Usage, v) {
			f.Usage += " (or " + v + ")"
		}
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return e.err(fs)
}

// err names every variable that could not be used and whose flag fs did
// not get: a flag given on the command line wins over its variable.
func (e *envVars) err(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(e.bad)) {
		if !given[name] {
			errs = append(errs, e.bad[name])
		}
	}
	return errors.Join(errs...)
}

// providersFileUsed names the providers file that was read, or says none
// was (the default path is skipped when absent).
func providersFileUsed(path string) string {
	if _, err := os.Stat(path); err != nil {
		return "none"
	}
	return path
}

// configuredProviders lists the providers whose models can be called
// (keys set, or no key needed), so an operator sees at start which ones
// Baton will route to.
func configuredProviders(c *gateway.Catalog) []string {
	var names []string
	for _, m := range c.List() {
		if m.Configured && !slices.Contains(names, m.Provider) {
			names = append(names, m.Provider)
		}
	}
	slices.Sort(names)
	return names
}

// DefaultServeGOGC is the GC percent `baton serve` runs with unless GOGC is
// set: the heap may grow to three times what is live, not twice, as Go's
// default collected Baton's small heap too often (docs/operations.md, Memory).
const DefaultServeGOGC = 200

// serveGCPercent is the GC percent serve sets: DefaultServeGOGC, unless
// the operator chose one with GOGC (which the runtime has applied).
func serveGCPercent(getenv func(string) string) (int, bool) {
	if getenv("GOGC") != "" {
		return 0, false
	}
	return DefaultServeGOGC, true
}

// currentGCPercent is the collector's percent now (negative: off).
func currentGCPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// writeHeapProfile writes the heap profile (allocations since start) to
// f and closes it; a failure is only reported, as the server has already
// stopped.
func writeHeapProfile(f *os.File, stderr io.Writer) {
	runtime.GC() // the profile counts what the last collection saw
	if err := errors.Join(pprof.Lookup("allocs").WriteTo(f, 0), f.Close()); err != nil {
		fmt.Fprintf(stderr, "memprofile: %v\n", err)
	}
}

// checkBaseURL refuses a base URL (the console's, or a server's a command
// reads) that is not scheme://host[:port] over http or https: the links
// made with it would lead nowhere, and a request to it fails in the URL
// parser's words.
func checkBaseURL(setting, v string) error {
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s is %q; it must be an http or https base URL, scheme://host[:port]", setting, v)
	} else if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.HasSuffix(v, "#") {
		// Paths go after the base: they would go into its query.
		return fmt.Errorf("%s is %q; it must be a base URL with no query or fragment, scheme://host[:port][/path]", setting, v)
	}
	return nil
}
