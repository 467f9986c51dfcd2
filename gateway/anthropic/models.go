package anthropic

import "github.com/batonhq/baton/gateway"

// Models is Anthropic's built-in lineup and list prices as of 2026-11-27
// (docs/operations.md, Built-in catalog). Each price's source names the
// page it was read from and the newest date it is known to hold; a
// providers file's pricing object overrides any of them.
//
// maxOutputTokens is the "max output" of Anthropic's models overview
// (https://platform.claude.com/docs/en/about-claude/models/overview and
// each model's page), as of 2026-11-28: what a request translated from
// another format that sets no cap asks for (docs/api.md, Translation).
//
// supportsTools and supportsJson say what works through Baton's adapter.
// Cache writes have two rates, as Anthropic bills them: the default
// 5-minute lifetime's (CacheWritePerMTok, 1.25x the input rate) and the
// 1-hour lifetime's (CacheWrite1hPerMTok, 2x). Baton's adapter asks for
// no longer lifetime than the default, but a request passed through on
// /v1/messages keeps its cache_control, and a client (Claude Code, say)
// may ask for ttl "1h"; the usage tells each lifetime's writes apart.
var Models = []gateway.ModelSpec{
	// Claude Fable 5.1, Opus 5.5 and Sonnet 5.5 refuse a forced tool
	// call (tool_choice any or tool): structured output goes to the
	// models after the 4.5 generation as output_config.format.
	{Name: "claude-fable-5-2", ContextTokens: 1000000, MaxOutputTokens: 128000, SupportsJSON: true, SupportsTools: true, Modes: []string{"premium", "auto"},
		Pricing: &gateway.Price{InputPerMTok: 8, OutputPerMTok: 40, CacheReadPerMTok: 0.20, CacheWritePerMTok: 10, CacheWrite1hPerMTok: 16,
			FastRate: fastRate, USRate: usRate, WebSearchPerK: webSearchPerK, Source: "Anthropic list price, https://platform.claude.com/docs/en/about-claude/pricing, as of 2026-11-10" + webSearchPricing + fastPricing + usPricing}},
	{Name: "claude-opus-5-5", ContextTokens: 1000000, MaxOutputTokens: 128000, SupportsJSON: true, SupportsTools: true, Modes: []string{"premium", "auto"},
		Pricing: &gateway.Price{InputPerMTok: 4, OutputPerMTok: 20, CacheReadPerMTok: 0.20, CacheWritePerMTok: 5, CacheWrite1hPerMTok: 8, FastRate: fastRate, USRate: usRate, WebSearchPerK: webSearchPerK,
			Source: anthropicPricing + webSearchPricing + fastPricing + usPricing}},
	{Name: "claude-sonnet-5-5", ContextTokens: 1000000, MaxOutputTokens: 128000, SupportsJSON: true, SupportsTools: true, Modes: []string{"balanced", "premium", "auto"},
		Pricing: &gateway.Price{InputPerMTok: 2, OutputPerMTok: 10, CacheReadPerMTok: 0.10, CacheWritePerMTok: 2.50, CacheWrite1hPerMTok: 4, USRate: usRate, WebSearchPerK: webSearchPerK, Source: anthropicPricing + webSearchPricing + usPricing}},
	{Name: "claude-haiku-5-5", ContextTokens: 1000000, MaxOutputTokens: 128000, SupportsJSON: true, SupportsTools: true, Modes: []string{"cheap", "balanced", "auto"},
		Pricing: &gateway.Price{InputPerMTok: 0.10, OutputPerMTok: 0.50, CacheReadPerMTok: 0.01, CacheWritePerMTok: 0.125, CacheWrite1hPerMTok: 0.20,
			LongPrompt: &gateway.LongPromptPrice{PromptTokens: 100000, InputPerMTok: 0.50, OutputPerMTok: 2.50, CacheReadPerMTok: 0.05, CacheWritePerMTok: 0.625,
				CacheWrite1hPerMTok: 1},
			USRate: usRate, WebSearchPerK: webSearchPerK, Source: anthropicPricing + webSearchPricing + usPricing}},
	// Legacy (Anthropic still serves it): Claude Code's default model
	// (testdata/clients/claude-code-turn.json), so its calls are priced
	// and held against budgets. In auto only, where the cheaper models
	// rank first.
	{Name: "claude-opus-4-8", ContextTokens: 1000000, MaxOutputTokens: 128000, SupportsJSON: true, SupportsTools: true, Modes: []string{"auto"},
		Pricing: &gateway.Price{InputPerMTok: 5, OutputPerMTok: 25, CacheReadPerMTok: 0.50, CacheWritePerMTok: 6.25, CacheWrite1hPerMTok: 10,
			FastRate: fastRate, USRate: usRate, WebSearchPerK: webSearchPerK,
			Source: "Anthropic list price, https://platform.claude.com/docs/en/about-claude/pricing and https://platform.claude.com/docs/en/models/opus-4-8/overview, as of 2026-11-27" + webSearchPricing + fastPricing + usPricing}},
	{Name: "claude-haiku-4-5", ContextTokens: 200000, MaxOutputTokens: 64000, SupportsJSON: true, SupportsTools: true, Modes: []string{"cheap", "balanced", "auto"},
		Pricing: &gateway.Price{InputPerMTok: 1, OutputPerMTok: 5, CacheReadPerMTok: 0.10, CacheWritePerMTok: 1.25, CacheWrite1hPerMTok: 2, WebSearchPerK: webSearchPerK, Source: anthropicPricing + webSearchPricing}},
}

// webSearchPerK is what Anthropic bills per 1,000 searches of its web
// search tool, on top of the tokens the results add to the input; web
// fetch has no fee of its own.
const (
	webSearchPerK    = 10
	webSearchPricing = "; web search $10 per 1,000 searches, https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool, as of 2026-11-27"
)

// fastRate is what fast mode (a request's speed fast, the answer's
// usage.speed fast) costs on the models that have it: every token at
// twice the standard rates, long prompts and caching included, web
// searches at their own fee. Sonnet and Haiku have no fast mode.
const (
	fastRate    = 2
	fastPricing = "; fast mode 2x the standard rates, https://platform.claude.com/docs/en/build-with-claude/fast-mode, as of 2026-11-27"
)

// usRate is what US-only inference (a request's inference_geo us, the
// answer's usage.inference_geo us) costs on the models that offer it,
// Claude Opus 4.6 and later: every token at 1.1 times the rates. Claude
// Haiku 4.5 does not take the parameter.
const (
	usRate    = 1.1
	usPricing = "; US-only inference 1.1x, https://platform.claude.com/docs/en/manage-claude/data-residency and https://docs.aws.amazon.com/claude-platform/latest/userguide/data-residency.html, as of 2026-11-27"
)

// anthropicPricing is the source shared by several built-in prices.
const anthropicPricing = "Anthropic list price, https://platform.claude.com/docs/en/about-claude/pricing, as of 2026-10-24"
