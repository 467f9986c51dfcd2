package http_test

// POST /v1/responses with the official OpenAI Go SDK as the client: against
// the local development model, the Anthropic fake of gateway_test.go, and a
// recording chat-completions upstream (recorder, below) that keeps every
// request it takes, so a test sees what the translation sent.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/batonhq/baton/gateway"
)

// recorder is a chat-completions upstream (kind openai-compatible: the
// Responses API is translated for it, not passed through) that keeps the
// requests it takes. It answers a request that offers tools and ends with a
// user turn with a call of the first tool (arguments {"city":"Paris"}); a
// request with a response format with {"answer":"42"}; anything else with
// "heard: " and the last message's text. Streams go word by word.
type recorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []recordedRequest
}

type recordedRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string `json:"role"`
		Content    any    `json:"content"`
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	User                string          `json:"user"`
	ReasoningEffort     string          `json:"reasoning_effort"`
}

// turns is the request's messages as role:text (tool calls as
// role>name(args)#id, tool results as tool#id:text).
func (q recordedRequest) turns() []string {
	var out []string
	for _, m := range q.Messages {
		text, _ := m.Content.(string)
		switch {
		case m.Role == "tool":
			out = append(out, "tool#"+m.ToolCallID+":"+text)
		case len(m.ToolCalls) > 0:
			for _, c := range m.ToolCalls {
				out = append(out, fmt.Sprintf("%s>%s(%s)#%s", m.Role, c.Function.Name, c.Function.Arguments, c.ID))
			}
		default:
			out = append(out, m.Role+":"+text)
		}
	}
	return out
}

func newRecorder(t *testing.T) *recorder {
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(rec.serve))
	t.Cleanup(rec.srv.Close)
	return rec
}

// spec declares the recorder as provider "rec" with model "m1".
func (rec *recorder) spec() gateway.ProviderSpec {
	return gateway.ProviderSpec{Name: "rec", Kind: "openai-compatible", BaseURL: rec.srv.URL + "/v1", KeyEnv: "COMPAT_API_KEY",
		Models: []gateway.ModelSpec{{Name: "m1", ContextTokens: 128000, SupportsJSON: true, SupportsTools: true, Modes: []string{},
			Pricing: &gateway.Price{InputPerMTok: 1, OutputPerMTok: 2, Source: "test"}}}}
}

func (rec *recorder) requests() []recordedRequest {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.reqs)
}

func (rec *recorder) last(t *testing.T) recordedRequest {
	t.Helper()
	reqs := rec.requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the upstream")
	}
	return reqs[len(reqs)-1]
}

func (rec *recorder) serve(w http.ResponseWriter, r *http.Request) {
	var q recordedRequest
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil || r.URL.Path != "/v1/chat/completions" {
		w.WriteHeader(400)
		return
	}
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, q)
	rec.mu.Unlock()
	lastRole, lastText := "", ""
	if n := len(q.Messages); n > 0 {
		lastRole = q.Messages[n-1].Role
		lastText, _ = q.Messages[n-1].Content.(string)
	}
	var text, call string
	finish := "stop"
	switch {
	case len(q.Tools) > 0 && lastRole == "user":
		call, finish = q.Tools[0].Function.Name, "tool_calls"
	case len(q.ResponseFormat) > 0:
		text = `{"answer":"42"}`
	default:
		text = "heard: " + lastText
	}
	usage := `{"prompt_tokens":20,"completion_tokens":3,"total_tokens":23,"prompt_tokens_details":{"cached_tokens":8}}`
	if !q.Stream {
		msg := fmt.Sprintf(`{"role":"assistant","content":%q}`, text)
		if call != "" {
			msg = fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":%q,"arguments":"{\"city\":\"Paris\"}"}}]}`, call)
		}
		fmt.Fprintf(w, `{"id":"chatcmpl-rec","object":"chat.completion","model":%q,"choices":[{"index":0,"message":%s,"finish_reason":%q}],"usage":%s}`, q.Model, msg, finish, usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if call != "" {
		sse(w, "", fmt.Sprintf(`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":%q,"arguments":""}}]}}]}`, call))
		sse(w, "", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}`)
		sse(w, "", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}}]}`)
	} else {
		for i, word := range strings.Fields(text) {
			if i > 0 {
				word = " " + word
			}
			sse(w, "", fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":%q}}]}`, word))
		}
	}
	sse(w, "", fmt.Sprintf(`{"choices":[{"index":0,"delta":{},"finish_reason":%q}]}`, finish))
	sse(w, "", `{"choices":[],"usage":`+usage+`}`)
	sse(w, "", "[DONE]")
}

// responsesEnv is a Baton with the fakes of gateway_test.go and the
// recorder, and an SDK client of tenant a.
func responsesEnv(t *testing.T) (*env, *recorder, openai.Client) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { verifyNoNewGoroutines(t, before) }) // runs last
	rec := newRecorder(t)
	e := newEnvWith(t, gatewayCatalog(t, newFakeUpstreams(t), rec.spec()))
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return e, rec, newOpenAIClient(e, &http.Client{Transport: tr}, e.tenantA)
}

func textInput(s string) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfString: openai.String(s)}
}

func respWeatherTool() responses.ToolUnionParam {
	return responses.ToolParamOfFunction("get_weather", map[string]any{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"},
	}, true)
}

func TestResponsesPlainTextAndInstructions(t *testing.T) {
	e, _, client := responsesEnv(t)
	ctx := testCtx(t)
	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "local:echo", Input: textInput("hello there"), Instructions: openai.String("be brief")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "[local development model] You said: hello there" || resp.Status != "completed" || !strings.HasPrefix(resp.ID, "resp_") ||
		resp.Model != "local:echo" || resp.Instructions.OfString != "be brief" {
		t.Fatalf("response: %s", resp.RawJSON())
	}
	// The local model counts a token a word: 2 of instructions, 2 of input.
	if resp.Usage.InputTokens != 4 || resp.Usage.OutputTokens != 7 || resp.Usage.TotalTokens != 11 {
		t.Fatalf("usage: %s", resp.Usage.RawJSON())
	}
	// Through Anthropic: the instructions are the system prompt; usage in
	// the Responses convention (input includes the 90 cache reads).
	resp, err = client.Responses.New(ctx, responses.ResponseNewParams{Model: "anthropic:claude-haiku-4-5", Input: textInput("hi"), Instructions: openai.String("be brief")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != `system="be brief" turns=1` || resp.Usage.InputTokens != 100 || resp.Usage.InputTokensDetails.CachedTokens != 90 || resp.Usage.OutputTokens != 4 {
		t.Fatalf("response: %s", resp.RawJSON())
	}
	var svc struct {
		Svc struct {
			Trace struct{ SelectedProvider string } `json:"trace"`
		} `json:"svc"`
	}
	json.Unmarshal([]byte(resp.RawJSON()), &svc)
	if svc.Svc.Trace.SelectedProvider != "anthropic" {
		t.Fatalf("svc: %s", resp.RawJSON())
	}
	evs := e.usageEvents("a", 2)
	var u gateway.UsageRecord
	json.Unmarshal(evs[len(evs)-1].Data, &u)
	if u.Front != "responses" || u.Model != "anthropic:claude-haiku-4-5" || u.Outcome != "ok" {
		t.Fatalf("usage record %+v", u)
	}
}

// A function call and its result, each way of sending the history: the
// whole conversation as items, and previous_response_id with the result
// alone. The upstream gets the same turns both times.
func TestResponsesFunctionCallRoundTrip(t *testing.T) {
	_, rec, client := responsesEnv(t)
	ctx := testCtx(t)
	first, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "rec:m1", Input: textInput("weather in Paris?"),
		Tools: []responses.ToolUnionParam{respWeatherTool()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Output) != 1 || first.Output[0].Type != "function_call" {
		t.Fatalf("output: %s", first.RawJSON())
	}
	call := first.Output[0].AsFunctionCall()
	if call.Name != "get_weather" || call.CallID != "call_1" || call.Arguments != `{"city":"Paris"}` || !strings.HasPrefix(call.ID, "fc_") {
		t.Fatalf("call: %s", call.RawJSON())
	}
	want := []string{"user:weather in Paris?", `assistant>get_weather({"city":"Paris"})#call_1`, "tool#call_1:sunny", "heard: sunny"}
	result := responses.ResponseInputItemParamOfFunctionCallOutput("sunny")
	result.OfFunctionCallOutput.CallID = openai.String(call.CallID)

	items := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("weather in Paris?", responses.EasyInputMessageRoleUser),
		{OfFunctionCall: &responses.ResponseFunctionToolCallParam{CallID: call.CallID, Name: call.Name, Arguments: call.Arguments}},
		result,
	}
	second, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "rec:m1", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: items},
		Tools: []responses.ToolUnionParam{respWeatherTool()}})
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.last(t).turns(); !slices.Equal(got, want[:3]) || second.OutputText() != want[3] {
		t.Fatalf("items: upstream turns %q, answer %q", got, second.OutputText())
	}

	third, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "rec:m1", PreviousResponseID: openai.String(first.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{result}},
		Tools: []responses.ToolUnionParam{respWeatherTool()}})
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.last(t).turns(); !slices.Equal(got, want[:3]) || third.OutputText() != want[3] || third.PreviousResponseID != first.ID {
		t.Fatalf("previous_response_id: upstream turns %q, answer %q", got, third.OutputText())
	}
}

// previous_response_id: the second call's upstream sees the first
// exchange; the first call's instructions are not carried (as with
// OpenAI), the second's are. A chain goes on from the second.
func TestResponsesPreviousResponseID(t *testing.T) {
	e, rec, client := responsesEnv(t)
	ctx := testCtx(t)
	first, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "rec:m1", Input: textInput("my name is Ada"), Instructions: openai.String("first rules")})
	if err != nil {
		t.Fatal(err)
	}
	second, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "rec:m1", Input: textInput("what is my name?"),
		PreviousResponseID: openai.String(first.ID), Instructions: openai.String("second rules")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"system:second rules", "user:my name is Ada", "assistant:heard: my name is Ada", "user:what is my name?"}
	if got := rec.last(t).turns(); !slices.Equal(got, want) {
		t.Fatalf("upstream turns %q, want %q", got, want)
	}
	if _, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "rec:m1", Input: textInput("and again?"), PreviousResponseID: openai.String(second.ID)}); err != nil {
		t.Fatal(err)
	}
	want = append(want[1:], "assistant:heard: what is my name?", "user:and again?")
	if got := rec.last(t).turns(); !slices.Equal(got, want) {
		t.Fatalf("a chain of three: upstream turns %q, want %q", got, want)
	}
	// The stored response, as it was answered; another tenant's is a 404.
	got, err := client.Responses.Get(ctx, second.ID, responses.ResponseGetParams{})
	if err != nil || got.ID != second.ID || got.OutputText() != second.OutputText() {
		t.Fatalf("get: %v %v", got, err)
	}
	r := e.do("GET", "/v1/responses/"+second.ID, e.tenantB, nil)
	if r.status != 404 || r.str("error.code") != "response_not_found" {
		t.Fatalf("another tenant's response: %d %s", r.status, r.raw)
	}
	r = e.do("POST", "/v1/responses", e.tenantB, map[string]any{"model": "rec:m1", "input": "x", "previous_response_id": second.ID})
	if r.status != 400 || r.str("error.code") != "previous_response_not_found" || r.str("error.param") != "previous_response_id" || r.str("error.type") != "invalid_request_error" {
		t.Fatalf("continuing another tenant's response: %d %s", r.status, r.raw)
	}
}

func TestResponsesStoreFalse(t *testing.T) {
	_, _, client := responsesEnv(t)
	ctx := testCtx(t)
	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "local:echo", Input: textInput("forget me"), Store: openai.Bool(false)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.RawJSON(), `"store":false`) {
		t.Fatalf("store: %s", resp.RawJSON())
	}
	_, err = client.Responses.New(ctx, responses.ResponseNewParams{Model: "local:echo", Input: textInput("again"), PreviousResponseID: openai.String(resp.ID)})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "previous_response_not_found" || apiErr.Param != "previous_response_id" {
		t.Fatalf("previous_response_id to a response not stored: %v", err)
	}
	if _, err := client.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("get of a response not stored: %v", err)
	}
}

func TestResponsesStructuredOutput(t *testing.T) {
	_, rec, client := responsesEnv(t)
	ctx := testCtx(t)
	schema := map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}, "required": []string{"answer"}, "additionalProperties": false}
	format := responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigParamOfJSONSchema("reply", schema)}
	format.Format.OfJSONSchema.Strict = openai.Bool(true)
	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "rec:m1", Input: textInput("the answer?"), Text: format})
	if err != nil {
		t.Fatal(err)
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string         `json:"name"`
			Strict bool           `json:"strict"`
			Schema map[string]any `json:"schema"`
		} `json:"json_schema"`
	}
	// A compatible server: JSON mode, the schema in the system prompt.
	json.Unmarshal(rec.last(t).ResponseFormat, &rf)
	if got := rec.last(t).turns(); rf.Type != "json_object" || len(got) == 0 || !strings.HasPrefix(got[0], "system:") || !strings.Contains(got[0], `"answer"`) {
		t.Fatalf("upstream response_format: %s, turns %q", rec.last(t).ResponseFormat, got)
	}
	if resp.OutputText() != `{"answer":"42"}` || resp.Text.Format.Type != "json_schema" || resp.Text.Format.Name != "reply" {
		t.Fatalf("response: %s", resp.RawJSON())
	}
	// The local model answers a schema with an object that validates.
	resp, err = client.Responses.New(ctx, responses.ResponseNewParams{Model: "local:echo", Input: textInput("forty two"), Text: format})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if json.Unmarshal([]byte(resp.OutputText()), &out) != nil || out["answer"] == nil {
		t.Fatalf("local structured answer: %s", resp.OutputText())
	}
}

// streamTypes runs a streamed call and returns its event types in order,
// the text its deltas add up to, and the final response.
func streamTypes(t *testing.T, client openai.Client, params responses.ResponseNewParams) (types []string, text string, final responses.Response) {
	t.Helper()
	stream := client.Responses.NewStreaming(testCtx(t), params)
	defer stream.Close()
	for i := 0; stream.Next(); i++ {
		ev := stream.Current()
		if ev.SequenceNumber != int64(i) {
			t.Fatalf("event %d (%s) has sequence_number %d", i, ev.Type, ev.SequenceNumber)
		}
		if len(types) == 0 || types[len(types)-1] != ev.Type || !strings.HasSuffix(ev.Type, ".delta") {
			types = append(types, ev.Type)
		}
		switch ev.Type {
		case "response.output_text.delta":
			text += ev.Delta
		case "response.completed", "response.incomplete", "response.failed":
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return types, text, final
}

func TestResponsesStreaming(t *testing.T) {
	_, rec, client := responsesEnv(t)
	types, text, final := streamTypes(t, client, responses.ResponseNewParams{Model: "local:echo", Input: textInput("stream this")})
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if !slices.Equal(types, want) {
		t.Fatalf("event types %q, want %q", types, want)
	}
	if text != "[local development model] You said: stream this" || final.OutputText() != text || final.Status != "completed" || final.Usage.OutputTokens != 7 {
		t.Fatalf("text %q, final %s", text, final.RawJSON())
	}
	// From Anthropic's event grammar to the Responses one.
	types, text, final = streamTypes(t, client, responses.ResponseNewParams{Model: "anthropic:claude-haiku-4-5", Input: textInput("hi"), Instructions: openai.String("be brief")})
	if !slices.Equal(types, want) || text != `system="be brief" turns=1 ` || final.OutputText() != text || final.Usage.InputTokens != 100 || final.Usage.OutputTokens != 4 {
		t.Fatalf("from anthropic: %q %q %s", types, text, final.RawJSON())
	}
	// The token cap: an incomplete response.
	types, _, final = streamTypes(t, client, responses.ResponseNewParams{Model: "local:echo", Input: textInput("stream this"), MaxOutputTokens: openai.Int(3)})
	if types[len(types)-1] != "response.incomplete" || final.Status != "incomplete" || final.IncompleteDetails.Reason != "max_output_tokens" || final.OutputText() != "[local development model]" {
		t.Fatalf("capped: %q %s", types, final.RawJSON())
	}
	// A streamed function call, from a chat-completions upstream.
	types, _, final = streamTypes(t, client, responses.ResponseNewParams{Model: "rec:m1", Input: textInput("weather?"), Tools: []responses.ToolUnionParam{respWeatherTool()}})
	want = []string{"response.created", "response.in_progress", "response.output_item.added", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done", "response.completed"}
	if !slices.Equal(types, want) {
		t.Fatalf("event types %q, want %q", types, want)
	}
	call := final.Output[0].AsFunctionCall()
	if call.Arguments != `{"city":"Paris"}` || call.CallID != "call_1" || final.Usage.InputTokens != 20 || final.Usage.InputTokensDetails.CachedTokens != 8 {
		t.Fatalf("final: %s", final.RawJSON())
	}
	if !rec.last(t).Stream {
		t.Fatal("the upstream was not streamed to")
	}
	// A streamed response is stored like any other.
	if _, err := client.Responses.New(testCtx(t), responses.ResponseNewParams{Model: "rec:m1", Input: textInput("next"), PreviousResponseID: openai.String(final.ID)}); err != nil {
		t.Fatal(err)
	}
	if got := rec.last(t).turns(); !slices.Equal(got, []string{"user:weather?", `assistant>get_weather({"city":"Paris"})#call_1`, "user:next"}) {
		t.Fatalf("continuing a streamed response: %q", got)
	}
}

// A stream that breaks after its first content ends with an error event
// and response.failed.
func TestResponsesStreamCutMidway(t *testing.T) {
	e, _, _ := responsesEnv(t)
	_, evs := e.stream("/v1/responses", e.tenantA, map[string]any{"model": "anthropic:cut", "stream": true, "input": "x"})
	if len(evs) < 2 || evs[len(evs)-2][0] != "error" || evs[len(evs)-1][0] != "response.failed" || !strings.Contains(evs[len(evs)-1][1], `"status":"failed"`) {
		t.Fatalf("a cut stream: %v", evs)
	}
	// It is kept, as OpenAI keeps a failed response: a GET finds it as
	// response.failed gave it, failed, with its error and what came before.
	failed := gjson.Get(evs[len(evs)-1][1], "response")
	if !failed.Get("store").Bool() {
		t.Fatalf("the failed response says store %s", failed.Get("store").Raw)
	}
	r := e.must(e.do("GET", "/v1/responses/"+failed.Get("id").Str, e.tenantA, nil), 200)
	if !jsonEqual(r.raw, []byte(failed.Raw)) || r.str("status") != "failed" || r.str("error.code") != "server_error" || gjson.GetBytes(r.raw, "output.0.status").Str != "incomplete" {
		t.Fatalf("GET %s: %s; the stream said %s", failed.Get("id").Str, r.raw, failed.Raw)
	}
	e.must(e.do("GET", "/v1/responses/"+failed.Get("id").Str+"/input_items", e.tenantA, nil), 200)
	// It cannot be continued: its output is not whole.
	r = e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "anthropic:claude-haiku-4-5", "input": "again", "previous_response_id": failed.Get("id").Str})
	if r.status != 400 || r.str("error.code") != "previous_response_failed" || r.str("error.param") != "previous_response_id" {
		t.Fatalf("continuing the failed response: %d %s", r.status, r.raw)
	}
	// Sent with store: false, it is not kept.
	_, evs = e.stream("/v1/responses", e.tenantA, map[string]any{"model": "anthropic:cut", "stream": true, "input": "x", "store": false})
	failed = gjson.Get(evs[len(evs)-1][1], "response")
	if r := e.do("GET", "/v1/responses/"+failed.Get("id").Str, e.tenantA, nil); failed.Get("store").Bool() || r.status != 404 {
		t.Fatalf("store false: %s; GET %d", failed.Raw, r.status)
	}
}

func TestResponsesRefusedFields(t *testing.T) {
	e, rec, client := responsesEnv(t)
	for _, tc := range []struct {
		name  string
		body  any
		param string
	}{
		{"built-in tool", map[string]any{"model": "rec:m1", "input": "x", "tools": []any{map[string]any{"type": "web_search"}}}, "tools[0].type"},
		{"background", map[string]any{"model": "rec:m1", "input": "x", "background": true}, "background"},
		{"file input", map[string]any{"model": "rec:m1", "input": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "input_text", "text": "what is this?"}, map[string]any{"type": "input_file", "file_id": "file_1"}}}}}, "input[0].content[1].type"},
		{"conversation", map[string]any{"model": "rec:m1", "input": "x", "conversation": "conv_1"}, "conversation"},
		{"logprobs", map[string]any{"model": "rec:m1", "input": "x", "include": []string{"message.output_text.logprobs"}}, "include[0]"},
		{"no input", map[string]any{"model": "rec:m1"}, "input"},
		{"a field of the wrong type", map[string]any{"model": "rec:m1", "input": "x", "max_output_tokens": "ten"}, "max_output_tokens"},
	} {
		r := e.do("POST", "/v1/responses", e.tenantA, tc.body)
		if r.status != 400 || r.str("error.param") != tc.param || r.str("error.type") != "invalid_request_error" || r.str("error.message") == "" {
			t.Errorf("%s: %d %s", tc.name, r.status, r.raw)
		}
	}
	// Through the SDK: the error names the field.
	_, err := client.Responses.New(testCtx(t), responses.ResponseNewParams{Model: "rec:m1", Input: textInput("x"),
		Tools: []responses.ToolUnionParam{{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "tools[0].type" || !strings.Contains(apiErr.Message, "web_search") {
		t.Fatalf("sdk: %v", err)
	}
	if n := len(rec.requests()); n != 0 {
		t.Fatalf("%d refused requests reached the upstream", n)
	}
}

func TestResponsesMalformedJSON(t *testing.T) {
	e, _, _ := responsesEnv(t)
	for _, body := range []string{`{"model":`, `not json`, `[1,2]`, ``} {
		r := e.do("POST", "/v1/responses", e.tenantA, body)
		if r.status != 400 || r.str("error.type") != "invalid_request_error" || r.str("type") != "" {
			t.Errorf("%q: %d %s", body, r.status, r.raw)
		}
	}
	r := e.do("POST", "/v1/responses", e.tenantA, `{"model":`)
	if r.str("error.code") != "malformed_json" {
		t.Fatalf("malformed JSON: %s", r.raw)
	}
	// Unknown fields are ignored, as everywhere in Baton.
	r = e.do("POST", "/v1/responses", e.tenantA, map[string]any{"model": "local:echo", "input": "hi", "some_future_field": map[string]any{"x": 1}})
	if r.status != 200 {
		t.Fatalf("an unknown field: %d %s", r.status, r.raw)
	}
}
