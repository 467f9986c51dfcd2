// Package http is Baton's HTTP front: the gorilla/mux router, request ids,
// access logs, authentication, error rendering and the handlers. Handlers
// stay thin: decode, call the domain or gateway, encode.
package http

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"
	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/domain/contextpack"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/eventstore/translog"
	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/tasks"
	"github.com/batonhq/baton/http/metrics"
	"github.com/batonhq/baton/projections"
)

// SecretScanner finds secrets in a JSON body under the given pointer
// prefixes, naming rule and place, never the secret; ScanText in one
// header's value, naming the rule.
type SecretScanner interface {
	Scan(doc []byte, roots ...string) ([]domain.SecretFinding, error)
	ScanText(s string) (ruleID string, found bool)
}

// Config is what the front needs.
type Config struct {
	Store eventstore.Store
	// Ledger is the command side; NewServer builds it on Store when nil.
	Ledger      *ledger.Services
	Projections *projections.Runner
	Scanner     SecretScanner
	Catalog     *gateway.Catalog // model gateway; nil disables the gateway routes
	Budgets     *gateway.Budgets // per-tenant spending limits; none when nil
	Tasks       *tasks.Registry  // generation task types; the embedded ones when nil
	// Usage appends usage events off the request path; NewServer starts
	// one when nil, and Close stops it.
	Usage   *gateway.UsageWriter
	Log     zerolog.Logger
	Version string
	MaxBody int64 // request body limit; DefaultMaxBody when 0
	// MaxModelBody is the body limit of the model calls (chat completions,
	// messages): a long agent session sends megabytes of history.
	// DefaultMaxModelBody when 0.
	MaxModelBody int64
	// ModelBodies bounds the bytes of model-call bodies held at once
	// (DefaultModelBodies when 0): one that does not fit is 503.
	ModelBodies int64
	// ModelBodiesPerTenant is the most of ModelBodies one tenant's calls
	// hold at once (half of it when 0): past it, 429.
	ModelBodiesPerTenant int64
	// StreamIdle ends a streamed model call whose upstream sends nothing
	// for this long (DefaultStreamIdle when 0): before the first byte the
	// next model of the chain takes over, after it the client gets the
	// stream's error event.
	StreamIdle time.Duration
	// UsageLinger is the usage writer's batching window
	// (gateway.DefaultUsageLinger when 0) when NewServer starts the writer.
	UsageLinger time.Duration
	// UsagePerCall writes one UsageRecorded event a call instead of a
	// window's batch (gateway.UsageWriter.PerCall).
	UsagePerCall bool
	// Metrics is the registry GET /metrics serves and the requests are
	// counted in; NewServer builds one when nil. It serves one Server.
	Metrics *metrics.Metrics
	// MetricsPublic serves /metrics without a key (a scraper on a private
	// network); otherwise it takes an admin key.
	MetricsPublic bool
	// EventsPing is how often GET /v1/events sends a heartbeat comment on
	// a stream with nothing to send (DefaultEventsPing when 0).
	EventsPing time.Duration
	// EventStreams is how many GET /v1/events streams one tenant may hold
	// open on this server at once (DefaultEventStreams when 0); past it,
	// 429 too_many_streams.
	EventStreams int
	// Log is the transparency log its routes serve (/v1/log/..., the
	// receipts); nil leaves them out.
	TransparencyLog *translog.Log
	// ConsoleURL is the console's public base URL (scheme and host, as
	// people's browsers reach it) that sign-in links start with; when
	// empty, a link is made from the admin request's own host.
	ConsoleURL string
}

// DefaultStreamIdle is gateway.DefaultStreamIdle.
const DefaultStreamIdle = gateway.DefaultStreamIdle

// Server holds what the handlers need.
type Server struct {
	unknownKeys unknownKeys // keys refused a moment ago
	store       eventstore.Store
	// heads shares the health check's reads of the store's head: it takes
	// no key, and a read each made a flood of checks as many store round
	// trips (on KurrentDB, reads of $all).
	heads     *eventstore.SharedHead
	proj      *projections.Runner
	scanner   SecretScanner
	catalog   *gateway.Catalog
	budgets   *gateway.Budgets
	tasks     *tasks.Registry
	usage     *gateway.UsageWriter
	caller    *gateway.Caller
	ownsUsage bool
	// contextLoader renders a tenant's context packet as prompt text.
	contextLoader func(ctx context.Context, tenant, id string) (string, error)
	log           zerolog.Logger
	metrics       *metrics.Metrics
	version       string
	maxBody       int64
	maxModelBody  int64
	bodies        *bodyBound
	streamIdle    time.Duration
	ledger        *ledger.Services
	flashes       consoleFlashes // refused console forms, for the page after the redirect
	router        *mux.Router
	// posts holds the model fronts' POST paths, served without the
	// router's walk over every route: that walk cost about 30 µs of a
	// call's first byte on an idle core.
	posts map[string]postRoute
	// stopWaits is closed at shutdown: waiting ledger reads answer at once
	// rather than hold the server's shutdown for their whole wait.
	stopWaits chan struct{}
	stopOnce  sync.Once
	// stopCtx ends with stopWaits: the event streams end at shutdown.
	stopCtx context.Context
	stopAll context.CancelFunc
	// The event streams (GET /v1/events): heartbeat interval, per-tenant
	// bound, open streams by tenant, and the contracts they have met.
	eventsPing   time.Duration
	eventStreams int
	streamsMu    sync.Mutex
	streams      map[string]int
	tlog         *translog.Log // the transparency log; nil when off
	contracts    contractCache
	consoleURL   string
}

// NewServer builds the router.
func NewServer(cfg Config) *Server {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxModelBody <= 0 {
		cfg.MaxModelBody = DefaultMaxModelBody
	}
	if cfg.ModelBodies <= 0 {
		cfg.ModelBodies = DefaultModelBodies
	}
	if cfg.ModelBodiesPerTenant <= 0 {
		cfg.ModelBodiesPerTenant = cfg.ModelBodies / 2
	}
	if cfg.Budgets == nil {
		cfg.Budgets = gateway.NewBudgets(nil)
	}
	ownsUsage := cfg.Usage == nil
	if ownsUsage {
		log, budgets := cfg.Log, cfg.Budgets
		cfg.Usage = gateway.NewUsageWriter(cfg.Store, func(id uuid.UUID, rec gateway.UsageRecord, err error) {
			if !eventstore.MayHaveCommitted(err) {
				budgets.Forget(id) // the event will not come back: nothing to skip
			}
			log.Error().Str("requestId", rec.RequestID).Str("tenant", rec.Tenant).Err(err).Msg("usage not recorded")
		})
		if cfg.UsageLinger > 0 {
			cfg.Usage.Linger = cfg.UsageLinger
		}
		cfg.Usage.PerCall = cfg.UsagePerCall
	}
	if cfg.Tasks == nil {
		reg, err := tasks.Default()
		if err != nil {
			panic(err) // the embedded types are checked by the tests: a broken build
		}
		cfg.Tasks = reg
	}
	if cfg.Ledger == nil {
		red, _ := cfg.Scanner.(contextpack.Redactor)
		cfg.Ledger = ledger.New(cfg.Store, ledger.Options{Redactor: red})
	}
	if cfg.StreamIdle <= 0 {
		cfg.StreamIdle = DefaultStreamIdle
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	cfg.Metrics.Store(cfg.Store)
	heads := &eventstore.SharedHead{Store: cfg.Store}
	if cfg.Projections != nil {
		cfg.Metrics.Projections(cfg.Projections)
		heads = cfg.Projections.Heads() // authentication's: one read in flight for both
	}
	if cfg.EventsPing <= 0 {
		cfg.EventsPing = DefaultEventsPing
	}
	if cfg.EventStreams <= 0 {
		cfg.EventStreams = DefaultEventStreams
	}
	s := &Server{stopWaits: make(chan struct{}), eventsPing: cfg.EventsPing, eventStreams: cfg.EventStreams, streams: map[string]int{},
		budgets: cfg.Budgets, tasks: cfg.Tasks, usage: cfg.Usage, ownsUsage: ownsUsage, store: cfg.Store, heads: heads, proj: cfg.Projections, scanner: cfg.Scanner, catalog: cfg.Catalog, log: cfg.Log, version: cfg.Version,
		maxBody: cfg.MaxBody, maxModelBody: cfg.MaxModelBody, bodies: &bodyBound{max: cfg.ModelBodies, share: cfg.ModelBodiesPerTenant}, streamIdle: cfg.StreamIdle, ledger: cfg.Ledger, router: mux.NewRouter().SkipClean(true),
		posts: map[string]postRoute{}, metrics: cfg.Metrics, consoleURL: strings.TrimRight(cfg.ConsoleURL, "/"),
	}
	s.stopCtx, s.stopAll = context.WithCancel(context.Background())
	s.caller = &gateway.Caller{Budgets: cfg.Budgets, Usage: cfg.Usage, StreamIdle: cfg.StreamIdle, CommitAfter: func() time.Duration { return pingEvery },
		AutoTierSeen: func(provider, served string) {
			if served != "fast" && served != "priority" {
				s.log.Warn().Str("provider", provider).Str("serviceTier", served).
					Msg("the provider serves calls that name no service tier at the standard tier again; such calls are held at the standard rates")
				return
			}
			s.log.Warn().Str("provider", provider).Str("serviceTier", served).
				Msg("the provider serves calls that name no service tier at a dearer one; such calls are now held at its rate (declare it to hold the first ones too: defaultServiceTier in the providers file, BATON_OPENAI_DEFAULT_SERVICE_TIER for the built-in openai provider)")
		},
		OverReported: func(provider, model, count string, reported, billed int) {
			if count == "output tokens" {
				s.log.Warn().Str("provider", provider).Str("model", model).Int("reportedOutputTokens", reported).Int("billedOutputTokens", billed).
					Msg("the provider reported more output tokens than the request allowed; the call is billed the request's bound")
				return
			}
			s.log.Warn().Str("provider", provider).Str("model", model).Str("count", count).Int("reported", reported).Int("billed", billed).
				Msg("the provider reported more than any call could use; the call is billed the count shown")
		}}
	rt := s.router
	rt.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.noRoute(w, r, domain.E("route", domain.KindNotFound, "not_found", "No route for %s %s.", r.Method, r.URL.Path))
	})
	rt.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allow := s.allowed(r)
		if allow == "" && !webSocketUpgrade(r) {
			// Only an unserved route matched the path (GET /v1/responses/):
			// a 405 offering no method is a 404.
			rt.NotFoundHandler.ServeHTTP(w, r)
			return
		}
		s.methodNotAllowed(w, r, allow)
	})
	post := func(path string, h http.HandlerFunc) {
		rt.HandleFunc(path, h).Methods(http.MethodPost)
		s.posts[path] = postRoute{h, s.metrics.Route(path, http.MethodPost)}
	}
	rt.HandleFunc("/", s.root).Methods(http.MethodGet, http.MethodHead)
	// Claude Code 2.1.332 probes /api/hello instead (it warms the
	// connection, and its network check stops at an answer that is not a
	// 2xx).
	rt.HandleFunc("/api/hello", s.root).Methods(http.MethodGet, http.MethodHead)
	// Browsers ask for it on every console page: no icon, and no 404 in
	// the page's console.
	rt.HandleFunc("/favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		w.WriteHeader(http.StatusNoContent)
	}).Methods(http.MethodGet, http.MethodHead)
	rt.HandleFunc("/healthz", s.health).Methods(http.MethodGet)
	rt.Handle("/metrics", s.metricsHandler(cfg.MetricsPublic)).Methods(http.MethodGet)
	rt.HandleFunc("/v1/openapi.json", s.openAPI).Methods(http.MethodGet)

	rt.HandleFunc("/v1/executor-protocol", s.withKey(anyKey, s.executorProtocol)).Methods(http.MethodGet)
	rt.HandleFunc("/v1/handoff/preview", s.withKey(anyKey, s.handoffPreview)).Methods(http.MethodPost)
	// A create retried over a flaky network must not make a second
	// handoff, with its own approval: Idempotency-Key as on generate.
	rt.HandleFunc("/v1/handoff/contracts", s.withKey(anyKey, s.withIdempotency("contracts", s.createContract))).Methods(http.MethodPost)
	rt.HandleFunc("/v1/handoff/contracts", s.withKey(anyKey, s.listContracts)).Methods(http.MethodGet)
	rt.HandleFunc("/v1/handoff/contracts/{handoffId}", s.withKey(anyKey, s.getContract)).Methods(http.MethodGet)
	rt.HandleFunc("/v1/executions/{handoffId}/approval", s.withKey(anyKey, s.approval())).Methods(http.MethodPost)
	rt.HandleFunc("/v1/executions/{handoffId}/proof", s.withKey(anyKey, s.proof())).Methods(http.MethodPost)
	rt.HandleFunc("/v1/executions/{handoffId}/heartbeat", s.withKey(anyKey, s.heartbeat())).Methods(http.MethodPost)
	rt.HandleFunc("/v1/executions/{handoffId}/result", s.withKey(anyKey, s.result())).Methods(http.MethodPost)
	rt.HandleFunc("/v1/executions/{handoffId}/review", s.withKey(adminOnly, s.review())).Methods(http.MethodPost)
	rt.HandleFunc("/v1/executions/{handoffId}/ledger", s.withKey(anyKey, s.getLedger)).Methods(http.MethodGet)
	rt.HandleFunc("/v1/events", s.withKey(anyKey, s.streamEvents)).Methods(http.MethodGet)
	if cfg.TransparencyLog != nil {
		s.logRoutes(rt, cfg.TransparencyLog)
	}
	rt.HandleFunc("/v1/admin/keys", s.withKey(adminOnly, s.createKey)).Methods(http.MethodPost)
	rt.HandleFunc("/v1/admin/keys", s.withKey(adminOnly, s.listKeys)).Methods(http.MethodGet)
	rt.HandleFunc("/v1/admin/keys/{keyId}", s.withKey(adminOnly, s.revokeKey)).Methods(http.MethodDelete)
	rt.HandleFunc("/v1/admin/console-links", s.withKey(adminOnly, s.createConsoleLink)).Methods(http.MethodPost)
	rt.HandleFunc("/v1/admin/console-links/{linkId}", s.withKey(adminOnly, s.revokeConsoleLink)).Methods(http.MethodDelete)
	s.routeConsole(rt)
	rt.HandleFunc("/v1/context/preview", s.withKey(anyKey, s.withIdempotency("context", s.contextPreview))).Methods(http.MethodPost)
	rt.HandleFunc("/v1/context/packets/{packetId}", s.withKey(anyKey, s.getContextPacket)).Methods(http.MethodGet)
	// A registration retried with its key must not make a second endpoint,
	// which would get every event again under other webhook-ids.
	rt.HandleFunc("/v1/webhooks", s.withKey(anyKey, noStore(s.withIdempotency("webhooks", s.createWebhook)))).Methods(http.MethodPost)
	rt.HandleFunc("/v1/webhooks", s.withKey(anyKey, s.listWebhooks)).Methods(http.MethodGet)
	rt.HandleFunc("/v1/webhooks/{webhookId}", s.withKey(anyKey, s.getWebhook)).Methods(http.MethodGet)
	rt.HandleFunc("/v1/webhooks/{webhookId}", s.withKey(anyKey, s.updateWebhook)).Methods(http.MethodPatch)
	rt.HandleFunc("/v1/webhooks/{webhookId}", s.withKey(anyKey, s.deleteWebhook)).Methods(http.MethodDelete)
	rt.HandleFunc("/v1/webhooks/{webhookId}/rotate", s.withKey(anyKey, noStore(s.rotateOnce))).Methods(http.MethodPost)
	rt.HandleFunc("/v1/webhooks/{webhookId}/deliveries", s.withKey(anyKey, s.listWebhookDeliveries)).Methods(http.MethodGet)
	rt.HandleFunc("/v1/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver", s.withKey(anyKey, s.redeliverWebhook)).Methods(http.MethodPost)
	s.contextLoader = s.contextPacketPrompt // generate and agent-plans attach packets by contextPacketId
	if s.catalog != nil {
		rt.HandleFunc("/v1/models", s.withKeyAs(anyKey, modelErrors, s.listModels)).Methods(http.MethodGet)
		rt.HandleFunc("/v1/models/sync", s.withKeyAs(adminOnly, openaiErrors, s.syncModels)).Methods(http.MethodPost)
		rt.HandleFunc("/v1/models/health", s.withKeyAs(adminOnly, openaiErrors, s.healthModel)).Methods(http.MethodPost)
		rt.HandleFunc("/v1/models/health/batch", s.withKeyAs(adminOnly, openaiErrors, s.healthBatch)).Methods(http.MethodPost)
		rt.HandleFunc("/v1/models/route/preview", s.withKeyAs(adminOnly, openaiErrors, s.routePreview)).Methods(http.MethodPost)
		rt.HandleFunc("/v1/models/infrastructure", s.withKeyAs(adminOnly, openaiErrors, s.infrastructure)).Methods(http.MethodGet)
		rt.HandleFunc("/v1/models/{id:.+}", s.withKeyAs(anyKey, modelErrors, s.getModel)).Methods(http.MethodGet).Name(modelRoute) // after the fixed /v1/models/* paths
		post("/v1/generate", s.withKey(anyKey, s.withIdempotency("generate", s.generate)))
		rt.HandleFunc("/v1/capabilities", s.withKey(anyKey, s.capabilities)).Methods(http.MethodGet)
		rt.HandleFunc("/v1/agent-plans", s.withKey(anyKey, s.withIdempotency("agent-plans", s.createPlan))).Methods(http.MethodPost)
		rt.HandleFunc("/v1/agent-plans/{planId}", s.withKey(anyKey, s.getPlan)).Methods(http.MethodGet)
		rt.HandleFunc("/v1/admin/budgets/{tenant}", s.withKey(adminOnly, s.getBudget)).Methods(http.MethodGet)
		rt.HandleFunc("/v1/admin/budgets/{tenant}", s.withKey(adminOnly, s.putBudget)).Methods(http.MethodPut)
		post("/v1/chat/completions", s.withKeyAs(anyKey, openaiErrors, s.chatCompletions))
		post("/v1/responses", s.withKeyAs(anyKey, openaiErrors, s.responses))
		rt.HandleFunc("/v1/responses/{id}", s.withKeyAs(anyKey, openaiErrors, s.getResponse)).Methods(http.MethodGet)
		rt.HandleFunc("/v1/responses/{id}", s.withKeyAs(anyKey, openaiErrors, s.deleteResponse)).Methods(http.MethodDelete)
		rt.HandleFunc("/v1/responses/{id}/input_items", s.withKeyAs(anyKey, openaiErrors, s.listInputItems)).Methods(http.MethodGet)
		// A POST under /v1/responses/ is one of OpenAI's endpoints Baton
		// does not serve (compact, input_tokens, {id}/cancel): a 404, not
		// a 405 offering a GET or DELETE of a response by that name.
		rt.PathPrefix("/v1/responses/").Methods(http.MethodPost).Handler(rt.NotFoundHandler).Name(unservedRoute)
		// So are OpenAI's stored chat completions (the SDK's
		// chat.completions.list) and its deletion of a fine-tuned model:
		// a 404 the SDKs take for NotFoundError, not a 405.
		rt.HandleFunc("/v1/chat/completions", s.unserved).Methods(http.MethodGet).Name(unservedRoute)
		rt.HandleFunc("/v1/models/{id:.+}", s.unserved).Methods(http.MethodDelete).Name(unservedRoute)
		post("/v1/messages", s.withKeyAs(anyKey, anthropicErrors, s.messages))
		post("/v1/messages/count_tokens", s.withKeyAs(anyKey, anthropicErrors, s.countTokens))
	}
	// Each route's metrics are resolved now, once, rather than looked up by
	// label on every request.
	rt.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := route.GetPathTemplate()
		if err != nil {
			return nil
		}
		methods, _ := route.GetMethods()
		route.Handler(instrumented(tpl, s.metrics.Route(tpl, strings.Join(methods, ",")), route.GetHandler()))
		return nil
	})
	return s
}

// postRoute is a model front's POST handler and its metrics.
type postRoute struct {
	h http.Handler
	m *metrics.Route
}

// StopWaits ends every waiting ledger read (GET .../ledger?wait=): each
// answers what it has; and every event stream (GET /v1/events), whose
// clients resume elsewhere with Last-Event-ID. Register it with
// http.Server.RegisterOnShutdown, as Shutdown does not cancel the requests
// it waits for.
func (s *Server) StopWaits() {
	s.stopOnce.Do(func() {
		close(s.stopWaits)
		s.stopAll()
	})
}

// Close stops what the server started (the usage writer, after appending
// what it holds). Call it after the HTTP server has shut down.
func (s *Server) Close() {
	if s.ownsUsage {
		s.usage.Close()
	}
}

// Handler is the whole front with its middleware.
func (s *Server) Handler() http.Handler {
	return s.withRequestID(s.withAccessLog(s.withRecover(http.HandlerFunc(s.route))))
}

// route serves the model fronts' POSTs at once and the rest through the
// router. Their paths are fixed, so a path the router would clean or
// redirect, or another method, still goes to the router.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if r.URL.RawPath != "" && strings.Contains(strings.ToUpper(r.URL.RawPath), "%2F") && !s.encodedModelID(r) {
		// An encoded slash is part of a segment, not a separator: decoded,
		// /v1/executions/x%2Fapproval would reach the approval callback by
		// a path no proxy takes for it. Only a model's id holds slashes.
		s.router.NotFoundHandler.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodHead && headServed(r.URL.Path) {
		// HEAD is GET without the body (RFC 9110 asks every server for
		// it): the GET's handler answers, and the server drops what it
		// writes. Not on the event streams, which would then run on with
		// nothing to tell them their client is gone.
		g := *r
		g.Method = http.MethodGet
		var match mux.RouteMatch
		if s.router.Match(&g, &match) && match.MatchErr == nil {
			s.router.ServeHTTP(w, &g)
			return
		}
	}
	if r.Method == http.MethodPost {
		if p, ok := s.posts[r.URL.Path]; ok {
			if rec, ok := w.(*statusRecorder); ok {
				rec.route, rec.metrics = r.URL.Path, p.m // as instrumented sets them: the template is the path
			}
			p.h.ServeHTTP(w, r)
			return
		}
	}
	s.router.ServeHTTP(w, r)
}

// root answers the base URL: HEAD, the probe Claude Code sends before its
// first call to see that the server answers, 200 and no body; GET, where
// to go from here. No key: it says nothing /healthz does not.
func (s *Server) root(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"service": "baton", "version": s.version,
		"openapi": "/v1/openapi.json", "health": "/healthz", "console": "/console/"})
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	head, err := s.heads.Head(r.Context(), 2*time.Second)
	if err != nil {
		s.writeError(w, r, domain.E("health", domain.KindUnavailable, "store_unavailable", "The event store is not answering."))
		return
	}
	if f, ok := s.store.(interface{ Failed() error }); ok {
		if err := f.Failed(); err != nil {
			// Reads go on, but no write will until the process is
			// restarted: a load balancer should drain it.
			s.writeError(w, r, domain.E("health", domain.KindUnavailable, "store_failed",
				"The event store takes no writes until the process is restarted (%v); reads go on. Mend the cause, then restart (docs/operations.md, Failures).", err))
			return
		}
	}
	if err := s.diskFull(); err != nil {
		// Writes (or the read models) wait for space and resume by
		// themselves once it is freed: no restart needed.
		s.writeError(w, r, domain.E("health", domain.KindUnavailable, "store_full",
			"The data directory's disk is full (%v): writes are refused, nothing recorded, and the read models wait, until space is freed; reads of what they hold go on (docs/operations.md, Failures).", err))
		return
	}
	body := map[string]any{"status": "ok", "version": s.version, "storeHead": head}
	if s.proj != nil {
		body["readModelCheckpoint"] = s.proj.Checkpoint()
		// Handoffs whose stream holds an event the read models cannot
		// apply: served as errors, the rest as usual.
		if _, n, err := s.proj.Quarantined(0); err == nil && n > 0 {
			body["status"], body["quarantinedHandoffs"] = "degraded", n
		}
	}
	if s.tlog != nil {
		// A checkpoint of the log's own key that its tree contradicts: no
		// replica signs while the store holds it (docs/audit.md, Forks).
		if f, ok := s.tlog.OwnFork(); ok {
			body["status"], body["logForked"] = "degraded", f.String()
		}
		// The log alone waiting for space keeps the ledger's reads and
		// writes going: no reason to drain the replica.
		if err := s.tlog.Full(); err != nil {
			body["status"], body["logFull"] = "degraded", err.Error()
		}
	}
	writeJSON(w, http.StatusOK, body)
}

// diskFull is why the store or the read models cannot write for want of
// space, nil when both can.
func (s *Server) diskFull() error {
	if f, ok := s.store.(interface{ Full() error }); ok {
		if err := f.Full(); err != nil {
			return err
		}
	}
	if s.proj != nil {
		return s.proj.Full()
	}
	return nil
}

// modelRoute names GET /v1/models/{id}, which takes every GET below
// /v1/models.
const modelRoute = "model"

// unservedRoute names routes of OpenAI's API that Baton does not serve
// (a 404), and no method a 405's Allow offers.
const unservedRoute = "unserved"

// unserved answers an endpoint of OpenAI's that Baton does not serve on a
// path it serves other methods of: a 404, but a 426 to a WebSocket
// handshake (Codex's) and a 405 on the admin paths below /v1/models, as
// any method a path does not take.
func (s *Server) unserved(w http.ResponseWriter, r *http.Request) {
	if webSocketUpgrade(r) || adminModelsPath(mux.Vars(r)["id"]) {
		s.methodNotAllowed(w, r, s.allowed(r))
		return
	}
	s.router.NotFoundHandler.ServeHTTP(w, r)
}

// headServed says whether a HEAD of path is served as its GET: every
// path but the event streams'.
func headServed(path string) bool { return path != "/v1/events" && path != "/console/events" }

// allowed lists the methods the router serves on r's path: a 405 carries
// them in Allow (RFC 9110, section 15.5.6).
func (s *Server) allowed(r *http.Request) string {
	var ms []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		q := *r
		q.Method = m
		var match mux.RouteMatch
		if s.router.Match(&q, &match) && match.MatchErr == nil && match.Route.GetName() != unservedRoute &&
			(match.Route.GetName() != modelRoute || !adminModelsPath(match.Vars["id"])) { // that GET is a 405 too
			ms = append(ms, m)
		}
	}
	if i := slices.Index(ms, http.MethodGet); i >= 0 && !slices.Contains(ms, http.MethodHead) && headServed(r.URL.Path) {
		ms = slices.Insert(ms, i+1, http.MethodHead) // served as the GET (route)
	}
	return strings.Join(ms, ", ")
}

// methodNotAllowed answers a method r's path does not take: a 405 with
// Allow, or a 426 to a WebSocket handshake (what Codex takes as "use
// HTTP"). The router's 405 and getModel's for the admin paths below
// /v1/models both come here, so a handshake gets the same answer on each.
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	if webSocketUpgrade(r) {
		s.noRoute(w, r, domain.E("route", domain.KindNoUpgrade, "websocket_not_supported",
			"%s takes no WebSocket connections; send %s %s over HTTP (a stream comes as server-sent events).", r.URL.Path, allow, r.URL.Path))
		return
	}
	s.noRoute(w, r, notAllowed(r))
}

// webSocketUpgrade reports whether r asks to switch to WebSocket (RFC
// 6455, section 4.1): Codex tries that on /v1/responses before it POSTs.
func webSocketUpgrade(r *http.Request) bool {
	return r.Method == http.MethodGet && hasToken(r.Header.Values("Upgrade"), "websocket") &&
		hasToken(r.Header.Values("Connection"), "upgrade")
}

// hasToken reports whether a comma-separated header holds token, in any
// ASCII case (RFC 6455): around an element, only spaces and tabs are
// optional whitespace, and with the lengths equal EqualFold folds no
// non-ASCII letter (ſ, the Kelvin sign) into token's.
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			if t = strings.Trim(t, " \t"); len(t) == len(token) && strings.EqualFold(t, token) {
				return true
			}
		}
	}
	return false
}

// notAllowed is the error for a method a path does not take.
func notAllowed(r *http.Request) error {
	return domain.E("route", domain.KindNotAllowed, "method_not_allowed", "%s is not allowed on %s.", r.Method, r.URL.Path)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	writeBounded(w, b.Bytes())
}

// writeBounded writes an answer's body: a large one (a ledger or contract
// with many proofs runs to tens of MB) under writeWhole's write deadline,
// so that a client that stops reading does not hold the connection and
// the answer's buffer for ever. A small one fits the socket's buffers.
func writeBounded(w http.ResponseWriter, b []byte) {
	if len(b) < wholeBound {
		w.Write(b)
		return
	}
	writeWhole(w, b)
}

// metricsHandler serves the Prometheus scrape: to an admin key, or to
// anyone when public.
func (s *Server) metricsHandler(public bool) http.Handler {
	h := s.metrics.Handler(func(err error) {
		s.log.Warn().Err(err).Msg("metrics: a collector failed; the scrape goes on without it")
	})
	if public {
		return h
	}
	return s.withKey(adminOnly, h.ServeHTTP)
}

// encodedModelID reports whether r's encoded slashes all lie in a model's
// id under a literal /v1/models/, and the path is that id's route.
func (s *Server) encodedModelID(r *http.Request) bool {
	if !strings.HasPrefix(r.URL.RawPath, "/v1/models/") {
		return false
	}
	var match mux.RouteMatch
	if !s.router.Match(r, &match) || match.MatchErr != nil || match.Route.GetName() != modelRoute {
		return false
	}
	return !adminModelsPath(match.Vars["id"])
}
