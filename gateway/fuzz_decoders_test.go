package gateway

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
)

// fuzzEnv is the environment of the fuzzed catalogs: every key variable is
// set, so that keyEnv names configure their providers, and nothing else is,
// so that the machine's environment does not change the outcome.
func fuzzEnv(k string) string {
	if strings.HasSuffix(k, "_KEY") {
		return "k"
	}
	return ""
}

// checkCatalog fails the test when a model of the catalog does not resolve
// by its own id, or its kind is not its provider's.
func checkCatalog(t *testing.T, c *Catalog) {
	t.Helper()
	for _, m := range c.List() {
		p, got, err := c.Resolve(m.ID)
		if err != nil {
			t.Fatalf("model %q is listed but does not resolve: %v", m.ID, err)
		}
		if got.ID != m.ID || p.Name() != m.Provider {
			t.Fatalf("model %q resolves to %q of provider %q", m.ID, got.ID, p.Name())
		}
		if m.Kind != p.Kind() {
			t.Fatalf("model %q has kind %q, its provider %s is %q", m.ID, m.Kind, p.Name(), p.Kind())
		}
	}
}

// FuzzProvidersFile builds the catalog from any providers file, as the
// server does at start. A file it accepts is one JSON object, and the
// catalog keeps the file's promises: every model resolves, fallbacks and
// mode chains name declared models (tagged with the mode), prices are not
// negative and name their source.
func FuzzProvidersFile(f *testing.F) {
	model := `{"name":"m1","contextTokens":8192,"modes":["cheap"],"pricing":{"inputPerMTok":1,"outputPerMTok":2,"source":"test"}}`
	for _, seed := range []string{
		// As documented.
		`{"providers": [{"name": "ollama", "kind": "openai-compatible", "baseUrl": "http://127.0.0.1:11434/v1",
		  "keyEnv": "", "models": [{"name": "llama3.2", "contextTokens": 131072, "supportsJson": true,
		  "modes": ["cheap"], "pricing": {"inputPerMTok": 0, "outputPerMTok": 0, "source": "self-hosted"}}]}]}`,
		`{"providers":[{"name":"tiny","kind":"openai-compatible","baseUrl":"http://127.0.0.1:9/v1","keyEnv":"TINY_KEY","models":[
		  {"name":"tiny-1","contextTokens":8192,"supportsJson":true,"supportsTools":true,"modes":["cheap","auto"],
		   "pricing":{"inputPerMTok":0.1,"outputPerMTok":0.2,"cacheReadPerMTok":0.01,"source":"test"},"fallbacks":["openai:gpt-4o-mini","tiny:tiny-2"]},
		  {"name":"tiny-2","modes":["cheap"],"fallbacks":["anthropic:claude-3-5-haiku-latest"]}]},
		 {"name":"anthropic","kind":"anthropic","keyEnv":"ANTHROPIC_API_KEY","models":[
		  {"name":"claude-3-5-haiku-latest","modes":["cheap","premium"],"pricing":{"inputPerMTok":0.8,"outputPerMTok":4,"cacheWritePerMTok":1,"source":"list price"}}]}],
		 "modes":{"cheap":["tiny:tiny-1","openai:gpt-4o-mini"],"premium":["anthropic:claude-3-5-haiku-latest"]}}`,
		`{"providers":[{"name":"openai","kind":"openai","baseUrl":"https://example.com/v1","models":[]}],"modes":{}}`,
		// An account's declared defaults: a tier, a geography (and one on a
		// kind without geographies).
		`{"providers":[{"name":"ant","kind":"anthropic","baseUrl":"http://x","defaultInferenceGeo":"us","models":[]},
		  {"name":"oai","kind":"openai","baseUrl":"http://x/v1","defaultServiceTier":"fast","models":[]}]}`,
		`{"providers":[{"name":"oai","kind":"openai","baseUrl":"http://x/v1","defaultInferenceGeo":"us","models":[]}]}`,
		`{}`,
		`{"providers":[]}` + "\n",
		// The mistakes TestProvidersFileMistakes names.
		`{"providers":[]} }}} garbage`,
		`{"providers":[],"mode":{}}`,
		`{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[` + model + `,` + model + `]}]}`,
		`{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[{"name":"m1","fallbacks":["p:m2"]}]}]}`,
		`{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[` + model + `]}],"modes":{"cheap":["p:typo"]}}`,
		`{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[{"name":"m1","pricing":{"inputPerMTok":-1,"source":"x"}}]}]}`,
		`{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[{"name":"m1","pricing":{}}]}]}`,
		`{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[` + model + `]}],"modes":{"premium":["p:m1"]}}`,
		// Price overrides: of a built-in and a declared model, null, and the
		// mistakes TestPricingOverrideMistakes names.
		`{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[` + model + `]}],
		 "pricing":{"openai:gpt-4o":{"inputPerMTok":2,"outputPerMTok":8,"source":"contract"},"p:m1":{"inputPerMTok":0,"source":"self-hosted"},"anthropic:claude-sonnet-5-5":null}}`,
		`{"pricing":{"openai:gpt-6-luna":{"inputPerMTok":0.1,"source":"x","longPrompt":{"promptTokens":272000,"inputPerMTok":0.2,"outputPerMTok":0.75}}}}`,
		`{"pricing":{"openai:gpt-6-luna":{"inputPerMTok":0.1,"source":"x","longPrompt":{"promptTokens":0}}}}`,
		`{"pricing":{"openai:gpt-4o-typo":{"inputPerMTok":1,"source":"x"}}}`,
		`{"pricing":{"openai:gpt-4o":{"inputPerMTok":-1,"source":"x"}}}`,
		`{"pricing":{"openai:gpt-4o":{"inputPerMTok":1}}}`,
		// And a few more.
		`{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[{"name":"m1","fallbacks":["p:m1"]}]}]}`,
		`{"providers":[{"name":"local","kind":"openai","baseUrl":"http://x/v1"}]}`,
		`{"providers":[{"name":"p:q","kind":"openai","baseUrl":"http://x/v1"}]}`,
		`{"providers":[{"name":"p","kind":"grpc","baseUrl":"http://x/v1"}]}`,
		`{"modes":{"fastest":[]}}`,
		// Not one JSON object.
		``, `[]`, `"providers"`, `1`, `null`, ` null `,
	} {
		f.Add([]byte(seed))
	}
	path := filepath.Join(f.TempDir(), "providers.json")

	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := NewCatalog(Config{Getenv: fuzzEnv, ProvidersFile: path, ProvidersRequired: true})
		if err != nil {
			return
		}
		if !json.Valid(data) || !bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{")) {
			t.Fatalf("accepted %q, which is not one JSON object", data)
		}
		checkCatalog(t, c)
		for _, m := range c.List() {
			if m.HasPricing != (m.Pricing != nil) {
				t.Fatalf("model %s: hasPricing %v with pricing %+v", m.ID, m.HasPricing, m.Pricing)
			}
			if pr := m.Pricing; pr != nil {
				if pr.InputPerMTok < 0 || pr.OutputPerMTok < 0 || pr.CacheReadPerMTok < 0 || pr.CacheWritePerMTok < 0 || pr.CacheWrite1hPerMTok < 0 {
					t.Fatalf("model %s has a negative price: %+v", m.ID, *pr)
				}
				if l := pr.LongPrompt; l != nil && (l.PromptTokens <= 0 || l.InputPerMTok < 0 || l.OutputPerMTok < 0 || l.CacheReadPerMTok < 0 || l.CacheWritePerMTok < 0 || l.CacheWrite1hPerMTok < 0) {
					t.Fatalf("model %s has a long-prompt price no bill could come from: %+v", m.ID, *l)
				}
				if strings.TrimSpace(pr.Source) == "" {
					t.Fatalf("model %s has a price without a source: %+v", m.ID, *pr)
				}
			}
			for _, id := range m.Fallbacks {
				if _, ok := c.Get(id); !ok || id == m.ID {
					t.Fatalf("model %s falls back to %q, which is not another declared model", m.ID, id)
				}
			}
		}
		c.mu.RLock()
		chains := maps.Clone(c.modeChains)
		c.mu.RUnlock()
		for mode, ids := range chains {
			if !IsMode(mode) {
				t.Fatalf("mode chain for %q, which is not a mode", mode)
			}
			for _, id := range ids {
				m, ok := c.Get(id)
				if !ok || !slices.Contains(m.Modes, mode) {
					t.Fatalf("modes.%s names %q, which is not a declared model tagged %s", mode, id, mode)
				}
			}
		}
	})
}

// catalogState is what the catalog's events change: its models and the
// last sync of each provider.
type catalogState struct {
	Models []Model
	Syncs  map[string]ModelsSynced
}

func stateOfCatalog(c *Catalog) catalogState {
	c.mu.RLock()
	syncs := maps.Clone(c.syncs)
	c.mu.RUnlock()
	return catalogState{Models: c.List(), Syncs: syncs}
}

// budgetState is what budget and usage events change: the limits, the
// spending and the holds of every tenant.
type budgetState struct {
	Limits map[string]Limits
	Spent  map[string]spend
	Held   map[string]float64
}

func stateOfBudgets(b *Budgets) budgetState {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := budgetState{Limits: maps.Clone(b.limits), Spent: map[string]spend{}, Held: map[string]float64{}}
	for tenant, sp := range b.spent {
		s.Spent[tenant] = *sp
	}
	for tenant, hb := range b.holds {
		if len(hb.holds) > 0 {
			s.Held[tenant] = hb.sum
		}
	}
	return s
}

// FuzzStateEvents hands the catalog and the budgets (as the follower does:
// every event to both) an event of any type, stream and payload. An event
// an applier does not take, or one whose payload does not decode, leaves
// its state as it was; a catalog event applied twice leaves the catalog as
// applying it once; every model of the catalog still resolves by its id; a
// usage event without a cost spends nothing.
func FuzzStateEvents(f *testing.F) {
	types := []string{EventModelsSynced, EventModelHealthChecked, EventBudgetSet, EventUsageRecorded, "SomethingElse",
		EventBudgetHeld, EventBudgetHoldRenewed, EventBudgetHoldReleased, EventUsageBatchRecorded}
	streams := []string{CatalogStream, "budget-", "usage-"} // a tenant's streams get the tenant's name
	pick := func(typ, stream int) uint8 { return uint8(stream*len(types) + typ) }
	at := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	for _, s := range []struct {
		pick   uint8
		tenant string
		data   string
	}{
		{pick(0, 0), "", `{"provider":"openai","ok":true,"models":["gpt-4o-mini","gpt-5"],"syncedAt":"2026-03-14T13:00:00Z"}`},
		{pick(0, 0), "", `{"provider":"anthropic","ok":true,"models":["claude-3-5-haiku-20241022"],"syncedAt":"2026-03-14T13:00:00Z"}`},
		{pick(0, 0), "", `{"provider":"openai","ok":false,"error":"provider openai answered 500","models":[],"syncedAt":"2026-03-14T13:00:00Z"}`},
		{pick(0, 0), "", `{"provider":"openai","ok":true,"models":["gpt-4o"],"syncedAt":"2020-01-01T00:00:00Z"}`},
		{pick(0, 0), "", `{"provider":"nobody","ok":true,"models":["x"],"syncedAt":"2026-03-14T13:00:00Z"}`},
		{pick(0, 0), "", `{"provider":"openai","models":"gpt-4o"}`},
		{pick(1, 0), "", `{"id":"openai:gpt-4o","ok":false,"latencyMs":20000,"testedAt":"2026-03-14T13:00:00Z","error":"timed out"}`},
		{pick(1, 0), "", `{"id":"anthropic:claude-sonnet-4-0","ok":true,"latencyMs":5,"testedAt":"2020-01-01T00:00:00Z"}`},
		{pick(1, 0), "", `{"id":"no-colon","ok":true}`},
		{pick(1, 0), "", `{"id":"openai:gpt-4o","testedAt":"yesterday"}`},
		{pick(0, 1), "t", `{"provider":"openai","ok":true,"models":[],"syncedAt":"2026-03-14T13:00:00Z"}`},
		{pick(2, 1), "t", `{"tenant":"t","dailyUsd":1.5,"monthlyUsd":null}`},
		{pick(2, 1), "u", `{"tenant":"u","dailyUsd":null,"monthlyUsd":20}`},
		{pick(2, 1), "t", `{"tenant":"t","dailyUsd":"1.5"}`},
		{pick(3, 2), "t", `{"tenant":"t","model":"openai:gpt-4o","usage":{"input_tokens":10,"output_tokens":5},"costUsd":0.25,"outcome":"ok","at":"2026-03-14T11:00:00Z"}`},
		{pick(3, 2), "t", `{"tenant":"t","model":"x:y","costUsd":null,"outcome":"ok"}`},
		{pick(3, 2), "t", `{"tenant":"t","costUsd":0.25}`},
		{pick(3, 2), "t", `{"tenant":"t","costUsd":"0.25"}`},
		{pick(4, 2), "t", `{}`},
		// Found by this target: an empty model name, a probe of a model
		// the catalog does not know, a negative cost.
		{pick(0, 0), "", `{"provider":"anthropic","ok":true,"models":[""],"syncedAt":"2026-03-14T13:00:00Z"}`},
		{pick(1, 0), "", `{"id":"openai:0","ok":true,"testedAt":"2026-03-14T13:00:00Z"}`},
		{pick(3, 2), "t", `{"tenant":"t","model":"openai:gpt-4o","costUsd":-0.25,"outcome":"ok","at":"2026-03-14T11:00:00Z"}`},
		{pick(0, 0), "", `null`},
		{pick(3, 2), "t", ``},
		{pick(5, 1), "t", `{"tenant":"t","model":"m","worstUsd":0.5,"expiresAt":"2026-03-14T12:02:00Z","usageEvent":"0195f5a0-0000-7000-8000-000000000002"}`},
		{pick(5, 1), "t", `{"tenant":"t","worstUsd":-1,"expiresAt":"2026-03-14T12:02:00Z"}`},
		{pick(5, 1), "t", `{"worstUsd":"0.5"}`},
		{pick(5, 2), "t", `{"tenant":"t","worstUsd":0.5,"expiresAt":"2026-03-14T12:02:00Z"}`},
		{pick(6, 1), "t", `{"hold":"0195f5a0-0000-7000-8000-000000000001","expiresAt":"2026-03-14T13:00:00Z"}`},
		{pick(7, 1), "t", `{"hold":"0195f5a0-0000-7000-8000-000000000001","usageEvent":"00000000-0000-0000-0000-000000000000"}`},
		{pick(7, 1), "t", `{"hold":"not a uuid"}`},
		{pick(8, 2), "t", `{"records":[{"id":"0195f5a0-0000-7000-8000-000000000003","tenant":"t","model":"openai:gpt-4o","costUsd":0.25,"outcome":"ok","at":"2026-03-14T11:00:00Z"},{"id":"0195f5a0-0000-7000-8000-000000000004","tenant":"t","costUsd":null}]}`},
		{pick(8, 2), "t", `{"records":[{"id":"0195f5a0-0000-7000-8000-000000000003","tenant":"t","costUsd":0.25},{"id":"x","tenant":"t","costUsd":1}]}`},
		{pick(8, 2), "t", `{"records":[{"id":"0195f5a0-0000-7000-8000-000000000003","costUsd":0.25},"x"]}`},
		{pick(8, 2), "t", `{"records":[]}`},
		{pick(8, 2), "t", `{"records":[{"id":"0195f5a0-0000-7000-8000-000000000003","tenant":"t","costUsd":0.25}`},
	} {
		f.Add(s.pick, s.tenant, []byte(s.data))
	}

	f.Fuzz(func(t *testing.T, which uint8, tenant string, data []byte) {
		typ := types[int(which)%len(types)]
		stream := streams[int(which)/len(types)%len(streams)]
		if stream != CatalogStream {
			stream += tenant
		}
		ev := eventstore.RecordedEvent{StreamID: stream, EventData: eventstore.EventData{
			ID: uuid.MustParse("0195f5a0-0000-7000-8000-000000000001"), Type: typ, Data: data,
			Metadata: eventstore.Metadata{Tenant: tenant, RecordedAt: at},
		}}

		// A catalog with both built-in providers configured, one sync and
		// one probe behind it.
		c, err := NewCatalog(Config{Getenv: fuzzEnv})
		if err != nil {
			t.Fatal(err)
		}
		c.applySync(ModelsSynced{Provider: "openai", OK: true, Models: []string{"gpt-4o-mini", "gpt-4o"}, SyncedAt: at})
		c.applyHealth(HealthChecked{ID: "anthropic:claude-sonnet-4-0", OK: true, LatencyMs: 900, TestedAt: at})
		before := stateOfCatalog(c)
		err = c.Apply(ev)
		after := stateOfCatalog(c)
		catalogTakes := stream == CatalogStream && (typ == EventModelsSynced || typ == EventModelHealthChecked)
		switch {
		case !catalogTakes && err != nil:
			t.Fatalf("catalog: %s event on stream %q: %v, want it ignored", typ, stream, err)
		case (!catalogTakes || err != nil) && !reflect.DeepEqual(before, after):
			t.Fatalf("catalog: %s event %q (%v) changed the catalog\nbefore %+v\nafter  %+v", typ, data, err, before, after)
		case err == nil:
			if err := c.Apply(ev); err != nil {
				t.Fatalf("catalog: the same event failed the second time: %v", err)
			}
			if again := stateOfCatalog(c); !reflect.DeepEqual(after, again) {
				t.Fatalf("catalog: %s event %q applied twice\nonce  %+v\ntwice %+v", typ, data, after, again)
			}
		}
		checkCatalog(t, c)

		// Budgets with limits for tenant t and some of its spending.
		b := NewBudgets(func() time.Time { return at })
		if err := b.Apply(limitsEvent(t, "t", usd(10), usd(100))); err != nil {
			t.Fatal(err)
		}
		if err := b.Apply(usageEvent(t, uuid.New(), UsageRecord{Tenant: "t", CostUSD: usd(2), At: at}, at)); err != nil {
			t.Fatal(err)
		}
		bBefore := stateOfBudgets(b)
		err = b.Apply(ev)
		bAfter := stateOfBudgets(b)
		budgetsTake := typ == EventBudgetSet || typ == EventUsageRecorded || typ == EventUsageBatchRecorded ||
			(strings.HasPrefix(stream, "budget-") && (typ == EventBudgetHeld || typ == EventBudgetHoldRenewed || typ == EventBudgetHoldReleased))
		costless := typ == EventUsageRecorded || typ == EventUsageBatchRecorded
		if entries, err := UsageRecords(ev); costless && err == nil {
			for _, e := range entries {
				var rec UsageRecord
				if err := json.Unmarshal([]byte(e.Raw), &rec); err != nil || rec.CostUSD != nil {
					costless = false
				}
			}
		} else {
			costless = false
		}
		switch {
		case !budgetsTake && err != nil:
			t.Fatalf("budgets: %s event: %v, want it ignored", typ, err)
		case (!budgetsTake || err != nil || costless) && !reflect.DeepEqual(bBefore, bAfter):
			t.Fatalf("budgets: %s event %q (%v) changed the budgets\nbefore %+v\nafter  %+v", typ, data, err, bBefore, bAfter)
		}
		b.Status(tenant)
	})
}

// A model list is an object with a data key: an array, or null, which
// Ollama sends when no model is pulled (every model is then unlisted); an
// object without the key is not a list.
func TestModelListShapes(t *testing.T) {
	for _, c := range []struct {
		body string
		want []string
		ok   bool
	}{
		{`{"object":"list","data":[{"id":"a"},{"id":""},{"id":"b"}]}`, []string{"a", "b"}, true},
		{`{"object":"list","data":null}`, []string{}, true},
		{`{"object":"list","data":[]}`, []string{}, true},
		{`{"object":"list"}`, nil, false},
		{`{"data":{"id":"a"}}`, nil, false},
	} {
		var l struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(c.body), &l); err != nil {
			t.Fatal(err)
		}
		got, err := ModelIDs(l.Data)
		if (err == nil) != c.ok || (c.ok && !slices.Equal(got, c.want)) {
			t.Fatalf("%s: %q, %v; want %q (ok %v)", c.body, got, err, c.want, c.ok)
		}
	}
}
