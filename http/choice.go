package http

import (
	"bytes"
	"encoding/json"
	"regexp"

	"github.com/batonhq/baton/gateway"
)

// Tool choice and response format, as each front spells them, decoded into
// the provider-neutral request; the adapters write each provider's own.

func absent(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

func hasTool(tools []gateway.Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// chatToolChoice reads OpenAI's tool_choice ("none", "auto", "required" or
// {"type":"function","function":{"name":...}}) and parallel_tool_calls.
func chatToolChoice(raw json.RawMessage, parallel *bool, tools []gateway.Tool) (*gateway.ToolChoice, error) {
	noParallel := parallel != nil && !*parallel
	if absent(raw) {
		if noParallel && len(tools) > 0 {
			return &gateway.ToolChoice{Mode: gateway.ToolChoiceAuto, DisableParallel: true}, nil
		}
		return nil, nil
	}
	if len(tools) == 0 {
		return nil, badRequest("tool_choice", "'tool_choice' is only allowed when 'tools' are specified")
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
			tc.Mode = gateway.ToolChoiceAny
		default:
			return nil, badRequest("tool_choice", "tool_choice %q is not none, auto or required", mode)
		}
		return tc, nil
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
		return nil, badRequest("tool_choice", `tool_choice must be "none", "auto", "required" or {"type":"function","function":{"name":"..."}}`)
	}
	if !hasTool(tools, named.Function.Name) {
		return nil, badRequest("tool_choice", "tool_choice names function %q, which is not among the tools", named.Function.Name)
	}
	tc.Mode, tc.Name = gateway.ToolChoiceTool, named.Function.Name
	return tc, nil
}

// messagesToolChoice reads Anthropic's tool_choice: {"type": "auto" | "any"
// | "tool" | "none", "name", "disable_parallel_tool_use"}.
func messagesToolChoice(raw json.RawMessage, tools []gateway.Tool) (*gateway.ToolChoice, error) {
	if absent(raw) {
		return nil, nil
	}
	var c struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, badRequest("tool_choice", "tool_choice: Input should be an object with a type")
	}
	tc := &gateway.ToolChoice{Mode: c.Type, DisableParallel: c.DisableParallelToolUse}
	switch c.Type {
	case gateway.ToolChoiceAuto, gateway.ToolChoiceNone:
	case gateway.ToolChoiceAny:
		if len(tools) == 0 {
			return nil, badRequest("tool_choice", "tool_choice: type any requires tools")
		}
	case gateway.ToolChoiceTool:
		if c.Name == "" || !hasTool(tools, c.Name) {
			return nil, badRequest("tool_choice.name", "tool_choice: name %q is not among the tools", c.Name)
		}
		tc.Name = c.Name
	default:
		return nil, badRequest("tool_choice.type", "tool_choice: type %q is not auto, any, tool or none", c.Type)
	}
	return tc, nil
}

var schemaNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// chatResponseFormat reads OpenAI's response_format: {"type":"text"},
// {"type":"json_object"} or {"type":"json_schema","json_schema":{"name",
// "schema","strict"}}.
func chatResponseFormat(raw json.RawMessage, out *gateway.Request) error {
	if absent(raw) {
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
		return badRequest("response_format", "response_format must be an object with a type")
	}
	switch f.Type {
	case "text":
		return nil
	case "json_object":
		out.JSONObject, out.NeedsJSON = true, true
		return nil
	case "json_schema":
		if f.JSONSchema == nil {
			return badRequest("response_format.json_schema", "response_format of type json_schema needs json_schema")
		}
		if !schemaNameRE.MatchString(f.JSONSchema.Name) {
			return badRequest("response_format.json_schema.name", "json_schema.name must be 1 to 64 letters, digits, '_' or '-'")
		}
		schema := bytes.TrimSpace(f.JSONSchema.Schema)
		if len(schema) == 0 || schema[0] != '{' || !json.Valid(schema) {
			return badRequest("response_format.json_schema.schema", "json_schema.schema must be a JSON Schema object")
		}
		out.Output = &gateway.OutputSchema{Name: f.JSONSchema.Name, Schema: json.RawMessage(schema), Description: f.JSONSchema.Description,
			Strict: f.JSONSchema.Strict != nil && *f.JSONSchema.Strict}
		out.NeedsJSON = true
		return nil
	}
	return badRequest("response_format.type", "response_format type %q is not text, json_object or json_schema", f.Type)
}

// structuredTool follows, in a stream, the tool call that carries a
// structured answer (a json_schema response format asked of a provider
// that answers it as a forced tool): its first delta names the tool, later
// ones carry only its index.
type structuredTool struct {
	index int
	seen  bool
}

func (t *structuredTool) owns(o *gateway.OutputSchema, tc *gateway.ToolCallDelta) bool {
	if o == nil {
		return false
	}
	if tc.Name == o.Name && !t.seen {
		t.index, t.seen = tc.Index, true
	}
	return t.seen && tc.Index == t.index
}
