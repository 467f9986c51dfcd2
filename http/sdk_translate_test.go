package http_test

import (
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// The official SDKs as clients of a translated call: what the other
// provider receives (docs/api.md, Translation).
func TestSDKTranslatedImagesReasoningAndFormat(t *testing.T) {
	e, u := newToolEnv(t)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

	// Anthropic SDK -> OpenAI model.
	ac := newAnthropicClient(e, hc, e.tenantA)
	if _, err := ac.Messages.New(testCtx(t), anthropic.MessageNewParams{
		Model: "openai:gpt-4o-mini", MaxTokens: 20000,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(
			anthropic.NewTextBlock("Describe these."),
			anthropic.NewImageBlockBase64("image/png", png),
			anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: "https://example.com/cat.png"}),
		)},
		Thinking:     anthropic.ThinkingConfigParamOfEnabled(10000),
		OutputConfig: anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: weatherSchema}},
	}); err != nil {
		t.Fatal(err)
	}
	got := upstreamGot(t, u.lastOpenAI)
	want := `[{"content":[{"text":"Describe these.","type":"text"},{"image_url":{"url":"data:image/png;base64,` + png + `"},"type":"image_url"},{"image_url":{"url":"https://example.com/cat.png"},"type":"image_url"}],"role":"user"}]`
	if g := jsonOf(got["messages"]); g != want {
		t.Errorf("OpenAI got messages %s", g)
	}
	// Not strict: the schema's object is not closed (additionalProperties
	// false), which OpenAI's strict mode requires and Anthropic does not.
	if got["reasoning_effort"] != "medium" || jsonOf(got["response_format"]) != `{"json_schema":{"name":"structured_output","schema":`+jsonOf(weatherSchema)+`,"strict":false},"type":"json_schema"}` {
		t.Errorf("OpenAI got reasoning_effort %v, response_format %s", got["reasoning_effort"], jsonOf(got["response_format"]))
	}

	// OpenAI SDK -> Anthropic model.
	oc := newOpenAIClient(e, hc, e.tenantA)
	if _, err := oc.Chat.Completions.New(testCtx(t), openai.ChatCompletionNewParams{
		Model: "anthropic:claude-haiku-4-5", MaxCompletionTokens: openai.Int(20000), ReasoningEffort: shared.ReasoningEffortLow,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Be brief."),
			openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("Describe these."),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + png}),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "https://example.com/cat.png", Detail: "low"}),
			}),
		},
		Stop: openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"END"}},
	}); err != nil {
		t.Fatal(err)
	}
	got = upstreamGot(t, u.lastAnthropic)
	want = `[{"content":[{"text":"Describe these.","type":"text"},{"source":{"data":"` + png + `","media_type":"image/png","type":"base64"},"type":"image"},{"source":{"type":"url","url":"https://example.com/cat.png"},"type":"image"}],"role":"user"}]`
	if g := jsonOf(got["messages"]); g != want {
		t.Errorf("Anthropic got messages %s", g)
	}
	if g := jsonOf(got["thinking"]) + " " + jsonOf(got["system"]) + " " + jsonOf(got["stop_sequences"]); g != `{"budget_tokens":2048,"type":"enabled"} "Be brief." ["END"]` {
		t.Errorf("Anthropic got %s", g)
	}
}
