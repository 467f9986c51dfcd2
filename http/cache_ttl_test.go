package http_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/batonhq/baton/gateway"
	"github.com/tidwall/gjson"
)

// An Anthropic answer whose cache writes are partly 1-hour ones (the
// client asked for cache_control ttl "1h"), whole and streamed.
const oneHourUsage = `"usage":{"input_tokens":12,"cache_creation_input_tokens":3000,"cache_read_input_tokens":4000,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000},"output_tokens":57}`

var oneHourStream, oneHourMessage = messagesAnswer("msg_1h", "claude-haiku-4-5-20251001",
	`{"input_tokens":12,"cache_creation_input_tokens":3000,"cache_read_input_tokens":4000,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000},"output_tokens":1}`, oneHourUsage)

// messagesAnswer is an Anthropic answer "Hi!" from model, whole and
// streamed: message_start carries startUsage (a usage object), the whole
// answer and message_delta usage (a "usage" member).
func messagesAnswer(id, model, startUsage, usage string) (stream, whole string) {
	whole = `{"id":"` + id + `","type":"message","role":"assistant","model":"` + model + `","content":[{"type":"text","text":"Hi!"}],"stop_reason":"end_turn","stop_sequence":null,` + usage + `}`
	stream = `event: message_start
data: {"type":"message_start","message":{"id":"` + id + `","type":"message","role":"assistant","model":"` + model + `","content":[],"stop_reason":null,"stop_sequence":null,"usage":` + startUsage + `}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi!"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},` + usage + `}

event: message_stop
data: {"type":"message_stop"}

`
	return stream, whole
}

// A passed-through /v1/messages call whose upstream reports 1-hour cache
// writes is billed at the 1-hour rate for them (Claude Haiku 4.5: $2 a
// million, 2x its input rate, against $1.25 for 5-minute writes), whole
// and streamed; its usage event keeps the 1-hour part.
func TestPassThroughBillsOneHourCacheWrites(t *testing.T) {
	e, up := goldenEnv(t, oneHourStream, oneHourMessage, "anthropic")
	// 12 input at $1, 57 output at $5, 4000 reads at $0.10, 1000 5-minute
	// writes at $1.25 and 2000 1-hour writes at $2, a million each.
	want := gateway.RoundUSD((12*1 + 57*5 + 4000*0.10 + 1000*1.25 + 2000*2) / 1e6)
	for i, stream := range []bool{false, true} {
		body := `{"model":"anthropic:claude-haiku-4-5","max_tokens":100,"stream":` + map[bool]string{false: "false", true: "true"}[stream] +
			`,"system":[{"type":"text","text":"a long system prompt","cache_control":{"type":"ephemeral","ttl":"1h"}}],"messages":[{"role":"user","content":"hi"}]}`
		req, _ := http.NewRequest("POST", e.srv.URL+"/v1/messages", strings.NewReader(body))
		req.Header.Set("x-api-key", e.tenantA)
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("content-type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var cost gjson.Result
		if stream {
			events := sseRaw(t, resp.Body)
			if len(events) < 2 {
				t.Fatalf("stream: %v", events)
			}
			cost = gjson.Get(events[len(events)-2][1], "usage.estimated_cost_usd")
		} else {
			answer, _ := io.ReadAll(resp.Body)
			cost = gjson.GetBytes(answer, "usage.estimated_cost_usd")
			if gjson.GetBytes(answer, "usage.cache_creation.ephemeral_1h_input_tokens").Int() != 2000 {
				t.Fatalf("the answer lost the provider's cache_creation: %s", answer)
			}
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("stream %v: %d", stream, resp.StatusCode)
		}
		if !strings.Contains(string(up.last(t).body), `"ttl":"1h"`) {
			t.Fatalf("the provider got %s", up.last(t).body)
		}
		if cost.Num != want {
			t.Errorf("stream %v: the answer's cost %v, want %v (the 1-hour writes at the 1-hour rate)", stream, cost.Raw, want)
		}
		evs := e.usageEvents("a", i+1)
		var u gateway.UsageRecord
		if err := json.Unmarshal(evs[i].Data, &u); err != nil {
			t.Fatal(err)
		}
		wantUsage := gateway.Usage{InputTokens: 12, OutputTokens: 57, CacheReadTokens: 4000, CacheWriteTokens: 3000, CacheWrite1hTokens: 2000}
		if u.Usage != wantUsage || u.CostUSD == nil || *u.CostUSD != want {
			t.Errorf("stream %v: usage recorded %+v at %v, want %+v at %v", stream, u.Usage, u.CostUSD, wantUsage, want)
		}
	}
}

// The same answer translated (a /v1/chat/completions call to an
// Anthropic model) is billed the same way.
func TestTranslatedCallBillsOneHourCacheWrites(t *testing.T) {
	e, _ := goldenEnv(t, oneHourStream, oneHourMessage, "anthropic")
	want := gateway.RoundUSD((12*1 + 57*5 + 4000*0.10 + 1000*1.25 + 2000*2) / 1e6)
	for i, stream := range []bool{false, true} {
		body := `{"model":"anthropic:claude-haiku-4-5","max_tokens":100,"stream":` + map[bool]string{false: "false", true: "true"}[stream] +
			`,"messages":[{"role":"user","content":"hi"}]}`
		req, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.tenantA)
		req.Header.Set("content-type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("stream %v: %d", stream, resp.StatusCode)
		}
		evs := e.usageEvents("a", i+1)
		var u gateway.UsageRecord
		if err := json.Unmarshal(evs[i].Data, &u); err != nil {
			t.Fatal(err)
		}
		if u.Usage.CacheWriteTokens != 3000 || u.Usage.CacheWrite1hTokens != 2000 || u.CostUSD == nil || *u.CostUSD != want {
			t.Errorf("stream %v: usage recorded %+v at %v, want 2000 of 3000 writes 1-hour ones at %v", stream, u.Usage, u.CostUSD, want)
		}
	}
}
