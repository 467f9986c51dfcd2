package http_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/gateway"
)

// An answer whose usage gives no counts ({}) is not a free call: it is
// billed Baton's count, marked estimated, as an answer with no usage is
// (whole); a stream whose message_delta names no output count is billed
// at least a token for each delta that carried output (it was billed 0).
// Passed through (/v1/messages) and translated (chat), whole and streamed.
func TestEmptyUsageIsNotFree(t *testing.T) {
	stream, whole := messagesAnswer("msg_empty", "claude-haiku-4-5", `{"input_tokens":100,"output_tokens":1}`, `"usage":{}`)
	e, _ := goldenEnv(t, stream, whole, "anthropic")
	n := 0
	for _, c := range []struct{ path, body string }{
		{"/v1/messages", `{"model":"anthropic:claude-haiku-4-5","max_tokens":100,"messages":[{"role":"user","content":"say hi"}]}`},
		{"/v1/messages", `{"model":"anthropic:claude-haiku-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"say hi"}]}`},
		{"/v1/chat/completions", `{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"say hi"}]}`},
		{"/v1/chat/completions", `{"model":"anthropic:claude-haiku-4-5","stream":true,"messages":[{"role":"user","content":"say hi"}]}`},
	} {
		r := e.do("POST", c.path, e.tenantA, c.body, "anthropic-version", "2023-06-01")
		if r.status != 200 {
			t.Fatalf("%s %s: %d %s", c.path, c.body, r.status, r.raw)
		}
		n++
		var u gateway.UsageRecord
		if err := json.Unmarshal(e.usageEvents("a", n)[n-1].Data, &u); err != nil {
			t.Fatal(err)
		}
		if u.Usage.InputTokens == 0 || u.Usage.OutputTokens == 0 || !u.Usage.Estimated || u.CostUSD == nil || *u.CostUSD == 0 {
			t.Errorf("%s %s: billed %+v at %v", c.path, c.body, u.Usage, u.CostUSD)
		}
	}
}

// A passed-through Messages stream whose upstream tells no usage ends
// with Baton's estimate in its message_delta's usage, marked estimated
// and priced, as the chat stream's usage chunk and the whole answer carry
// it (the client was told nothing, though the estimate was billed).
func TestNamedStreamWithoutUsageTellsTheEstimate(t *testing.T) {
	stream, whole := messagesAnswer("msg_none", "claude-haiku-4-5", `null`, `"usage":null`)
	e, _ := goldenEnv(t, stream, whole, "anthropic")
	r := e.do("POST", "/v1/messages", e.tenantA, `{"model":"anthropic:claude-haiku-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"say hi"}]}`, "anthropic-version", "2023-06-01")
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	var delta string
	for _, ev := range sseRaw(t, strings.NewReader(string(r.raw))) {
		if ev[0] == "message_delta" {
			delta = ev[1]
		}
	}
	u := gjson.Get(delta, "usage")
	if !u.Get("estimated").Bool() || u.Get("output_tokens").Int() == 0 || u.Get("input_tokens").Int() == 0 || u.Get("estimated_cost_usd").Num == 0 {
		t.Fatalf("message_delta %s", delta)
	}
	var rec gateway.UsageRecord
	if err := json.Unmarshal(e.usageEvents("a", 1)[0].Data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.CostUSD == nil || *rec.CostUSD != u.Get("estimated_cost_usd").Num {
		t.Fatalf("billed %v, told %v", rec.CostUSD, u.Get("estimated_cost_usd").Raw)
	}
}

// A whole answer passed through whose usage counts its output as 0 (or
// less) though it wrote text is billed Baton's count of that text, marked
// estimated, as a translated one is (it was free): Messages, chat and
// Responses.
func TestZeroOutputCountIsNotFree(t *testing.T) {
	_, messages := messagesAnswer("msg_zero", "claude-haiku-4-5", `null`, `"usage":{"input_tokens":11,"output_tokens":0}`)
	chat := `{"id":"c","object":"chat.completion","created":1,"model":"gpt-6-luna","choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":-3,"total_tokens":8}}`
	responses := `{"id":"resp_z","object":"response","created_at":1,"status":"completed","model":"gpt-6-luna","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hello there","annotations":[]}]}],"usage":{"input_tokens":11,"output_tokens":0,"total_tokens":11}}`
	for _, c := range []struct{ kind, whole, path, body string }{
		{"anthropic", messages, "/v1/messages", `{"model":"anthropic:claude-haiku-4-5","max_tokens":100,"messages":[{"role":"user","content":"say hi"}]}`},
		{"openai", chat, "/v1/chat/completions", `{"model":"openai:gpt-6-luna","messages":[{"role":"user","content":"say hi"}]}`},
		{"openai", responses, "/v1/responses", `{"model":"openai:gpt-6-luna","input":"say hi","store":false}`},
	} {
		e, _ := goldenEnv(t, "", c.whole, c.kind)
		r := e.do("POST", c.path, e.tenantA, c.body, "anthropic-version", "2023-06-01")
		if r.status != 200 {
			t.Fatalf("%s: %d %s", c.path, r.status, r.raw)
		}
		var u gateway.UsageRecord
		if err := json.Unmarshal(e.usageEvents("a", 1)[0].Data, &u); err != nil {
			t.Fatal(err)
		}
		if u.Usage.OutputTokens == 0 || !u.Usage.Estimated || u.CostUSD == nil || *u.CostUSD == 0 {
			t.Errorf("%s: billed %+v at %v", c.path, u.Usage, u.CostUSD)
		}
	}
}

// A passed-through chat stream whose last chunk carries its choice and its
// usage together (llama.cpp's server) keeps the choice when the client did
// not ask for usage: the chunk goes without its usage field. The whole
// chunk was dropped, its text and finish_reason with it.
func TestChatChunkWithChoiceAndUsageKeepsTheChoice(t *testing.T) {
	stream := "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-6-luna\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi \"}}]}\n\n" +
		"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-6-luna\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"THE-END\"},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4,\"total_tokens\":13}}\n\n" +
		"data: [DONE]\n\n"
	e, _ := goldenEnv(t, stream, "", "openai")
	r := e.do("POST", "/v1/chat/completions", e.tenantA, `{"model":"openai:gpt-6-luna","stream":true,"messages":[{"role":"user","content":"say hi"}]}`)
	if r.status != 200 || !strings.Contains(string(r.raw), `"content":"THE-END"`) || !strings.Contains(string(r.raw), `"finish_reason":"length"`) || strings.Contains(string(r.raw), `"usage"`) {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	var u gateway.UsageRecord
	if err := json.Unmarshal(e.usageEvents("a", 1)[0].Data, &u); err != nil {
		t.Fatal(err)
	}
	if u.Usage.InputTokens != 9 || u.Usage.OutputTokens != 4 || u.Usage.Estimated {
		t.Fatalf("billed %+v", u.Usage)
	}
}

// A passed-through Messages stream that ends after its message_delta
// without message_stop (the answer whole, its end told) is ended with a
// message_stop, as a chat stream without [DONE] is given one: it ended
// with neither that nor an error event.
func TestMessagesStreamWithoutMessageStopIsEnded(t *testing.T) {
	stream, whole := messagesAnswer("msg_nostop", "claude-haiku-4-5", `{"input_tokens":10,"output_tokens":1}`, `"usage":{"output_tokens":2}`)
	stream = strings.TrimSuffix(stream, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	e, _ := goldenEnv(t, stream, whole, "anthropic")
	r := e.do("POST", "/v1/messages", e.tenantA, `{"model":"anthropic:claude-haiku-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"say hi"}]}`, "anthropic-version", "2023-06-01")
	evs := sseRaw(t, strings.NewReader(string(r.raw)))
	if r.status != 200 || len(evs) == 0 || evs[len(evs)-1][0] != "message_stop" {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}

// A whole answer passed through whose usage tells its input (and cache
// reads and writes) but no output count is billed that input as told and
// Baton's count of the output, marked estimated, as a translated answer
// is: the input was Baton's count of the body, its cache reads and
// writes billed as plain input (Messages, chat and Responses).
func TestInputOnlyUsageBillsTheInputAsTold(t *testing.T) {
	_, messages := messagesAnswer("msg_in", "claude-haiku-4-5", `null`, `"usage":{"input_tokens":10,"cache_read_input_tokens":3000,"cache_creation_input_tokens":50000,"output_tokens":null}`)
	chat := `{"id":"c","object":"chat.completion","created":1,"model":"gpt-6-luna","choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":53010,"prompt_tokens_details":{"cached_tokens":3000}}}`
	responses := `{"id":"resp_i","object":"response","created_at":1,"status":"completed","model":"gpt-6-luna","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hello there","annotations":[]}]}],"usage":{"input_tokens":53010,"input_tokens_details":{"cached_tokens":3000}}}`
	for _, c := range []struct {
		kind, whole, path, body string
		want                    gateway.Usage
	}{
		{"anthropic", messages, "/v1/messages", `{"model":"anthropic:claude-haiku-4-5","max_tokens":100,"messages":[{"role":"user","content":"say hi"}]}`,
			gateway.Usage{InputTokens: 10, CacheReadTokens: 3000, CacheWriteTokens: 50000}},
		{"openai", chat, "/v1/chat/completions", `{"model":"openai:gpt-6-luna","messages":[{"role":"user","content":"say hi"}]}`,
			gateway.Usage{InputTokens: 50010, CacheReadTokens: 3000}},
		{"openai", responses, "/v1/responses", `{"model":"openai:gpt-6-luna","input":"say hi","store":false}`,
			gateway.Usage{InputTokens: 50010, CacheReadTokens: 3000}},
	} {
		e, _ := goldenEnv(t, "", c.whole, c.kind)
		r := e.do("POST", c.path, e.tenantA, c.body, "anthropic-version", "2023-06-01")
		if r.status != 200 {
			t.Fatalf("%s: %d %s", c.path, r.status, r.raw)
		}
		var u gateway.UsageRecord
		if err := json.Unmarshal(e.usageEvents("a", 1)[0].Data, &u); err != nil {
			t.Fatal(err)
		}
		got := u.Usage
		if got.OutputTokens == 0 || !got.Estimated {
			t.Errorf("%s: output not counted: %+v", c.path, got)
		}
		if got.InputTokens != c.want.InputTokens || got.CacheReadTokens != c.want.CacheReadTokens || got.CacheWriteTokens != c.want.CacheWriteTokens {
			t.Errorf("%s: billed %+v, want the input as told: %+v", c.path, got, c.want)
		}
	}
}
