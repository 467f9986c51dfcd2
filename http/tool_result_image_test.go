package http_test

import (
	"strings"
	"testing"
)

// Claude Code's Read of an image answers with the image in the tool result.
// To a chat-completions model (whose tool message takes text only) it goes
// in a user message after the tool message; it was a 400, which ended the
// session.
func TestToolResultImageToChatCompletions(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, f))
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	for _, stream := range []bool{false, true} {
		r := e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 100, "stream": stream,
			"tools": []any{map[string]any{"name": "Read", "input_schema": map[string]any{"type": "object", "properties": map[string]any{"file_path": map[string]any{"type": "string"}}}}},
			"messages": []any{
				map[string]any{"role": "user", "content": "look at pic.png"},
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": map[string]any{"file_path": "/x/pic.png"}}}},
				map[string]any{"role": "user", "content": []any{
					map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": []any{map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": png}}}},
					map[string]any{"type": "text", "text": "what is it?"}}},
			}})
		// The fake names the roles it was sent (streamed, in two deltas).
		if r.status != 200 || !strings.Contains(string(r.raw), "user,assistant,tool,user") {
			t.Fatalf("stream %v: %d %s", stream, r.status, r.raw)
		}
	}
}
