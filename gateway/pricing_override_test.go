package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
)

// listed is a model as GET /v1/models shows it: the handler answers
// {"object":"list","data":catalog.List()}, so this is the JSON of the
// model's element of that list.
func listed(t *testing.T, c *Catalog, id string) map[string]any {
	t.Helper()
	b, err := json.Marshal(c.List())
	if err != nil {
		t.Fatal(err)
	}
	var models []map[string]any
	if err := json.Unmarshal(b, &models); err != nil {
		t.Fatal(err)
	}
	for _, m := range models {
		if m["id"] == id {
			return m
		}
	}
	t.Fatalf("%s is not in the list", id)
	return nil
}

// oneMillionEach is a call's usage that costs the sum of its model's four
// rates.
var oneMillionEach = Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000, CacheReadTokens: 1_000_000, CacheWriteTokens: 1_000_000}

// costText shows a cost that may be unknown.
func costText(c *float64) string {
	if c == nil {
		return "unknown"
	}
	return fmt.Sprint(*c)
}

// callCost is what a call to id would be billed for usage: the model the
// gateway resolves the id to, priced as the call path prices it.
func callCost(t *testing.T, c *Catalog, id string, u Usage) *float64 {
	t.Helper()
	_, m, err := c.Resolve(id)
	if err != nil {
		t.Fatal(err)
	}
	return CostOf(Request{}, m, u)
}

// A built-in model's price is overridden without redeclaring its
// provider: the list shows the new price and its source, calls are billed
// at it, the provider keeps its key and its other models their built-in
// prices, and no other catalog sees the change.
func TestPricingOverridesBuiltinModel(t *testing.T) {
	c, err := catalogFromFile(t, `{"pricing":{"openai:gpt-4o":{"inputPerMTok":2,"outputPerMTok":8,"cacheReadPerMTok":0.5,"cacheWritePerMTok":0,"source":"contract price, 2025-09-01"}}}`,
		map[string]string{"OPENAI_API_KEY": "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	m := listed(t, c, "openai:gpt-4o")
	want := map[string]any{"inputPerMTok": 2.0, "outputPerMTok": 8.0, "cacheReadPerMTok": 0.5, "cacheWritePerMTok": 0.0, "source": "contract price, 2025-09-01"}
	if m["hasPricing"] != true || !reflect.DeepEqual(m["pricing"], want) {
		t.Fatalf("listed gpt-4o: hasPricing %v, pricing %v; want the override %v", m["hasPricing"], m["pricing"], want)
	}
	if cost := callCost(t, c, "openai:gpt-4o", oneMillionEach); cost == nil || *cost != 10.5 {
		t.Fatalf("a call's cost: %v, want 10.5 (2 + 8 + 0.5 + 0 at the override; 13.75 at the built-in price)", costText(cost))
	}
	// The rest of the provider is the built-in one.
	if m := listed(t, c, "openai:gpt-4o-mini"); m["configured"] != true || m["pricing"].(map[string]any)["inputPerMTok"] != 0.15 {
		t.Fatalf("gpt-4o-mini: %v", m)
	}
	if m := listed(t, c, "openai:gpt-4.1-mini"); m["hasPricing"] != true {
		t.Fatalf("gpt-4.1-mini lost its built-in price: %v", m)
	}
	// The built-in table is shared by every catalog: the override must not
	// have written into it.
	plain, err := NewCatalog(Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if cost := callCost(t, plain, "openai:gpt-4o", oneMillionEach); cost == nil || *cost != 13.75 {
		t.Fatalf("a catalog without the override bills gpt-4o %v, want the built-in 13.75", costText(cost))
	}
}

// An override reaches models the file declares: it replaces a declared
// price (it is applied after the providers), and prices a model declared
// without one.
func TestPricingOverridesDeclaredModel(t *testing.T) {
	c, err := catalogFromFile(t, `{
		"providers":[{"name":"tiny","kind":"openai-compatible","baseUrl":"http://tiny.invalid/v1","models":[
			{"name":"t1","modes":["cheap"],"pricing":{"inputPerMTok":1,"outputPerMTok":2,"source":"declared"}},
			{"name":"t2"}]}],
		"pricing":{
			"tiny:t1":{"inputPerMTok":0.25,"outputPerMTok":0.5,"source":"override"},
			"tiny:t2":{"inputPerMTok":0,"outputPerMTok":0,"source":"self-hosted"}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	t1, _ := c.Get("tiny:t1")
	if !t1.HasPricing || t1.Pricing == nil || *t1.Pricing != (Price{InputPerMTok: 0.25, OutputPerMTok: 0.5, Source: "override"}) {
		t.Fatalf("tiny:t1 pricing %+v, want the override's", t1.Pricing)
	}
	if cost := callCost(t, c, "tiny:t1", Usage{InputTokens: 4_000_000, OutputTokens: 2_000_000}); cost == nil || *cost != 2 {
		t.Fatalf("tiny:t1 cost %v, want 2 (8 at the declared price)", costText(cost))
	}
	t2, _ := c.Get("tiny:t2")
	if !t2.HasPricing || t2.Pricing == nil || t2.Pricing.Source != "self-hosted" {
		t.Fatalf("tiny:t2: hasPricing %v, pricing %+v; want priced by the override", t2.HasPricing, t2.Pricing)
	}
	if cost := callCost(t, c, "tiny:t2", oneMillionEach); cost == nil || *cost != 0 {
		t.Fatalf("tiny:t2 cost %v, want a known 0", costText(cost))
	}
}

// null in the pricing object marks a model unpriced: hasPricing false, no
// pricing in the list, a call's cost unknown (nil), never 0.
func TestPricingOverrideNullUnprices(t *testing.T) {
	c, err := catalogFromFile(t, `{"pricing":{"anthropic:claude-sonnet-5-5":null}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := listed(t, c, "anthropic:claude-sonnet-5-5")
	if m["hasPricing"] != false {
		t.Fatalf("hasPricing %v, want false", m["hasPricing"])
	}
	if p, ok := m["pricing"]; ok {
		t.Fatalf("pricing %v listed for an unpriced model", p)
	}
	if cost := callCost(t, c, "anthropic:claude-sonnet-5-5", Usage{InputTokens: 10, OutputTokens: 10}); cost != nil {
		t.Fatalf("cost %v, want unknown (nil)", *cost)
	}
	// The other models keep their prices.
	if h, _ := c.Get("anthropic:claude-haiku-4-5"); !h.HasPricing {
		t.Fatal("null unpriced another model")
	}
}

// A pricing object that names a model the catalog does not have, a
// negative rate, a missing source or a misspelt field stops the start with
// a message naming the id.
func TestPricingOverrideMistakes(t *testing.T) {
	for _, c := range []struct{ name, file, want string }{
		{"unknown model", `{"pricing":{"openai:gpt-4o-typo":{"inputPerMTok":1,"source":"x"}}}`,
			`pricing: "openai:gpt-4o-typo" is not a model in the catalog`},
		{"unknown provider", `{"pricing":{"nobody:gpt-4o":{"inputPerMTok":1,"source":"x"}}}`,
			`pricing: "nobody:gpt-4o" is not a model in the catalog`},
		{"not an id", `{"pricing":{"gpt-4o":{"inputPerMTok":1,"source":"x"}}}`,
			`pricing: "gpt-4o" is not a model in the catalog (ids are <provider>:<model>)`},
		{"unknown null", `{"pricing":{"openai:gpt-4o-typo":null}}`,
			`pricing: "openai:gpt-4o-typo" is not a model in the catalog`},
		// A provider declared in the file replaces its built-in models:
		// the override comes after, and gpt-4o is gone.
		{"model the file's provider dropped", `{"providers":[{"name":"openai","kind":"openai","baseUrl":"http://x/v1","models":[{"name":"gpt-4o-mini"}]}],
			"pricing":{"openai:gpt-4o":{"inputPerMTok":1,"source":"x"}}}`,
			`pricing: "openai:gpt-4o" is not a model in the catalog`},
		{"negative price", `{"pricing":{"openai:gpt-4o":{"inputPerMTok":1,"cacheWritePerMTok":-0.5,"source":"x"}}}`,
			`pricing: openai:gpt-4o: a price is negative (cacheWritePerMTok -0.5)`},
		{"negative 1-hour cache write", `{"pricing":{"anthropic:claude-opus-5-5":{"inputPerMTok":1,"cacheWrite1hPerMTok":-2,"source":"x"}}}`,
			`pricing: anthropic:claude-opus-5-5: a price is negative (cacheWrite1hPerMTok -2)`},
		{"negative long-prompt 1-hour cache write", `{"pricing":{"anthropic:claude-opus-5-5":{"inputPerMTok":1,"source":"x","longPrompt":{"promptTokens":10,"cacheWrite1hPerMTok":-2}}}}`,
			`pricing: anthropic:claude-opus-5-5: a price is negative (longPrompt.cacheWrite1hPerMTok -2)`},
		{"no source", `{"pricing":{"openai:gpt-4o":{"inputPerMTok":1,"outputPerMTok":2}}}`,
			`pricing: openai:gpt-4o: pricing needs a source (where and when the price was read)`},
		{"blank source", `{"pricing":{"openai:gpt-4o":{"inputPerMTok":1,"source":"  "}}}`,
			`pricing: openai:gpt-4o: pricing needs a source`},
		{"empty object", `{"pricing":{"openai:gpt-4o":{}}}`,
			`pricing: openai:gpt-4o: pricing needs a source`},
		{"misspelt field", `{"pricing":{"openai:gpt-4o":{"inputPerMillion":1,"source":"x"}}}`,
			`unknown field "inputPerMillion"`},
	} {
		_, err := catalogFromFile(t, c.file, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "gateway: providers file ") {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

// A sync (and a probe) leaves an override in force: the listed model
// keeps the override, not the built-in price, and a replica that builds
// its catalog from the same file and reads the catalog events ends with
// the same catalog, prices included.
func TestPricingOverrideSurvivesSync(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/models") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[{"id":"gpt-4o"},{"id":"gpt-4o-mini"},{"id":"gpt-4o-2024-08-06"}]}`))
	}))
	defer up.Close()
	store, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	file := `{"pricing":{
		"openai:gpt-4o":{"inputPerMTok":2,"outputPerMTok":8,"source":"contract price, 2025-09-01"},
		"openai:gpt-4o-mini":null}}`
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": up.URL + "/v1"}
	check := func(who string, c *Catalog) {
		t.Helper()
		m, _ := c.Get("openai:gpt-4o")
		if !m.Available || m.Listed == nil || !*m.Listed {
			t.Fatalf("%s: gpt-4o not marked listed by the sync: %+v", who, m)
		}
		if !m.HasPricing || m.Pricing == nil || *m.Pricing != (Price{InputPerMTok: 2, OutputPerMTok: 8, Source: "contract price, 2025-09-01"}) {
			t.Fatalf("%s: gpt-4o pricing after the sync %+v, want the override", who, m.Pricing)
		}
		if cost := callCost(t, c, "openai:gpt-4o", oneMillionEach); cost == nil || *cost != 10 {
			t.Fatalf("%s: gpt-4o cost %v after the sync, want 10", who, costText(cost))
		}
		if mini, _ := c.Get("openai:gpt-4o-mini"); mini.HasPricing || mini.Pricing != nil || !mini.Available {
			t.Fatalf("%s: gpt-4o-mini after the sync: hasPricing %v, pricing %+v, available %v; want unpriced by null, available", who, mini.HasPricing, mini.Pricing, mini.Available)
		}
		if d, _ := c.Get("openai:gpt-4o-2024-08-06"); !d.Discovered || d.HasPricing {
			t.Fatalf("%s: discovered model %+v, want unpriced", who, d)
		}
	}

	a, err := catalogFromFile(t, file, env)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := a.Sync(ctx, store, eventstore.Metadata{Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Provider == "openai" && (!r.OK || r.Listed != 3) {
			t.Fatalf("sync: %+v", r)
		}
	}
	check("the replica that synced", a)
	// A probe result, and every event applied again, change no price.
	h := HealthChecked{ID: "openai:gpt-4o", OK: true, LatencyMs: 5, TestedAt: time.Now().UTC().Truncate(time.Microsecond)}
	if _, err := appendCatalog(ctx, store, EventModelHealthChecked, h, eventstore.Metadata{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	evs, err := store.ReadAll(ctx, eventstore.Position{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if err := a.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if m, _ := a.Get("openai:gpt-4o"); m.Health.TestedAt == nil {
		t.Fatal("the probe was not applied")
	}
	check("after a probe and the sync again", a)

	// Another replica, same providers file, reading the events.
	b, err := catalogFromFile(t, file, env)
	if err != nil {
		t.Fatal(err)
	}
	f := &Follower{Store: store, Appliers: []Applier{b}}
	if err := f.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	check("a replica following the store", b)
	wantJSON, _ := json.Marshal(a.List())
	gotJSON, _ := json.Marshal(b.List())
	if string(gotJSON) != string(wantJSON) {
		t.Fatalf("the replica's catalog differs from the one that synced:\n%s\n%s", gotJSON, wantJSON)
	}
}

// The providers file's pricing object takes a 1-hour cache-write rate
// (cacheWrite1hPerMTok, in a price and in its longPrompt): the list shows
// it and a call's 1-hour writes are billed at it; a price without one
// bills them at the 5-minute rate.
func TestPricingOverrideOneHourCacheWrites(t *testing.T) {
	c, err := catalogFromFile(t, `{"pricing":{
		"anthropic:claude-opus-5-5":{"inputPerMTok":3,"outputPerMTok":15,"cacheReadPerMTok":0.3,"cacheWritePerMTok":3.75,"cacheWrite1hPerMTok":6,
			"longPrompt":{"promptTokens":4500000,"inputPerMTok":6,"outputPerMTok":22.5,"cacheReadPerMTok":0.6,"cacheWritePerMTok":7.5,"cacheWrite1hPerMTok":12},
			"source":"contract price, 2026-11-01"},
		"anthropic:claude-sonnet-5-5":{"inputPerMTok":3,"outputPerMTok":15,"cacheReadPerMTok":0.3,"cacheWritePerMTok":3.75,"source":"contract price, 2026-11-01"}}}`,
		map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test"})
	if err != nil {
		t.Fatal(err)
	}
	pricing := listed(t, c, "anthropic:claude-opus-5-5")["pricing"].(map[string]any)
	if pricing["cacheWrite1hPerMTok"] != 6.0 || pricing["longPrompt"].(map[string]any)["cacheWrite1hPerMTok"] != 12.0 {
		t.Fatalf("listed pricing: %v", pricing)
	}
	// 1M input (3) + 1M output (15) + 1M reads (0.3) + 1M 5-minute writes
	// (3.75) + 1M 1-hour writes (6): 28.05.
	u := oneMillionEach
	u.CacheWriteTokens, u.CacheWrite1hTokens = 2_000_000, 1_000_000
	if cost := callCost(t, c, "anthropic:claude-opus-5-5", u); cost == nil || *cost != 28.05 {
		t.Fatalf("opus: %v, want 28.05", costText(cost))
	}
	// Past the long-prompt threshold: 6 + 22.5 + 0.6 + 2*7.5 + 2*12 = 68.1.
	long := Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000, CacheReadTokens: 1_000_000, CacheWriteTokens: 4_000_000, CacheWrite1hTokens: 2_000_000}
	if cost := callCost(t, c, "anthropic:claude-opus-5-5", long); cost == nil || *cost != 68.1 {
		t.Fatalf("opus, long prompt: %v, want 68.1", costText(cost))
	}
	// No 1-hour rate: the 1-hour writes at the 5-minute one, 3+15+0.3+2*3.75.
	if cost := callCost(t, c, "anthropic:claude-sonnet-5-5", u); cost == nil || *cost != 25.8 {
		t.Fatalf("sonnet: %v, want 25.8", costText(cost))
	}
	if _, ok := listed(t, c, "anthropic:claude-sonnet-5-5")["pricing"].(map[string]any)["cacheWrite1hPerMTok"]; ok {
		t.Fatal("a price without a 1-hour rate lists one")
	}
}
