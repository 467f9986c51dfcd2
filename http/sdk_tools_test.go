package http_test

// The official SDKs' structured outputs and tool choice, through Baton to
// both kinds of upstream (the tool-calling fakes of gateway_tools_test.go).

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/batonhq/baton/gateway"
)

// sdkHTTP is an HTTP client for an SDK whose idle connections close with
// the test.
func sdkHTTP(t *testing.T) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func weatherFormat() openai.ChatCompletionNewParamsResponseFormatUnion {
	return openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "get_weather", Schema: weatherSchema, Strict: openai.Bool(true)},
	}}
}

func weatherTool() openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather", Description: openai.String("Weather for a city"), Parameters: shared.FunctionParameters(weatherSchema),
	})
}

// A json_schema response format sent with the OpenAI SDK to an Anthropic
// model comes back as the message content, plain and streamed (the SDK's
// accumulator), with finish_reason stop and no tool call.
func TestOpenAISDKStructuredOutputFromAnthropic(t *testing.T) {
	e, u := newToolEnv(t)
	client := newOpenAIClient(e, sdkHTTP(t), e.tenantA)
	params := openai.ChatCompletionNewParams{
		Model:          "anthropic:claude-haiku-4-5",
		Messages:       []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		ResponseFormat: weatherFormat(),
	}
	resp, err := client.Chat.Completions.New(testCtx(t), params)
	if err != nil {
		t.Fatal(err)
	}
	sent := upstreamGot(t, u.lastAnthropic)
	if jsonOf(sent["tool_choice"]) != `{"disable_parallel_tool_use":true,"name":"get_weather","type":"tool"}` {
		t.Fatalf("tool_choice sent to Anthropic: %v", sent["tool_choice"])
	}
	ch := resp.Choices[0]
	var out struct{ City string }
	if err := json.Unmarshal([]byte(ch.Message.Content), &out); err != nil || out.City != "Paris" || len(ch.Message.ToolCalls) != 0 || ch.FinishReason != "stop" {
		t.Fatalf("content %q, %d tool calls, finish %q", ch.Message.Content, len(ch.Message.ToolCalls), ch.FinishReason)
	}

	stream := client.Chat.Completions.NewStreaming(testCtx(t), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()
	<-u.lastAnthropic
	got := acc.Choices[0]
	if got.Message.Content != `{"city":"Paris"}` || len(got.Message.ToolCalls) != 0 || got.FinishReason != "stop" {
		t.Fatalf("streamed: content %q, %d tool calls, finish %q", got.Message.Content, len(got.Message.ToolCalls), got.FinishReason)
	}
}

// The OpenAI SDK's json_schema response format reaches OpenAI as its own
// structured outputs, strict flag included.
func TestOpenAISDKStructuredOutputToOpenAI(t *testing.T) {
	e, u := newToolEnv(t)
	client := newOpenAIClient(e, sdkHTTP(t), e.tenantA)
	if _, err := client.Chat.Completions.New(testCtx(t), openai.ChatCompletionNewParams{
		Model:          "openai:gpt-4o-mini",
		Messages:       []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		ResponseFormat: weatherFormat(),
	}); err != nil {
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
	sent := upstreamGot(t, u.lastOpenAI)
	if err := json.Unmarshal([]byte(jsonOf(sent["response_format"])), &rf); err != nil || rf.Type != "json_schema" || rf.JSONSchema.Name != "get_weather" ||
		!rf.JSONSchema.Strict || rf.JSONSchema.Schema["type"] != "object" {
		t.Fatalf("response_format sent to OpenAI: %v", sent["response_format"])
	}
}

// Tool choice set with one SDK reaches the other kind of upstream in its
// own vocabulary, and the tool call comes back in the SDK's.
func TestSDKToolChoiceAcrossProviders(t *testing.T) {
	e, u := newToolEnv(t)
	oa := newOpenAIClient(e, sdkHTTP(t), e.tenantA)
	resp, err := oa.Chat.Completions.New(testCtx(t), openai.ChatCompletionNewParams{
		Model:             "anthropic:claude-haiku-4-5",
		Messages:          []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		Tools:             []openai.ChatCompletionToolUnionParam{weatherTool()},
		ToolChoice:        openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"}),
		ParallelToolCalls: openai.Bool(false),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonOf(upstreamGot(t, u.lastAnthropic)["tool_choice"]); got != `{"disable_parallel_tool_use":true,"name":"get_weather","type":"tool"}` {
		t.Fatalf("tool_choice sent to Anthropic: %s", got)
	}
	if ch := resp.Choices[0]; len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Name != "get_weather" ||
		ch.Message.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` || ch.FinishReason != "tool_calls" {
		t.Fatalf("tool calls %+v, finish %q", ch.Message.ToolCalls, ch.FinishReason)
	}

	an := newAnthropicClient(e, sdkHTTP(t), e.tenantA)
	msg, err := an.Messages.New(testCtx(t), anthropic.MessageNewParams{
		Model:     "openai:gpt-4o-mini",
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{
			Properties: weatherSchema["properties"], Required: []string{"city"}}}}},
		ToolChoice: anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{DisableParallelToolUse: anthropic.Bool(true)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sent := upstreamGot(t, u.lastOpenAI)
	if jsonOf(sent["tool_choice"]) != `"required"` || jsonOf(sent["parallel_tool_calls"]) != "false" {
		t.Fatalf("sent to OpenAI: tool_choice %v parallel_tool_calls %v", sent["tool_choice"], sent["parallel_tool_calls"])
	}
	if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 1 || msg.Content[0].Type != "tool_use" || msg.Content[0].Name != "get_weather" {
		t.Fatalf("message: stop %q content %+v", msg.StopReason, msg.Content)
	}
}

// Both SDKs retrieve one model by id, ids with '/' and ':' included (an
// OpenAI-compatible provider's model), and get each API's not-found error
// for an id the catalog does not have.
func TestSDKModelsRetrieve(t *testing.T) {
	providers := filepath.Join(t.TempDir(), "providers.json")
	os.WriteFile(providers, []byte(`{"providers":[{"name":"openrouter","kind":"openai-compatible","baseUrl":"http://127.0.0.1:9/v1","keyEnv":"OPENROUTER_API_KEY",
		"models":[{"name":"meta-llama/llama-3:free","contextTokens":8192}]}]}`), 0o644)
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }, ProvidersFile: providers})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, cat)
	oa := newOpenAIClient(e, sdkHTTP(t), e.tenantA)
	for _, id := range []string{"local:echo", "openrouter:meta-llama/llama-3:free"} {
		m, err := oa.Models.Get(testCtx(t), id)
		if err != nil || m.ID != id || m.Object != "model" {
			t.Fatalf("openai-go Models.Get(%q): %+v, %v", id, m, err)
		}
	}
	_, err = oa.Models.Get(testCtx(t), "openai:no-such-model")
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 404 || oe.Code != "model_not_found" {
		t.Fatalf("unknown model through openai-go: %v", err)
	}
	an := newAnthropicClient(e, sdkHTTP(t), e.tenantA)
	m, err := an.Models.Get(testCtx(t), "openrouter:meta-llama/llama-3:free", anthropic.ModelGetParams{})
	if err != nil || m.ID != "openrouter:meta-llama/llama-3:free" {
		t.Fatalf("anthropic-sdk-go Models.Get: %+v, %v", m, err)
	}
	_, err = an.Models.Get(testCtx(t), "nobody:x", anthropic.ModelGetParams{})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 404 || !strings.Contains(ae.RawJSON(), "not_found_error") {
		t.Fatalf("unknown model through anthropic-sdk-go: %v", err)
	}
	// A health probe names the model by its bare name, ':' and all; its
	// provider has no key here, so the answer says so and nothing is
	// recorded (another replica may have the key).
	h := e.must(e.do("POST", "/v1/models/health", e.admin, map[string]any{"provider": "openrouter", "model": "meta-llama/llama-3:free"}), 200)
	if !strings.Contains(string(h.raw), "openrouter:meta-llama/llama-3:free") || !strings.Contains(string(h.raw), "not configured") {
		t.Fatalf("health: %s", h.raw)
	}
	if n := e.countType(gateway.EventModelHealthChecked); n != 0 {
		t.Fatalf("%d health events recorded for a provider without a key", n)
	}
	// Other paths and methods under /v1/models answer in OpenAI's shape.
	r := e.do("DELETE", "/v1/models/local:echo", e.tenantA, nil) // OpenAI's, for a fine-tune: not served
	if r.status != 404 || r.str("error.type") != "invalid_request_error" {
		t.Fatalf("DELETE a model: %d %s", r.status, r.raw)
	}
	if r := e.do("GET", "/v1/models/health", e.admin, nil); r.status != 405 {
		t.Fatalf("GET on a POST-only admin path: %d %s", r.status, r.raw)
	}
}

// countingTransport counts the requests a client sends.
type countingTransport struct {
	http.RoundTripper
	n atomic.Int32
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.RoundTripper.RoundTrip(r)
}

// A model whose provider has no key here answers 503 with X-Should-Retry:
// false: the SDKs, with their default retries, ask once (Claude Code would
// otherwise retry for minutes in silence).
func TestNotConfiguredIsNotRetried(t *testing.T) {
	providers := filepath.Join(t.TempDir(), "providers.json")
	os.WriteFile(providers, []byte(`{"providers":[{"name":"openrouter","kind":"openai-compatible","baseUrl":"http://127.0.0.1:9/v1","keyEnv":"OPENROUTER_API_KEY",
		"models":[{"name":"llama","contextTokens":8192}]}]}`), 0o644)
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }, ProvidersFile: providers})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, cat)
	tr := &countingTransport{RoundTripper: sdkHTTP(t).Transport}
	hc := &http.Client{Transport: tr}
	an := anthropic.NewClient(anthropicoption.WithBaseURL(e.srv.URL), anthropicoption.WithAPIKey(e.tenantA), anthropicoption.WithHTTPClient(hc))
	_, err = an.Messages.New(testCtx(t), anthropic.MessageNewParams{Model: "openrouter:llama", MaxTokens: 16,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 503 || !strings.Contains(ae.RawJSON(), "not configured") || tr.n.Load() != 1 {
		t.Fatalf("anthropic-sdk-go: %v after %d requests", err, tr.n.Load())
	}
	tr.n.Store(0)
	oa := openai.NewClient(openaioption.WithBaseURL(e.srv.URL+"/v1/"), openaioption.WithAPIKey(e.tenantA), openaioption.WithHTTPClient(hc))
	_, err = oa.Chat.Completions.New(testCtx(t), openai.ChatCompletionNewParams{Model: "openrouter:llama",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 503 || oe.Code != "provider_not_configured" || tr.n.Load() != 1 {
		t.Fatalf("openai-go: %v after %d requests", err, tr.n.Load())
	}
}

// A refused key (401) says X-Should-Retry: false, on every front: no
// retry passes until the key is mended, and Claude Code retried a 401 for
// three minutes, printing nothing.
func TestRefusedKeyIsNotRetried(t *testing.T) {
	e, _ := newGatewayEnv(t)
	for _, c := range []struct {
		path, key string
		body      any
		status    int
	}{
		{"/v1/messages", "btn_sk_bad", map[string]any{"model": "anthropic:claude-haiku-4-5", "max_tokens": 5, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}, 401},
		{"/v1/chat/completions", "", chatBody("openai:gpt-4o-mini", false), 401},
		{"/v1/handoff/contracts", "btn_sk_bad", map[string]any{}, 401},
	} {
		r := e.do("POST", c.path, c.key, c.body)
		if r.status != c.status || r.header.Get("X-Should-Retry") != "false" {
			t.Fatalf("%s %q: %d %v %s", c.path, c.key, r.status, r.header, r.raw)
		}
	}
}
