package http

import (
	"bytes"
	"encoding/json"

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
