package gateway

import "regexp"

// Reasoning across the formats (docs/api.md, Translation): Anthropic's
// thinking and output_config.effort, OpenAI's reasoning_effort.

// AnthropicDefaultMaxTokens is the max_tokens sent to Anthropic for a
// request that sets no cap (a chat completion may not).
const AnthropicDefaultMaxTokens = 4096

// Efforts are the reasoning_effort values the fronts take.
var Efforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// AnthropicEfforts are output_config.effort's values.
var AnthropicEfforts = []string{"low", "medium", "high", "xhigh", "max"}

// ReasoningFromThinking is the reasoning_effort an OpenAI-shaped upstream
// gets for a messages request's thinking and effort: the effort as it is
// (max, which OpenAI lacks, as xhigh); else a fixed budget by its size
// (under 4,096 tokens low, under 16,384 medium, else high). Thinking
// disabled, adaptive without an effort, or nothing said leave the model
// its default: OpenAI has no value every model takes for "do not reason".
func ReasoningFromThinking(t *Thinking, effort string) string {
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

// anthropicEffort is output_config.effort for a reasoning_effort.
func anthropicEffort(effort string) string {
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

// AnthropicStructuredNative reports whether structured output goes to the
// Claude model as output_config.format, Anthropic's own: for the models
// after the 4.5 generation, several of which refuse the forced tool call
// that the earlier ones are asked with (gateway/anthropic).
func AnthropicStructuredNative(model string) bool { return !fixedBudgetModel.MatchString(model) }

// AnthropicReasoning is what an Anthropic upstream gets for a chat
// client's reasoning_effort, and the max_tokens to send with it: a fixed
// budget below the cap (at least 1,024 tokens, else none fits and the
// model answers without thinking), or adaptive thinking and an effort.
// A request without a cap gets the default cap plus the budget.
func AnthropicReasoning(req Request) (t *Thinking, effort string, maxTokens int) {
	maxTokens = req.MaxTokens
	eff := req.ReasoningEffort
	if eff == "" || eff == "none" || thinkingBudget(eff) == 0 {
		if maxTokens <= 0 {
			maxTokens = AnthropicDefaultMaxTokens
		}
		return nil, "", maxTokens
	}
	if !fixedBudgetModel.MatchString(req.Model) {
		if maxTokens <= 0 {
			maxTokens = AnthropicDefaultMaxTokens
		}
		return &Thinking{Type: "adaptive"}, anthropicEffort(eff), maxTokens
	}
	budget := thinkingBudget(eff)
	if maxTokens <= 0 {
		return &Thinking{Type: "enabled", BudgetTokens: budget}, "", AnthropicDefaultMaxTokens + budget
	}
	if budget = min(budget, maxTokens-1); budget < 1024 {
		return nil, "", maxTokens
	}
	return &Thinking{Type: "enabled", BudgetTokens: budget}, "", maxTokens
}

// AnthropicMaxTokens is the max_tokens the Anthropic adapter sends for req.
func AnthropicMaxTokens(req Request) int {
	if req.Thinking != nil || req.Effort != "" {
		if req.MaxTokens > 0 {
			return req.MaxTokens
		}
		return AnthropicDefaultMaxTokens
	}
	_, _, n := AnthropicReasoning(req)
	return n
}
