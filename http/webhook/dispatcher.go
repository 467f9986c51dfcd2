// Package webhook sends the handoff ledger's events to the endpoints
// tenants registered, signed as Standard Webhooks specifies
// (https://www.standardwebhooks.com). It never writes to the store
// itself: schedules, claims and outcomes go through the ledger's webhook
// service (eventstore/ledger), which appends them to each delivery's
// stream with an expected revision, so that of several replicas on one
// store exactly one makes each attempt.
package webhook

import (
	"bytes"
	"container/heap"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/ledger"
)

// DefaultSchedule is the wait before each retry after a failed attempt
// (Svix's schedule): 8 attempts over about 27 hours.
var DefaultSchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// Defaults of Config.
const (
	DefaultTimeout       = 15 * time.Second
	DefaultLeaseMargin   = 15 * time.Second
	DefaultMaxRetryAfter = time.Hour
	DefaultPoll          = time.Second
	DefaultWorkers       = 8
	// DefaultDisableAfter is how long an endpoint's attempts may all fail
	// before it is disabled (Svix's 5 days, with the same schedule).
	DefaultDisableAfter = 5 * 24 * time.Hour
)

// Config is what the dispatcher needs.
type Config struct {
	Store    eventstore.Store
	Webhooks *ledger.Webhooks
	// Now is the dispatcher's clock for due times and webhook-timestamp
	// (time.Now when nil). The request timeout runs on real time.
	Now func() time.Time
	// Schedule is the wait before each retry (DefaultSchedule when nil):
	// a delivery gets len(Schedule)+1 attempts per round.
	Schedule []time.Duration
	Timeout  time.Duration // one attempt's request (DefaultTimeout when 0)
	// LeaseMargin is added to Timeout to make a claim's lease: a claim
	// with no outcome after it may be claimed again by another replica.
	LeaseMargin time.Duration
	// MaxRetryAfter bounds the Retry-After of a 429 or 503 that is
	// honoured instead of the schedule's wait (DefaultMaxRetryAfter when 0).
	MaxRetryAfter time.Duration
	Poll          time.Duration // how often due attempts are looked for (DefaultPoll when 0)
	Workers       int           // attempts in flight at once (DefaultWorkers when 0)
	// PerEndpoint bounds the attempts in flight at once to one endpoint
	// (a quarter of Workers, at least 1, when 0), and PerTenant to one
	// tenant's endpoints (half of Workers, at least 1, when 0): a receiver
	// that hangs holds that many workers, not all of them, and the other
	// endpoints' deliveries go out as their events come. An endpoint whose
	// last attempt failed gets one in flight, and a tenant's failing
	// endpoints half of PerTenant (at least 1) together.
	PerEndpoint int
	PerTenant   int
	// DisableAfter disables an endpoint none of whose attempts succeeded
	// for that long, counted from the first failure after its last
	// success (DefaultDisableAfter when 0; never when negative).
	DisableAfter time.Duration
	// Claimant names this process in its claims (host/pid/random when "").
	Claimant string
	// Client sends the requests; NewClient(AllowPrivate) when nil.
	Client       *http.Client
	AllowPrivate bool
	// OnAttempt, when set, is called with each attempt's outcome
	// (domain.WebhookSucceeded, WebhookRetrying, WebhookFailed,
	// WebhookGone, WebhookCanceled): the hook for a metrics counter.
	OnAttempt func(outcome string)
	Log       zerolog.Logger
}

// Dispatcher follows the global feed, schedules a delivery for each
// handoff event an endpoint wants and makes the attempts that are due.
type Dispatcher struct {
	cfg Config

	mu       sync.Mutex
	hooks    map[string]*domain.Webhook // as of the feed position applied
	targets  map[string]string          // handoff id -> target executor
	wanted   []domain.WebhookDeliveryScheduled
	pending  map[string]*due // open deliveries by id
	inflight map[string]*due // deliveries being attempted
	// refusedSaid is when the log last said an endpoint's address is
	// internal: once an hour, not at every attempt of every delivery.
	refusedSaid map[string]time.Time
	// scheduleSaid is when the log last said scheduling failed: once a
	// minute while the store refuses, not a line a delivery a second.
	scheduleSaid time.Time
	scheduled    uint64 // deliveries applied from the feed, for their order
	workers      sync.WaitGroup
	// wake is signalled when an attempt ends, so that a free worker takes
	// the next due delivery without waiting for the feed or the poll.
	wake chan struct{}
	// draining: the server is stopping; no attempt is started (Drain).
	draining atomic.Bool
	// failing holds the endpoints whose last attempt here failed (no
	// answer, or not 2xx): each gets one attempt in flight at a time, and
	// a tenant's failing endpoints together half of its share, so that a
	// backlog to receivers that hang does not hold the tenant's healthy
	// endpoints behind it, a timeout at a time.
	failing map[string]bool
	// failingSince is, for each endpoint whose last recorded attempt
	// failed, the time of the first failure after its last success: from
	// the recorded outcomes of every replica, so every replica, and a
	// restart, has the same. An attempt that fails DisableAfter after it
	// disables the endpoint.
	failingSince map[string]time.Time
}

// Drain makes the dispatcher start no more attempts, for a server that is
// stopping: those in flight finish while it waits for its requests, and
// those due are left to the next start or another replica. An attempt
// started in the stop's grace was cut off with the process, unrecorded,
// and the receiver got it again later.
func (d *Dispatcher) Drain() { d.draining.Store(true) }

// Settle drains the dispatcher and waits until the attempts in flight
// have ended, their outcomes recorded, or ctx ends (the stop's grace):
// cut off with the process when nothing else held the stop back, they
// were unrecorded and reached their receivers again once their leases
// ran out. It says whether none is left.
func (d *Dispatcher) Settle(ctx context.Context) bool {
	d.Drain()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		d.mu.Lock()
		n := len(d.inflight)
		d.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// due is what the dispatcher keeps of an open delivery: when an attempt
// may be claimed next, and the last attempt claimed.
type due struct {
	at              time.Time
	lastAttempt     int
	tenant, webhook string
	claimFails      int    // claims in a row the store refused: how long to hold it back
	order           uint64 // when the feed scheduled it: the older first among those due at once
}

// sayRefused reports whether the log should say that the endpoint's
// address was refused: not if it said so within the hour.
func (d *Dispatcher) sayRefused(webhookID string) bool {
	now := d.cfg.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if at, ok := d.refusedSaid[webhookID]; ok && now.Sub(at) < time.Hour {
		return false
	}
	if d.refusedSaid == nil {
		d.refusedSaid = map[string]time.Time{}
	}
	for id, at := range d.refusedSaid {
		if now.Sub(at) >= time.Hour {
			delete(d.refusedSaid, id) // a deleted endpoint's entry goes too
		}
	}
	d.refusedSaid[webhookID] = now
	return true
}

// claimRetry is how long a delivery whose claim the store refused is held
// back, doubling with each refusal in a row up to claimRetryMax.
const claimRetry, claimRetryMax = time.Second, 30 * time.Second

// New builds a dispatcher; Run starts it.
func New(cfg Config) *Dispatcher {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Schedule == nil {
		cfg.Schedule = DefaultSchedule
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.LeaseMargin <= 0 {
		cfg.LeaseMargin = DefaultLeaseMargin
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.DisableAfter == 0 {
		cfg.DisableAfter = DefaultDisableAfter
	}
	if cfg.PerEndpoint <= 0 {
		cfg.PerEndpoint = max(1, cfg.Workers/4)
	}
	if cfg.PerTenant <= 0 {
		cfg.PerTenant = max(1, cfg.Workers/2)
	}
	if cfg.Claimant == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		rand.Read(b)
		cfg.Claimant = fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b))
	}
	if cfg.Client == nil {
		cfg.Client = NewClient(cfg.AllowPrivate)
	}
	return &Dispatcher{cfg: cfg, hooks: map[string]*domain.Webhook{}, targets: map[string]string{},
		pending: map[string]*due{}, inflight: map[string]*due{}, failing: map[string]bool{}, failingSince: map[string]time.Time{}, wake: make(chan struct{}, 1)}
}

const handoffPrefix = "handoff-"

var deliveryPrefix = domain.WebhookDeliveryStream("")

// Run follows the feed until ctx ends. It starts from the beginning of the
// feed every time: the endpoints, the open deliveries and which events
// still need a delivery are all recomputed from recorded events, so a
// restart loses nothing and needs no checkpoint of its own. Attempts in
// flight when ctx ends are abandoned unrecorded: their claims' leases run
// out and the attempt is made again (at least once).
func (d *Dispatcher) Run(ctx context.Context) error {
	defer d.workers.Wait()
	stopped := func(err error) error {
		if ctx.Err() != nil {
			return nil // asked to stop
		}
		return fmt.Errorf("webhooks: reading the feed: %w", err)
	}
	head, err := d.cfg.Store.Head(ctx)
	if err != nil {
		return stopped(err)
	}
	after := eventstore.Start
	for after.Less(head) {
		evs, err := d.cfg.Store.ReadAll(ctx, after, 1000)
		if err != nil {
			return stopped(err)
		}
		if len(evs) == 0 {
			break
		}
		d.mu.Lock()
		for _, ev := range evs {
			d.apply(ctx, ev)
		}
		d.mu.Unlock()
		after = evs[len(evs)-1].Position
	}
	sub, err := d.cfg.Store.SubscribeAll(ctx, after)
	if err != nil {
		return stopped(err)
	}
	defer sub.Close()
	feed, stop := eventstore.Batches(sub, 256)
	defer stop()
	tick := time.NewTicker(d.cfg.Poll)
	defer tick.Stop()
	for {
		d.schedule(ctx)
		d.dispatch(ctx)
		select {
		case <-ctx.Done():
			return nil
		case b := <-feed:
			if b.Err != nil {
				return stopped(b.Err)
			}
			d.mu.Lock()
			for _, ev := range b.Events {
				d.apply(ctx, ev)
			}
			d.mu.Unlock()
		case <-tick.C:
		case <-d.wake:
		}
	}
}

// apply folds one feed event into the dispatcher's state. Hold d.mu.
func (d *Dispatcher) apply(ctx context.Context, ev eventstore.RecordedEvent) {
	if ev.Unreadable != "" {
		return
	}
	switch {
	case ev.StreamID == domain.WebhooksStream:
		if err := domain.ApplyWebhookEvent(d.hooks, ev.Type, ev.Data); err != nil {
			d.cfg.Log.Error().Err(err).Uint64("revision", ev.Revision).Msg("webhooks: endpoint event skipped")
		}
		var e struct {
			WebhookID string `json:"webhookId"`
		}
		if ev.Type == domain.EventWebhookRegistered || json.Unmarshal(ev.Data, &e) != nil {
			break
		}
		if ev.Type == domain.EventWebhookDeleted {
			// Forgotten: no event is delivered to it again, and kept,
			// every handoff event was matched against it. A disabled
			// endpoint is kept: its owner may enable it again.
			delete(d.hooks, e.WebhookID)
		}
		if ev.Type != domain.EventWebhookSecretRotated {
			// Deleted, disabled, enabled or sent elsewhere: how its last
			// attempt went says nothing of the next.
			delete(d.failing, e.WebhookID)
			delete(d.failingSince, e.WebhookID)
		}
	case strings.HasPrefix(ev.StreamID, deliveryPrefix):
		d.applyDelivery(strings.TrimPrefix(ev.StreamID, deliveryPrefix), ev)
	case strings.HasPrefix(ev.StreamID, handoffPrefix):
		d.applyHandoff(ctx, ev)
	}
}

func (d *Dispatcher) applyDelivery(id string, ev eventstore.RecordedEvent) {
	switch ev.Type {
	case domain.EventWebhookDeliveryScheduled:
		var e domain.WebhookDeliveryScheduled
		if json.Unmarshal(ev.Data, &e) != nil {
			return
		}
		d.scheduled++
		d.pending[id] = &due{at: e.DueAt, tenant: e.Tenant, webhook: e.WebhookID, order: d.scheduled}
		for i, w := range d.wanted {
			if w.DeliveryID == id {
				d.wanted = append(d.wanted[:i], d.wanted[i+1:]...)
				break
			}
		}
	case domain.EventWebhookAttemptClaimed:
		var e domain.WebhookAttemptClaimed
		if p := d.pending[id]; p != nil && json.Unmarshal(ev.Data, &e) == nil {
			p.at, p.lastAttempt, p.claimFails = e.LeaseUntil, e.Attempt, 0
		}
	case domain.EventWebhookAttemptRecorded:
		var e domain.WebhookAttemptRecorded
		p := d.pending[id]
		if p == nil || json.Unmarshal(ev.Data, &e) != nil {
			return
		}
		switch e.Outcome {
		case domain.WebhookSucceeded:
			delete(d.failingSince, p.webhook)
		case domain.WebhookRetrying, domain.WebhookFailed:
			if _, ok := d.failingSince[p.webhook]; !ok && d.hooks[p.webhook] != nil {
				d.failingSince[p.webhook] = e.At
			}
		}
		if e.Attempt != p.lastAttempt {
			return
		}
		if e.Outcome == domain.WebhookRetrying && e.NextAttemptAt != nil {
			p.at = *e.NextAttemptAt
		} else {
			delete(d.pending, id)
		}
	case domain.EventWebhookRedeliveryRequested:
		var e domain.WebhookRedeliveryRequested
		if json.Unmarshal(ev.Data, &e) != nil {
			return
		}
		p := d.pending[id]
		if p == nil {
			d.scheduled++
			p = &due{lastAttempt: -1, tenant: ev.Metadata.Tenant, webhook: e.WebhookID, order: d.scheduled}
			d.pending[id] = p
		}
		// A new round: a late outcome of an earlier attempt (its lease ran
		// out, then the redelivery) no longer decides it, as in the
		// delivery's fold; it ended the round the redelivery began.
		p.at, p.lastAttempt = e.At, -1
	}
}

// maxTargets bounds the handoff -> target executor cache; past it, it
// starts over and misses read the handoff's first event.
const maxTargets = 100_000

func (d *Dispatcher) applyHandoff(ctx context.Context, ev eventstore.RecordedEvent) {
	id := strings.TrimPrefix(ev.StreamID, handoffPrefix)
	if ev.Type == domain.EventContractCreated {
		var c struct {
			TargetExecutor string `json:"targetExecutor"`
		}
		json.Unmarshal(ev.Data, &c)
		d.remember(id, c.TargetExecutor)
	}
	tenant := ev.Metadata.Tenant
	for _, w := range d.hooks {
		if w.Tenant != tenant || w.Status != domain.WebhookStatusActive {
			continue
		}
		target := ""
		if len(w.TargetExecutors) > 0 {
			target = d.target(ctx, id)
		}
		if !w.Wants(ev.Type, target) {
			continue
		}
		d.wanted = append(d.wanted, domain.WebhookDeliveryScheduled{
			DeliveryID: domain.WebhookDeliveryID(w.WebhookID, ev.ID.String()), WebhookID: w.WebhookID, Tenant: tenant,
			EventID: ev.ID.String(), EventType: ev.Type, HandoffID: id, Seq: ev.Revision + 1,
		})
	}
}

// target is handoff id's target executor, from the cache or its first
// event.
func (d *Dispatcher) target(ctx context.Context, id string) string {
	if t, ok := d.targets[id]; ok {
		return t
	}
	evs, err := d.cfg.Store.ReadStream(ctx, handoffPrefix+id, 0, 1)
	if err != nil || len(evs) == 0 {
		return ""
	}
	var c struct {
		TargetExecutor string `json:"targetExecutor"`
	}
	json.Unmarshal(evs[0].Data, &c)
	d.remember(id, c.TargetExecutor)
	return c.TargetExecutor
}

// remember keeps a handoff's target executor, within maxTargets. Hold d.mu.
func (d *Dispatcher) remember(id, target string) {
	if len(d.targets) >= maxTargets {
		d.targets = map[string]string{}
	}
	d.targets[id] = target
}

// body reads the delivery's event from its handoff's stream and builds
// the body every attempt sends; gone says the event is not there (any
// more), which no retry mends.
func (d *Dispatcher) body(ctx context.Context, del *domain.WebhookDelivery) (b []byte, gone bool, err error) {
	if del.Seq == 0 {
		return nil, true, fmt.Errorf("event %s: no place in its handoff's stream", del.EventID)
	}
	evs, err := d.cfg.Store.ReadStream(ctx, handoffPrefix+del.HandoffID, del.Seq-1, 1)
	if err != nil {
		return nil, false, err
	}
	if len(evs) == 0 || evs[0].ID.String() != del.EventID || evs[0].Unreadable != "" {
		return nil, true, fmt.Errorf("event %s (seq %d of handoff %s) is no longer readable in the store", del.EventID, del.Seq, del.HandoffID)
	}
	return payload(del.HandoffID, evs[0]), false, nil
}

// payload is the body of every attempt of a delivery of ev:
// {type, timestamp, data}, data the event as the ledger shows it.
func payload(handoffID string, ev eventstore.RecordedEvent) json.RawMessage {
	at := ev.Metadata.RecordedAt.UTC()
	b, _ := json.Marshal(map[string]any{
		"type":      ev.Type,
		"timestamp": at.Format(time.RFC3339Nano),
		"data": map[string]any{
			"handoffId": handoffID, "eventId": ev.ID.String(), "seq": ev.Revision + 1, "type": ev.Type, "data": json.RawMessage(ev.Data),
			"actor": ev.Metadata.Actor, "recordedAt": at, "prevHash": ev.Metadata.PrevHash, "hash": ev.Metadata.Hash,
		},
	})
	return b
}

// schedule opens the deliveries the feed asked for: of several replicas
// one appends each, the others are told it exists.
// scheduleAtOnce bounds the deliveries scheduled concurrently: each is an
// append of its own stream, and concurrent appends share the store's
// commits, where one after another each waits for its own.
const scheduleAtOnce = 32

func (d *Dispatcher) schedule(ctx context.Context) {
	d.mu.Lock()
	wanted := d.wanted
	d.wanted = nil
	d.mu.Unlock()
	var (
		wg      sync.WaitGroup
		failMu  sync.Mutex
		failed  []domain.WebhookDeliveryScheduled
		lastErr error
		slots   = make(chan struct{}, scheduleAtOnce)
	)
	for _, w := range wanted {
		d.mu.Lock()
		hook := d.hooks[w.WebhookID]
		d.mu.Unlock()
		if hook == nil || hook.Status != domain.WebhookStatusActive {
			continue // deleted or disabled since the event
		}
		w.DueAt = d.cfg.Now().UTC().Truncate(time.Microsecond)
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if _, err := d.cfg.Webhooks.Schedule(ctx, w); err != nil {
				failMu.Lock()
				failed, lastErr = append(failed, w), err
				failMu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 && ctx.Err() == nil {
		if now := time.Now(); now.Sub(d.scheduleSaid) >= time.Minute {
			d.scheduleSaid = now
			d.cfg.Log.Error().Err(lastErr).Int("deliveries", len(failed)).Str("deliveryId", failed[0].DeliveryID).
				Msg("webhooks: scheduling deliveries failed; retrying (said once a minute while it fails)")
		}
	}
	if len(failed) > 0 {
		d.mu.Lock()
		d.wanted = append(failed, d.wanted...)
		d.mu.Unlock()
	}
}

// dispatch starts an attempt of each due delivery, up to Workers at once.
func (d *Dispatcher) dispatch(ctx context.Context) {
	now := d.cfg.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining.Load() {
		return // read under mu: once Settle has seen none in flight, none starts
	}
	if len(d.inflight) >= d.cfg.Workers {
		return // nothing can start: no need to look through the pending
	}
	tenants, endpoints, sick := map[string]int{}, map[string]int{}, map[string]int{}
	for _, p := range d.inflight {
		tenants[p.tenant]++
		endpoints[p.webhook]++
		if d.failing[p.webhook] {
			sick[p.tenant]++
		}
	}
	sickShare := max(1, d.cfg.PerTenant/2)
	ready := d.ready(now, endpoints)
	for ready.Len() > 0 {
		c := heap.Pop(ready).(dueCand)
		id, p := c.id, c.p
		if len(d.inflight) >= d.cfg.Workers {
			return
		}
		if tenants[p.tenant] >= d.cfg.PerTenant || endpoints[p.webhook] >= d.cfg.PerEndpoint {
			continue
		}
		failing := d.failing[p.webhook]
		if failing && (endpoints[p.webhook] >= 1 || sick[p.tenant] >= sickShare) {
			continue
		}
		d.inflight[id] = p
		tenants[p.tenant]++
		endpoints[p.webhook]++
		if failing {
			sick[p.tenant]++
		}
		d.workers.Add(1)
		go func() {
			defer d.workers.Done()
			d.attempt(ctx, id)
			d.mu.Lock()
			delete(d.inflight, id)
			d.mu.Unlock()
			select {
			case d.wake <- struct{}{}:
			default:
			}
		}()
	}
}

// ready is the due deliveries that may start now, in a heap, given the
// attempts in flight to each endpoint. Hold d.mu.
func (d *Dispatcher) ready(now time.Time, endpoints map[string]int) *dueHeap {
	// The longest due first, then the oldest: taken in the map's order, a
	// delivery could wait behind later ones round after round, and an
	// endpoint's events reached it in no order.
	// A heap, taken from until the workers are busy: a backlog of many
	// due at once (an endpoint down for hours) is not sorted whole at
	// every wake to start a few. It holds only each endpoint's earliest
	// few, as many as may start: with every due delivery in it, a backlog
	// of thousands for one endpoint was popped whole at every wake to
	// start one or two, and the attempts came ever slower (972 a second
	// from a backlog of 300, 270 from 5,000).
	type slots struct {
		room int
		best []dueCand
	}
	byEndpoint := map[string]*slots{} // one look-up a delivery: the scan runs at every wake
	for id, p := range d.pending {
		if p.at.After(now) {
			continue
		}
		e := byEndpoint[p.webhook]
		if e == nil {
			e = &slots{room: d.cfg.PerEndpoint}
			if d.failing[p.webhook] {
				e.room = 1
			}
			e.room -= endpoints[p.webhook]
			byEndpoint[p.webhook] = e
		}
		if e.room <= 0 {
			continue
		}
		if _, ok := d.inflight[id]; ok {
			continue
		}
		e.best = keepEarliest(e.best, dueCand{id, p}, e.room)
	}
	ready := &dueHeap{}
	for _, e := range byEndpoint {
		ready.c = append(ready.c, e.best...)
	}
	heap.Init(ready)
	return ready
}

// dueCand is a due delivery; dueHeap orders them the longest due first,
// then the oldest.
type dueCand struct {
	id string
	p  *due
}

type dueHeap struct{ c []dueCand }

// before reports whether a is taken before b: the longest due, then the
// oldest.
func (a dueCand) before(b dueCand) bool {
	if c := a.p.at.Compare(b.p.at); c != 0 {
		return c < 0
	}
	return a.p.order < b.p.order
}

// keepEarliest adds c to cs, the earliest candidates in order, keeping at
// most n.
func keepEarliest(cs []dueCand, c dueCand, n int) []dueCand {
	if len(cs) == n {
		if !c.before(cs[n-1]) {
			return cs
		}
		cs = cs[:n-1]
	}
	i := len(cs)
	cs = append(cs, c)
	for ; i > 0 && c.before(cs[i-1]); i-- {
		cs[i] = cs[i-1]
	}
	cs[i] = c
	return cs
}

func (h *dueHeap) Len() int           { return len(h.c) }
func (h *dueHeap) Less(i, j int) bool { return h.c[i].before(h.c[j]) }
func (h *dueHeap) Swap(i, j int)      { h.c[i], h.c[j] = h.c[j], h.c[i] }
func (h *dueHeap) Push(x any)         { h.c = append(h.c, x.(dueCand)) }
func (h *dueHeap) Pop() any {
	x := h.c[len(h.c)-1]
	h.c = h.c[:len(h.c)-1]
	return x
}

// attempt claims delivery id's next attempt and, if this replica won it,
// makes it and records the outcome.
func (d *Dispatcher) attempt(ctx context.Context, id string) {
	log := d.cfg.Log.With().Str("deliveryId", id).Logger()
	c, ok, err := d.cfg.Webhooks.Claim(ctx, id, d.cfg.Claimant, d.cfg.Timeout+d.cfg.LeaseMargin)
	if err != nil || !ok {
		if err != nil && ctx.Err() == nil {
			wait := d.holdBack(id)
			log.Error().Err(err).Dur("retryIn", wait).Msg("webhooks: claiming an attempt failed")
		}
		return
	}
	del := c.Delivery
	hook, err := d.cfg.Webhooks.Endpoint(ctx, del.WebhookID)
	if err != nil {
		return // the lease runs out; the attempt is made again
	}
	rec := domain.WebhookAttemptRecorded{}
	sent := false // the attempt reached for the receiver (and not only its event)
	if hook == nil || hook.Status != domain.WebhookStatusActive {
		rec.Outcome, rec.Error = domain.WebhookCanceled, "not sent: the webhook is disabled or deleted"
	} else if body, gone, berr := d.body(ctx, del); berr != nil {
		if !gone {
			if ctx.Err() == nil {
				log.Error().Err(berr).Msg("webhooks: reading a delivery's event failed; the attempt will be made again")
			}
			return // the lease runs out; the attempt is made again
		}
		rec.Outcome, rec.Error = domain.WebhookFailed, berr.Error()
	} else {
		start := time.Now()
		sent = true
		status, retryAfter, hasRetryAfter, answer, serr := d.send(ctx, hook, del, body)
		if ctx.Err() != nil {
			return // stopping: the lease runs out and the attempt is made again
		}
		rec.DurationMs = time.Since(start).Milliseconds()
		rec.StatusCode, rec.WebhookAnswer = status, answer
		switch {
		case serr == nil && status >= 200 && status < 300:
			rec.Outcome = domain.WebhookSucceeded
		case serr == nil && status == http.StatusGone:
			rec.Outcome, rec.Error = domain.WebhookGone, "the receiver answered 410 Gone: the webhook is disabled"
		default:
			if serr != nil {
				rec.Error = deliveryError(serr)
				if errors.Is(serr, ErrBlockedAddress) && d.sayRefused(hook.WebhookID) {
					// The operator's to know; the tenant reads the refusal only.
					log.Warn().Err(serr).Str("webhookId", hook.WebhookID).Msg("webhooks: an endpoint's address is internal; its attempts are refused (said once an hour for each endpoint)")
				}
			} else {
				rec.Error = fmt.Sprintf("the receiver answered %d", status)
			}
			wait, again := NextWait(del.RoundAttempts(), d.cfg.Schedule, retryAfter, hasRetryAfter, d.cfg.MaxRetryAfter)
			if again {
				next := d.cfg.Now().UTC().Truncate(time.Microsecond).Add(wait)
				rec.Outcome, rec.NextAttemptAt = domain.WebhookRetrying, &next
			} else {
				rec.Outcome = domain.WebhookFailed
			}
		}
		d.mu.Lock()
		if rec.Outcome == domain.WebhookSucceeded {
			delete(d.failing, hook.WebhookID)
		} else {
			d.failing[hook.WebhookID] = true
		}
		d.mu.Unlock()
	}
	rec.At = d.cfg.Now().UTC().Truncate(time.Microsecond)
	if err := d.cfg.Webhooks.Record(ctx, c, rec); err != nil {
		if ctx.Err() == nil {
			log.Error().Err(err).Msg("webhooks: recording an attempt's outcome failed; it will be made again")
		}
		return
	}
	if rec.Outcome == domain.WebhookGone {
		if _, err := d.cfg.Webhooks.Disable(ctx, hook.WebhookID, hook.URL, "the receiver answered 410 Gone", http.StatusGone, id); err != nil {
			log.Error().Err(err).Str("webhookId", hook.WebhookID).Msg("webhooks: disabling an endpoint that answered 410 failed")
		}
	}
	if since, ok := d.failedFor(hook, rec, sent); ok {
		reason := fmt.Sprintf("no attempt succeeded for %s: failing since %s", days(d.cfg.DisableAfter), since.Format(time.RFC3339))
		if disabled, err := d.cfg.Webhooks.Disable(ctx, hook.WebhookID, hook.URL, reason, 0, id); err != nil {
			log.Error().Err(err).Str("webhookId", hook.WebhookID).Msg("webhooks: disabling an endpoint that kept failing failed")
		} else if disabled {
			log.Warn().Str("webhookId", hook.WebhookID).Str("tenant", hook.Tenant).Time("failingSince", since).Msg("webhooks: an endpoint whose attempts all failed for too long is disabled")
		}
	}
	if d.cfg.OnAttempt != nil {
		d.cfg.OnAttempt(rec.Outcome)
	}
}

// failedFor reports whether the attempt rec, a failure of a request sent
// (not of the event's read), ends the time an endpoint may fail: no
// attempt of it succeeded since the first failure after its last
// success, DisableAfter before rec.
func (d *Dispatcher) failedFor(hook *domain.Webhook, rec domain.WebhookAttemptRecorded, sent bool) (since time.Time, ok bool) {
	if !sent || hook == nil || d.cfg.DisableAfter < 0 || (rec.Outcome != domain.WebhookRetrying && rec.Outcome != domain.WebhookFailed) {
		return time.Time{}, false
	}
	d.mu.Lock()
	since, ok = d.failingSince[hook.WebhookID]
	d.mu.Unlock()
	return since, ok && rec.At.Sub(since) >= d.cfg.DisableAfter
}

// days is d in days when it is whole days (as it is but in tests).
func days(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}

// holdBack puts off delivery id's next claim after the store refused one
// (full, failed, unreachable): due again at once, it was claimed again
// thousands of times a second, each logged, for as long as the store
// refused. It returns the wait.
func (d *Dispatcher) holdBack(id string) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.pending[id]
	if p == nil {
		return 0
	}
	wait := min(claimRetry<<min(p.claimFails, 5), claimRetryMax)
	p.claimFails++
	if next := d.cfg.Now().Add(wait); p.at.Before(next) {
		p.at = next
	}
	return wait
}

// deliveryError is a failed attempt's error as the endpoint's tenant reads
// it (the deliveries listing). It leaves out what Baton's network told it
// on the way: the internal address a name resolved to (the guard's
// refusal), the resolver a failed lookup asked, and the local address of
// a connection that failed once open. With them, a tenant
// could learn the operator's internal addresses by registering names.
func deliveryError(err error) string {
	prefix := ""
	if ue, ok := errors.AsType[*url.Error](err); ok {
		prefix = fmt.Sprintf("%s %q: ", ue.Op, ue.URL)
	}
	if errors.Is(err, ErrBlockedAddress) {
		return prefix + ErrBlockedAddress.Error()
	}
	if de, ok := errors.AsType[*net.DNSError](err); ok && de.Server != "" {
		c := *de // a copy: a lookup's error may be shared by the dials that waited for it
		c.Server = ""
		return prefix + "dial: " + c.Error()
	}
	if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Source != nil {
		// An error on an open connection names its local end too: the
		// address Baton's host has inside its network.
		c := *oe
		c.Source = nil
		return strings.Replace(err.Error(), oe.Error(), c.Error(), 1)
	}
	return err.Error()
}

// NextWait is the wait before the next attempt after the round's attempt
// number made (1-based) failed: the schedule's, or a 429's or 503's
// Retry-After (bounded by maxRetryAfter) when that is longer. A shorter
// Retry-After does not hurry the schedule: a receiver asking for a few
// seconds of rest, each time, spent the eight attempts in about 20 s.
// again is false when the schedule is spent.
func NextWait(made int, schedule []time.Duration, retryAfter time.Duration, hasRetryAfter bool, maxRetryAfter time.Duration) (wait time.Duration, again bool) {
	if made < 1 || made > len(schedule) {
		return 0, false
	}
	wait = schedule[made-1]
	if hasRetryAfter {
		wait = max(wait, min(max(retryAfter, 0), maxRetryAfter))
	}
	return wait, true
}

// Sign is the webhook-signature value for a message: one "v1,<base64
// HMAC-SHA256>" per secret, space-separated, over id.timestamp.body
// with the secret's bytes (the base64 after whsec_).
func Sign(secrets []string, id string, ts int64, body []byte) (string, error) {
	var sigs []string
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, domain.WebhookSecretPrefix))
		if err != nil {
			return "", errors.New("webhook: a signing secret is not base64")
		}
		mac := hmac.New(sha256.New, key)
		fmt.Fprintf(mac, "%s.%d.", id, ts)
		mac.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(sigs, " "), nil
}

// send makes one attempt: POST the delivery's body to the endpoint,
// signed with every secret that signs now. answer is what the attempt
// keeps of the receiver's answer body.
func (d *Dispatcher) send(ctx context.Context, hook *domain.Webhook, del *domain.WebhookDelivery, body []byte) (status int, retryAfter time.Duration, hasRetryAfter bool, answer domain.WebhookAnswer, err error) {
	now := d.cfg.Now()
	ts := now.Unix()
	sig, err := Sign(hook.Secrets(now), del.DeliveryID, ts, body)
	if err != nil {
		return 0, 0, false, answer, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, false, answer, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Baton-Webhooks/1")
	req.Header.Set("webhook-id", del.DeliveryID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return 0, 0, false, answer, fmt.Errorf("no answer within %v", d.cfg.Timeout)
		}
		return 0, 0, false, answer, err
	}
	defer resp.Body.Close()
	// The attempt's time bounds reading the answer too: a 101 Switching
	// Protocols answer's body is the connection itself, which the
	// request's context no longer watches, and a receiver holding it open
	// held the attempt for good.
	defer context.AfterFunc(ctx, func() { resp.Body.Close() })()
	// The start of the answer is kept; the rest, up to 64 KiB, is read so
	// that the connection can be used again.
	start := make([]byte, domain.MaxWebhookAnswer+1)
	n, _ := io.ReadFull(resp.Body, start)
	if n > 0 {
		answer = domain.NewWebhookAnswer(start[:n], false)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10-int64(n)))
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		retryAfter, hasRetryAfter = domain.ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	}
	return resp.StatusCode, retryAfter, hasRetryAfter, answer, nil
}
