package http_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/gateway"
)

// An Anthropic answer served in fast mode (usage.speed fast), whole and
// streamed.
const (
	fastUsage   = `"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":4000,"output_tokens":57,"service_tier":"standard","speed":"fast"}`
	fastMessage = `{"id":"msg_fast","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{"type":"text","text":"Hi!"}],"stop_reason":"end_turn","stop_sequence":null,` + fastUsage + `}`
	fastStream  = `event: message_start
data: {"type":"message_start","message":{"id":"msg_fast","type":"message","role":"assistant","model":"claude-opus-5-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":4000,"output_tokens":1,"service_tier":"standard","speed":"fast"}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi!"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},` + fastUsage + `}

event: message_stop
data: {"type":"message_stop"}

`
)

func postMessages(t *testing.T, e *env, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/messages", strings.NewReader(body))
	req.Header.Set("x-api-key", e.tenantA)
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, raw
}

// Claude Code's /fast sends speed fast; Anthropic bills fast mode at twice
// the standard rates (Claude Opus 5.5: $8 and $40 a million against $4 and
// $20), and says so in usage.speed. A passed-through call is billed so,
// whole and streamed, and its usage event says it was served fast.
func TestPassThroughBillsFastMode(t *testing.T) {
	e, up := goldenEnv(t, fastStream, fastMessage, "anthropic")
	// 12 input at $4, 57 output at $20, 4000 cache reads at $0.20, a
	// million each, all twice over.
	want := gateway.RoundUSD(2 * (12*4 + 57*20 + 4000*0.20) / 1e6)
	for i, stream := range []bool{false, true} {
		body := `{"model":"anthropic:claude-opus-5-5","max_tokens":100,"speed":"fast","stream":` + map[bool]string{false: "false", true: "true"}[stream] +
			`,"messages":[{"role":"user","content":"hi"}]}`
		resp, raw := postMessages(t, e, body)
		if resp.StatusCode != 200 {
			t.Fatalf("stream %v: %d %s", stream, resp.StatusCode, raw)
		}
		if !strings.Contains(string(up.last(t).body), `"speed":"fast"`) {
			t.Fatalf("the provider got %s", up.last(t).body)
		}
		var cost gjson.Result
		if stream {
			events := sseRaw(t, strings.NewReader(string(raw)))
			if len(events) < 2 {
				t.Fatalf("stream: %v", events)
			}
			cost = gjson.Get(events[len(events)-2][1], "usage.estimated_cost_usd")
		} else {
			cost = gjson.GetBytes(raw, "usage.estimated_cost_usd")
		}
		if cost.Num != want {
			t.Errorf("stream %v: the answer's cost %v, want %v (fast mode at twice the rates)", stream, cost.Raw, want)
		}
		evs := e.usageEvents("a", i+1)
		var u gateway.UsageRecord
		if err := json.Unmarshal(evs[i].Data, &u); err != nil {
			t.Fatal(err)
		}
		if u.Usage.ServiceTier != "fast" || u.CostUSD == nil || *u.CostUSD != want {
			t.Errorf("stream %v: usage recorded %+v at %v, want tier fast at %v", stream, u.Usage, u.CostUSD, want)
		}
	}
}

// The hold of a fast-mode call is at the fast rates: a budget that covers
// the call's worst case at the standard rates, and not at twice them,
// cannot take it, and nothing reaches the provider.
func TestFastModeIsHeldAtItsRate(t *testing.T) {
	e, up := goldenEnv(t, fastStream, fastMessage, "anthropic")
	// Worst case at standard rates: the prompt's bytes bound its tokens
	// (about 150) at the dearest input rate ($8, the 1-hour cache write),
	// and 1,000 output tokens at $20: about $0.021. At fast, twice that.
	e.must(e.do("PUT", "/v1/admin/budgets/a", e.admin, map[string]any{"dailyUsd": 0.03, "monthlyUsd": nil}), 200)
	standard := `{"model":"anthropic:claude-opus-5-5","max_tokens":1000,"messages":[{"role":"user","content":"hi"}]}`
	if resp, raw := postMessages(t, e, standard); resp.StatusCode != 200 {
		t.Fatalf("standard speed: %d %s", resp.StatusCode, raw)
	}
	calls := up.count()
	fast := `{"model":"anthropic:claude-opus-5-5","max_tokens":1000,"speed":"fast","messages":[{"role":"user","content":"hi"}]}`
	resp, raw := postMessages(t, e, fast)
	if resp.StatusCode != 400 || gjson.GetBytes(raw, "error.type").Str != "invalid_request_error" || !strings.Contains(string(raw), "budget") {
		t.Fatalf("fast mode over the budget: %d %s", resp.StatusCode, raw)
	}
	if up.count() != calls {
		t.Fatal("a refused call reached the provider")
	}
	// Sonnet has no fast mode: under a budget its cost could not be
	// bounded, so the call is refused by name, not held as a standard one.
	resp, raw = postMessages(t, e, `{"model":"anthropic:claude-sonnet-5-5","max_tokens":10,"speed":"fast","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 403 || !strings.Contains(gjson.GetBytes(raw, "error.message").Str, "speed fast") {
		t.Fatalf("fast mode on a model without its rate, under a budget: %d %s", resp.StatusCode, raw)
	}
	if up.count() != calls {
		t.Fatal("a refused call reached the provider")
	}
}

// Translated to a provider that has no fast mode or regions, speed fast and
// an inference_geo other than global are refused by name rather than
// dropped; their default values pass.
func TestSpeedAndGeoRefusedWhenTranslated(t *testing.T) {
	e, up := goldenEnv(t, "", `{"id":"c","object":"chat.completion","created":1,"model":"gpt-6-luna","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`, "openai")
	for _, c := range []struct {
		field, value string
		status       int
	}{
		{"speed", `"fast"`, 400}, {"inference_geo", `"us"`, 400},
		{"speed", `"standard"`, 200}, {"inference_geo", `"global"`, 200},
	} {
		calls := up.count()
		resp, raw := postMessages(t, e, `{"model":"openai:gpt-6-luna","max_tokens":10,"`+c.field+`":`+c.value+`,"messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != c.status {
			t.Fatalf("%s %s: %d %s", c.field, c.value, resp.StatusCode, raw)
		}
		if c.status == 400 {
			if !strings.Contains(gjson.GetBytes(raw, "error.message").Str, c.field) {
				t.Errorf("%s %s: the refusal does not name the field: %s", c.field, c.value, raw)
			}
			if up.count() != calls {
				t.Errorf("%s %s: a refused call reached the provider", c.field, c.value)
			}
		}
	}
}

// count is how many requests the upstream got.
func (u *recordingUpstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.got)
}
