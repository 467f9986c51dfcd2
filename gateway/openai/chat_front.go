package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/batonhq/baton/gateway"
)

// The chat completions front (POST /v1/chat/completions): its request,
// decoded into the gateway's request so that any provider can answer it.
// The answers it writes are in chat_answer.go.

// ChatMessage is a message of a chat completions request: the front
// decodes a client's, the adapter encodes its own (omitempty is for that,
// and leaves decoding as it was).
type ChatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"` // null in an assistant turn of tool calls only
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  []ChatToolCall  `json:"tool_calls,omitempty"`
	// A participant's name, and an assistant turn's parts, that another
	// provider has no place for: refused there.
	Name         string          `json:"name,omitempty"`
	Refusal      json.RawMessage `json:"refusal,omitempty"`
	Audio        json.RawMessage `json:"audio,omitempty"`
	FunctionCall json.RawMessage `json:"function_call,omitempty"`
}

// ChatTool is a tool of a chat completions request. Its fields are in the
// order of their names, as the adapter sent them when tools were maps.
type ChatTool struct {
	Function struct {
		Description string          `json:"description"`
		Name        string          `json:"name"`
		Parameters  json.RawMessage `json:"parameters"`
		// Strict is raw so that a value of another type is refused by
		// name, not as a malformed body.
		Strict json.RawMessage `json:"strict,omitempty"`
	} `json:"function"`
	Type string `json:"type"`
}

// ChatStreamOptions is a request's stream_options.
type ChatStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatRequest is the body of POST /v1/chat/completions as far as Baton
// reads it; ToGateway converts it. Fields it does not list are ignored;
// those it lists but cannot serve are refused by name. The adapter sends
// it upstream: omitempty leaves out what it does not set.
type ChatRequest struct {
	Model               string             `json:"model"`
	Messages            []ChatMessage      `json:"messages"`
	MaxCompletionTokens *int               `json:"max_completion_tokens,omitempty"`
	MaxTokens           *int               `json:"max_tokens,omitempty"`
	Stream              bool               `json:"stream,omitempty"`
	StreamOptions       *ChatStreamOptions `json:"stream_options,omitempty"`
	Temperature         *float64           `json:"temperature,omitempty"`
	Stop                json.RawMessage    `json:"stop,omitempty"`
	Tools               []ChatTool         `json:"tools,omitempty"`
	ToolChoice          json.RawMessage    `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool              `json:"parallel_tool_calls,omitempty"`
	ResponseFormat      json.RawMessage    `json:"response_format,omitempty"`
	// Sampling and attribution: passed on (see gateway.Request for which
	// provider takes which).
	TopP *float64 `json:"top_p,omitempty"`
	User string   `json:"user,omitempty"`
	gateway.OpenAISampling
	// SafetyIdentifier is the end user, as user was: carried as it.
	SafetyIdentifier string `json:"safety_identifier,omitempty"`
	// Not served: refused rather than silently answered without.
	N           *int  `json:"n,omitempty"`
	Logprobs    *bool `json:"logprobs,omitempty"`
	TopLogprobs *int  `json:"top_logprobs,omitempty"`
	// OpenAI's own: refused when translated (another provider has none).
	// prediction, a latency hint, is not among them: accepted, not carried.
	Functions        json.RawMessage `json:"functions,omitempty"`
	FunctionCall     json.RawMessage `json:"function_call,omitempty"`
	Audio            json.RawMessage `json:"audio,omitempty"`
	Modalities       json.RawMessage `json:"modalities,omitempty"`
	WebSearchOptions json.RawMessage `json:"web_search_options,omitempty"`
	Verbosity        json.RawMessage `json:"verbosity,omitempty"`
	// Stored completions and their tags, and a capacity tier: refused when
	// they ask for something (store: true, tags, a tier other than the
	// default).
	Store       json.RawMessage `json:"store,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	ServiceTier json.RawMessage `json:"service_tier,omitempty"`
	// TopK is no field of OpenAI's; compatible servers (vLLM, Ollama,
	// Together) take it, and Anthropic: carried to both, refused to OpenAI.
	TopK *int `json:"top_k,omitempty"`
}

// chatPart is a content part of a chat message.
type chatPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL string `json:"url"`
		// detail (auto, low, high) is a resolution hint with no
		// Anthropic equivalent: accepted, not carried (docs/api.md,
		// Translation).
	} `json:"image_url"`
}

// chatText reads OpenAI content: a string, or an array of text parts.
func chatText(raw json.RawMessage, param string) (string, error) {
	blocks, err := chatParts(raw, param, false)
	if err != nil {
		return "", err
	}
	var text strings.Builder
	for _, b := range blocks {
		text.WriteString(b.Text)
	}
	return text.String(), nil
}

// chatParts reads OpenAI content as blocks: a string, or an array of text
// parts and, when images is set (a user message), image_url parts. Each
// text part is a text block, as the client wrote it (joined, a reminder's
// closing tag ran into the prompt after it); chatText joins them where one
// text is read.
func chatParts(raw json.RawMessage, param string, images bool) ([]gateway.Block, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []gateway.Block{{Type: "text", Text: s}}, nil
	}
	var parts []chatPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, gateway.BadRequest(param, "content must be a string or an array of content parts")
	}
	var out []gateway.Block
	for i, p := range parts {
		switch {
		case p.Type == "text":
			out = append(out, gateway.Block{Type: "text", Text: p.Text})
		case p.Type == "image_url" && images:
			b, err := chatImage(p, fmt.Sprintf("%s/%d/image_url/url", param, i))
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		case p.Type == "image_url":
			return nil, gateway.BadRequest(fmt.Sprintf("%s/%d/type", param, i), "%s/%d/type: image parts are taken in user messages only", param, i)
		default:
			return nil, gateway.BadRequest(fmt.Sprintf("%s/%d/type", param, i), "%s/%d/type: content part type %q has no equivalent across providers; text and image_url are translated", param, i, p.Type)
		}
	}
	if len(out) == 0 {
		out = []gateway.Block{{Type: "text"}}
	}
	return out, nil
}

// chatImage reads an image_url part: a base64 data: URL, or an http(s)
// URL the provider fetches.
func chatImage(p chatPart, param string) (gateway.Block, error) {
	if p.ImageURL == nil || p.ImageURL.URL == "" {
		return gateway.Block{}, gateway.BadRequest(param, "%s: an image_url part needs a url", param)
	}
	switch b, bad := imageFromURL(p.ImageURL.URL); bad {
	case badDataURL:
		return gateway.Block{}, gateway.BadRequest(param, "%s: a data URL must be data:<media type>;base64,<data>", param)
	case badScheme:
		return gateway.Block{}, gateway.BadRequest(param, "%s: an image URL must be https://, http:// or a base64 data: URL", param)
	default:
		return b, nil
	}
}

// What imageFromURL finds wrong with an image URL.
const (
	badDataURL = iota + 1 // not data:<media type>;base64,<data>
	badScheme             // neither data: nor http(s)
)

// imageFromURL reads an image URL as OpenAI's wire formats take it (chat's
// image_url, the Responses API's input_image): a base64 data: URL, or an
// http(s) URL the provider fetches; bad says what is wrong with it, if
// anything.
func imageFromURL(u string) (b gateway.Block, bad int) {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, data, found := strings.Cut(rest, ",")
		media, b64 := strings.CutSuffix(meta, ";base64")
		if !found || !b64 || media == "" || data == "" {
			return gateway.Block{}, badDataURL
		}
		return gateway.Block{Type: "image", MediaType: media, Data: data}, 0
	}
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return gateway.Block{}, badScheme
	}
	return gateway.Block{Type: "image", URL: u}, 0
}

// RequestedModel is the model or mode the request asks for.
func (q *ChatRequest) RequestedModel() string { return q.Model }

// ToGateway converts a decoded request into the gateway's request. A field
// that is missing, malformed or cannot be carried is a 400 naming it
// (gateway.BadRequest).
func (q *ChatRequest) ToGateway() (gateway.Request, error) {
	var out gateway.Request
	if q.Model == "" {
		return out, gateway.BadRequest("model", "model is required, as <provider>:<model>")
	}
	if len(q.Messages) == 0 {
		return out, gateway.BadRequest("messages", "messages must hold at least one message")
	}
	if q.MaxCompletionTokens != nil && q.MaxTokens != nil {
		// As OpenAI refuses it: which cap holds is not for Baton to guess.
		return out, gateway.BadRequest("max_tokens", "Setting 'max_tokens' and 'max_completion_tokens' at the same time is not supported.")
	}
	capField := ""
	switch {
	case q.MaxCompletionTokens != nil:
		out.MaxTokens, capField = *q.MaxCompletionTokens, "max_completion_tokens"
	case q.MaxTokens != nil:
		out.MaxTokens, capField = *q.MaxTokens, "max_tokens"
	}
	if capField == "max_completion_tokens" {
		out.CapParam = capField
	}
	if capField != "" && out.MaxTokens < 1 {
		// Named as the client sent it.
		return out, gateway.BadRequest(capField, "%s must be at least 1", capField)
	}
	out.Temperature, out.TopP, out.TopK, out.User = q.Temperature, q.TopP, q.TopK, q.User
	if out.User == "" {
		out.User = q.SafetyIdentifier
	} else if q.SafetyIdentifier != "" && q.SafetyIdentifier != q.User {
		return out, gateway.BadRequest("safety_identifier", "user and safety_identifier name different end users; send one")
	}
	for _, f := range []struct {
		name, instead string
		raw           json.RawMessage
	}{{"functions", "; send tools", q.Functions}, {"function_call", "; send tool_choice", q.FunctionCall}, {"audio", "", q.Audio},
		{"web_search_options", "", q.WebSearchOptions}, {"verbosity", "", q.Verbosity}} {
		if !gateway.Absent(f.raw) {
			return out, gateway.BadRequest(f.name, "%s is OpenAI's alone and has no equivalent at this provider%s", f.name, f.instead)
		}
	}
	if !gateway.Absent(q.Store) && string(q.Store) != "false" {
		return out, gateway.BadRequest("store", "store: stored completions are OpenAI's alone and have no equivalent at this provider")
	}
	if !gateway.Absent(q.Metadata) && string(q.Metadata) != "{}" {
		return out, gateway.BadRequest("metadata", "metadata tags OpenAI's stored completions and has no equivalent at this provider")
	}
	if !gateway.Absent(q.ServiceTier) {
		var tier string
		if json.Unmarshal(q.ServiceTier, &tier) != nil || tier != "auto" && tier != "default" {
			return out, gateway.BadRequest("service_tier", "service_tier: only auto and default have an equivalent at this provider")
		}
	}
	if !gateway.Absent(q.Modalities) {
		var m []string
		if json.Unmarshal(q.Modalities, &m) != nil || len(m) != 1 || m[0] != "text" {
			return out, gateway.BadRequest("modalities", "modalities: only [\"text\"] has an equivalent at this provider")
		}
	}
	out.OpenAISampling = q.OpenAISampling
	if e := out.ReasoningEffort; e != "" && !slices.Contains(gateway.Efforts, e) {
		return out, gateway.BadRequest("reasoning_effort", "reasoning_effort %q is not one of %s", e, strings.Join(gateway.Efforts, ", "))
	}
	if string(out.LogitBias) == "null" {
		out.LogitBias = nil
	}
	if len(out.LogitBias) > 0 && out.LogitBias[0] != '{' {
		return out, gateway.BadRequest("logit_bias", "logit_bias must be an object of token ids to numbers")
	}
	if q.N != nil && *q.N != 1 {
		return out, gateway.BadRequest("n", "n: only 1 choice per request is supported through this gateway")
	}
	if q.StreamOptions != nil && !q.Stream {
		// As OpenAI refuses it: the options are a stream's.
		return out, gateway.BadRequest("stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	}
	// top_logprobs 0 without logprobs asks for nothing, as OpenAI takes it.
	if q.Logprobs != nil && *q.Logprobs || q.TopLogprobs != nil && *q.TopLogprobs != 0 {
		param := "logprobs"
		if q.Logprobs == nil || !*q.Logprobs {
			param = "top_logprobs" // the one sent
		}
		return out, gateway.BadRequest(param, "logprobs and top_logprobs are not supported through this gateway")
	}
	if len(q.Stop) > 0 && string(q.Stop) != "null" {
		var one string
		var list []*string
		if json.Unmarshal(q.Stop, &one) == nil {
			out.StopSequences = []string{one}
		} else if err := json.Unmarshal(q.Stop, &list); err != nil {
			return out, gateway.BadRequest("stop", "stop must be a string or an array of strings")
		}
		for i, s := range list {
			if s == nil { // decoded as a string, it was an empty stop sequence
				return out, gateway.BadRequest(fmt.Sprintf("stop/%d", i), "stop/%d must be a string, not null", i)
			}
			out.StopSequences = append(out.StopSequences, *s)
		}
	}
	for i, t := range q.Tools {
		if t.Type != "function" {
			return out, gateway.BadRequest(fmt.Sprintf("tools/%d/type", i), "tool type %q is not supported; only function", t.Type)
		}
		if t.Function.Name == "" {
			return out, gateway.BadRequest(fmt.Sprintf("tools/%d/function/name", i), "a function tool needs a name")
		}
		schema := t.Function.Parameters
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		strict := false
		switch st := bytes.TrimSpace(t.Function.Strict); string(st) {
		case "", "null", "false":
		case "true":
			strict = true // Anthropic's strict tool use; a model without it refuses it
		default:
			return out, gateway.BadRequest(fmt.Sprintf("tools/%d/function/strict", i), "tools/%d/function/strict must be a boolean", i)
		}
		out.Tools = append(out.Tools, gateway.Tool{Name: t.Function.Name, Description: t.Function.Description, Schema: schema, Strict: strict})
	}
	tc, tools, err := chatToolChoice(q.ToolChoice, q.ParallelToolCalls, out.Tools)
	if err != nil {
		return out, err
	}
	out.ToolChoice, out.Tools = tc, tools
	if err := chatResponseFormat(q.ResponseFormat, &out); err != nil {
		return out, err
	}
	var system []string
	called := map[string]string{} // a tool call's id: its function's name
	for i, m := range q.Messages {
		param := fmt.Sprintf("messages/%d/content", i)
		if m.Role == "function" {
			// OpenAI's deprecated function result (its name is required):
			// the role is what has no equivalent, not the name.
			return out, gateway.BadRequest(fmt.Sprintf("messages/%d/role", i), "messages/%d/role: role \"function\" (the deprecated function result) has no equivalent at this provider; send a tool message with the tool call's id", i)
		}
		// A tool message's name is the function its call named, which the
		// call's id says already (LangChain sends it on every tool
		// result): nothing to carry. Another message's is a participant's.
		if m.Name != "" && (m.Role != "tool" || called[m.ToolCallID] != m.Name) {
			return out, gateway.BadRequest(fmt.Sprintf("messages/%d/name", i), "messages/%d/name: a participant's name has no equivalent at this provider (a tool message's may only name the function its call named)", i)
		}
		if m.Role == "user" {
			blocks, err := chatParts(m.Content, param, true)
			if err != nil {
				return out, err
			}
			if blocks == nil {
				blocks = []gateway.Block{{Type: "text"}}
			}
			out.Messages = append(out.Messages, gateway.Message{Role: "user", Content: blocks})
			continue
		}
		text, err := chatText(m.Content, param)
		if err != nil {
			return out, err
		}
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
		case "assistant":
			for _, f := range []struct {
				name string
				raw  json.RawMessage
			}{{"refusal", m.Refusal}, {"audio", m.Audio}, {"function_call", m.FunctionCall}} {
				if !gateway.Absent(f.raw) {
					return out, gateway.BadRequest(fmt.Sprintf("messages/%d/%s", i, f.name), "messages/%d/%s: an assistant turn's %s has no equivalent at this provider", i, f.name, f.name)
				}
			}
			msg := gateway.Message{Role: "assistant"}
			if text != "" {
				msg.Content = append(msg.Content, gateway.Block{Type: "text", Text: text})
			}
			for j, tc := range m.ToolCalls {
				at := fmt.Sprintf("messages/%d/tool_calls/%d", i, j)
				switch {
				case tc.Type != "function": // a custom tool's call (its name and input under "custom") has no equivalent
					return out, gateway.BadRequest(at+"/type", "%s/type: a tool call of type %q has no equivalent at this provider; function calls do", at, tc.Type)
				case tc.ID == "":
					return out, gateway.BadRequest(at+"/id", "%s/id: a tool call needs its id, which its tool message names", at)
				case tc.Function.Name == "":
					return out, gateway.BadRequest(at+"/function/name", "%s/function/name: a function call needs the function's name", at)
				}
				call := gateway.ToolCall(tc.ID, tc.Function.Name, tc.Function.Arguments) // none: {}
				if call.RawArgs != "" {
					return out, gateway.BadRequest(at+"/function/arguments", "%s/function/arguments must be a JSON object, as text (the function's parameters)", at)
				}
				msg.Content = append(msg.Content, call)
				called[tc.ID] = tc.Function.Name
			}
			out.Messages = append(out.Messages, msg)
		case "tool":
			if m.ToolCallID == "" { // as OpenAI refuses it; a result must name its call
				return out, gateway.BadRequest(fmt.Sprintf("messages/%d/tool_call_id", i), "messages/%d/tool_call_id: a tool message needs the id of the call it answers", i)
			}
			parts, err := chatParts(m.Content, param, false)
			if err != nil {
				return out, err
			}
			out.Messages = append(out.Messages, gateway.Message{Role: "user", Content: []gateway.Block{gateway.ToolResult(m.ToolCallID, parts)}})
		default:
			return out, gateway.BadRequest(fmt.Sprintf("messages/%d/role", i), "role %q is not system, developer, user, assistant or tool", m.Role)
		}
	}
	out.System = strings.Join(system, "\n\n")
	if len(out.Messages) == 0 {
		return out, gateway.BadRequest("messages", "messages must hold at least one user or assistant message")
	}
	return out, nil
}

// chatToolChoice reads OpenAI's tool_choice ("none", "auto", "required",
// {"type":"function","function":{"name":...}} or {"type":"allowed_tools",
// "allowed_tools":{"mode":"auto"|"required","tools":[...]}}) and
// parallel_tool_calls. It returns the tools the model may call: allowed_tools
// narrows them (no provider has that choice; fewer tools is the same thing).
func chatToolChoice(raw json.RawMessage, parallel *bool, tools []gateway.Tool) (*gateway.ToolChoice, []gateway.Tool, error) {
	if parallel != nil && len(tools) == 0 {
		// As OpenAI refuses it, as it refuses tool_choice below.
		return nil, nil, gateway.BadRequest("parallel_tool_calls", "'parallel_tool_calls' is only allowed when 'tools' are specified")
	}
	noParallel := parallel != nil && !*parallel
	if gateway.Absent(raw) {
		if noParallel && len(tools) > 0 {
			return &gateway.ToolChoice{DisableParallel: true}, tools, nil
		}
		return nil, tools, nil
	}
	if len(tools) == 0 {
		return nil, nil, gateway.BadRequest("tool_choice", "'tool_choice' is only allowed when 'tools' are specified")
	}
	tc := &gateway.ToolChoice{DisableParallel: noParallel}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		m, ok := chatToolModes[mode]
		if !ok {
			return nil, nil, gateway.BadRequest("tool_choice", "tool_choice %q is not none, auto or required", mode)
		}
		tc.Mode = m
		return tc, tools, nil
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
		AllowedTools *struct {
			Mode  string `json:"mode"`
			Tools []struct {
				Type     string `json:"type"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		} `json:"allowed_tools"`
	}
	shape := `tool_choice must be "none", "auto", "required", {"type":"function","function":{"name":"..."}} or {"type":"allowed_tools","allowed_tools":{...}}`
	if err := json.Unmarshal(raw, &named); err != nil {
		return nil, nil, gateway.BadRequest("tool_choice", "%s", shape)
	}
	switch named.Type {
	case "function":
		if named.Function.Name == "" {
			return nil, nil, gateway.BadRequest("tool_choice/function/name", "tool_choice names no function")
		}
		if !gateway.HasTool(tools, named.Function.Name) {
			return nil, nil, gateway.BadRequest("tool_choice/function/name", "tool_choice names function %q, which is not among the tools", named.Function.Name)
		}
		tc.Mode, tc.Name = gateway.ToolChoiceTool, named.Function.Name
		return tc, tools, nil
	case "allowed_tools":
		a := named.AllowedTools
		if a == nil || len(a.Tools) == 0 {
			return nil, nil, gateway.BadRequest("tool_choice/allowed_tools/tools", "allowed_tools needs at least one tool")
		}
		m, ok := chatToolModes[a.Mode]
		if !ok || m == gateway.ToolChoiceNone {
			return nil, nil, gateway.BadRequest("tool_choice/allowed_tools/mode", "allowed_tools mode %q is not auto or required", a.Mode)
		}
		tc.Mode = m
		var allowed []gateway.Tool
		for i, t := range a.Tools {
			param := fmt.Sprintf("tool_choice/allowed_tools/tools/%d", i)
			if t.Type != "function" {
				return nil, nil, gateway.BadRequest(param+"/type", "allowed tool type %q is not supported; only function", t.Type)
			}
			j := slices.IndexFunc(tools, func(x gateway.Tool) bool { return x.Name == t.Function.Name })
			if j < 0 {
				return nil, nil, gateway.BadRequest(param+"/function/name", "allowed tool %q is not among the tools", t.Function.Name)
			}
			if !gateway.HasTool(allowed, t.Function.Name) {
				allowed = append(allowed, tools[j])
			}
		}
		return tc, allowed, nil
	}
	return nil, nil, gateway.BadRequest("tool_choice/type", "%s", shape)
}

// nameRE is the names OpenAI takes for tools and schemas.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// chatResponseFormat reads OpenAI's response_format: {"type":"text"},
// {"type":"json_object"} or {"type":"json_schema","json_schema":{"name",
// "schema","description","strict"}}. A json_schema without a schema asks
// for any JSON object, as json_object does.
func chatResponseFormat(raw json.RawMessage, out *gateway.Request) error {
	if gateway.Absent(raw) {
		return nil
	}
	var f struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name        string          `json:"name"`
			Schema      json.RawMessage `json:"schema"`
			Description string          `json:"description"`
			Strict      *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return gateway.BadRequest("response_format", "response_format must be an object with a type")
	}
	switch f.Type {
	case "text":
		return nil
	case "json_object":
		out.JSONObject, out.NeedsJSON = true, true
		return nil
	case "json_schema":
		if f.JSONSchema == nil {
			return gateway.BadRequest("response_format/json_schema", "response_format of type json_schema needs json_schema")
		}
		if !nameRE.MatchString(f.JSONSchema.Name) {
			return gateway.BadRequest("response_format/json_schema/name", "json_schema.name must be 1 to 64 letters, digits, '_' or '-'")
		}
		if gateway.HasTool(out.Tools, f.JSONSchema.Name) {
			return gateway.BadRequest("response_format/json_schema/name", "json_schema.name %q is also the name of a tool; give the schema another name", f.JSONSchema.Name)
		}
		if gateway.Absent(f.JSONSchema.Schema) {
			out.JSONObject, out.NeedsJSON = true, true
			return nil
		}
		schema := bytes.TrimSpace(f.JSONSchema.Schema)
		if schema[0] != '{' || !json.Valid(schema) {
			return gateway.BadRequest("response_format/json_schema/schema", "json_schema.schema must be a JSON Schema object")
		}
		if !gateway.ObjectRoot(schema) {
			return gateway.BadRequest("response_format/json_schema/schema/type", "json_schema.schema must describe an object (type object) at its root, as OpenAI's structured output takes")
		}
		out.Output = &gateway.OutputSchema{Name: f.JSONSchema.Name, Schema: json.RawMessage(schema), Description: f.JSONSchema.Description,
			Strict: f.JSONSchema.Strict != nil && *f.JSONSchema.Strict}
		out.NeedsJSON = true
		return nil
	}
	return gateway.BadRequest("response_format/type", "response_format type %q is not text, json_object or json_schema", f.Type)
}

// ChatToolIndexes follows, in a stream, the tool calls a provider makes. Calls
// to the structured answer's tool (a json_schema response format asked of
// a provider that answers it as a tool) carry the content; the others are
// the client's tool calls, numbered from 0 among themselves as OpenAI's
// clients expect. A call's first delta names its tool; later ones carry
// only the provider's index.
type ChatToolIndexes struct {
	answer map[int]bool
	client map[int]int
}

// route says whether a tool-call delta belongs to the structured answer,
// and else the index the client sees.
func (t *ChatToolIndexes) Route(o *gateway.OutputSchema, tc *gateway.ToolCallDelta) (answer bool, index int) {
	if t.answer == nil {
		t.answer, t.client = map[int]bool{}, map[int]int{}
	}
	if tc.Name != "" && o != nil && tc.Name == o.Name {
		t.answer[tc.Index] = true
	}
	if t.answer[tc.Index] {
		return true, 0
	}
	i, ok := t.client[tc.Index]
	if !ok {
		i = len(t.client)
		t.client[tc.Index] = i
	}
	return false, i
}
