package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/gateway"
)

// What a messages request carries beyond messages and tools, translated
// for a provider of another format or refused by name (docs/api.md,
// Translation).

// imageSource is an Anthropic image block's source.
type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

func (s *imageSource) block(param string) (gateway.Block, error) {
	if s == nil {
		return gateway.Block{}, badRequest(param, "%s: an image block needs a source", param)
	}
	switch s.Type {
	case "base64":
		if s.MediaType == "" || s.Data == "" {
			return gateway.Block{}, badRequest(param, "%s: a base64 source needs media_type and data", param)
		}
		return gateway.Block{Type: "image", MediaType: s.MediaType, Data: s.Data}, nil
	case "url":
		if !strings.HasPrefix(s.URL, "https://") && !strings.HasPrefix(s.URL, "http://") {
			return gateway.Block{}, badRequest(param+"/url", "%s/url: an image URL must be https:// or http://", param)
		}
		return gateway.Block{Type: "image", URL: s.URL}, nil
	}
	return gateway.Block{}, badRequest(param+"/type", "%s/type: image source type %q has no equivalent at this provider; base64 and url are translated", param, s.Type)
}

// untranslatable refuses, by name, the request fields no other provider
// has. context_management is taken only when it changes nothing: edits
// that clear earlier thinking while keeping all of it.
func (q *msgRequest) untranslatable() error {
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"container", q.Container}, {"mcp_servers", q.MCPServers}} {
		if !absent(f.raw) {
			return badRequest(f.name, "%s: has no equivalent at this provider; it is served by Anthropic providers only", f.name)
		}
	}
	if absent(q.ContextManagement) {
		return nil
	}
	var cm struct {
		Edits []struct {
			Type string          `json:"type"`
			Keep json.RawMessage `json:"keep"`
		} `json:"edits"`
	}
	if json.Unmarshal(q.ContextManagement, &cm) != nil {
		return badRequest("context_management", "context_management: must be an object with edits")
	}
	for i, e := range cm.Edits {
		if !strings.HasPrefix(e.Type, "clear_thinking_") || string(bytes.TrimSpace(e.Keep)) != `"all"` {
			return badRequest(fmt.Sprintf("context_management/edits/%d", i),
				"context_management/edits/%d: context editing has no equivalent at this provider (only a clear_thinking edit with keep \"all\", which clears nothing, is taken)", i)
		}
	}
	return nil
}

// reasoning reads thinking and output_config.effort: an Anthropic
// upstream gets them as they are, an OpenAI-shaped one the
// reasoning_effort they map to.
func (q *msgRequest) reasoning(out *gateway.Request) error {
	if !absent(q.Thinking) {
		var th struct {
			Type         string `json:"type"`
			BudgetTokens *int   `json:"budget_tokens"`
		}
		if json.Unmarshal(q.Thinking, &th) != nil {
			return badRequest("thinking", "thinking: must be an object with a type")
		}
		switch th.Type {
		case "enabled":
			if th.BudgetTokens == nil || *th.BudgetTokens < 1024 {
				return badRequest("thinking/budget_tokens", "thinking/budget_tokens: thinking of type enabled needs budget_tokens of at least 1024")
			}
			out.Thinking = &gateway.Thinking{Type: th.Type, BudgetTokens: *th.BudgetTokens}
		case "adaptive", "disabled":
			out.Thinking = &gateway.Thinking{Type: th.Type}
		default:
			return badRequest("thinking/type", "thinking/type: %q is not enabled, adaptive or disabled", th.Type)
		}
	}
	for k := range q.OutputConfig {
		if k != "effort" && k != "format" {
			return badRequest("output_config/"+k, "output_config/%s: has no equivalent at this provider", k)
		}
	}
	if raw := q.OutputConfig["effort"]; !absent(raw) {
		if json.Unmarshal(raw, &out.Effort) != nil || !slices.Contains(gateway.AnthropicEfforts, out.Effort) {
			return badRequest("output_config/effort", "output_config/effort: must be one of %s", strings.Join(gateway.AnthropicEfforts, ", "))
		}
	}
	out.ReasoningEffort = gateway.ReasoningFromThinking(out.Thinking, out.Effort)
	return nil
}

// structuredName names a messages request's structured output, which
// Anthropic leaves unnamed: OpenAI's json_schema needs a name, and
// Anthropic's forced tool one that is not a client tool's.
func structuredName(tools []gateway.Tool) string {
	name := "structured_output"
	for hasTool(tools, name) {
		name += "_"
	}
	return name
}

// outputFormat reads output_config.format ({type: json_schema, schema}):
// Anthropic's structured output, an OpenAI json_schema response format
// (strict, as Anthropic's output is constrained to the schema).
func (q *msgRequest) outputFormat(out *gateway.Request) error {
	raw := q.OutputConfig["format"]
	if absent(raw) {
		return nil
	}
	var f struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	}
	if json.Unmarshal(raw, &f) != nil || f.Type != "json_schema" {
		return badRequest("output_config/format/type", "output_config/format/type: only json_schema is translated")
	}
	schema := bytes.TrimSpace(f.Schema)
	if len(schema) == 0 || schema[0] != '{' || !json.Valid(schema) {
		return badRequest("output_config/format/schema", "output_config/format/schema: must be a JSON Schema object")
	}
	out.Output = &gateway.OutputSchema{Name: structuredName(out.Tools), Schema: json.RawMessage(schema), Strict: true}
	out.NeedsJSON = true
	return nil
}
