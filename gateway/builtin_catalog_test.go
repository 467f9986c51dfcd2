package gateway

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
)

// sourceDate is the date a built-in price's source gives: YYYY-MM or
// YYYY-MM-DD.
var sourceDate = regexp.MustCompile(`\b(20\d\d-[01]\d)(-[0-3]\d)?\b`)

// Every built-in model is priced, and every price says where it was read
// and when: a price without them cannot be checked against the provider.
// The dates are of the current table (no older than 2026-08), so a table
// of mid-2025 prices coming back fails here.
func TestBuiltinModelsArePricedSourcedAndDated(t *testing.T) {
	seen := map[string]bool{}
	for _, prov := range Kinds() {
		k, _ := lookupKind(prov)
		if k.Development {
			continue // free, and no list price to source
		}
		if k.Builtin && len(k.Models) == 0 {
			t.Errorf("built-in kind %s lists no models", prov)
		}
		for _, s := range k.Models {
			id := prov + ":" + s.Name
			if seen[id] {
				t.Errorf("%s is in the table twice", id)
			}
			seen[id] = true
			if s.Pricing == nil {
				t.Errorf("%s has no price", id)
				continue
			}
			if err := checkPrice(s.Pricing); err != nil {
				t.Errorf("%s: %v", id, err)
			}
			src := s.Pricing.Source
			d := sourceDate.FindStringSubmatch(src)
			if !strings.Contains(src, "https://") || d == nil {
				t.Errorf("%s: source %q names no page (https://…) or no date", id, src)
			} else if d[1] < "2026-08" {
				t.Errorf("%s: source %q is dated before the current table", id, src)
			}
			if s.ContextTokens <= 0 {
				t.Errorf("%s has no context size", id)
			}
			// docs/api.md: the built-in models take part in auto.
			if !slices.Contains(s.Modes, ModeAuto) {
				t.Errorf("%s is not tagged auto: %v", id, s.Modes)
			}
		}
	}
	if len(seen) < 8 {
		t.Fatalf("the table has %d models", len(seen))
	}
}

// A few prices exactly as the providers publish them (sources in the
// table), so a slip in the table shows.
func TestBuiltinPricesAsSourced(t *testing.T) {
	c, err := NewCatalog(Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	long := func(tokens int, in, out, read, write, write1h float64) *LongPromptPrice {
		return &LongPromptPrice{PromptTokens: tokens, InputPerMTok: in, OutputPerMTok: out, CacheReadPerMTok: read, CacheWritePerMTok: write, CacheWrite1hPerMTok: write1h}
	}
	for _, w := range []struct {
		id                            string
		in, out, read, write, write1h float64
		long                          *LongPromptPrice
		context                       int
		json, tools                   bool
	}{
		{"openai:gpt-6.2-sol", 2, 10, 0.10, 2.50, 0, long(272000, 4, 15, 0.20, 5, 0), 1050000, true, false},
		{"openai:gpt-6-luna", 0.10, 0.50, 0.01, 0.125, 0, long(272000, 0.20, 0.75, 0.02, 0.25, 0), 1050000, true, false},
		{"openai:gpt-4o-mini", 0.15, 0.60, 0.075, 0, 0, nil, 128000, true, true},
		{"openai:gpt-4o", 2.50, 10, 1.25, 0, 0, nil, 128000, true, true},
		{"openai:gpt-4.1-mini", 0.40, 1.60, 0.10, 0, 0, nil, 1047576, true, true},
		{"anthropic:claude-fable-5-2", 8, 40, 0.20, 10, 16, nil, 1000000, true, true},
		{"anthropic:claude-opus-5-5", 4, 20, 0.20, 5, 8, nil, 1000000, true, true},
		{"anthropic:claude-sonnet-5-5", 2, 10, 0.10, 2.50, 4, nil, 1000000, true, true},
		{"anthropic:claude-haiku-5-5", 0.10, 0.50, 0.01, 0.125, 0.20, long(100000, 0.50, 2.50, 0.05, 0.625, 1), 1000000, true, true},
		{"anthropic:claude-haiku-4-5", 1, 5, 0.10, 1.25, 2, nil, 200000, true, true},
		{"anthropic:claude-opus-4-8", 5, 25, 0.50, 6.25, 10, nil, 1000000, true, true},
		{"openai:gpt-5.6-luna", 0.20, 1.20, 0.02, 0.25, 0, long(272000, 0.40, 1.5*1.20, 0.04, 0.50, 0), 1050000, true, false},
	} {
		m, ok := c.Get(w.id)
		if !ok || m.Pricing == nil {
			t.Errorf("%s: not a priced built-in model", w.id)
			continue
		}
		p := m.Pricing
		if p.InputPerMTok != w.in || p.OutputPerMTok != w.out || p.CacheReadPerMTok != w.read || p.CacheWritePerMTok != w.write {
			t.Errorf("%s: %v / %v, cache read %v, cache write %v; want %v / %v, %v, %v",
				w.id, p.InputPerMTok, p.OutputPerMTok, p.CacheReadPerMTok, p.CacheWritePerMTok, w.in, w.out, w.read, w.write)
		}
		// Anthropic and OpenAI both bill their web search tools at $10
		// per 1,000 searches, on every model.
		if search := 10.0; p.WebSearchPerK != search {
			t.Errorf("%s: web search %v per 1,000, want %v", w.id, p.WebSearchPerK, search)
		}
		// OpenAI's legacy preview search costs $25 per 1,000 on the models
		// that do not reason, its web search rate elsewhere.
		preview := 0.0
		switch w.id {
		case "openai:gpt-4o-mini", "openai:gpt-4o", "openai:gpt-4.1-mini":
			preview = 25
		}
		// OpenAI bills its file search tool per call, on every model.
		if file := map[bool]float64{true: 2.5}[strings.HasPrefix(w.id, "openai:")]; p.FileSearchPerK != file {
			t.Errorf("%s: file search %v per 1,000, want %v", w.id, p.FileSearchPerK, file)
		}
		if p.WebSearchPreviewPerK != preview {
			t.Errorf("%s: web search preview %v per 1,000, want %v", w.id, p.WebSearchPreviewPerK, preview)
		}
		if p.CacheWrite1hPerMTok != w.write1h {
			t.Errorf("%s: 1-hour cache write %v, want %v", w.id, p.CacheWrite1hPerMTok, w.write1h)
		}
		if !reflect.DeepEqual(p.LongPrompt, w.long) {
			t.Errorf("%s: long-prompt price %+v, want %+v", w.id, p.LongPrompt, w.long)
		}
		// The fast tier: twice the standard rates on OpenAI's GPT-5.6
		// family and later, and Anthropic's fast mode twice them on the
		// models that have it (Fable and Opus), as their pages say; no
		// rate on the others.
		fast := 0.0
		switch w.id {
		case "openai:gpt-6.2-sol", "openai:gpt-6-luna", "openai:gpt-5.6-luna",
			"anthropic:claude-fable-5-2", "anthropic:claude-opus-5-5", "anthropic:claude-opus-4-8":
			fast = 2
		}
		if p.FastRate != fast {
			t.Errorf("%s: fast rate %v, want %v", w.id, p.FastRate, fast)
		}
		// US-only inference: 1.1 times the rates on Anthropic's models
		// from Opus 4.6 on; Haiku 4.5 does not take it, OpenAI has none.
		us := 0.0
		if strings.HasPrefix(w.id, "anthropic:") && w.id != "anthropic:claude-haiku-4-5" {
			us = 1.1
		}
		if p.USRate != us {
			t.Errorf("%s: US-only rate %v, want %v", w.id, p.USRate, us)
		}
		if m.ContextTokens != w.context || m.SupportsJSON != w.json || m.SupportsTools != w.tools {
			t.Errorf("%s: context %d, json %v, tools %v; want %d, %v, %v", w.id, m.ContextTokens, m.SupportsJSON, m.SupportsTools, w.context, w.json, w.tools)
		}
	}
}

// Models the providers have retired are not in the table: a call to one
// fails upstream, and a mode would route to it.
func TestRetiredModelsAreNotBuiltIn(t *testing.T) {
	c, err := NewCatalog(Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	// Claude Haiku 3.5 retired on 2026-02-19, Claude Sonnet 4 on 2026-06-15.
	for _, id := range []string{"anthropic:claude-3-5-haiku-latest", "anthropic:claude-sonnet-4-0"} {
		if _, ok := c.Get(id); ok {
			t.Errorf("%s is built in", id)
		}
	}
}

// A prompt over the long-prompt threshold bills the whole call, output
// included, at the long-prompt rates; a prompt at the threshold does not.
// The prompt is the input with the cache reads and writes.
func TestLongPromptPricing(t *testing.T) {
	c, err := NewCatalog(Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		id   string
		u    Usage
		want float64
	}{
		// Claude Haiku 5.5: $0.10 / $0.50, cache $0.01 / $0.125 up to 100K; $0.50 / $2.50, $0.05 / $0.625 over.
		{"anthropic:claude-haiku-5-5", Usage{InputTokens: 60_000, CacheReadTokens: 30_000, CacheWriteTokens: 10_000, OutputTokens: 1_000},
			(60_000*0.10 + 30_000*0.01 + 10_000*0.125 + 1_000*0.50) / 1e6},
		{"anthropic:claude-haiku-5-5", Usage{InputTokens: 60_001, CacheReadTokens: 30_000, CacheWriteTokens: 10_000, OutputTokens: 1_000},
			(60_001*0.50 + 30_000*0.05 + 10_000*0.625 + 1_000*2.50) / 1e6},
		// gpt-6.2-sol: over 272K input tokens (cached ones count), input and cache double, output 1.5x.
		{"openai:gpt-6.2-sol", Usage{InputTokens: 200_000, CacheReadTokens: 72_000, OutputTokens: 2_000},
			(200_000*2 + 72_000*0.10 + 2_000*10) / 1e6},
		{"openai:gpt-6.2-sol", Usage{InputTokens: 200_001, CacheReadTokens: 72_000, OutputTokens: 2_000},
			(200_001*4 + 72_000*0.20 + 2_000*15) / 1e6},
		// No threshold: one rate at any length.
		{"openai:gpt-4.1-mini", Usage{InputTokens: 900_000, OutputTokens: 1_000}, (900_000*0.40 + 1_000*1.60) / 1e6},
	} {
		got := callCost(t, c, w.id, w.u)
		if got == nil || *got != RoundUSD(w.want) {
			t.Errorf("%s %+v: cost %s, want %v", w.id, w.u, costText(got), RoundUSD(w.want))
		}
	}
	m, _ := c.Get("anthropic:claude-haiku-5-5")
	if r := m.Pricing.At(100_001); r.InputPerMTok != 0.50 || r.LongPrompt != nil || r.Source != m.Pricing.Source {
		t.Fatalf("rates over the threshold: %+v", r)
	}
	if r := m.Pricing.At(100_000); r.InputPerMTok != 0.10 || r.LongPrompt != nil {
		t.Fatalf("rates at the threshold: %+v", r)
	}
}

// A providers file prices long prompts too; a threshold that is not a
// token count or a negative long-prompt rate stops the start.
func TestProvidersFileLongPromptPrice(t *testing.T) {
	c, err := catalogFromFile(t, `{"pricing":{"openai:gpt-4o":{"inputPerMTok":2,"outputPerMTok":8,"source":"contract, 2026-11-01",
		"longPrompt":{"promptTokens":128,"inputPerMTok":4,"outputPerMTok":12}}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := listed(t, c, "openai:gpt-4o")
	want := map[string]any{"promptTokens": 128.0, "inputPerMTok": 4.0, "outputPerMTok": 12.0, "cacheReadPerMTok": 0.0, "cacheWritePerMTok": 0.0}
	if got := m["pricing"].(map[string]any)["longPrompt"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("listed longPrompt %v, want %v", got, want)
	}
	if cost := callCost(t, c, "openai:gpt-4o", Usage{InputTokens: 129, OutputTokens: 10}); cost == nil || *cost != RoundUSD((129*4.0+10*12.0)/1e6) {
		t.Fatalf("a long prompt costs %s", costText(cost))
	}
	for _, c := range []struct{ file, want string }{
		{`{"pricing":{"openai:gpt-4o":{"inputPerMTok":1,"source":"x","longPrompt":{"inputPerMTok":2}}}}`, "longPrompt.promptTokens must be above 0"},
		{`{"pricing":{"openai:gpt-4o":{"inputPerMTok":1,"source":"x","longPrompt":{"promptTokens":10,"cacheReadPerMTok":-1}}}}`, "a price is negative (longPrompt.cacheReadPerMTok -1)"},
		{`{"pricing":{"openai:gpt-4o":{"inputPerMTok":1,"source":"x","fastRate":0.5}}}`, "fastRate must be 0 (no rate) or from 1 to 100 times the standard rates (0.5)"},
		{`{"pricing":{"openai:gpt-4o":{"inputPerMTok":1,"source":"x","fastRate":1e9}}}`, "fastRate must be 0 (no rate) or from 1 to 100 times the standard rates (1e+09)"},
		{`{"pricing":{"anthropic:claude-opus-5-5":{"inputPerMTok":1,"source":"x","usRate":0.9}}}`, "usRate must be 0 (no rate) or from 1 to 100 times the standard rates (0.9)"},
		{`{"pricing":{"openai:gpt-4o":{"inputPerMTok":1,"source":"x","longPrompt":{"promptTokens":10,"threshold":5}}}}`, `unknown field "threshold"`},
		// A rate no model has, which a long enough call would make an
		// infinite cost of.
		{`{"pricing":{"openai:gpt-4o":{"inputPerMTok":1e308,"source":"x"}}}`, "a price is above 1e+06 USD per million tokens (inputPerMTok 1e+308)"},
		{`{"pricing":{"openai:gpt-4o":{"inputPerMTok":1,"source":"x","longPrompt":{"promptTokens":10,"outputPerMTok":1000001}}}}`, "a price is above 1e+06 USD per million tokens (longPrompt.outputPerMTok"},
	} {
		if _, err := catalogFromFile(t, c.file, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.file, err, c.want)
		}
	}
}

// The usage the adapters read (gateway/openai, gateway/anthropic) is
// billed as the providers bill it: OpenAI's
// reasoning tokens are inside completion_tokens and its cached tokens inside
// prompt_tokens; Anthropic's thinking is inside output_tokens and its cache
// reads and writes are apart from input_tokens.
func TestUsageIsBilledAsTheProvidersBill(t *testing.T) {
	c, err := NewCatalog(Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	// What gateway/openai reads from {"prompt_tokens":1000,"completion_tokens":500,
	// "prompt_tokens_details":{"cached_tokens":600},"completion_tokens_details":
	// {"reasoning_tokens":400}} (its TestUsageAsOpenAIBills).
	u := Usage{InputTokens: 400, OutputTokens: 500, CacheReadTokens: 600}
	// gpt-6-luna: 400 uncached at $0.10, 600 cached at $0.01, 500 out (400 of them reasoning) at $0.50.
	if cost := callCost(t, c, "openai:gpt-6-luna", u); cost == nil || *cost != RoundUSD((400*0.10+600*0.01+500*0.50)/1e6) {
		t.Fatalf("OpenAI call cost %s", costText(cost))
	}
	// What gateway/anthropic reads from {"input_tokens":100,"cache_read_input_tokens":2000,
	// "cache_creation_input_tokens":300,"output_tokens":700} (its TestUsageAsAnthropicBills).
	u = Usage{InputTokens: 100, OutputTokens: 700, CacheReadTokens: 2000, CacheWriteTokens: 300}
	// claude-sonnet-5-5: $2 in, $0.10 cache read, $2.50 cache write, $10 out (thinking included).
	if cost := callCost(t, c, "anthropic:claude-sonnet-5-5", u); cost == nil || *cost != RoundUSD((100*2+2000*0.10+300*2.50+700*10)/1e6) {
		t.Fatalf("Anthropic call cost %s", costText(cost))
	}
}

// POST /v1/models/sync adds what a provider lists: a model new to the
// catalog joins it unpriced (a dated id too: the alias that stands for it
// keeps the price), a built-in alias whose dated id is listed stays
// available and is not reported missing, and the built-in models the list
// leaves out are reported missing and leave the modes.
func TestSyncAddsWhatAnthropicLists(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("x-api-key") != "ak-test" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":[{"type":"model","id":"claude-new-1"},{"type":"model","id":"claude-sonnet-5-5"},
			{"type":"model","id":"claude-opus-5-5"},{"type":"model","id":"claude-haiku-4-5-20251001"}],"has_more":false}`))
	}))
	defer up.Close()
	store, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	env := map[string]string{"ANTHROPIC_API_KEY": "ak-test", "ANTHROPIC_BASE_URL": up.URL}
	c, err := NewCatalog(Config{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Sync(context.Background(), store, eventstore.Metadata{Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var an *SyncResult
	for i := range res {
		if res[i].Provider == "anthropic" {
			an = &res[i]
		}
	}
	if an == nil || !an.OK || an.Listed != 4 ||
		!slices.Equal(an.Added, []string{"anthropic:claude-haiku-4-5-20251001", "anthropic:claude-new-1"}) ||
		!slices.Equal(an.Missing, []string{"anthropic:claude-fable-5-2", "anthropic:claude-haiku-5-5", "anthropic:claude-opus-4-8"}) {
		t.Fatalf("anthropic sync: %+v", an)
	}
	if m, _ := c.Get("anthropic:claude-new-1"); !m.Discovered || m.HasPricing || !m.Available {
		t.Fatalf("discovered model: %+v", m)
	}
	if m, _ := c.Get("anthropic:claude-haiku-4-5"); !m.Available || m.Listed == nil || !*m.Listed {
		t.Fatalf("alias of a listed dated id: %+v", m)
	}
	routes, excluded, err := c.Routes(ModePremium, "", Needs{})
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) == 0 || routes[0].ID != "anthropic:claude-opus-5-5" {
		t.Fatalf("premium after the sync: %+v", routes)
	}
	if !slices.ContainsFunc(excluded, func(x Excluded) bool {
		return x.ID == "anthropic:claude-fable-5-2" && strings.Contains(x.Reason, "not listed")
	}) {
		t.Fatalf("excluded: %+v", excluded)
	}
}

// Anthropic bills a 1-hour cache write at 2x the input rate and a 5-minute
// one at 1.25x: every built-in Anthropic price (its long-prompt rates
// too) has both.
func TestBuiltinAnthropicCacheWriteRates(t *testing.T) {
	c, err := NewCatalog(Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range c.List() {
		if m.Kind != "anthropic" || m.Pricing == nil {
			continue
		}
		n++
		p := m.Pricing
		if p.CacheWrite1hPerMTok != 2*p.InputPerMTok || math.Abs(p.CacheWritePerMTok-1.25*p.InputPerMTok) > 1e-12 {
			t.Errorf("%s: cache writes %v (5m) and %v (1h) for an input rate of %v", m.ID, p.CacheWritePerMTok, p.CacheWrite1hPerMTok, p.InputPerMTok)
		}
		if l := p.LongPrompt; l != nil && (l.CacheWrite1hPerMTok != 2*l.InputPerMTok || math.Abs(l.CacheWritePerMTok-1.25*l.InputPerMTok) > 1e-12) {
			t.Errorf("%s: long-prompt cache writes %v (5m) and %v (1h) for an input rate of %v", m.ID, l.CacheWritePerMTok, l.CacheWrite1hPerMTok, l.InputPerMTok)
		}
	}
	if n == 0 {
		t.Fatal("no built-in Anthropic price")
	}
}

// A provider that lists more models than one sync event can hold (the
// store's largest event) is told as a failed sync, recorded as such,
// that changes no model: the sync answered an error for every provider,
// and the admin route a 500.
func TestSyncOfAListTooLargeToRecord(t *testing.T) {
	var list strings.Builder
	list.WriteString(`{"object":"list","data":[`)
	for i := range 120_000 {
		if i > 0 {
			list.WriteByte(',')
		}
		fmt.Fprintf(&list, `{"id":"model-number-%06d-with-a-long-name"}`, i)
	}
	list.WriteString(`]}`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(list.String()))
	}))
	defer up.Close()
	store := openStore(t)
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": up.URL + "/v1"}
	c, err := NewCatalog(Config{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	before := len(c.List())
	res, err := c.Sync(context.Background(), store, eventstore.Metadata{Actor: "test"}, "openai")
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	if len(res) != 1 || res[0].OK || !strings.Contains(res[0].Error, "120000 models") {
		t.Fatalf("sync result: %+v", res)
	}
	if n := len(c.List()); n != before {
		t.Fatalf("the catalog went from %d models to %d", before, n)
	}
	if m, _ := c.Get("openai:gpt-4o"); !m.Available || m.Listed != nil {
		t.Fatalf("a model the failed sync should not touch: %+v", m)
	}
	evs, err := store.ReadStream(context.Background(), CatalogStream, 0, 10)
	if err != nil || len(evs) != 1 || !strings.Contains(string(evs[0].Data), `"ok":false`) {
		t.Fatalf("catalog stream: %d events, %v", len(evs), err)
	}
}
