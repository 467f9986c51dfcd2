package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/batonhq/baton/domain"
)

// Price is USD per million tokens.
type Price struct {
	InputPerMTok      float64 `json:"inputPerMTok"`
	OutputPerMTok     float64 `json:"outputPerMTok"`
	CacheReadPerMTok  float64 `json:"cacheReadPerMTok"`
	CacheWritePerMTok float64 `json:"cacheWritePerMTok"`
	// CacheWrite1hPerMTok is the rate of cache writes with a one-hour
	// lifetime (Anthropic's cache_control ttl "1h", billed at 2x the input
	// rate; CacheWritePerMTok is then the default 5-minute lifetime's,
	// 1.25x). 0 or absent: 1-hour writes are billed at CacheWritePerMTok,
	// as a price that knows one cache-write rate only has them.
	CacheWrite1hPerMTok float64 `json:"cacheWrite1hPerMTok,omitempty"`
	// LongPrompt, when set, prices a call whose prompt is longer than its
	// threshold: OpenAI (over 272K input tokens) and Anthropic (Claude
	// Haiku 5.5, over 100K) bill every token of such a call, output
	// included, at higher rates.
	LongPrompt *LongPromptPrice `json:"longPrompt,omitempty"`
	// FastRate is the multiple of the standard rates (long-prompt ones
	// included) that OpenAI's fast tier costs (service_tier fast, or
	// priority, its name until July 2026), and Anthropic's fast mode
	// (speed fast, held and billed as the tier fast); 0 or absent: the
	// tier has no price here (TierRate).
	FastRate float64 `json:"fastRate,omitempty"`
	// USRate is the multiple of the rates a call whose inference runs in
	// the US only costs (Anthropic's inference_geo us: 1.1); 0 or absent:
	// no price here (GeoRate). Global inference, the default, costs the
	// standard rates.
	USRate float64 `json:"usRate,omitempty"`
	// WebSearchPerK is USD per 1,000 searches of the provider's web search
	// tool (Anthropic's and OpenAI's: Usage.WebSearches), billed on top of
	// the tokens; 0 or absent: not billed.
	WebSearchPerK float64 `json:"webSearchPerK,omitempty"`
	// WebSearchPreviewPerK is USD per 1,000 searches of OpenAI's legacy
	// web_search_preview tool, where it costs another rate than
	// WebSearchPerK ($25 on the models that do not reason); 0 or absent:
	// WebSearchPerK.
	WebSearchPreviewPerK float64 `json:"webSearchPreviewPerK,omitempty"`
	// FileSearchPerK is USD per 1,000 calls of OpenAI's file search tool
	// (Usage.FileSearches), billed on top of the tokens; 0 or absent: not
	// billed.
	FileSearchPerK float64 `json:"fileSearchPerK,omitempty"`
	Source         string  `json:"source"`
}

// TierName is tier as a name that does not hold on to the bytes it may
// view (an answer's, a stream chunk's, read in place): OpenAI's names are
// constants, any other is copied. Each passed-through chunk names its tier,
// so the known ones cost no allocation.
func TierName(tier string) string { return known(tier, tierNames) }

var (
	tierNames = []string{"", "auto", "default", "flex", "fast", "priority"}
	geoNames  = []string{"", "global", "us"}
)

// known is s as one of names, a constant, when it is one; else a copy.
func known(s string, names []string) string {
	for _, n := range names {
		if s == n {
			return n
		}
	}
	return strings.Clone(s)
}

// TierRate is the multiple of the standard rates a call at an OpenAI
// capacity tier costs, and whether the price has one. The standard tier
// (none, auto, default) and flex cost 1: flex is billed below the
// standard rates, so a budget holds and counts more than is spent, never
// less. fast and priority cost FastRate, when set. Any other tier
// (ultrafast, scale, one not yet known) has no rate.
func (p *Price) TierRate(tier string) (float64, bool) {
	switch tier {
	case "", "auto", "default", "flex":
		return 1, true
	case "fast", "priority":
		return p.FastRate, p.FastRate > 0
	}
	return 0, false
}

// GeoRate is the multiple of the rates a call run in geography geo costs,
// and whether the price has one: any geography ("" or global) costs 1.
func (p *Price) GeoRate(geo string) (float64, bool) {
	switch geo {
	case "", "global":
		return 1, true
	case "us":
		return p.USRate, p.USRate > 0
	}
	return 0, false
}

// GeoName is geo as a name that does not hold on to the bytes it may view
// (see TierName).
func GeoName(geo string) string { return known(geo, geoNames) }

// LongPromptPrice holds the rates of a call whose prompt (input, cache
// reads and cache writes together) is over PromptTokens.
type LongPromptPrice struct {
	PromptTokens      int     `json:"promptTokens"`
	InputPerMTok      float64 `json:"inputPerMTok"`
	OutputPerMTok     float64 `json:"outputPerMTok"`
	CacheReadPerMTok  float64 `json:"cacheReadPerMTok"`
	CacheWritePerMTok float64 `json:"cacheWritePerMTok"`
	// CacheWrite1hPerMTok is as Price's: 0 bills 1-hour writes at
	// CacheWritePerMTok.
	CacheWrite1hPerMTok float64 `json:"cacheWrite1hPerMTok,omitempty"`
}

// At returns the flat rates of a call whose prompt has promptTokens tokens:
// the long-prompt rates past the threshold, else the base ones. Given a
// bound on the prompt, it gives the rates of the worst case.
func (p *Price) At(promptTokens int) Price {
	if l := p.LongPrompt; l != nil && promptTokens > l.PromptTokens {
		return Price{InputPerMTok: l.InputPerMTok, OutputPerMTok: l.OutputPerMTok,
			CacheReadPerMTok: l.CacheReadPerMTok, CacheWritePerMTok: l.CacheWritePerMTok, CacheWrite1hPerMTok: l.CacheWrite1hPerMTok,
			Source: p.Source}
	}
	flat := *p
	flat.LongPrompt = nil
	return flat
}

// CacheWrite1hRate is the rate of one-hour cache writes: CacheWrite1hPerMTok,
// or CacheWritePerMTok for a price without one.
func (p *Price) CacheWrite1hRate() float64 {
	if p.CacheWrite1hPerMTok > 0 {
		return p.CacheWrite1hPerMTok
	}
	return p.CacheWritePerMTok
}

// Cost prices usage. Cache reads and writes are billed at their own rates,
// as both providers bill them (the one-hour part of the writes,
// CacheWrite1hTokens, at CacheWrite1hRate, the rest at CacheWritePerMTok);
// a prompt past the long-prompt threshold
// moves the whole call to the long-prompt rates. Reasoning and thinking
// tokens are output tokens: both providers count them in the output and
// bill them at the output rate.
//
// Web searches (Usage.WebSearches) are billed per search at WebSearchPerK,
// whatever the prompt's length.
//
// The sum is rounded to 1e-12 USD, so that float arithmetic's last-digit
// noise (1 token at $0.1 a million and 3 at $0.2 making
// 7.000000000000001e-07) does not reach the answers.
func (p *Price) Cost(u Usage) float64 { return p.costAt(u, 1, false) }

// costAt is Cost with the tokens at tier times their rates (TierRate): a
// tier's premium is on the tokens, not on a per-search fee. preview: the
// searches were the legacy preview tool's (searchCost).
func (p *Price) costAt(u Usage, tier float64, preview bool) float64 {
	r := p.At(u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens)
	w1h := u.OneHourWrites()
	tokens := RoundUSD((float64(u.InputTokens)*r.InputPerMTok + float64(u.OutputTokens)*r.OutputPerMTok +
		float64(u.CacheReadTokens)*r.CacheReadPerMTok + float64(u.CacheWriteTokens-w1h)*r.CacheWritePerMTok +
		float64(w1h)*r.CacheWrite1hRate()) / 1e6)
	if tier != 1 {
		tokens = RoundUSD(tokens * tier)
	}
	return RoundUSD(tokens + p.searchCost(u.WebSearches, preview) + p.fileSearchCost(u.FileSearches))
}

// fileSearchCost is what n file search calls cost at FileSearchPerK.
func (p *Price) fileSearchCost(n int) float64 { return float64(max(n, 0)) * p.FileSearchPerK / 1e3 }

// searchCost is what n web searches cost at WebSearchPerK, or, of the
// legacy preview tool, at WebSearchPreviewPerK where the price has one.
func (p *Price) searchCost(n int, preview bool) float64 {
	rate := p.WebSearchPerK
	if preview && p.WebSearchPreviewPerK > 0 {
		rate = p.WebSearchPreviewPerK
	}
	return float64(max(n, 0)) * rate / 1e3
}

// usdUnit is the amount RoundUSD rounds to; budgets compare within it.
const usdUnit = 1e-12

// RoundUSD rounds an amount to 1e-12 USD: costs, and sums of costs, are
// shown without float arithmetic's last-digit noise. At $1000 and above the
// amount is returned as it is (the scaled value would no longer be exact).
func RoundUSD(c float64) float64 {
	if c > -1e3 && c < 1e3 {
		return math.Round(c*1e12) / 1e12
	}
	return c
}

// ModelSpec declares a model: in the built-in table or a providers file.
type ModelSpec struct {
	Name          string `json:"name"`
	ContextTokens int    `json:"contextTokens"`
	// MaxOutputTokens is the most a model writes in one answer, as its
	// provider documents it: what a translated request that sets no cap
	// asks for (docs/api.md, Translation), and its worst case's output.
	MaxOutputTokens int      `json:"maxOutputTokens,omitempty"`
	SupportsJSON    bool     `json:"supportsJson"`
	SupportsTools   bool     `json:"supportsTools"`
	Modes           []string `json:"modes"`
	Pricing         *Price   `json:"pricing,omitempty"`
	// Fallbacks are model ids tried, in order, when this model's provider
	// fails before the first byte reaches the client.
	Fallbacks []string `json:"fallbacks,omitempty"`
}

// ProviderSpec declares a provider in the providers file.
type ProviderSpec struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"` // openai, anthropic, openai-compatible
	BaseURL string `json:"baseUrl"`
	KeyEnv  string `json:"keyEnv,omitempty"`
	// DefaultServiceTier is the capacity tier the account serves a request
	// that names none (or auto) at: an OpenAI project's default. fast (or
	// priority) makes such calls held, and billed when the answer does not
	// say, at the fast rate (docs/budgets.md). Kinds with tiers only.
	DefaultServiceTier string `json:"defaultServiceTier,omitempty"`
	// DefaultInferenceGeo is the geography the account runs a request
	// that names none in: an Anthropic workspace's default. us makes such
	// calls to a model that takes it held, and billed when the answer does
	// not say, at its usRate (docs/budgets.md). Kinds with geographies
	// only.
	DefaultInferenceGeo string      `json:"defaultInferenceGeo,omitempty"`
	Models              []ModelSpec `json:"models"`
}

// Health is the last probe of a model.
type Health struct {
	OK        bool       `json:"ok"`
	TestedAt  *time.Time `json:"testedAt"`
	LatencyMs *int64     `json:"latencyMs"`
}

// Model is a catalog entry; its JSON is the specification's model object.
type Model struct {
	ID            string   `json:"id"`
	Object        string   `json:"object"`
	Created       int64    `json:"created"`
	OwnedBy       string   `json:"owned_by"`
	Provider      string   `json:"provider"`
	Kind          string   `json:"-"` // the provider's adapter: openai, openai-compatible, anthropic, local
	Model         string   `json:"model"`
	Modes         []string `json:"modes"`
	ContextTokens int      `json:"contextTokens"`
	// MaxOutputTokens: ModelSpec's; 0 when not declared.
	MaxOutputTokens int      `json:"maxOutputTokens,omitempty"`
	SupportsJSON    bool     `json:"supportsJson"`
	SupportsTools   bool     `json:"supportsTools"`
	Configured      bool     `json:"configured"`
	Available       bool     `json:"available"`
	HasPricing      bool     `json:"hasPricing"`
	Pricing         *Price   `json:"pricing,omitempty"`
	Health          Health   `json:"health"`
	Development     bool     `json:"development,omitempty"`
	Description     string   `json:"description,omitempty"`
	Fallbacks       []string `json:"fallbacks,omitempty"`
	// Listed is whether the provider's own model list (the last sync)
	// named this model; nil before any sync.
	Listed *bool `json:"listed,omitempty"`
	// Discovered marks a model known only from a sync: capabilities
	// unknown, unpriced.
	Discovered bool `json:"discovered,omitempty"`
}

// LocalModel is the one model the local development provider serves.
const LocalModel = "echo"

// Catalog maps `<provider>:<model>` ids to providers and model entries.
type Catalog struct {
	mu         sync.RWMutex
	providers  map[string]Provider
	models     map[string]*Model
	modeChains map[string][]string // mode -> model ids, from the providers file
	syncs      map[string]ModelsSynced
	lists      map[string]ModelsSynced  // each provider's newest successful sync: what it lists
	probes     map[string]HealthChecked // each probed id's newest probe
	probedOK   map[string]time.Time     // ids a probe found served: when it last did
}

// Config is where providers come from.
type Config struct {
	Getenv        func(string) string
	ProvidersFile string // optional JSON file: {"providers":[ProviderSpec...], "modes":{...}, "pricing":{...}}
	// ProvidersRequired: the file was named by the operator, so a missing
	// file is an error (the default path is skipped when absent).
	ProvidersRequired bool
	Client            *http.Client
}

// NewCatalog builds the catalog: the registered kinds' built-in providers
// (local always, OpenAI and Anthropic from OPENAI_* and ANTHROPIC_*
// variables), and whatever the providers file adds or overrides.
func NewCatalog(cfg Config) (*Catalog, error) {
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	c := &Catalog{providers: map[string]Provider{}, models: map[string]*Model{}, modeChains: map[string][]string{}, syncs: map[string]ModelsSynced{}, lists: map[string]ModelsSynced{},
		probes: map[string]HealthChecked{}, probedOK: map[string]time.Time{}}
	if _, ok := lookupKind("local"); !ok {
		return nil, errors.New(`gateway: provider kind "local" is not registered (import github.com/batonhq/baton/gateway/kinds)`)
	}
	for _, name := range Kinds() {
		k, _ := lookupKind(name)
		if !k.Builtin {
			continue
		}
		e := Endpoint{Name: name, Kind: name, BaseURL: k.DefaultURL, Client: cfg.Client}
		if k.BaseURLEnv != "" {
			e.BaseURL = orDefault(cfg.Getenv(k.BaseURLEnv), k.DefaultURL)
		}
		if k.KeyEnv != "" {
			e.Key = cfg.Getenv(k.KeyEnv)
		}
		if k.TierEnv != "" {
			e.DefaultServiceTier = cfg.Getenv(k.TierEnv)
			if err := checkDefaultTier(e.DefaultServiceTier, k); err != nil {
				return nil, fmt.Errorf("gateway: built-in provider %s: %s: %w", name, k.TierEnv, err)
			}
		}
		if k.GeoEnv != "" {
			e.DefaultInferenceGeo = cfg.Getenv(k.GeoEnv)
			if err := checkDefaultGeo(e.DefaultInferenceGeo, k); err != nil {
				return nil, fmt.Errorf("gateway: built-in provider %s: %s: %w", name, k.GeoEnv, err)
			}
		}
		p, err := k.New(e)
		if err != nil {
			return nil, fmt.Errorf("gateway: built-in provider %s: %w", name, err)
		}
		c.add(p, k.Models, k.Development)
	}

	if cfg.ProvidersFile != "" {
		b, err := os.ReadFile(cfg.ProvidersFile)
		if errors.Is(err, fs.ErrNotExist) && !cfg.ProvidersRequired {
			return c, nil
		}
		if err != nil {
			return nil, fmt.Errorf("gateway: providers file: %w", err)
		}
		var f struct {
			Providers []ProviderSpec `json:"providers"`
			// Modes sets the fallback chain of a routing mode: model
			// ids in order of preference.
			Modes map[string][]string `json:"modes"`
			// Pricing overrides the price of models of the catalog,
			// built-in or declared above, by id; null marks one
			// unpriced.
			Pricing map[string]*Price `json:"pricing"`
		}
		if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
			// null, a list, a string: decoding would leave an empty
			// catalog and say nothing.
			return nil, fmt.Errorf("gateway: providers file %s: want a JSON object {\"providers\": [...]}", cfg.ProvidersFile)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields() // a typo in a config file should not pass silently
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("gateway: providers file %s: %w", cfg.ProvidersFile, err)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("gateway: providers file %s: something follows the JSON object", cfg.ProvidersFile)
		}
		for _, p := range f.Providers {
			if err := c.addSpec(p, cfg); err != nil {
				return nil, fmt.Errorf("gateway: providers file %s: %w", cfg.ProvidersFile, err)
			}
		}
		// After the providers: a provider declared in the file replaces
		// its built-in models, and the override is of the catalog's
		// final model.
		if err := c.overridePrices(f.Pricing); err != nil {
			return nil, fmt.Errorf("gateway: providers file %s: %w", cfg.ProvidersFile, err)
		}
		for mode, ids := range f.Modes {
			if !IsMode(mode) {
				return nil, fmt.Errorf("gateway: providers file %s: mode %q is not one of %s", cfg.ProvidersFile, mode, strings.Join(Modes, ", "))
			}
			c.modeChains[mode] = ids
		}
	}
	// Chains name declared models: a typo would otherwise route to a model
	// nobody declared, unpriced, or be skipped without a word.
	for _, m := range c.models {
		for _, id := range m.Fallbacks {
			if c.models[id] == nil || id == m.ID {
				return nil, fmt.Errorf("gateway: model %s: fallback %q is not a declared model (GET /v1/models lists them)", m.ID, id)
			}
		}
	}
	for mode, ids := range c.modeChains {
		for _, id := range ids {
			m := c.models[id]
			if m == nil {
				return nil, fmt.Errorf("gateway: modes.%s: %q is not a declared model (GET /v1/models lists them)", mode, id)
			}
			if !slices.Contains(m.Modes, mode) {
				return nil, fmt.Errorf("gateway: modes.%s: %q is not tagged %s; add %q to its modes", mode, id, mode, mode)
			}
		}
	}
	return c, nil
}

func (c *Catalog) addSpec(p ProviderSpec, cfg Config) error {
	if p.Name == "" || strings.ContainsAny(p.Name, ": /") || p.Name == "local" {
		return fmt.Errorf("provider name %q: use letters, digits, '-' or '_' (and not local)", p.Name)
	}
	key := ""
	if p.KeyEnv != "" {
		key = cfg.Getenv(p.KeyEnv)
	}
	k, ok := lookupKind(p.Kind)
	if !ok || k.Development {
		return fmt.Errorf("provider %s: %w", p.Name, unknownKind(p.Kind))
	}
	if err := checkDefaultTier(p.DefaultServiceTier, k); err != nil {
		return fmt.Errorf("provider %s: defaultServiceTier: %w", p.Name, err)
	}
	if err := checkDefaultGeo(p.DefaultInferenceGeo, k); err != nil {
		return fmt.Errorf("provider %s: defaultInferenceGeo: %w", p.Name, err)
	}
	prov, err := k.New(Endpoint{Name: p.Name, Kind: p.Kind, BaseURL: p.BaseURL, Key: key, KeyEnv: p.KeyEnv,
		DefaultServiceTier: p.DefaultServiceTier, DefaultInferenceGeo: p.DefaultInferenceGeo, Client: cfg.Client})
	if err != nil {
		return fmt.Errorf("provider %s: %w", p.Name, err)
	}
	names := map[string]bool{}
	for _, m := range p.Models {
		if m.Name == "" {
			return fmt.Errorf("provider %s: a model has no name", p.Name)
		}
		if names[m.Name] {
			return fmt.Errorf("provider %s: model %q is declared twice", p.Name, m.Name)
		}
		names[m.Name] = true
		if m.ContextTokens < 0 || m.MaxOutputTokens < 0 || m.MaxOutputTokens > math.MaxInt32 {
			return fmt.Errorf("provider %s: model %s: contextTokens and maxOutputTokens are token counts: 0 (not declared) or more, at most %d", p.Name, m.Name, math.MaxInt32)
		}
		if m.ContextTokens > 0 && m.MaxOutputTokens > m.ContextTokens {
			return fmt.Errorf("provider %s: model %s: maxOutputTokens %d is more than its contextTokens %d", p.Name, m.Name, m.MaxOutputTokens, m.ContextTokens)
		}
		if m.Pricing != nil {
			if err := checkPrice(m.Pricing); err != nil {
				return fmt.Errorf("provider %s: model %s: %w", p.Name, m.Name, err)
			}
		}
	}
	c.mu.Lock()
	for id, m := range c.models {
		if m.Provider == p.Name {
			delete(c.models, id)
		}
	}
	c.mu.Unlock()
	c.add(prov, p.Models, false)
	return nil
}

// checkPrice refuses a price no bill could come from: a negative rate, a
// long-prompt threshold that is not a token count, a fast rate outside 1
// to MaxFastRate (0 aside), or no source.
func checkPrice(p *Price) error {
	if err := checkRates("", p.InputPerMTok, p.OutputPerMTok, p.CacheReadPerMTok, p.CacheWritePerMTok, p.CacheWrite1hPerMTok); err != nil {
		return err
	}
	if l := p.LongPrompt; l != nil {
		if l.PromptTokens <= 0 {
			return fmt.Errorf("longPrompt.promptTokens must be above 0 (%d): its rates apply to prompts longer than it", l.PromptTokens)
		}
		if err := checkRates("longPrompt.", l.InputPerMTok, l.OutputPerMTok, l.CacheReadPerMTok, l.CacheWritePerMTok, l.CacheWrite1hPerMTok); err != nil {
			return err
		}
	}
	// Fees per 1,000 uses of a tool, bounded as a token rate is, for the
	// same reason.
	for _, f := range []struct {
		name, uses string
		v          float64
	}{{"webSearchPerK", "searches", p.WebSearchPerK}, {"webSearchPreviewPerK", "searches", p.WebSearchPreviewPerK}, {"fileSearchPerK", "calls", p.FileSearchPerK}} {
		if f.v < 0 || f.v > MaxRatePerMTok {
			return fmt.Errorf("%s must be from 0 to %g USD per 1,000 %s (%v)", f.name, float64(MaxRatePerMTok), f.uses, f.v)
		}
	}
	// Multiples of the standard rates: below 1 a fast tier or a geography
	// would be billed less than the standard rates, which none costs.
	for _, m := range []struct {
		name string
		v    float64
	}{{"fastRate", p.FastRate}, {"usRate", p.USRate}} {
		if m.v != 0 && (m.v < 1 || m.v > MaxFastRate) {
			return fmt.Errorf("%s must be 0 (no rate) or from 1 to %d times the standard rates (%v)", m.name, MaxFastRate, m.v)
		}
	}
	if strings.TrimSpace(p.Source) == "" {
		// A price without its source cannot be checked or dated;
		// "self-hosted" is a source for a price of 0.
		return errors.New("pricing needs a source (where and when the price was read)")
	}
	return nil
}

// checkDefaultTier refuses a default service tier Baton does not know, or
// one for a kind without tiers.
func checkDefaultTier(tier string, k Kind) error {
	switch tier {
	case "":
		return nil
	case "default", "fast", "priority":
		if !k.ServiceTiers {
			return errors.New("this kind of provider has no service tiers")
		}
		return nil
	}
	return fmt.Errorf("%q: want default, fast or priority", tier)
}

// checkDefaultGeo checks a declared default geography.
func checkDefaultGeo(geo string, k Kind) error {
	switch geo {
	case "":
		return nil
	case "global", "us":
		if !k.InferenceGeos {
			return errors.New("this kind of provider has no inference geographies")
		}
		return nil
	}
	return fmt.Errorf("%q: want global or us", geo)
}

// MaxFastRate bounds Price.FastRate, so that a cost stays finite.
const MaxFastRate = 100

// MaxRatePerMTok bounds a rate: a million dollars per million tokens, far
// above any model's, so that no count of tokens makes a cost infinite.
const MaxRatePerMTok = 1_000_000

// checkRates refuses a rate below 0 or above MaxRatePerMTok.
func checkRates(prefix string, in, out, cacheRead, cacheWrite, cacheWrite1h float64) error {
	for _, r := range []struct {
		field string
		v     float64
	}{{"inputPerMTok", in}, {"outputPerMTok", out}, {"cacheReadPerMTok", cacheRead}, {"cacheWritePerMTok", cacheWrite}, {"cacheWrite1hPerMTok", cacheWrite1h}} {
		if r.v < 0 {
			return fmt.Errorf("a price is negative (%s%s %v)", prefix, r.field, r.v)
		}
		if r.v > MaxRatePerMTok {
			// A cost must stay a finite number of dollars: an event and an
			// answer carry it, and budgets add it up.
			return fmt.Errorf("a price is above %g USD per million tokens (%s%s %v)", float64(MaxRatePerMTok), prefix, r.field, r.v)
		}
	}
	return nil
}

// overridePrices applies the providers file's pricing object: each id's
// price replaces the model's, and null leaves the model unpriced. Only
// models the catalog has at start may be named, so that a typo stops the
// start instead of leaving the intended model at its old price. Prices are
// configuration, never events (docs/operations.md, providers file).
func (c *Catalog) overridePrices(prices map[string]*Price) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := slices.Sorted(maps.Keys(prices)) // the first mistake in id order, every time
	for _, id := range ids {
		if c.models[id] == nil {
			hint := "override a built-in model or one this file declares; a model known only from a sync must be declared to be priced"
			if prov, name, ok := strings.Cut(id, ":"); !ok || prov == "" || name == "" {
				hint = "ids are <provider>:<model>"
			}
			return fmt.Errorf("pricing: %q is not a model in the catalog (%s)", id, hint)
		}
		if p := prices[id]; p != nil {
			if err := checkPrice(p); err != nil {
				return fmt.Errorf("pricing: %s: %w", id, err)
			}
		}
	}
	for _, id := range ids {
		// A new *Price, never a change to the one the model points at:
		// the built-in table's prices are shared by every catalog.
		m := c.models[id]
		m.Pricing, m.HasPricing = prices[id], prices[id] != nil
	}
	return nil
}

func (c *Catalog) add(p Provider, specs []ModelSpec, dev bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.providers[p.Name()] = p
	for _, s := range specs {
		m := &Model{
			ID: p.Name() + ":" + s.Name, Object: "model", OwnedBy: p.Name(), Provider: p.Name(), Kind: p.Kind(), Model: s.Name,
			Modes: s.Modes, ContextTokens: s.ContextTokens, MaxOutputTokens: s.MaxOutputTokens, SupportsJSON: s.SupportsJSON, SupportsTools: s.SupportsTools,
			Configured: p.Configured(), Available: p.Configured(), HasPricing: s.Pricing != nil, Pricing: s.Pricing,
			Development: dev, Fallbacks: s.Fallbacks,
		}
		if m.Modes == nil {
			m.Modes = []string{}
		}
		if dev {
			m.Description = "offline development provider: echoes the prompt, no language model behind it"
			// It runs in-process, so it is up; testedAt stays null until
			// a probe, so that every replica's catalog starts the same.
			m.Health = Health{OK: true}
		}
		c.models[m.ID] = m
	}
}

// ResponseDeleter is a provider that keeps responses (OpenAI's Responses
// API) and deletes one by id.
type ResponseDeleter interface {
	DeleteResponse(ctx context.Context, id string) error
}

// Resolve finds the provider and entry of a `<provider>:<model>` id. A
// configured provider also serves models the catalog does not list (they
// are unpriced).
func (c *Catalog) Resolve(id string) (Provider, *Model, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	provName, name, ok := strings.Cut(id, ":")
	if !ok && id != "" {
		// A bare name (what a client sends by default: Codex's gpt-6-luna,
		// the Agents SDK's default) is the one configured model of that
		// name, when there is exactly one.
		var found []*Model
		for _, m := range c.models {
			if m.Model == id && m.Configured {
				found = append(found, m)
			}
		}
		switch len(found) {
		case 1:
			cp := *found[0]
			return c.providers[cp.Provider], &cp, nil
		case 0:
			return nil, nil, fmt.Errorf("%w: %q is not of the form <provider>:<model>, and no configured provider lists a model of that name", ErrUnknownModel, id)
		}
		ids := make([]string, len(found))
		for i, m := range found {
			ids[i] = m.ID
		}
		slices.Sort(ids)
		return nil, nil, fmt.Errorf("%w: %q names a model of several providers (%s); name one as <provider>:<model>%w", ErrUnknownModel, id, strings.Join(ids, ", "), errAmbiguous)
	}
	if !ok || provName == "" || name == "" {
		return nil, nil, fmt.Errorf("%w: %q is not of the form <provider>:<model>", ErrUnknownModel, id)
	}
	p := c.providers[provName]
	if p == nil {
		return nil, nil, fmt.Errorf("%w: no provider %q", ErrUnknownModel, provName)
	}
	if m := c.models[id]; m != nil {
		cp := *m // a copy: health and sync events update the catalog's own
		return p, &cp, nil
	}
	if provName == "local" {
		return nil, nil, fmt.Errorf("%w: the local provider serves only %s", ErrUnknownModel, "local:"+LocalModel)
	}
	if !modelName(name) {
		// No provider names a model so: a typo ("oa:ok ", "oa::ok") would
		// go upstream unpriced as a model the catalog does not list.
		return nil, nil, fmt.Errorf("%w: %q is not listed, and a model's name holds no white space, control characters or bidi overrides and does not start with a colon", ErrUnknownModel, id)
	}
	m := &Model{ID: id, Object: "model", Provider: provName, Kind: p.Kind(), Model: name, Modes: []string{}, Configured: p.Configured(), Available: p.Configured()}
	c.snapshotLocked(m) // a dated id is priced as its alias, synced or not
	return p, m, nil
}

// modelName reports whether name may be a model's: no provider names one
// with white space, a control character or a bidi override (which would
// show one name and be another), or starting with a colon.
func modelName(name string) bool {
	if name == "" || strings.HasPrefix(name, ":") {
		return false
	}
	_, notPlain := domain.NotPlain(name)
	return !notPlain && !strings.ContainsFunc(name, unicode.IsSpace)
}

// Get returns a model of the catalog by id (only listed models: unlike
// Resolve, not any name a configured provider might serve).
func (c *Catalog) Get(id string) (Model, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	m := c.models[id]
	if m == nil {
		return Model{}, false
	}
	return *m, true
}

// List returns every model, sorted by id.
func (c *Catalog) List() []Model {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Model, 0, len(c.models))
	for _, m := range c.models {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
