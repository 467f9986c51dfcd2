package gateway

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/batonhq/baton/domain"
)

// Routing modes: a request may name one instead of a `<provider>:<model>`
// id, and Baton picks the model.
const (
	ModeCheap    = "cheap"
	ModeBalanced = "balanced"
	ModePremium  = "premium"
	ModeAuto     = "auto"
)

// Modes lists the routing modes.
var Modes = []string{ModeCheap, ModeBalanced, ModePremium, ModeAuto}

// IsMode reports whether s names a routing mode.
func IsMode(s string) bool { return slices.Contains(Modes, s) }

// Ranking strategies of a route preview (and of the modes, see Routes).
const (
	StrategyCost    = "cost"
	StrategyLatency = "latency"
)

// Needs are what a request requires of a model.
type Needs struct {
	JSON          bool `json:"json,omitempty"`
	Tools         bool `json:"tools,omitempty"`
	ContextTokens int  `json:"contextTokens,omitempty"` // worst-case input plus the output cap
}

// NeedsOf derives a request's needs: JSON if the client requires it, tools
// if it offers any, and the worst-case context it could fill.
func NeedsOf(req Request, m *Model) Needs {
	in, out := WorstTokens(req, m)
	return Needs{JSON: req.NeedsJSON, Tools: len(req.Tools) > 0, ContextTokens: in + out}
}

// routeNeeds are a request's needs for choosing among a mode's models. The
// context starts as NeedsOf's byte bound; the input is counted
// (EstimateInputTokens) only when that bound could turn away a model the
// mode could take, as most prompts are far smaller than every context
// (docs/api.md, Routing).
func (c *Catalog) routeNeeds(mode string, req Request) (needs Needs, tooLong bool) {
	needs = NeedsOf(req, nil)
	c.mu.RLock()
	smallest := needs.ContextTokens
	largest := [2]int{} // of the real models, of the development ones
	for _, m := range c.models {
		if m.Configured && slices.Contains(m.Modes, mode) {
			dev := 0
			if m.Development {
				dev = 1
			}
			if m.ContextTokens <= 0 {
				largest[dev] = math.MaxInt // a model of unknown context may take any prompt
			} else {
				smallest, largest[dev] = min(smallest, m.ContextTokens), max(largest[dev], m.ContextTokens)
			}
		}
	}
	c.mu.RUnlock()
	// A mode takes the development provider only when no real one serves
	// it (Routes).
	most := cmp.Or(largest[0], largest[1])
	if needs.ContextTokens > smallest {
		routeEstimates.Add(1)
		_, out := WorstTokens(req, nil)
		// Counted only as far as the largest context: a prompt past it
		// fits no model, however far past.
		limit := math.MaxInt
		if most < math.MaxInt {
			limit = max(most-out, 0)
		}
		in, over := EstimateInputTokensUpTo(req, limit)
		needs.ContextTokens = in + out
		tooLong = over
	}
	return needs, tooLong
}

// routeEstimates counts the prompts routeNeeds tokenized (for its tests).
var routeEstimates atomic.Int64

// Route is one candidate model for a mode, ranked.
type Route struct {
	Rank        int     `json:"rank"`
	ID          string  `json:"id"`
	Provider    string  `json:"provider"`
	Model       string  `json:"model"`
	BlendedUSD  float64 `json:"blendedUsdPerMTok"` // (3 x input + output) / 4, USD per million tokens
	LatencyMs   *int64  `json:"latencyMs"`         // last health probe; null when never probed
	Development bool    `json:"development,omitempty"`
	Reason      string  `json:"reason"`
}

// Excluded is a model a mode could not use, and why.
type Excluded struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// blended weighs input three times output, the usual shape of a chat call.
func blended(p *Price) float64 {
	return (3*p.InputPerMTok + p.OutputPerMTok) / 4
}

// Routes ranks the catalog's models for a mode: those that qualify (tagged
// with it, configured, listed, not failing their last probe, priced, meeting
// the needs) in the mode's order, or by strategy (cost or latency) when one
// is given; ties go to the id. It also returns the models it excluded and
// why. The rules: docs/api.md (Model gateway, Routing).
func (c *Catalog) Routes(mode, strategy string, needs Needs) ([]Route, []Excluded, error) {
	if !IsMode(mode) {
		return nil, nil, fmt.Errorf("%w: mode %q is not one of %s", ErrUnknownModel, mode, strings.Join(Modes, ", "))
	}
	if strategy != "" && strategy != StrategyCost && strategy != StrategyLatency {
		return nil, nil, fmt.Errorf("gateway: strategy %q is not cost or latency", strategy)
	}
	var ok []Model
	var excluded []Excluded
	all := c.List()
	realConfigured := slices.ContainsFunc(all, func(m Model) bool { return !m.Development && m.Configured })
	for _, m := range all {
		why := unfit(m, mode, needs)
		if why == "" && m.Development && realConfigured {
			why = "development provider: modes use it only when no real provider is configured"
		}
		if why != "" {
			if slices.Contains(m.Modes, mode) || why != "not tagged for this mode" {
				excluded = append(excluded, Excluded{ID: m.ID, Reason: why})
			}
			continue
		}
		ok = append(ok, m)
	}
	// The providers file may fix a mode's chain; its order wins.
	c.mu.RLock()
	chain := c.modeChains[mode]
	c.mu.RUnlock()
	order := map[string]int{}
	for i, id := range chain {
		order[id] = i + 1
	}
	cheapest := math.Inf(1)
	for _, m := range ok {
		if !m.Development {
			cheapest = math.Min(cheapest, blended(m.Pricing))
		}
	}
	latency := func(m Model) float64 {
		if m.Health.LatencyMs == nil {
			return math.Inf(1)
		}
		return float64(*m.Health.LatencyMs)
	}
	key := func(m Model) []float64 {
		dev, cost := 0.0, blended(m.Pricing)
		if m.Development {
			dev = 1
		}
		fixed := math.Inf(1)
		if n, in := order[m.ID]; in && strategy == "" {
			fixed = float64(n)
		}
		switch {
		case strategy == StrategyLatency:
			return []float64{dev, latency(m), cost}
		case strategy == StrategyCost:
			return []float64{dev, cost}
		case mode == ModePremium:
			return []float64{dev, fixed, -cost}
		case mode == ModeBalanced:
			band := 1.0
			if cost <= 2*cheapest {
				band = 0
			}
			return []float64{dev, fixed, band, latency(m), cost}
		}
		return []float64{dev, fixed, cost}
	}
	sort.SliceStable(ok, func(i, j int) bool {
		a, b := key(ok[i]), key(ok[j])
		for k := range a {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return ok[i].ID < ok[j].ID
	})
	routes := make([]Route, len(ok))
	for i, m := range ok {
		routes[i] = Route{Rank: i + 1, ID: m.ID, Provider: m.Provider, Model: m.Model, BlendedUSD: blended(m.Pricing),
			LatencyMs: m.Health.LatencyMs, Development: m.Development, Reason: reason(m, mode, strategy, order[m.ID], i)}
	}
	return routes, excluded, nil
}

func unfit(m Model, mode string, needs Needs) string {
	switch {
	case !slices.Contains(m.Modes, mode):
		return "not tagged for this mode"
	case !m.Configured:
		return "provider not configured (no API key)"
	case !m.Available:
		return "not listed by the provider at the last sync"
	case m.Health.TestedAt != nil && !m.Health.OK:
		return "last health probe failed at " + m.Health.TestedAt.Format("2006-01-02T15:04:05Z")
	case m.Pricing == nil:
		return "no price: a mode only routes to priced models"
	case needs.Tools && !m.SupportsTools:
		return "does not support tools"
	case needs.JSON && !m.SupportsJSON:
		return "does not support JSON output"
	case needs.ContextTokens > 0 && m.ContextTokens > 0 && needs.ContextTokens > m.ContextTokens:
		return fmt.Sprintf("context of %d tokens is smaller than the %d the request may need", m.ContextTokens, needs.ContextTokens)
	}
	return ""
}

func reason(m Model, mode, strategy string, fixed, i int) string {
	price := fmt.Sprintf("$%.4g/MTok blended", blended(m.Pricing))
	health := "never probed"
	if m.Health.TestedAt != nil {
		health = fmt.Sprintf("healthy, %d ms at last probe", *m.Health.LatencyMs)
	}
	var why string
	switch {
	case m.Development:
		why = "development provider, ranked after every real model"
	case strategy == StrategyLatency:
		why = "ranked by last probe latency"
	case strategy == StrategyCost:
		why = "ranked by price"
	case fixed > 0:
		why = fmt.Sprintf("position %d of the %s chain in the providers file", fixed, mode)
	case mode == ModePremium:
		why = "ranked by price, highest first (price stands for capability)"
	case mode == ModeBalanced:
		why = "ranked by latency among models within twice the cheapest price, then price"
	default:
		why = "ranked by price, lowest first"
	}
	if i == 0 {
		why = "first choice: " + why
	} else {
		why = "fallback: " + why
	}
	return fmt.Sprintf("%s; %s; %s", why, price, health)
}

// MaxChain bounds how many models one call may try.
const MaxChain = 4

// Chain is the ordered list of models a call to id tries: for a mode, its
// ranked routes; for a model, the model then its configured fallbacks.
// Models whose provider is not configured are left out of a model's
// fallbacks; the model itself is always first, so a call to an
// unconfigured model fails clearly rather than silently going elsewhere.
func (c *Catalog) Chain(id string, req Request) ([]Target, error) {
	if IsMode(id) {
		needs, tooLong := c.routeNeeds(id, req)
		routes, _, err := c.Routes(id, "", needs)
		if err != nil {
			return nil, err
		}
		if len(routes) == 0 && tooLong {
			return nil, fmt.Errorf("%w: the prompt and its output cap need more tokens than the largest context of mode %s's models; shorten the prompt or lower the cap", ErrPromptTooLong, id)
		}
		if len(routes) == 0 {
			return nil, fmt.Errorf("%w: no configured, healthy, priced model serves mode %s with this request's needs (a model serves the modes listed in its modes, see GET /v1/models); name a model (<provider>:<model>) instead, or see POST /v1/models/route/preview", ErrNoRoute, id)
		}
		var out []Target
		for _, r := range routes[:min(len(routes), MaxChain)] {
			p, m, err := c.Resolve(r.ID)
			if err != nil {
				return nil, err
			}
			out = append(out, Target{Provider: p, Model: m})
		}
		return out, nil
	}
	p, m, err := c.Resolve(id)
	if err != nil {
		return nil, err
	}
	out := []Target{{Provider: p, Model: m}}
	for _, fb := range m.Fallbacks {
		if len(out) == MaxChain {
			break
		}
		fp, fm, err := c.Resolve(fb)
		if err != nil || !fp.Configured() {
			continue
		}
		out = append(out, Target{Provider: fp, Model: fm})
	}
	return out, nil
}

// Target is one model a call may go to.
type Target struct {
	Provider Provider
	Model    *Model
}

// ErrPromptTooLong means a request needs more tokens than any model that
// could take it has: the client's to change, not a passing condition.
var ErrPromptTooLong = errors.New("gateway: prompt too long")

// ErrNoRoute means a mode has no model that can take the request.
var ErrNoRoute = fmt.Errorf("gateway: no route")

// nativeProvider is the built-in provider of each wire format: a bare model
// name that no provider lists goes to it (the clients' default names: the
// Agents SDK's, Claude Code's), as a model it serves unpriced.
var nativeProvider = map[string]string{FormatAnthropic: "anthropic", FormatChat: "openai", FormatResponses: "openai"}

// Plan is the chain of models a call to id (a <provider>:<model> id or a
// mode) may try, for a request in the wire format format ("" for none,
// as generate's). A bare name that no provider lists goes to the built-in
// provider of the format. A model whose provider has no credentials is
// refused before any upstream call, with an error that says not to retry:
// it lasts until the operator adds the key. It is what every front and
// generate use, with no HTTP request (the caller's Complete and Open take
// its chain).
func (c *Catalog) Plan(format, id string, req Request) ([]Target, error) {
	chain, err := c.plan(id, req)
	if err != nil && errors.Is(err, ErrUnknownModel) && !errors.Is(err, errAmbiguous) && !strings.Contains(id, ":") && !IsMode(id) && nativeProvider[format] != "" {
		fb, ferr := c.plan(nativeProvider[format]+":"+id, req)
		var de *domain.Error
		if _, listed := c.Get(nativeProvider[format] + ":" + id); !listed && errors.As(ferr, &de) && de.Code == "provider_not_configured" {
			// Say why that provider: a mistyped name reads otherwise as a
			// server without a key. A name it lists is right as it is.
			e := domain.E("gateway", domain.KindUnavailable, "provider_not_configured",
				"no provider lists model %q; as a bare name it goes to the built-in %s provider, which is not configured on this server (no API key); see GET /v1/models for available models", id, nativeProvider[format])
			e.NoRetry = true
			return nil, e
		}
		if ferr == nil || !errors.Is(ferr, ErrUnknownModel) {
			return fb, ferr // the provider's answer: its chain, or that it has no key
		}
	}
	return chain, err
}

func (c *Catalog) plan(id string, req Request) ([]Target, error) {
	chain, err := c.Chain(id, req)
	if err != nil {
		return nil, err
	}
	if p := chain[0].Provider; !p.Configured() {
		e := domain.E("gateway", domain.KindUnavailable, "provider_not_configured",
			"provider %s is not configured on this server (no API key); see GET /v1/models for available models", p.Name())
		e.NoRetry = true // until the operator adds the key
		return nil, e
	}
	return chain, nil
}
