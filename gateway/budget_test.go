package gateway

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
)

func limitsEvent(t *testing.T, tenant string, daily, monthly *float64) eventstore.RecordedEvent {
	t.Helper()
	b, _ := json.Marshal(BudgetSet{Tenant: tenant, Limits: Limits{DailyUSD: daily, MonthlyUSD: monthly}})
	return eventstore.RecordedEvent{EventData: eventstore.EventData{ID: uuid.New(), Type: EventBudgetSet, Data: b}}
}

func usageEvent(t *testing.T, id uuid.UUID, rec UsageRecord, recordedAt time.Time) eventstore.RecordedEvent {
	t.Helper()
	b, _ := json.Marshal(rec)
	return eventstore.RecordedEvent{EventData: eventstore.EventData{ID: id, Type: EventUsageRecorded, Data: b,
		Metadata: eventstore.Metadata{RecordedAt: recordedAt}}}
}

func usd(v float64) *float64 { return &v }

// A call settled just before midnight counts in that day on the replica
// that settled it and on every other one, though its event is recorded
// after midnight (the usage writer batches).
func TestBudgetsAgreeAcrossMidnight(t *testing.T) {
	clock := time.Date(2026, 11, 23, 23, 59, 59, 990e6, time.UTC)
	a := NewBudgets(func() time.Time { return clock })
	b := NewBudgets(func() time.Time { return clock })
	for _, x := range []*Budgets{a, b} {
		x.Apply(limitsEvent(t, "t", usd(10), nil))
	}
	hold, err := a.Reserve(t.Context(), "t", "m", usd(1))
	if err != nil {
		t.Fatal(err)
	}
	id, at := uuid.New(), a.Now()
	hold.Settle(usd(1), id, at)
	ev := usageEvent(t, id, UsageRecord{Tenant: "t", CostUSD: usd(1), At: at}, clock.Add(20*time.Millisecond))
	a.Apply(ev)
	b.Apply(ev)
	for name, x := range map[string]*Budgets{"settling replica": a, "other replica": b} {
		if s := x.Status("t"); s.DaySpent != 1 || s.Day != "2026-11-23" {
			t.Errorf("%s: %+v", name, s)
		}
	}
}

// A refusal says why, so the client knows whether and when to retry.
func TestBudgetRefusals(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	newBook := func(daily, monthly *float64) *Budgets {
		b := NewBudgets(func() time.Time { return now })
		b.Apply(limitsEvent(t, "t", daily, monthly))
		return b
	}
	spend := func(b *Budgets, cost float64) {
		h, err := b.Reserve(t.Context(), "t", "m", usd(cost))
		if err != nil {
			t.Fatal(err)
		}
		h.Settle(usd(cost), uuid.Nil, time.Time{})
	}
	refusal := func(b *Budgets, worst float64) *BudgetError {
		t.Helper()
		_, err := b.Reserve(t.Context(), "t", "m", usd(worst))
		be, ok := err.(*BudgetError)
		if !ok {
			t.Fatalf("err = %v, want a *BudgetError", err)
		}
		return be
	}

	// Day and month both spent: the month's reset is the one to wait for.
	b := newBook(usd(5), usd(5))
	spend(b, 5)
	if e := refusal(b, 1); e.Period != "month" || !e.ResetAt.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) || e.HeldOnly || e.Never {
		t.Errorf("both spent: %+v", e)
	}
	// Only the holds of calls in flight are in the way.
	b = newBook(usd(5), nil)
	if _, err := b.Reserve(t.Context(), "t", "m", usd(4)); err != nil {
		t.Fatal(err)
	}
	if e := refusal(b, 2); !e.HeldOnly || e.Never {
		t.Errorf("held only: %+v", e)
	} else if msg := e.Error(); strings.Contains(msg, "resets at") || !strings.Contains(msg, "$4.000000 held by calls in flight") || !strings.Contains(msg, "retry once they end") {
		// Answered with Retry-After: 1; the message sent the client to
		// wait for the budget's reset, at midnight.
		t.Errorf("held only: %s", msg)
	}
	// A worst case over the limit itself can never pass.
	b = newBook(usd(5), usd(100))
	if e := refusal(b, 6); !e.Never || e.Period != "day" {
		t.Errorf("never: %+v", e)
	}
	// Both limits too small for any call ($0 and $0, a tenant cut off):
	// the month's reset is the one to wait for; the day's told the client
	// to retry at midnight, to be refused again.
	b = newBook(usd(0), usd(0))
	if e := refusal(b, 1); !e.Never || e.Period != "month" || !e.ResetAt.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("both never: %+v", e)
	}
	// Both too small, the day's the tighter: it names the day, the limit
	// a lower cap must fit.
	b = newBook(usd(1), usd(3))
	if e := refusal(b, 6); !e.Never || e.Period != "day" {
		t.Errorf("never, day tighter: %+v", e)
	}
	// The day's limit too small for this call, the month's spent: a lower
	// cap (or midnight) does not get past the month, which the refusal
	// names too, and whose reset is the one to wait for.
	b = newBook(usd(1), usd(10))
	spend(b, 1)
	b.mu.Lock()
	b.book("t").days = map[string]float64{} // spent on earlier days of the month
	b.book("t").months["2026-11"] = 10
	b.mu.Unlock()
	e := refusal(b, 2)
	if !e.Never || e.Period != "day" || e.Also == nil || e.Also.Period != "month" || !e.RetryAt().Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("day never, month spent: %+v", e)
	} else if msg := e.Error(); !strings.Contains(msg, "daily budget of $1") || !strings.Contains(msg, "monthly budget of $10 is spent too") {
		t.Errorf("day never, month spent: %q", msg)
	}
	e.Quota = true
	if msg := e.Error(); !strings.Contains(msg, "monthly budget of $10 is spent too ($10.000000 spent, $0.000000 held by calls in flight) until 2026-12-01T00:00:00Z") {
		t.Errorf("day quota, month spent: %q", msg)
	}
	if msg := refusal(newBook(usd(1), nil), 2).Error(); msg == "" || !strings.Contains(msg, "daily budget") {
		t.Errorf("message %q", msg)
	}
}

// The worst case counts what the provider adds (tool-use instructions, the
// JSON-object instruction) and the output cap the adapter really sends.
func TestWorstTokens(t *testing.T) {
	req := Request{Messages: []Message{{Role: "user", Content: []Block{{Type: "text", Text: "hi"}}}}}
	anthropic := &Model{ID: "anthropic:m", Provider: "claude", Kind: "anthropic", ContextTokens: 200000}
	openai := &Model{ID: "anthropic:m", Provider: "anthropic", Kind: "openai-compatible", ContextTokens: 128000} // named anthropic, not of that kind
	in, out := WorstTokens(req, anthropic)
	if out != 4096 { // anthropic.DefaultMaxTokens, what the adapter sends
		t.Errorf("anthropic, no cap: out %d, want %d", out, 4096)
	}
	if _, o := WorstTokens(req, openai); o != 128000 {
		t.Errorf("openai, no cap: out %d, want the context", o)
	}
	withTool := req
	withTool.Tools = []Tool{{Name: "f", Schema: []byte(`{"type":"object"}`)}}
	if in2, _ := WorstTokens(withTool, anthropic); in2 < in+toolsOverhead {
		t.Errorf("one small tool adds %d tokens to the bound, want at least %d", in2-in, toolsOverhead)
	}
	asJSON := req
	asJSON.JSONObject = true
	if in3, _ := WorstTokens(asJSON, anthropic); in3 < in+len(JSONObjectInstruction) {
		t.Errorf("json_object adds %d", in3-in)
	}
}

// A budget covers exactly what it covers: three calls of $0.1 fit $0.3,
// though 0.1+0.1+0.1 is not 0.3 in floating point.
func TestBudgetExactFit(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	b := NewBudgets(func() time.Time { return now })
	b.Apply(limitsEvent(t, "t", usd(0.3), nil))
	for i := range 3 {
		if _, err := b.Reserve(t.Context(), "t", "m", usd(0.1)); err != nil {
			t.Fatalf("call %d refused: %v", i+1, err)
		}
	}
	if _, err := b.Reserve(t.Context(), "t", "m", usd(0.1)); err == nil {
		t.Fatal("a fourth $0.1 call passed a $0.3 budget")
	}
	b2 := NewBudgets(func() time.Time { return now })
	b2.Apply(limitsEvent(t, "t", usd(0.3), nil))
	h, _ := b2.Reserve(t.Context(), "t", "m", usd(0.2))
	h.Settle(usd(0.2), uuid.New(), now)
	if _, err := b2.Reserve(t.Context(), "t", "m", usd(0.1)); err != nil {
		t.Fatalf("$0.1 after $0.2 spent of $0.3: %v", err)
	}
}

// A usage event dated in the next day (another replica's clock runs ahead
// at midnight) counts in that day and leaves today's spending as it was.
func TestBudgetEventFromTheNextDay(t *testing.T) {
	now := time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC)
	b := NewBudgets(func() time.Time { return now })
	b.Apply(limitsEvent(t, "t", usd(1), usd(100)))
	b.Apply(usageEvent(t, uuid.New(), UsageRecord{Tenant: "t", CostUSD: usd(0.9), At: now}, now))
	ahead := now.Add(2 * time.Second) // 2026-12-01: the next day and the next month
	b.Apply(usageEvent(t, uuid.New(), UsageRecord{Tenant: "t", CostUSD: usd(0.01), At: ahead}, ahead))
	if s := b.Status("t"); s.DaySpent != 0.9 || s.MonthSpent != 0.9 {
		t.Fatalf("today after an event dated tomorrow: %+v", s)
	}
	if _, err := b.Reserve(t.Context(), "t", "m", usd(0.9)); err == nil {
		t.Fatal("a $0.9 call passed with $0.9 of $1 spent today")
	}
	now = ahead
	if s := b.Status("t"); s.DaySpent != 0.01 || s.MonthSpent != 0.01 {
		t.Fatalf("tomorrow: %+v", s)
	}
}

// A negative cost (an upstream reporting negative tokens) settles as
// nothing: it must not make room in the budget.
func TestBudgetNegativeCostIgnored(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	b := NewBudgets(func() time.Time { return now })
	b.Apply(limitsEvent(t, "t", usd(1), nil))
	h, _ := b.Reserve(t.Context(), "t", "m", usd(0.5))
	h.Settle(usd(0.5), uuid.New(), now)
	h, _ = b.Reserve(t.Context(), "t", "m", usd(0.1))
	h.Settle(usd(-1.5), uuid.New(), now)
	if s := b.Status("t"); s.DaySpent != 0.5 || s.ReservedUSD != 0 {
		t.Fatalf("after a negative cost: %+v", s)
	}
}

// A json_schema description goes upstream (OpenAI's description, the
// Anthropic tool's), so it counts in the worst case a budget holds.
func TestWorstTokensCountsTheSchemaDescription(t *testing.T) {
	req := Request{MaxTokens: 10, Output: &OutputSchema{Name: "a", Schema: json.RawMessage(`{"type":"object"}`)}}
	in0, _ := WorstTokens(req, nil)
	req.Output.Description = strings.Repeat("x", 500_000)
	in1, _ := WorstTokens(req, nil)
	if in1-in0 < 500_000 {
		t.Fatalf("a 500,000-byte description added %d to the input bound", in1-in0)
	}
}

// A call of a tenant without limits is counted when it settles, once: the
// follower, bringing the call's own usage event back, skips it without
// decoding it (its data is not even read), and a limit set later starts
// from the spending so far. A free call's event is skipped the same way.
func TestSettleCountsTenantsWithoutLimits(t *testing.T) {
	b := NewBudgets(nil)
	hold, err := b.Reserve(t.Context(), "free-tenant", "m", usd(5))
	if err != nil || hold == nil {
		t.Fatalf("hold %v, err %v", hold, err)
	}
	id, at := uuid.New(), b.Now()
	hold.Settle(usd(0.25), id, at)
	if s := b.Status("free-tenant"); s.DaySpent != 0.25 || s.ReservedUSD != 0 {
		t.Fatalf("after settle: %+v", s)
	}
	own := eventstore.RecordedEvent{EventData: eventstore.EventData{ID: id, Type: EventUsageRecorded, Data: []byte("not json")}}
	if err := b.Apply(own); err != nil {
		t.Fatalf("own event decoded: %v", err)
	}
	// Another replica's event for the tenant still counts.
	if err := b.Apply(usageEvent(t, uuid.New(), UsageRecord{Tenant: "free-tenant", CostUSD: usd(0.5), At: at}, at)); err != nil {
		t.Fatal(err)
	}
	if s := b.Status("free-tenant"); s.DaySpent != 0.75 {
		t.Fatalf("own event counted twice or the other's lost: %+v", s)
	}
	b.Apply(limitsEvent(t, "free-tenant", usd(1), nil))
	if _, err := b.Reserve(t.Context(), "free-tenant", "m", usd(0.5)); err == nil {
		t.Fatal("a limit set later ignores the 0.75 spent before it")
	}
	free := uuid.New()
	h, _ := b.Reserve(t.Context(), "other", "m", usd(0))
	h.Settle(usd(0), free, at)
	if err := b.Apply(eventstore.RecordedEvent{EventData: eventstore.EventData{ID: free, Type: EventUsageRecorded, Data: []byte("{")}}); err != nil {
		t.Fatalf("a free call's own event decoded: %v", err)
	}
}

// Calls of tenants without limits wait, counted, for their events only up
// to maxSettledUnlimited; past that the follower counts them, once.
func TestSettledUnlimitedIsBounded(t *testing.T) {
	b := NewBudgets(nil)
	at := b.Now()
	for range maxSettledUnlimited {
		h, _ := b.Reserve(t.Context(), "free", "m", usd(1))
		h.Settle(usd(0), uuid.New(), at)
	}
	h, _ := b.Reserve(t.Context(), "free", "m", usd(1))
	over := uuid.New()
	h.Settle(usd(2), over, at)
	if n := len(b.settled); n != maxSettledUnlimited {
		t.Fatalf("%d waiting, bound %d", n, maxSettledUnlimited)
	}
	if s := b.Status("free"); s.DaySpent != 0 {
		t.Fatalf("counted at settle past the bound: %+v", s)
	}
	if err := b.Apply(usageEvent(t, over, UsageRecord{Tenant: "free", CostUSD: usd(2), At: at}, at)); err != nil {
		t.Fatal(err)
	}
	if s := b.Status("free"); s.DaySpent != 2 {
		t.Fatalf("the follower did not count it: %+v", s)
	}
	// A tenant with limits is counted at settle whatever the bound.
	b.Apply(limitsEvent(t, "capped", usd(10), nil))
	hc, err := b.Reserve(t.Context(), "capped", "m", usd(1))
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.New()
	hc.Settle(usd(1), id, at)
	b.Apply(usageEvent(t, id, UsageRecord{Tenant: "capped", CostUSD: usd(1), At: at}, at))
	if s := b.Status("capped"); s.DaySpent != 1 {
		t.Fatalf("limited tenant: %+v", s)
	}
}

// periods' kept keys are those of the day asked for, on either side of
// midnight and of 1970.
func TestPeriodsFollowTheDay(t *testing.T) {
	for _, at := range []time.Time{
		time.Date(2026, 11, 26, 23, 59, 59, 999999999, time.UTC),
		time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 26, 12, 0, 0, 0, time.FixedZone("x", -14*3600)),
		time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 0, 0, 0, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC),
	} {
		for range 2 {
			d, m := periods(at)
			if u := at.UTC(); d != u.Format("2006-01-02") || m != u.Format("2006-01") {
				t.Fatalf("periods(%v) = %s, %s", at, d, m)
			}
		}
	}
}

// A usage batch counts each call's record once on every replica: the
// settling replica skips the records it counted when it settled them, the
// others count them all. A batch with a record that cannot be read counts
// nothing.
func TestUsageBatchCountsEachRecordOnce(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	a := NewBudgets(func() time.Time { return now })
	b := NewBudgets(func() time.Time { return now })
	for _, x := range []*Budgets{a, b} {
		x.Apply(limitsEvent(t, "t", usd(10), nil))
	}
	var items []usageItem
	for _, cost := range []float64{1, 0.5} {
		h, err := a.Reserve(t.Context(), "t", "m", usd(cost))
		if err != nil {
			t.Fatal(err)
		}
		id := h.UsageID()
		h.Settle(usd(cost), id, now)
		items = append(items, usageItem{id, UsageRecord{Tenant: "t", CostUSD: usd(cost), At: now, Outcome: "ok"}})
	}
	items = append(items, usageItem{uuid.Must(uuid.NewV7()), UsageRecord{Tenant: "t", CostUSD: usd(0.25), At: now, Outcome: "ok"}}) // another replica's
	w := NewUsageWriter(nil, func(_ uuid.UUID, _ UsageRecord, err error) { t.Fatal(err) })
	evs, sent := w.batchEvents("t", items)
	if len(evs) != 1 || len(sent) != 3 || evs[0].Type != EventUsageBatchRecorded {
		t.Fatalf("%d events of %d records", len(evs), len(sent))
	}
	batch := eventstore.RecordedEvent{StreamID: UsageStream("t"), EventData: evs[0]}
	if s := a.Status("t"); s.DaySpent != 1.5 {
		t.Fatalf("settled: %+v", s)
	}
	for name, x := range map[string]*Budgets{"settling replica": a, "other replica": b} {
		if err := x.Apply(batch); err != nil {
			t.Fatal(err)
		}
		if s := x.Status("t"); s.DaySpent != 1.75 {
			t.Errorf("%s: spent %v, want 1.75", name, s.DaySpent)
		}
	}
	// Expanded, the batch is the calls' records under their own ids.
	exp := ExpandUsage([]eventstore.RecordedEvent{batch})
	for i, ev := range exp {
		var rec UsageRecord
		if err := json.Unmarshal(ev.Data, &rec); err != nil || ev.ID != items[i].id || ev.Type != EventUsageRecorded || *rec.CostUSD != *items[i].rec.CostUSD {
			t.Fatalf("record %d: %v %s %s %+v", i, err, ev.ID, ev.Type, rec)
		}
	}
	if len(exp) != 3 {
		t.Fatalf("%d records expanded", len(exp))
	}
	for _, data := range []string{
		`{"records":[{"id":"0195f5a0-0000-7000-8000-000000000009","tenant":"t","costUsd":2},{"id":"nope","tenant":"t","costUsd":2}]}`,
		`{"records":[{"id":"0195f5a0-0000-7000-8000-000000000009","tenant":"t","costUsd":2},{"id":"0195f5a0-0000-7000-8000-00000000000a","tenant":"t","costUsd":"2"}]}`,
		`{"records":{"id":"0195f5a0-0000-7000-8000-000000000009","tenant":"t","costUsd":2}}`,
		`[{"id":"0195f5a0-0000-7000-8000-000000000009","tenant":"t","costUsd":2}]`,
	} {
		bad := eventstore.RecordedEvent{EventData: eventstore.EventData{ID: uuid.New(), Type: EventUsageBatchRecorded, Data: []byte(data)}}
		if err := b.Apply(bad); err == nil {
			t.Errorf("%s: applied", data)
		}
		if s := b.Status("t"); s.DaySpent != 1.75 {
			t.Fatalf("%s: spent %v after a batch that cannot be read", data, s.DaySpent)
		}
	}
}

// Calls in flight when a tenant's first budget is set hold nothing, but
// count as held until they settle: new calls are refused while they could
// pass the limit, and let through once they settled for less.
func TestCallsInFlightWhenTheFirstBudgetIsSet(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	b := NewBudgets(func() time.Time { return now })
	running := make([]*Reservation, 3)
	for i := range running {
		r, err := b.Reserve(t.Context(), "t", "m", usd(0.3))
		if err != nil {
			t.Fatal(err)
		}
		running[i] = r
	}
	free, err := b.Reserve(t.Context(), "t", "m", nil) // an unpriced call: nothing to count
	if err != nil {
		t.Fatal(err)
	}
	b.Apply(limitsEvent(t, "t", usd(1), nil))
	if st := b.Status("t"); math.Abs(st.ReservedUSD-0.9) > 1e-9 {
		t.Fatalf("reserved %v with three calls of 0.3 in flight, want 0.9", st.ReservedUSD)
	}
	_, err = b.Reserve(t.Context(), "t", "m", usd(0.2))
	if be, ok := err.(*BudgetError); !ok || !be.HeldOnly {
		t.Fatalf("a call of 0.2 beside 0.9 in flight under a limit of 1: %v, want refused for what is held", err)
	}
	for _, r := range running {
		r.Settle(usd(0.1), uuid.New(), time.Time{}) // counted here: reserved before the limits, its event is this replica's
	}
	free.Settle(nil, uuid.Nil, time.Time{})
	if st := b.Status("t"); st.ReservedUSD != 0 || math.Abs(st.DaySpent-0.3) > 1e-9 {
		t.Fatalf("after they settled: reserved %v, spent %v; want 0 and 0.3", st.ReservedUSD, st.DaySpent)
	}
	if _, err := b.Reserve(t.Context(), "t", "m", usd(0.2)); err != nil {
		t.Fatalf("a call of 0.2 with 0.3 spent under a limit of 1: %v", err)
	}
	if len(b.unheld) != 0 {
		t.Fatalf("unheld left behind: %v", b.unheld)
	}
}

// A cap past the model's declared most output is held at that most: the
// model cannot write more, so a budget that covers what it can write is
// not refused (a passed-through call's cap reaches the provider as sent).
// One rule for every kind, and for generate's ceiling (WorstCost too).
func TestWorstCaseHoldsNoMoreThanTheModelWrites(t *testing.T) {
	price := &Price{InputPerMTok: 1, OutputPerMTok: 10}
	for _, kind := range []string{"openai", "anthropic", "openai-compatible"} {
		m := &Model{ID: "p:m", Kind: kind, ContextTokens: 128000, MaxOutputTokens: 16384, Pricing: price}
		for _, tc := range []struct{ cap, choices, want int }{
			{1000000, 0, 16384},
			{1000000, 3, 3 * 16384},
			{16385, 1, 16384},
			{100, 2, 200}, // under it: the cap
		} {
			req := Request{Messages: []Message{{Role: "user", Content: []Block{{Type: "text", Text: "hi"}}}}, MaxTokens: tc.cap, Choices: tc.choices}
			if out, known := OutputBound(req, m); out != tc.want || !known {
				t.Errorf("%s cap %d x%d: bound %d %v, want %d", kind, tc.cap, tc.choices, out, known, tc.want)
			}
			at := req
			at.MaxTokens = min(tc.cap, m.MaxOutputTokens)
			if w, a := WorstCost(req, m), WorstCost(at, m); *w != *a {
				t.Errorf("%s cap %d: worst $%v, want $%v (as at the model's most)", kind, tc.cap, *w, *a)
			}
		}
	}
}

// Records dated days ahead (another replica's clock runs fast) count in
// this replica's today: they do not start later days' sums that would push
// today's spending out of the book, which keeps three days.
func TestUsageFromAClockDaysAheadKeepsToday(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	b := NewBudgets(func() time.Time { return now })
	b.Apply(limitsEvent(t, "t", usd(10), nil))
	var items []usageItem
	for i, at := range []time.Time{now, now.Add(72 * time.Hour), now.Add(96 * time.Hour), now.Add(120 * time.Hour), now.Add(20 * time.Hour)} {
		items = append(items, usageItem{uuid.Must(uuid.NewV7()), UsageRecord{Tenant: "t", CostUSD: usd(float64(i + 1)), At: at, Outcome: "ok"}})
	}
	w := NewUsageWriter(nil, func(_ uuid.UUID, _ UsageRecord, err error) { t.Fatal(err) })
	evs, _ := w.batchEvents("t", items)
	for _, ev := range evs {
		if err := b.Apply(eventstore.RecordedEvent{StreamID: UsageStream("t"), EventData: ev}); err != nil {
			t.Fatal(err)
		}
	}
	// Today: the record of now and the three dated 3 to 5 days ahead;
	// tomorrow's (20 h ahead) stays tomorrow's.
	if s := b.Status("t"); s.DaySpent != 1+2+3+4 {
		t.Fatalf("today's spending %v, want 10", s.DaySpent)
	}
}
