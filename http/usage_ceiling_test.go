package http_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/batonhq/baton/gateway"
	"github.com/tidwall/gjson"
)

// A passed-through answer whose usage counts an input no call reads
// (9e18 tokens: about $46 trillion at gpt-4o-mini's rate) reaches the
// client as the provider wrote it, but is billed Baton's count of the
// request, marked estimated: whole or streamed, on either front.
func TestPassedThroughInputPastAnyCallIsNotBilledAsTold(t *testing.T) {
	const huge = "9000000000000000000"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		stream := gjson.GetBytes(body, "stream").Bool()
		switch {
		case r.URL.Path == "/v1/chat/completions" && !stream:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":`+huge+`,"completion_tokens":2,"total_tokens":`+huge+`}}`)
		case r.URL.Path == "/v1/messages" && stream:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-haiku-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":"+huge+",\"output_tokens\":1}}}\n\n"+
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"+
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n"+
				"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"+
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"input_tokens\":"+huge+",\"output_tokens\":2}}\n\n"+
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		default:
			http.Error(w, "unexpected "+r.URL.Path, 400)
		}
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "sk-upstream-test",
		"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "ak-upstream-test"}))
	for i, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"openai:gpt-4o-mini","messages":[{"role":"user","content":"say hi to everyone in the room"}]}`},
		{"/v1/messages", `{"model":"anthropic:claude-haiku-4-5","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"say hi to everyone in the room"}]}`},
	} {
		r := e.do("POST", c.path, e.tenantA, c.body)
		if r.status != 200 || !strings.Contains(string(r.raw), huge) {
			t.Fatalf("%s: %d %s", c.path, r.status, r.raw)
		}
		var u gateway.UsageRecord
		if err := json.Unmarshal(e.usageEvents("a", i+1)[i].Data, &u); err != nil {
			t.Fatal(err)
		}
		if u.Usage.InputTokens <= 0 || u.Usage.InputTokens > 100 || !u.Usage.Estimated || u.CostUSD == nil || *u.CostUSD > 0.01 {
			t.Fatalf("%s: recorded %+v at %v; want Baton's count of the request, estimated", c.path, u.Usage, *u.CostUSD)
		}
	}
}
