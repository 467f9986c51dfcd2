package openai

import (
	"math"

	"github.com/batonhq/baton/gateway"
)

// Models is OpenAI's built-in lineup and list prices as of 2026-11-27
// (docs/operations.md, Built-in catalog). Each price's source names the
// page it was read from and the newest date it is known to hold; a
// providers file's pricing object overrides any of them.
//
// maxOutputTokens is each model's page's "max output tokens" (the
// GPT-4o and GPT-4.1 pages for the older three), as of 2026-11-28.
//
// supportsTools and supportsJson say what works through Baton's adapter:
// OpenAI's models are called on Chat Completions. Cache writes are priced
// at the default cache lifetime's rate (30 minutes): Baton asks for no
// longer one. The fast tier (service_tier fast or priority) costs twice
// the standard rates on the GPT-5.6 family and later, as their pages say
// (fastRate); the older models' own priority rates are not in the table,
// so that tier is unpriced on them.
var Models = []gateway.ModelSpec{
	// The GPT-6 family takes function tools on Chat Completions only
	// at reasoning effort none, which gpt-6.2-sol refuses and which is
	// not gpt-6-luna's default.
	{Name: "gpt-6.2-sol", ContextTokens: 1050000, MaxOutputTokens: 128000, SupportsJSON: true, Modes: []string{"balanced", "premium", "auto"},
		Pricing: openAIPrice{InputPerMTok: 2, OutputPerMTok: 10, CacheReadPerMTok: 0.10, CacheWritePerMTok: 2.50,
			LongPrompt: openAILongPrompt(2, 10, 0.10, 2.50),
			FastRate:   2,
			Source:     "OpenAI list price, https://developers.openai.com/api/docs/models/gpt-6.2-sol, as of 2026-11-18; fast mode 2x as of 2026-11-27"}.withTools(false)},
	{Name: "gpt-6-luna", ContextTokens: 1050000, MaxOutputTokens: 128000, SupportsJSON: true, Modes: []string{"cheap", "balanced", "auto"},
		Pricing: openAIPrice{InputPerMTok: 0.10, OutputPerMTok: 0.50, CacheReadPerMTok: 0.01, CacheWritePerMTok: 0.125,
			LongPrompt: openAILongPrompt(0.10, 0.50, 0.01, 0.125),
			FastRate:   2,
			Source:     "OpenAI list price, https://developers.openai.com/api/docs/models/gpt-6-luna, as of 2026-10; fast mode 2x as of 2026-11-27"}.withTools(false)},
	// The OpenAI Agents SDK's default model (testdata/clients/agents-sdk-run.json),
	// so its calls are priced. Not known to take function tools on Chat
	// Completions at its default effort, as the GPT-6 family does not; in
	// auto only.
	{Name: "gpt-5.6-luna", ContextTokens: 1050000, MaxOutputTokens: 128000, SupportsJSON: true, Modes: []string{"auto"},
		Pricing: openAIPrice{InputPerMTok: 0.20, OutputPerMTok: 1.20, CacheReadPerMTok: 0.02, CacheWritePerMTok: 0.25,
			LongPrompt: openAILongPrompt(0.20, 1.20, 0.02, 0.25),
			FastRate:   2,
			Source:     "OpenAI list price, https://developers.openai.com/api/docs/models/gpt-5.6-luna, as of 2026-11-27; fast mode 2x as of 2026-11-27"}.withTools(false)},
	// Deprecated: shut down on 2027-01-14, gpt-6-luna their replacement
	// (https://developers.openai.com/api/docs/deprecations). Kept until
	// then, and out of premium, which ranks the dearest first; they
	// still take tools on Chat Completions.
	{Name: "gpt-4o-mini", ContextTokens: 128000, MaxOutputTokens: 16384, SupportsJSON: true, SupportsTools: true, Modes: []string{"cheap", "balanced", "auto"},
		Pricing: openAIPrice{InputPerMTok: 0.15, OutputPerMTok: 0.60, CacheReadPerMTok: 0.075, Source: openAIPricing}.withTools(true)},
	{Name: "gpt-4o", ContextTokens: 128000, MaxOutputTokens: 16384, SupportsJSON: true, SupportsTools: true, Modes: []string{"auto"},
		Pricing: openAIPrice{InputPerMTok: 2.50, OutputPerMTok: 10.00, CacheReadPerMTok: 1.25, Source: openAIPricing}.withTools(true)},
	{Name: "gpt-4.1-mini", ContextTokens: 1047576, MaxOutputTokens: 32768, SupportsJSON: true, SupportsTools: true, Modes: []string{"cheap", "balanced", "auto"},
		Pricing: openAIPrice{InputPerMTok: 0.40, OutputPerMTok: 1.60, CacheReadPerMTok: 0.10, Source: openAIPricing}.withTools(true)},
}

// webSearchPerK is what OpenAI bills per 1,000 calls of its web search
// tool (web_search, on every model), on top of the tokens of the results
// the model reads, which its usage counts as input: a call is a
// web_search_call whose action is a search (Usage.WebSearches).
const (
	webSearchPerK    = 10
	webSearchPricing = "; web search $10 per 1,000 calls, https://developers.openai.com/api/docs/pricing (built-in tools) and https://developers.openai.com/api/docs/guides/tools-web-search (search actions are billed), as quoted 2026-03-12"
)

// fileSearchPerK is what OpenAI bills per 1,000 calls of its file search
// tool on the Responses API (file_search_call items), on top of the tokens
// of the results and of the vector stores' storage, which Baton does not
// see.
const (
	fileSearchPerK    = 2.5
	fileSearchPricing = "; file search $2.50 per 1,000 calls, https://developers.openai.com/api/docs/pricing (built-in tools), as quoted 2026-03-12"
)

// previewPerK is what OpenAI bills per 1,000 calls of its legacy
// web_search_preview tool on the models that do not reason (GPT-4o,
// GPT-4.1); on reasoning models it costs webSearchPerK.
const (
	previewPerK    = 25
	previewPricing = "; web search preview $25 per 1,000 calls on non-reasoning models, as quoted 2026-03-12"
)

// openAIPrice is a built-in model's token price; withTools adds the fees
// of OpenAI's built-in tools, the same on every model, with their source.
type openAIPrice gateway.Price

// withTools is p with web search and file search billed, and with preview
// the legacy web_search_preview's own rate (the models that do not reason).
func (p openAIPrice) withTools(preview bool) *gateway.Price {
	out := gateway.Price(p)
	out.WebSearchPerK, out.FileSearchPerK = webSearchPerK, fileSearchPerK
	out.Source += webSearchPricing
	if preview {
		out.WebSearchPreviewPerK = previewPerK
		out.Source += previewPricing
	}
	out.Source += fileSearchPricing
	return &out
}

// openAIPricing is the source shared by several built-in prices.
const openAIPricing = "OpenAI list price, https://developers.openai.com/api/docs/pricing, as of 2026-08-21"

// openAILongPrompt is OpenAI's long-prompt rule for the GPT-5.6 family and
// later: past 272K input tokens, input and cache rates double and output
// costs 1.5 times as much, for the whole call.
func openAILongPrompt(in, out, cacheRead, cacheWrite float64) *gateway.LongPromptPrice {
	// Rounded to the millionth of a dollar: 1.5 * 1.20 is 1.7999999999999998 in floating point.
	r := func(x float64) float64 { return math.Round(x*1e6) / 1e6 }
	return &gateway.LongPromptPrice{PromptTokens: 272000, InputPerMTok: r(2 * in), OutputPerMTok: r(1.5 * out),
		CacheReadPerMTok: r(2 * cacheRead), CacheWritePerMTok: r(2 * cacheWrite)}
}
