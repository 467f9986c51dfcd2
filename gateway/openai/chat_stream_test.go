package openai

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/internal/sse"
	"github.com/batonhq/baton/gateway/internal/upstreamtest"
)

func oaStreamOf(chunks ...string) *oaStream {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	return &oaStream{name: "t", body: io.NopCloser(nil), sse: sse.NewReader(strings.NewReader(b.String()))}
}

// Some OpenAI-compatible servers repeat a tool call's id and name in every
// chunk of it; others send none. Either way each call is one call, with an
// id, numbered by its order in the answer; a second call at index 0 with
// another id is a second call.
func TestOpenAIStreamToolCallIDs(t *testing.T) {
	ds, err := upstreamtest.Drain(t, oaStreamOf(
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"1}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"name":"h","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`[DONE]`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	args := map[int]string{}
	for _, d := range ds {
		if tc := d.ToolCall; tc != nil {
			if tc.ID != "" {
				got = append(got, tc.Name)
				if tc.Index != len(got)-1 {
					t.Errorf("call %s has index %d, want %d", tc.Name, tc.Index, len(got)-1)
				}
			}
			args[tc.Index] += tc.Arguments
		}
	}
	if strings.Join(got, ",") != "f,g,h" || args[0] != `{"a":1}` || args[1] != "{}" || args[2] != "{}" {
		t.Fatalf("calls %v, arguments %v", got, args)
	}
	var h *gateway.ToolCallDelta
	for _, d := range ds {
		if d.ToolCall != nil && d.ToolCall.Name == "h" {
			h = d.ToolCall
		}
	}
	if h == nil || !strings.HasPrefix(h.ID, "call_") {
		t.Fatalf("a call without an id was given none: %+v", h)
	}
	// Tool calls with finish_reason "stop": the answer ends for the tools.
	if last := ds[len(ds)-1]; last.StopReason != gateway.StopToolUse || last.NativeStop != "stop" {
		t.Fatalf("stop %q (native %q), want tool_use (stop)", last.StopReason, last.NativeStop)
	}
}

func TestOpenAIStreamEnds(t *testing.T) {
	// finish_reason and usage, then the body ends without [DONE]: whole.
	ds, err := upstreamtest.Drain(t, oaStreamOf(
		`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	last := ds[len(ds)-1]
	if last.StopReason != gateway.StopRefusal || last.NativeStop != "content_filter" || last.Usage == nil || last.Usage.InputTokens != 3 {
		t.Fatalf("last delta %+v", last)
	}
	// A finish_reason without usage, then the end: whole too, as passed
	// through (it was an error, billed as partial), the usage left to
	// the caller to count.
	ds, err = upstreamtest.Drain(t, oaStreamOf(
		`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if last := ds[len(ds)-1]; last.StopReason != gateway.StopEndTurn || last.Usage != nil {
		t.Fatalf("last delta %+v", last)
	}
	// Without a finish_reason, the same end is a cut.
	if _, err := upstreamtest.Drain(t, oaStreamOf(`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`, `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}`)); err == nil {
		t.Fatal("a stream cut before its finish_reason ended cleanly")
	}
}

// FuzzSSEStreams feeds arbitrary upstream bytes to the chat completions stream parser: they
// must end (EOF or an error) without panicking.
func FuzzSSEStreams(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"x\"}}\n\n"))
	f.Add([]byte("data: not json\n\n"))
	f.Add([]byte("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0}\n\nevent: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, st := range []gateway.Stream{
			&oaStream{name: "f", body: io.NopCloser(nil), sse: sse.NewReader(strings.NewReader(string(b)))},
			// The passthrough parsers read the same untrusted bytes.
			&oaRawStream{name: "f", body: io.NopCloser(nil), sse: sse.NewReader(strings.NewReader(string(b)))},
			&respRawStream{name: "f", body: io.NopCloser(nil), sse: sse.NewReader(strings.NewReader(string(b)))},
		} {
			upstreamtest.Ends(t, st, len(b))
		}
	})
}

// referenceChunk reads a passed-through chunk one gjson Get per field, as
// the parser did before its one-pass reading; FuzzRawChunk holds the two
// to the same answers.
func referenceChunk(data []byte) (gateway.Delta, bool) {
	g := gjson.ParseBytes(data)
	if e := g.Get("error"); e.Exists() && e.Type != gjson.Null {
		return gateway.Delta{}, true
	}
	d := gateway.Delta{ServiceTier: g.Get("service_tier").Str}
	choice := g.Get("choices.0")
	delta := choice.Get("delta")
	d.Text = delta.Get("content").Str
	d.Refusal = delta.Get("refusal").Str
	if tc := delta.Get("tool_calls.0"); tc.Exists() {
		d.ToolCall = &gateway.ToolCallDelta{Index: int(tc.Get("index").Int()), ID: tc.Get("id").Str, Name: tc.Get("function.name").Str, Arguments: tc.Get("function.arguments").Str}
	}
	if fr := choice.Get("finish_reason").Str; fr != "" {
		d.StopReason, d.NativeStop = ChatStop(fr), fr
	}
	if u := g.Get("usage"); u.IsObject() {
		final := referenceUsage(u)
		final.ServiceTier = d.ServiceTier
		d.Usage = &final
	}
	return d, false
}

func referenceUsage(u gjson.Result) gateway.Usage {
	prompt := max(int(u.Get("prompt_tokens").Int()), 0)
	cached := min(max(int(u.Get("prompt_tokens_details.cached_tokens").Int()), 0), prompt)
	written := min(max(int(u.Get("prompt_tokens_details.cache_write_tokens").Int()), 0), prompt-cached)
	return gateway.Usage{InputTokens: prompt - cached - written, OutputTokens: max(int(u.Get("completion_tokens").Int()), 0), CacheReadTokens: cached, CacheWriteTokens: written}
}

func FuzzRawChunk(f *testing.F) {
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":"hi","refusal":null}}]}`))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c","function":{"name":"f","arguments":"{"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`))
	f.Add([]byte(`{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}],"choices":[{"delta":{"content":"c"}}]}`))
	f.Add([]byte(`{"usage":{"prompt_tokens":1},"error":{"type":"x","message":"y"}}`))
	f.Add([]byte(`{"error":null,"choices":[{"index":0,"delta":{"content":"hi"}}],"error":{"message":"y"}}`))
	f.Add([]byte(`{"choices":[{"delta":{"cont\u0065nt":"esc"},"finish_reason":"stop"}]}`))
	f.Add([]byte(`{"service_tier":"priority","choices":[],"usage":{"prompt_tokens":4},"service_tier":"default"}`))
	f.Add([]byte(`{"choices":[{"delta":{"content":"x"}}],"service_tier":7}`))
	f.Add([]byte(`{"choices":[],"usage":{"prompt_tokens":9,"prompt_tokens":2,"completion_tokens":"4","prompt_tokens_details":{"cached_tokens":3,"cache_write_tokens":2},"prompt_tokens_details":{"cached_tokens":1}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !gjson.ValidBytes(b) || len(bytes.TrimSpace(b)) == 0 || bytes.ContainsAny(b, "\r") || bytes.Contains(b, []byte("\n\n")) || string(bytes.TrimSpace(b)) == "[DONE]" {
			return
		}
		want, failed := referenceChunk(b)
		st := &oaRawStream{name: "f", body: io.NopCloser(nil), passUsage: true,
			sse: sse.NewReader(strings.NewReader("data: " + strings.ReplaceAll(string(b), "\n", "\ndata: ") + "\n\n"))}
		got, err := st.Next()
		if failed != (err != nil) {
			t.Fatalf("%s: error %v, reference failed %v", b, err, failed)
		}
		if failed {
			return
		}
		got.Raw, got.Commit = nil, false
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", b, got, want)
		}
	})
}

// referenceAnswer reads a passed-through chat completion one gjson Get
// per field, as Forward did before readChatAnswer.
func referenceAnswer(raw []byte) (*gateway.Response, bool) {
	if !gjson.ValidBytes(raw) || !gjson.GetBytes(raw, "choices").IsArray() {
		return nil, false
	}
	g := gjson.ParseBytes(raw)
	if !g.Get("choices.0").Exists() && g.Get("error.message").Str != "" {
		return nil, false // no choice, and the provider's error
	}
	fr := g.Get("choices.0.finish_reason").Str
	out := &gateway.Response{Raw: raw, ID: g.Get("id").Str, Model: g.Get("model").Str, StopReason: ChatStop(fr), NativeStop: fr}
	if u := g.Get("usage"); u.IsObject() {
		out.Usage = referenceUsage(u)
	} else {
		out.UsageMissing = true
	}
	if out.UsageMissing || out.Usage.OutputTokens == 0 { // the caller counts the output
		g.Get("choices").ForEach(func(_, c gjson.Result) bool {
			m := c.Get("message")
			out.Content = append(out.Content, gateway.Block{Type: "text", Text: m.Get("content").Str + m.Get("refusal").Str + m.Get("tool_calls").Raw})
			return true
		})
	}
	out.Usage.ServiceTier = g.Get("service_tier").Str
	return out, true
}

func FuzzChatAnswer(f *testing.F) {
	f.Add([]byte(`{"id":"c","model":"m","choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":1}}}`))
	f.Add([]byte(`{"choices":[],"choices":[{"finish_reason":"length","message":{"content":"a","refusal":"b","tool_calls":[{"id":"t"}]}}],"id":"x","id":"y"}`))
	f.Add([]byte(`{"choices":{"0":{"finish_reason":"stop"}},"usage":null,"usage":{"prompt_tokens":2}}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(`{"choices":[],"service_tier":"fast","usage":{"prompt_tokens":2},"service_tier":"default"}`))
	f.Add([]byte(`{"choices":[],"service_tier":null}`))
	f.Add([]byte(`{"choices":[],"error":{"message":"Provider returned error","code":500}}`))
	f.Add([]byte(`{"choices":[],"choices":[{"finish_reason":"stop"}],"error":{"message":"m"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, ok := referenceAnswer(raw)
		got, err := readChatAnswer("p", raw)
		if ok != (err == nil) {
			t.Fatalf("%s: error %v, reference ok %v", raw, err, ok)
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", raw, got, want)
		}
	})
}

// Every delta of a translated stream carries the tier its chunks say the
// call is served at, tool calls and the end included: a stream of tool
// calls alone that breaks (or ends without usage) is billed from them.
func TestOpenAIStreamTierOnEveryDelta(t *testing.T) {
	for _, end := range []string{``, `[DONE]`} {
		chunks := []string{
			`{"service_tier":"priority","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
			`{"service_tier":"priority","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":""}}]}}]}`,
			`{"service_tier":"priority","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}`,
		}
		if end != "" {
			chunks = append(chunks, `{"service_tier":"priority","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, end)
		}
		ds, _ := upstreamtest.Drain(t, oaStreamOf(chunks...))
		if len(ds) == 0 {
			t.Fatalf("end %q: no deltas", end)
		}
		for i, d := range ds {
			if d.ServiceTier != "priority" {
				t.Errorf("end %q: delta %d (%+v) has tier %q, want priority", end, i, d, d.ServiceTier)
			}
		}
	}
}

// A call whose first chunk has no id and a later one has it is one call,
// under the id the client was given first; a call after it at the same
// index with another id is still a call of its own.
func TestOpenAIStreamToolCallIDComesLater(t *testing.T) {
	ds, err := upstreamtest.Drain(t, oaStreamOf(
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"arguments":"1}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"arguments":""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`[DONE]`))
	if err != nil {
		t.Fatal(err)
	}
	var starts []gateway.ToolCallDelta
	args := map[int]string{}
	for _, d := range ds {
		if tc := d.ToolCall; tc != nil {
			if tc.ID != "" {
				starts = append(starts, *tc)
			}
			args[tc.Index] += tc.Arguments
		}
	}
	if len(starts) != 2 || starts[0].Name != "f" || !strings.HasPrefix(starts[0].ID, "call_") || starts[1].ID != "c2" || starts[1].Index != 1 {
		t.Fatalf("calls %+v, want f (an id of Baton's) then g (c2)", starts)
	}
	if args[0] != `{"a":1}` || args[1] != "{}" {
		t.Fatalf("arguments %v", args)
	}
}

// A call without an id followed, at the same index, by a call of another
// name with an id is two calls (servers that put parallel calls at index
// 0): the late id is taken as the first call's only when its chunk names
// no function, or the same one.
func TestOpenAIStreamAnotherCallAfterOneWithoutID(t *testing.T) {
	ds, err := upstreamtest.Drain(t, oaStreamOf(
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`[DONE]`))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	args := map[int]string{}
	for _, d := range ds {
		if tc := d.ToolCall; tc != nil {
			if tc.ID != "" {
				names = append(names, tc.Name)
			}
			args[tc.Index] += tc.Arguments
		}
	}
	if strings.Join(names, ",") != "f,g" || args[0] != `{"a":1}` || args[1] != "{}" {
		t.Fatalf("calls %v, arguments %v", names, args)
	}
}

// A call whose arguments come before the chunk that names it (and gives
// its id), as some compatible servers send them, is one call: the chunks
// of one index belong together, and the call begins, named, with all its
// arguments. One never named is still handed out at the end.
func TestOpenAIStreamToolCallArgumentsBeforeItsName(t *testing.T) {
	ds, err := upstreamtest.Drain(t, oaStreamOf(
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`[DONE]`))
	if err != nil {
		t.Fatal(err)
	}
	var starts []gateway.ToolCallDelta
	args := map[int]string{}
	for _, d := range ds {
		if tc := d.ToolCall; tc != nil {
			if tc.ID != "" {
				starts = append(starts, *tc)
			}
			args[tc.Index] += tc.Arguments
		}
	}
	if len(starts) != 2 || starts[0].ID != "call_abc" || starts[0].Name != "get_weather" || starts[0].Index != 0 ||
		!strings.HasPrefix(starts[1].ID, "call_") || starts[1].Index != 1 {
		t.Fatalf("calls %+v, want get_weather (call_abc), then the unnamed one", starts)
	}
	if args[0] != `{"city":"Paris"}` || args[1] != "{}" {
		t.Fatalf("arguments %v", args)
	}
	if last := ds[len(ds)-1]; last.StopReason != gateway.StopToolUse {
		t.Fatalf("the last delta is %+v, want the end", last)
	}
}

// An error a compatible server sends in its stream as a string (Hugging
// Face's TGI: {"error":"...","error_type":"..."}) is the upstream's error
// with its text, translated as passed through: it was "malformed stream
// chunk" translated and "error event" passed through.
func TestStreamErrorAsAString(t *testing.T) {
	chunk := `{"error":"Input validation error: inputs tokens + max_new_tokens must be <= 4096","error_type":"validation"}`
	body := "data: " + chunk + "\n\n"
	for name, st := range map[string]gateway.Stream{
		"translated":     oaStreamOf(chunk),
		"passed through": &oaRawStream{name: "f", body: io.NopCloser(nil), sse: sse.NewReader(strings.NewReader(body))},
	} {
		ds, err := upstreamtest.Drain(t, st)
		var ue *gateway.UpstreamError
		if !errors.As(err, &ue) || ue.Status != 502 || ue.Type != "validation" || !strings.Contains(ue.Public(), "must be <= 4096") || len(ds) != 0 {
			t.Errorf("%s: %v after %d deltas", name, err, len(ds))
		}
	}
}

// A chunk whose error is null holds none: a passed-through stream whose
// every chunk said "error":null failed at its first ("error event"), where
// the translating parser read it whole.
func TestStreamNullErrorIsNone(t *testing.T) {
	chunks := []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}],"error":null}`,
		`{"choices":[{"index":0,"delta":{"content":" world"},"finish_reason":"stop"}],"error":null}`,
		`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2},"error":null}`,
		`[DONE]`,
	}
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	for name, st := range map[string]gateway.Stream{
		"translated":     oaStreamOf(chunks...),
		"passed through": &oaRawStream{name: "f", body: io.NopCloser(nil), sse: sse.NewReader(strings.NewReader(b.String()))},
	} {
		ds, err := upstreamtest.Drain(t, st)
		text := ""
		for _, d := range ds {
			text += d.Text
		}
		if err != nil || text != "Hello world" {
			t.Errorf("%s: %q, %v", name, text, err)
		}
	}
}
