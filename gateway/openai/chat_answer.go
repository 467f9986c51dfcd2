package openai

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/batonhq/baton/gateway"
)

// The chat completions answers, as structs: the front encodes them (once
// per call, or once per streamed delta: encoding a struct is several times
// cheaper than encoding the same map) and the adapter decodes an
// upstream's answers into them. Decoding takes what compatible servers
// send: fields the adapter does not read accept any value where servers
// are known to differ. Svc is Baton's own part of an answer (the call's id
// and route), set by the front.

// ChatUsage is OpenAI's usage object with Baton's cost.
type ChatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		// CacheWriteTokens is sent by some compatible servers; Baton's own
		// answers count writes in prompt_tokens only.
		CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
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

// UnmarshalJSON reads an upstream's usage: the counts Baton bills, as
// typed as ever; total_tokens and Baton's own fields are not read, so a
// compatible server's 15.0 total or another field it fills its own way
// does not fail the answer.
func (u *ChatUsage) UnmarshalJSON(b []byte) error {
	type billed ChatUsage // without this method
	var in struct {
		*billed
		// Shallower than billed's fields of the same names: these win.
		TotalTokens      json.RawMessage `json:"total_tokens"`
		Estimated        json.RawMessage `json:"estimated"`
		EstimatedCostUSD json.RawMessage `json:"estimated_cost_usd"`
		// The counts billed, taken in any form of an integer (1200.0), as
		// the passthrough reads them: such an answer was a 502, its call
		// recorded free.
		PromptTokens        gateway.Count `json:"prompt_tokens"`
		CompletionTokens    gateway.Count `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens     gateway.Count `json:"cached_tokens"`
			CacheWriteTokens gateway.Count `json:"cache_write_tokens"`
		} `json:"prompt_tokens_details"`
	}
	in.billed = (*billed)(u)
	err := json.Unmarshal(b, &in)
	if ute, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		// Named as the client's JSON has it, not through the Go type above.
		ute.Field = strings.TrimPrefix(ute.Field, "billed.")
	}
	u.PromptTokens, u.CompletionTokens = int(in.PromptTokens), int(in.CompletionTokens)
	if d := in.PromptTokensDetails; d != nil {
		u.PromptTokensDetails.CachedTokens, u.PromptTokensDetails.CacheWriteTokens = int(d.CachedTokens), int(d.CacheWriteTokens)
	}
	return err
}

// Usage converts an upstream's counts, where prompt tokens include cached
// ones.
func (u *ChatUsage) Usage() gateway.Usage {
	prompt := max(u.PromptTokens, 0) // a negative count would lower the tenant's spending
	cached := min(max(u.PromptTokensDetails.CachedTokens, 0), prompt)
	written := min(max(u.PromptTokensDetails.CacheWriteTokens, 0), prompt-cached) // billed at the cache-write rate where a model has one
	return gateway.Usage{InputTokens: prompt - cached - written, OutputTokens: max(u.CompletionTokens, 0), CacheReadTokens: cached, CacheWriteTokens: written}
}

// ChatAnswerMessage is the message of a chat.completion.
type ChatAnswerMessage struct {
	Role      gateway.LooseString `json:"role"`
	Content   *string             `json:"content"`
	Refusal   *string             `json:"refusal"`
	ToolCalls []ChatToolCall      `json:"tool_calls,omitempty"`
	// ReasoningContent is the model's thinking text, where the provider
	// returns it (Anthropic; DeepSeek and vLLM send it too); OpenAI's chat
	// has no field for it. Loose: read as a string or not at all.
	ReasoningContent gateway.LooseString `json:"reasoning_content,omitempty"`
	// Reasoning is the same text as other compatible servers name it
	// (OpenRouter, later vLLM): read, never written. Raw, as its shape is
	// theirs.
	Reasoning json.RawMessage `json:"reasoning,omitempty"`
}

// thinkingText is a message's or delta's thinking text, under either name.
func thinkingText(content gateway.LooseString, reasoning json.RawMessage) string {
	if content != "" {
		return string(content)
	}
	if s := stringOrNil(reasoning); s != nil {
		return *s
	}
	return ""
}

// ChatChoice is a chat.completion's choice; Baton answers one.
type ChatChoice struct {
	Index        gateway.LooseInt  `json:"index"`
	Message      ChatAnswerMessage `json:"message"`
	FinishReason string            `json:"finish_reason"`
	Logprobs     json.RawMessage   `json:"logprobs"` // null from Baton; any value from an upstream
}

// ChatCompletion is a chat.completion. Usage is nil when an upstream sent
// none.
type ChatCompletion struct {
	ID      string              `json:"id"`
	Object  gateway.LooseString `json:"object"`
	Created gateway.LooseInt    `json:"created"`
	Model   string              `json:"model"`
	Choices []ChatChoice        `json:"choices"`
	Usage   *ChatUsage          `json:"usage"`
	// ServiceTier is the tier OpenAI served the call at, read for
	// billing; Baton's answers leave it out.
	ServiceTier gateway.LooseString `json:"service_tier,omitempty"`
	Svc         any                 `json:"svc"` // Baton's own part of the answer
}

// ChatToolCallDelta is a streamed tool call: a call's first delta has its
// id, type and name, later ones only the index and more arguments. The
// fields are in the order of their names, so that the front writes what
// it wrote when these were maps; ID and Name are pointers so that a first
// delta with an empty one still carries it.
type ChatToolCallDelta struct {
	Function struct {
		Arguments string  `json:"arguments"`
		Name      *string `json:"name,omitempty"`
	} `json:"function"`
	ID    *string             `json:"id,omitempty"`
	Index int                 `json:"index"`
	Type  gateway.LooseString `json:"type,omitempty"`
}

// ChatDelta is a chunk's delta.
type ChatDelta struct {
	Role             gateway.LooseString `json:"role,omitempty"`
	ReasoningContent gateway.LooseString `json:"reasoning_content,omitempty"`
	Content          *string             `json:"content,omitempty"`
	Refusal          *string             `json:"refusal,omitempty"`
	ToolCalls        []ChatToolCallDelta `json:"tool_calls,omitempty"`
	Reasoning        json.RawMessage     `json:"reasoning,omitempty"` // read, never written: see ChatAnswerMessage
}

// ChatChunkChoice is a chat.completion.chunk's choice.
type ChatChunkChoice struct {
	Index        gateway.LooseInt `json:"index"`
	Delta        ChatDelta        `json:"delta"`
	FinishReason *string          `json:"finish_reason"`
	// Logprobs is null from Baton, any value from an upstream; an
	// interface, as a nil one encodes without the allocation a raw
	// message costs on every delta.
	Logprobs any `json:"logprobs"`
}

// NewChatChunk is a chat.completion.chunk of a call: its id, model and
// start, and the choices.
func NewChatChunk(id, model string, created int64, choices []ChatChunkChoice) *ChatChunk {
	return &ChatChunk{ID: gateway.LooseString(id), Object: "chat.completion.chunk", Created: gateway.LooseInt(created),
		Model: gateway.LooseString(model), Choices: choices}
}

// UsageChunk is the chunk that reports a stream's usage
// (stream_options.include_usage): no choices, the usage.
func UsageChunk(id, model string, created int64, u ChatUsage) *ChatChunk {
	ch := NewChatChunk(id, model, created, []ChatChunkChoice{})
	ch.Usage = &u
	return ch
}

// APIError is OpenAI's error object: an error answer's (ErrorBody), and
// an error sent in a stream after its start (ChatChunk.Error). Its fields
// are in the order of their names, as the fronts wrote them as maps; param
// and code take any value from an upstream.
type APIError struct {
	Code    any    `json:"code"`
	Message string `json:"message"`
	Param   any    `json:"param"`
	Type    string `json:"type"`
}

// ModelList is the Models API's list, its models of type M: OpenAI's,
// which the adapter reads (M json.RawMessage: the models' ids,
// gateway.ModelIDs), and Baton's, which the models front writes. The
// adapter does not use object: it reads it loosely, as it ignored it
// before (a value that is not a string is "", not an error).
type ModelList[M any] struct {
	Object gateway.LooseString `json:"object"` // list
	Data   M                   `json:"data"`
}

// ErrorBody is an error answer's body.
type ErrorBody struct {
	Error APIError `json:"error"`
}

// ChatChunk is a chat.completion.chunk, or an in-stream error: an error
// chunk has nothing else, hence omitzero (the usage chunk's empty choices
// are not zero, and still written).
type ChatChunk struct {
	ID      gateway.LooseString `json:"id,omitzero"`
	Object  gateway.LooseString `json:"object,omitzero"`
	Created gateway.LooseInt    `json:"created,omitzero"`
	Model   gateway.LooseString `json:"model,omitzero"`
	Choices []ChatChunkChoice   `json:"choices,omitzero"`
	Usage   *ChatUsage          `json:"usage,omitempty"`
	// ServiceTier is as ChatCompletion's.
	ServiceTier gateway.LooseString `json:"service_tier,omitempty"`
	Svc         any                 `json:"svc,omitempty"`
	Error       *APIError           `json:"error,omitempty"` // some servers send errors in-stream
}

// stringOrNil is a raw value's string, or nil for any other JSON value.
func stringOrNil(raw json.RawMessage) *string {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return &s
	}
	return nil
}
