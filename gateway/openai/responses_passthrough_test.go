package openai

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/internal/sse"
	"github.com/batonhq/baton/gateway/internal/upstreamtest"
)

func respStream(events ...string) *respRawStream {
	body := io.NopCloser(strings.NewReader(strings.Join(events, "")))
	return &respRawStream{name: "openai", body: body, sse: sse.NewReader(body)}
}

func respEvent(typ, rest string) string {
	return "event: " + typ + "\ndata: {\"type\":\"" + typ + "\",\"sequence_number\":0" + rest + "}\n\n"
}

func TestResponsesRawStream(t *testing.T) {
	usage := `,"response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[],"usage":{"input_tokens":50,"input_tokens_details":{"cached_tokens":20,"cache_write_tokens":10},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":5}}}`
	ds, err := upstreamtest.Drain(t, respStream(
		respEvent("response.created", `,"response":{}`),
		respEvent("response.output_item.added", `,"output_index":0,"item":{"type":"function_call","call_id":"call_1","name":"f"}`),
		respEvent("response.function_call_arguments.delta", `,"output_index":0,"delta":"{}"`),
		respEvent("response.output_text.delta", `,"delta":"hi"`),
		respEvent("response.incomplete", usage)))
	if err != nil || len(ds) != 5 {
		t.Fatalf("%d deltas, %v", len(ds), err)
	}
	if ds[0].Commits() || !ds[1].Commits() || ds[1].ToolCall.ID != "call_1" || ds[2].ToolCall.Arguments != "{}" || ds[3].Text != "hi" || ds[4].Event != "response.incomplete" {
		t.Fatalf("deltas %+v", ds)
	}
	if u := ds[4].Usage; u == nil || *u != (gateway.Usage{InputTokens: 20, CacheReadTokens: 20, CacheWriteTokens: 10, OutputTokens: 7}) ||
		ds[4].StopReason != gateway.StopMaxTokens || ds[4].NativeStop != "max_output_tokens" {
		t.Fatalf("end: %+v %+v", ds[4], ds[4].Usage)
	}
	// Failures: retryable before anything was sent, as their code says.
	for _, tc := range []struct {
		ev     string
		status int
	}{
		{respEvent("error", `,"code":"rate_limit_exceeded","message":"slow down","param":null`), 429},
		{respEvent("response.failed", `,"response":{"status":"failed","error":{"code":"server_error","message":"oops"}}`), 502},
		{respEvent("error", `,"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"too long"}`), 400},
		{"", 502}, // the stream ended before response.completed
	} {
		_, err := upstreamtest.Drain(t, respStream(respEvent("response.created", `,"response":{}`), tc.ev))
		var ue *gateway.UpstreamError
		if !errors.As(err, &ue) || ue.Status != tc.status {
			t.Errorf("%q: %v", tc.ev, err)
		}
	}
}

func TestResponsesStopOf(t *testing.T) {
	for raw, want := range map[string]string{
		`{"status":"completed","output":[{"type":"message"}]}`:                            gateway.StopEndTurn,
		`{"status":"completed","output":[{"type":"reasoning"},{"type":"function_call"}]}`: gateway.StopToolUse,
		`{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}`:        gateway.StopRefusal,
	} {
		if got, _ := responsesStop(gjson.Parse(raw)); got != want {
			t.Errorf("%s: %s, want %s", raw, got, want)
		}
	}
}

func TestOpenAISpeaksResponses(t *testing.T) {
	if !New("openai", "openai", "http://x/v1", "k", nil).Speaks(gateway.FormatResponses) ||
		New("ollama", "openai-compatible", "http://x/v1", "", nil).Speaks(gateway.FormatResponses) {
		t.Fatal("only OpenAI itself speaks the Responses API")
	}
}

// A failed response came in a 200 (a body whose status is failed, or a
// stream's response.failed or error event): its status is Baton's mapping
// of the error's code, not one the provider answered.
func TestResponsesFailureNamesNoStatus(t *testing.T) {
	failed := `,"response":{"status":"failed","error":{"code":"server_error","message":"The model failed"}}`
	for name, s := range map[string]*respRawStream{
		"response.failed": respStream(respEvent("response.created", `,"response":{}`), respEvent("response.failed", failed)),
		"error event":     respStream(respEvent("error", `,"code":"rate_limit_exceeded","message":"The model failed"`)),
	} {
		_, err := upstreamtest.Drain(t, s)
		var ue *gateway.UpstreamError
		if !errors.As(err, &ue) || strings.Contains(ue.Public(), "answered") || !strings.Contains(ue.Public(), "The model failed") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
