package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/gateway"
)

// The messages front (POST /v1/messages, and count_tokens): its request,
// decoded into the gateway's request so that any provider can answer it.
// What it carries beyond messages and tools is translated for a provider
// of another format or refused by name (docs/api.md, Translation). The
// answers it writes are in messages_answer.go.

// MessagesRequest is the body of POST /v1/messages as far as Baton reads
// it; ToGateway converts it. Fields it does not list are ignored; those it
// lists but no other provider has are refused by name. The adapter writes
// its upstream request with it too: omitempty leaves out what it does not
// set, and the field order is the one it always sent (the same bytes).
type MessagesRequest struct {
	Model         string            `json:"model"`
	System        json.RawMessage   `json:"system,omitempty"`
	Messages      []MessagesMessage `json:"messages"`
	MaxTokens     *int              `json:"max_tokens"`
	Temperature   *float64          `json:"temperature,omitempty"`
	TopP          *float64          `json:"top_p,omitempty"`
	TopK          *int              `json:"top_k,omitempty"`
	Metadata      *Metadata         `json:"metadata,omitempty"`
	StopSequences Stops             `json:"stop_sequences,omitempty"`
	Stream        bool              `json:"stream,omitempty"`
	Tools         []MessagesTool    `json:"tools,omitempty"`
	ToolChoice    json.RawMessage   `json:"tool_choice,omitempty"`
	Thinking      json.RawMessage   `json:"thinking,omitempty"`
	// Read to translate them or to refuse them by name.
	OutputConfig map[string]json.RawMessage `json:"output_config,omitempty"`
	// OutputFormat is output_config.format's older name, which the API
	// still takes (deprecated, not removed).
	OutputFormat      json.RawMessage `json:"output_format,omitempty"`
	ContextManagement json.RawMessage `json:"context_management,omitempty"`
	Container         json.RawMessage `json:"container,omitempty"`
	MCPServers        json.RawMessage `json:"mcp_servers,omitempty"`
	ServiceTier       json.RawMessage `json:"service_tier,omitempty"`
	// Speed (fast mode) and InferenceGeo (where the model runs) have no
	// equivalent elsewhere: their default values pass, others are refused.
	Speed        json.RawMessage `json:"speed,omitempty"`
	InferenceGeo json.RawMessage `json:"inference_geo,omitempty"`
}

// MessagesMessage is a message of a messages request: its content is a
// string or an array of blocks (messagesBlocks).
type MessagesMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// A system message's own output_config (Anthropic's per-message
	// effort): its effort is carried (reasoning), anything else refused.
	OutputConfig json.RawMessage `json:"output_config,omitempty"`
	// ClearAt is a system message's: next_user_message shows its text only
	// until a later user message exists.
	ClearAt *string `json:"clear_at,omitempty"`
}

// MessagesTool is a tool of a messages request: a custom tool (no type, or
// type custom) is a name, a description and an input schema. Anthropic's
// own tools (web search, code execution, bash...) carry a versioned type
// and run on Anthropic's side; they are refused, not sent on as custom
// tools without a schema. The adapter sends custom tools without a type.
type MessagesTool struct {
	Type string `json:"type,omitempty"`
	gateway.Tool
	// Read to refuse them by name: another provider has no place for
	// either, and each changes what the model does (AllowedCallers lets
	// only code execution call the tool; InputExamples are shown to the
	// model as part of the tool).
	AllowedCallers json.RawMessage `json:"allowed_callers,omitempty"`
	InputExamples  json.RawMessage `json:"input_examples,omitempty"`
}

// RequestBlock is a content block of a messages request, as Anthropic's
// wire has it: the front decodes a client's blocks with it and the adapter
// encodes its upstream request's (toBlocks). The strings are pointers so
// that the adapter writes text, thinking and signature on the blocks that
// have them, empty or not, and on no other.
type RequestBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	// ToolName is a tool_reference's (Anthropic's tool search, in a tool
	// result): the tool whose definition the API loads.
	ToolName string `json:"tool_name,omitempty"`
	// Content is a tool result's: a string or an array of blocks.
	Content   json.RawMessage `json:"content,omitempty"`
	Source    *ImageSource    `json:"source,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	Data      *string         `json:"data,omitempty"` // a redacted thinking block's
	// Citations are a text's (of documents, search results); they have no
	// equivalent elsewhere, so the front refuses them. cache_control, a
	// caching hint, is accepted and not carried (docs/api.md, Translation).
	Citations json.RawMessage `json:"citations,omitempty"`
}

// messagesBlocks reads Anthropic content: a string or an array of blocks. Images
// are taken where images is set (message content, not the system prompt
// or a tool result: chat completions has no image there). A tool result's
// tool_reference blocks become the definitions of the tools they name,
// from tools, as text (toolDefinitions).
func messagesBlocks(raw json.RawMessage, param string, images bool, tools []gateway.Tool) ([]gateway.Block, error) {
	return readBlocks(raw, param, images, tools, inContent)
}

// blockPlace is where blocks stand: some types go in one place only.
type blockPlace int

const (
	inContent       blockPlace = iota
	inResult                   // a tool result's content: tool_reference
	inSystemMessage            // a role: system message: tool_addition, tool_removal
)

func readBlocks(raw json.RawMessage, param string, images bool, tools []gateway.Tool, place blockPlace) ([]gateway.Block, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []gateway.Block{{Type: "text", Text: s}}, nil
	}
	var blocks []RequestBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, unreadableBlock(raw, param)
	}
	var out []gateway.Block
	for i, b := range blocks {
		at := fmt.Sprintf("%s/%d", param, i)
		switch b.Type {
		case "text":
			if !gateway.Absent(b.Citations) && string(b.Citations) != "[]" {
				return nil, gateway.BadRequest(at+"/citations", "%s/citations: citations have no equivalent at this provider", at)
			}
			out = append(out, gateway.Block{Type: "text", Text: gateway.Deref(b.Text)})
		case "image":
			if !images {
				return nil, gateway.BadRequest(at+"/type", "%s/type: an image here has no equivalent in chat completions (images are translated in message content only)", at)
			}
			img, err := b.Source.block(at + "/source")
			if err != nil {
				return nil, err
			}
			out = append(out, img)
		case "thinking":
			out = append(out, gateway.Block{Type: "thinking", Thinking: gateway.Deref(b.Thinking), Signature: gateway.Deref(b.Signature)})
		case "tool_use":
			switch {
			case b.ID == "":
				return nil, gateway.BadRequest(at+"/id", "%s/id: a tool_use needs its id, which its tool_result names", at)
			case b.Name == "":
				return nil, gateway.BadRequest(at+"/name", "%s/name: a tool_use needs the tool's name", at)
			case gateway.Absent(b.Input):
				b.Input = json.RawMessage("{}") // a call without parameters
			case b.Input[0] != '{': // a decoded value, without the space around it
				return nil, gateway.BadRequest(at+"/input", "%s/input must be an object (the tool's parameters)", at)
			}
			out = append(out, gateway.Block{Type: "tool_use", ID: b.ID, Name: b.Name, Input: b.Input})
		case "tool_result":
			if b.ToolUseID == "" { // as Anthropic refuses it; a result must name its call
				return nil, gateway.BadRequest(at+"/tool_use_id", "%s/tool_use_id: a tool_result needs the id of the tool_use it answers", at)
			}
			var parts []gateway.Block // its text and images in order
			if len(b.Content) > 0 {
				inner, err := readBlocks(b.Content, at+"/content", true, tools, inResult)
				if err != nil {
					return nil, err
				}
				for j, ib := range inner {
					switch ib.Type {
					case "tool_reference":
						def, err := toolDefinition(ib.Name, fmt.Sprintf("%s/content/%d", at, j), tools)
						if err != nil {
							return nil, err
						}
						if j > 0 && inner[j-1].Type == "tool_reference" {
							parts[len(parts)-1].Text += def + "\n" // a run of references is one block
						} else {
							parts = append(parts, gateway.Block{Type: "text", Text: "<functions>\n" + def + "\n"})
						}
						if j == len(inner)-1 || inner[j+1].Type != "tool_reference" {
							parts[len(parts)-1].Text += "</functions>"
						}
						continue
					case "text", "image":
					default:
						return nil, gateway.BadRequest(at+"/content", "%s/content: a tool result carries text and images only through this gateway", at)
					}
					parts = append(parts, ib)
				}
			}
			out = append(out, gateway.ToolResult(b.ToolUseID, parts))
		case "tool_reference":
			if place != inResult {
				return nil, gateway.BadRequest(at+"/type", "%s/type: a tool_reference goes in a tool result's content", at)
			}
			out = append(out, gateway.Block{Type: "tool_reference", Name: b.ToolName})
		case "tool_addition", "tool_removal":
			if place != inSystemMessage {
				return nil, gateway.BadRequest(at+"/type", "%s/type: a %s goes in a role: system message", at, b.Type)
			}
			// Applied to the tools by toolChanges; no text of its own.
			out = append(out, gateway.Block{Type: b.Type})
		default:
			return nil, untranslatedBlock(at, b.Type)
		}
	}
	return out, nil
}

// toolChanges applies the system messages' tool_addition and tool_removal
// blocks (Anthropic's mid-conversation tool changes): a tool is offered
// from its addition on and withdrawn from its removal on, so the tools
// offered at the request's end are what another provider's one tools list
// carries. An addition may bring a definition by value; one by reference
// offers the tools entry of that name as written (or, for a tool only
// ever defined by value, its latest definition). It returns every tool
// the request defines, withdrawn ones too, which a tool search in the
// history may name: the tools entries as written, then the tools defined
// by value only.
func (q *MessagesRequest) toolChanges(out *gateway.Request) ([]gateway.Tool, error) {
	declared := out.Tools
	var extra []gateway.Tool             // defined by value only, latest definition
	inForce := map[string]gateway.Tool{} // the definition the latest addition offers
	withdrawn := map[string]bool{}
	for i, m := range q.Messages {
		if m.Role != "system" && m.Role != "developer" {
			continue
		}
		var blocks []struct {
			Type string          `json:"type"`
			Tool json.RawMessage `json:"tool"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue // a string, or not content: read (and refused) later
		}
		for j, b := range blocks {
			if b.Type != "tool_addition" && b.Type != "tool_removal" {
				continue
			}
			at := fmt.Sprintf("messages/%d/content/%d/tool", i, j)
			var ref struct {
				Type       string        `json:"type"`
				Name       string        `json:"name"`
				Definition *MessagesTool `json:"definition"`
			}
			if json.Unmarshal(b.Tool, &ref) != nil {
				return nil, gateway.BadRequest(at, "%s: must be a tool reference or a tool definition", at)
			}
			name := ref.Name
			switch {
			case ref.Type == "tool_reference":
				named := func(t gateway.Tool) bool { return t.Name == name }
				if k := slices.IndexFunc(declared, named); k >= 0 {
					inForce[name] = declared[k]
				} else if k := slices.IndexFunc(extra, named); k >= 0 {
					inForce[name] = extra[k]
				} else {
					return nil, gateway.BadRequest(at+"/name", "%s/name: %q is not one of the request's tools", at, name)
				}
			case ref.Type == "tool_definition" && b.Type == "tool_addition":
				d := ref.Definition
				if d == nil || d.Name == "" || (d.Type != "" && d.Type != "custom") || !gateway.IsObject(d.Schema) {
					return nil, gateway.BadRequest(at+"/definition", "%s/definition: a custom tool (a name and an input_schema) is translated", at)
				}
				if err := d.untranslatable(at + "/definition"); err != nil {
					return nil, err
				}
				name = d.Name
				inForce[name] = d.Tool
				if !gateway.HasTool(declared, name) {
					extra = append(slices.DeleteFunc(extra, func(t gateway.Tool) bool { return t.Name == name }), d.Tool)
				}
			default:
				return nil, gateway.BadRequest(at+"/type", "%s/type: %q has no equivalent at this provider; tool_reference (and tool_definition in an addition) are translated", at, ref.Type)
			}
			withdrawn[name] = b.Type == "tool_removal"
		}
	}
	all := append(slices.Clone(declared), extra...)
	out.Tools = nil
	for _, t := range all {
		if withdrawn[t.Name] {
			continue
		}
		if d, ok := inForce[t.Name]; ok {
			if gateway.HasTool(out.Tools, t.Name) {
				continue // one definition per name an addition chose
			}
			t = d
		}
		out.Tools = append(out.Tools, t)
	}
	return all, nil
}

// systemShown reports whether the text of system message m (the i-th) is
// before the model: clear_at next_user_message hides it once a later user
// message exists (userAfter).
func systemShown(m MessagesMessage, userAfter bool, i int) (bool, error) {
	if m.ClearAt == nil || *m.ClearAt == "never" {
		return true, nil
	}
	if *m.ClearAt != "next_user_message" {
		return false, gateway.BadRequest(fmt.Sprintf("messages/%d/clear_at", i), "messages/%d/clear_at: must be never or next_user_message", i)
	}
	return !userAfter, nil
}

// toolDefinition is the definition of the tool a tool_reference names,
// which Anthropic's API puts in the model's context for it. Another
// provider has no tool search, so it goes as text, in the <functions>
// form Claude Code's ToolSearch tells the model to expect; the tool itself
// is among the request's tools already (a deferred tool is sent as an
// ordinary one).
func toolDefinition(name, at string, tools []gateway.Tool) (string, error) {
	i := slices.IndexFunc(tools, func(t gateway.Tool) bool { return t.Name == name })
	if i < 0 {
		return "", gateway.BadRequest(at+"/tool_name", "%s/tool_name: %q is not one of the request's tools", at, name)
	}
	// As the model reads a tool list: <, > and & as they are, not escaped.
	var def strings.Builder
	enc := json.NewEncoder(&def)
	enc.SetEscapeHTML(false)
	enc.Encode(struct {
		Description string          `json:"description"`
		Name        string          `json:"name"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}{tools[i].Description, name, tools[i].Schema})
	return "<function>" + strings.TrimSuffix(def.String(), "\n") + "</function>", nil
}

// RequestedModel is the model or mode the request asks for.
func (q *MessagesRequest) RequestedModel() string { return q.Model }

// ToGateway converts a decoded request into the gateway's request. A field
// that is missing, malformed or cannot be carried is a 400 naming it
// (gateway.BadRequest).
func (q *MessagesRequest) ToGateway() (gateway.Request, error) {
	var out gateway.Request
	if q.Model == "" {
		return out, gateway.BadRequest("model", "model: Field required")
	}
	if q.MaxTokens == nil {
		return out, gateway.BadRequest("max_tokens", "max_tokens: Field required")
	}
	if *q.MaxTokens < 1 {
		return out, gateway.BadRequest("max_tokens", "max_tokens: must be at least 1")
	}
	if len(q.Messages) == 0 {
		return out, gateway.BadRequest("messages", "messages: at least one message is required")
	}
	out.MaxTokens, out.Temperature, out.StopSequences, out.TopP, out.TopK = *q.MaxTokens, q.Temperature, []string(q.StopSequences), q.TopP, q.TopK
	if q.Metadata != nil {
		out.User = q.Metadata.UserID
	}
	if err := q.untranslatable(); err != nil {
		return out, err
	}
	for i, t := range q.Tools {
		if t.Type != "" && t.Type != "custom" {
			return out, gateway.BadRequest(fmt.Sprintf("tools/%d/type", i),
				"tools.%d.type: tool type %q is not supported through this gateway: only custom tools (a name and an input_schema) are; Anthropic's server and client tools are not", i, t.Type)
		}
		if t.Name == "" {
			return out, gateway.BadRequest(fmt.Sprintf("tools/%d/name", i), "tools.%d.name: Field required", i)
		}
		if !gateway.IsObject(t.Schema) {
			// Anthropic requires it; sent on, it would reach the other
			// provider as parameters null.
			return out, gateway.BadRequest(fmt.Sprintf("tools/%d/input_schema", i), "tools.%d.input_schema: Field required, a JSON schema object", i)
		}
		if err := t.untranslatable(fmt.Sprintf("tools/%d", i)); err != nil {
			return out, err
		}
		out.Tools = append(out.Tools, t.Tool)
	}
	declared, err := q.toolChanges(&out)
	if err != nil {
		return out, err
	}
	tc, err := messagesToolChoice(q.ToolChoice, out.Tools)
	if err != nil {
		return out, err
	}
	out.ToolChoice = tc
	if err := q.reasoning(&out); err != nil {
		return out, err
	}
	if err := q.outputFormat(&out); err != nil {
		return out, err
	}
	if len(q.System) > 0 && string(q.System) != "null" {
		blocks, err := messagesBlocks(q.System, "system", false, nil)
		if err != nil {
			return out, err
		}
		for _, b := range blocks {
			out.System += b.Text
		}
	}
	var effort effortTurns
	lastUser := -1 // a system message before it and clear_at next_user_message is no longer shown
	for i, m := range q.Messages {
		if m.Role == "user" {
			lastUser = i
		}
	}
	for i, m := range q.Messages {
		param := fmt.Sprintf("messages/%d/content", i)
		switch m.Role {
		case "user", "assistant":
			if m.ClearAt != nil { // as Anthropic refuses it
				return out, gateway.BadRequest(fmt.Sprintf("messages/%d/clear_at", i), "messages/%d/clear_at: only a system message takes clear_at", i)
			}
		case "system", "developer":
			// A system message inside the list: merged into the system
			// prompt, in order (no other provider has one mid-conversation).
			blocks, err := readBlocks(m.Content, param, false, nil, inSystemMessage)
			if err != nil {
				return out, err
			}
			shown, err := systemShown(m, i < lastUser, i)
			if err != nil {
				return out, err
			}
			if err := effort.system(i, m.OutputConfig, &out); err != nil {
				return out, err
			}
			first := true
			for j, b := range blocks {
				switch {
				case b.Type == "tool_addition" || b.Type == "tool_removal":
					continue // toolChanges applied it
				case b.Type != "text":
					return out, gateway.BadRequest(fmt.Sprintf("%s/%d/type", param, j), "%s/%d/type: a system message carries text only", param, j)
				case !shown:
					continue
				}
				if out.System != "" && first {
					out.System += "\n\n"
				}
				out.System += b.Text
				first = false
			}
			continue
		default:
			return out, gateway.BadRequest(fmt.Sprintf("messages/%d/role", i), "messages/%d/role: role must be user, assistant or system", i)
		}
		blocks, err := messagesBlocks(m.Content, param, true, declared)
		if err != nil {
			return out, err
		}
		for j, b := range blocks {
			// As the Messages API has them: the model's blocks in its own
			// turns, results in the user's; elsewhere one would be dropped.
			if m.Role == "user" && (b.Type == "thinking" || b.Type == "tool_use") || m.Role == "assistant" && b.Type == "tool_result" {
				return out, gateway.BadRequest(fmt.Sprintf("%s/%d/type", param, j), "%s/%d/type: a %s block belongs in %s messages, not %s ones", param, j, b.Type, otherRole(m.Role), m.Role)
			}
		}
		if m.Role == "user" {
			effort.user(blocks, &out)
		} else {
			effort.fresh = false
		}
		out.Messages = append(out.Messages, gateway.Message{Role: m.Role, Content: blocks})
	}
	if len(out.Messages) == 0 {
		return out, gateway.BadRequest("messages", "messages: at least one user or assistant message is required")
	}
	out.ReasoningEffort = ReasoningFromThinking(out.Thinking, out.Effort)
	out.Prefill = out.Messages[len(out.Messages)-1].Role == "assistant"
	return out, nil
}

// CountAnswer is count_tokens' answer: Anthropic's, which the adapter
// reads (a missing count is nil), and Baton's, which the front writes
// (with Svc when Baton counted the tokens itself).
type CountAnswer struct {
	InputTokens *int `json:"input_tokens"`
	Svc         any  `json:"svc,omitempty"`
}

// CountRequest is a count_tokens body: a messages request without
// max_tokens, which the counter does not take.
type CountRequest struct{ MessagesRequest }

// ToGateway converts the request, with a cap of 1 when it has none.
func (q *CountRequest) ToGateway() (gateway.Request, error) {
	if q.MaxTokens == nil {
		one := 1 // the gateway's request needs a cap; nothing is generated
		q.MaxTokens = &one
	}
	return q.MessagesRequest.ToGateway()
}

// messagesToolChoice reads Anthropic's tool_choice: {"type": "auto" | "any"
// | "tool" | "none", "name", "disable_parallel_tool_use"}.
func messagesToolChoice(raw json.RawMessage, tools []gateway.Tool) (*gateway.ToolChoice, error) {
	if gateway.Absent(raw) {
		return nil, nil
	}
	var c struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, gateway.BadRequest("tool_choice", "tool_choice: Input should be an object with a type")
	}
	tc := &gateway.ToolChoice{Mode: c.Type, DisableParallel: c.DisableParallelToolUse}
	switch c.Type {
	case gateway.ToolChoiceAuto, gateway.ToolChoiceNone:
	case gateway.ToolChoiceAny:
		if len(tools) == 0 {
			return nil, gateway.BadRequest("tool_choice", "tool_choice: type any requires tools")
		}
	case gateway.ToolChoiceTool:
		if c.Name == "" || !gateway.HasTool(tools, c.Name) {
			return nil, gateway.BadRequest("tool_choice/name", "tool_choice: name %q is not among the tools", c.Name)
		}
		tc.Name = c.Name
	default:
		return nil, gateway.BadRequest("tool_choice/type", "tool_choice: type %q is not auto, any, tool or none", c.Type)
	}
	return tc, nil
}

// block is the image a source names.
func (s *ImageSource) block(param string) (gateway.Block, error) {
	if s == nil {
		return gateway.Block{}, gateway.BadRequest(param, "%s: an image block needs a source", param)
	}
	switch s.Type {
	case "base64":
		if s.MediaType == "" || s.Data == "" {
			return gateway.Block{}, gateway.BadRequest(param, "%s: a base64 source needs media_type and data", param)
		}
		return gateway.Block{Type: "image", MediaType: s.MediaType, Data: s.Data}, nil
	case "url":
		if !strings.HasPrefix(s.URL, "https://") && !strings.HasPrefix(s.URL, "http://") {
			return gateway.Block{}, gateway.BadRequest(param+"/url", "%s/url: an image URL must be https:// or http://", param)
		}
		return gateway.Block{Type: "image", URL: s.URL}, nil
	}
	return gateway.Block{}, gateway.BadRequest(param+"/type", "%s/type: image source type %q has no equivalent at this provider; base64 and url are translated", param, s.Type)
}

// untranslatable refuses, by name, the request fields no other provider
// has. context_management is taken only when it changes nothing: edits
// that clear earlier thinking while keeping all of it.
func (q *MessagesRequest) untranslatable() error {
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"container", q.Container}, {"mcp_servers", q.MCPServers}} {
		if !gateway.Absent(f.raw) {
			return gateway.BadRequest(f.name, "%s: has no equivalent at this provider; it is served by Anthropic providers only", f.name)
		}
	}
	if !gateway.Absent(q.ServiceTier) && string(q.ServiceTier) != `"auto"` {
		return gateway.BadRequest("service_tier", "service_tier: only auto has an equivalent at this provider")
	}
	if !gateway.Absent(q.Speed) && string(q.Speed) != `"standard"` {
		return gateway.BadRequest("speed", "speed: only standard has an equivalent at this provider; fast mode is served by Anthropic providers only")
	}
	if !gateway.Absent(q.InferenceGeo) && string(q.InferenceGeo) != `"global"` {
		// A residency asked for must not be dropped on the way to a
		// provider that cannot promise it.
		return gateway.BadRequest("inference_geo", "inference_geo: only global has an equivalent at this provider; a region is served by Anthropic providers only")
	}
	if gateway.Absent(q.ContextManagement) {
		return nil
	}
	var cm struct {
		Edits []struct {
			Type string          `json:"type"`
			Keep json.RawMessage `json:"keep"`
		} `json:"edits"`
	}
	if json.Unmarshal(q.ContextManagement, &cm) != nil {
		return gateway.BadRequest("context_management", "context_management: must be an object with edits")
	}
	for i, e := range cm.Edits {
		if !strings.HasPrefix(e.Type, "clear_thinking_") || string(bytes.TrimSpace(e.Keep)) != `"all"` {
			return gateway.BadRequest(fmt.Sprintf("context_management/edits/%d", i),
				"context_management/edits/%d: context editing has no equivalent at this provider (only a clear_thinking edit with keep \"all\", which clears nothing, is taken)", i)
		}
	}
	return nil
}

// reasoning reads thinking and output_config.effort: an Anthropic
// upstream gets them as they are, an OpenAI-shaped one the
// reasoning_effort they map to, once the messages' own efforts are read
// (effortTurns).
func (q *MessagesRequest) reasoning(out *gateway.Request) error {
	if !gateway.Absent(q.Thinking) {
		var th struct {
			Type         string `json:"type"`
			BudgetTokens *int   `json:"budget_tokens"`
			Display      string `json:"display"`
		}
		var keys map[string]json.RawMessage
		if json.Unmarshal(q.Thinking, &keys) != nil {
			return gateway.BadRequest("thinking", "thinking: must be an object with a type")
		}
		if json.Unmarshal(q.Thinking, &th) != nil {
			return gateway.BadRequest("thinking", "thinking: type must be a string, budget_tokens an integer and display a string")
		}
		for k := range keys {
			if k != "type" && k != "budget_tokens" && k != "display" {
				return gateway.BadRequest("thinking/"+k, "thinking/%s: has no equivalent at this provider", k)
			}
		}
		// omitted leaves the thinking out of the answer; any other display
		// (summarized, and the values Anthropic keeps adding: Claude Code
		// sends updates in its terminal, omitted with -p) shows what the
		// provider returns, the closest a translated answer comes.
		switch th.Type {
		case "enabled":
			if th.BudgetTokens == nil || *th.BudgetTokens < 1024 {
				return gateway.BadRequest("thinking/budget_tokens", "thinking/budget_tokens: thinking of type enabled needs budget_tokens of at least 1024")
			}
			out.Thinking = &gateway.Thinking{Type: th.Type, BudgetTokens: *th.BudgetTokens, Display: th.Display}
		case "adaptive", "disabled":
			out.Thinking = &gateway.Thinking{Type: th.Type, Display: th.Display}
		default:
			return gateway.BadRequest("thinking/type", "thinking/type: %q is not enabled, adaptive or disabled", th.Type)
		}
	}
	for k := range q.OutputConfig {
		if k != "effort" && k != "format" {
			return gateway.BadRequest("output_config/"+k, "output_config/%s: has no equivalent at this provider", k)
		}
	}
	if raw := q.OutputConfig["effort"]; !gateway.Absent(raw) {
		if json.Unmarshal(raw, &out.Effort) != nil || !slices.Contains(Efforts, out.Effort) {
			return gateway.BadRequest("output_config/effort", "output_config/effort: must be one of %s", strings.Join(Efforts, ", "))
		}
	}
	return nil
}

// effortTurns follows Anthropic's per-message effort through the
// messages as ToGateway reads them. A system message's own effort starts,
// right after a user turn with new input (anything but tool results only),
// with the reply to that turn; anywhere else (after an assistant turn, or
// a user turn of tool results only) with the next user turn with new
// input, so a change made inside a tool loop waits for the loop's end. It
// holds until another changes it; what is in force at the end is this
// call's.
type effortTurns struct {
	pending string // an effort waiting for a user turn with new input
	fresh   bool   // the last user or assistant message is a user turn with new input
}

func (t *effortTurns) user(blocks []gateway.Block, out *gateway.Request) {
	t.fresh = slices.ContainsFunc(blocks, func(b gateway.Block) bool { return b.Type != "tool_result" })
	if t.fresh && t.pending != "" {
		out.Effort, t.pending = t.pending, ""
	}
}

// system reads system message i's output_config: its effort, and nothing
// else, is carried.
func (t *effortTurns) system(i int, raw json.RawMessage, out *gateway.Request) error {
	if gateway.Absent(raw) {
		return nil
	}
	var cfg map[string]json.RawMessage
	if json.Unmarshal(raw, &cfg) != nil {
		return gateway.BadRequest(fmt.Sprintf("messages/%d/output_config", i), "messages/%d/output_config: must be an object", i)
	}
	for k, raw := range cfg {
		param := fmt.Sprintf("messages/%d/output_config/%s", i, k)
		if k != "effort" {
			return gateway.BadRequest(param, "%s: has no equivalent at this provider", param)
		}
		if gateway.Absent(raw) {
			continue
		}
		var e string
		if json.Unmarshal(raw, &e) != nil || !slices.Contains(Efforts, e) {
			return gateway.BadRequest(param, "%s: must be one of %s", param, strings.Join(Efforts, ", "))
		}
		if t.fresh {
			out.Effort, t.pending = e, ""
		} else {
			t.pending = e
		}
	}
	return nil
}

// structuredName names a messages request's structured output, which
// Anthropic leaves unnamed: OpenAI's json_schema needs a name, and
// Anthropic's forced tool one that is not a client tool's.
func structuredName(tools []gateway.Tool) string {
	name := "structured_output"
	for gateway.HasTool(tools, name) {
		name += "_"
	}
	return name
}

// outputFormat reads output_config.format ({type: json_schema, schema}):
// Anthropic's structured output, an OpenAI json_schema response format
// (strict, as Anthropic's output is constrained to the schema).
// The deprecated output_format is read alike (dropped, the answer would be
// free text where the client asked for its schema); both at once is a 400,
// as the SDKs refuse it.
func (q *MessagesRequest) outputFormat(out *gateway.Request) error {
	raw, at := q.OutputConfig["format"], "output_config/format"
	if !gateway.Absent(q.OutputFormat) {
		if !gateway.Absent(raw) {
			return gateway.BadRequest("output_format", "output_format: give output_config.format or output_format (its deprecated name), not both")
		}
		raw, at = q.OutputFormat, "output_format"
	}
	if gateway.Absent(raw) {
		return nil
	}
	var f struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	}
	if json.Unmarshal(raw, &f) != nil || f.Type != "json_schema" {
		return gateway.BadRequest(at+"/type", "%s/type: only json_schema is translated", at)
	}
	schema := bytes.TrimSpace(f.Schema)
	if len(schema) == 0 || schema[0] != '{' || !json.Valid(schema) {
		return gateway.BadRequest(at+"/schema", "%s/schema: must be a JSON Schema object", at)
	}
	if !gateway.ObjectRoot(schema) {
		// OpenAI's json_schema format takes an object at the root alone.
		return gateway.BadRequest(at+"/schema/type", "%s/schema/type: the schema must describe an object (type object) at its root", at)
	}
	// Anthropic's output keeps to the schema: strict where OpenAI's strict
	// mode takes the schema (it refuses optional properties Anthropic takes).
	out.Output = &gateway.OutputSchema{Name: structuredName(out.Tools), Schema: json.RawMessage(schema), Strict: gateway.StrictSchema(schema)}
	out.NeedsJSON = true
	return nil
}

// Stops is stop_sequences: strings, a null among them refused by its
// place (decoded as a []string, it was an empty stop sequence).
type Stops []string

func (s *Stops) UnmarshalJSON(b []byte) error {
	var all []*string
	if err := json.Unmarshal(b, &all); err != nil {
		return gateway.BadRequest("stop_sequences", "stop_sequences: must be an array of strings")
	}
	*s = make(Stops, len(all))
	for i, v := range all {
		if v == nil {
			return gateway.BadRequest(fmt.Sprintf("stop_sequences/%d", i), "stop_sequences/%d: must be a string, not null", i)
		}
		(*s)[i] = *v
	}
	return nil
}

func otherRole(role string) string {
	if role == "user" {
		return "assistant"
	}
	return "user"
}

// unreadableBlock says why content at param could not be read as blocks:
// not an array of objects, or which block, of which type, is not one this
// front reads (a type of Anthropic's whose fields differ from the ones
// translated, such as a search_result's string source).
func unreadableBlock(raw json.RawMessage, param string) error {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return gateway.BadRequest(param, "%s must be a string or an array of content blocks", param)
	}
	for i, it := range items {
		var b RequestBlock
		if json.Unmarshal(it, &b) == nil {
			continue
		}
		var typed struct {
			Type string `json:"type"`
		}
		at := fmt.Sprintf("%s/%d", param, i)
		if json.Unmarshal(it, &typed) != nil || typed.Type == "" {
			return gateway.BadRequest(at, "%s must be a content block: an object with a type", at)
		}
		switch typed.Type {
		case "text", "image", "thinking", "tool_use", "tool_result", "tool_reference", "tool_addition", "tool_removal":
			return gateway.BadRequest(at, "%s: a %s block with a field of the wrong type", at, typed.Type)
		}
		return untranslatedBlock(at, typed.Type)
	}
	return gateway.BadRequest(param, "%s must be a string or an array of content blocks", param)
}

// untranslatedBlock refuses a content block at at of a type no other
// provider has.
func untranslatedBlock(at, typ string) error {
	return gateway.BadRequest(at+"/type", "%s/type: content block type %q has no equivalent at this provider; text, image, tool_use, tool_result, tool_reference and thinking are translated", at, typ)
}

// untranslatable refuses, naming it under at, a field of the tool that
// another provider has no place for.
func (t MessagesTool) untranslatable(at string) error {
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"allowed_callers", t.AllowedCallers}, {"input_examples", t.InputExamples}} {
		if nonEmpty(f.raw) {
			return gateway.BadRequest(at+"/"+f.name, "%s/%s: has no equivalent at this provider; it is served by Anthropic providers only", at, f.name)
		}
	}
	return nil
}

// nonEmpty says whether a field holds something: not absent, null or an
// empty array.
func nonEmpty(raw json.RawMessage) bool {
	var a []json.RawMessage
	return !gateway.Absent(raw) && (json.Unmarshal(raw, &a) != nil || len(a) > 0)
}
