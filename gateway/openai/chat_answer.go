package openai

import "github.com/batonhq/baton/gateway"

// The answers the chat completions front writes on every call, as structs:
// encoding a struct is several times cheaper than encoding the same map,
// and these go out once per call or once per streamed delta. Rare events
// (tool-call starts, errors) are built as maps where they are written. Svc
// is Baton's own part of an answer (the call's id and route), set by the
// front.

// ChatUsage is OpenAI's usage object with Baton's cost.
type ChatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	Estimated        bool     `json:"estimated,omitempty"` // Baton counted the tokens (the upstream reported none)
	EstimatedCostUSD *float64 `json:"estimated_cost_usd"`  // null: the model has no price
}

// NewChatUsage converts usage to OpenAI's convention, where prompt tokens
// include cached ones.
func NewChatUsage(u gateway.Usage, cost *float64) ChatUsage {
	prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	out := ChatUsage{PromptTokens: prompt, CompletionTokens: u.OutputTokens, TotalTokens: prompt + u.OutputTokens,
		Estimated: u.Estimated, EstimatedCostUSD: cost}
	out.PromptTokensDetails.CachedTokens = u.CacheReadTokens
	return out
}

// ChatAnswerMessage is the message of a chat.completion.
type ChatAnswerMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	Refusal   *string        `json:"refusal"`
	ToolCalls []ChatToolCall `json:"tool_calls,omitempty"`
	// ReasoningContent is the model's thinking text, where the provider
	// returns it (Anthropic); OpenAI's chat has no field for it.
	ReasoningContent *string `json:"reasoning_content,omitempty"`
}

// ChatChoice is a chat.completion's choice; Baton answers one.
type ChatChoice struct {
	Index        int               `json:"index"`
	Message      ChatAnswerMessage `json:"message"`
	FinishReason string            `json:"finish_reason"`
	Logprobs     *struct{}         `json:"logprobs"`
}

// ChatCompletion is a chat.completion.
type ChatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []ChatChoice `json:"choices"`
	Usage   ChatUsage    `json:"usage"`
	Svc     any          `json:"svc"` // Baton's own part of the answer
}

// ChatDelta is a chunk's delta: tool calls are written as maps, as they
// are rare.
type ChatDelta struct {
	Role             string  `json:"role,omitempty"`
	ReasoningContent *string `json:"reasoning_content,omitempty"`
	Content          *string `json:"content,omitempty"`
	Refusal          *string `json:"refusal,omitempty"`
	ToolCalls        []any   `json:"tool_calls,omitempty"`
}

// ChatChunkChoice is a chat.completion.chunk's choice.
type ChatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        ChatDelta `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
	Logprobs     *struct{} `json:"logprobs"`
}

// ChatChunk is a chat.completion.chunk.
type ChatChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []ChatChunkChoice `json:"choices"`
	Usage   *ChatUsage        `json:"usage,omitempty"`
	Svc     any               `json:"svc,omitempty"`
}
