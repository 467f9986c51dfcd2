package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/kurrent"
	"github.com/batonhq/baton/eventstore/kurrent/kurrenttest"
)

// The writer appends every record, batching per tenant, drains on Close,
// and a record that comes after Close is still appended.
func TestUsageWriterAppendsEverything(t *testing.T) {
	store, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var failed []error
	w := NewUsageWriter(store, func(_ uuid.UUID, _ UsageRecord, err error) { failed = append(failed, err) })
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Record(uuid.Nil, UsageRecord{Tenant: fmt.Sprintf("t%d", i%3), KeyID: "k", Model: "local:echo", Outcome: "ok"})
		}()
	}
	wg.Wait()
	w.Close()
	w.Record(uuid.Nil, UsageRecord{Tenant: "t0", Outcome: "late"})
	w.Close() // twice is fine
	total := 0
	for i := range 3 {
		evs, err := ReadUsage(context.Background(), store, fmt.Sprintf("t%d", i), 1000)
		if err != nil {
			t.Fatal(err)
		}
		total += len(evs)
	}
	if total != 201 || len(failed) != 0 {
		t.Fatalf("%d usage events, failures %v", total, failed)
	}
}

// The worst case covers a model without a declared context and the
// structured-output schema.
func TestWorstCaseBounds(t *testing.T) {
	m := &Model{ID: "x:y", Pricing: &Price{InputPerMTok: 1, OutputPerMTok: 1}}
	req := Request{Messages: []Message{{Role: "user", Content: []Block{{Type: "text", Text: "hi"}}}}}
	if _, out := WorstTokens(req, m); out != unknownOutputCap {
		t.Fatalf("out %d without a cap or a context size", out)
	}
	// A declared context bounds it, and a declared most output more
	// tightly (what a request without a cap may get).
	m.ContextTokens = 1000000
	if _, out := WorstTokens(req, m); out != 1000000 {
		t.Fatalf("out %d, want the context", out)
	}
	m.MaxOutputTokens = 128000
	if _, out := WorstTokens(req, m); out != 128000 {
		t.Fatalf("out %d, want the most output", out)
	}
	req.MaxTokens = 500
	if _, out := WorstTokens(req, m); out != 500 {
		t.Fatalf("out %d, want the cap", out)
	}
	req.MaxTokens, m.ContextTokens, m.MaxOutputTokens = 0, 0, 0
	in0, _ := WorstTokens(req, m)
	req.Output = &OutputSchema{Name: "emit", Schema: make([]byte, 5000)}
	if in1, _ := WorstTokens(req, m); in1 < in0+5000+structuredOverhead {
		t.Fatalf("schema not counted: %d vs %d", in1, in0)
	}
}

// The worst case prices each input token at the dearest rate it may be
// billed at: the 1-hour cache write's, when the price has one above the
// input and 5-minute write rates (a passed-through request may ask for a
// 1-hour cache of its whole prompt).
func TestWorstCostOneHourCacheWrites(t *testing.T) {
	req := Request{MaxTokens: 100, Messages: []Message{{Role: "user", Content: []Block{{Type: "text", Text: "hi"}}}}}
	m := &Model{ID: "x:y", Pricing: &Price{InputPerMTok: 4, OutputPerMTok: 20, CacheWritePerMTok: 5, CacheWrite1hPerMTok: 8}}
	in, out := WorstTokens(req, m)
	if got, want := *WorstCost(req, m), (float64(in)*8+float64(out)*20)/1e6; got != want {
		t.Fatalf("worst cost %v, want %v (the input at the 1-hour write rate)", got, want)
	}
	// Every input token written to a 1-hour cache costs no more than that.
	if c := m.Pricing.Cost(Usage{CacheWriteTokens: in, CacheWrite1hTokens: in, OutputTokens: out}); c > *WorstCost(req, m)+usdUnit {
		t.Fatalf("a call costs %v, over its worst case %v", c, *WorstCost(req, m))
	}
	m.Pricing.CacheWrite1hPerMTok = 0 // no 1-hour rate: the 5-minute one
	if got, want := *WorstCost(req, m), (float64(in)*5+float64(out)*20)/1e6; got != want {
		t.Fatalf("worst cost without a 1-hour rate %v, want %v", got, want)
	}
	m.Pricing.LongPrompt = &LongPromptPrice{PromptTokens: 1, InputPerMTok: 8, OutputPerMTok: 30, CacheWritePerMTok: 10, CacheWrite1hPerMTok: 16}
	if got, want := *WorstCost(req, m), (float64(in)*16+float64(out)*30)/1e6; got != want {
		t.Fatalf("worst cost past the long-prompt threshold %v, want %v", got, want)
	}
}

// countingStore counts successful appends.
type countingStore struct {
	eventstore.Store
	appends atomic.Int64
}

func (c *countingStore) Append(ctx context.Context, stream string, expected eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	res, err := c.Store.Append(ctx, stream, expected, evs...)
	if err == nil {
		c.appends.Add(1)
	}
	return res, err
}

// Records arriving within the linger window share one append; a full
// batch (512) does not wait for the window.
func TestUsageWriterLingerBatches(t *testing.T) {
	inner, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	store := &countingStore{Store: inner}
	w := NewUsageWriter(store, nil)
	w.Linger = time.Hour // only a full batch or Close ends a window here
	for range 512 + 100 {
		w.Record(uuid.Nil, UsageRecord{Tenant: "t", Outcome: "ok"})
	}
	// The first 512 went out as one append without waiting for the hour.
	deadline := time.Now().Add(10 * time.Second)
	for store.appends.Load() < 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := store.appends.Load(); n != 1 {
		t.Fatalf("%d appends for the first full batch, want 1", n)
	}
	w.Close() // ends the second window: its 100 records in one append
	evs, err := ReadUsage(context.Background(), inner, "t", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if n := store.appends.Load(); n != 2 || len(evs) != 612 {
		t.Fatalf("%d appends, %d records; want 2 appends of 612 records", n, len(evs))
	}
	// One event an append, whatever it holds.
	if raw, err := inner.ReadStream(context.Background(), UsageStream("t"), 0, 1000); err != nil || len(raw) != 2 {
		t.Fatalf("%d events (%v), want 2", len(raw), err)
	}
}

// refusingStore refuses every append.
type refusingStore struct{ eventstore.Store }

func (refusingStore) Append(context.Context, string, eventstore.ExpectedRevision, ...eventstore.EventData) (eventstore.AppendResult, error) {
	return eventstore.AppendResult{}, errors.New("refused")
}

// Each record that could not be appended is reported once, with its id,
// also when it could not even be encoded (a NaN cost) and the append of
// the others failed too.
func TestUsageWriterReportsEachFailureOnce(t *testing.T) {
	inner, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	reported := map[uuid.UUID]int{}
	w := NewUsageWriter(refusingStore{inner}, func(id uuid.UUID, _ UsageRecord, _ error) { reported[id]++ })
	w.Linger = time.Hour
	nan := math.NaN()
	bad, good := uuid.New(), uuid.New()
	w.Record(bad, UsageRecord{Tenant: "t", CostUSD: &nan})
	w.Record(good, UsageRecord{Tenant: "t"})
	w.Close()
	if reported[bad] != 1 || reported[good] != 1 || len(reported) != 2 {
		t.Fatalf("reports %v", reported)
	}
}

// fullStore answers ErrFull while full is set.
type fullStore struct {
	eventstore.Store
	full    atomic.Bool
	refused atomic.Int64
}

func (f *fullStore) Append(ctx context.Context, stream string, expected eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if f.full.Load() {
		f.refused.Add(1)
		return eventstore.AppendResult{}, fmt.Errorf("append: %w", eventstore.ErrFull)
	}
	return f.Store.Append(ctx, stream, expected, evs...)
}

// Records the store refuses for a full disk are held and appended once
// there is room, in their order, none lost and none twice; records that
// come meanwhile queue behind them.
func TestUsageWriterHoldsRecordsWhileTheDiskIsFull(t *testing.T) {
	inner, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	store := &fullStore{Store: inner}
	store.full.Store(true)
	var lost atomic.Int64
	w := NewUsageWriter(store, func(uuid.UUID, UsageRecord, error) { lost.Add(1) })
	w.Linger = time.Millisecond
	w.RetryEvery = 10 * time.Millisecond

	for i := range 30 {
		w.Record(uuid.Nil, UsageRecord{Tenant: fmt.Sprintf("t%d", i%2), RequestID: fmt.Sprint(i), Outcome: "ok"})
		if i == 10 {
			for store.refused.Load() < 1 { // refused at least once
				time.Sleep(time.Millisecond)
			}
		}
	}
	store.full.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		for _, t0 := range []string{"t0", "t1"} {
			evs, err := ReadUsage(context.Background(), inner, t0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			n += len(evs)
		}
		if n == 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 30 records appended after the disk had room again", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.Close()
	for _, t0 := range []string{"t0", "t1"} {
		evs, _ := ReadUsage(context.Background(), inner, t0, 1000)
		last := -1
		for _, ev := range evs {
			recs, err := UsageRecords(ev)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				var rec UsageRecord
				if err := json.Unmarshal([]byte(r.Raw), &rec); err != nil {
					t.Fatal(err)
				}
				var i int
				fmt.Sscan(rec.RequestID, &i)
				if i <= last {
					t.Fatalf("%s: record %d after %d", t0, i, last)
				}
				last = i
			}
		}
	}
	if lost.Load() != 0 {
		t.Fatalf("%d records reported lost", lost.Load())
	}
}

// Records still refused when the writer closes are reported lost, each
// once, with the store's reason.
func TestUsageWriterReportsHeldRecordsAtClose(t *testing.T) {
	inner, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	store := &fullStore{Store: inner}
	store.full.Store(true)
	reported := map[uuid.UUID]error{}
	var mu sync.Mutex
	w := NewUsageWriter(store, func(id uuid.UUID, _ UsageRecord, err error) {
		mu.Lock()
		defer mu.Unlock()
		if _, twice := reported[id]; twice {
			t.Errorf("%s reported twice", id)
		}
		reported[id] = err
	})
	w.Linger = time.Millisecond
	w.RetryEvery = 5 * time.Millisecond

	ids := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	for _, id := range ids {
		w.Record(id, UsageRecord{Tenant: "t", Outcome: "ok"})
	}
	deadline := time.Now().Add(10 * time.Second)
	for store.refused.Load() < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("%d appends tried: the writer does not try again", store.refused.Load())
		}
		time.Sleep(time.Millisecond)
	}
	w.Close()
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if err, ok := reported[id]; !ok || !errors.Is(err, eventstore.ErrFull) {
			t.Fatalf("%s: reported %v (%v)", id, ok, err)
		}
	}
}

// A cut stream's output is counted no further than the request's cap for
// each answer: the provider bills no more.
func TestEstimateUsageOutputBoundedByTheCap(t *testing.T) {
	out := strings.Repeat("lorem ipsum dolor ", 60_000) // about 1 MiB, some 180,000 tokens
	whole := EstimateUsage(Request{}, out, countOr4).OutputTokens
	if whole < 100_000 {
		t.Fatalf("the premise: %d tokens", whole)
	}
	if got := EstimateUsage(Request{MaxTokens: 1000}, out, countOr4).OutputTokens; got != 1000 {
		t.Fatalf("capped at 1,000: %d", got)
	}
	if got := EstimateUsage(Request{MaxTokens: 1000, Choices: 3}, out, countOr4).OutputTokens; got != 3000 {
		t.Fatalf("3 answers of 1,000: %d", got)
	}
	if got := EstimateUsage(Request{MaxTokens: 1 << 30}, out, countOr4).OutputTokens; got != whole {
		t.Fatalf("a cap above the count: %d, want the count %d", got, whole)
	}
	short := "hello there"
	if got, want := EstimateUsage(Request{MaxTokens: 100}, short, countOr4).OutputTokens, countOr4(short); got != want {
		t.Fatalf("a cap above the text's bytes: %d, want %d", got, want)
	}
}

// Web searches are billed at WebSearchPerK once, past the long-prompt
// threshold too, and not at a tier's multiple: a tier's premium is on the
// tokens. The worst case holds for them the same way.
func TestWebSearchCost(t *testing.T) {
	m := &Model{ID: "x:y", Pricing: &Price{InputPerMTok: 1, OutputPerMTok: 5, WebSearchPerK: 10, FastRate: 2,
		LongPrompt: &LongPromptPrice{PromptTokens: 100, InputPerMTok: 2, OutputPerMTok: 10}}}
	for _, c := range []struct {
		u    Usage
		want float64
	}{
		{Usage{InputTokens: 10, OutputTokens: 5, WebSearches: 3}, (10*1.0+5*5.0)/1e6 + 0.03},
		{Usage{InputTokens: 200, OutputTokens: 5, WebSearches: 3}, (200*2.0+5*10.0)/1e6 + 0.03},
		{Usage{InputTokens: 10, OutputTokens: 5, WebSearches: 3, ServiceTier: "priority"}, 2*(10*1.0+5*5.0)/1e6 + 0.03},
		{Usage{InputTokens: 10, OutputTokens: 5, WebSearches: -3}, (10*1.0 + 5*5.0) / 1e6},
	} {
		if got := *CostOf(Request{}, m, c.u); math.Abs(got-c.want) > usdUnit {
			t.Errorf("%+v: cost %v, want %v", c.u, got, c.want)
		}
	}
	req := Request{MaxTokens: 100, WebSearches: 4, Messages: []Message{{Role: "user", Content: []Block{{Type: "text", Text: "hi"}}}}}
	in, out := WorstTokens(req, m)
	for tier, rate := range map[string]float64{"": 1, "fast": 2} {
		req.ServiceTier = tier
		if got, want := *WorstCost(req, m), rate*(float64(in)*1+float64(out)*5)/1e6+0.04; math.Abs(got-want) > usdUnit {
			t.Errorf("tier %q: worst cost %v, want %v", tier, got, want)
		}
	}
}

// Per call, each record is a UsageRecorded event of its own, under its
// call's id, as before 2026-11-28 (what older replicas read).
func TestUsageWriterPerCallWritesAnEventACall(t *testing.T) {
	store, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	w := NewUsageWriter(store, func(_ uuid.UUID, _ UsageRecord, err error) { t.Error(err) })
	w.PerCall = true
	var ids []uuid.UUID
	for i := range 3 {
		id := uuid.Must(uuid.NewV7())
		ids = append(ids, id)
		w.Record(id, UsageRecord{Tenant: "t", KeyID: "k", Model: "local:echo", Outcome: "ok", LatencyMs: int64(i)})
	}
	w.Close()
	evs, err := store.ReadStream(context.Background(), UsageStream("t"), 0, 10)
	if err != nil || len(evs) != 3 {
		t.Fatalf("%d events (%v)", len(evs), err)
	}
	for i, ev := range evs {
		var rec UsageRecord
		if err := json.Unmarshal(ev.Data, &rec); err != nil || ev.Type != EventUsageRecorded || ev.ID != ids[i] || rec.LatencyMs != int64(i) || ev.Metadata.Actor != "key:k" {
			t.Fatalf("event %d: %s %s %s %+v (%v)", i, ev.Type, ev.ID, ev.Metadata.Actor, rec, err)
		}
	}
}

// Records after Close, from several goroutines, on a store that refuses
// them for now: each is reported at once (no goroutine is left to try
// again), and they share nothing (run under -race).
func TestUsageWriterAfterCloseReportsRefusalsAtOnce(t *testing.T) {
	inner, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	store := &fullStore{Store: inner}
	store.full.Store(true)
	var lost atomic.Int64
	w := NewUsageWriter(store, func(uuid.UUID, UsageRecord, error) { lost.Add(1) })
	w.Close()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { w.Record(uuid.Nil, UsageRecord{Tenant: "t", Outcome: "ok"}) })
	}
	wg.Wait()
	if lost.Load() != 8 {
		t.Fatalf("%d of 8 reported", lost.Load())
	}
}

// lostAckStore commits an append to a usage stream and then answers the
// first few as a store that went away mid-write does.
type lostAckStore struct {
	eventstore.Store
	lose atomic.Int64
}

func (s *lostAckStore) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	res, err := s.Store.Append(ctx, stream, exp, evs...)
	if err == nil && strings.HasPrefix(stream, "usage-") && s.lose.Add(-1) >= 0 {
		return eventstore.AppendResult{}, fmt.Errorf("lost answer: %w", eventstore.ErrUnavailable)
	}
	return res, err
}

// A usage append whose answer was lost, though it committed, is held and
// appended again with the same event ids, which the store answers from
// the commit: each record is in the stream once, and counted once by the
// replica that settled it and by one that follows the feed, on the
// embedded store and on KurrentDB's test double.
func TestUsageWriterLostAnswerCountsOnce(t *testing.T) {
	for _, kind := range []string{"bolt", "kurrent"} {
		t.Run(kind, func(t *testing.T) {
			var inner eventstore.Store
			if kind == "bolt" {
				s, err := bolt.Open(t.TempDir(), bolt.Options{})
				if err != nil {
					t.Fatal(err)
				}
				inner = s
			} else {
				srv, err := kurrenttest.Start(kurrenttest.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(srv.Stop)
				s, err := kurrent.Open(t.Context(), kurrent.Config{URL: srv.URL()})
				if err != nil {
					t.Fatal(err)
				}
				inner = s
			}
			defer inner.Close()
			store := &lostAckStore{Store: inner}
			store.lose.Store(3)
			settling := NewBudgets(nil)
			w := NewUsageWriter(store, func(id uuid.UUID, _ UsageRecord, err error) { t.Errorf("%s lost: %v", id, err) })
			w.Linger = time.Millisecond
			w.RetryEvery = 5 * time.Millisecond
			const calls = 6
			for i := range calls {
				hold, err := settling.Reserve(t.Context(), "t", "m", nil)
				if err != nil {
					t.Fatal(err)
				}
				cost, id, at := 1.0, hold.UsageID(), settling.Now()
				hold.Settle(&cost, id, at)
				w.Record(id, UsageRecord{Tenant: "t", CostUSD: &cost, RequestID: fmt.Sprint(i), Outcome: "ok", At: at})
				time.Sleep(2 * time.Millisecond) // one window each, so that several are lost
			}
			// Every lost answer taken, and then an append that was answered
			// (the writer's queue drains in order).
			deadline := time.Now().Add(10 * time.Second)
			for store.lose.Load() >= -1 {
				if time.Now().After(deadline) {
					t.Fatalf("%d answers still to lose", store.lose.Load()+1)
				}
				cost := 0.0
				w.Record(uuid.Nil, UsageRecord{Tenant: "u", CostUSD: &cost, Outcome: "ok"})
				time.Sleep(5 * time.Millisecond)
			}
			w.Close()
			evs, err := ReadUsage(t.Context(), inner, "t", 100)
			if err != nil || len(evs) != calls {
				t.Fatalf("%d records in the stream (%v), want %d", len(evs), err, calls)
			}
			(&Follower{Store: inner, Appliers: []Applier{settling}}).CatchUp(t.Context())
			other := newReplica(t, inner, nil)
			for name, b := range map[string]*Budgets{"settling": settling, "following": other.Budgets} {
				if got := b.Status("t").DaySpent; got != calls {
					t.Fatalf("the %s replica counts %v spent, want %d", name, got, calls)
				}
			}
		})
	}
}

// A usage event delivered twice under one id (a store that wrote a
// retried append again once it forgot the id: KurrentDB's cache of recent
// ids does not outlive a restart) is counted once by a following replica,
// and an event seen longer ago than the ids it remembers counts again.
func TestFollowerCountsAUsageEventOnce(t *testing.T) {
	store, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	w := NewUsageWriter(store, func(id uuid.UUID, _ UsageRecord, err error) { t.Errorf("%s lost: %v", id, err) })
	for i := range 3 {
		cost := 1.0
		w.Record(uuid.New(), UsageRecord{Tenant: "t", CostUSD: &cost, RequestID: fmt.Sprint(i), Outcome: "ok", At: time.Now()})
	}
	w.Close()
	evs, err := eventstore.ReadWholeStream(t.Context(), store, UsageStream("t"))
	if err != nil || len(evs) == 0 {
		t.Fatalf("%d usage events: %v", len(evs), err)
	}
	b := NewBudgets(nil)
	for range 2 {
		for _, ev := range evs {
			if err := b.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := b.Status("t").DaySpent; got != 3 {
		t.Fatalf("%v spent after each event came twice, want 3", got)
	}
	// Forgotten after seenUsageEvents others.
	for range seenUsageEvents {
		b.mu.Lock()
		b.firstSight(uuid.New())
		b.mu.Unlock()
	}
	if len(b.seen) != seenUsageEvents {
		t.Fatalf("%d ids remembered, want %d", len(b.seen), seenUsageEvents)
	}
	for _, ev := range evs {
		b.Apply(ev)
	}
	if got := b.Status("t").DaySpent; got != 6 {
		t.Fatalf("%v spent once the ids were forgotten, want 6", got)
	}
}
