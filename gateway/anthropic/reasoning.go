package anthropic

import (
	"regexp"

	"github.com/batonhq/baton/gateway"
)

// Reasoning across the formats (docs/api.md, Translation): Anthropic's
// thinking and output_config.effort against OpenAI's reasoning_effort.

// DefaultMaxTokens is the max_tokens sent to Anthropic for a request
// that sets no cap (a chat completion may not) to a model that declares
// no most output (Model.MaxOutputTokens).
const DefaultMaxTokens = 4096

// WholeMaxTokens is the most max_tokens a whole (not streamed) answer is
// sent without a cap of the client's: what fits the 10 minutes Baton
// waits for one (gateway.DefaultTimeout), by the Anthropic SDKs' own
// reckoning (128,000 tokens an hour), past which they refuse to send a
// request that does not stream.
const WholeMaxTokens = 21333

// uncapped is the max_tokens sent for a request that sets no cap: the
// model's declared most output (at most WholeMaxTokens for a whole
// answer), as Anthropic's own clients ask for it, else DefaultMaxTokens.
func uncapped(req gateway.Request) int {
	n := req.OutputLimit
	if n <= 0 {
		return DefaultMaxTokens
	}
	if !req.Streamed {
		n = min(n, WholeMaxTokens)
	}
	return n
}

// Efforts are output_config.effort's values.
var Efforts = []string{"low", "medium", "high", "xhigh", "max"}

// ReasoningFromThinking is the reasoning_effort an OpenAI-shaped upstream
// gets for a messages request's thinking and effort: the effort as it is
// (max, which OpenAI lacks, as xhigh); else a fixed budget by its size
// (under 4,096 tokens low, under 16,384 medium, else high). Thinking
// disabled, adaptive without an effort, or nothing said leave the model
// its default: OpenAI has no value every model takes for "do not reason".
func ReasoningFromThinking(t *gateway.Thinking, effort string) string {
	if t != nil && t.Type == "disabled" {
		return ""
	}
	switch effort {
	case "low", "medium", "high", "xhigh":
		return effort
	case "max":
		return "xhigh"
	}
	if t != nil && t.Type == "enabled" {
		switch {
		case t.BudgetTokens < 4096:
			return "low"
		case t.BudgetTokens < 16384:
			return "medium"
		}
		return "high"
	}
	return ""
}

// thinkingBudget is the fixed thinking budget for a reasoning_effort, for
// models that take one; 0 for none (or a value Baton does not know).
func thinkingBudget(effort string) int {
	switch effort {
	case "minimal":
		return 1024 // Anthropic's least
	case "low":
		return 2048
	case "medium":
		return 8192
	case "high":
		return 16384
	case "xhigh":
		return 32768
	}
	return 0
}

// effortFor is output_config.effort for a reasoning_effort.
func effortFor(effort string) string {
	if effort == "minimal" {
		return "low"
	}
	return effort
}

// fixedBudgetModel matches the Claude models that take thinking only as a
// fixed budget (Claude 3 and the 4.0 to 4.5 generation). Later ones take
// adaptive thinking steered by output_config.effort, and several refuse a
// fixed budget with a 400.
var fixedBudgetModel = regexp.MustCompile(`^claude-(3-.*|(opus|sonnet|haiku)-4(-[015])?(-[0-9]{8})?)$`)

// StructuredNative reports whether structured output goes to the
// Claude model as output_config.format, Anthropic's own: for the models
// after the 4.5 generation, several of which refuse the forced tool call
// that the earlier ones are asked with (gateway/anthropic).
func StructuredNative(model string) bool { return !fixedBudgetModel.MatchString(model) }

// Reasoning is what an Anthropic upstream gets for a chat
// client's reasoning_effort, and the max_tokens to send with it: a fixed
// budget below the cap (at least 1,024 tokens, else none fits and the
// model answers without thinking), or adaptive thinking and an effort.
// A request without a cap gets the model's most output (uncapped), the
// budget leaving DefaultMaxTokens of it for the answer; to a model that
// declares none, the default cap plus the budget.
func Reasoning(req gateway.Request) (t *gateway.Thinking, effort string, maxTokens int) {
	maxTokens = req.MaxTokens
	eff := req.ReasoningEffort
	if eff == "" || eff == "none" || thinkingBudget(eff) == 0 {
		if maxTokens <= 0 {
			maxTokens = uncapped(req)
		}
		return nil, "", maxTokens
	}
	if !fixedBudgetModel.MatchString(req.Model) {
		if maxTokens <= 0 {
			maxTokens = uncapped(req)
		}
		return &gateway.Thinking{Type: "adaptive"}, effortFor(eff), maxTokens
	}
	budget := thinkingBudget(eff)
	room := maxTokens - 1 // the answer gets at least a token of a client's cap
	if maxTokens <= 0 {
		if req.OutputLimit <= 0 {
			return &gateway.Thinking{Type: "enabled", BudgetTokens: budget}, "", DefaultMaxTokens + budget
		}
		maxTokens = uncapped(req)
		room = maxTokens - DefaultMaxTokens
	}
	if budget = min(budget, room); budget < 1024 {
		return nil, "", maxTokens
	}
	return &gateway.Thinking{Type: "enabled", BudgetTokens: budget}, "", maxTokens
}

// MaxTokens is the max_tokens the Anthropic adapter sends for req.
func MaxTokens(req gateway.Request) int {
	if req.Thinking != nil || req.Effort != "" {
		if req.MaxTokens > 0 {
			return req.MaxTokens
		}
		return uncapped(req)
	}
	_, _, n := Reasoning(req)
	return n
}
