package gateway

// Reasoning across the formats (docs/api.md, Translation): OpenAI's
// reasoning_effort values, which the fronts take; how Anthropic's thinking
// maps to them and back is the Anthropic kind's (gateway/anthropic).

// Efforts are the reasoning_effort values the fronts take.
var Efforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}
