package http_test

import (
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Structured output from OpenAI-shaped clients (the AI SDK's
// generateObject on chat completions and on Responses, LangChain's
// withStructuredOutput), as they recorded it, translated for Claude: the
// models after the 4.5 generation, which refuse a forced tool call, get
// Anthropic's own output_config.format and no tool_choice, and the
// client gets the JSON text back; a 4.5 model still gets the forced tool.
func TestStructuredOutputToClaudeByGeneration(t *testing.T) {
	const answer = `{"name":"Paris","population":2100000,"tags":["capital"],"kind":"city"}`
	text, _ := json.Marshal(answer)
	whole := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":` + string(text) +
		`}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":20}}`
	e, up := goldenEnv(t, "", whole, "anthropic")
	for _, c := range []struct{ file, path, text string }{
		{"ai-sdk-openai-chat-generate-object.json", "/v1/chat/completions", "choices.0.message.content"},
		{"langchain-openai-structured.json", "/v1/chat/completions", "choices.0.message.content"},
		{"ai-sdk-openai-responses-generate-object.json", "/v1/responses", "output.0.content.0.text"},
	} {
		call := capturedCalls(t, c.file, c.path)[0]
		body, err := sjson.SetBytes(call.body, "model", "anthropic:claude-sonnet-5-5")
		if err != nil {
			t.Fatal(err)
		}
		r := e.do("POST", c.path, e.tenantA, string(body))
		got := up.last(t).body
		if r.status != 200 || gjson.GetBytes(r.raw, c.text).Str != answer {
			t.Fatalf("%s: %d %s", c.file, r.status, r.raw)
		}
		if gjson.GetBytes(got, "output_config.format.type").Str != "json_schema" || !gjson.GetBytes(got, "output_config.format.schema.properties").IsObject() ||
			gjson.GetBytes(got, "tool_choice").Exists() || gjson.GetBytes(got, "tools").Exists() {
			t.Fatalf("%s: Claude Sonnet 5.5 got %s", c.file, got)
		}

		body, _ = sjson.SetBytes(call.body, "model", "anthropic:claude-haiku-4-5")
		e.do("POST", c.path, e.tenantA, string(body))
		got = up.last(t).body
		if gjson.GetBytes(got, "tool_choice.type").Str != "tool" || gjson.GetBytes(got, "output_config.format").Exists() {
			t.Fatalf("%s: Claude Haiku 4.5 got %s", c.file, got)
		}
	}
}
