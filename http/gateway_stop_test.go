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

// stopUpstreams end every answer the way a test needs: Anthropic on the
// stop sequence "END", OpenAI for its content filter.
func newStopEnv(t *testing.T) *env {
	an := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"stream":true`) {
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"one two"}],"stop_reason":"stop_sequence","stop_sequence":"END","usage":{"input_tokens":5,"output_tokens":2}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range [][2]string{
			{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`},
			{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"one two"}}`},
			{"content_block_stop", `{"type":"content_block_stop","index":0}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"output_tokens":2}}`},
			{"message_stop", `{"type":"message_stop"}`},
		} {
			sse(w, ev[0], ev[1])
		}
	}))
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), "please refuse") { // OpenAI's refusal field, finish_reason stop
			if !strings.Contains(string(body), `"stream":true`) {
				io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":6,"total_tokens":11}}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			for _, d := range []string{
				`{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":""}}]}`,
				`{"choices":[{"index":0,"delta":{"refusal":"I can't "}}]}`,
				`{"choices":[{"index":0,"delta":{"refusal":"help with that."}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
				`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6,"total_tokens":11}}`, `[DONE]`,
			} {
				sse(w, "", d)
			}
			return
		}
		if !strings.Contains(string(body), `"stream":true`) {
			io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"I can't"},"finish_reason":"content_filter"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":"I can't"}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`, `[DONE]`,
		} {
			sse(w, "", d)
		}
	}))
	t.Cleanup(func() { an.Close(); oa.Close() })
	vars := map[string]string{"OPENAI_BASE_URL": oa.URL + "/v1", "OPENAI_API_KEY": "k", "ANTHROPIC_BASE_URL": an.URL, "ANTHROPIC_API_KEY": "k"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, cat)
}

// The stop sequence Anthropic hit reaches a messages client, plain and
// streamed; OpenAI's content filter is a refusal to a messages client and
// content_filter to a chat client.
func TestStopReasonsAndSequences(t *testing.T) {
	e := newStopEnv(t)
	msg := func(model string, stream bool) map[string]any {
		return map[string]any{"model": model, "max_tokens": 50, "stream": stream, "stop_sequences": []string{"END"},
			"messages": []any{map[string]any{"role": "user", "content": "count"}}}
	}
	r := e.must(e.do("POST", "/v1/messages", e.tenantA, msg("anthropic:claude-haiku-4-5", false)), 200)
	if r.str("stop_reason") != "stop_sequence" || r.str("stop_sequence") != "END" {
		t.Errorf("message: %s", r.raw)
	}
	_, evs := e.stream("/v1/messages", e.tenantA, msg("anthropic:claude-haiku-4-5", true))
	var delta struct {
		Delta struct {
			StopReason   string  `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
	}
	for _, ev := range evs {
		if ev[0] == "message_delta" {
			json.Unmarshal([]byte(ev[1]), &delta)
		}
	}
	if delta.Delta.StopReason != "stop_sequence" || delta.Delta.StopSequence == nil || *delta.Delta.StopSequence != "END" {
		t.Errorf("streamed message_delta: %+v", delta.Delta)
	}

	r = e.must(e.do("POST", "/v1/messages", e.tenantA, msg("openai:gpt-4o-mini", false)), 200)
	if r.str("stop_reason") != "refusal" || r.str("svc.trace.nativeStopReason") != "content_filter" {
		t.Errorf("content filter to a messages client: %s", r.raw)
	}
	r = e.must(e.do("POST", "/v1/chat/completions", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini",
		"messages": []any{map[string]any{"role": "user", "content": "count"}}}), 200)
	if gjson.GetBytes(r.raw, "choices.0.finish_reason").String() != "content_filter" {
		t.Errorf("content filter to a chat client: %s", r.raw)
	}
	_, evs = e.stream("/v1/messages", e.tenantA, msg("openai:gpt-4o-mini", true))
	for _, ev := range evs {
		if ev[0] == "message_delta" {
			json.Unmarshal([]byte(ev[1]), &delta)
		}
	}
	if delta.Delta.StopReason != "refusal" || delta.Delta.StopSequence != nil {
		t.Errorf("streamed content filter to a messages client: %+v", delta.Delta)
	}
}

// OpenAI's refusal field passes to a chat client as refusal (plain and
// streamed) and to a messages client as the text, with stop_reason refusal.
func TestRefusalBothFronts(t *testing.T) {
	e := newStopEnv(t)
	chat := func(stream bool) map[string]any {
		return map[string]any{"model": "openai:gpt-4o-mini", "stream": stream, "messages": []any{map[string]any{"role": "user", "content": "please refuse"}}}
	}
	r := e.must(e.do("POST", "/v1/chat/completions", e.tenantA, chat(false)), 200)
	if m := gjson.GetBytes(r.raw, "choices.0.message"); m.Get("refusal").String() != "I can't help with that." || m.Get("content").Type != gjson.Null ||
		gjson.GetBytes(r.raw, "choices.0.finish_reason").String() != "stop" {
		t.Errorf("chat: %s", r.raw)
	}
	_, evs := e.stream("/v1/chat/completions", e.tenantA, chat(true))
	refusal := ""
	for _, ev := range evs {
		refusal += gjson.Get(ev[1], "choices.0.delta.refusal").String()
	}
	if refusal != "I can't help with that." {
		t.Errorf("streamed chat refusal %q", refusal)
	}
	msg := func(stream bool) map[string]any {
		return map[string]any{"model": "openai:gpt-4o-mini", "max_tokens": 50, "stream": stream, "messages": []any{map[string]any{"role": "user", "content": "please refuse"}}}
	}
	r = e.must(e.do("POST", "/v1/messages", e.tenantA, msg(false)), 200)
	if gjson.GetBytes(r.raw, "content.0.text").String() != "I can't help with that." || r.str("stop_reason") != "refusal" {
		t.Errorf("message: %s", r.raw)
	}
	_, evs = e.stream("/v1/messages", e.tenantA, msg(true))
	text, stop := "", ""
	for _, ev := range evs {
		text += gjson.Get(ev[1], "delta.text").String()
		if ev[0] == "message_delta" {
			stop = gjson.Get(ev[1], "delta.stop_reason").String()
		}
	}
	if text != "I can't help with that." || stop != "refusal" {
		t.Errorf("streamed message: text %q stop %q", text, stop)
	}
}
