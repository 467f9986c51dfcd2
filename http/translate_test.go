package http_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/gateway"
)

// Translation between the formats (docs/api.md, Translation): what the
// other provider receives, for bodies real clients sent
// (testdata/clients), and what is refused by name.

// captured is the body of the nth request with a body in a client capture.
func captured(t *testing.T, file string, n int) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "clients", file))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Exchanges []struct {
			Body map[string]any `json:"body"`
		} `json:"exchanges"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	for _, ex := range c.Exchanges {
		if ex.Body == nil {
			continue
		}
		if n == 0 {
			return ex.Body
		}
		n--
	}
	t.Fatalf("%s: no request %d with a body", file, n)
	return nil
}

// as is a captured body sent to another model, not streamed.
func as(body map[string]any, model string) map[string]any {
	body["model"] = model
	delete(body, "stream")
	delete(body, "stream_options")
	return body
}

func TestTranslateSystemMessagesInMessagesList(t *testing.T) {
	e, u := newToolEnv(t)
	e.must(e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 50,
		"system": []any{map[string]any{"type": "text", "text": "top", "cache_control": map[string]any{"type": "ephemeral"}}},
		"messages": []any{
			map[string]any{"role": "user", "content": "hi"},
			map[string]any{"role": "system", "content": "mid"},
			map[string]any{"role": "system", "content": []any{map[string]any{"type": "text", "text": "late"}}},
		}}), 200)
	got := upstreamGot(t, u.lastOpenAI)
	if g := jsonOf(got["messages"]); g != `[{"content":"top\n\nmid\n\nlate","role":"system"},{"content":"hi","role":"user"}]` {
		t.Fatalf("OpenAI got messages %s", g)
	}
	// Only system messages: nothing to answer.
	r := e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 50,
		"messages": []any{map[string]any{"role": "system", "content": "x"}}})
	if r.status != 400 || !strings.Contains(r.str("error.message"), "messages") {
		t.Fatalf("only system messages: %d %s", r.status, r.raw)
	}
}

// A system message's own effort (Anthropic's per-message effort, which
// Claude Code 2.1.332 sends on its system message) sets the effort from
// where it stands on: the one in force at the end is reasoning_effort.
func TestTranslatePerMessageEffort(t *testing.T) {
	e, u := newToolEnv(t)
	sys := func(cfg any) map[string]any {
		return map[string]any{"role": "system", "content": []any{}, "output_config": cfg}
	}
	user := map[string]any{"role": "user", "content": "x"}
	use := map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": map[string]any{}}}}
	result := map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}
	results := map[string]any{"role": "user", "content": []any{result}}
	withText := map[string]any{"role": "user", "content": []any{result, map[string]any{"type": "text", "text": "and tomorrow?"}}}
	for _, c := range []struct {
		top  any // the request's output_config, or nil
		msgs []any
		want any
	}{
		{map[string]any{"effort": "medium"}, []any{user, map[string]any{"role": "system", "content": "env", "output_config": map[string]any{"effort": "medium"}}}, "medium"},
		{map[string]any{"effort": "high"}, []any{user, sys(map[string]any{"effort": "low"}), user}, "low"},
		{map[string]any{"effort": "high"}, []any{sys(map[string]any{"effort": "low"}), user, sys(map[string]any{"effort": "max"}), user}, "xhigh"},
		{nil, []any{user, sys(map[string]any{"effort": "low"})}, "low"},
		{map[string]any{"effort": "low"}, []any{user, map[string]any{"role": "system", "content": "y", "output_config": map[string]any{}}}, "low"},
		// Where it stands decides when it starts (Anthropic's docs): right
		// after a user turn with new input, with the reply to that turn;
		// anywhere else (after an assistant turn, or after a user turn of
		// tool results only, which is no new input) from the next user
		// turn with new input. A change made inside a tool loop waits.
		{map[string]any{"effort": "high"}, []any{user, use, results, sys(map[string]any{"effort": "low"})}, "high"},
		{map[string]any{"effort": "high"}, []any{user, sys(map[string]any{"effort": "medium"}), use, results, sys(map[string]any{"effort": "low"})}, "medium"},
		{map[string]any{"effort": "high"}, []any{user, use, sys(map[string]any{"effort": "low"}), results}, "high"},
		{map[string]any{"effort": "high"}, []any{user, sys(map[string]any{"effort": "low"}), use, results}, "low"},
		{map[string]any{"effort": "high"}, []any{user, use, withText, sys(map[string]any{"effort": "low"})}, "low"},
		{map[string]any{"effort": "high"}, []any{user, use, results, sys(map[string]any{"effort": "low"}), use, user}, "low"},
	} {
		body := map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 500, "messages": c.msgs}
		if c.top != nil {
			body["output_config"] = c.top
		}
		e.must(e.do("POST", "/v1/messages", e.tenantA, body), 200)
		if got := upstreamGot(t, u.lastOpenAI); got["reasoning_effort"] != c.want {
			t.Errorf("%s: reasoning_effort %v, want %v", jsonOf(body), got["reasoning_effort"], c.want)
		}
	}
	// What cannot be carried is refused by name, and nothing reaches the upstream.
	for _, c := range []struct {
		cfg   any
		param string
	}{
		{map[string]any{"effort": "extreme"}, "messages/1/output_config/effort"},
		{map[string]any{"format": map[string]any{"type": "json_schema"}}, "messages/1/output_config/format"},
		{"low", "messages/1/output_config"},
	} {
		r := e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 50,
			"messages": []any{user, sys(c.cfg)}})
		if r.status != 400 || r.str("error.param") != c.param && !strings.Contains(r.str("error.message"), anPath(c.param)) {
			t.Errorf("output_config %v: %d %s; want 400 naming %s", c.cfg, r.status, r.raw, c.param)
		}
	}
	if n := len(u.lastOpenAI); n != 0 {
		t.Errorf("refused requests reached the upstream: %d calls", n)
	}
}

// A Claude Code turn (25 tools, thinking adaptive, effort high, a system
// message in the list, cache_control, a keep-all clear_thinking edit,
// metadata.user_id) translates whole to an OpenAI model.
func TestTranslateClaudeCodeTurnToOpenAI(t *testing.T) {
	e, u := newToolEnv(t)
	body := captured(t, "claude-code-turn.json", 0)
	system := body["messages"].([]any)[1].(map[string]any)["content"].(string)
	userID := body["metadata"].(map[string]any)["user_id"].(string)
	e.must(e.do("POST", "/v1/messages", e.tenantA, as(body, "openai:gpt-4o-mini")), 200)
	got := upstreamGot(t, u.lastOpenAI)
	msgs := got["messages"].([]any)
	first := msgs[0].(map[string]any)
	if first["role"] != "system" || !strings.HasPrefix(first["content"].(string), "x-anthropic-billing-header") || !strings.HasSuffix(first["content"].(string), "\n\n"+system) {
		t.Fatalf("system prompt: %.300v", first)
	}
	if len(msgs) != 2 || msgs[1].(map[string]any)["role"] != "user" {
		t.Fatalf("messages: %d", len(msgs))
	}
	// Claude Code's user id runs past 64 characters: it goes as its hash.
	// Its cap of 64,000 goes as gpt-4o-mini's most, 16,384, which OpenAI
	// takes (it refuses more).
	sum := sha256.Sum256([]byte(userID))
	if got["reasoning_effort"] != "high" || len(userID) <= 64 || got["user"] != hex.EncodeToString(sum[:]) || len(got["tools"].([]any)) != 25 || got["max_completion_tokens"] != 16384.0 {
		t.Fatalf("OpenAI got reasoning_effort %v, user %v, %d tools, cap %v", got["reasoning_effort"], got["user"], len(got["tools"].([]any)), got["max_completion_tokens"])
	}
	for _, k := range []string{"thinking", "output_config", "context_management", "metadata"} {
		if got[k] != nil {
			t.Errorf("OpenAI got Anthropic's %s", k)
		}
	}
	if strings.Contains(jsonOf(got), `"cache_control"`) {
		t.Error("OpenAI got cache_control")
	}
	// The tool loop: tool_use and its tool_result (with cache_control).
	body = captured(t, "claude-code-tool-turn.json", 2)
	e.must(e.do("POST", "/v1/messages", e.tenantA, as(body, "openai:gpt-4o-mini")), 200)
	got = upstreamGot(t, u.lastOpenAI)
	msgs = got["messages"].([]any)
	if tool := msgs[len(msgs)-1].(map[string]any); tool["role"] != "tool" || tool["tool_call_id"] != "toolu_rec000002" || !strings.Contains(tool["content"].(string), "hello from demo") {
		t.Fatalf("tool result: %v", tool)
	}
	// Its title request: structured output with thinking disabled, so no
	// reasoning_effort.
	body = captured(t, "claude-code-tool-turn.json", 0)
	e.must(e.do("POST", "/v1/messages", e.tenantA, as(body, "openai:gpt-4o-mini")), 200)
	got = upstreamGot(t, u.lastOpenAI)
	want := `{"json_schema":{"name":"structured_output","schema":{"additionalProperties":false,"properties":{"title":{"type":"string"}},"required":["title"],"type":"object"},"strict":true},"type":"json_schema"}`
	if g := jsonOf(got["response_format"]); g != want || got["reasoning_effort"] != nil {
		t.Fatalf("title request: response_format %s, reasoning_effort %v", g, got["reasoning_effort"])
	}
}

func TestTranslateImages(t *testing.T) {
	e, u := newToolEnv(t)
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	// The AI SDK's Anthropic image request, to OpenAI.
	e.must(e.do("POST", "/v1/messages", e.tenantA, as(captured(t, "ai-sdk-anthropic-image.json", 0), "openai:gpt-4o-mini")), 200)
	got := upstreamGot(t, u.lastOpenAI)
	want := `[{"content":[{"text":"What is in these images?","type":"text"},{"image_url":{"url":"data:image/png;base64,` + png + `"},"type":"image_url"},{"image_url":{"url":"https://example.com/cat.png"},"type":"image_url"}],"role":"user"}]`
	if g := jsonOf(got["messages"]); g != want {
		t.Fatalf("OpenAI got %s\nwant %s", g, want)
	}
	// The AI SDK's chat image request, to Anthropic.
	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, as(captured(t, "ai-sdk-openai-chat-image.json", 0), "anthropic:claude-haiku-4-5")), 200)
	got = upstreamGot(t, u.lastAnthropic)
	want = `[{"content":[{"text":"What is in these images?","type":"text"},{"source":{"data":"` + png + `","media_type":"image/png","type":"base64"},"type":"image"},{"source":{"type":"url","url":"https://example.com/cat.png"},"type":"image"}],"role":"user"}]`
	if g := jsonOf(got["messages"]); g != want {
		t.Fatalf("Anthropic got %s\nwant %s", g, want)
	}
}

func TestTranslateStructuredOutputFromMessages(t *testing.T) {
	e, u := newToolEnv(t)
	body := captured(t, "ai-sdk-anthropic-generate-object.json", 0)
	schema := body["output_config"].(map[string]any)["format"].(map[string]any)["schema"].(map[string]any)
	r := e.must(e.do("POST", "/v1/messages", e.tenantA, as(body, "openai:gpt-4o-mini")), 200)
	got := upstreamGot(t, u.lastOpenAI)
	delete(schema, "$schema") // a schema's identity is not sent
	js := got["response_format"].(map[string]any)["json_schema"].(map[string]any)
	if got["response_format"].(map[string]any)["type"] != "json_schema" || js["name"] != "structured_output" || js["strict"] != true || jsonOf(js["schema"]) != jsonOf(schema) {
		t.Fatalf("OpenAI got response_format %s", jsonOf(got["response_format"]))
	}
	if r.str("type") != "message" {
		t.Fatalf("answer: %s", r.raw)
	}
	// A format other than json_schema, or a schema that is not one.
	for _, f := range []map[string]any{{"type": "text"}, {"type": "json_schema", "schema": "x"}} {
		r := e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 10,
			"messages": []any{map[string]any{"role": "user", "content": "x"}}, "output_config": map[string]any{"format": f}})
		if r.status != 400 || !strings.Contains(r.str("error.message"), "output_config.format.") {
			t.Fatalf("format %v: %d %s", f, r.status, r.raw)
		}
	}
}

// output_format, output_config.format's deprecated name, which Anthropic
// still takes, is the same structured output, not dropped.
func TestTranslateDeprecatedOutputFormatFromMessages(t *testing.T) {
	e, u := newToolEnv(t)
	schema := map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "number"}}}
	body := map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "x"}},
		"output_format": map[string]any{"type": "json_schema", "schema": schema}}
	e.must(e.do("POST", "/v1/messages", e.tenantA, body), 200)
	got := upstreamGot(t, u.lastOpenAI)
	rf, _ := got["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	// Not strict: an optional property, which OpenAI's strict mode refuses.
	if rf["type"] != "json_schema" || js["strict"] != false || jsonOf(js["schema"]) != jsonOf(schema) {
		t.Fatalf("OpenAI got response_format %s", jsonOf(got["response_format"]))
	}
	body["output_format"] = map[string]any{"type": "text"}
	if r := e.do("POST", "/v1/messages", e.tenantA, body); r.status != 400 || !strings.HasPrefix(r.str("error.message"), "output_format.type") {
		t.Fatalf("a format other than json_schema: %d %s", r.status, r.raw)
	}
	body["output_format"] = map[string]any{"type": "json_schema", "schema": schema}
	body["output_config"] = map[string]any{"format": map[string]any{"type": "json_schema", "schema": schema}}
	if r := e.do("POST", "/v1/messages", e.tenantA, body); r.status != 400 || !strings.HasPrefix(r.str("error.message"), "output_format") {
		t.Fatalf("both names: %d %s", r.status, r.raw)
	}
}

// A messages tool's allowed_callers (only code execution may call it) and
// input_examples (shown to the model with the tool) have no place in an
// OpenAI function: refused by name, not dropped; passed through they go.
func TestTranslateToolCallersAndExamplesRefused(t *testing.T) {
	e, u := newToolEnv(t)
	for _, c := range []struct{ field, want string }{
		{"allowed_callers", "tools/0/allowed_callers"},
		{"input_examples", "tools/0/input_examples"},
	} {
		var v any = []any{"code_execution_20250825"}
		if c.field == "input_examples" {
			v = []any{map[string]any{"city": "Paris"}}
		}
		tool := map[string]any{"name": "get_weather", "input_schema": map[string]any{"type": "object"}, c.field: v}
		body := map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 10, "tools": []any{tool},
			"messages": []any{map[string]any{"role": "user", "content": "x"}}}
		if r := e.do("POST", "/v1/messages", e.tenantA, body); r.status != 400 || !strings.HasPrefix(r.str("error.message"), anPath(c.want)) {
			t.Fatalf("%s translated: %d %s", c.field, r.status, r.raw)
		}
		// By value in a tool addition, likewise.
		add := map[string]any{"role": "system", "content": []any{map[string]any{"type": "tool_addition",
			"tool": map[string]any{"type": "tool_definition", "definition": tool}}}}
		body["tools"] = []any{}
		body["messages"] = []any{add, map[string]any{"role": "user", "content": "x"}}
		if r := e.do("POST", "/v1/messages", e.tenantA, body); r.status != 400 || !strings.Contains(r.str("error.message"), ".definition."+c.field) {
			t.Fatalf("%s in a tool addition: %d %s", c.field, r.status, r.raw)
		}
		body["tools"], body["messages"] = []any{tool}, []any{map[string]any{"role": "user", "content": "x"}}
		body["model"] = "anthropic:claude-haiku-4-5"
		e.must(e.do("POST", "/v1/messages", e.tenantA, body), 200)
		if got := upstreamGot(t, u.lastAnthropic); jsonOf(got["tools"].([]any)[0].(map[string]any)[c.field]) != jsonOf(v) {
			t.Fatalf("passed through, %s: %s", c.field, jsonOf(got["tools"]))
		}
	}
	// Empty, or null, they say nothing.
	body := map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "x"}},
		"tools": []any{map[string]any{"name": "f", "input_schema": map[string]any{"type": "object"}, "allowed_callers": nil, "input_examples": []any{}}}}
	e.must(e.do("POST", "/v1/messages", e.tenantA, body), 200)
}

func TestTranslateReasoning(t *testing.T) {
	e, u := newToolEnv(t)
	msgs := []any{map[string]any{"role": "user", "content": "x"}}
	// Messages front -> OpenAI: reasoning_effort.
	for _, c := range []struct {
		extra map[string]any
		want  any
	}{
		{map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 31999}}, "high"},
		{map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 8000}}, "medium"},
		{map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 2000}}, "low"},
		{map[string]any{"thinking": map[string]any{"type": "adaptive"}}, nil},
		{map[string]any{"thinking": map[string]any{"type": "adaptive"}, "output_config": map[string]any{"effort": "medium"}}, "medium"},
		{map[string]any{"output_config": map[string]any{"effort": "max"}}, "xhigh"},
		{map[string]any{"thinking": map[string]any{"type": "disabled"}, "output_config": map[string]any{"effort": "high"}}, nil},
	} {
		body := map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 64000, "messages": msgs}
		for k, v := range c.extra {
			body[k] = v
		}
		e.must(e.do("POST", "/v1/messages", e.tenantA, body), 200)
		if got := upstreamGot(t, u.lastOpenAI); got["reasoning_effort"] != c.want {
			t.Errorf("%v: reasoning_effort %v, want %v", c.extra, got["reasoning_effort"], c.want)
		}
	}
	// Chat front -> Anthropic: a fixed budget below the cap for the models
	// that take one, adaptive thinking and an effort for later ones.
	for _, c := range []struct {
		model string
		extra map[string]any
		want  string // thinking, output_config, max_tokens
	}{
		{"anthropic:claude-haiku-4-5", map[string]any{"reasoning_effort": "high", "max_completion_tokens": 20000}, `{"budget_tokens":16384,"type":"enabled"} null 20000`},
		{"anthropic:claude-haiku-4-5", map[string]any{"reasoning_effort": "high", "max_tokens": 5000}, `{"budget_tokens":4999,"type":"enabled"} null 5000`},
		// Without a cap: the model's most output (64,000 for Haiku 4.5),
		// at most 21,333 for a whole answer, the budget leaving 4,096.
		{"anthropic:claude-haiku-4-5", map[string]any{"reasoning_effort": "medium"}, `{"budget_tokens":8192,"type":"enabled"} null 21333`},
		{"anthropic:claude-haiku-4-5", map[string]any{"reasoning_effort": "xhigh"}, `{"budget_tokens":17237,"type":"enabled"} null 21333`},
		{"anthropic:claude-haiku-4-5", map[string]any{"reasoning_effort": "xhigh", "stream": true}, `{"budget_tokens":32768,"type":"enabled"} null 64000`},
		{"anthropic:claude-haiku-4-5", map[string]any{"reasoning_effort": "low", "max_tokens": 1000}, `null null 1000`},
		{"anthropic:claude-haiku-4-5", map[string]any{"reasoning_effort": "none"}, `null null 21333`},
		{"anthropic:claude-haiku-4-5", map[string]any{"stream": true}, `null null 64000`},
		{"anthropic:claude-sonnet-5-5", map[string]any{"reasoning_effort": "minimal"}, `{"type":"adaptive"} {"effort":"low"} 21333`},
		{"anthropic:claude-sonnet-5-5", map[string]any{"reasoning_effort": "minimal", "stream": true}, `{"type":"adaptive"} {"effort":"low"} 128000`},
		{"anthropic:claude-sonnet-5-5", map[string]any{"reasoning_effort": "high", "max_tokens": 900}, `{"type":"adaptive"} {"effort":"high"} 900`},
	} {
		body := map[string]any{"model": c.model, "messages": msgs}
		for k, v := range c.extra {
			body[k] = v
		}
		e.must(e.do("POST", "/v1/chat/completions", e.tenantA, body), 200)
		got := upstreamGot(t, u.lastAnthropic)
		if g := jsonOf(got["thinking"]) + " " + jsonOf(got["output_config"]) + " " + jsonOf(got["max_tokens"]); g != c.want {
			t.Errorf("%s %v: Anthropic got %s, want %s", c.model, c.extra, g, c.want)
		}
	}
	// Structured output with thinking on: the native format, no forced tool.
	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "anthropic:claude-sonnet-5-5", "messages": msgs, "reasoning_effort": "low",
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "report", "schema": weatherSchema}}}), 200)
	got := upstreamGot(t, u.lastAnthropic)
	closed := maps.Clone(weatherSchema)
	closed["additionalProperties"] = false // the subset Claude's structured output takes
	if g := jsonOf(got["output_config"]); g != `{"effort":"low","format":{"schema":`+jsonOf(closed)+`,"type":"json_schema"}}` || got["tool_choice"] != nil || got["tools"] != nil {
		t.Fatalf("structured with thinking: output_config %s, tool_choice %v, tools %v", g, got["tool_choice"], got["tools"])
	}
	for _, c := range []struct {
		extra map[string]any
		param string
	}{
		{map[string]any{"thinking": map[string]any{"type": "enabled"}}, "thinking/budget_tokens"},
		{map[string]any{"thinking": map[string]any{"type": "sometimes"}}, "thinking/type"},
		{map[string]any{"output_config": map[string]any{"effort": "extreme"}}, "output_config/effort"},
		{map[string]any{"output_config": map[string]any{"task_budget": map[string]any{"total": 10}}}, "output_config/task_budget"},
	} {
		body := map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 64000, "messages": msgs}
		for k, v := range c.extra {
			body[k] = v
		}
		if r := e.do("POST", "/v1/messages", e.tenantA, body); r.status != 400 || !strings.Contains(r.str("error.message"), anPath(c.param)) {
			t.Errorf("%v: %d %s", c.extra, r.status, r.raw)
		}
	}
}

// Anthropic's thinking reaches a chat client as reasoning_content,
// whole or streamed; earlier thinking in a messages history is not sent
// to OpenAI, whose chat API takes no reasoning back.
func TestTranslateThinkingAnswers(t *testing.T) {
	an := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"stream":true`) {
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"Let me think.","signature":"sig"},{"type":"text","text":"Four."}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":9}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range [][2]string{
			{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`},
			{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think."}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`},
			{"content_block_stop", `{"type":"content_block_stop","index":0}`},
			{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Four."}}`},
			{"content_block_stop", `{"type":"content_block_stop","index":1}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}`},
			{"message_stop", `{"type":"message_stop"}`},
		} {
			sse(w, ev[0], ev[1])
		}
	}))
	defer an.Close()
	vars := map[string]string{"ANTHROPIC_BASE_URL": an.URL, "ANTHROPIC_API_KEY": "k"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, cat)
	body := map[string]any{"model": "anthropic:claude-sonnet-5-5", "reasoning_effort": "high", "messages": []any{map[string]any{"role": "user", "content": "2+2?"}}}
	r := e.must(e.do("POST", "/v1/chat/completions", e.tenantA, body), 200)
	msg := r.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if msg["reasoning_content"] != "Let me think." || msg["content"] != "Four." {
		t.Fatalf("answer: %s", r.raw)
	}
	body["stream"] = true
	r = e.must(e.do("POST", "/v1/chat/completions", e.tenantA, body), 200)
	if !strings.Contains(string(r.raw), `"reasoning_content":"Let me think."`) || !strings.Contains(string(r.raw), `"content":"Four."`) || strings.Contains(string(r.raw), "sig") {
		t.Fatalf("stream: %s", r.raw)
	}

	e2, u := newToolEnv(t)
	e2.must(e2.do("POST", "/v1/messages", e2.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 50, "messages": []any{
		map[string]any{"role": "user", "content": "2+2?"},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "thinking", "thinking": "Let me think.", "signature": "sig"}, map[string]any{"type": "text", "text": "Four."}}},
		map[string]any{"role": "user", "content": "and 3+3?"},
	}}), 200)
	if g := jsonOf(upstreamGot(t, u.lastOpenAI)["messages"]); g != `[{"content":"2+2?","role":"user"},{"content":"Four.","role":"assistant"},{"content":"and 3+3?","role":"user"}]` {
		t.Fatalf("OpenAI got %s", g)
	}
}

// What has no equivalent is refused with 400 naming it, before any
// upstream call.
func TestTranslateRefusesByName(t *testing.T) {
	e, u := newToolEnv(t)
	user := func(content ...any) []any { return []any{map[string]any{"role": "user", "content": content}} }
	text := map[string]any{"type": "text", "text": "x"}
	for _, c := range []struct {
		body  map[string]any
		param string
	}{
		{map[string]any{"messages": user(text, map[string]any{"type": "document", "source": map[string]any{"type": "text", "media_type": "text/plain", "data": "x"}})}, "messages/0/content/1/type"},
		{map[string]any{"messages": user(text, map[string]any{"type": "search_result"})}, "messages/0/content/1/type"},
		{map[string]any{"messages": user(map[string]any{"type": "image", "source": map[string]any{"type": "file", "file_id": "f"}})}, "messages/0/content/0/source/type"},
		{map[string]any{"messages": user(map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": "ftp://x"}})}, "messages/0/content/0/source/url"},
		{map[string]any{"messages": user(map[string]any{"type": "tool_result", "tool_use_id": "t", "content": []any{map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": "ftp://x/y.png"}}}})}, "messages/0/content/0/content/0/source/url"},
		{map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "redacted_thinking", "data": "e"}}}}}, "messages/1/content/0/type"},
		{map[string]any{"messages": user(text), "container": "c"}, "container"},
		{map[string]any{"messages": user(text), "mcp_servers": []any{map[string]any{"type": "url", "url": "https://m", "name": "m"}}}, "mcp_servers"},
		{map[string]any{"messages": user(text), "context_management": map[string]any{"edits": []any{map[string]any{"type": "clear_tool_uses_20250919"}}}}, "context_management/edits/0"},
		{map[string]any{"messages": user(text), "context_management": map[string]any{"edits": []any{map[string]any{"type": "clear_thinking_20251015", "keep": map[string]any{"type": "thinking_turns", "value": 1}}}}}, "context_management/edits/0"},
		{map[string]any{"messages": user(text), "tools": []any{map[string]any{"type": "web_search_20250305", "name": "web_search"}}}, "tools.0.type"},
		{map[string]any{"messages": user(text), "tools": []any{map[string]any{"name": "f"}}}, "tools.0.input_schema"},
		{map[string]any{"messages": user(text), "tools": []any{map[string]any{"name": "f", "input_schema": "x"}}}, "tools.0.input_schema"},
	} {
		c.body["model"], c.body["max_tokens"] = "openai:gpt-4o-mini", 10
		r := e.do("POST", "/v1/messages", e.tenantA, c.body)
		if r.status != 400 || !strings.Contains(r.str("error.message"), anPath(c.param)) {
			t.Errorf("messages %s: %d %s", c.param, r.status, r.raw)
		}
	}
	userParts := func(parts ...any) []any { return []any{map[string]any{"role": "user", "content": parts}} }
	for _, c := range []struct {
		msgs  []any
		param string
	}{
		{userParts(map[string]any{"type": "text", "text": "x"}, map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": "x", "format": "wav"}}), "messages/0/content/1/type"},
		{userParts(map[string]any{"type": "file", "file": map[string]any{"file_id": "f"}}), "messages/0/content/0/type"},
		{userParts(map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png,xyz"}}), "messages/0/content/0/image_url/url"},
		{userParts(map[string]any{"type": "image_url", "image_url": map[string]any{"url": "file:///etc/passwd"}}), "messages/0/content/0/image_url/url"},
		{[]any{map[string]any{"role": "system", "content": []any{map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://x/y.png"}}}}, map[string]any{"role": "user", "content": "x"}}, "messages/0/content/0/type"},
	} {
		r := e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "messages": c.msgs})
		if r.status != 400 || r.str("error.param") != oaPath(c.param) || !strings.Contains(r.str("error.message"), oaPath(c.param)) {
			t.Errorf("chat %s: %d %s", c.param, r.status, r.raw)
		}
	}
	if len(u.lastOpenAI) != 0 || len(u.lastAnthropic) != 0 {
		t.Error("a refused request reached an upstream")
	}
}

// Stop sequences cross both ways.
func TestTranslateStopSequences(t *testing.T) {
	e, u := newToolEnv(t)
	msgs := []any{map[string]any{"role": "user", "content": "x"}}
	e.must(e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 10, "messages": msgs, "stop_sequences": []string{"END", "STOP"}}), 200)
	if g := jsonOf(upstreamGot(t, u.lastOpenAI)["stop"]); g != `["END","STOP"]` {
		t.Errorf("OpenAI got stop %s", g)
	}
	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "messages": msgs, "stop": "END"}), 200)
	if g := jsonOf(upstreamGot(t, u.lastAnthropic)["stop_sequences"]); g != `["END"]` {
		t.Errorf("Anthropic got stop_sequences %s", g)
	}
}

// What only OpenAI's chat completions serves is refused, by name, when the
// call is translated (never answered without it), before any upstream call;
// the end user of safety_identifier is carried as user's.
func TestChatToAnthropicRefusesOpenAIOnly(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, f))
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct{ extra, param string }{
		{`"functions":[{"name":"f"}]`, "functions"},
		{`"function_call":"auto"`, "function_call"},
		{`"audio":{"voice":"alloy","format":"wav"},"modalities":["text","audio"]`, "audio"},
		{`"modalities":["text","audio"]`, "modalities"},
		{`"web_search_options":{}`, "web_search_options"},
		{`"verbosity":"low"`, "verbosity"},
		{`"reasoning_effort":"bogus"`, "reasoning_effort"},
		{`"user":"u1","safety_identifier":"u2"`, "safety_identifier"},
		{`"service_tier":"priority"`, "service_tier"},
		{`"store":true`, "store"},
		{`"metadata":{"k":"v"}`, "metadata"},
	} {
		r := e.do("POST", "/v1/chat/completions", e.tenantA, `{"model":"anthropic:claude-haiku-4-5",`+msgs+`,`+c.extra+`}`)
		if r.status != 400 || r.str("error.param") != oaPath(c.param) || !strings.Contains(r.str("error.message"), oaPath(c.param)) {
			t.Errorf("%s: %d %s", c.extra, r.status, r.raw)
		}
	}
	for _, m := range []string{`{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}}`,
		`{"role":"assistant","audio":{"id":"audio_1"}}`, `{"role":"assistant","content":null,"refusal":"I can't"}`,
		`{"role":"assistant","content":"hello","name":"alice"}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"not json at all"}}]}`} {
		r := e.do("POST", "/v1/chat/completions", e.tenantA, `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"},`+m+`,{"role":"user","content":"and?"}]}`)
		if r.status != 400 || !strings.HasPrefix(r.str("error.param"), "messages[1].") {
			t.Errorf("%s: %d %s", m, r.status, r.raw)
		}
	}
	if n := f.calls.Load(); n != 0 {
		t.Fatalf("the upstreams got %d calls", n)
	}
	// Accepted: text alone, a prediction (a latency hint), the same end
	// user twice, the default tier, nothing stored or tagged.
	r := e.do("POST", "/v1/chat/completions", e.tenantA, `{"model":"anthropic:claude-haiku-4-5",`+msgs+`,"modalities":["text"],"prediction":{"type":"content","content":"x"},"user":"u1","safety_identifier":"u1","reasoning_effort":"low",`+
		`"service_tier":"auto","store":false,"metadata":{}}`)
	if r.status != 200 {
		t.Fatalf("accepted fields: %d %s", r.status, r.raw)
	}
}

// Messages to OpenAI: a strict tool stays strict; a structured output
// schema that is not an object at its root is refused (OpenAI's format
// takes none); and an unknown reasoning effort on the Responses front.
func TestMessagesToOpenAIStrictAndSchema(t *testing.T) {
	u := newToolUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, &fakeUpstreams{openai: u.openai, anthropic: u.anthropic}))
	r := e.do("POST", "/v1/messages", e.tenantA, `{"model":"openai:gpt-4o-mini","max_tokens":64,"messages":[{"role":"user","content":"hi"}],`+
		`"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false},"strict":true}]}`)
	if r.status != 200 {
		t.Fatalf("strict tool: %d %s", r.status, r.raw)
	}
	sent := <-u.lastOpenAI
	if !gjson.GetBytes(sent, "tools.0.function.strict").Bool() {
		t.Fatalf("OpenAI got %s", sent)
	}
	r = e.do("POST", "/v1/messages", e.tenantA, `{"model":"openai:gpt-4o-mini","max_tokens":64,"messages":[{"role":"user","content":"hi"}],`+
		`"output_config":{"format":{"type":"json_schema","schema":{"type":"array","items":{"type":"string"}}}}}`)
	if r.status != 400 || !strings.HasPrefix(r.str("error.message"), "output_config.format.schema.type") {
		t.Fatalf("an array schema: %d %s", r.status, r.raw)
	}
	r = e.do("POST", "/v1/responses", e.tenantA, `{"model":"anthropic:claude-haiku-4-5","input":"hi","reasoning":{"effort":"bogus"}}`)
	if r.status != 400 || r.str("error.param") != "reasoning.effort" {
		t.Fatalf("an unknown effort: %d %s", r.status, r.raw)
	}
	// What OpenAI has no place for, refused by name: a tier, a text's
	// citations, a tool without a name.
	for _, c := range []struct{ extra, param string }{
		{`"service_tier":"standard_only","messages":[{"role":"user","content":"hi"}]`, "service_tier"},
		{`"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"Paris","citations":[{"type":"char_location","cited_text":"Paris","document_index":0,"start_char_index":0,"end_char_index":5}]}]},{"role":"user","content":"and?"}]`, "messages/1/content/0/citations"},
		{`"messages":[{"role":"user","content":"hi"}],"tools":[{}]`, "tools.0.name"},
		// A tool_use's input is an object, and the blocks stand in the
		// turns the Messages API has them in: not dropped or sent on as
		// something else.
		{`"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":"notobj"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"}]}]`, "messages/1/content/0/input"},
		{`"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":[1,2]}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"}]}]`, "messages/1/content/0/input"},
		{`"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","name":"f","input":{}}]},{"role":"user","content":"r"}]`, "messages/1/content/0/id"},
		{`"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","content":"r"}]}]`, "messages/2/content/0/tool_use_id"},
		{`"messages":[{"role":"user","content":[{"type":"thinking","thinking":"x","signature":"s"},{"type":"text","text":"hi"}]}]`, "messages/0/content/0/type"},
		{`"messages":[{"role":"user","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]}]`, "messages/0/content/0/type"},
		{`"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"}]}]`, "messages/1/content/0/type"},
		// A block of a type that is not translated, whose fields differ from
		// those that are, is named as such, not as content that is not blocks.
		{`"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"search_result","source":"https://example.com","title":"t","content":[{"type":"text","text":"x"}]}]}]}]`, "messages/2/content/0/content/0/type: content block type \"search_result\""},
	} {
		r := e.do("POST", "/v1/messages", e.tenantA, `{"model":"openai:gpt-4o-mini","max_tokens":64,`+c.extra+`}`)
		if r.status != 400 || !strings.HasPrefix(r.str("error.message"), anPath(c.param)) {
			t.Errorf("%s: %d %s", c.extra, r.status, r.raw)
		}
	}
	// Chat to Anthropic: a custom tool's call in the history keeps its name
	// and input under "custom", which a tool_use has no place for.
	r = e.do("POST", "/v1/chat/completions", e.tenantA, `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"fix it"},`+
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"custom","custom":{"name":"apply_patch","input":"*** Begin Patch"}}]},{"role":"tool","tool_call_id":"call_1","content":"done"}]}`)
	if r.status != 400 || r.str("error.param") != "messages[1].tool_calls[0].type" {
		t.Errorf("a custom tool call: %d %s", r.status, r.raw)
	}
	select {
	case b := <-u.lastOpenAI:
		t.Fatalf("OpenAI got %s", b)
	case b := <-u.lastAnthropic:
		t.Fatalf("Anthropic got %s", b)
	default:
	}
}

// A compatible server's reasoning (DeepSeek's reasoning_content, or
// reasoning as OpenRouter names it) reaches a messages client as a
// thinking block before the text, whole and streamed, and a Responses
// client as a reasoning item.
func TestTranslateCompatibleReasoning(t *testing.T) {
	for _, field := range []string{"reasoning_content", "reasoning"} {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if !strings.Contains(string(body), `"stream":true`) {
				io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","`+field+`":"Let me think.","content":"Four."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":9}}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			for _, d := range []string{
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"` + field + `":"Let me "}}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"` + field + `":"think."}}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Four."}}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":9}}`,
				`[DONE]`,
			} {
				sse(w, "", d)
			}
		}))
		defer up.Close()
		cat := catalogWith(t, nil, gateway.ProviderSpec{Name: "ds", Kind: "openai-compatible", BaseURL: up.URL, Models: []gateway.ModelSpec{{Name: "r1"}}})
		e := newEnvWith(t, cat)
		body := map[string]any{"model": "ds:r1", "max_tokens": 50, "messages": []any{map[string]any{"role": "user", "content": "2+2?"}}}
		r := e.must(e.do("POST", "/v1/messages", e.tenantA, body), 200)
		// signature "": Anthropic's block always has one, and typed clients
		// (the AI SDK) refuse a block without.
		if g := jsonOf(r.body["content"]); g != `[{"signature":"","thinking":"Let me think.","type":"thinking"},{"text":"Four.","type":"text"}]` {
			t.Fatalf("%s: content %s", field, g)
		}
		body["stream"] = true
		r = e.must(e.do("POST", "/v1/messages", e.tenantA, body), 200)
		raw := string(r.raw)
		start := strings.Index(raw, `"content_block":{"signature":"","thinking":"","type":"thinking"}`)
		delta1, delta2 := strings.Index(raw, `{"type":"thinking_delta","thinking":"Let me "}`), strings.Index(raw, `{"type":"thinking_delta","thinking":"think."}`)
		text := strings.Index(raw, `"text":"Four."`)
		if start < 0 || delta1 < start || delta2 < delta1 || text < delta2 || strings.Count(raw, "event: content_block_start") != 2 {
			t.Fatalf("%s: stream %s", field, raw)
		}
		r = e.must(e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "ds:r1", "input": "2+2?"}), 200)
		if g := jsonOf(r.body["output"]); !strings.Contains(g, `"type":"reasoning"`) || !strings.Contains(g, "Let me think.") || !strings.Contains(g, "Four.") {
			t.Fatalf("%s: responses output %s", field, g)
		}

		// thinking.display omitted (Claude Code sends it): the answer
		// carries no thinking, whole or streamed, and is billed the same;
		// summarized, the default, carries it.
		body["thinking"] = map[string]any{"type": "adaptive", "display": "omitted"}
		body["stream"] = false
		r = e.must(e.do("POST", "/v1/messages", e.tenantA, body), 200)
		if g := jsonOf(r.body["content"]); g != `[{"text":"Four.","type":"text"}]` || r.num("usage.output_tokens") != 9 {
			t.Fatalf("%s, display omitted: %s", field, r.raw)
		}
		body["stream"] = true
		r = e.must(e.do("POST", "/v1/messages", e.tenantA, body), 200)
		if raw := string(r.raw); strings.Contains(raw, "thinking") || !strings.Contains(raw, `"text":"Four."`) || strings.Count(raw, "event: content_block_start") != 1 {
			t.Fatalf("%s, display omitted, streamed: %s", field, raw)
		}
		// Any other display shows it: summarized, and updates, which
		// Claude Code sends in its terminal.
		for _, display := range []string{"summarized", "updates"} {
			body["thinking"] = map[string]any{"type": "adaptive", "display": display}
			r = e.must(e.do("POST", "/v1/messages", e.tenantA, body), 200)
			if !strings.Contains(string(r.raw), `"thinking":"Let me "`) {
				t.Fatalf("%s, display %s, streamed: %s", field, display, r.raw)
			}
		}
		for _, th := range []map[string]any{{"type": "adaptive", "display": 1}, {"type": "adaptive", "budget": 5}} {
			body["thinking"] = th
			r = e.do("POST", "/v1/messages", e.tenantA, body)
			if want := map[bool]string{true: "display a string", false: "thinking.budget"}[th["display"] != nil]; r.status != 400 || !strings.Contains(r.str("error.message"), want) {
				t.Fatalf("%s, thinking %v: %d %s", field, th, r.status, r.raw)
			}
		}
	}
}

// A function tool's strict reaches Anthropic as its strict tool use, from
// chat and Responses clients alike (the Agents SDK sends it on every
// tool); a strict that is not a boolean is refused by name.
func TestStrictToolsToAnthropic(t *testing.T) {
	u := newToolUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, &fakeUpstreams{openai: u.openai, anthropic: u.anthropic}))
	schema := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`
	r := e.do("POST", "/v1/chat/completions", e.tenantA, `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"}],`+
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":`+schema+`,"strict":true}},{"type":"function","function":{"name":"lax","parameters":`+schema+`}}]}`)
	if r.status != 200 {
		t.Fatalf("chat: %d %s", r.status, r.raw)
	}
	sent := <-u.lastAnthropic
	if !gjson.GetBytes(sent, "tools.0.strict").Bool() || gjson.GetBytes(sent, "tools.1.strict").Exists() {
		t.Fatalf("Anthropic got %s from chat", sent)
	}
	r = e.do("POST", "/v1/responses", e.tenantA, `{"model":"anthropic:claude-haiku-4-5","input":"hi",`+
		`"tools":[{"type":"function","name":"get_weather","parameters":`+schema+`,"strict":true}]}`)
	if r.status != 200 {
		t.Fatalf("responses: %d %s", r.status, r.raw)
	}
	if sent = <-u.lastAnthropic; !gjson.GetBytes(sent, "tools.0.strict").Bool() {
		t.Fatalf("Anthropic got %s from Responses", sent)
	}
	r = e.do("POST", "/v1/chat/completions", e.tenantA, `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"}],`+
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":`+schema+`,"strict":"yes"}}]}`)
	if r.status != 400 || r.str("error.param") != "tools[0].function.strict" {
		t.Fatalf("a string strict: %d %s", r.status, r.raw)
	}
	select {
	case b := <-u.lastAnthropic:
		t.Fatalf("Anthropic got %s after a refusal", b)
	default:
	}
}

// Claude Code's ToolSearch answers with tool_reference blocks, which
// Anthropic's API expands into the named tools' definitions. Translated,
// each becomes that definition as text, in the <functions> form the
// ToolSearch tool describes to the model; a name that is not among the
// request's tools is refused before any upstream call.
func TestTranslateToolSearchReferences(t *testing.T) {
	e, u := newToolEnv(t)
	fetch := map[string]any{"name": "WebFetch", "description": "Fetch a URL", "defer_loading": true,
		"input_schema": map[string]any{"type": "object", "properties": map[string]any{"url": map[string]any{"type": "string"}}}}
	search := map[string]any{"name": "ToolSearch", "description": "Find tools: select:<name> & more", "input_schema": map[string]any{"type": "object"}}
	body := func(refs ...any) map[string]any {
		return map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 100, "tools": []any{search, fetch},
			"messages": []any{
				map[string]any{"role": "user", "content": "fetch example.com"},
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": map[string]any{"query": "select:WebFetch"}}}},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": refs}}},
			}}
	}
	ref := func(name string) any { return map[string]any{"type": "tool_reference", "tool_name": name} }
	e.must(e.do("POST", "/v1/messages", e.tenantA, body(ref("WebFetch"), ref("ToolSearch"), map[string]any{"type": "text", "text": " done"})), 200)
	got := upstreamGot(t, u.lastOpenAI)
	msgs := got["messages"].([]any)
	tool := msgs[len(msgs)-1].(map[string]any)
	want := "<functions>\n" +
		`<function>{"description":"Fetch a URL","name":"WebFetch","parameters":{"properties":{"url":{"type":"string"}},"type":"object"}}</function>` + "\n" +
		`<function>{"description":"Find tools: select:<name> & more","name":"ToolSearch","parameters":{"type":"object"}}</function>` + "\n" +
		"</functions>\n done" // the result's text blocks a line each
	if tool["role"] != "tool" || tool["content"] != want {
		t.Fatalf("tool message %v\nwant content %q", tool, want)
	}
	// The deferred tool goes as an ordinary function.
	if names := jsonOf(got["tools"]); !strings.Contains(names, `"name":"WebFetch"`) || strings.Contains(names, "defer_loading") {
		t.Errorf("tools %s", names)
	}
	for _, c := range []struct {
		content any
		param   string
	}{
		{[]any{ref("Nope")}, "messages/2/content/0/content/0/tool_name"},
	} {
		r := e.do("POST", "/v1/messages", e.tenantA, body(c.content.([]any)...))
		if r.status != 400 || !strings.Contains(r.str("error.message"), anPath(c.param)) {
			t.Errorf("%v: %d %s; want 400 naming %s", c.content, r.status, r.raw, c.param)
		}
	}
	// Outside a tool result it is refused.
	b := body()
	b["messages"] = []any{map[string]any{"role": "user", "content": []any{ref("WebFetch")}}}
	if r := e.do("POST", "/v1/messages", e.tenantA, b); r.status != 400 || !strings.Contains(r.str("error.message"), "messages.0.content.0.type") {
		t.Errorf("a reference in a user message: %d %s", r.status, r.raw)
	}
	if n := len(u.lastOpenAI); n != 0 {
		t.Errorf("refused requests reached the upstream: %d calls", n)
	}
}

// Anthropic's mid-conversation tool changes: a tool is offered from its
// tool_addition on and withdrawn from its tool_removal on, so the tools
// offered at the end are the one list an OpenAI model gets; a system
// message's clear_at next_user_message hides its text once a later user
// message exists.
func TestTranslateMidConversationToolChanges(t *testing.T) {
	e, u := newToolEnv(t)
	tool := func(name string) map[string]any {
		return map[string]any{"name": name, "description": name + " tool", "input_schema": map[string]any{"type": "object"}}
	}
	user := map[string]any{"role": "user", "content": "go"}
	asst := map[string]any{"role": "assistant", "content": "ok"}
	change := func(kind string, ref map[string]any) map[string]any {
		return map[string]any{"type": kind, "tool": ref}
	}
	byName := func(n string) map[string]any { return map[string]any{"type": "tool_reference", "name": n} }
	sys := func(blocks ...any) map[string]any { return map[string]any{"role": "system", "content": blocks} }
	names := func(got map[string]any) string {
		var out []string
		for _, t := range got["tools"].([]any) {
			out = append(out, t.(map[string]any)["function"].(map[string]any)["name"].(string))
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		msgs []any
		want string
	}{
		{[]any{user, sys(change("tool_removal", byName("A"))), asst, user}, "B"},
		{[]any{user, sys(change("tool_removal", byName("A"))), asst, sys(change("tool_addition", byName("A"))), user}, "A,B"},
		{[]any{user, sys(map[string]any{"type": "text", "text": "now C"}, change("tool_addition", map[string]any{"type": "tool_definition", "definition": tool("C")})), user}, "A,B,C"},
	} {
		e.must(e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 50,
			"tools": []any{tool("A"), tool("B")}, "messages": c.msgs}), 200)
		if got := names(upstreamGot(t, u.lastOpenAI)); got != c.want {
			t.Errorf("%s: tools %s, want %s", jsonOf(c.msgs), got, c.want)
		}
	}
	// clear_at: shown until a later user message exists.
	hint := func(clear string) map[string]any {
		return map[string]any{"role": "system", "content": "hint", "clear_at": clear}
	}
	for _, c := range []struct {
		msgs []any
		sys  string
	}{
		{[]any{user, hint("next_user_message")}, "hint"},
		{[]any{user, hint("next_user_message"), asst, user}, ""},
		{[]any{user, hint("never"), asst, user}, "hint"},
	} {
		e.must(e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 50, "messages": c.msgs}), 200)
		got := upstreamGot(t, u.lastOpenAI)["messages"].([]any)[0].(map[string]any)
		if sysText, _ := got["content"].(string); (got["role"] == "system") != (c.sys != "") || c.sys != "" && sysText != c.sys {
			t.Errorf("%s: first message %v, want system %q", jsonOf(c.msgs), got, c.sys)
		}
	}
	// What cannot be carried is refused by name, before the upstream.
	for _, c := range []struct {
		msgs  []any
		param string
	}{
		{[]any{user, sys(change("tool_removal", byName("Nope")))}, "messages/1/content/0/tool/name"},
		{[]any{user, sys(change("tool_addition", map[string]any{"type": "mcp_toolset_reference", "server_name": "s"}))}, "messages/1/content/0/tool/type"},
		{[]any{user, sys(change("tool_removal", map[string]any{"type": "tool_definition", "definition": tool("C")}))}, "messages/1/content/0/tool/type"},
		{[]any{map[string]any{"role": "user", "content": []any{change("tool_addition", byName("A"))}}}, "messages/0/content/0/type"},
		{[]any{user, hint("sometimes")}, "messages/1/clear_at"},
		{[]any{map[string]any{"role": "user", "content": "x", "clear_at": "never"}}, "messages/0/clear_at"},
	} {
		r := e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 50,
			"tools": []any{tool("A"), tool("B")}, "messages": c.msgs})
		if r.status != 400 || !strings.Contains(r.str("error.message"), anPath(c.param)) {
			t.Errorf("%s: %d %s; want 400 naming %s", jsonOf(c.msgs), r.status, r.raw, c.param)
		}
	}
	if n := len(u.lastOpenAI); n != 0 {
		t.Errorf("refused requests reached the upstream: %d calls", n)
	}
}

// A tool defined by value under the name of a tools entry does not replace
// that entry: an addition by reference later offers the entry as written,
// and a tool search result names the entry's definition.
func TestTranslateToolChangeByValueKeepsToolsEntry(t *testing.T) {
	e, u := newToolEnv(t)
	tool := func(name, desc string) map[string]any {
		return map[string]any{"name": name, "description": desc, "input_schema": map[string]any{"type": "object"}}
	}
	user := map[string]any{"role": "user", "content": "go"}
	asst := map[string]any{"role": "assistant", "content": "ok"}
	change := func(kind string, ref map[string]any) map[string]any {
		return map[string]any{"role": "system", "content": []any{map[string]any{"type": kind, "tool": ref}}}
	}
	byName := map[string]any{"type": "tool_reference", "name": "A"}
	byValue := map[string]any{"type": "tool_definition", "definition": tool("A", "by value")}
	search := []any{
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "B", "input": map[string]any{}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1",
			"content": []any{map[string]any{"type": "tool_reference", "tool_name": "A"}}}}},
	}
	offered := func(got map[string]any) string {
		var out []string
		for _, t := range got["tools"].([]any) {
			f := t.(map[string]any)["function"].(map[string]any)
			out = append(out, f["name"].(string)+"="+f["description"].(string))
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		msgs        []any
		tools, text string
	}{
		// add by value, remove, add by reference: the tools entry again.
		{[]any{user, change("tool_addition", byValue), asst, change("tool_removal", byName), asst, change("tool_addition", byName), user},
			"A=entry,B=b", ""},
		// by value while offered: the new definition, in the entry's place.
		{[]any{user, change("tool_addition", byValue), user}, "A=by value,B=b", ""},
		// a tool search before the addition names the entry.
		{append(append([]any{user}, search...), change("tool_addition", byValue), user), "A=by value,B=b", `"description":"entry"`},
	} {
		e.must(e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 50,
			"tools": []any{tool("A", "entry"), tool("B", "b")}, "messages": c.msgs}), 200)
		got := upstreamGot(t, u.lastOpenAI)
		if o := offered(got); o != c.tools {
			t.Errorf("%s: tools %s, want %s", jsonOf(c.msgs), o, c.tools)
		}
		if c.text != "" && !strings.Contains(jsonOf(got["messages"]), strings.ReplaceAll(c.text, `"`, `\"`)) {
			t.Errorf("%s: messages %s, want the tool search result to hold %s", jsonOf(c.msgs), jsonOf(got["messages"]), c.text)
		}
	}
}

// A chat request with both token caps is refused when translated, as
// OpenAI refuses it (400 naming max_tokens): the newer field silently
// won, so a client that sent both learned nothing of which cap held,
// where the same request to an OpenAI model was refused.
func TestTranslateBothTokenCapsRefused(t *testing.T) {
	e, _ := newToolEnv(t)
	r := e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5",
		"max_tokens": 10, "max_completion_tokens": 20, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if r.status != 400 || r.str("error.param") != "max_tokens" || !strings.Contains(r.str("error.message"), "max_completion_tokens") {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	// Either alone is taken.
	for _, cap := range []string{"max_tokens", "max_completion_tokens"} {
		e.must(e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5",
			cap: 10, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}), 200)
	}
}
