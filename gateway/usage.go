package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/eventstore"
)

// EventUsageRecorded is the type of a usage event of one call, written
// until 2026-11-28 and still read (UsageRecords).
const EventUsageRecorded = "UsageRecorded"

// EventUsageBatchRecorded is the type of usage events: the records of the
// calls one writer window settled for a tenant (UsageRecords reads them).
const EventUsageBatchRecorded = "UsageBatchRecorded"

// UsageRecord is one model call as billed.
type UsageRecord struct {
	Tenant    string   `json:"tenant"`
	KeyID     string   `json:"keyId"`
	Front     string   `json:"front"` // chat.completions, messages or responses
	Model     string   `json:"model"` // <provider>:<model>
	Provider  string   `json:"provider"`
	Stream    bool     `json:"stream"`
	Usage     Usage    `json:"usage"`
	CostUSD   *float64 `json:"costUsd"` // null when the model has no price: unknown, never 0
	LatencyMs int64    `json:"latencyMs"`
	Outcome   string   `json:"outcome"` // ok, partial, upstream_error, client_gone
	RequestID string   `json:"requestId"`
	// At is when the cost counts (the settling replica's clock): the day
	// and month it falls in for every replica, whenever the event lands.
	At time.Time `json:"at,omitzero"`
	// AutoTier: the call named no service tier (or auto), to a model with
	// a fast rate, and Usage.ServiceTier is the tier its provider served it
	// at: what every replica learns the provider's default from
	// (Budgets.ServesAutoFast).
	AutoTier bool `json:"autoTier,omitempty"`
}

// UsageStream is where a tenant's usage events go.
func UsageStream(tenant string) string { return "usage-" + tenant }

// CostOf prices a request's usage on a model; nil when there is no price
// for it (priceFor). The tier the answer says it was served at
// (Usage.ServiceTier: OpenAI may serve auto at a project's default of
// fast) is billed at its rate; one the price has no rate for is billed at
// req's tier's rates (the held tier: Caller.TierFor), the only rate Baton
// knows for the call (docs/api.md, Budgets). The geography it ran in
// (Usage.Geo: a workspace's default may be the US) likewise.
func CostOf(req Request, m *Model, u Usage) *float64 {
	p, _ := priceFor(req, m)
	if p == nil {
		return nil
	}
	// Both have rates: priceFor found them.
	tier, _ := p.TierRate(req.ServiceTier)
	geo, _ := p.GeoRate(req.Geo)
	if served, ok := p.TierRate(u.ServiceTier); ok && u.ServiceTier != "" {
		tier = served
	}
	if ran, ok := p.GeoRate(u.Geo); ok && u.Geo != "" {
		geo = ran // a workspace's default geography bills as asked for
	}
	c := p.costAt(u, tier*geo, req.SearchPreview)
	return &c
}

// DefaultUsageLinger is how long the usage writer waits after a record for
// more to join its batch. Each commit costs two fdatasyncs and a pass of
// every feed follower, whatever it holds: at a model's pace (a few hundred
// calls a second) a 10 ms window cost Baton about 12% more CPU per call
// than 50 ms (docs/benchmarks.md). A crash loses at most one window's
// records (docs/operations.md); serve --usage-linger sets it.
const DefaultUsageLinger = 50 * time.Millisecond

// MaxUsageLinger bounds the window an operator may set: what a crash may
// lose, and how late other replicas see a call's spending.
const MaxUsageLinger = time.Second

// UsageWriter appends usage events off the request path: one goroutine
// gathers the records of a short window (Linger, or 512 records) and
// appends them, one append per tenant stream, so a stream of calls costs a
// few commits a second instead of one each. A crash loses at most the
// window's records (docs/operations.md). Close drains the queue.
type UsageWriter struct {
	// Linger is the batching window; 0 appends whatever has queued up at
	// once. Set it before the first Record.
	Linger time.Duration
	// PerCall writes each record as a UsageRecorded event of its own, as
	// before 2026-11-28, which older replicas read (they ignore batches):
	// for the time replicas sharing a store are upgraded. Set it before
	// the first Record.
	PerCall bool

	store eventstore.Store
	in    chan usageItem
	done  chan struct{}
	onErr func(uuid.UUID, UsageRecord, error)
	start sync.Once // the goroutine starts with the first record

	mu     sync.RWMutex // Close takes it whole; Record shares it
	closed bool

	// held are appends the store refused for a while (a full disk, an
	// outage), kept in order and tried again: the answers have gone out,
	// so these records are owed. Only the writer's goroutine touches it.
	held      []heldAppend
	heldCount int
	heldErr   error // the store's last refusal, told with records lost
	// RetryEvery is how often held appends are tried again; 0 means 1 s.
	RetryEvery time.Duration
}

// heldAppend is one tenant's append as first encoded: the same event ids
// each try, so an append that did commit is answered, not written twice.
type heldAppend struct {
	tenant string
	evs    []eventstore.EventData
	items  []usageItem
}

// MaxHeldUsageRecords bounds the records held while the store refuses
// them (some 30 MB at most); a record past it is reported lost.
const MaxHeldUsageRecords = 1 << 16

// refusedForNow says whether a refused append may succeed later unchanged.
func refusedForNow(err error) bool {
	return errors.Is(err, eventstore.ErrFull) || eventstore.MayHaveCommitted(err)
}

type usageItem struct {
	id  uuid.UUID
	rec UsageRecord
}

// NewUsageWriter makes a writer; its goroutine starts with the first
// record. Appends the store refuses for now (a full disk, an outage) are
// held and tried again; onErr hears records that are lost, with their
// event ids: refused for good, past MaxHeldUsageRecords, or still held at
// Close (the answer has gone out).
func NewUsageWriter(store eventstore.Store, onErr func(uuid.UUID, UsageRecord, error)) *UsageWriter {
	return &UsageWriter{Linger: DefaultUsageLinger, store: store, in: make(chan usageItem, 4096), done: make(chan struct{}), onErr: onErr}
}

// Record queues a usage event with the given id. It blocks only when the
// queue is full (the store is behind): back-pressure, not loss.
func (w *UsageWriter) Record(id uuid.UUID, rec UsageRecord) {
	if id == uuid.Nil {
		id = uuid.Must(uuid.NewV7())
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		// A call that outlived the server's shutdown: write it here.
		w.write([]usageItem{{id, rec}}, false)
		return
	}
	w.start.Do(func() { go w.run() })
	w.in <- usageItem{id, rec}
}

// Close appends what is queued and stops the writer. A Record after Close
// appends at once, on the caller's goroutine.
func (w *UsageWriter) Close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	started := true
	w.start.Do(func() { started = false })
	close(w.in)
	w.mu.Unlock()
	if started {
		<-w.done
	}
}

func (w *UsageWriter) run() {
	defer close(w.done)
	var window *time.Timer
	if w.Linger > 0 {
		window = time.NewTimer(w.Linger)
		window.Stop()
	}
	every := w.RetryEvery
	if every <= 0 {
		every = time.Second
	}
	retry := time.NewTimer(every)
	retry.Stop()
	defer func() {
		// Closing: one more try of what is held, then it is lost.
		w.retryHeld(30 * time.Second)
		for _, h := range w.held {
			for _, it := range h.items {
				w.fail(it, w.heldErr)
			}
		}
		w.held, w.heldCount = nil, 0
	}()
	for {
		var first usageItem
		select {
		case it, ok := <-w.in:
			if !ok {
				return
			}
			first = it
		case <-retry.C:
			w.retryHeld(5 * time.Second)
			if len(w.held) > 0 {
				retry.Reset(every)
			}
			continue
		}
		batch := []usageItem{first}
		var expired <-chan time.Time
		if window != nil {
			window.Reset(w.Linger)
			expired = window.C
		}
	more:
		for len(batch) < 512 {
			if expired == nil {
				select {
				case it, ok := <-w.in:
					if !ok {
						break more
					}
					batch = append(batch, it)
				default:
					break more
				}
				continue
			}
			select {
			case it, ok := <-w.in:
				if !ok {
					break more // closing: append now
				}
				batch = append(batch, it)
			case <-expired:
				expired = nil
				break more
			}
		}
		if window != nil && expired != nil {
			window.Stop()
		}
		wasHeld := len(w.held) > 0
		w.write(batch, true)
		if !wasHeld && len(w.held) > 0 {
			retry.Reset(every)
		}
	}
}

// write appends batch; with hold, what the store refuses for now is held
// (the writer's goroutine only: after Close it is reported at once).
func (w *UsageWriter) write(batch []usageItem, hold bool) {
	// One append per tenant stream, a tenant's records in their order.
	slices.SortStableFunc(batch, func(a, b usageItem) int { return strings.Compare(a.rec.Tenant, b.rec.Tenant) })
	for len(batch) > 0 {
		n := 1
		for n < len(batch) && batch[n].rec.Tenant == batch[0].rec.Tenant {
			n++
		}
		tenant, items := batch[0].rec.Tenant, batch[:n]
		batch = batch[n:]
		evs, sent := w.events(tenant, items)
		if len(evs) == 0 {
			continue
		}
		if hold && len(w.held) > 0 {
			// The store refuses appends: queue behind what waits, in order.
			w.hold(tenant, evs, sent, w.heldErr)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := appendUnordered(ctx, w.store, UsageStream(tenant), evs...)
		cancel()
		if err == nil {
			continue
		}
		if hold && refusedForNow(err) {
			w.hold(tenant, evs, sent, err)
			continue
		}
		for _, it := range sent { // each failed record is reported once
			w.fail(*it, err)
		}
	}
}

// hold keeps a refused append to try again, within MaxHeldUsageRecords.
func (w *UsageWriter) hold(tenant string, evs []eventstore.EventData, sent []*usageItem, err error) {
	if w.heldCount+len(sent) > MaxHeldUsageRecords {
		for _, it := range sent {
			w.fail(*it, err)
		}
		return
	}
	items := make([]usageItem, len(sent))
	for i, it := range sent {
		items[i] = *it
	}
	w.held = append(w.held, heldAppend{tenant, evs, items})
	w.heldErr = err
	w.heldCount += len(items)
}

// retryHeld appends held records in order until the store refuses again.
func (w *UsageWriter) retryHeld(timeout time.Duration) {
	for len(w.held) > 0 {
		h := w.held[0]
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		_, err := appendUnordered(ctx, w.store, UsageStream(h.tenant), h.evs...)
		cancel()
		if err != nil && refusedForNow(err) {
			w.heldErr = err
			return
		}
		if err != nil {
			for _, it := range h.items {
				w.fail(it, err)
			}
		}
		w.held[0] = heldAppend{}
		w.held = w.held[1:]
		w.heldCount -= len(h.items)
	}
	w.held = nil
}

// maxUsageBatchBytes bounds one batch event's data, a quarter of the
// embedded store's event limit: a window's records beyond it go in a
// second event of the same append. The append as a whole holds what the
// window's per-call events held before (512 records at most, some 200 KB):
// within KurrentDB's default 1 MiB a write unless records run to 2 KB.
const maxUsageBatchBytes = 1 << 20

// events encodes a tenant's records: in batches, or one event a call
// (PerCall).
func (w *UsageWriter) events(tenant string, items []usageItem) ([]eventstore.EventData, []*usageItem) {
	if w.PerCall {
		return w.perCallEvents(tenant, items)
	}
	return w.batchEvents(tenant, items)
}

// perCallEvents encodes each record as a UsageRecorded event of its own,
// under its call's id, as before 2026-11-28.
func (w *UsageWriter) perCallEvents(tenant string, items []usageItem) (evs []eventstore.EventData, sent []*usageItem) {
	for i := range items {
		it := &items[i]
		data, err := it.rec.appendJSON(make([]byte, 0, 384))
		if err != nil {
			w.fail(*it, err)
			continue
		}
		evs = append(evs, eventstore.EventData{ID: it.id, Type: EventUsageRecorded, Data: data,
			Metadata: eventstore.Metadata{Tenant: tenant, Actor: "key:" + it.rec.KeyID, RequestID: it.rec.RequestID, SchemaVersion: eventstore.SchemaVersion}})
		sent = append(sent, it)
	}
	return evs, sent
}

// batchEvents encodes a tenant's records as UsageBatchRecorded events,
// each {"records":[{"id":…, the record's fields…}, …]}: one event a
// window, not one a call, since every event costs the store its index
// entries and every feed follower a read, whatever it holds
// (docs/benchmarks.md). sent are the records the events hold; one that
// cannot be encoded is reported and left out.
func (w *UsageWriter) batchEvents(tenant string, items []usageItem) (evs []eventstore.EventData, sent []*usageItem) {
	var data, rec []byte
	flush := func() {
		if len(data) == 0 {
			return
		}
		data = append(data, "]}"...)
		evs = append(evs, eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: EventUsageBatchRecorded, Data: data,
			Metadata: eventstore.Metadata{Tenant: tenant, Actor: usageActor, SchemaVersion: eventstore.SchemaVersion}})
		data = nil
	}
	for i := range items {
		it := &items[i]
		var err error
		if rec, err = it.rec.appendJSON(rec[:0]); err != nil {
			w.fail(*it, err)
			continue
		}
		if len(data) > 0 && len(data)+len(rec) > maxUsageBatchBytes {
			flush()
		}
		if len(data) == 0 {
			data = make([]byte, 0, min(len(items)*(len(rec)+50), maxUsageBatchBytes)+64)
			data = append(data, `{"records":[`...)
		} else {
			data = append(data, ',')
		}
		data = append(data, `{"id":"`...)
		data = append(data, it.id.String()...)
		data = append(data, `",`...)
		data = append(data, rec[1:]...) // the record's object, after its opening brace
		sent = append(sent, it)
	}
	flush()
	return evs, sent
}

// usageActor is the actor of usage batch events: the gateway's writer,
// for the calls of many keys (each record names its key).
const usageActor = "gateway"

// UsageEntry is one call's record in a usage event: its id (the call's
// usage id) and its JSON object.
type UsageEntry struct {
	ID  uuid.UUID
	Raw string
}

// UsageRecords returns the records a usage event holds: a UsageRecorded
// event's one record (its id the event's; written until 2026-11-28), or
// each record of a UsageBatchRecorded event. Other events hold none. A
// batch that is not an object with a records array, or whose record is not
// an object with a UUID id, is an error, and none of its records is
// returned.
func UsageRecords(ev eventstore.RecordedEvent) ([]UsageEntry, error) {
	switch ev.Type {
	case EventUsageRecorded:
		return []UsageEntry{{ev.ID, string(ev.Data)}}, nil
	case EventUsageBatchRecorded:
	default:
		return nil, nil
	}
	records := gjson.GetBytes(ev.Data, "records")
	if !records.IsArray() { // each record used is decoded, and so checked, on its own
		return nil, fmt.Errorf("gateway: usage batch %s: not an object with a records array", ev.ID)
	}
	var entries []UsageEntry
	var bad error
	records.ForEach(func(_, r gjson.Result) bool {
		id, err := uuid.Parse(r.Get("id").Str)
		if !r.IsObject() || r.Get("id").Type != gjson.String || err != nil {
			bad = fmt.Errorf("gateway: usage batch %s: record %d is not an object with a UUID id", ev.ID, len(entries))
			return false
		}
		entries = append(entries, UsageEntry{id, r.Raw})
		return true
	})
	if bad != nil {
		return nil, bad
	}
	return entries, nil
}

// ExpandUsage returns evs with each usage batch as the per-call
// UsageRecorded events it holds (each with its record's id and data, the
// batch's stream, position and metadata): a tenant's usage as one event a
// call, whichever way it was written. A batch that cannot be read is left
// as it is.
func ExpandUsage(evs []eventstore.RecordedEvent) []eventstore.RecordedEvent {
	out := make([]eventstore.RecordedEvent, 0, len(evs))
	for _, ev := range evs {
		if ev.Type != EventUsageBatchRecorded {
			out = append(out, ev)
			continue
		}
		entries, err := UsageRecords(ev)
		if err != nil {
			out = append(out, ev)
			continue
		}
		for _, e := range entries {
			one := ev
			one.ID, one.Type, one.Data = e.ID, EventUsageRecorded, []byte(e.Raw)
			out = append(out, one)
		}
	}
	return out
}

func (w *UsageWriter) fail(it usageItem, err error) {
	if w.onErr != nil {
		w.onErr(it.id, it.rec, err)
	}
}

// EstimateUsage counts a call's tokens when the upstream reported none:
// the prompt as the provider would see it (system, every message's text,
// tool calls and results, tool definitions and the output schema, plus a
// few tokens of framing per message) and the output text, each through
// count. Estimated is set, so answers and usage events say so; the cost
// that follows is billed, never 0 for tokens that were used.
func EstimateUsage(req Request, output string, count func(string) int) Usage {
	in := count(req.System) + 3
	if len(req.Body) > 0 {
		in = count(string(req.Body)) // passed through: the body as sent, its JSON syntax with it
	}
	for _, m := range req.Messages {
		in += 4
		for _, b := range m.Content {
			in += count(b.Text) + count(b.Thinking) + count(b.Name) + count(string(b.Input))
			in += b.images(func(Block) int { return ImageTokens })
		}
	}
	for _, t := range req.Tools {
		in += count(t.Name) + count(t.Description) + count(string(t.Schema))
	}
	if req.Output != nil {
		in += count(req.Output.Name) + count(string(req.Output.Schema))
	}
	return Usage{InputTokens: in, OutputTokens: countOutput(req, output, count), Estimated: true}
}

// countOutput counts a call's output, no further than the request's cap
// allows for each of its answers: the provider bills no more, and a
// stream cut after megabytes would otherwise cost seconds of tokenizing.
func countOutput(req Request, output string, count func(string) int) int {
	limit := forEachAnswer(max(req.MaxTokens, 0), req.Choices)
	if limit == 0 || len(output) <= limit { // a token is at least a byte
		return count(output)
	}
	n, over, _ := countUpTo(output, limit, func(s string) (int, bool) { return count(s), true })
	if over {
		return limit
	}
	return n
}

// appendJSON appends json.Marshal's encoding of r without reflection: one
// is written for every model call (FuzzUsageRecordJSON holds the two to
// the same bytes). A record it cannot write (a cost that is not finite, a
// time json.Marshal refuses) it leaves to json.Marshal, for its error.
func (r *UsageRecord) appendJSON(b []byte) ([]byte, error) {
	if r.CostUSD != nil && (math.IsNaN(*r.CostUSD) || math.IsInf(*r.CostUSD, 0)) || !r.At.IsZero() && (r.At.Year() < 0 || r.At.Year() > 9999) {
		return json.Marshal(r)
	}
	str := func(b []byte, key, s string) []byte {
		return AppendJSONString(append(b, key...), s)
	}
	b = str(b, `{"tenant":`, r.Tenant)
	b = str(b, `,"keyId":`, r.KeyID)
	b = str(b, `,"front":`, r.Front)
	b = str(b, `,"model":`, r.Model)
	b = str(b, `,"provider":`, r.Provider)
	b = append(b, `,"stream":`...)
	b = strconv.AppendBool(b, r.Stream)
	u := r.Usage
	b = append(b, `,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(u.InputTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(u.OutputTokens), 10)
	if u.CacheReadTokens != 0 {
		b = append(b, `,"cache_read_input_tokens":`...)
		b = strconv.AppendInt(b, int64(u.CacheReadTokens), 10)
	}
	if u.CacheWriteTokens != 0 {
		b = append(b, `,"cache_creation_input_tokens":`...)
		b = strconv.AppendInt(b, int64(u.CacheWriteTokens), 10)
	}
	if u.CacheWrite1hTokens != 0 {
		b = append(b, `,"cache_creation_1h_input_tokens":`...)
		b = strconv.AppendInt(b, int64(u.CacheWrite1hTokens), 10)
	}
	if u.Estimated {
		b = append(b, `,"estimated":true`...)
	}
	if u.ServiceTier != "" {
		b = str(b, `,"service_tier":`, u.ServiceTier)
	}
	if u.WebSearches != 0 {
		b = append(b, `,"web_search_requests":`...)
		b = strconv.AppendInt(b, int64(u.WebSearches), 10)
	}
	if u.FileSearches != 0 {
		b = append(b, `,"file_search_calls":`...)
		b = strconv.AppendInt(b, int64(u.FileSearches), 10)
	}
	if u.Geo != "" {
		b = str(b, `,"inference_geo":`, u.Geo)
	}
	b = append(b, `},"costUsd":`...)
	if r.CostUSD == nil {
		b = append(b, "null"...)
	} else {
		b = AppendJSONFloat(b, *r.CostUSD)
	}
	b = append(b, `,"latencyMs":`...)
	b = strconv.AppendInt(b, r.LatencyMs, 10)
	b = str(b, `,"outcome":`, r.Outcome)
	b = str(b, `,"requestId":`, r.RequestID)
	if !r.At.IsZero() {
		b = append(b, `,"at":"`...)
		b = r.At.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if r.AutoTier {
		b = append(b, `,"autoTier":true`...)
	}
	return append(b, '}'), nil
}

// AppendJSONString appends s as a JSON string, as json.Marshal writes it:
// as it is, quoted, when nothing in it needs escaping.
func AppendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendJSONFloat is encoding/json's encoding of a finite float64.
func AppendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 is written e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// ReadUsage reads up to max events of a tenant's usage stream from its
// start, each call's record as an event of its own (ExpandUsage).
func ReadUsage(ctx context.Context, store eventstore.Store, tenant string, max int) ([]eventstore.RecordedEvent, error) {
	evs, err := store.ReadStream(ctx, UsageStream(tenant), 0, max)
	return ExpandUsage(evs), err
}
