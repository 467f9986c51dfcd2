package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

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

// chatToolChoice reads OpenAI's tool_choice ("none", "auto", "required",
// {"type":"function","function":{"name":...}} or {"type":"allowed_tools",
// "allowed_tools":{"mode":"auto"|"required","tools":[...]}}) and
// parallel_tool_calls. It returns the tools the model may call: allowed_tools
// narrows them (no provider has that choice; fewer tools is the same thing).
func chatToolChoice(raw json.RawMessage, parallel *bool, tools []gateway.Tool) (*gateway.ToolChoice, []gateway.Tool, error) {
	noParallel := parallel != nil && !*parallel
	if absent(raw) {
		if noParallel && len(tools) > 0 {
			return &gateway.ToolChoice{DisableParallel: true}, tools, nil
		}
		return nil, tools, nil
	}
	if len(tools) == 0 {
		return nil, nil, badRequest("tool_choice", "'tool_choice' is only allowed when 'tools' are specified")
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
			return nil, nil, badRequest("tool_choice", "tool_choice %q is not none, auto or required", mode)
		}
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
		return nil, nil, badRequest("tool_choice", "%s", shape)
	}
	switch named.Type {
	case "function":
		if named.Function.Name == "" {
			return nil, nil, badRequest("tool_choice/function/name", "tool_choice names no function")
		}
		if !hasTool(tools, named.Function.Name) {
			return nil, nil, badRequest("tool_choice/function/name", "tool_choice names function %q, which is not among the tools", named.Function.Name)
		}
		tc.Mode, tc.Name = gateway.ToolChoiceTool, named.Function.Name
		return tc, tools, nil
	case "allowed_tools":
		a := named.AllowedTools
		if a == nil || len(a.Tools) == 0 {
			return nil, nil, badRequest("tool_choice/allowed_tools/tools", "allowed_tools needs at least one tool")
		}
		switch a.Mode {
		case "auto":
			tc.Mode = gateway.ToolChoiceAuto
		case "required":
			tc.Mode = gateway.ToolChoiceAny
		default:
			return nil, nil, badRequest("tool_choice/allowed_tools/mode", "allowed_tools mode %q is not auto or required", a.Mode)
		}
		var allowed []gateway.Tool
		for i, t := range a.Tools {
			param := fmt.Sprintf("tool_choice/allowed_tools/tools/%d", i)
			if t.Type != "function" {
				return nil, nil, badRequest(param+"/type", "allowed tool type %q is not supported; only function", t.Type)
			}
			j := slices.IndexFunc(tools, func(x gateway.Tool) bool { return x.Name == t.Function.Name })
			if j < 0 {
				return nil, nil, badRequest(param+"/function/name", "allowed tool %q is not among the tools", t.Function.Name)
			}
			if !hasTool(allowed, t.Function.Name) {
				allowed = append(allowed, tools[j])
			}
		}
		return tc, allowed, nil
	}
	return nil, nil, badRequest("tool_choice/type", "%s", shape)
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
			return nil, badRequest("tool_choice/name", "tool_choice: name %q is not among the tools", c.Name)
		}
		tc.Name = c.Name
	default:
		return nil, badRequest("tool_choice/type", "tool_choice: type %q is not auto, any, tool or none", c.Type)
	}
	return tc, nil
}

var schemaNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// chatResponseFormat reads OpenAI's response_format: {"type":"text"},
// {"type":"json_object"} or {"type":"json_schema","json_schema":{"name",
// "schema","description","strict"}}. A json_schema without a schema asks
// for any JSON object, as json_object does.
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
			return badRequest("response_format/json_schema", "response_format of type json_schema needs json_schema")
		}
		if !schemaNameRE.MatchString(f.JSONSchema.Name) {
			return badRequest("response_format/json_schema/name", "json_schema.name must be 1 to 64 letters, digits, '_' or '-'")
		}
		if hasTool(out.Tools, f.JSONSchema.Name) {
			return badRequest("response_format/json_schema/name", "json_schema.name %q is also the name of a tool; give the schema another name", f.JSONSchema.Name)
		}
		if absent(f.JSONSchema.Schema) {
			out.JSONObject, out.NeedsJSON = true, true
			return nil
		}
		schema := bytes.TrimSpace(f.JSONSchema.Schema)
		if schema[0] != '{' || !json.Valid(schema) {
			return badRequest("response_format/json_schema/schema", "json_schema.schema must be a JSON Schema object")
		}
		out.Output = &gateway.OutputSchema{Name: f.JSONSchema.Name, Schema: json.RawMessage(schema), Description: f.JSONSchema.Description,
			Strict: f.JSONSchema.Strict != nil && *f.JSONSchema.Strict}
		out.NeedsJSON = true
		return nil
	}
	return badRequest("response_format/type", "response_format type %q is not text, json_object or json_schema", f.Type)
}

// toolIndexes follows, in a stream, the tool calls a provider makes. Calls
// to the structured answer's tool (a json_schema response format asked of
// a provider that answers it as a tool) carry the content; the others are
// the client's tool calls, numbered from 0 among themselves as OpenAI's
// clients expect. A call's first delta names its tool; later ones carry
// only the provider's index.
type toolIndexes struct {
	answer map[int]bool
	client map[int]int
}

// route says whether a tool-call delta belongs to the structured answer,
// and else the index the client sees.
func (t *toolIndexes) route(o *gateway.OutputSchema, tc *gateway.ToolCallDelta) (answer bool, index int) {
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
