package openai

import (
	"encoding/json"
	"math"
	"strconv"

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
	}
	in.billed = (*billed)(u)
	return json.Unmarshal(b, &in)
}

// Usage converts an upstream's counts, where prompt tokens include cached
// ones.
func (u *ChatUsage) Usage() gateway.Usage {
	prompt := max(u.PromptTokens, 0) // a negative count would lower the tenant's spending
	cached := min(max(u.PromptTokensDetails.CachedTokens, 0), prompt)
	written := min(max(u.PromptTokensDetails.CacheWriteTokens, 0), prompt-cached) // billed at the cache-write rate where a model has one
	return gateway.Usage{InputTokens: prompt - cached - written, OutputTokens: max(u.CompletionTokens, 0), CacheReadTokens: cached, CacheWriteTokens: written}
}

// ChatTime is an answer's created time in Unix seconds. It decodes any
// JSON value, a float truncated and anything else as 0: some compatible
// servers send fractional seconds (SambaNova) or strings, and the adapter
// does not read it. It encodes as the integer it is.
type ChatTime int64

func (t *ChatTime) UnmarshalJSON(b []byte) error {
	*t = 0
	if f, err := strconv.ParseFloat(string(b), 64); err == nil && f > math.MinInt64 && f < math.MaxInt64 {
		*t = ChatTime(f)
	}
	return nil
}

// ChatAnswerMessage is the message of a chat.completion.
type ChatAnswerMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	Refusal   *string        `json:"refusal"`
	ToolCalls []ChatToolCall `json:"tool_calls,omitempty"`
	// ReasoningContent is the model's thinking text, where the provider
	// returns it (Anthropic; DeepSeek and vLLM send it too); OpenAI's chat
	// has no field for it.
	ReasoningContent *string `json:"reasoning_content,omitempty"`
	// Reasoning is the same text as other compatible servers name it
	// (OpenRouter, later vLLM): read, never written. Raw, as its shape is
	// theirs.
	Reasoning json.RawMessage `json:"reasoning,omitempty"`
}

// thinkingText is a message's or delta's thinking text, under either name.
func thinkingText(content *string, reasoning json.RawMessage) string {
	if content != nil && *content != "" {
		return *content
	}
	var s string
	if len(reasoning) > 0 && reasoning[0] == '"' && json.Unmarshal(reasoning, &s) == nil {
		return s
	}
	return ""
}

// ChatChoice is a chat.completion's choice; Baton answers one.
type ChatChoice struct {
	Index        int               `json:"index"`
	Message      ChatAnswerMessage `json:"message"`
	FinishReason string            `json:"finish_reason"`
	Logprobs     json.RawMessage   `json:"logprobs"` // null from Baton; any value from an upstream
}

// ChatCompletion is a chat.completion. Usage is nil when an upstream sent
// none.
type ChatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created ChatTime     `json:"created"`
	Model   string       `json:"model"`
	Choices []ChatChoice `json:"choices"`
	Usage   *ChatUsage   `json:"usage"`
	Svc     any          `json:"svc"` // Baton's own part of the answer
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
	ID    *string `json:"id,omitempty"`
	Index int     `json:"index"`
	Type  string  `json:"type,omitempty"`
}

// ChatDelta is a chunk's delta.
type ChatDelta struct {
	Role             string              `json:"role,omitempty"`
	ReasoningContent *string             `json:"reasoning_content,omitempty"`
	Content          *string             `json:"content,omitempty"`
	Refusal          *string             `json:"refusal,omitempty"`
	ToolCalls        []ChatToolCallDelta `json:"tool_calls,omitempty"`
	Reasoning        json.RawMessage     `json:"reasoning,omitempty"` // read, never written: see ChatAnswerMessage
}

// ChatChunkChoice is a chat.completion.chunk's choice.
type ChatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        ChatDelta `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
	// Logprobs is null from Baton, any value from an upstream; an
	// interface, as a nil one encodes without the allocation a raw
	// message costs on every delta.
	Logprobs any `json:"logprobs"`
}

// ChatStreamError is an error sent in a stream, after its start. Its
// fields are in the order of their names, as the front wrote them as a
// map; param and code take any value from an upstream.
type ChatStreamError struct {
	Code    any    `json:"code"`
	Message string `json:"message"`
	Param   any    `json:"param"`
	Type    string `json:"type"`
}

// ChatChunk is a chat.completion.chunk, or an in-stream error: an error
// chunk has nothing else, hence omitzero (the usage chunk's empty choices
// are not zero, and still written).
type ChatChunk struct {
	ID      string            `json:"id,omitzero"`
	Object  string            `json:"object,omitzero"`
	Created ChatTime          `json:"created,omitzero"`
	Model   string            `json:"model,omitzero"`
	Choices []ChatChunkChoice `json:"choices,omitzero"`
	Usage   *ChatUsage        `json:"usage,omitempty"`
	Svc     any               `json:"svc,omitempty"`
	Error   *ChatStreamError  `json:"error,omitempty"` // some servers send errors in-stream
}

// Decoding an upstream's answer reads the fields Baton does not use (an
// object name, an index, a role, a tool call's type) whatever their JSON
// type, as the adapter's own types did before the fronts' were shared: a
// compatible server's odd value there must not fail an answer. Each
// method below decodes the type as it is but for those fields, taken raw.

// looseString is a raw value's string, or "" for any other JSON value.
func looseString(raw json.RawMessage) string {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// looseText is looseString for a field that may be absent: nil unless a
// string.
func looseText(raw json.RawMessage) *string {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return &s
	}
	return nil
}

// looseIndex is a raw value's integer, or 0.
func looseIndex(raw json.RawMessage) int {
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n
	}
	return 0
}

func (c *ChatCompletion) UnmarshalJSON(b []byte) error {
	type plain ChatCompletion
	var in struct {
		*plain
		Object json.RawMessage `json:"object"`
	}
	in.plain = (*plain)(c)
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	c.Object = looseString(in.Object)
	return nil
}

func (c *ChatChoice) UnmarshalJSON(b []byte) error {
	type plain ChatChoice
	var in struct {
		*plain
		Index json.RawMessage `json:"index"`
	}
	in.plain = (*plain)(c)
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	c.Index = looseIndex(in.Index)
	return nil
}

func (m *ChatAnswerMessage) UnmarshalJSON(b []byte) error {
	type plain ChatAnswerMessage
	var in struct {
		*plain
		Role             json.RawMessage `json:"role"`
		ReasoningContent json.RawMessage `json:"reasoning_content"`
	}
	in.plain = (*plain)(m)
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	m.Role, m.ReasoningContent = looseString(in.Role), looseText(in.ReasoningContent)
	return nil
}

func (c *ChatChunk) UnmarshalJSON(b []byte) error {
	type plain ChatChunk
	var in struct {
		*plain
		ID     json.RawMessage `json:"id"`
		Object json.RawMessage `json:"object"`
		Model  json.RawMessage `json:"model"`
	}
	in.plain = (*plain)(c)
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	c.ID, c.Object, c.Model = looseString(in.ID), looseString(in.Object), looseString(in.Model)
	return nil
}

func (c *ChatChunkChoice) UnmarshalJSON(b []byte) error {
	type plain ChatChunkChoice
	var in struct {
		*plain
		Index json.RawMessage `json:"index"`
	}
	in.plain = (*plain)(c)
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	c.Index = looseIndex(in.Index)
	return nil
}

func (d *ChatDelta) UnmarshalJSON(b []byte) error {
	type plain ChatDelta
	var in struct {
		*plain
		Role             json.RawMessage `json:"role"`
		ReasoningContent json.RawMessage `json:"reasoning_content"`
	}
	in.plain = (*plain)(d)
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	d.Role, d.ReasoningContent = looseString(in.Role), looseText(in.ReasoningContent)
	return nil
}

func (t *ChatToolCallDelta) UnmarshalJSON(b []byte) error {
	type plain ChatToolCallDelta
	var in struct {
		*plain
		Type json.RawMessage `json:"type"`
	}
	in.plain = (*plain)(t)
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	t.Type = looseString(in.Type)
	return nil
}
