package anthropic

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/internal/sse"
	"github.com/batonhq/baton/gateway/internal/upstreamtest"
)

func anStreamOf(events ...string) *anStream {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return &anStream{name: "t", body: io.NopCloser(nil), sse: sse.NewReader(strings.NewReader(b.String()))}
}

// Anthropic: the stop sequence hit is kept; input tokens told only in
// message_delta count; refusal is a stop reason of its own.
func TestAnthropicStreamStopAndLateUsage(t *testing.T) {
	ds, err := upstreamtest.Drain(t, anStreamOf(
		`{"type":"message_start","message":{"usage":{"input_tokens":0,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"one two"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"input_tokens":9,"cache_read_input_tokens":4,"output_tokens":2}}`,
		`{"type":"message_stop"}`))
	if err != nil {
		t.Fatal(err)
	}
	last := ds[len(ds)-1]
	if last.StopReason != gateway.StopSequence || last.MatchedStop != "END" || last.Usage == nil || last.Usage.InputTokens != 9 || last.Usage.CacheReadTokens != 4 || last.Usage.OutputTokens != 2 {
		t.Fatalf("last delta %+v usage %+v", last, last.Usage)
	}
	ds, err = upstreamtest.Drain(t, anStreamOf(
		`{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"message_delta","delta":{"stop_reason":"refusal"},"usage":{"output_tokens":1}}`,
		`{"type":"message_stop"}`))
	if err != nil || ds[len(ds)-1].StopReason != gateway.StopRefusal {
		t.Fatalf("refusal: %+v, %v", ds, err)
	}
}

// An upstream whose message_delta carries no usage: message_start's output
// count (1) is not the answer's; the last delta reports no usage, so the
// caller counts the output it passed on (the input side came early).
func TestAnthropicStreamWithoutFinalUsage(t *testing.T) {
	ds, err := upstreamtest.Drain(t, anStreamOf(
		`{"type":"message_start","message":{"usage":{"input_tokens":10,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"one two three four"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`,
		`{"type":"message_stop"}`))
	if err != nil {
		t.Fatal(err)
	}
	if ds[0].Usage == nil || ds[0].Usage.InputTokens != 10 {
		t.Fatalf("early usage %+v", ds[0].Usage)
	}
	if last := ds[len(ds)-1]; last.StopReason != gateway.StopEndTurn || last.Usage != nil {
		t.Fatalf("last delta %+v, usage %+v: want no usage", last, last.Usage)
	}
}

// A tool called with no input streams no input JSON (or only empty
// fragments): its arguments come out as the empty object, so a client
// that parses the arguments it accumulated gets {}; a tool whose input
// did stream gets nothing more.
func TestAnthropicStreamToolWithoutInput(t *testing.T) {
	ds, err := upstreamtest.Drain(t, anStreamOf(
		`{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"now","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_2","name":"weather","input":{}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Paris\"}"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7}}`,
		`{"type":"message_stop"}`))
	if err != nil {
		t.Fatal(err)
	}
	args := map[int]string{}
	for _, d := range ds {
		if d.ToolCall != nil {
			args[d.ToolCall.Index] += d.ToolCall.Arguments
		}
	}
	if args[0] != "{}" || args[1] != `{"city":"Paris"}` || len(args) != 2 {
		t.Fatalf("arguments %v", args)
	}
}

// An upstream may give a tool call's whole input in its content_block_start
// and stream none: those are the call's arguments, as the SDKs read the
// block (they were {}); input deltas, when they come, are the arguments
// instead, as the SDKs take them.
func TestAnthropicStreamToolInputInItsStart(t *testing.T) {
	ds, err := upstreamtest.Drain(t, anStreamOf(
		`{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather","input":{"city":"Oslo"}}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_2","name":"weather","input":{"city":"x"}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Paris\"}"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7}}`,
		`{"type":"message_stop"}`))
	if err != nil {
		t.Fatal(err)
	}
	args := map[int]string{}
	for _, d := range ds {
		if d.ToolCall != nil {
			args[d.ToolCall.Index] += d.ToolCall.Arguments
		}
	}
	if args[0] != `{"city":"Oslo"}` || args[1] != `{"city":"Paris"}` || len(args) != 2 {
		t.Fatalf("arguments %v", args)
	}
}

// A text or thinking block's start may hold its first text: it comes
// before the deltas, as the SDKs read the block (it was dropped).
func TestAnthropicStreamTextInItsStart(t *testing.T) {
	ds, err := upstreamtest.Drain(t, anStreamOf(
		`{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"Let me","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" see"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"Hello"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" world"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}`,
		`{"type":"message_stop"}`))
	if err != nil {
		t.Fatal(err)
	}
	var text, thinking string
	for _, d := range ds {
		text, thinking = text+d.Text, thinking+d.Thinking
	}
	if text != "Hello world" || thinking != "Let me see" {
		t.Fatalf("text %q, thinking %q", text, thinking)
	}
}

// A negative output count in message_delta counts as 0, as it does in a
// whole message: it must not make a call's cost negative.
func TestAnthropicStreamNegativeUsage(t *testing.T) {
	ds, err := upstreamtest.Drain(t, anStreamOf(
		`{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":-100000}}`,
		`{"type":"message_stop"}`))
	if err != nil {
		t.Fatal(err)
	}
	if u := ds[len(ds)-1].Usage; u == nil || u.OutputTokens != 0 || u.InputTokens != 5 {
		t.Fatalf("usage %+v", u)
	}
}

// FuzzSSEStreams feeds arbitrary upstream bytes to the Messages stream parser: they
// must end (EOF or an error) without panicking.
func FuzzSSEStreams(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"x\"}}\n\n"))
	f.Add([]byte("data: not json\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, st := range []gateway.Stream{
			&anStream{name: "f", body: io.NopCloser(nil), sse: sse.NewReader(strings.NewReader(string(b)))},
			// The passthrough parser reads the same untrusted bytes.
			&anRawStream{name: "f", body: io.NopCloser(nil), sse: sse.NewReader(strings.NewReader(string(b)))},
		} {
			upstreamtest.Ends(t, st, len(b))
		}
	})
}

// What the messages front writes, the adapter reads back: a Baton behind
// an Anthropic provider of another Baton. message_start has no cost key;
// message_delta's is null for an unpriced model.
func TestFrontEventsReadBack(t *testing.T) {
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	start := enc(MessageStart("msg_1", "m", "p", gateway.Usage{InputTokens: 7, CacheReadTokens: 3}, map[string]any{"requestId": "r"}))
	end := enc(MessageDelta(gateway.StopSequence, "END", gateway.Usage{InputTokens: 7, OutputTokens: 2, CacheReadTokens: 3}, nil, nil))
	if strings.Contains(start, "estimated_cost_usd") || !strings.Contains(end, `"estimated_cost_usd":null`) || strings.Contains(start, `"index"`) {
		t.Fatalf("message_start %s\nmessage_delta %s", start, end)
	}
	ds, err := upstreamtest.Drain(t, anStreamOf(start, enc(NewTextDelta(0, "hi")), end, MessageStopEvent))
	if err != nil {
		t.Fatal(err)
	}
	last := ds[len(ds)-1]
	want := gateway.Usage{InputTokens: 7, OutputTokens: 2, CacheReadTokens: 3}
	if ds[0].Usage == nil || ds[0].Usage.InputTokens != 7 || last.StopReason != gateway.StopSequence || last.MatchedStop != "END" || last.Usage == nil || *last.Usage != want {
		t.Fatalf("deltas %+v", ds)
	}
	if _, err := upstreamtest.Drain(t, anStreamOf(enc(ErrorEvent("overloaded_error", "busy")))); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("error event read back as %v", err)
	}
}

// The output count of message_start (1, before the model wrote anything)
// is a placeholder: its early usage tells the input side alone, so that a
// stream cut right after it is not billed an output token it never had,
// translated and passed through.
func TestAnthropicStreamStartHasNoOutput(t *testing.T) {
	start := `{"type":"message_start","message":{"usage":{"input_tokens":25,"output_tokens":1}}}`
	raw := &anRawStream{name: "t", body: io.NopCloser(nil), sse: sse.NewReader(strings.NewReader("data: " + start + "\n\n"))}
	for name, st := range map[string]gateway.Stream{"adapter": anStreamOf(start), "passthrough": raw} {
		d, err := st.Next()
		if err != nil || d.Usage == nil || d.Usage.InputTokens != 25 || d.Usage.OutputTokens != 0 {
			t.Errorf("%s: %+v %v, want 25 input tokens and no output", name, d.Usage, err)
		}
	}
}

// A stream's 1-hour cache writes are read from message_start and
// message_delta, by the adapter and the passthrough alike, and kept a
// part of the writes.
func TestAnthropicStreamOneHourCacheWrites(t *testing.T) {
	raw := func(events ...string) gateway.Stream {
		var b strings.Builder
		for _, e := range events {
			b.WriteString("data: " + e + "\n\n")
		}
		return &anRawStream{name: "t", body: io.NopCloser(nil), sse: sse.NewReader(strings.NewReader(b.String()))}
	}
	for _, c := range []struct {
		name   string
		events []string
		want   gateway.Usage
	}{
		{"told at the start", []string{
			`{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1,"cache_creation_input_tokens":3000,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000}}}}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}`,
			`{"type":"message_stop"}`}, gateway.Usage{InputTokens: 5, OutputTokens: 7, CacheWriteTokens: 3000, CacheWrite1hTokens: 2000}},
		{"told at the end", []string{
			`{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7,"cache_creation_input_tokens":3000,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000}}}`,
			`{"type":"message_stop"}`}, gateway.Usage{InputTokens: 5, OutputTokens: 7, CacheWriteTokens: 3000, CacheWrite1hTokens: 2000}},
		{"more than the writes", []string{
			`{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1,"cache_creation_input_tokens":300,"cache_creation":{"ephemeral_1h_input_tokens":2000}}}}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}`,
			`{"type":"message_stop"}`}, gateway.Usage{InputTokens: 5, OutputTokens: 7, CacheWriteTokens: 300, CacheWrite1hTokens: 300}},
	} {
		for _, st := range []struct {
			parser string
			s      gateway.Stream
		}{{"adapter", anStreamOf(c.events...)}, {"passthrough", raw(c.events...)}} {
			ds, err := upstreamtest.Drain(t, st.s)
			if err != nil {
				t.Fatal(err)
			}
			var last *gateway.Usage
			for _, d := range ds {
				if d.Usage != nil {
					last = d.Usage
				}
			}
			if last == nil || *last != c.want {
				t.Errorf("%s, %s: usage %+v, want %+v", c.name, st.parser, last, c.want)
			}
		}
	}
}

// An error event in a passed-through stream came after a 200: its status
// is Baton's mapping of the error's type, not one the provider answered,
// as in the translated stream.
func TestPassedThroughStreamErrorNamesNoStatus(t *testing.T) {
	ev := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	for name, s := range map[string]gateway.Stream{
		"passed through": &anRawStream{name: "anthropic", body: io.NopCloser(nil), sse: sse.NewReader(strings.NewReader("event: error\ndata: " + ev + "\n\n"))},
		"translated":     anStreamOf(ev),
	} {
		_, err := upstreamtest.Drain(t, s)
		var ue *gateway.UpstreamError
		if !errors.As(err, &ue) || ue.Status != 529 || strings.Contains(ue.Public(), "answered") || !strings.Contains(ue.Public(), "Overloaded") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A redacted thinking block streams as one delta of its data (a
// Responses client keeps it as a reasoning item); a thinking block with no
// text, its signature.
func TestAnthropicStreamRedactedThinking(t *testing.T) {
	ds, err := upstreamtest.Drain(t, anStreamOf(
		`{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"S1"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"R1"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}`,
		`{"type":"message_stop"}`))
	if err != nil {
		t.Fatal(err)
	}
	var sig, redacted string
	for _, d := range ds {
		sig += d.Signature
		redacted += d.Redacted
	}
	if sig != "S1" || redacted != "R1" {
		t.Fatalf("signature %q, redacted %q", sig, redacted)
	}
}

// A redacted thinking block in the history goes back to Anthropic as it
// came.
func TestRedactedThinkingSentBack(t *testing.T) {
	p := New("anthropic", "http://127.0.0.1:1", "k", nil)
	req := gateway.Request{Model: "claude-sonnet-5-5", MaxTokens: 64, Messages: []gateway.Message{
		{Role: "user", Content: []gateway.Block{{Type: "text", Text: "hi"}}},
		{Role: "assistant", Content: []gateway.Block{{Type: "thinking", Signature: "S1"}, {Type: "redacted_thinking", Data: "R1"}, {Type: "tool_use", ID: "t1", Name: "f", Input: json.RawMessage(`{}`)}}},
		{Role: "user", Content: []gateway.Block{{Type: "tool_result", ToolUseID: "t1", Text: "ok"}}},
	}}
	body, err := p.body(req, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `[{"type":"thinking","thinking":"","signature":"S1"},{"type":"redacted_thinking","data":"R1"},{"type":"tool_use"`) {
		t.Fatalf("Anthropic gets %s", body)
	}
}

// The speed and geography served, told in message_delta's usage rather
// than message_start's, are billed on a translated stream as passed
// through (they were read from message_start alone).
func TestAnthropicStreamLateSpeedAndGeo(t *testing.T) {
	ds, err := upstreamtest.Drain(t, anStreamOf(
		`{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7,"speed":"fast","inference_geo":"us"}}`,
		`{"type":"message_stop"}`))
	if err != nil {
		t.Fatal(err)
	}
	last := ds[len(ds)-1]
	if last.Usage == nil || last.Usage.ServiceTier != "fast" || last.Usage.Geo != "us" || last.Usage.OutputTokens != 7 {
		t.Fatalf("last usage %+v", last.Usage)
	}
}

// A message_delta whose input-side counts, speed and geography are null
// (the Messages API has them nullable there) tells nothing of them: what
// message_start told is billed, passed through as translated (the
// passthrough read null as 0, and billed none of the cache reads).
func TestAnthropicStreamNullDeltaCounts(t *testing.T) {
	finalUsages(t, `{"input_tokens":null,"cache_read_input_tokens":null,"cache_creation_input_tokens":null,"cache_creation":null,"output_tokens":7,"server_tool_use":null,"speed":null,"inference_geo":null}`)
}

// A message_delta whose input-side counts are 0 after message_start told
// more (cumulative counts never fall: a compatible server's filler) does
// not wipe them, passed through as translated (the passthrough billed
// the 0s, the adapter what message_start told).
func TestAnthropicStreamZeroDeltaCounts(t *testing.T) {
	finalUsages(t, `{"input_tokens":5,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":7,"speed":""}`)
}

// finalUsages checks that a stream whose message_start told the input
// side and whose message_delta has usage delta ends, with the adapter and
// the passthrough alike, with the usage message_start told and 7 output
// tokens.
func finalUsages(t *testing.T, delta string) {
	t.Helper()
	events := []string{
		`{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1,"cache_read_input_tokens":2000,"cache_creation_input_tokens":300,"cache_creation":{"ephemeral_5m_input_tokens":200,"ephemeral_1h_input_tokens":100},"speed":"fast","inference_geo":"us"}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":` + delta + `}`,
		`{"type":"message_stop"}`,
	}
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	raw := &anRawStream{name: "t", body: io.NopCloser(nil), sse: sse.NewReader(strings.NewReader(b.String()))}
	want := gateway.Usage{InputTokens: 5, OutputTokens: 7, CacheReadTokens: 2000, CacheWriteTokens: 300, CacheWrite1hTokens: 100, ServiceTier: "fast", Geo: "us"}
	for _, st := range []struct {
		parser string
		s      gateway.Stream
	}{{"adapter", anStreamOf(events...)}, {"passthrough", raw}} {
		ds, err := upstreamtest.Drain(t, st.s)
		if err != nil {
			t.Fatal(err)
		}
		var last *gateway.Usage
		for _, d := range ds {
			if d.Usage != nil && d.StopReason != "" {
				last = d.Usage
			}
		}
		if last == nil || *last != want {
			t.Errorf("%s: final usage %+v, want %+v", st.parser, last, want)
		}
	}
}

// A stream that ends after its message_delta said how the answer ended,
// without message_stop, is whole, translated as passed through: it ends
// with its stop reason and the usage message_delta told (it was an error,
// billed on an estimate of the output).
func TestAnthropicStreamEndsWithoutMessageStop(t *testing.T) {
	ds, err := upstreamtest.Drain(t, anStreamOf(
		`{"type":"message_start","message":{"usage":{"input_tokens":500,"cache_read_input_tokens":10000,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":300}}`))
	if err != nil {
		t.Fatal(err)
	}
	last := ds[len(ds)-1]
	want := gateway.Usage{InputTokens: 500, CacheReadTokens: 10000, OutputTokens: 300}
	if last.StopReason != gateway.StopMaxTokens || last.Usage == nil || *last.Usage != want {
		t.Fatalf("last delta %+v, usage %+v", last, last.Usage)
	}
	// Without message_delta the answer is cut: still an error.
	if _, err := upstreamtest.Drain(t, anStreamOf(
		`{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hel"}}`)); err == nil {
		t.Fatal("a cut stream ended without an error")
	}
}

// An upstream's error without the type Anthropic gives it (an event named
// error, or an OpenAI-shaped {"error":{...}}) is the upstream's error,
// passed through as translated: it was ignored, or passed on as an event
// the SDKs ignore, and the stream said to have ended without message_stop.
func TestStreamErrorWithoutItsType(t *testing.T) {
	for _, body := range []string{
		"event: error\ndata: {\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded, upstream\"}}\n\n",
		"data: {\"error\":{\"message\":\"Overloaded, upstream\",\"code\":502}}\n\n",
	} {
		for name, s := range map[string]gateway.Stream{
			"passed through": &anRawStream{name: "anthropic", body: io.NopCloser(nil), sse: sse.NewReader(strings.NewReader(body))},
			"translated":     &anStream{name: "anthropic", body: io.NopCloser(nil), sse: sse.NewReader(strings.NewReader(body))},
		} {
			ds, err := upstreamtest.Drain(t, s)
			var ue *gateway.UpstreamError
			if !errors.As(err, &ue) || !strings.Contains(ue.Public(), "Overloaded, upstream") || len(ds) != 0 {
				t.Errorf("%s, %q: %v after %d deltas", name, body, err, len(ds))
			}
		}
	}
}
