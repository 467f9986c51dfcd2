package http_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/gateway"
)

// toolUpstreams answer every call with a tool call (get_weather, city
// Paris), in each provider's wire format, and keep the last request body.
type toolUpstreams struct {
	openai, anthropic *httptest.Server
	lastOpenAI        chan []byte
	lastAnthropic     chan []byte
}

func newToolUpstreams(t *testing.T) *toolUpstreams {
	u := &toolUpstreams{lastOpenAI: make(chan []byte, 8), lastAnthropic: make(chan []byte, 8)}
	u.openai = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.lastOpenAI <- body
		if !strings.Contains(string(body), `"stream":true`) {
			io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29}}`, `[DONE]`,
		} {
			sse(w, "", d)
		}
	}))
	u.anthropic = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.lastAnthropic <- body
		calls := anthropicToolFakeCalls(body)
		// Like the real API: a forced tool choice (any, tool) gets no
		// text before the tool call.
		var choice struct {
			ToolChoice struct {
				Type string `json:"type"`
			} `json:"tool_choice"`
		}
		json.Unmarshal(body, &choice)
		text := choice.ToolChoice.Type != "any" && choice.ToolChoice.Type != "tool"
		if !strings.Contains(string(body), `"stream":true`) {
			var content []string
			if text {
				content = append(content, `{"type":"text","text":"Let me check."}`)
			}
			for i, name := range calls {
				content = append(content, fmt.Sprintf(`{"type":"tool_use","id":"toolu_%d","name":%q,"input":{"city":"Paris"}}`, i+1, name))
			}
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[`+strings.Join(content, ",")+`],"stop_reason":"tool_use","usage":{"input_tokens":20,"output_tokens":9}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		events := [][2]string{{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":20,"output_tokens":1}}}`}}
		block := 0
		if text {
			events = append(events,
				[2]string{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
				[2]string{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me check."}}`},
				[2]string{"content_block_stop", `{"type":"content_block_stop","index":0}`})
			block++
		}
		for i, name := range calls {
			events = append(events,
				[2]string{"content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":"toolu_%d","name":%q,"input":{}}}`, block, i+1, name)},
				[2]string{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`, block)},
				[2]string{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`, block)},
				[2]string{"content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, block)})
			block++
		}
		events = append(events,
			[2]string{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}`},
			[2]string{"message_stop", `{"type":"message_stop"}`})
		for _, ev := range events {
			sse(w, ev[0], ev[1])
		}
	}))
	t.Cleanup(func() { u.openai.Close(); u.anthropic.Close() })
	return u
}

// anthropicToolFakeCalls is which tools the Anthropic fake calls: the one a
// tool_choice of type tool names; else, with type any and a tool named
// "report" offered (the tests' structured answer), "report" and then
// get_weather, in parallel; else get_weather.
func anthropicToolFakeCalls(body []byte) []string {
	var req struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		ToolChoice struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tool_choice"`
	}
	json.Unmarshal(body, &req)
	switch req.ToolChoice.Type {
	case "tool":
		return []string{req.ToolChoice.Name}
	case "any":
		for _, t := range req.Tools {
			if t.Name == "report" {
				return []string{"report", "get_weather"}
			}
		}
	}
	return []string{"get_weather"}
}

func newToolEnv(t *testing.T) (*env, *toolUpstreams) {
	u := newToolUpstreams(t)
	vars := map[string]string{"OPENAI_BASE_URL": u.openai.URL + "/v1", "OPENAI_API_KEY": "k", "ANTHROPIC_BASE_URL": u.anthropic.URL, "ANTHROPIC_API_KEY": "k"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, cat), u
}

var weatherSchema = map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}

func TestToolsTranslateBothWays(t *testing.T) {
	e, u := newToolEnv(t)

	// Messages front -> OpenAI upstream: tools become functions, the tool
	// call comes back as a tool_use block.
	r := e.must(e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 100,
		"tools":    []any{map[string]any{"name": "get_weather", "description": "weather now", "input_schema": weatherSchema}},
		"messages": []any{map[string]any{"role": "user", "content": "weather in Paris?"}}}), 200)
	sent := string(<-u.lastOpenAI)
	if !strings.Contains(sent, `"tools":[{"function":{"description":"weather now","name":"get_weather","parameters":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}},"type":"function"}]`) {
		t.Fatalf("tools sent to OpenAI: %s", sent)
	}
	if r.str("stop_reason") != "tool_use" || !strings.Contains(string(r.raw), `{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}}`) {
		t.Fatalf("messages answer: %s", r.raw)
	}

	// Chat front -> Anthropic upstream, with a whole tool round trip in
	// the history: functions become tools with input_schema, the
	// assistant's tool_calls become tool_use, the tool message a
	// tool_result carrying its text in content.
	r = e.must(e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "max_completion_tokens": 100,
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": weatherSchema}}},
		"messages": []any{
			map[string]any{"role": "user", "content": "weather in Paris?"},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_0", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Lyon"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_0", "content": "18C"},
		}}), 200)
	sent = string(<-u.lastAnthropic)
	for _, want := range []string{
		`"tools":[{"name":"get_weather","input_schema":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}}]`,
		`{"type":"tool_use","id":"call_0","name":"get_weather","input":{"city":"Lyon"}}`,
		`{"type":"tool_result","tool_use_id":"call_0","content":"18C"}`,
	} {
		if !strings.Contains(sent, want) {
			t.Fatalf("sent to Anthropic lacks %s:\n%s", want, sent)
		}
	}
	var cc struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	json.Unmarshal(r.raw, &cc)
	m := cc.Choices[0].Message
	if cc.Choices[0].FinishReason != "tool_calls" || m.Content == nil || *m.Content != "Let me check." || len(m.ToolCalls) != 1 ||
		m.ToolCalls[0].ID != "toolu_1" || m.ToolCalls[0].Function.Name != "get_weather" || m.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` {
		t.Fatalf("chat answer: %s", r.raw)
	}
	// Parallel tool calls: their results, one tool message each, go to
	// Anthropic together in the one user turn after the calls, and a user
	// message after them joins that turn (the Messages API alternates).
	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "max_completion_tokens": 100,
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": weatherSchema}}},
		"messages": []any{
			map[string]any{"role": "user", "content": "weather in Paris and Lyon?"},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
				map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}},
				map[string]any{"id": "c2", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Lyon"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "c1", "content": "20C"},
			map[string]any{"role": "tool", "tool_call_id": "c2", "content": "18C"},
			map[string]any{"role": "user", "content": "which is warmer?"},
		}}), 200)
	var turns struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
			} `json:"content"`
		} `json:"messages"`
	}
	sent = string(<-u.lastAnthropic)
	if err := json.Unmarshal([]byte(sent), &turns); err != nil {
		t.Fatal(err)
	}
	var shape []string
	for _, m := range turns.Messages {
		var blocks []string
		for _, b := range m.Content {
			blocks = append(blocks, b.Type+b.ToolUseID)
		}
		shape = append(shape, m.Role+":"+strings.Join(blocks, ","))
	}
	if got := strings.Join(shape, " "); got != "user:text assistant:tool_use,tool_use user:tool_resultc1,tool_resultc2,text" {
		t.Fatalf("turns sent to Anthropic: %s\n%s", got, sent)
	}
	if r := e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "local:echo", "tools": []any{map[string]any{"type": "retrieval"}},
		"messages": []any{map[string]any{"role": "user", "content": "x"}}}); r.status != 400 || r.str("error.param") != "tools[0].type" {
		t.Fatalf("bad tool: %d %s", r.status, r.raw)
	}
	// An Anthropic server tool goes to Anthropic as it is (passthrough);
	// to another provider it cannot cross, and is refused by name.
	serverTool := []any{map[string]any{"type": "web_search_20250305", "name": "web_search", "max_uses": 3}}
	e.must(e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "max_tokens": 50,
		"tools": serverTool, "messages": []any{map[string]any{"role": "user", "content": "x"}}}), 200)
	if b := <-u.lastAnthropic; !strings.Contains(string(b), `"type":"web_search_20250305"`) || !strings.Contains(string(b), `"max_uses":3`) {
		t.Fatalf("server tool not passed through: %s", b)
	}
	if r := e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 50,
		"tools": serverTool, "messages": []any{map[string]any{"role": "user", "content": "x"}}}); r.status != 400 || r.str("type") != "error" ||
		!strings.Contains(r.str("error.message"), `tools.0.type: tool type "web_search_20250305" is not supported`) {
		t.Fatalf("server tool: %d %s", r.status, r.raw)
	}
	select {
	case b := <-u.lastOpenAI:
		t.Fatalf("a refused request reached the upstream: %s", b)
	default:
	}
	e.must(e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "max_tokens": 50,
		"tools":    []any{map[string]any{"type": "custom", "name": "get_weather", "input_schema": weatherSchema}},
		"messages": []any{map[string]any{"role": "user", "content": "x"}}}), 200)
	// Passed through: the tool as the client wrote it, its type with it.
	if sent := string(<-u.lastAnthropic); !strings.Contains(sent, `"type":"custom"`) || !strings.Contains(sent, `"name":"get_weather"`) {
		t.Fatalf("typed custom tool sent as %s", sent)
	}
}

func TestStreamedToolCallsTranslateBothWays(t *testing.T) {
	e, u := newToolEnv(t)
	// OpenAI upstream -> Anthropic event grammar: no text, so no text
	// block (an empty one would come back in the client's next request,
	// and Anthropic refuses those); the tool_use block is block 0 and
	// receives the arguments as input_json_delta, gathered into one (calls
	// from OpenAI-shaped upstreams are held until they are whole: their
	// arguments may come interleaved).
	_, evs := e.stream("/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 100, "stream": true,
		"tools":    []any{map[string]any{"name": "get_weather", "input_schema": weatherSchema}},
		"messages": []any{map[string]any{"role": "user", "content": "weather?"}}})
	<-u.lastOpenAI
	var names []string
	var args string
	for _, ev := range evs {
		names = append(names, ev[0])
		d := blockEventOf(ev[1])
		if d.Delta.Type == "input_json_delta" {
			if d.Index != 0 {
				t.Fatalf("arguments to block %d: %s", d.Index, ev[1])
			}
			args += d.Delta.PartialJSON
		}
		if d.ContentBlock.Type == "tool_use" && (d.Index != 0 || d.ContentBlock.ID != "call_1" || d.ContentBlock.Name != "get_weather") {
			t.Fatalf("tool_use block: %s", ev[1])
		}
	}
	want := "message_start ping content_block_start content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(names, " ") != want || args != `{"city":"Paris"}` || !strings.Contains(evs[len(evs)-2][1], `"stop_reason":"tool_use"`) {
		t.Fatalf("events %v, arguments %q\n%v", names, args, evs)
	}

	// Anthropic upstream -> chat.completion.chunk tool_calls deltas: the
	// first names the call, the rest carry argument fragments.
	_, evs = e.stream("/v1/chat/completions", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "stream": true,
		"tools":    []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": weatherSchema}}},
		"messages": []any{map[string]any{"role": "user", "content": "weather?"}}})
	<-u.lastAnthropic
	text, args, finish, id, name := "", "", "", "", ""
	for _, ev := range evs {
		if ev[1] == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev[1]), &c); err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Choices {
			text += ch.Delta.Content
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index != 0 {
					t.Fatalf("tool call index %d", tc.Index)
				}
				id, name, args = id+tc.ID, name+tc.Function.Name, args+tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if got := fmt.Sprintf("%s|%s|%s|%s|%s", text, id, name, args, finish); got != `Let me check.|toolu_1|get_weather|{"city":"Paris"}|tool_calls` {
		t.Fatalf("streamed chat tool call: %s\n%v", got, evs)
	}
}

func chatWithTools(model string, extra map[string]any) map[string]any {
	b := map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": "weather in Paris?"}},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": weatherSchema}}}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

func messagesWithTools(model string, extra map[string]any) map[string]any {
	b := map[string]any{"model": model, "max_tokens": 100, "messages": []any{map[string]any{"role": "user", "content": "weather in Paris?"}},
		"tools": []any{map[string]any{"name": "get_weather", "input_schema": weatherSchema}}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// upstreamGot decodes the body an upstream received.
func upstreamGot(t *testing.T, ch chan []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(<-ch, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

// tool_choice reaches each provider in its own form, from either front.
func TestToolChoiceTranslatesBothWays(t *testing.T) {
	e, u := newToolEnv(t)
	for _, c := range []struct {
		name, path, model string
		body              map[string]any
		upstream          chan []byte
		want              map[string]string // field -> its JSON upstream
	}{
		{"chat required, no parallel -> openai", "/v1/chat/completions", "openai:gpt-4o-mini",
			map[string]any{"tool_choice": "required", "parallel_tool_calls": false}, u.lastOpenAI,
			map[string]string{"tool_choice": `"required"`, "parallel_tool_calls": `false`}},
		{"chat named function -> anthropic", "/v1/chat/completions", "anthropic:claude-haiku-4-5",
			map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}}, u.lastAnthropic,
			map[string]string{"tool_choice": `{"name":"get_weather","type":"tool"}`}},
		{"chat none -> anthropic", "/v1/chat/completions", "anthropic:claude-haiku-4-5",
			map[string]any{"tool_choice": "none"}, u.lastAnthropic, map[string]string{"tool_choice": `{"type":"none"}`}},
		{"messages any, no parallel -> openai", "/v1/messages", "openai:gpt-4o-mini",
			map[string]any{"tool_choice": map[string]any{"type": "any", "disable_parallel_tool_use": true}}, u.lastOpenAI,
			map[string]string{"tool_choice": `"required"`, "parallel_tool_calls": `false`}},
		{"messages tool -> openai", "/v1/messages", "openai:gpt-4o-mini",
			map[string]any{"tool_choice": map[string]any{"type": "tool", "name": "get_weather"}}, u.lastOpenAI,
			map[string]string{"tool_choice": `{"function":{"name":"get_weather"},"type":"function"}`}},
		{"messages tool -> anthropic", "/v1/messages", "anthropic:claude-haiku-4-5",
			map[string]any{"tool_choice": map[string]any{"type": "tool", "name": "get_weather"}}, u.lastAnthropic,
			map[string]string{"tool_choice": `{"name":"get_weather","type":"tool"}`}},
		// parallel_tool_calls alone: no tool choice is made up for OpenAI
		// (some compatible servers refuse an explicit "auto"); Anthropic
		// needs a type, and auto is its default.
		{"chat no parallel alone -> openai", "/v1/chat/completions", "openai:gpt-4o-mini",
			map[string]any{"parallel_tool_calls": false}, u.lastOpenAI,
			map[string]string{"tool_choice": `null`, "parallel_tool_calls": `false`}},
		{"chat no parallel alone -> anthropic", "/v1/chat/completions", "anthropic:claude-haiku-4-5",
			map[string]any{"parallel_tool_calls": false}, u.lastAnthropic,
			map[string]string{"tool_choice": `{"disable_parallel_tool_use":true,"type":"auto"}`}},
		// allowed_tools narrows the tools; the mode is the choice.
		{"chat allowed_tools -> anthropic", "/v1/chat/completions", "anthropic:claude-haiku-4-5",
			map[string]any{"tools": []any{
				map[string]any{"type": "function", "function": map[string]any{"name": "get_time", "parameters": weatherSchema}},
				map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": weatherSchema}},
			}, "tool_choice": map[string]any{"type": "allowed_tools", "allowed_tools": map[string]any{"mode": "required",
				"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}}}}}, u.lastAnthropic,
			map[string]string{"tool_choice": `{"type":"any"}`, "tools": `[{"input_schema":` + jsonOf(weatherSchema) + `,"name":"get_weather"}]`}},
	} {
		body := chatWithTools(c.model, c.body)
		if c.path == "/v1/messages" {
			body = messagesWithTools(c.model, c.body)
		}
		e.must(e.do("POST", c.path, e.tenantA, body), 200)
		got := upstreamGot(t, c.upstream)
		for field, want := range c.want {
			if g := jsonOf(got[field]); g != want {
				t.Errorf("%s: upstream %s = %s, want %s", c.name, field, g, want)
			}
		}
	}
	// Without a tool choice, nothing is sent: the provider's default.
	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, chatWithTools("openai:gpt-4o-mini", nil)), 200)
	if got := upstreamGot(t, u.lastOpenAI); got["tool_choice"] != nil || got["parallel_tool_calls"] != nil {
		t.Errorf("no tool choice asked, upstream got %v / %v", got["tool_choice"], got["parallel_tool_calls"])
	}
	// An Anthropic-front auto or none without tools means what no choice
	// means; OpenAI takes no tool choice without tools, so none is sent.
	// (To Anthropic the body goes as it was sent.)
	for _, model := range []string{"openai:gpt-4o-mini"} {
		for _, typ := range []string{"auto", "none"} {
			body := map[string]any{"model": model, "max_tokens": 100, "messages": []any{map[string]any{"role": "user", "content": "hi"}},
				"tool_choice": map[string]any{"type": typ}}
			e.must(e.do("POST", "/v1/messages", e.tenantA, body), 200)
			ch := u.lastOpenAI
			if strings.HasPrefix(model, "anthropic:") {
				ch = u.lastAnthropic
			}
			if got := upstreamGot(t, ch); got["tool_choice"] != nil || got["parallel_tool_calls"] != nil {
				t.Errorf("%s with %s and no tools: upstream got tool_choice %v", model, typ, got["tool_choice"])
			}
		}
	}
	// Bad values are refused in each front's shape, before any upstream call,
	// when the request is translated (to a provider of the same format it
	// goes as it was sent, and the provider judges it).
	for _, c := range []struct {
		path  string
		body  map[string]any
		param string
	}{
		{"/v1/chat/completions", map[string]any{"model": "anthropic:claude-haiku-4-5", "tool_choice": "auto", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}, "tool_choice"},
		{"/v1/chat/completions", chatWithTools("anthropic:claude-haiku-4-5", map[string]any{"tool_choice": "always"}), "tool_choice"},
		{"/v1/chat/completions", chatWithTools("anthropic:claude-haiku-4-5", map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_time"}}}), "tool_choice"},
		{"/v1/messages", messagesWithTools("openai:gpt-4o-mini", map[string]any{"tool_choice": map[string]any{"type": "tool", "name": "get_time"}}), ""},
		{"/v1/messages", messagesWithTools("openai:gpt-4o-mini", map[string]any{"tool_choice": map[string]any{"type": "sometimes"}}), ""},
		{"/v1/chat/completions", chatWithTools("anthropic:claude-haiku-4-5", map[string]any{"tool_choice": map[string]any{"type": "allowed_tools",
			"allowed_tools": map[string]any{"mode": "required", "tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_time"}}}}}}), "tool_choice/allowed_tools/tools/0"},
		{"/v1/chat/completions", chatWithTools("anthropic:claude-haiku-4-5", map[string]any{"tool_choice": map[string]any{"type": "allowed_tools",
			"allowed_tools": map[string]any{"mode": "sometimes", "tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}}}}}), "tool_choice/allowed_tools/mode"},
	} {
		r := e.do("POST", c.path, e.tenantA, c.body)
		if r.status != 400 || !strings.HasPrefix(r.str("error.param"), oaPath(c.param)) || !strings.Contains(string(r.raw), "tool_choice") {
			t.Errorf("%s %v: %d %s", c.path, c.body["tool_choice"], r.status, r.raw)
		}
	}
	if len(u.lastOpenAI) != 0 || len(u.lastAnthropic) != 0 {
		t.Error("a refused request reached an upstream")
	}
}

// response_format: json_object and json_schema reach OpenAI natively; for
// Anthropic, json_object becomes an instruction and json_schema a forced
// tool whose input comes back as the message content, streamed or not.
func TestResponseFormat(t *testing.T) {
	e, u := newToolEnv(t)
	jsonObject := map[string]any{"type": "json_object"}
	schemaFormat := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "get_weather", "schema": weatherSchema}}

	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, chatBody("openai:gpt-4o-mini", false, "response_format", jsonObject)), 200)
	if got := upstreamGot(t, u.lastOpenAI); jsonOf(got["response_format"]) != `{"type":"json_object"}` {
		t.Errorf("json_object to openai: %v", got["response_format"])
	}
	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, chatBody("anthropic:claude-haiku-4-5", false, "response_format", jsonObject)), 200)
	if got := upstreamGot(t, u.lastAnthropic); !strings.Contains(jsonOf(got["system"]), "single JSON object") {
		t.Errorf("json_object to anthropic: system %v", got["system"])
	}
	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, chatBody("openai:gpt-4o-mini", false, "response_format", schemaFormat)), 200)
	if got := jsonOf(upstreamGot(t, u.lastOpenAI)["response_format"]); !strings.Contains(got, `"type":"json_schema"`) || !strings.Contains(got, `"name":"get_weather"`) {
		t.Errorf("json_schema to openai: %s", got)
	}
	r := e.must(e.do("POST", "/v1/chat/completions", e.tenantA, chatBody("anthropic:claude-haiku-4-5", false, "response_format", schemaFormat)), 200)
	got := upstreamGot(t, u.lastAnthropic)
	if jsonOf(got["tool_choice"]) != `{"disable_parallel_tool_use":true,"name":"get_weather","type":"tool"}` {
		t.Errorf("json_schema to anthropic: tool_choice %v", got["tool_choice"])
	}
	var msg struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []any   `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(r.raw, &msg); err != nil || msg.Choices[0].Message.Content == nil || *msg.Choices[0].Message.Content != `{"city":"Paris"}` ||
		len(msg.Choices[0].Message.ToolCalls) != 0 || msg.Choices[0].FinishReason != "stop" {
		t.Fatalf("structured answer from anthropic: %s", r.raw)
	}
	_, evs := e.stream("/v1/chat/completions", e.tenantA, chatBody("anthropic:claude-haiku-4-5", true, "response_format", schemaFormat))
	<-u.lastAnthropic
	var content strings.Builder
	finish := ""
	for _, ev := range evs {
		var ch struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []any  `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(ev[1]), &ch) != nil || len(ch.Choices) == 0 {
			continue
		}
		if len(ch.Choices[0].Delta.ToolCalls) > 0 {
			t.Fatalf("the structured answer was streamed as a tool call: %v", evs)
		}
		content.WriteString(ch.Choices[0].Delta.Content)
		if ch.Choices[0].FinishReason != nil {
			finish = *ch.Choices[0].FinishReason
		}
	}
	if content.String() != `{"city":"Paris"}` || finish != "stop" {
		t.Fatalf("streamed structured answer: %q, finish %q", content.String(), finish)
	}
	// With tools of the client's: the model may call them first (tool
	// choice any over both), and a call to the client's tool comes back as
	// a tool call numbered among the client's calls from 0, beside the
	// answer in the content.
	report := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "report", "schema": weatherSchema}}
	r = e.must(e.do("POST", "/v1/chat/completions", e.tenantA, chatWithTools("anthropic:claude-haiku-4-5", map[string]any{"response_format": report})), 200)
	got = upstreamGot(t, u.lastAnthropic)
	if jsonOf(got["tool_choice"]) != `{"type":"any"}` || !strings.Contains(jsonOf(got["tools"]), `"name":"get_weather"`) || !strings.Contains(jsonOf(got["tools"]), `"name":"report"`) {
		t.Errorf("json_schema with client tools to anthropic: tool_choice %v, tools %v", got["tool_choice"], got["tools"])
	}
	var both struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					Function struct{ Name string } `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(r.raw, &both); err != nil || both.Choices[0].Message.Content == nil || *both.Choices[0].Message.Content != `{"city":"Paris"}` ||
		len(both.Choices[0].Message.ToolCalls) != 1 || both.Choices[0].Message.ToolCalls[0].Function.Name != "get_weather" || both.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("answer and tool call from anthropic: %s", r.raw)
	}
	_, evs = e.stream("/v1/chat/completions", e.tenantA, chatWithTools("anthropic:claude-haiku-4-5", map[string]any{"response_format": report, "stream": true}))
	<-u.lastAnthropic
	content.Reset()
	var indexes []int
	for _, ev := range evs {
		var ch struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index int `json:"index"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(ev[1]), &ch) != nil || len(ch.Choices) == 0 {
			continue
		}
		content.WriteString(ch.Choices[0].Delta.Content)
		for _, c := range ch.Choices[0].Delta.ToolCalls {
			indexes = append(indexes, c.Index)
		}
	}
	if content.String() != `{"city":"Paris"}` || len(indexes) == 0 || slices.Max(indexes) != 0 {
		t.Fatalf("streamed answer and tool call: content %q, tool call indexes %v", content.String(), indexes)
	}
	// A schema named like one of the tools would make the two one.
	if r := e.do("POST", "/v1/chat/completions", e.tenantA, chatWithTools("anthropic:claude-haiku-4-5", map[string]any{"response_format": schemaFormat})); r.status != 400 ||
		r.str("error.param") != "response_format.json_schema.name" {
		t.Errorf("schema named like a tool: %d %s", r.status, r.raw)
	}
	// json_schema without a schema: any JSON object.
	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, chatBody("anthropic:claude-haiku-4-5", false, "response_format",
		map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "anything"}})), 200)
	if got := upstreamGot(t, u.lastAnthropic); got["tool_choice"] != nil || !strings.Contains(jsonOf(got["system"]), "single JSON object") {
		t.Errorf("json_schema without schema to anthropic: tool_choice %v system %v", got["tool_choice"], got["system"])
	}
	for _, bad := range []any{
		map[string]any{"type": "xml"},
		map[string]any{"type": "json_schema"},
		map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "has space", "schema": weatherSchema}},
		map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "ok", "schema": "not a schema"}},
		"json",
	} {
		r := e.do("POST", "/v1/chat/completions", e.tenantA, chatBody("anthropic:claude-haiku-4-5", false, "response_format", bad))
		if r.status != 400 || !strings.HasPrefix(r.str("error.param"), "response_format") {
			t.Errorf("response_format %v: %d %s", bad, r.status, r.raw)
		}
	}
	if len(u.lastOpenAI) != 0 || len(u.lastAnthropic) != 0 {
		t.Error("a refused request reached an upstream")
	}
}

// blockEvent is the part of an Anthropic stream event the tool tests read.
type blockEvent struct {
	Index int `json:"index"`
	Delta struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	} `json:"delta"`
	ContentBlock struct{ Type, ID, Name string } `json:"content_block"`
}

func blockEventOf(data string) blockEvent {
	var d blockEvent
	json.Unmarshal([]byte(data), &d)
	return d
}

// Sampling and attribution fields reach the upstream that takes them;
// what the gateway cannot serve (several choices, log probabilities,
// an Anthropic container) is refused, not silently answered without.
func TestSamplingFieldsPassOn(t *testing.T) {
	e, u := newToolEnv(t)
	msgs := []any{map[string]any{"role": "user", "content": "x"}}
	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "messages": msgs,
		"top_p": 0.5, "seed": 7, "presence_penalty": 0.1, "frequency_penalty": 0.2, "logit_bias": map[string]any{"50256": -100},
		"reasoning_effort": "low", "user": "end-user-1", "n": 1}), 200)
	sent := string(<-u.lastOpenAI)
	for _, want := range []string{`"top_p":0.5`, `"seed":7`, `"presence_penalty":0.1`, `"frequency_penalty":0.2`, `"logit_bias":{"50256":-100}`, `"reasoning_effort":"low"`, `"user":"end-user-1"`} {
		if !strings.Contains(sent, want) {
			t.Fatalf("sent to OpenAI lacks %s:\n%s", want, sent)
		}
	}
	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "messages": msgs,
		"top_p": 0.5, "seed": 7, "user": "end-user-1"}), 200)
	sent = string(<-u.lastAnthropic)
	if !strings.Contains(sent, `"top_p":0.5`) || !strings.Contains(sent, `"metadata":{"user_id":"end-user-1"}`) || strings.Contains(sent, `"seed"`) {
		t.Fatalf("sent to Anthropic: %s", sent)
	}
	e.must(e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "max_tokens": 20, "messages": msgs,
		"top_p": 0.9, "top_k": 40, "metadata": map[string]any{"user_id": "u-2"}, "thinking": map[string]any{"type": "disabled"}}), 200)
	sent = string(<-u.lastAnthropic)
	for _, want := range []string{`"top_p":0.9`, `"top_k":40`, `"metadata":{"user_id":"u-2"}`} {
		if !strings.Contains(sent, want) {
			t.Fatalf("sent to Anthropic lacks %s:\n%s", want, sent)
		}
	}
	e.must(e.do("POST", "/v1/messages", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 20, "messages": msgs,
		"top_p": 0.9, "metadata": map[string]any{"user_id": "u-2"}}), 200)
	sent = string(<-u.lastOpenAI)
	if !strings.Contains(sent, `"top_p":0.9`) || !strings.Contains(sent, `"user":"u-2"`) {
		t.Fatalf("sent to OpenAI: %s", sent)
	}
	for _, c := range []struct {
		path  string
		body  map[string]any
		param string
	}{
		{"/v1/chat/completions", map[string]any{"model": "anthropic:claude-haiku-4-5", "messages": msgs, "n": 2}, "n"},
		{"/v1/chat/completions", map[string]any{"model": "anthropic:claude-haiku-4-5", "messages": msgs, "logprobs": true}, "logprobs"},
		{"/v1/chat/completions", map[string]any{"model": "anthropic:claude-haiku-4-5", "messages": msgs, "logit_bias": []any{1}}, "logit_bias"},
		// A cap below 1 is named as the client sent it; the newer field
		// wins when both are.
		{"/v1/chat/completions", map[string]any{"model": "openai:gpt-4o-mini", "messages": msgs, "max_tokens": 0}, "max_tokens"},
		{"/v1/chat/completions", map[string]any{"model": "openai:gpt-4o-mini", "messages": msgs, "max_completion_tokens": -1}, "max_completion_tokens"},
		{"/v1/chat/completions", map[string]any{"model": "openai:gpt-4o-mini", "messages": msgs, "max_tokens": 10, "max_completion_tokens": 0}, "max_completion_tokens"},
		{"/v1/messages", map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 2000, "messages": msgs,
			"container": "container_1"}, "container"},
		// top_k has no equivalent at OpenAI (it went without a word).
		{"/v1/messages", map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 20, "messages": msgs, "top_k": 40}, "top_k"},
	} {
		r := e.do("POST", c.path, e.tenantA, c.body)
		msg := r.str("error.message")
		if r.status != 400 || !strings.Contains(msg, c.param) || c.path == "/v1/chat/completions" && r.str("error.param") != c.param {
			t.Fatalf("%s %v: %d %s", c.path, c.body, r.status, r.raw)
		}
	}
	select {
	case b := <-u.lastOpenAI:
		t.Fatalf("a refused request reached OpenAI: %s", b)
	case b := <-u.lastAnthropic:
		t.Fatalf("a refused request reached Anthropic: %s", b)
	default:
	}
}

// A tool message's name is its function's (LangChain's ChatOpenAI sends it
// on every tool result): translated, it says nothing the call's id does
// not, and goes without a word; a name that is not its call's function,
// or on another message, is a participant's, refused.
func TestToolMessageNameTranslated(t *testing.T) {
	e, u := newToolEnv(t)
	call := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
		"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}}}
	body := func(name string, at int) map[string]any {
		msgs := []any{map[string]any{"role": "user", "content": "weather?"}, call,
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "sunny"}}
		msgs[at].(map[string]any)["name"] = name
		return map[string]any{"model": "anthropic:claude-haiku-4-5", "messages": msgs,
			"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": weatherSchema}}}}
	}
	e.must(e.do("POST", "/v1/chat/completions", e.tenantA, body("get_weather", 2)), 200)
	if sent := <-u.lastAnthropic; !strings.Contains(string(sent), `{"type":"tool_result","tool_use_id":"call_1","content":"sunny"}`) {
		t.Fatalf("Anthropic got %s", sent)
	}
	for _, c := range []struct {
		name string
		at   int
	}{{"get_time", 2}, {"ada", 0}} {
		if r := e.do("POST", "/v1/chat/completions", e.tenantA, body(c.name, c.at)); r.status != 400 || r.str("error.param") != fmt.Sprintf("messages[%d].name", c.at) {
			t.Fatalf("name %q on message %d: %d %s", c.name, c.at, r.status, r.raw)
		}
	}
}
