package gateway

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A providers file is checked whole: a mistake stops the start with a
// message naming it, instead of a catalog that quietly differs.
func TestProvidersFileMistakes(t *testing.T) {
	model := `{"name":"m1","contextTokens":8192,"modes":["cheap"],"pricing":{"inputPerMTok":1,"outputPerMTok":2,"source":"test"}}`
	for _, c := range []struct{ name, file, want string }{
		{"trailing data", `{"providers":[]} }}} garbage`, "follows the JSON object"},
		{"unknown field", `{"providers":[],"mode":{}}`, "unknown field"},
		{"model twice", `{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[` + model + `,` + model + `]}]}`, "declared twice"},
		{"fallback typo", `{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[{"name":"m1","fallbacks":["p:m2"]}]}]}`, `fallback "p:m2" is not a declared model`},
		{"mode chain typo", `{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[` + model + `]}],"modes":{"cheap":["p:typo"]}}`, `"p:typo" is not a declared model`},
		{"negative price", `{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[{"name":"m1","pricing":{"inputPerMTok":-1,"source":"x"}}]}]}`, "negative"},
		{"price without source", `{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[{"name":"m1","pricing":{}}]}]}`, "needs a source"},
		{"unknown default tier", `{"providers":[{"name":"p","kind":"openai","baseUrl":"http://x/v1","defaultServiceTier":"turbo","models":[]}]}`, `defaultServiceTier: "turbo": want default, fast or priority`},
		{"default tier of a kind without tiers", `{"providers":[{"name":"p","kind":"anthropic","baseUrl":"http://x","defaultServiceTier":"fast","models":[]}]}`, "provider p: defaultServiceTier: this kind of provider has no service tiers"},
		{"negative web search price", `{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[{"name":"m1","pricing":{"webSearchPerK":-1,"source":"x"}}]}]}`, "webSearchPerK must be from 0 to"},
		{"negative most output", `{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[{"name":"m1","maxOutputTokens":-1}]}]}`, "model m1: contextTokens and maxOutputTokens are token counts"},
		{"most output over the context", `{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[{"name":"m1","contextTokens":8192,"maxOutputTokens":9000}]}]}`, "maxOutputTokens 9000 is more than its contextTokens 8192"},
		{"mode chain untagged", `{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[` + model + `]}],"modes":{"premium":["p:m1"]}}`, "is not tagged premium"},
	} {
		path := filepath.Join(t.TempDir(), "providers.json")
		os.WriteFile(path, []byte(c.file), 0o644)
		_, err := NewCatalog(Config{Getenv: func(string) string { return "" }, ProvidersFile: path})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	// The default file may be absent; a file the operator named may not.
	missing := filepath.Join(t.TempDir(), "providers.json")
	if _, err := NewCatalog(Config{Getenv: func(string) string { return "" }, ProvidersFile: missing}); err != nil {
		t.Errorf("absent default file: %v", err)
	}
	if _, err := NewCatalog(Config{Getenv: func(string) string { return "" }, ProvidersFile: missing, ProvidersRequired: true}); err == nil {
		t.Error("a named providers file that does not exist was skipped")
	}
}

// Anthropic lists dated model ids; the built-in aliases stand for them and
// stay available after a sync.
func TestSyncKeepsAliasesOfListedModels(t *testing.T) {
	c, err := NewCatalog(Config{Getenv: anthropicKeyOnly})
	if err != nil {
		t.Fatal(err)
	}
	c.applySync(ModelsSynced{Provider: "anthropic", OK: true, Models: []string{"claude-haiku-4-5-20251001", "claude-sonnet-5-5"}})
	haiku, _ := c.Get("anthropic:claude-haiku-4-5")
	sonnet, _ := c.Get("anthropic:claude-sonnet-5-5")
	opus, _ := c.Get("anthropic:claude-opus-5-5")
	if !haiku.Available || !sonnet.Available || opus.Available {
		t.Fatalf("haiku alias available %v (its dated id is listed), sonnet %v (listed), opus %v (not listed)", haiku.Available, sonnet.Available, opus.Available)
	}
	for _, c := range []struct {
		name   string
		listed []string
		want   bool
	}{
		{"claude-haiku-4-5", []string{"claude-haiku-4-5-20251001"}, true},
		{"claude-sonnet-4-0", []string{"claude-sonnet-4-20250514"}, true},
		{"claude-3-5-haiku-latest", []string{"claude-3-5-haiku-20241022"}, true},
		{"claude-sonnet-4-0", []string{"claude-sonnet-4-5-20250929"}, false},
		{"claude-haiku-4", []string{"claude-haiku-4-5-20251001"}, false},
		{"claude-haiku-4-5", []string{"claude-haiku-4-5-2025"}, false},
	} {
		if got := aliasListed(c.name, c.listed); got != c.want {
			t.Errorf("aliasListed(%q, %q) = %v, want %v", c.name, c.listed, got, c.want)
		}
	}
}

func TestCostHasNoFloatNoise(t *testing.T) {
	p := &Price{InputPerMTok: 0.1, OutputPerMTok: 0.2}
	if c := p.Cost(Usage{InputTokens: 1, OutputTokens: 3}); c != 7e-07 {
		t.Fatalf("cost %v, want 7e-07", c)
	}
	// Sums of costs too (two generate attempts on gpt-4o-mini's prices).
	if sum := RoundUSD(3.03e-05 + 3.135e-05); sum != 6.165e-05 {
		t.Fatalf("sum %v, want 6.165e-05", sum)
	}
	big := &Price{InputPerMTok: 15, OutputPerMTok: 75}
	if c := big.Cost(Usage{InputTokens: 1_000_000, OutputTokens: 200_000}); c != 30 {
		t.Fatalf("cost %v, want 30", c)
	}
}

// catalogFromFile builds a catalog from a providers file holding file,
// with the given environment.
func catalogFromFile(t *testing.T, file string, env map[string]string) (*Catalog, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "providers.json")
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	return NewCatalog(Config{Getenv: func(k string) string { return env[k] }, ProvidersFile: path, ProvidersRequired: true})
}

// A providers entry of a kind no folder registered stops the start, naming
// the kind; the development kind cannot be declared.
func TestUnregisteredKind(t *testing.T) {
	for _, kind := range []string{"bedrock", "local", ""} {
		_, err := catalogFromFile(t, `{"providers":[{"name":"p","kind":"`+kind+`","baseUrl":"http://x","models":[]}]}`, nil)
		if err == nil || !strings.Contains(err.Error(), `kind "`+kind+`" is not one of anthropic, openai, openai-compatible`) {
			t.Errorf("kind %q: err = %v", kind, err)
		}
	}
}

// Syncs race (several replicas, or admins): each replica, and a restart,
// applies their events in its own order, and every order gives the same
// catalog: the models of the newest successful list, listed as it says
// (an older list applied after a newer one added nothing, so replicas
// diverged). A failed sync in between changes no model.
func TestSyncsAppliedInAnyOrderAgree(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 11, 28, 0, 0, s, 0, time.UTC) }
	evs := []ModelsSynced{
		{Provider: "anthropic", OK: true, Models: []string{"claude-sonnet-5-5", "x-1"}, SyncedAt: at(1)},
		{Provider: "anthropic", OK: true, Models: []string{"claude-sonnet-5-5", "x-2"}, SyncedAt: at(2)},
		{Provider: "anthropic", OK: false, Error: "down", SyncedAt: at(3)},
		{Provider: "anthropic", OK: true, Models: []string{"claude-sonnet-5-5", "x-1", "x-3"}, SyncedAt: at(4)},
	}
	state := func(order []int) string {
		c, err := NewCatalog(Config{Getenv: anthropicKeyOnly})
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range order {
			c.applySync(evs[i])
		}
		var b strings.Builder
		for _, m := range c.List() {
			if m.Provider == "anthropic" {
				fmt.Fprintf(&b, "%s available=%v listed=%v; ", m.ID, m.Available, m.Listed != nil && *m.Listed)
			}
		}
		return b.String()
	}
	want := state([]int{0, 1, 2, 3})
	if strings.Contains(want, "anthropic:x-2") || !strings.Contains(want, "anthropic:x-3 available=true listed=true") {
		t.Fatalf("in order: %s", want)
	}
	for _, order := range [][]int{{3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}} {
		if got := state(order); got != want {
			t.Errorf("order %v:\n%s\nwant\n%s", order, got, want)
		}
	}
	if got := distinctNames([]string{"a", "b", "a", "  ", "", "b", "c"}); strings.Join(got, ",") != "a,b,c" {
		t.Errorf("distinctNames: %q", got)
	}
}

// anthropicKeyOnly is an environment holding an Anthropic key alone.
func anthropicKeyOnly(k string) string {
	if k == "ANTHROPIC_API_KEY" {
		return "k"
	}
	return ""
}

// Probes of a model the catalog did not hold give the same catalog in any
// order: added once a probe found it served, its health the newest
// probe's (a failed probe applied first was dropped, and an older success
// then added the model healthy).
func TestProbesAppliedInAnyOrderAgree(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 11, 28, 0, 0, s, 0, time.UTC) }
	evs := []HealthChecked{
		{ID: "anthropic:claude-probed", OK: true, TestedAt: at(1)},
		{ID: "anthropic:claude-probed", OK: false, Error: "500", TestedAt: at(2)},
		{ID: "anthropic:claude-typo", OK: false, Error: "404", TestedAt: at(3)},
	}
	state := func(order []int) string {
		c, err := NewCatalog(Config{Getenv: anthropicKeyOnly})
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range order {
			c.applyHealth(evs[i])
		}
		var b strings.Builder
		for _, id := range []string{"anthropic:claude-probed", "anthropic:claude-typo"} {
			m, ok := c.Get(id)
			fmt.Fprintf(&b, "%s: %v %v; ", id, ok, ok && m.Health.OK)
		}
		return b.String()
	}
	want := "anthropic:claude-probed: true false; anthropic:claude-typo: false false; "
	for _, order := range [][]int{{0, 1, 2}, {1, 0, 2}, {2, 1, 0}} {
		if got := state(order); got != want {
			t.Errorf("order %v: %s, want %s", order, got, want)
		}
	}
}

// A dated Anthropic id a sync finds (claude-haiku-4-5-20251001) is the
// snapshot its alias points at: priced and described as the alias the
// catalog declares, so a tenant under a budget may call it. A dated id of
// no declared alias stays unpriced, and so does the snapshot of an alias
// the providers file left unpriced.
func TestSyncPricesDatedSnapshotsAsTheirAlias(t *testing.T) {
	c, err := NewCatalog(Config{Getenv: anthropicKeyOnly})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	c.applySync(ModelsSynced{Provider: "anthropic", OK: true, SyncedAt: at,
		Models: []string{"claude-haiku-4-5-20251001", "claude-brand-new-20260101", "claude-sonnet-5-5"}})
	alias, _ := c.Get("anthropic:claude-haiku-4-5")
	dated, ok := c.Get("anthropic:claude-haiku-4-5-20251001")
	if !ok || !dated.HasPricing || dated.Pricing == nil || *dated.Pricing != *alias.Pricing ||
		dated.ContextTokens != alias.ContextTokens || dated.MaxOutputTokens != alias.MaxOutputTokens || !dated.SupportsTools || len(dated.Modes) != 0 {
		t.Fatalf("dated snapshot: %+v\nalias: %+v", dated, alias)
	}
	if m, _ := c.Get("anthropic:claude-brand-new-20260101"); m.HasPricing {
		t.Fatalf("a dated id of no declared alias is priced: %+v", m)
	}
	// A probe that finds a dated id first gives it the same price.
	c.applyHealth(HealthChecked{ID: "anthropic:claude-opus-5-5-20261101", OK: true, TestedAt: at.Add(time.Second)})
	opus, _ := c.Get("anthropic:claude-opus-5-5")
	if m, _ := c.Get("anthropic:claude-opus-5-5-20261101"); !m.HasPricing || *m.Pricing != *opus.Pricing {
		t.Fatalf("probed dated snapshot: %+v", m)
	}
}

// A model known only from a sync leaves the catalog once the provider's
// newest list does not name it (it stayed in GET /v1/models for good,
// and its bare name went on resolving to it); a declared model stays,
// listed false. A probe that found the model served after that list
// brings it back; one before it does not. Every order of the events gives
// the same catalog.
func TestSyncDropsDiscoveredModelsNoLongerListed(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 11, 28, 0, 0, s, 0, time.UTC) }
	syncs := []ModelsSynced{
		{Provider: "anthropic", OK: true, Models: []string{"claude-sonnet-5-5", "claude-opus-5-5", "x-1", "x-2"}, SyncedAt: at(1)},
		{Provider: "anthropic", OK: true, Models: []string{"claude-sonnet-5-5"}, SyncedAt: at(3)},
	}
	probes := []HealthChecked{
		{ID: "anthropic:x-1", OK: true, TestedAt: at(2)}, // before the newest list: gone with it
		{ID: "anthropic:x-2", OK: true, TestedAt: at(4)}, // after: served still
	}
	state := func(order []int) string {
		c, err := NewCatalog(Config{Getenv: anthropicKeyOnly})
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range order {
			if i < len(syncs) {
				c.applySync(syncs[i])
			} else {
				c.applyHealth(probes[i-len(syncs)])
			}
		}
		var b strings.Builder
		for _, id := range []string{"anthropic:x-1", "anthropic:x-2", "anthropic:claude-opus-5-5"} {
			m, ok := c.Get(id)
			fmt.Fprintf(&b, "%s: %v available=%v listed=%v; ", id, ok, m.Available, m.Listed != nil && *m.Listed)
		}
		if _, _, err := c.Resolve("x-1"); err == nil {
			b.WriteString("bare x-1 resolves; ")
		}
		return b.String()
	}
	want := "anthropic:x-1: false available=false listed=false; anthropic:x-2: true available=true listed=false; anthropic:claude-opus-5-5: true available=false listed=false; "
	for _, order := range [][]int{{0, 1, 2, 3}, {0, 2, 1, 3}, {3, 2, 1, 0}, {1, 0, 3, 2}, {2, 3, 0, 1}} {
		if got := state(order); got != want {
			t.Errorf("order %v:\n%s\nwant\n%s", order, got, want)
		}
	}
}

// A provider's list naming a model with white space, a control character
// or a bidi override adds no model: no provider names one so, a call
// naming it is refused (Resolve), and in the catalog it would show one
// name and be another. An event recorded before carries them still, and
// adds none either.
func TestSyncSkipsNamesNoModelHas(t *testing.T) {
	bad := []string{"x\ny", " padded ", "evil\u202egnp", "nul\x00", ":colon", "tab\there"}
	if got := distinctNames(append([]string{"ok-1"}, bad...)); strings.Join(got, ",") != "ok-1" {
		t.Errorf("distinctNames: %q", got)
	}
	c, err := NewCatalog(Config{Getenv: anthropicKeyOnly})
	if err != nil {
		t.Fatal(err)
	}
	c.applySync(ModelsSynced{Provider: "anthropic", OK: true, Models: append([]string{"claude-sonnet-5-5", "a:b"}, bad...), SyncedAt: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)})
	for _, m := range c.List() {
		if m.Provider == "anthropic" && m.Discovered && m.Model != "a:b" {
			t.Errorf("added %q", m.ID)
		}
	}
	if _, ok := c.Get("anthropic:a:b"); !ok {
		t.Error("a name holding a colon (openrouter's llama-3:free) was not added")
	}
}

// A call naming a dated Anthropic id before any sync listed it (Claude
// Code names them) is priced as the alias the catalog declares, as it is
// once a sync has: its price was missing until an admin ran a sync, so a
// tenant under a budget was refused it on a fresh server.
func TestResolvePricesAnUnsyncedDatedSnapshot(t *testing.T) {
	c, err := NewCatalog(Config{Getenv: func(k string) string {
		if k == "ANTHROPIC_API_KEY" || k == "OPENAI_API_KEY" {
			return "k"
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	alias, _ := c.Get("anthropic:claude-haiku-4-5")
	_, m, err := c.Resolve("anthropic:claude-haiku-4-5-20251001")
	if err != nil || !m.HasPricing || *m.Pricing != *alias.Pricing || m.MaxOutputTokens != alias.MaxOutputTokens {
		t.Fatalf("dated snapshot: %+v %v", m, err)
	}
	if _, m, _ := c.Resolve("anthropic:claude-nothing-20251001"); m.HasPricing {
		t.Fatalf("a dated id of no alias priced: %+v", m)
	}
	if _, m, _ := c.Resolve("openai:gpt-4o-2024-05-13"); m.HasPricing {
		t.Fatalf("an OpenAI snapshot priced as its alias: %+v", m)
	}
	if _, ok := c.Get("anthropic:claude-haiku-4-5-20251001"); ok {
		t.Fatal("resolving a name added it to the catalog")
	}
}
