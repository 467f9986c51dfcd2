// Package gateway routes model calls to providers: the catalog, pricing,
// provider adapters (OpenAI, Anthropic, any OpenAI-compatible server, and
// the offline local development provider), usage and cost.
//
// Every front (OpenAI chat completions and Responses, Anthropic messages) is
// decoded into one request shape here, so any front reaches any provider.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/batonhq/baton/domain"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string  // user or assistant
	Content []Block // text, image, tool_use, tool_result, thinking
}

// Block is a piece of message content.
type Block struct {
	Type  string          `json:"type"` // text, image, tool_use, tool_result, thinking
	Text  string          `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`    // tool_use id
	Name  string          `json:"name,omitempty"`  // tool_use name
	Input json.RawMessage `json:"input,omitempty"` // tool_use arguments
	// RawArgs are a tool call's arguments as an OpenAI-shaped model wrote
	// them when they are not a JSON object (Input is then {}): passed on
	// as written where arguments are text, never silently dropped.
	RawArgs   string `json:"rawArgs,omitempty"`
	ToolUseID string `json:"tool_use_id,omitempty"`
	// An image is either Data (base64) of MediaType, or a URL the
	// provider fetches.
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
	// A thinking block: the model's reasoning and Anthropic's signature
	// over it (which Anthropic needs back in later turns).
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	// Parts is a tool result's content in order, when it holds an image
	// (a Responses function_call_output's): text and image blocks. Text
	// then holds the text parts joined.
	Parts []Block `json:"parts,omitempty"`
}

// images sums cost over the images b is or holds (a tool result's).
func (b Block) images(cost func(Block) int) int {
	n := 0
	if b.Type == "image" {
		n += cost(b)
	}
	for _, p := range b.Parts {
		if p.Type == "image" {
			n += cost(p)
		}
	}
	return n
}

// ImageTokens bounds the tokens one image costs as input: both providers
// scale an image down to a bounded size first (about 1,600 tokens for
// Anthropic, at most a few thousand for OpenAI's patch-based models).
// Budgets and routing count it, not the image's bytes.
const ImageTokens = 5000

// Tool is a function the model may call.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"input_schema,omitempty"`
	// Strict: the call's input must follow Schema exactly (Anthropic's
	// strict tool use; OpenAI's function.strict).
	Strict bool `json:"strict,omitempty"`
}

// OpenAISampling is OpenAI's sampling controls, as the chat completions
// request names them: OpenAI-shaped upstreams get them as sent, Anthropic
// has none and does without them.
type OpenAISampling struct {
	Seed             *int            `json:"seed,omitempty"`
	PresencePenalty  *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64        `json:"frequency_penalty,omitempty"`
	LogitBias        json.RawMessage `json:"logit_bias,omitempty"`
	ReasoningEffort  string          `json:"reasoning_effort,omitempty"`
}

// Request is a model call in the gateway's own terms.
type Request struct {
	Model     string // the model name within its provider
	System    string
	Messages  []Message
	MaxTokens int
	// CapParam is the field that set MaxTokens when it is not the front's
	// usual one (chat's max_completion_tokens): a refusal asking for a
	// lower cap names what the client sent.
	CapParam      string
	Temperature   *float64
	TopP          *float64
	StopSequences []string
	Tools         []Tool
	// User is the caller's end-user id: OpenAI's user, Anthropic's
	// metadata.user_id.
	User string
	// TopK is Anthropic's; OpenAI-shaped upstreams have none and do
	// without it.
	TopK *int
	OpenAISampling
	// Output asks for structured output: a JSON object that validates
	// against a schema. Adapters ask natively where the provider can (an
	// OpenAI json_schema response format, an Anthropic forced tool); the
	// answer's text is then the JSON.
	Output *OutputSchema
	// JSONObject asks for one JSON object with no schema (OpenAI's
	// json_object response format; for Anthropic, an instruction).
	JSONObject bool
	// NeedsJSON: the client requires JSON output (a response format), so a
	// mode routes only to models that support it.
	NeedsJSON bool
	// Thinking is Anthropic's thinking parameter as a messages client
	// sent it, and Effort its output_config.effort; an Anthropic upstream
	// gets them as they are. An OpenAI-shaped upstream gets
	// ReasoningEffort, which the messages front derives from them
	// (ReasoningFromThinking); from a chat client, ReasoningEffort alone,
	// which the Anthropic adapter turns into thinking.
	Thinking *Thinking
	Effort   string
	// ToolChoice says whether and which tool the model must call; nil
	// leaves it to the provider's default (auto when tools are offered).
	ToolChoice *ToolChoice
	// Choices is how many answers a passed-through chat request asks for
	// (OpenAI's n; 0 is one): each is billed its output, so the output's
	// bound counts each.
	Choices int
	// ServiceTier is the capacity tier a passed-through OpenAI-shaped
	// request asks for (service_tier), billed at its rate
	// (Price.TierRate); one the price has no rate for is unpriced
	// (UnpricedTier).
	ServiceTier string
	// Geo is the geography a passed-through Messages request asks its
	// inference to run in (Anthropic's inference_geo; "" and global: any),
	// billed at its rate (Price.GeoRate); one the price has no rate for is
	// unpriced.
	Geo string
	// WebSearches is the most searches a passed-through request's web
	// search tools may run (on Messages the sum of their max_uses, on
	// Responses its max_tool_calls), which its hold counts at
	// Price.WebSearchPerK; without that bound the searches are not
	// bounded, and add nothing.
	WebSearches int
	// FileSearches is the most calls a passed-through Responses request's
	// file search tool may make (its max_tool_calls, which bounds every
	// built-in tool's calls together: the hold counts the dearer of these
	// and WebSearches, not their sum), counted at Price.FileSearchPerK.
	FileSearches int
	// SearchPreview: a passed-through Responses request offers OpenAI's
	// legacy web_search_preview tool, whose searches cost
	// Price.WebSearchPreviewPerK where the price has it.
	SearchPreview bool
	// Body is a body passed through rather than decoded (Messages and
	// Tools then hold only what routing needs): its size bounds the input,
	// and its text is what an estimate of the input counts.
	Body []byte
	// OutputLimit is the model's declared most output in one answer
	// (Model.MaxOutputTokens; 0: not declared), and Streamed whether the
	// call streams: a kind whose wire requires a cap sends, for a request
	// that sets none, what these allow (anthropic.MaxTokens). The Caller
	// sets both for each attempt.
	OutputLimit int
	Streamed    bool
	// Prefill: the conversation ends with an assistant turn that the
	// model is to continue (Anthropic's prefill, set by the messages
	// front); from an OpenAI-shaped front such a turn is a finished one,
	// which the model answers after.
	Prefill bool `json:"prefill,omitempty"`
}

// HeldCap is the request's cap as a translating adapter sends it: held
// to the model's declared most output, past which the provider refuses
// the call (Claude Code asks 32,000 of any model; gpt-4o writes at most
// 16,384). A cap cuts the answer short at most, so the lower one means
// the same. 0: no cap.
func (r Request) HeldCap() int {
	if r.MaxTokens > 0 && r.OutputLimit > 0 && r.MaxTokens > r.OutputLimit {
		return r.OutputLimit
	}
	return r.MaxTokens
}

// Thinking is Anthropic's thinking parameter.
type Thinking struct {
	Type         string `json:"type"` // enabled, adaptive or disabled
	BudgetTokens int    `json:"budget_tokens,omitempty"`
	// Display is Anthropic's thinking.display: omitted asks for no
	// thinking text in the answer; any other value shows what the
	// provider returns.
	Display string `json:"display,omitempty"`
}

// OmitsThinking reports whether a request asked for no thinking text in
// its answer (thinking.display omitted).
func (r Request) OmitsThinking() bool {
	return r.Thinking != nil && r.Thinking.Display == "omitted"
}

// Tool choice modes, in Anthropic's vocabulary (OpenAI: auto, required,
// a named function, none).
const (
	ToolChoiceAuto = "auto"
	ToolChoiceAny  = "any"
	ToolChoiceTool = "tool"
	ToolChoiceNone = "none"
)

// ToolChoice is a request's tool choice. An empty Mode leaves the choice to
// the provider's default and says only DisableParallel (OpenAI's
// parallel_tool_calls: false without a tool_choice). Adapters send no tool
// choice with no tools: both providers refuse one.
type ToolChoice struct {
	Mode            string // ToolChoice*, or "" (unspecified)
	Name            string // the tool, with ToolChoiceTool
	DisableParallel bool   // at most one tool call
}

// JSONObjectInstruction asks a model without a JSON mode for one object.
const JSONObjectInstruction = "Answer with a single JSON object and nothing else: no prose, no code fences."

// OutputSchema names a JSON Schema for structured output.
type OutputSchema struct {
	Name        string          // letters, digits, '_' and '-'
	Schema      json.RawMessage // a JSON Schema whose root is an object
	Description string          // what the output is, for the model (optional)
	Strict      bool            // OpenAI's strict schema adherence, when the client asked for it
}

// Stop reasons, in Anthropic's vocabulary (the OpenAI front maps them).
const (
	StopEndTurn      = "end_turn"
	StopMaxTokens    = "max_tokens"
	StopSequence     = "stop_sequence"
	StopToolUse      = "tool_use"
	StopRefusal      = "refusal"    // OpenAI: content_filter
	StopPauseTurn    = "pause_turn" // Anthropic: a long turn paused, to be continued
	StopUnknownValue = "unknown"
)

// StopFromAnthropic is the canonical stop reason for an Anthropic one.
func StopFromAnthropic(sr string) string {
	switch sr {
	case StopEndTurn, StopMaxTokens, StopSequence, StopToolUse, StopRefusal, StopPauseTurn, "":
		return sr
	case "model_context_window_exceeded":
		return StopMaxTokens
	}
	return StopUnknownValue
}

// Usage counts tokens the way Anthropic reports them: InputTokens excludes
// cache reads and writes, which are counted apart.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_input_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_creation_input_tokens,omitempty"`
	// CacheWrite1hTokens is the part of CacheWriteTokens written with a
	// one-hour lifetime (Anthropic's usage.cache_creation
	// .ephemeral_1h_input_tokens), billed at the price's 1-hour rate;
	// never more than CacheWriteTokens, which stays the whole of the
	// writes (5-minute and 1-hour).
	CacheWrite1hTokens int `json:"cache_creation_1h_input_tokens,omitempty"`
	// Estimated: the upstream reported no usage, so Baton counted the
	// tokens itself (see EstimateUsage) and billed that count.
	Estimated bool `json:"estimated,omitempty"`
	// ServiceTier is the capacity tier OpenAI says it served the call at
	// (the answer's service_tier), when it says: CostOf bills it.
	ServiceTier string `json:"service_tier,omitempty"`
	// WebSearches is the searches the provider's web search tool ran for
	// the call (Anthropic's usage.server_tool_use.web_search_requests; the
	// search actions of an OpenAI response's web_search_call items),
	// billed per search on top of the tokens (Price.WebSearchPerK).
	WebSearches int `json:"web_search_requests,omitempty"`
	// FileSearches is the calls of OpenAI's file search tool an answer
	// made (its file_search_call items), billed per call on top of the
	// tokens (Price.FileSearchPerK).
	FileSearches int `json:"file_search_calls,omitempty"`
	// Geo is where the provider says the call ran (Anthropic's
	// usage.inference_geo), when it says: CostOf bills its rate.
	Geo string `json:"inference_geo,omitempty"`
}

// OneHourWrites is the 1-hour part of the cache writes as billed: negative
// is 0, and it is never more than the writes (the total is what the
// provider bills; the part only moves some of it to the 1-hour rate).
func (u Usage) OneHourWrites() int {
	return min(max(u.CacheWrite1hTokens, 0), max(u.CacheWriteTokens, 0))
}

// Response is a finished model call.
type Response struct {
	ID         string
	Model      string
	Content    []Block
	StopReason string // canonical, see Stop*
	NativeStop string // what the provider said
	// Refusal is the model's refusal message, when the provider gives it
	// apart from the content (OpenAI's message.refusal).
	Refusal string `json:",omitempty"`
	// MatchedStop is the stop sequence that ended the answer, when the
	// provider says which (Anthropic does; OpenAI does not).
	MatchedStop string `json:",omitempty"`
	Usage       Usage
	// UsageMissing: the upstream's answer carried no usage (some
	// OpenAI-compatible servers omit it); Usage is then zero.
	UsageMissing bool
	// Raw is the upstream's answer as it was sent (passthrough).
	Raw []byte `json:"-"`
}

// Text joins the text blocks.
func (r *Response) Text() string {
	s := ""
	for _, b := range r.Content {
		if b.Type == "text" {
			s += b.Text
		}
	}
	return s
}

// ToolCallDelta is a streamed piece of a tool call: the first piece of a
// call carries its ID and Name, later ones fragments of its JSON arguments.
type ToolCallDelta struct {
	Index     int // the call's position among this answer's tool calls, from 0
	ID        string
	Name      string
	Arguments string // a fragment of the arguments' JSON text
}

// Delta is one streamed event.
type Delta struct {
	Text        string         // text appended to the current text block
	Thinking    string         `json:",omitempty"` // reasoning text appended to the current thinking block
	Signature   string         `json:",omitempty"` // the current thinking block's signature (Anthropic)
	Redacted    string         `json:",omitempty"` // a redacted thinking block's data, whole (Anthropic)
	Refusal     string         `json:",omitempty"` // a piece of the model's refusal (OpenAI's delta.refusal)
	ToolCall    *ToolCallDelta // a piece of a tool call
	StopReason  string         // set on the last delta
	NativeStop  string
	MatchedStop string `json:",omitempty"` // with StopReason: the stop sequence hit, when known
	Usage       *Usage // cumulative usage when the provider reports it (alone: usage so far, e.g. the input side at the start)
	// ServiceTier is the capacity tier the event says the call is served
	// at (OpenAI's chunks and responses carry it), for billing.
	ServiceTier string `json:",omitempty"`
	// Raw is the upstream's event as it was sent (a passthrough stream's
	// deltas), to be forwarded as it is; the fields above then summarize
	// it for billing and fallback.
	Raw []byte `json:"-"`
	// Event is a passed-through event's name (Anthropic's event: line).
	Event string `json:"-"`
	// Commit: the event carries something the client must see, though no
	// field above says so (a thinking block, a passthrough event).
	Commit bool `json:"-"`
	// WebSearch: the event holds a web search's results (Anthropic's
	// web_search_tool_result, an error not counting): billed when the
	// stream ends before its usage says how many ran.
	WebSearch bool `json:"-"`
	// FileSearch: the event is an OpenAI file search call done, billed
	// when the stream ends before its usage.
	FileSearch bool `json:"-"`
	// EndedCall is 1 + the index of a tool call whose arguments are whole
	// (Anthropic's content_block_stop), 0 for none: a front may close it
	// before the answer ends.
	EndedCall int `json:",omitempty"`
	// KeepAlive: the upstream said it is there and nothing more (Anthropic's
	// ping while the model thinks): the idle limit starts again, and the
	// delta goes no further than the stream's reader.
	KeepAlive bool `json:"-"`
}

// Stream yields deltas; Next returns io.EOF after the last one.
type Stream interface {
	Next() (Delta, error)
	Close() error
}

// Buffered is a Stream that can tell that its next Next returns without
// waiting for the connection (the upstream's next event is already read
// in whole). A stream read on the caller's goroutine (Call.Direct) sends
// what the caller wrote only before a Next that may wait, so events that
// arrive together leave in one write; without it, before every Next.
type Buffered interface {
	Buffered() bool
}

// Provider is one upstream.
type Provider interface {
	Name() string
	Kind() string
	Configured() bool
	Complete(ctx context.Context, req Request) (*Response, error)
	Stream(ctx context.Context, req Request) (Stream, error)
	ListModels(ctx context.Context) ([]string, error)
}

// UpstreamError is a provider's refusal or failure, with what the fronts
// need to map it.
type UpstreamError struct {
	Provider string
	Status   int    // the upstream status, 0 for transport errors
	Type     string // the upstream error type, if any
	Message  string
	// Param and Code are OpenAI's error.param and error.code, when the
	// upstream gave them as strings (the field at fault, model_not_found).
	Param, Code string
	// AsSent: the request the upstream refused was the client's body as
	// it was sent (passthrough), so Param names a field of the client's
	// own request, not of one Baton translated it into.
	AsSent bool
	// OfAPI: the answer's body was an error of the provider's API (JSON
	// with error.message), not a page of some server at its address.
	OfAPI      bool
	RetryAfter string
	Timeout    bool
	// Bad: Baton's 502 for an answer that is not one (malformed, cut, an
	// error event mid-stream); the upstream's own status was a success.
	Bad bool
	// Served: the upstream answered a success whole, and it did not read
	// as an answer (a count of the wrong type, no choices): the provider
	// did the work and bills it, so the attempt is billed its input.
	Served bool
	// Usage is what the upstream said the failed call used (a Responses
	// stream's response.failed carries it): billed in place of Baton's
	// count. nil when it said nothing.
	Usage *Usage
	cause error // kept for logs, not shown to callers
}

// Unwrap exposes the transport cause to logs.
func (e *UpstreamError) Unwrap() error { return e.cause }

// MaxRetryAfter bounds the wait an upstream's Retry-After passes on to
// clients: a provider's nonsense (years, an overflow) must not park an SDK
// that honours it.
const MaxRetryAfter = time.Hour

// RetryAfterSeconds is the upstream's Retry-After (seconds, or an HTTP
// date, taken against now) in whole seconds, at most MaxRetryAfter; 0 when
// it sent none or one that does not parse.
func (e *UpstreamError) RetryAfterSeconds(now time.Time) int {
	d, ok := domain.ParseRetryAfter(e.RetryAfter, now)
	if !ok {
		return 0
	}
	return int(math.Ceil(min(d, MaxRetryAfter).Seconds()))
}

func (e *UpstreamError) Error() string {
	msg := e.Public()
	if e.cause != nil {
		msg += ": " + e.cause.Error()
	}
	return msg
}

// Public is the error as callers may see it: no transport internals.
func (e *UpstreamError) Public() string {
	if e.Status == 0 || e.Bad {
		return fmt.Sprintf("provider %s: %s", e.Provider, e.Message)
	}
	return fmt.Sprintf("provider %s answered %d: %s", e.Provider, e.Status, e.Message)
}

// Retryable reports whether another provider may take over: 429, 5xx,
// timeouts and connection errors.
func (e *UpstreamError) Retryable() bool {
	return e.Status == 0 || e.Status == 429 || e.Status >= 500
}

// ErrUnknownModel means the model id is not in the catalog.
var ErrUnknownModel = errors.New("gateway: unknown model")

// errAmbiguous marks an unknown model that is a bare name several
// providers list: refused, never sent to the front's own provider. Its
// text is empty, so the message reads as ErrUnknownModel's.
var errAmbiguous = errors.New("")

// DefaultTimeout bounds a whole non-streaming upstream call: as long as
// the official SDKs wait for one (10 minutes), since a reasoning model or
// a large max_tokens can take minutes; at 120 s such calls failed with 504
// and the SDKs ran them again twice.
const DefaultTimeout = 10 * time.Minute

// DefaultStreamIdle is the longest a streamed call waits between two
// deltas from its upstream: as long as the OpenAI SDKs wait for a whole
// call, so a model that thinks for minutes before its first token is not
// cut, while a stalled connection does not hold a stream (and its budget
// hold) forever.
const DefaultStreamIdle = 10 * time.Minute

// ToolArgs is a tool call's arguments as text: as the model wrote them
// when they are not JSON (RawArgs), else its input, {} when it has none.
func (b Block) ToolArgs() string {
	switch {
	case b.RawArgs != "":
		return b.RawArgs
	case len(b.Input) == 0:
		return "{}"
	}
	return string(b.Input)
}

// ToolCall is a tool_use block of arguments args, as text: Input when
// they are a JSON object ("" is none: {}), else RawArgs beside an empty
// Input.
func ToolCall(id, name, args string) Block {
	b := Block{Type: "tool_use", ID: id, Name: name, Input: json.RawMessage(args)}
	if t := strings.TrimSpace(args); t == "" {
		b.Input = json.RawMessage("{}")
	} else if !json.Valid([]byte(t)) || t[0] != '{' {
		b.Input, b.RawArgs = json.RawMessage("{}"), args
	}
	return b
}
