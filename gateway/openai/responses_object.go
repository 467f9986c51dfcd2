package openai

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/gateway"
)

// Response statuses.
const (
	ResponsesInProgress = "in_progress"
	ResponsesCompleted  = "completed"
	ResponsesIncomplete = "incomplete"
	ResponsesFailed     = "failed"
)

// ResponsesObject is a response as the Responses API answers it, with
// Baton's svc beside, as the other fronts add it.
type ResponsesObject struct {
	ID                 string                      `json:"id"`
	Object             string                      `json:"object"`
	CreatedAt          int64                       `json:"created_at"`
	CompletedAt        *int64                      `json:"completed_at"`
	Status             string                      `json:"status"`
	Error              *ResponsesError             `json:"error"`
	IncompleteDetails  *ResponsesIncompleteDetails `json:"incomplete_details"`
	Instructions       *string                     `json:"instructions"`
	MaxOutputTokens    *int                        `json:"max_output_tokens"`
	Model              string                      `json:"model"`
	Output             []any                       `json:"output"`
	ParallelToolCalls  bool                        `json:"parallel_tool_calls"`
	PreviousResponseID *string                     `json:"previous_response_id"`
	Reasoning          ResponsesReasoningOut       `json:"reasoning"`
	Store              bool                        `json:"store"`
	Temperature        *float64                    `json:"temperature"`
	Text               ResponsesTextOut            `json:"text"`
	ToolChoice         json.RawMessage             `json:"tool_choice"`
	Tools              []json.RawMessage           `json:"tools"`
	TopP               *float64                    `json:"top_p"`
	Truncation         string                      `json:"truncation"`
	Usage              *ResponsesUsage             `json:"usage"`
	User               *string                     `json:"user"`
	SafetyIdentifier   *string                     `json:"safety_identifier"`
	ServiceTier        *string                     `json:"service_tier"`
	MaxToolCalls       *int                        `json:"max_tool_calls"`
	PromptCacheKey     *string                     `json:"prompt_cache_key"`
	Metadata           map[string]string           `json:"metadata"`
	Svc                any                         `json:"svc,omitempty"`

	namespaced map[string]nsName // the request's namespaced functions, by flat name
}

// ResponsesReasoningOut is a response's reasoning options.
type ResponsesReasoningOut struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// ResponsesTextOut is a response's text options: the format asked for.
type ResponsesTextOut struct {
	Format ResponsesTextFormat `json:"format"`
}

// ResponsesError is a failed response's error.
type ResponsesError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ResponsesIncompleteDetails says why a response is incomplete:
// max_output_tokens or content_filter.
type ResponsesIncompleteDetails struct {
	Reason string `json:"reason"`
}

// ResponsesUsage is usage in the Responses convention, where input tokens
// include cached ones, with Baton's cost.
type ResponsesUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens      int      `json:"total_tokens"`
	Estimated        bool     `json:"estimated,omitempty"` // Baton counted the tokens (the upstream reported none)
	EstimatedCostUSD *float64 `json:"estimated_cost_usd"`  // null: the model has no price
}

// NewResponsesUsage converts the gateway's usage. The gateway counts no
// reasoning tokens apart: they are in the output tokens.
func NewResponsesUsage(u gateway.Usage, cost *float64) *ResponsesUsage {
	in := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	out := &ResponsesUsage{InputTokens: in, OutputTokens: u.OutputTokens, TotalTokens: in + u.OutputTokens, Estimated: u.Estimated, EstimatedCostUSD: cost}
	out.InputTokensDetails.CachedTokens = u.CacheReadTokens
	return out
}

// Output items and their content parts.
type (
	// ResponsesMessage is an output message item.
	ResponsesMessage struct {
		Type    string `json:"type"` // message
		ID      string `json:"id"`
		Status  string `json:"status"`
		Role    string `json:"role"`
		Content []any  `json:"content"` // ResponsesOutputText, ResponsesRefusal
	}
	// ResponsesOutputText is a message's text.
	ResponsesOutputText struct {
		Type        string `json:"type"` // output_text
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
		Logprobs    []any  `json:"logprobs"`
	}
	// ResponsesRefusal is a message's refusal.
	ResponsesRefusal struct {
		Type    string `json:"type"` // refusal
		Refusal string `json:"refusal"`
	}
	// ResponsesReasoning is a reasoning item: the provider's thinking as
	// its summary, and its signature as encrypted_content, so that the
	// item sent back is a thinking block again.
	ResponsesReasoningItem struct {
		Type             string             `json:"type"` // reasoning
		ID               string             `json:"id"`
		Summary          []ResponsesSummary `json:"summary"`
		EncryptedContent *string            `json:"encrypted_content,omitempty"`
	}
	// ResponsesSummary is a reasoning item's summary part.
	ResponsesSummary struct {
		Type string `json:"type"` // summary_text
		Text string `json:"text"`
	}
	// ResponsesFunctionCall is a function call item.
	ResponsesFunctionCall struct {
		Type      string `json:"type"` // function_call
		ID        string `json:"id"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Namespace string `json:"namespace,omitempty"` // the function's namespace tool, if any
		Arguments string `json:"arguments"`
		Status    string `json:"status"`
	}
)

func newOutputText(text string) ResponsesOutputText {
	return ResponsesOutputText{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}
}

// NewResponsesID is a new response id (resp_...).
func NewResponsesID() string { return "resp_" + hexID() }

func hexID() string { return strings.ReplaceAll(uuid.Must(uuid.NewV7()).String(), "-", "") }

// itemID names an output item after its response and its place in the
// output (msg_<the response id's hex>_<index>): a later request's
// item_reference to it finds the stored response it came from
// (ResponsesStore.ResolveReferences).
func (o *ResponsesObject) itemID(prefix string, at int) string {
	return prefix + strings.TrimPrefix(o.ID, "resp_") + "_" + strconv.Itoa(at)
}

// itemOrigin is the response and the place an item id of itemID's names.
func itemOrigin(id string) (response string, at int, ok bool) {
	_, rest, found := strings.Cut(id, "_")
	if !found || !slices.Contains([]string{"msg", "rs", "fc"}, id[:len(id)-len(rest)-1]) {
		return "", 0, false
	}
	hex, n, found := strings.Cut(rest, "_")
	if !found || len(hex) != 32 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", 0, false
	}
	at, err := strconv.Atoi(n)
	if err != nil || at < 0 || strconv.Itoa(at) != n {
		return "", 0, false
	}
	return "resp_" + hex, at, true
}

// inputItemOrigin is the response an id InputItems named for an input
// item names (<kind>_<the response id's hex>_in<n>).
func inputItemOrigin(id string) (response string, ok bool) {
	prefix, rest, found := strings.Cut(id, "_")
	if !found || prefix != "item" && !slices.Contains(slices.Collect(maps.Values(inputItemPrefix)), prefix) {
		return "", false
	}
	hex, n, found := strings.Cut(rest, "_")
	if !found || len(hex) != 32 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", false
	}
	at, err := strconv.Atoi(strings.TrimPrefix(n, "in"))
	if !strings.HasPrefix(n, "in") || err != nil || at < 0 || "in"+strconv.Itoa(at) != n {
		return "", false
	}
	return "resp_" + hex, true
}

// legacyReasoningID reports whether id is a reasoning item's as Baton named
// them before itemID: rs_ and a UUIDv7's 32 hex digits (hexID). A
// conversation begun then still carries them, in the client's input or in
// the store's history. OpenAI's are longer; another server's UUIDv4 is not
// a v7.
func legacyReasoningID(id string) bool {
	hex, ok := strings.CutPrefix(id, "rs_")
	return ok && len(hex) == 32 && strings.Trim(hex, "0123456789abcdef") == "" &&
		hex[12] == '7' && strings.IndexByte("89ab", hex[16]) >= 0
}

// ownReasoning reports whether a reasoning item sent back is one Baton
// answered (its encrypted_content the signature of the provider Baton
// translated for, Claude's) rather than OpenAI's own. By its id when it has
// one (itemID's, or legacyReasoningID's); a client may leave the id out (Codex sends none), and then
// by its encrypted_content: OpenAI's is a Fernet token, which begins
// gAAAAA (its version byte, then a timestamp's high bytes), and no
// signature Baton answered does.
func ownReasoning(id, encrypted string) bool {
	if id != "" {
		_, _, ours := itemOrigin(id)
		return ours || legacyReasoningID(id)
	}
	return encrypted != "" && !strings.HasPrefix(encrypted, "gAAAAA")
}

// Object is the response to the call as it begins: in progress, no output,
// the request's options echoed.
func (c *ResponsesCall) Object(id string, created time.Time, model string) *ResponsesObject {
	q := &c.Wire
	o := &ResponsesObject{ID: id, Object: "response", CreatedAt: created.Unix(), Status: ResponsesInProgress, Instructions: q.Instructions,
		MaxOutputTokens: q.MaxOutputTokens, Model: model, Output: []any{}, ParallelToolCalls: q.ParallelToolCalls == nil || *q.ParallelToolCalls,
		PreviousResponseID: q.PreviousResponseID, Store: q.StoreRequested(), Temperature: q.Temperature, ToolChoice: q.ToolChoice,
		Tools: c.Tools, TopP: q.TopP, Truncation: "disabled", Metadata: q.Metadata, namespaced: c.namespaced}
	if q.Reasoning != nil {
		o.Reasoning.Effort, o.Reasoning.Summary = q.Reasoning.Effort, q.Reasoning.Summary
		if o.Reasoning.Summary == nil {
			o.Reasoning.Summary = q.Reasoning.GenerateSummary
		}
	}
	o.Text.Format.Type = "text"
	if q.Text != nil && q.Text.Format != nil {
		o.Text.Format = *q.Text.Format
	}
	if gateway.Absent(o.ToolChoice) {
		o.ToolChoice = json.RawMessage(`"auto"`)
	}
	if o.Tools == nil {
		o.Tools = []json.RawMessage{}
	}
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	if u := c.Request.User; u != "" {
		o.User = &u
	}
	if q.SafetyIdentifier != "" {
		o.SafetyIdentifier = &q.SafetyIdentifier
	}
	if q.ServiceTier != nil {
		tier := "default" // auto or default, the tiers a translated call takes: served at the standard one
		o.ServiceTier = &tier
	}
	o.MaxToolCalls, o.PromptCacheKey = q.MaxToolCalls, q.PromptCacheKey
	return o
}

// statusOf is a finished response's status for the gateway's stop reason:
// cut at the token cap or by a content filter, it is incomplete.
func statusOf(stop string) (string, *ResponsesIncompleteDetails) {
	switch stop {
	case gateway.StopMaxTokens:
		return ResponsesIncomplete, &ResponsesIncompleteDetails{Reason: "max_output_tokens"}
	case gateway.StopRefusal:
		return ResponsesIncomplete, &ResponsesIncompleteDetails{Reason: "content_filter"}
	}
	return ResponsesCompleted, nil
}

// cutCall reports whether, in an answer cut at the token cap, the function
// call at of n output items was cut: the last item, or arguments that are
// not whole JSON. finish marks it so, and a stream's closeCalls the same.
func cutCall(at, n int, args string) bool { return at == n-1 || !json.Valid([]byte(args)) }

// finish sets what a finished response has: its status, output and usage.
func (o *ResponsesObject) finish(stop string, output []any, usage *ResponsesUsage, at time.Time) {
	o.Status, o.IncompleteDetails = statusOf(stop)
	if o.Status == ResponsesIncomplete {
		// The last message is the one that was cut, unless a function
		// call came after it; a call cut at the token cap (its arguments
		// not whole JSON) is incomplete too.
		for i := len(output) - 1; i >= 0; i-- {
			if m, ok := output[i].(ResponsesMessage); ok {
				m.Status = ResponsesIncomplete
				output[i] = m
				break
			}
			if _, ok := output[i].(ResponsesFunctionCall); ok && i == len(output)-1 {
				break // the call was cut: marked below
			}
		}
		for i, it := range output {
			if fc, ok := it.(ResponsesFunctionCall); ok && cutCall(i, len(output), fc.Arguments) {
				fc.Status = ResponsesIncomplete
				output[i] = fc
			}
		}
	}
	o.Output, o.Usage = output, usage
	done := at.Unix()
	o.CompletedAt = &done
}

// Complete fills the response from a finished call: a message of the
// text (the structured answer when text.format asked for one, whichever
// way the provider gave it) and the refusal, and a function_call item for
// each of the client's tool calls, in the order the model made them.
func (o *ResponsesObject) Complete(resp *gateway.Response, out *gateway.OutputSchema, usage *ResponsesUsage, at time.Time) {
	output := []any{}
	msgAt := -1 // the message being filled, -1 when none is
	part := func(p any) {
		if msgAt < 0 {
			output = append(output, ResponsesMessage{Type: "message", ID: o.itemID("msg_", len(output)), Status: ResponsesCompleted, Role: "assistant"})
			msgAt = len(output) - 1
		}
		m := output[msgAt].(ResponsesMessage)
		m.Content = append(m.Content, p)
		output[msgAt] = m
	}
	structured := out != nil && slices.ContainsFunc(resp.Content, func(b gateway.Block) bool {
		return b.Type == "tool_use" && b.Name == out.Name && len(b.Input) > 0
	})
	if structured {
		// The provider answered with the schema's tool: its input is the
		// answer, as the chat front sends it.
		part(newOutputText(resp.StructuredText(out)))
	}
	for _, b := range resp.Content {
		switch {
		case b.Type == "thinking" && (b.Thinking != "" || b.Signature != ""):
			msgAt = -1
			output = append(output, newReasoning(o.itemID("rs_", len(output)), b.Thinking, b.Signature))
		case b.Type == "redacted_thinking" && b.Data != "":
			msgAt = -1
			output = append(output, newReasoning(o.itemID("rs_", len(output)), "", redactedPrefix+b.Data))
		case b.Type == "text" && !structured && b.Text != "":
			part(newOutputText(b.Text))
		case b.Type == "tool_use" && (out == nil || b.Name != out.Name):
			msgAt = -1
			output = append(output, o.functionCall(o.itemID("fc_", len(output)), b.ID, b.Name, b.ToolArgs(), ResponsesCompleted))
		}
	}
	if resp.Refusal != "" {
		part(ResponsesRefusal{Type: "refusal", Refusal: resp.Refusal})
	}
	o.finish(resp.StopReason, output, usage, at)
}

// redactedPrefix marks a reasoning item's encrypted_content that is a
// redacted thinking block's data, not a signature: neither Anthropic's
// signatures nor OpenAI's encrypted reasoning (base64) hold a '.' or ':'.
const redactedPrefix = "baton.redacted_thinking:"

func newReasoning(id, text, signature string) ResponsesReasoningItem {
	r := ResponsesReasoningItem{Type: "reasoning", ID: id, Summary: []ResponsesSummary{}}
	if text != "" {
		r.Summary = append(r.Summary, ResponsesSummary{Type: "summary_text", Text: text})
	}
	if signature != "" {
		r.EncryptedContent = &signature
	}
	return r
}

// functionCall is a function_call item for the provider's call of name:
// a namespace's function as its namespace and own name.
func (o *ResponsesObject) functionCall(id, callID, name, args, status string) ResponsesFunctionCall {
	fc := ResponsesFunctionCall{Type: "function_call", ID: id, CallID: callID, Name: name, Arguments: args, Status: status}
	if n, ok := o.namespaced[name]; ok {
		fc.Namespace, fc.Name = n.namespace, n.name
	}
	return fc
}
