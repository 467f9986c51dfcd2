package anthropic

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/batonhq/baton/gateway"
)

// The Messages API's answer and stream events, one type each: the adapter
// decodes an upstream's with them and the messages front encodes Baton's.
// Decoding ignores unknown fields; encoding omits what Baton does not set,
// so each event has the keys Anthropic's has.

// Message is a whole answer, and message_start's message.
type Message struct {
	ID    string              `json:"id"`
	Type  string              `json:"type"`
	Role  gateway.LooseString `json:"role"` // not read from an upstream
	Model string              `json:"model"`
	// Provider is Baton's: the provider that answered (not read from an
	// upstream).
	Provider gateway.LooseString `json:"provider,omitempty"`
	Content  []gateway.Block     `json:"content"`
	// StopReason is null in message_start.
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	// Usage is nil when an upstream sent none (Baton counts the tokens).
	Usage *MessagesUsage `json:"usage"`
	// Svc is Baton's trace of the call.
	Svc any `json:"svc,omitempty"`
}

// MessagesUsage is a message's usage: Anthropic's counts and, on Baton's
// answers, the estimated cost and whether Baton counted the tokens.
type MessagesUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	// CacheCreation splits the cache writes by lifetime: Anthropic bills
	// the 1-hour ones at a higher rate. Baton's answers have it when some
	// writes were 1-hour ones.
	CacheCreation *CacheCreation `json:"cache_creation,omitempty"`
	// ServerToolUse counts the server tools' billed uses.
	ServerToolUse *ServerToolUse `json:"server_tool_use,omitempty"`
	// Cost is three-valued: no key (an upstream's usage, message_start's),
	// null (an unpriced model), or the cost in USD.
	Cost      **float64 `json:"estimated_cost_usd,omitempty"`
	Estimated bool      `json:"estimated,omitempty"`
	// Speed is the speed an answer was served at (fast mode is billed at
	// its own rate); Baton's own answers leave it out.
	Speed string `json:"speed,omitempty"`
	// InferenceGeo is where the answer's inference ran (billed at its
	// rate); Baton's own answers leave it out.
	InferenceGeo string `json:"inference_geo,omitempty"`
}

// UnmarshalJSON reads an upstream's usage, its counts taken in any form of
// an integer (1200.0), as the passthrough reads them: such an answer was a
// 502, its call recorded free.
func (u *MessagesUsage) UnmarshalJSON(b []byte) error {
	type plain MessagesUsage // without this method
	var in struct {
		*plain
		// Shallower than plain's fields of the same names: these win.
		InputTokens              gateway.Count `json:"input_tokens"`
		OutputTokens             gateway.Count `json:"output_tokens"`
		CacheReadInputTokens     gateway.Count `json:"cache_read_input_tokens"`
		CacheCreationInputTokens gateway.Count `json:"cache_creation_input_tokens"`
		CacheCreation            *struct {
			Ephemeral5mInputTokens gateway.Count `json:"ephemeral_5m_input_tokens"`
			Ephemeral1hInputTokens gateway.Count `json:"ephemeral_1h_input_tokens"`
		} `json:"cache_creation"`
		ServerToolUse *struct {
			WebSearchRequests gateway.Count `json:"web_search_requests"`
		} `json:"server_tool_use"`
	}
	in.plain = (*plain)(u)
	err := json.Unmarshal(b, &in)
	if ute, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		// Named as the upstream's JSON has it, not through the Go type above.
		ute.Field = strings.TrimPrefix(ute.Field, "plain.")
	}
	u.InputTokens, u.OutputTokens = int(in.InputTokens), int(in.OutputTokens)
	u.CacheReadInputTokens, u.CacheCreationInputTokens = int(in.CacheReadInputTokens), int(in.CacheCreationInputTokens)
	u.CacheCreation, u.ServerToolUse = nil, nil
	if c := in.CacheCreation; c != nil {
		u.CacheCreation = &CacheCreation{Ephemeral5mInputTokens: int(c.Ephemeral5mInputTokens), Ephemeral1hInputTokens: int(c.Ephemeral1hInputTokens)}
	}
	if t := in.ServerToolUse; t != nil {
		u.ServerToolUse = &ServerToolUse{WebSearchRequests: int(t.WebSearchRequests)}
	}
	return err
}

// ServerToolUse is usage.server_tool_use: what the server tools ran.
type ServerToolUse struct {
	WebSearchRequests int `json:"web_search_requests"`
}

// serverToolUse is the part of u an answer tells: nil when no search ran.
func serverToolUse(u gateway.Usage) *ServerToolUse {
	if u.WebSearches <= 0 {
		return nil
	}
	return &ServerToolUse{WebSearchRequests: u.WebSearches}
}

// CacheCreation is usage.cache_creation: the cache writes of each lifetime.
type CacheCreation struct {
	Ephemeral5mInputTokens int `json:"ephemeral_5m_input_tokens"`
	Ephemeral1hInputTokens int `json:"ephemeral_1h_input_tokens"`
}

// usage is the gateway's usage. Negative counts are dropped: they would
// lower the tenant's spending.
func (u *MessagesUsage) usage() gateway.Usage {
	out := gateway.Usage{InputTokens: max(u.InputTokens, 0), OutputTokens: max(u.OutputTokens, 0),
		CacheReadTokens: max(u.CacheReadInputTokens, 0), CacheWriteTokens: max(u.CacheCreationInputTokens, 0)}
	if u.CacheCreation != nil {
		out.CacheWrite1hTokens = u.CacheCreation.Ephemeral1hInputTokens
		out.CacheWrite1hTokens = out.OneHourWrites()
	}
	if u.ServerToolUse != nil {
		out.WebSearches = max(u.ServerToolUse.WebSearchRequests, 0)
	}
	out.ServiceTier = speedTier(u.Speed)
	out.Geo = gateway.GeoName(u.InferenceGeo)
	return out
}

// cacheCreation is the split of u's cache writes an answer tells: nil
// when none of them were 1-hour ones.
func cacheCreation(u gateway.Usage) *CacheCreation {
	oneHour := u.OneHourWrites()
	if oneHour == 0 {
		return nil
	}
	return &CacheCreation{Ephemeral5mInputTokens: u.CacheWriteTokens - oneHour, Ephemeral1hInputTokens: oneHour}
}

// Event is a stream event's data. Baton builds message_start,
// message_delta and error with it (MessageStart, MessageDelta,
// ErrorEvent); its content block events are Blocks'.
type Event struct {
	Type string `json:"type"`
	// Index is a content block's; omitted at 0 when encoded, as none of
	// the events Baton encodes with Event has one.
	Index        int            `json:"index,omitempty"`
	Message      *Message       `json:"message,omitempty"`
	ContentBlock *gateway.Block `json:"content_block,omitempty"`
	Delta        *EventDelta    `json:"delta,omitempty"`
	Usage        *MessagesUsage `json:"usage,omitempty"`
	Error        *EventError    `json:"error,omitempty"`
	// Svc is Baton's trace, on its message_delta.
	Svc any `json:"svc,omitempty"`
}

// EventDelta is a content block's delta (typed) or message_delta's (the
// stop, untyped: the only one Baton encodes).
type EventDelta struct {
	Type         string  `json:"type,omitempty"`
	Text         string  `json:"text,omitempty"`
	Thinking     string  `json:"thinking,omitempty"`
	Signature    string  `json:"signature,omitempty"`
	PartialJSON  string  `json:"partial_json,omitempty"`
	StopReason   string  `json:"stop_reason,omitempty"`
	StopSequence *string `json:"stop_sequence"`
}

// ErrorBody is an error answer's body; its error is an error event's, its
// keys in Anthropic's order (type, then message). The body's own keys are
// in the order of their names (error, request_id, type), as the map it
// replaced wrote them; Anthropic's begin with type.
type ErrorBody struct {
	Error     EventError `json:"error"`
	RequestID string     `json:"request_id"`
	Type      string     `json:"type"` // error
}

// EventError is an error event's error (and an error answer's).
type EventError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// ModelPage is a page of the Models API's list, its models of type M:
// Anthropic's, which the adapter reads (M json.RawMessage: the models'
// ids, gateway.ModelIDs), and Baton's, which the models front writes. The
// first and last ids are null on an empty page. The adapter does not use
// first_id: it reads it loosely, as it ignored it before (a value that is
// not a string is "", not an error).
type ModelPage[M any] struct {
	Data    M                    `json:"data"`
	FirstID *gateway.LooseString `json:"first_id"`
	HasMore bool                 `json:"has_more"`
	LastID  *string              `json:"last_id"`
}

// Metadata is a request's metadata: the end user, which the adapter sends
// and the messages front reads.
type Metadata struct {
	UserID string `json:"user_id"`
}

// Events with nothing variable in them, written as they are.
const (
	PingEvent        = `{"type":"ping"}`
	MessageStopEvent = `{"type":"message_stop"}`
)
