package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/gateway"
)

// ResponsesRequest is the body of POST /v1/responses as far as Baton reads
// it. Fields it does not list are ignored, as everywhere in Baton; those it
// lists but cannot carry to a translated provider are refused by name.
type ResponsesRequest struct {
	Model              string              `json:"model"`
	Instructions       *string             `json:"instructions"`
	Input              json.RawMessage     `json:"input"` // a string, or an array of items
	Tools              []json.RawMessage   `json:"tools"`
	ToolChoice         json.RawMessage     `json:"tool_choice"`
	Text               *ResponsesText      `json:"text"`
	MaxOutputTokens    *int                `json:"max_output_tokens"`
	Temperature        *float64            `json:"temperature"`
	TopP               *float64            `json:"top_p"`
	ParallelToolCalls  *bool               `json:"parallel_tool_calls"`
	Reasoning          *ResponsesReasoning `json:"reasoning"`
	Metadata           map[string]string   `json:"metadata"`
	Store              *bool               `json:"store"`
	Stream             bool                `json:"stream"`
	StreamOptions      json.RawMessage     `json:"stream_options"`
	PreviousResponseID *string             `json:"previous_response_id"`
	User               string              `json:"user"`
	SafetyIdentifier   string              `json:"safety_identifier"`
	Include            []string            `json:"include"`
	// Echoed in the answer: a cache key is a hint, and no built-in tool
	// runs for max_tool_calls to bound when translated.
	MaxToolCalls   *int    `json:"max_tool_calls"`
	PromptCacheKey *string `json:"prompt_cache_key"`

	// Features of OpenAI's own service that no translated provider has:
	// refused when they ask for something.
	Background        *bool           `json:"background"`
	Conversation      json.RawMessage `json:"conversation"`
	Prompt            json.RawMessage `json:"prompt"`
	Truncation        *string         `json:"truncation"`
	TopLogprobs       *int            `json:"top_logprobs"`
	ServiceTier       *string         `json:"service_tier"`
	ContextManagement json.RawMessage `json:"context_management"`
}

// ResponsesText is a request's text options.
type ResponsesText struct {
	Format    *ResponsesTextFormat `json:"format"`
	Verbosity *string              `json:"verbosity"`
}

// ResponsesTextFormat is text.format: text, json_object or json_schema
// (its name, schema, description and strict flat beside the type).
type ResponsesTextFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Description string          `json:"description,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ResponsesReasoning is a request's reasoning options.
type ResponsesReasoning struct {
	Effort          *string `json:"effort"`
	Summary         *string `json:"summary"`
	GenerateSummary *string `json:"generate_summary"`
}

// StoreRequested is the request's store flag: true unless it says false.
func (q *ResponsesRequest) StoreRequested() bool { return q.Store == nil || *q.Store }

// Previous is the response the request continues, "" for none.
func (q *ResponsesRequest) Previous() string {
	if q.PreviousResponseID == nil {
		return ""
	}
	return *q.PreviousResponseID
}

// ResponsesCall is a decoded Responses request: the body as sent, the
// gateway request it becomes, and its input as items (what a stored
// response keeps for previous_response_id).
type ResponsesCall struct {
	Wire    ResponsesRequest
	Request gateway.Request
	Input   []json.RawMessage
	// Tools are the request's tools as sent, echoed in the response.
	Tools []json.RawMessage

	instructions string
	system       []string // system and developer items of the input
	// namespaced are the functions of namespace tools, by the flat name
	// the provider knows them by.
	namespaced map[string]nsName
	// Dropped lists the tools left out of the translated request
	// (cacheOnlySearch).
	Dropped []string
}

// nsName is a function of a namespace tool.
type nsName struct{ namespace, name string }

// flatName is the name a namespace's function goes to the provider by, as
// Codex flattens one: namespace "__" name (stray underscores around the
// "__" trimmed). Which function it is comes from the request's tools.
func flatName(namespace, name string) string {
	return strings.TrimRight(namespace, "_") + "__" + strings.TrimLeft(name, "_")
}

// ResponsesHistory is the conversation a previous_response_id names: the
// inputs and outputs of that response and of those it continued, oldest
// first. Their instructions are not part of it, as with OpenAI.
type ResponsesHistory struct {
	Messages []gateway.Message
	System   []string // system and developer items of those inputs
	// chain are the responses it is made of, newest first: the ids of
	// their items are read only for a body that sends items with ids
	// (Without).
	chain []*ResponsesRecord
}

// Continue puts the history before the call's own input.
func (c *ResponsesCall) Continue(h ResponsesHistory) {
	c.Request.Messages = append(slices.Clip(h.Messages), c.Request.Messages...)
	c.Request.System = joinSystem(c.instructions, h.System, c.system)
}

// Without is a Responses body without the input items that are items of
// the history already (a reference to one, resolved or not, or the item
// itself, by its id): continued, they go once, where the history has them,
// and are not kept as this turn's. Input made only of such items is a 400.
func (h ResponsesHistory) Without(body []byte) ([]byte, error) {
	input := gjson.GetBytes(body, "input")
	all := input.Array()
	if !input.IsArray() || !slices.ContainsFunc(all, func(it gjson.Result) bool { return it.Get("id").Type == gjson.String }) {
		return body, nil
	}
	known := itemIDs(h.chain)
	var items []string
	for _, it := range all {
		if id := it.Get("id"); id.Type != gjson.String || !known[id.Str] {
			items = append(items, it.Raw)
		}
	}
	switch {
	case len(items) == len(all):
		return body, nil
	case len(items) == 0:
		return nil, invalid("input", "input holds only items of the conversation previous_response_id continues, which it carries already: send this turn's items")
	}
	return withInput(body, items)
}

func joinSystem(instructions string, parts ...[]string) string {
	var all []string
	if instructions != "" {
		all = append(all, instructions)
	}
	for _, p := range parts {
		all = append(all, p...)
	}
	return strings.Join(all, "\n\n")
}

// invalid is a 400 naming the field at fault (a JSON pointer without its
// leading '/'), as the other fronts answer.
func invalid(param, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	e := domain.Invalid("responses", domain.FieldError{Pointer: param, Code: "invalid", Message: msg})
	e.Message = msg
	return e
}

// refused is a 400 for a field Baton understands but cannot carry to a
// translated provider: named, never dropped.
func refused(param, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	e := domain.Invalid("responses", domain.FieldError{Pointer: param, Code: "unsupported", Message: msg})
	e.Message = msg
	return e
}

// DecodeResponsesRequest reads a Responses request body into the gateway's
// request. Malformed JSON is a 400 (malformed_json); a field of the wrong
// type, a missing one, or one that cannot be carried across is a 400
// naming it.
func DecodeResponsesRequest(body []byte) (*ResponsesCall, error) {
	trimmed := bytes.Trim(body, " \t\n\r")
	if len(trimmed) == 0 {
		return nil, domain.E("decode", domain.KindBadRequest, "malformed_json", "the request body is empty; send a JSON object")
	}
	if !json.Valid(trimmed) {
		if gateway.TooDeep(trimmed) { // valid JSON, too deep to read
			return nil, domain.E("decode", domain.KindBadRequest, "malformed_json", "the request body nests arrays and objects more than %d deep", gateway.MaxJSONDepth)
		}
		var v any
		if se, ok := errors.AsType[*json.SyntaxError](json.Unmarshal(trimmed, &v)); ok {
			at := se.Offset + int64(len(body)-len(bytes.TrimLeft(body, " \t\n\r")))
			return nil, domain.E("decode", domain.KindBadRequest, "malformed_json", "the request body is not valid JSON (at byte %d)", at)
		}
		return nil, domain.E("decode", domain.KindBadRequest, "malformed_json", "the request body is not valid JSON")
	}
	if trimmed[0] != '{' {
		return nil, invalid("", "the body must be a JSON object")
	}
	if err := gateway.TooManyItems(trimmed, "input"); err != nil {
		return nil, err
	}
	trimmed, err := withoutFoldedKeys(trimmed)
	if err != nil {
		return nil, err
	}
	c := &ResponsesCall{}
	q := &c.Wire
	// A whole number written otherwise (1000.0, 1e3) is taken for an
	// integer field, as passed through and on the other fronts.
	for fixes := 0; ; fixes++ {
		err := json.Unmarshal(trimmed, q)
		if err == nil {
			break
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if fixed, ok := gateway.WholeNumber(trimmed, te); ok && fixes < gateway.MaxNumberFixes {
				trimmed = fixed
				*q = ResponsesRequest{}
				continue
			}
			return nil, invalid(strings.ReplaceAll(te.Field, ".", "/"), "%s", gateway.JSONMistake(te))
		}
		return nil, invalid("", "%s", err.Error())
	}
	if q.Model == "" {
		return nil, invalid("model", "model is required, as <provider>:<model> or a mode")
	}
	if err := q.refuseUncarried(); err != nil {
		return nil, err
	}
	out := &c.Request
	out.Model = q.Model // the id asked for, until routing names the provider's model
	if q.Instructions != nil {
		c.instructions = *q.Instructions
	}
	if q.MaxOutputTokens != nil {
		if *q.MaxOutputTokens < 1 {
			return nil, invalid("max_output_tokens", "max_output_tokens must be at least 1")
		}
		out.MaxTokens = *q.MaxOutputTokens
	}
	out.Temperature, out.TopP = q.Temperature, q.TopP
	out.User = q.User
	if out.User == "" {
		out.User = q.SafetyIdentifier
	} else if q.SafetyIdentifier != "" && q.SafetyIdentifier != q.User {
		return nil, invalid("safety_identifier", "user and safety_identifier name different end users; send one")
	}
	if q.Reasoning != nil {
		for _, sm := range []struct {
			field string
			v     *string
		}{{"summary", q.Reasoning.Summary}, {"generate_summary", q.Reasoning.GenerateSummary}} {
			if sm.v != nil && !slices.Contains([]string{"auto", "concise", "detailed"}, *sm.v) {
				return nil, invalid("reasoning/"+sm.field, "reasoning.%s %q is not auto, concise or detailed", sm.field, *sm.v)
			}
		}
	}
	if q.Reasoning != nil && q.Reasoning.Effort != nil {
		out.ReasoningEffort = *q.Reasoning.Effort
		if e := out.ReasoningEffort; e != "" && !slices.Contains(gateway.Efforts, e) {
			return nil, invalid("reasoning/effort", "reasoning.effort %q is not one of %s", e, strings.Join(gateway.Efforts, ", "))
		}
	}
	for i, raw := range q.Tools {
		param := fmt.Sprintf("tools/%d", i)
		ts, err := c.decodeTools(raw, param)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			if gateway.HasTool(out.Tools, t.Name) {
				return nil, invalid(param+"/name", "two tools are named %q", t.Name)
			}
			out.Tools = append(out.Tools, t)
		}
	}
	c.Tools = q.Tools
	tc, tools, err := decodeToolChoice(q.ToolChoice, q.ParallelToolCalls, out.Tools)
	if err != nil {
		return nil, err
	}
	out.ToolChoice, out.Tools = tc, tools
	if q.Text != nil && q.Text.Format != nil {
		if err := decodeFormat(q.Text.Format, out); err != nil {
			return nil, err
		}
	}
	items, err := inputItems(q.Input)
	if err != nil {
		return nil, err
	}
	c.Input = items
	var conv conversation
	if err := conv.items(items, "input"); err != nil {
		return nil, err
	}
	if len(conv.msgs) == 0 {
		return nil, invalid("input", "input must hold at least one user, assistant or tool item")
	}
	out.Messages, c.system = conv.msgs, conv.system
	out.System = joinSystem(c.instructions, c.system)
	return c, nil
}

// requestFields are the top-level fields ResponsesRequest reads.
var requestFields = func() []string {
	var names []string
	t := reflect.TypeFor[ResponsesRequest]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}()

// withoutFoldedKeys drops the top-level keys that encoding/json would take
// for a field of another case ("Input", "ſtore" for "store"): to OpenAI they
// are unknown fields, and so they are ignored here too, not read as the
// field they resemble.
func withoutFoldedKeys(body []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return body, nil // a type error, reported by the caller's decode
	}
	folded := false
	for k := range top {
		for _, f := range requestFields {
			if k != f && strings.EqualFold(k, f) {
				delete(top, k)
				folded = true
			}
		}
	}
	if !folded {
		return body, nil
	}
	return json.Marshal(top)
}

// refuseUncarried refuses what asks for a feature of OpenAI's own service:
// no translated provider has it, and answering without it would be wrong.
func (q *ResponsesRequest) refuseUncarried() error {
	switch {
	case !gateway.Absent(q.StreamOptions) && !gateway.IsObject(q.StreamOptions):
		return refused("stream_options", "stream_options must be an object")
	case !gateway.Absent(q.StreamOptions) && !q.Stream:
		// As OpenAI refuses it: the options are a stream's.
		return refused("stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	case q.Background != nil && *q.Background:
		return refused("background", "background responses are not supported through this gateway; send the request without background and wait for its answer (or stream it)")
	case !gateway.Absent(q.Conversation):
		return refused("conversation", "conversations are not supported through this gateway; continue a response with previous_response_id")
	case !gateway.Absent(q.Prompt):
		return refused("prompt", "prompt templates are not supported through this gateway; send instructions and input")
	case q.Truncation != nil && *q.Truncation != "disabled":
		return refused("truncation", "truncation %q is not supported through this gateway: only \"disabled\", where an input too long for the model is an error", *q.Truncation)
	case q.TopLogprobs != nil && *q.TopLogprobs > 0:
		return refused("top_logprobs", "logprobs are not supported through this gateway")
	case q.ServiceTier != nil && *q.ServiceTier != "auto" && *q.ServiceTier != "default":
		return refused("service_tier", "service_tier %q is not supported through this gateway: only auto or default", *q.ServiceTier)
	case !gateway.Absent(q.ContextManagement):
		return refused("context_management", "context_management is not supported through this gateway")
	case q.Text != nil && q.Text.Verbosity != nil:
		return refused("text/verbosity", "text.verbosity is not supported through this gateway: no translated provider has it")
	}
	for i, inc := range q.Include {
		switch inc {
		case "reasoning.encrypted_content", "message.input_image.image_url", "file_search_call.results", "web_search_call.results",
			"web_search_call.action.sources", "computer_call_output.output.image_url", "code_interpreter_call.outputs":
			// What these include never appears in an answer through Baton
			// (no input items, no built-in tools; a reasoning item always
			// has its encrypted_content): vacuous.
		case "message.output_text.logprobs":
			return refused(fmt.Sprintf("include/%d", i), "logprobs are not supported through this gateway")
		default:
			return refused(fmt.Sprintf("include/%d", i), "include %q is not supported through this gateway", inc)
		}
	}
	return nil
}

// decodeTools reads a tool: a function, or a namespace of functions (as
// Codex groups them), each then a function of its flat name.
func (c *ResponsesCall) decodeTools(raw json.RawMessage, param string) ([]gateway.Tool, error) {
	if cacheOnlySearch(raw) {
		c.Dropped = append(c.Dropped, "web_search")
		return nil, nil
	}
	var ns struct {
		Type        string            `json:"type"`
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Tools       []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(raw, &ns) != nil || ns.Type != "namespace" {
		t, err := decodeTool(raw, param)
		return []gateway.Tool{t}, err
	}
	if !nameRE.MatchString(ns.Name) {
		return nil, invalid(param+"/name", "a namespace needs a name of 1 to 64 letters, digits, '_' or '-'")
	}
	if len(ns.Tools) == 0 {
		return nil, invalid(param+"/tools", "a namespace needs at least one tool")
	}
	var out []gateway.Tool
	for j, member := range ns.Tools {
		p := fmt.Sprintf("%s/tools/%d", param, j)
		t, err := decodeTool(member, p)
		if err != nil {
			return nil, err
		}
		flat := flatName(ns.Name, t.Name)
		if !nameRE.MatchString(flat) {
			return nil, invalid(p+"/name", "%s goes to the provider as %q, over 64 characters; shorten the namespace or the name", t.Name, flat)
		}
		if ns.Description != "" {
			t.Description = strings.TrimSpace(t.Description + "\n\n(" + ns.Name + ": " + ns.Description + ")")
		}
		if c.namespaced == nil {
			c.namespaced = map[string]nsName{}
		}
		c.namespaced[flat] = nsName{ns.Name, t.Name}
		t.Name = flat
		out = append(out, t)
	}
	return out, nil
}

// cacheOnlySearch reports whether raw is OpenAI's web search restricted to
// its cached index (external_web_access false), which Codex sends by
// default. No other provider has such a search: a translated request goes
// without it, which keeps what it asked (no live fetching) and loses only
// cached results; a live search (external_web_access true or absent) is
// refused like the other built-in tools.
func cacheOnlySearch(raw json.RawMessage) bool {
	var t struct {
		Type              string `json:"type"`
		ExternalWebAccess *bool  `json:"external_web_access"`
	}
	return json.Unmarshal(raw, &t) == nil && t.Type == "web_search" && t.ExternalWebAccess != nil && !*t.ExternalWebAccess
}

// decodeTool reads a function tool. OpenAI's built-in tools (web search,
// file search, computer use, code interpreter, MCP, ...) run on OpenAI's
// side: they are refused, not sent on as functions without a schema.
func decodeTool(raw json.RawMessage, param string) (gateway.Tool, error) {
	var t struct {
		Type           string          `json:"type"`
		Name           string          `json:"name"`
		Description    string          `json:"description"`
		Parameters     json.RawMessage `json:"parameters"`
		Strict         *bool           `json:"strict"`
		Async          *bool           `json:"async"`
		DeferLoading   *bool           `json:"defer_loading"`
		AllowedCallers []string        `json:"allowed_callers"`
		OutputSchema   json.RawMessage `json:"output_schema"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			// A field of the wrong type: named, not the whole tool.
			field := strings.ReplaceAll(te.Field, ".", "/")
			return gateway.Tool{}, invalid(param+"/"+field, "%s must be of type %s", field, te.Type)
		}
		return gateway.Tool{}, invalid(param, "a tool must be an object with a type")
	}
	if t.Type != "function" {
		return gateway.Tool{}, refused(param+"/type", "tool type %q is not supported through this gateway: only function tools are; OpenAI's built-in tools run on OpenAI's side", t.Type)
	}
	if !nameRE.MatchString(t.Name) {
		return gateway.Tool{}, invalid(param+"/name", "a function tool needs a name of 1 to 64 letters, digits, '_' or '-'")
	}
	switch {
	case t.Async != nil && *t.Async:
		return gateway.Tool{}, refused(param+"/async", "async function tools are not supported through this gateway")
	case t.DeferLoading != nil && *t.DeferLoading:
		return gateway.Tool{}, refused(param+"/defer_loading", "deferred tool loading is not supported through this gateway")
	case len(t.AllowedCallers) > 0:
		return gateway.Tool{}, refused(param+"/allowed_callers", "allowed_callers is not supported through this gateway")
	case !gateway.Absent(t.OutputSchema):
		return gateway.Tool{}, refused(param+"/output_schema", "a tool's output_schema is not supported through this gateway")
	}
	schema := bytes.TrimSpace(t.Parameters)
	if gateway.Absent(schema) {
		schema = []byte(`{"type":"object","properties":{}}`)
	} else if !gateway.IsObject(schema) {
		return gateway.Tool{}, invalid(param+"/parameters", "parameters must be a JSON Schema object")
	}
	return gateway.Tool{Name: t.Name, Description: t.Description, Schema: json.RawMessage(schema), Strict: t.Strict != nil && *t.Strict}, nil
}

// decodeToolChoice reads the Responses tool_choice ("none", "auto",
// "required", {"type":"function","name"}, {"type":"allowed_tools","mode",
// "tools"}) and parallel_tool_calls. allowed_tools narrows the tools sent:
// no provider has that choice, and fewer tools is the same thing.
func decodeToolChoice(raw json.RawMessage, parallel *bool, tools []gateway.Tool) (*gateway.ToolChoice, []gateway.Tool, error) {
	noParallel := parallel != nil && !*parallel && len(tools) > 0
	if gateway.Absent(raw) {
		if noParallel {
			return &gateway.ToolChoice{DisableParallel: true}, tools, nil
		}
		return nil, tools, nil
	}
	tc := &gateway.ToolChoice{DisableParallel: noParallel}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case "none":
			tc.Mode = gateway.ToolChoiceNone
		case "auto":
			tc.Mode = gateway.ToolChoiceAuto
		case "required":
			if len(tools) == 0 {
				return nil, nil, invalid("tool_choice", "tool_choice \"required\" needs tools")
			}
			tc.Mode = gateway.ToolChoiceAny
		default:
			return nil, nil, invalid("tool_choice", "tool_choice %q is not none, auto or required", mode)
		}
		if len(tools) == 0 {
			return nil, nil, nil // nothing to choose from: no provider takes a choice without tools
		}
		return tc, tools, nil
	}
	var obj struct {
		Type      string `json:"type"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Mode      string `json:"mode"`
		Tools     []struct {
			Type      string `json:"type"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, nil, invalid("tool_choice", `tool_choice must be "none", "auto", "required", {"type":"function","name":"..."} or {"type":"allowed_tools",...}`)
	}
	if obj.Namespace != "" {
		obj.Name = flatName(obj.Namespace, obj.Name)
	}
	for i, t := range obj.Tools {
		if t.Namespace != "" {
			obj.Tools[i].Name = flatName(t.Namespace, t.Name)
		}
	}
	switch obj.Type {
	case "function":
		if !gateway.HasTool(tools, obj.Name) {
			return nil, nil, invalid("tool_choice/name", "tool_choice names function %q, which is not among the tools", obj.Name)
		}
		tc.Mode, tc.Name = gateway.ToolChoiceTool, obj.Name
		return tc, tools, nil
	case "allowed_tools":
		switch obj.Mode {
		case "auto":
			tc.Mode = gateway.ToolChoiceAuto
		case "required":
			tc.Mode = gateway.ToolChoiceAny
		default:
			return nil, nil, invalid("tool_choice/mode", "allowed_tools mode %q is not auto or required", obj.Mode)
		}
		if len(obj.Tools) == 0 {
			return nil, nil, invalid("tool_choice/tools", "allowed_tools needs at least one tool")
		}
		var allowed []gateway.Tool
		for i, t := range obj.Tools {
			param := fmt.Sprintf("tool_choice/tools/%d", i)
			if t.Type != "function" {
				return nil, nil, refused(param+"/type", "allowed tool type %q is not supported through this gateway; only function", t.Type)
			}
			j := slices.IndexFunc(tools, func(x gateway.Tool) bool { return x.Name == t.Name })
			if j < 0 {
				return nil, nil, invalid(param+"/name", "allowed tool %q is not among the tools", t.Name)
			}
			if !gateway.HasTool(allowed, t.Name) {
				allowed = append(allowed, tools[j])
			}
		}
		return tc, allowed, nil
	}
	return nil, nil, refused("tool_choice/type", "tool_choice type %q is not supported through this gateway: only none, auto, required, a function or allowed_tools", obj.Type)
}

// decodeFormat reads text.format into the gateway's structured output.
func decodeFormat(f *ResponsesTextFormat, out *gateway.Request) error {
	switch f.Type {
	case "text":
		return nil
	case "json_object":
		out.JSONObject, out.NeedsJSON = true, true
		return nil
	case "json_schema":
		if !nameRE.MatchString(f.Name) {
			return invalid("text/format/name", "text.format.name must be 1 to 64 letters, digits, '_' or '-'")
		}
		if gateway.HasTool(out.Tools, f.Name) {
			return invalid("text/format/name", "text.format.name %q is also the name of a tool; give the schema another name", f.Name)
		}
		if gateway.Absent(f.Schema) {
			return invalid("text/format/schema", "text.format.schema is required with type json_schema (json_object asks for any JSON object)")
		}
		schema := bytes.TrimSpace(f.Schema)
		if schema[0] != '{' {
			return invalid("text/format/schema", "text.format.schema must be a JSON Schema object")
		}
		if !gateway.ObjectRoot(schema) {
			return invalid("text/format/schema/type", "text.format.schema must describe an object (type object) at its root, as OpenAI's structured output takes")
		}
		out.Output = &gateway.OutputSchema{Name: f.Name, Schema: json.RawMessage(schema), Description: f.Description, Strict: f.Strict != nil && *f.Strict}
		out.NeedsJSON = true
		return nil
	}
	return invalid("text/format/type", "text.format type %q is not text, json_object or json_schema", f.Type)
}

// inputItems is the input as items: a string is one user message.
func inputItems(raw json.RawMessage) ([]json.RawMessage, error) {
	if gateway.Absent(raw) {
		return nil, invalid("input", "input is required: a string or an array of items")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		item, _ := json.Marshal(map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": s}}})
		return []json.RawMessage{item}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, invalid("input", "input must be a string or an array of items")
	}
	return items, nil
}

// conversation gathers items into the gateway's turns: consecutive items
// of one role make one message (an assistant's text and its function
// calls are one turn, as both providers want them).
type conversation struct {
	msgs   []gateway.Message
	system []string
}

func (c *conversation) add(role string, b gateway.Block) {
	if n := len(c.msgs); n > 0 && c.msgs[n-1].Role == role {
		c.msgs[n-1].Content = append(c.msgs[n-1].Content, b)
		return
	}
	c.msgs = append(c.msgs, gateway.Message{Role: role, Content: []gateway.Block{b}})
}

// responsesItem is an input or output item, the fields of every kind Baton
// takes together.
type responsesItem struct {
	Type      string              `json:"type"`
	ID        gateway.LooseString `json:"id"` // a reasoning item's: Baton's, or another provider's
	Role      string              `json:"role"`
	Content   json.RawMessage     `json:"content"`
	CallID    string              `json:"call_id"`
	Name      string              `json:"name"`
	Namespace string              `json:"namespace"` // a function_call's, when its function is in a namespace
	Arguments *string             `json:"arguments"`
	Output    json.RawMessage     `json:"output"`
	// A reasoning item's summary and the provider's signature over it.
	Summary          []contentPart `json:"summary"`
	EncryptedContent *string       `json:"encrypted_content"`
}

// items reads input items (or a stored response's output items, which are
// input items too) into the conversation.
func (c *conversation) items(items []json.RawMessage, param string) error {
	for i, raw := range items {
		p := fmt.Sprintf("%s/%d", param, i)
		var it responsesItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return invalid(p, "an input item must be an object with a type (or a role)")
		}
		if it.Type == "" && isReference(gjson.ParseBytes(raw)) {
			it.Type = "item_reference" // its type left out, as OpenAI's SDKs allow
		}
		switch it.Type {
		case "", "message":
			if it.Role == "user" {
				blocks, err := partsBlocks(it.Content, p+"/content", true)
				if err != nil {
					return err
				}
				if len(blocks) == 0 {
					blocks = []gateway.Block{{Type: "text"}}
				}
				for _, b := range blocks {
					c.add("user", b)
				}
				continue
			}
			text, err := partsText(it.Content, p+"/content")
			if err != nil {
				return err
			}
			switch it.Role {
			case "assistant":
				if text != "" {
					c.add("assistant", gateway.Block{Type: "text", Text: text})
				}
			case "system", "developer":
				c.system = append(c.system, text)
			default:
				return invalid(p+"/role", "role %q is not user, assistant, system or developer", it.Role)
			}
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return invalid(p, "a function_call item needs a call_id and a name")
			}
			args := ""
			if it.Arguments != nil {
				args = *it.Arguments
			}
			name := it.Name
			if it.Namespace != "" {
				name = flatName(it.Namespace, it.Name)
			}
			// Arguments that are not a JSON object (a model's slip, a call
			// the token cap cut) go on as written where arguments are text,
			// as OpenAI takes them back; Anthropic's adapter refuses them.
			c.add("assistant", gateway.ToolCall(it.CallID, name, args))
		case "function_call_output":
			if it.CallID == "" {
				return invalid(p+"/call_id", "a function_call_output item needs the call_id of its call")
			}
			blocks, err := partsBlocks(it.Output, p+"/output", true)
			if err != nil {
				return err
			}
			// Anthropic takes the parts (images too) as the result's
			// blocks; a chat-completions tool message takes text only.
			c.add("user", gateway.ToolResult(it.CallID, blocks))
		case "reasoning":
			// Baton's own reasoning item: the thinking as its summary, the
			// provider's signature as encrypted_content, a thinking block
			// again. One without a signature (an OpenAI-compatible
			// server's reasoning, as Baton answered it, or another's) is
			// left out: no provider takes unsigned reasoning back (the chat
			// API takes none, Anthropic refuses a thinking block without
			// its signature), and a client replaying Baton's own output, or
			// previous_response_id, must not be refused for it.
			if it.EncryptedContent == nil || *it.EncryptedContent == "" {
				continue
			}
			if !ownReasoning(string(it.ID), *it.EncryptedContent) {
				continue // OpenAI's own (its encrypted reasoning), which no other provider can read
			}
			if data, ok := strings.CutPrefix(*it.EncryptedContent, redactedPrefix); ok {
				c.add("assistant", gateway.Block{Type: "redacted_thinking", Data: data})
				continue
			}
			var text strings.Builder
			for j, part := range it.Summary {
				if part.Type != "summary_text" {
					return invalid(fmt.Sprintf("%s/summary/%d/type", p, j), "a reasoning summary part must be summary_text")
				}
				text.WriteString(part.Text)
			}
			c.add("assistant", gateway.Block{Type: "thinking", Thinking: text.String(), Signature: *it.EncryptedContent})
		case "item_reference":
			return refused(p+"/type", "an item_reference to an item Baton did not answer (another provider's) cannot go to this model: send the item itself, or continue with previous_response_id")
		default:
			return refused(p+"/type", "input item type %q is not supported through this gateway: it takes message, function_call, function_call_output, reasoning and item_reference items", it.Type)
		}
	}
	return nil
}

// partsText reads content as text: a string, or an array of text parts
// (input_text, output_text, and a refusal's words). Other parts are
// refused: only a user message carries images.
func partsText(raw json.RawMessage, param string) (string, error) {
	blocks, err := partsBlocks(raw, param, false)
	if err != nil {
		return "", err
	}
	var text strings.Builder
	for _, b := range blocks {
		text.WriteString(b.Text)
	}
	return text.String(), nil
}

// contentPart is a content part of an input item.
type contentPart struct {
	Type     string  `json:"type"`
	Text     string  `json:"text"`
	Refusal  string  `json:"refusal"`
	ImageURL *string `json:"image_url"`
	FileID   *string `json:"file_id"`
	// detail (auto, low, high) is a resolution hint no other provider
	// has: accepted, not carried (docs/api.md, Translation).
}

// partsBlocks reads content as blocks: each text part a text block, as
// the client wrote it (partsText joins them where one text is read), and,
// with images set (a user message, a function call's output), an
// input_image part an image block. Files and audio are refused: no block
// carries them.
func partsBlocks(raw json.RawMessage, param string, images bool) ([]gateway.Block, error) {
	if gateway.Absent(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []gateway.Block{{Type: "text", Text: s}}, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, invalid(param, "content must be a string or an array of content parts")
	}
	var out []gateway.Block
	text := func(t string) {
		out = append(out, gateway.Block{Type: "text", Text: t})
	}
	for j, pt := range parts {
		p := fmt.Sprintf("%s/%d", param, j)
		switch pt.Type {
		case "input_text", "output_text", "text":
			text(pt.Text)
		case "refusal":
			text(pt.Refusal)
		case "input_image":
			if !images {
				return nil, refused(p+"/type", "image parts are taken in user messages only")
			}
			b, err := imageOf(pt, p)
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		default:
			return nil, refused(p+"/type", "content part type %q is not supported through this gateway: only text and input_image", pt.Type)
		}
	}
	if len(out) == 0 {
		out = []gateway.Block{{Type: "text"}}
	}
	return out, nil
}

// imageOf reads an input_image part: image_url as a base64 data: URL or an
// http(s) URL the provider fetches. An uploaded file (file_id) is
// OpenAI's own: refused.
func imageOf(pt contentPart, param string) (gateway.Block, error) {
	if pt.FileID != nil && *pt.FileID != "" {
		return gateway.Block{}, refused(param+"/file_id", "an input_image by file_id is not supported through this gateway: send image_url, a base64 data: URL or an http(s) URL")
	}
	if pt.ImageURL == nil || *pt.ImageURL == "" {
		return gateway.Block{}, invalid(param+"/image_url", "an input_image part needs an image_url")
	}
	switch b, bad := imageFromURL(*pt.ImageURL); bad {
	case badDataURL:
		return gateway.Block{}, invalid(param+"/image_url", "a data URL must be data:<media type>;base64,<data>")
	case badScheme:
		return gateway.Block{}, invalid(param+"/image_url", "an image_url must be https://, http:// or a base64 data: URL")
	default:
		return b, nil
	}
}
