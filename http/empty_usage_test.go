package http_test

import (
	"encoding/json"
	"testing"

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
