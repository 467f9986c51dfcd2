package http

import (
	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/openai"
)

// The answers the gateway writes on every call, as structs: encoding a
// struct is several times cheaper than encoding the same map, and these go
// out once per call or once per streamed delta. Rare events (tool-call
// starts, errors) are still built as maps where they are written.

// oaUsageOut is OpenAI's usage object with Baton's cost.
type oaUsageOut struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	Estimated        bool     `json:"estimated,omitempty"` // Baton counted the tokens (the upstream reported none)
	EstimatedCostUSD *float64 `json:"estimated_cost_usd"`  // null: the model has no price
}

// openaiUsage converts usage to OpenAI's convention, where prompt tokens
// include cached ones.
func openaiUsage(u gateway.Usage, cost *float64) oaUsageOut {
	prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	out := oaUsageOut{PromptTokens: prompt, CompletionTokens: u.OutputTokens, TotalTokens: prompt + u.OutputTokens,
		Estimated: u.Estimated, EstimatedCostUSD: cost}
	out.PromptTokensDetails.CachedTokens = u.CacheReadTokens
	return out
}

type ccToolCallOut = openai.ChatToolCall

type ccMessageOut struct {
	Role      string          `json:"role"`
	Content   *string         `json:"content"`
	Refusal   *string         `json:"refusal"`
	ToolCalls []ccToolCallOut `json:"tool_calls,omitempty"`
	// ReasoningContent is the model's thinking text, where the provider
	// returns it (Anthropic); OpenAI's chat has no field for it.
	ReasoningContent *string `json:"reasoning_content,omitempty"`
}

type ccChoiceOut struct {
	Index        int          `json:"index"`
	Message      ccMessageOut `json:"message"`
	FinishReason string       `json:"finish_reason"`
	Logprobs     *struct{}    `json:"logprobs"`
}

// ccResponseOut is a chat.completion.
type ccResponseOut struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ccChoiceOut `json:"choices"`
	Usage   oaUsageOut    `json:"usage"`
	Svc     svcTrace      `json:"svc"`
}

type ccDeltaOut struct {
	Role             string  `json:"role,omitempty"`
	ReasoningContent *string `json:"reasoning_content,omitempty"`
	Content          *string `json:"content,omitempty"`
	Refusal          *string `json:"refusal,omitempty"`
	ToolCalls        []any   `json:"tool_calls,omitempty"`
}

type ccChunkChoiceOut struct {
	Index        int        `json:"index"`
	Delta        ccDeltaOut `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
	Logprobs     *struct{}  `json:"logprobs"`
}

// ccChunkOut is a chat.completion.chunk.
type ccChunkOut struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []ccChunkChoiceOut `json:"choices"`
	Usage   *oaUsageOut        `json:"usage,omitempty"`
	Svc     *svcTrace          `json:"svc,omitempty"`
}

// anTextDeltaOut is Anthropic's content_block_delta carrying text.
type anTextDeltaOut struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"delta"`
}

func anTextDelta(index int, text string) anTextDeltaOut {
	d := anTextDeltaOut{Type: "content_block_delta", Index: index}
	d.Delta.Type, d.Delta.Text = "text_delta", text
	return d
}

// Events with nothing variable in them, encoded once.
var (
	anPing        = []byte(`{"type":"ping"}`)
	anMessageStop = []byte(`{"type":"message_stop"}`)
)
