package http_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// A provider's refusal of a model call (its 400, 404, 409, 413 or 422)
// reaches an SDK client with the provider's status, so the SDK raises the
// class the provider would have made it raise (NotFoundError for 404,
// UnprocessableEntityError for 422, ...), and, in OpenAI's shape, the
// provider's code and the field it named (when the provider had the
// client's body as sent), Baton's own code beside in svc.code. Every
// such refusal was a 400 upstream_rejected_request with param null (409 a
// 502), so an SDK client got a BadRequestError where the provider gave a
// NotFoundError, and lost the field.
func TestSDKSeesTheProvidersRefusal(t *testing.T) {
	batonCode := func(status int) string {
		switch status {
		case 409:
			return "upstream_error"
		case 413:
			return "upstream_request_too_large"
		}
		return "upstream_rejected_request"
	}
	fakeParam := map[int]string{400: "messages[0].content", 422: "temperature"}
	fakeCode := map[int]string{400: "invalid_value", 404: "model_not_found", 409: "conflict", 413: "request_too_large", 422: "unprocessable"}
	anthropicType := map[int]anthropic.ErrorType{404: anthropic.ErrorTypeNotFoundError, 409: anthropic.ErrorTypeConflictError, 413: "request_too_large"}
	e, _, hc := sdkEnv(t)
	oa := newOpenAIClient(e, hc, e.tenantA)
	an := newAnthropicClient(e, hc, e.tenantA)
	checkOpenAI := func(t *testing.T, err error, status int, openaiShaped, asSent bool) {
		t.Helper()
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("error %T %v, want *openai.Error", err, err)
		}
		wantCode, wantParam := batonCode(status), ""
		if openaiShaped {
			wantCode = fakeCode[status]
			if asSent {
				wantParam = fakeParam[status]
			}
		}
		var extra struct {
			Svc struct {
				Code string `json:"code"`
			} `json:"svc"`
		}
		json.Unmarshal([]byte(apiErr.RawJSON()), &extra)
		if apiErr.StatusCode != status || apiErr.Type != "invalid_request_error" || apiErr.Code != wantCode || apiErr.Param != wantParam || extra.Svc.Code != batonCode(status) || !strings.Contains(apiErr.Message, "refused") {
			t.Fatalf("status %d, %s; want %d code %q param %q", apiErr.StatusCode, apiErr.RawJSON(), status, wantCode, wantParam)
		}
	}
	checkAnthropic := func(t *testing.T, err error, status int) {
		t.Helper()
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("error %T %v, want *anthropic.Error", err, err)
		}
		typ := anthropic.ErrorTypeInvalidRequestError
		if at, ok := anthropicType[status]; ok {
			typ = at
		}
		if apiErr.StatusCode != status || apiErr.Type() != typ || !strings.Contains(apiErr.RawJSON(), "refused") {
			t.Fatalf("status %d type %q, %s; want %d %q", apiErr.StatusCode, apiErr.Type(), apiErr.RawJSON(), status, typ)
		}
	}
	for _, up := range sdkUpstreams {
		if up.local {
			continue
		}
		openaiShaped := up.provider != "anthropic"
		for _, status := range []int{400, 404, 409, 413, 422} {
			model := up.provider + ":refuse-" + strconv.Itoa(status)
			t.Run(up.name+" "+strconv.Itoa(status), func(t *testing.T) {
				chat := openai.ChatCompletionNewParams{Model: openai.ChatModel(model), Messages: openaiConversation()}
				// To OpenAI-shaped providers a chat body goes as sent.
				_, err := oa.Chat.Completions.New(testCtx(t), chat)
				checkOpenAI(t, err, status, openaiShaped, openaiShaped)
				stream := oa.Chat.Completions.NewStreaming(testCtx(t), chat)
				if stream.Next() {
					t.Fatalf("a refused stream yielded a chunk: %s", stream.Current().RawJSON())
				}
				checkOpenAI(t, stream.Err(), status, openaiShaped, openaiShaped)
				stream.Close()

				// To OpenAI itself a Responses body goes as sent; to others
				// it is translated.
				_, err = oa.Responses.New(testCtx(t), responses.ResponseNewParams{Model: model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
				checkOpenAI(t, err, status, openaiShaped, up.provider == "openai")

				system, msgs := anthropicConversation()
				msg := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 10, System: system, Messages: msgs}
				_, err = an.Messages.New(testCtx(t), msg)
				checkAnthropic(t, err, status)
				mstream := an.Messages.NewStreaming(testCtx(t), msg)
				if mstream.Next() {
					t.Fatalf("a refused stream yielded an event: %s", mstream.Current().RawJSON())
				}
				checkAnthropic(t, mstream.Err(), status)
				mstream.Close()
			})
		}
	}
}
