package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

// The gateway's caller serves a call with no HTTP request in front of it,
// as generate and agent plans use it: the catalog plans the chain, the
// caller holds the tenant's budget, falls back from a failing model to
// the next before anything is answered, settles the hold on the usage
// and queues one usage event per attempt. Whole and streamed.
func TestCallerWithoutHTTP(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var q struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &q)
		if q.Model == "down" {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
			return
		}
		if !q.Stream {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":100}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{`{"choices":[{"index":0,"delta":{"content":"hel"}}]}`, `{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":100}}`, `[DONE]`} {
			fmt.Fprintf(w, "data: %s\n\n", d)
		}
	}))
	t.Cleanup(up.Close)
	price := `"pricing":{"inputPerMTok":1,"outputPerMTok":10,"source":"test"}`
	cat, err := catalogFromFile(t, `{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"`+up.URL+`/v1","keyEnv":"P_KEY","models":[`+
		`{"name":"down","contextTokens":8192,"fallbacks":["p:up"],`+price+`},{"name":"up","contextTokens":8192,`+price+`}]}]}`, map[string]string{"P_KEY": "k"})
	if err != nil {
		t.Fatal(err)
	}
	store, budgets := dollarADay(t)
	w := NewUsageWriter(store, func(_ uuid.UUID, _ UsageRecord, err error) { t.Errorf("usage: %v", err) })
	w.Linger = 0
	k := &Caller{Budgets: budgets, Usage: w, StreamIdle: time.Minute, CommitAfter: func() time.Duration { return 5 * time.Second }}
	// A prompt long enough for the 1,000 input tokens the upstream reports
	// (generate's input is held to its bound).
	req := Request{Messages: []Message{{Role: "user", Content: []Block{{Type: "text", Text: strings.Repeat("hi ", 1000)}}}}, MaxTokens: 200}
	chain, err := cat.Plan("", "p:down", req)
	if err != nil || len(chain) != 2 || chain[1].Model.ID != "p:up" {
		t.Fatalf("plan: %v %v", chain, err)
	}
	const each = (1000*1.0 + 100*10.0) / 1e6

	c := &Call{ID: "call1", Front: "generate", Tenant: "t", KeyID: "k1", Req: req}
	resp, err := k.Complete(t.Context(), c, chain)
	if err != nil || outputText(resp.Content) != "hello" || !c.Fallback || c.Model.ID != "p:up" {
		t.Fatalf("complete: %+v %v (fallback %v, model %v)", resp, err, c.Fallback, c.Model)
	}
	if s := budgets.Status("t"); s.ReservedUSD != 0 || s.DaySpent != RoundUSD(each) {
		t.Fatalf("the answer is not settled: %+v", s)
	}
	resp.Record()
	c.ReleaseHold()
	if resp.Cost == nil || *resp.Cost != RoundUSD(each) {
		t.Fatalf("cost %v, want %v", resp.Cost, each)
	}

	s := &Call{ID: "call2", Front: "generate", Tenant: "t", KeyID: "k1", Req: req, Stream: true, Direct: true}
	u, err := k.Open(t.Context(), s, chain)
	if err != nil || !s.Fallback {
		t.Fatalf("open: %v (fallback %v)", err, s.Fallback)
	}
	var text strings.Builder
	var usage *Usage
	for {
		p, _, gone := u.Next(nil, func() {})
		if gone {
			t.Fatal("gone")
		}
		if errors.Is(p.Err, io.EOF) {
			break
		}
		if p.Err != nil {
			t.Fatal(p.Err)
		}
		text.WriteString(p.D.Text)
		if p.D.Usage != nil {
			usage = p.D.Usage
		}
	}
	u.Close()
	if text.String() != "hello" || usage == nil {
		t.Fatalf("stream: %q, usage %v", text.String(), usage)
	}
	if _, _, record := u.Finish(usage); true {
		record()
	}
	s.ReleaseHold()
	w.Close()

	got := usageLines(t, store, func(r UsageRecord) string { return fmt.Sprintf("%s %s %v", r.Model, r.Outcome, r.Stream) })
	if want := "p:down upstream_error false; p:up ok false; p:down upstream_error true; p:up ok true"; got != want {
		t.Fatalf("usage events: %s\nwant %s", got, want)
	}
	if st := budgets.Status("t"); st.ReservedUSD != 0 || st.DaySpent != RoundUSD(2*each) {
		t.Fatalf("budget after both: %+v, want %v spent and nothing held", st, 2*each)
	}
}

// A bare name goes to the front's own provider; when that provider has no
// key, the answer is that (provider_not_configured, not to be retried),
// not that no provider lists the name.
func TestPlanBareNameWithoutTheKey(t *testing.T) {
	cat, err := NewCatalog(Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cat.Plan(FormatAnthropic, "claude-haiku-4-5", Request{MaxTokens: 10})
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != "provider_not_configured" || !de.NoRetry {
		t.Fatalf("err = %v", err)
	}
	// The built-in provider lists it: the name is right, the key is missing.
	if strings.Contains(de.Message, "no provider lists") || !strings.Contains(de.Message, "provider anthropic is not configured") {
		t.Fatalf("a name the built-in provider lists: %v", err)
	}
	// A name no provider lists (a typo, a model left out) says so.
	_, err = cat.Plan(FormatChat, "gpt-typo", Request{MaxTokens: 10})
	if !errors.As(err, &de) || de.Code != "provider_not_configured" || !de.NoRetry ||
		!strings.Contains(de.Message, `no provider lists model "gpt-typo"; as a bare name it goes to the built-in openai provider`) {
		t.Fatalf("a name no provider lists: %v", err)
	}
	// Without a front's format there is no provider to send a bare name
	// to: unknown.
	if _, err := cat.Plan("", "claude-haiku-4-5", Request{MaxTokens: 10}); !errors.Is(err, ErrUnknownModel) {
		t.Fatalf("a bare name with no format: %v", err)
	}
}

// sliceStream yields its deltas, then end (io.EOF or a failure).
type sliceStream struct {
	ds  []Delta
	end error
}

func (s *sliceStream) Next() (Delta, error) {
	if len(s.ds) == 0 {
		return Delta{}, s.end
	}
	d := s.ds[0]
	s.ds = s.ds[1:]
	return d, nil
}

func (s *sliceStream) Close() error { return nil }

// An open stream bills the call itself, once, on what it handed out: the
// end (Finish) on the upstream's report or its own count, a break
// (partial, told to the client), the client leaving (what was read, read
// ahead included: the input the upstream told is not counted again).
func TestUpstreamBillsWhatItHandedOut(t *testing.T) {
	store := openStore(t)
	w := NewUsageWriter(store, func(_ uuid.UUID, _ UsageRecord, err error) { t.Errorf("usage: %v", err) })
	w.Linger = 0
	k := &Caller{Usage: w, StreamIdle: time.Minute}
	cat, err := NewCatalog(Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	model, ok := cat.Get("local:echo")
	if !ok {
		t.Fatal("no local:echo")
	}
	// A prompt long enough for the 1,000 input tokens the upstream reports
	// (generate's input is held to its bound).
	req := Request{Messages: []Message{{Role: "user", Content: []Block{{Type: "text", Text: strings.Repeat("hi ", 1000)}}}}, MaxTokens: 200}
	text := func(s string) Delta { return Delta{Text: s} }
	told := Delta{Usage: &Usage{InputTokens: 777}}
	open := func(ctx context.Context, id string, pending []Delta, st *sliceStream) *Upstream {
		c := &Call{ID: id, RequestID: id, Front: "chat.completions", Tenant: "t", Req: req, Stream: true, Model: &model, Provider: cat.Provider("local")}
		u := newDirect(func() {}, st, time.Minute, "local")
		u.k, u.c, u.ctx = k, c, ctx
		for _, d := range pending {
			u.pending = append(u.pending, Pumped{D: d})
		}
		return u
	}
	drain := func(u *Upstream, n int) {
		for range n {
			if p, _, _ := u.Next(nil, func() {}); p.Err != nil {
				t.Fatal(p.Err)
			}
		}
	}

	// The end without the upstream's report: Baton's count of what it handed out.
	u := open(t.Context(), "end", nil, &sliceStream{ds: []Delta{text("hello there"), text(" friend")}, end: io.EOF})
	drain(u, 2)
	bill, _, record := u.Finish(nil)
	record()
	if !bill.Estimated || bill.OutputTokens < 2 || !u.Settled() {
		t.Fatalf("finish: %+v", bill)
	}
	if _, _, again := u.Finish(nil); again == nil {
		t.Fatal("no record func the second time")
	}
	if _, _, tell := u.Fail(errors.New("late")); tell {
		t.Fatal("a break after the end is told")
	}

	// The client leaves before anything was handed out: what was read ahead.
	u = open(t.Context(), "gone", []Delta{told, text("hi")}, &sliceStream{end: io.EOF})
	u.Gone()
	u.Gone()

	// A break after some text: partial, told.
	u = open(t.Context(), "partial", nil, &sliceStream{ds: []Delta{told, text("part")}, end: errors.New("broken")})
	drain(u, 2)
	p, _, _ := u.Next(nil, func() {})
	bill, _, tell := u.Fail(p.Err)
	if !tell || bill.InputTokens != 777 || bill.OutputTokens < 1 {
		t.Fatalf("partial: %+v tell %v", bill, tell)
	}

	// The client's context ends: client_gone, nothing told.
	ctx, cancel := context.WithCancel(t.Context())
	u = open(ctx, "left", nil, &sliceStream{ds: []Delta{text("a")}, end: io.EOF})
	drain(u, 1)
	cancel()
	if _, _, tell := u.Fail(context.Canceled); tell {
		t.Fatal("told a client that left")
	}
	w.Close()

	got := usageLines(t, store, func(r UsageRecord) string {
		in := "counted"
		if r.Usage.InputTokens == 777 {
			in = "told"
		}
		return r.RequestID + " " + r.Outcome + " " + in
	})
	if want := "end ok counted; gone client_gone told; partial partial told; left client_gone counted"; got != want {
		t.Fatalf("usage events: %s\nwant %s", got, want)
	}
}

// usageLines is tenant t's usage events, each as line says, joined by "; ".
func usageLines(t *testing.T, store eventstore.Store, line func(UsageRecord) string) string {
	t.Helper()
	evs, err := ReadUsage(context.Background(), store, "t", 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		var r UsageRecord
		if err := json.Unmarshal(ev.Data, &r); err != nil {
			t.Fatal(err)
		}
		got = append(got, line(r))
	}
	return strings.Join(got, "; ")
}

// A call that names no capacity tier (or auto) is held at the fast rate
// where its provider serves such calls at the fast tier: declared in the
// providers file (defaultServiceTier), or seen in an answer. A tier asked
// for, or a model without a fast rate, is held as asked. The tier an
// answer names is what is billed.
func TestAutoTierHeldAtItsRate(t *testing.T) {
	var projectDefault atomic.Pointer[string]
	priority, standardTier := "priority", "default"
	projectDefault.Store(&priority)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var q struct {
			ServiceTier string `json:"service_tier"`
		}
		json.Unmarshal(b, &q)
		served := q.ServiceTier
		if served == "" || served == "auto" {
			served = *projectDefault.Load() // both accounts'
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":100},"service_tier":%q}`, served)
	}))
	t.Cleanup(up.Close)
	models := `"models":[{"name":"m","contextTokens":8192,"pricing":{"inputPerMTok":1,"outputPerMTok":10,"fastRate":2,"source":"test"}},` +
		`{"name":"plain","contextTokens":8192,"pricing":{"inputPerMTok":1,"outputPerMTok":10,"source":"test"}}]`
	cat, err := catalogFromFile(t, `{"providers":[`+
		`{"name":"decl","kind":"openai","baseUrl":"`+up.URL+`/v1","keyEnv":"P_KEY","defaultServiceTier":"fast",`+models+`},`+
		`{"name":"seen","kind":"openai","baseUrl":"`+up.URL+`/v1","keyEnv":"P_KEY",`+models+`}]}`, map[string]string{"P_KEY": "k"})
	if err != nil {
		t.Fatal(err)
	}
	store := openStore(t)
	w := NewUsageWriter(store, func(_ uuid.UUID, _ UsageRecord, err error) { t.Errorf("usage: %v", err) })
	w.Close() // from now on each record is appended at once
	var told []string
	var clock atomic.Pointer[time.Time]
	now := time.Now()
	clock.Store(&now)
	k := &Caller{Budgets: NewBudgets(func() time.Time { return *clock.Load() }), Usage: w, StreamIdle: time.Minute, AutoTierSeen: func(provider, tier string) { told = append(told, provider+" "+tier) }}
	// Another replica on the same store learns from the usage events.
	other := NewBudgets(nil)
	follower := &Follower{Store: store, Appliers: []Applier{other}}
	otherKnows := func() bool {
		t.Helper()
		if err := follower.CatchUp(t.Context()); err != nil {
			t.Fatal(err)
		}
		return other.ServesAutoFast("seen")
	}
	req := func(tier string) Request {
		return Request{Messages: []Message{{Role: "user", Content: []Block{{Type: "text", Text: "hi"}}}}, MaxTokens: 200, ServiceTier: tier}
	}
	target := func(id string) Target {
		chain, err := cat.Plan("", id, req(""))
		if err != nil {
			t.Fatal(err)
		}
		return chain[0]
	}
	standard := *WorstCost(req(""), target("seen:m").Model)
	held := func(id, tier string) float64 { return heldWorst(k, req(tier), target(id)) }
	for _, c := range []struct {
		id, tier string
		want     float64
	}{
		{"decl:m", "", 2 * standard}, {"decl:m", "auto", 2 * standard}, {"decl:m", "default", standard},
		{"decl:m", "flex", standard}, {"decl:m", "priority", 2 * standard}, {"decl:plain", "", standard},
		{"seen:m", "", standard}, {"seen:m", "auto", standard},
	} {
		if got := held(c.id, c.tier); got != c.want {
			t.Errorf("before any answer, %s at %q is held for %v, want %v", c.id, c.tier, got, c.want)
		}
	}

	// An answer that names its tier is billed at it; "seen" learns.
	const each = (1000*1.0 + 100*10.0) / 1e6
	call := func(id, tier string, want float64) {
		t.Helper()
		// Passed through, as a tier is only sent as the client wrote it.
		body := `{"model":"x","messages":[{"role":"user","content":"hi"}]}`
		if tier != "" {
			body = `{"model":"x","messages":[{"role":"user","content":"hi"}],"service_tier":"` + tier + `"}`
		}
		c := &Call{ID: "c", Front: "chat.completions", Tenant: "t", Req: req(tier), Native: &Native{Format: FormatChat, Body: []byte(body), ServiceTier: tier}}
		resp, err := k.Complete(t.Context(), c, []Target{target(id)})
		if err != nil {
			t.Fatal(err)
		}
		resp.Record()
		c.ReleaseHold()
		if !c.Passthrough || resp.Cost == nil || *resp.Cost != RoundUSD(want) {
			t.Errorf("%s at %q (passed through: %t) costs %s, want %v", id, tier, c.Passthrough, costText(resp.Cost), want)
		}
	}
	call("seen:m", "default", each)
	call("seen:plain", "", each) // a model without a fast rate tells nothing
	call("decl:m", "", 2*each)
	if len(told) != 0 || otherKnows() {
		t.Fatalf("learned from calls that name a tier, or to a model without a fast rate, or to a declared provider: told %v", told)
	}
	call("seen:m", "", 2*each)
	call("seen:m", "auto", 2*each)
	if fmt.Sprint(told) != "[seen priority]" {
		t.Errorf("told %v, want the provider seen once", told)
	}
	if !otherKnows() {
		t.Error("another replica did not learn the default from the usage events")
	}
	for _, c := range []struct {
		id, tier string
		want     float64
	}{{"seen:m", "", 2 * standard}, {"seen:m", "auto", 2 * standard}, {"seen:m", "default", standard}, {"seen:plain", "", standard}} {
		if got := held(c.id, c.tier); got != c.want {
			t.Errorf("after an answer at priority, %s at %q is held for %v, want %v", c.id, c.tier, got, c.want)
		}
	}

	// The project's default back to standard: once its answers have said so
	// for an hour, both replicas hold at the standard rates again.
	projectDefault.Store(&standardTier)
	call("seen:m", "", each)
	if got := held("seen:m", ""); got != 2*standard || len(told) != 1 {
		t.Errorf("right after an answer at default, held for %v (want %v), told %v", got, 2*standard, told)
	}
	later := now.Add(time.Hour)
	clock.Store(&later)
	call("seen:m", "", each)
	if fmt.Sprint(told) != "[seen priority seen default]" {
		t.Errorf("told %v, want the change back told", told)
	}
	if got := held("seen:m", ""); got != standard {
		t.Errorf("after an answer at default, held for %v, want %v", got, standard)
	}
	if otherKnows() {
		t.Error("another replica still holds at the fast rate")
	}
	// A replica started afterwards reads the latest.
	fresh := NewBudgets(nil)
	if err := (&Follower{Store: store, Appliers: []Applier{fresh}}).CatchUp(t.Context()); err != nil || fresh.ServesAutoFast("seen") {
		t.Errorf("a fresh replica: %v, fast %t", err, fresh.ServesAutoFast("seen"))
	}
}

// The built-in OpenAI provider takes its account's default tier from
// BATON_OPENAI_DEFAULT_SERVICE_TIER; a value Baton does not know stops the
// start.
func TestBuiltinDefaultTier(t *testing.T) {
	held := func(tier string) (float64, float64) {
		t.Helper()
		cat, err := NewCatalog(Config{Getenv: func(k string) string {
			return map[string]string{"OPENAI_API_KEY": "k", "BATON_OPENAI_DEFAULT_SERVICE_TIER": tier}[k]
		}})
		if err != nil {
			t.Fatal(err)
		}
		// A prompt long enough for the 1,000 input tokens the upstream reports
		// (generate's input is held to its bound).
		req := Request{Messages: []Message{{Role: "user", Content: []Block{{Type: "text", Text: strings.Repeat("hi ", 1000)}}}}, MaxTokens: 200}
		chain, err := cat.Plan("", "openai:gpt-6-luna", req)
		if err != nil {
			t.Fatal(err)
		}
		k := &Caller{}
		named := req
		named.ServiceTier = "default"
		return heldWorst(k, req, chain[0]), heldWorst(k, named, chain[0])
	}
	if none, std := held("fast"); none != 2*std {
		t.Errorf("declared fast: a call naming no tier is held for %v, at default %v", none, std)
	}
	if none, std := held(""); none != std {
		t.Errorf("not declared: a call naming no tier is held for %v, at default %v", none, std)
	}
	_, err := NewCatalog(Config{Getenv: func(k string) string { return map[string]string{"BATON_OPENAI_DEFAULT_SERVICE_TIER": "turbo"}[k] }})
	if err == nil || !strings.Contains(err.Error(), `BATON_OPENAI_DEFAULT_SERVICE_TIER: "turbo": want default, fast or priority`) {
		t.Errorf("an unknown tier: %v", err)
	}
}

// Replicas learn a provider's default tier from each other's usage events,
// which come in whatever order their writers append them: each ends up
// knowing what the latest answers show, by when they were settled. One
// answer at the standard tier among answers at the fast one (OpenAI
// downgrades some of a priority project's calls) does not change it.
func TestAutoTierLearnedInAnyOrder(t *testing.T) {
	var served atomic.Pointer[string]
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":1},"service_tier":%q}`, *served.Load())
	}))
	t.Cleanup(up.Close)
	cat, err := catalogFromFile(t, `{"providers":[{"name":"p","kind":"openai","baseUrl":"`+up.URL+`/v1","keyEnv":"P_KEY",`+
		`"models":[{"name":"m","contextTokens":8192,"pricing":{"inputPerMTok":1,"outputPerMTok":10,"fastRate":2,"source":"test"}}]}]}`, map[string]string{"P_KEY": "k"})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Messages: []Message{{Role: "user", Content: []Block{{Type: "text", Text: "hi"}}}}, MaxTokens: 20}
	chain, err := cat.Plan("", "p:m", req)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

	type replica struct {
		k     *Caller
		b     *Budgets
		f     *Follower
		clock time.Time
		told  []string
	}
	setup := func() (func() *replica, func(r *replica, at time.Duration, tier string)) {
		store := openStore(t)
		w := NewUsageWriter(store, func(_ uuid.UUID, _ UsageRecord, err error) { t.Errorf("usage: %v", err) })
		w.Close() // each record is appended at once
		start := func() *replica {
			r := &replica{}
			r.b = NewBudgets(func() time.Time { return r.clock })
			r.k = &Caller{Budgets: r.b, Usage: w, StreamIdle: time.Minute, AutoTierSeen: func(provider, tier string) { r.told = append(r.told, tier) }}
			r.f = &Follower{Store: store, Appliers: []Applier{r.b}}
			return r
		}
		call := func(r *replica, at time.Duration, tier string) {
			t.Helper()
			r.clock = t0.Add(at)
			served.Store(&tier)
			c := &Call{ID: "c", Front: "chat.completions", Tenant: "t", Req: req}
			resp, err := r.k.Complete(t.Context(), c, chain)
			if err != nil {
				t.Fatal(err)
			}
			resp.Record()
			c.ReleaseHold()
		}
		return start, call
	}
	catchUp := func(rs ...*replica) {
		t.Helper()
		for _, r := range rs {
			if err := r.f.CatchUp(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("downgraded", func(t *testing.T) {
		start, call := setup()
		a := start()
		call(a, 0, "priority")
		call(a, time.Minute, "default")
		if !a.b.ServesAutoFast("p") {
			t.Error("one answer at the standard tier among answers at priority unlearned the default")
		}
		call(a, 2*time.Minute, "priority")
		call(a, 3*time.Minute, "default")
		if fmt.Sprint(a.told) != "[priority]" {
			t.Errorf("told %v, want priority once", a.told)
		}
	})
	t.Run("an older answer lands last", func(t *testing.T) {
		start, call := setup()
		a, b := start(), start()
		call(a, 0, "priority")
		call(b, -time.Minute, "default") // settled before a's, appended after
		catchUp(a, b)
		if !a.b.ServesAutoFast("p") || !b.b.ServesAutoFast("p") {
			t.Errorf("fast on a: %t, on b: %t; want both", a.b.ServesAutoFast("p"), b.b.ServesAutoFast("p"))
		}
	})
	t.Run("moved back to standard", func(t *testing.T) {
		start, call := setup()
		a, b := start(), start()
		call(a, 0, "priority")
		call(b, 2*time.Hour, "default") // b follows a's events only afterwards
		catchUp(b, a)
		fresh := start()
		catchUp(fresh)
		if a.b.ServesAutoFast("p") || b.b.ServesAutoFast("p") || fresh.b.ServesAutoFast("p") {
			t.Errorf("fast on a: %t, on b: %t, on a fresh replica: %t; want none", a.b.ServesAutoFast("p"), b.b.ServesAutoFast("p"), fresh.b.ServesAutoFast("p"))
		}
	})
}

// heldWorst is req's worst case on t at the tier k holds it at.
func heldWorst(k *Caller, req Request, t Target) float64 {
	req.ServiceTier = k.TierFor(req.ServiceTier, t)
	return *WorstCost(req, t.Model)
}

// A client that leaves a whole call while the upstream works on it is
// billed the call's input, estimated, as a stream's client is: it was
// recorded free, so leaving kept spend off a budget.
func TestClientGoneWholeCallBillsItsInput(t *testing.T) {
	arrived := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // so the server hears the client leave
		arrived <- struct{}{}
		<-r.Context().Done()
	}))
	t.Cleanup(up.Close)
	cat, err := catalogFromFile(t, `{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"`+up.URL+`/v1","keyEnv":"P_KEY","models":[`+
		`{"name":"m","contextTokens":8192,"pricing":{"inputPerMTok":1,"outputPerMTok":10,"source":"test"}}]}]}`, map[string]string{"P_KEY": "k"})
	if err != nil {
		t.Fatal(err)
	}
	_, budgets := dollarADay(t)
	k := &Caller{Budgets: budgets, StreamIdle: time.Minute}
	req := Request{Messages: []Message{{Role: "user", Content: []Block{{Type: "text", Text: strings.Repeat("hi ", 500)}}}}, MaxTokens: 200}
	chain, err := cat.Plan("", "p:m", req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-arrived; cancel() }()
	c := &Call{ID: "gone", Front: "chat.completions", Tenant: "t", KeyID: "k1", Req: req}
	if _, err := k.Complete(ctx, c, chain); err == nil {
		t.Fatal("a call whose client left answered")
	}
	c.ReleaseHold()
	if s := budgets.Status("t"); s.DaySpent <= 0 || s.ReservedUSD != 0 {
		t.Fatalf("the call whose client left was billed nothing: %+v", s)
	}
}

// dollarADay is a store and budgets on it with tenant t's daily limit at $1.
func dollarADay(t *testing.T) (eventstore.Store, *Budgets) {
	store := openStore(t)
	budgets := NewBudgets(nil)
	budgets.UseStore(store, func(err error) { t.Errorf("budget write: %v", err) })
	limit := 1.0
	if err := budgets.SetBudget(t.Context(), store, BudgetSet{Tenant: "t", Limits: Limits{DailyUSD: &limit}}, eventstore.Metadata{}); err != nil {
		t.Fatal(err)
	}
	return store, budgets
}
