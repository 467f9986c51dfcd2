package http_test

// The official OpenAI and Anthropic Go SDKs, unchanged, as clients of Baton:
// each test points an SDK at Baton's base URL and calls through Baton to
// each kind of upstream: the fake upstreams of gateway_test.go, one
// openai-kind and one anthropic-kind, the OpenAI fake again as an
// openai-compatible provider declared in a providers file, and the local
// development model (no upstream), so that both fronts are exercised with
// and without translation. The expected values are what those upstreams
// send, as Baton passes them on.
//
// Every subtest runs on its own Baton and checks, after everything it
// started has been closed, that no goroutine it started is still running.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"go.uber.org/goleak"

	"github.com/batonhq/baton/gateway"
)

// upstreamCase is one kind of upstream behind Baton and what the fake of
// that kind (or the local model) answers to sdkConversation.
type upstreamCase struct {
	name     string // subtest name
	provider string // svc.trace.selectedProvider
	model    string // an ok model of that provider
	text     string // the non-streamed answer
	// The fakes stream their answer word by word, each word followed by a
	// space, so the streamed text is the answer's words, space-separated,
	// plus a trailing space. (The local model puts the space before each
	// word but the first.)
	streamed []string
	// Usage as the chat completions front reports it (prompt tokens
	// include cached ones).
	promptTokens, completionTokens, cachedTokens int64
	// Usage as the messages front reports it (input tokens exclude cache
	// reads).
	inputTokens, outputTokens, cacheReadTokens int64
	// capField is the field of the upstream's chat completions request that
	// carries the token cap: max_completion_tokens for OpenAI itself,
	// max_tokens for an OpenAI-compatible server; "" when the upstream is
	// not OpenAI-shaped.
	capField string
	// local: no upstream at all (the local development model), so no
	// upstream errors either.
	local bool
	// capped is the answer at the token cap of 3 when it differs from the
	// answer without (the local model cuts its answer there; the fakes
	// only report the stop reason).
	capped *upstreamCase
	// capBilled: the token cap bounds what the call is billed (OpenAI's
	// caps count all the output), and a translated answer says what was
	// billed: at most the cap, though the fake reports its 5 tokens.
	capBilled bool
}

// billedOutput is the output tokens a translated answer says under the
// token cap maxTokens (0: none).
func (u upstreamCase) billedOutput(maxTokens int64) int64 {
	if u.capBilled && maxTokens > 0 {
		return min(u.outputTokens, maxTokens)
	}
	return u.outputTokens
}

func (u upstreamCase) streamedText() string { return strings.Join(u.streamed, "") }

// at is what the upstream answers under the token cap maxTokens.
func (u upstreamCase) at(maxTokens int64) upstreamCase {
	if maxTokens == 3 && u.capped != nil {
		return *u.capped
	}
	return u
}

// checkTokenCaps checks what reached the upstreams of a call made with
// the token cap maxTokens (0: none): every request the OpenAI-shaped fake
// took carried the cap in up.capField, and in no other field; an upstream
// that is not OpenAI-shaped took none of them, and the local model no
// request at all.
func checkTokenCaps(t *testing.T, f *fakeUpstreams, up upstreamCase, maxTokens int64) {
	t.Helper()
	got := f.tokenCaps()
	if up.local && f.calls.Load() != 0 {
		t.Fatalf("the local model called an upstream %d times", f.calls.Load())
	}
	if up.capField == "" {
		if len(got) != 0 {
			t.Fatalf("%s: the OpenAI fake took %d requests (token caps %q)", up.name, len(got), got)
		}
		return
	}
	want := ""
	if maxTokens > 0 {
		want = up.capField + "=" + strconv.FormatInt(maxTokens, 10)
	}
	if len(got) == 0 {
		t.Fatalf("%s: no request reached the OpenAI fake", up.name)
	}
	for _, c := range got {
		if c != want {
			t.Fatalf("%s: the upstream took the token cap as %q, want %q (every request: %q)", up.name, c, want, got)
		}
	}
}

// openaiUpstream is the OpenAI fake, which answers with the roles it
// received: system first (Baton sends the system prompt as a system
// message), then the turns. Usage: 100 prompt tokens of which 40 cached,
// 5 completion tokens, in the stream too.
var openaiUpstream = upstreamCase{
	name: "openai upstream", provider: "openai", model: "openai:gpt-4o-mini",
	text:         "roles system,user,assistant,user",
	streamed:     []string{"roles ", "system,user,assistant,user "},
	promptTokens: 100, completionTokens: 5, cachedTokens: 40,
	inputTokens: 60, outputTokens: 5, cacheReadTokens: 40,
	capField: "max_completion_tokens", capBilled: true,
}

// compatibleUpstream is the OpenAI fake again, as a server of kind
// openai-compatible declared in a providers file (sdkCompat): the same
// answer, but the token cap goes up as max_tokens.
func compatibleUpstream() upstreamCase {
	u := openaiUpstream
	u.name, u.provider, u.model, u.capField, u.capBilled = "openai-compatible upstream", "compat", "compat:llama-3.1-8b", "max_tokens", false
	return u
}

var sdkUpstreams = []upstreamCase{
	openaiUpstream,
	{
		// The Anthropic fake answers with the system prompt and the number
		// of turns it received. Usage: 10 input tokens plus 90 cache reads,
		// 4 output tokens (message_delta's cumulative count when streamed).
		name: "anthropic upstream", provider: "anthropic", model: "anthropic:claude-haiku-4-5",
		text:         `system="be brief" turns=3`,
		streamed:     []string{`system="be `, `brief" `, `turns=3 `},
		promptTokens: 100, completionTokens: 4, cachedTokens: 90,
		inputTokens: 10, outputTokens: 4, cacheReadTokens: 90,
	},
	compatibleUpstream(),
	{
		// The local development model echoes the last user turn, one
		// token a word, cut at the token cap. Usage: one input token a
		// word of the prompt (2 of system, 1+1+2 of turns), no cache.
		name: "local model", provider: "local", model: "local:echo",
		text:         "[local development model] You said: and now?",
		streamed:     []string{"[local", " development", " model]", " You", " said:", " and", " now?"},
		promptTokens: 6, completionTokens: 7,
		inputTokens: 6, outputTokens: 7,
		local: true,
		capped: &upstreamCase{
			name: "local model", provider: "local", model: "local:echo",
			text:         "[local development model]",
			streamed:     []string{"[local", " development", " model]"},
			promptTokens: 6, completionTokens: 3,
			inputTokens: 6, outputTokens: 3,
			local: true,
		},
	},
}

// sdkCompat declares the openai-compatible upstream of sdkUpstreams: the
// OpenAI fake under another name and kind.
func sdkCompat(f *fakeUpstreams) gateway.ProviderSpec {
	return gateway.ProviderSpec{Name: "compat", Kind: "openai-compatible", BaseURL: f.openai.URL + "/v1", KeyEnv: "COMPAT_API_KEY",
		Models: []gateway.ModelSpec{{Name: "llama-3.1-8b", ContextTokens: 8192, Modes: []string{},
			Pricing: &gateway.Price{InputPerMTok: 0.05, OutputPerMTok: 0.08, Source: "test"}}}}
}

// capCase is a token cap and the stop reason the upstreams answer for it:
// the fakes and the local model stop for length when the cap is 3.
type capCase struct {
	name       string
	maxTokens  int64 // 0: none (the chat front), 1024 (the messages front)
	finish     string
	stopReason anthropic.StopReason
}

var sdkCaps = []capCase{
	{"natural stop", 0, "stop", anthropic.StopReasonEndTurn},
	{"token cap", 3, "length", anthropic.StopReasonMaxTokens},
}

// sdkSystem and sdkConversation are the prompt of every call: a system
// prompt and three turns.
const sdkSystem = "be brief"

func openaiConversation() []openai.ChatCompletionMessageParamUnion {
	return []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage(sdkSystem),
		openai.UserMessage("hi"),
		openai.AssistantMessage("hello"),
		openai.UserMessage("and now?"),
	}
}

func anthropicConversation() ([]anthropic.TextBlockParam, []anthropic.MessageParam) {
	return []anthropic.TextBlockParam{{Text: sdkSystem}}, []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewTextBlock("hi")),
		anthropic.NewAssistantMessage(anthropic.NewTextBlock("hello")),
		anthropic.NewUserMessage(anthropic.NewTextBlock("and now?")),
	}
}

// sdkEnv starts Baton with its fake upstreams (and the openai-compatible
// provider sdkCompat) for one (sub)test and checks, once the test and
// every cleanup of Baton, the fakes and the SDK's HTTP client have run,
// that no goroutine started since is left running.
func sdkEnv(t *testing.T) (*env, *fakeUpstreams, *http.Client) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { verifyNoNewGoroutines(t, before) }) // runs last
	f := newFakeUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, f, sdkCompat(f)))
	// The SDKs' default clients clone http.DefaultTransport, whose idle
	// keep-alive connections a test cannot close; the SDKs are given a
	// transport of the test's own instead, closed before Baton stops.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return e, f, &http.Client{Transport: tr}
}

// verifyNoNewGoroutines fails t if goroutines other than those ignored are
// still running. Goroutines that are on their way out (a connection's
// reader seeing its peer close) get up to 10 seconds, not goleak's own
// second or two, so that a loaded machine does not fail the test.
func verifyNoNewGoroutines(t *testing.T, ignore goleak.Option) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := goleak.Find(ignore)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Error(err)
			return
		}
		time.Sleep(50 * time.Millisecond) // polling a bounded condition
	}
}

func newOpenAIClient(e *env, hc *http.Client, key string) openai.Client {
	return openai.NewClient(
		openaioption.WithBaseURL(e.srv.URL+"/v1/"),
		openaioption.WithAPIKey(key),
		openaioption.WithHTTPClient(hc),
		openaioption.WithMaxRetries(0),
	)
}

func newAnthropicClient(e *env, hc *http.Client, key string) anthropic.Client {
	return anthropic.NewClient(
		anthropicoption.WithBaseURL(e.srv.URL),
		anthropicoption.WithAPIKey(key),
		anthropicoption.WithHTTPClient(hc),
		anthropicoption.WithMaxRetries(0),
	)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// svcOf reads Baton's svc extension, which the SDKs keep among a
// response's unknown fields.
func svcOf(t *testing.T, raw string) (provider, model string) {
	t.Helper()
	var s struct {
		Trace struct {
			SelectedProvider string `json:"selectedProvider"`
			SelectedModel    string `json:"selectedModel"`
		} `json:"trace"`
	}
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatalf("svc %q: %v", raw, err)
	}
	return s.Trace.SelectedProvider, s.Trace.SelectedModel
}

// ---- openai-go ----

func TestOpenAISDKModelsList(t *testing.T) {
	e, _, hc := sdkEnv(t)
	client := newOpenAIClient(e, hc, e.tenantB)
	page, err := client.Models.List(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if page.Object != "list" {
		t.Fatalf("object %q, want list", page.Object)
	}
	var got []string
	owner := map[string]string{}
	for _, m := range page.Data {
		if m.Object != "model" || m.OwnedBy == "" || !strings.HasPrefix(m.ID, m.OwnedBy+":") {
			t.Fatalf("model %+v: want object model, owned_by its provider", m)
		}
		got = append(got, m.ID)
		owner[m.ID] = m.OwnedBy
	}
	var want []string
	for _, m := range e.catalog.List() {
		want = append(want, m.ID)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("SDK listed %v, catalog has %v", got, want)
	}
	// A model of each kind of upstream, the providers file's included.
	for _, up := range sdkUpstreams {
		if owner[up.model] != up.provider {
			t.Fatalf("%s: %s listed as owned by %q, want %q: %v", up.name, up.model, owner[up.model], up.provider, got)
		}
	}
}

func TestOpenAISDKChatCompletion(t *testing.T) {
	for _, up := range sdkUpstreams {
		for _, cc := range sdkCaps {
			t.Run(up.name+"/"+cc.name, func(t *testing.T) {
				up := up.at(cc.maxTokens)
				e, f, hc := sdkEnv(t)
				client := newOpenAIClient(e, hc, e.tenantA)
				params := openai.ChatCompletionNewParams{Model: openai.ChatModel(up.model), Messages: openaiConversation()}
				if cc.maxTokens > 0 {
					params.MaxCompletionTokens = openai.Int(cc.maxTokens)
				}
				resp, err := client.Chat.Completions.New(testCtx(t), params)
				if err != nil {
					t.Fatal(err)
				}
				checkTokenCaps(t, f, up, cc.maxTokens)
				if !strings.HasPrefix(resp.ID, "chatcmpl-") || resp.Object != "chat.completion" || !servedAs(resp.Model, up.model) || resp.Created == 0 {
					t.Fatalf("id %q object %q model %q created %d", resp.ID, resp.Object, resp.Model, resp.Created)
				}
				if len(resp.Choices) != 1 {
					t.Fatalf("%d choices: %s", len(resp.Choices), resp.RawJSON())
				}
				ch := resp.Choices[0]
				if ch.Index != 0 || ch.Message.Role != "assistant" || ch.Message.Content != up.text || ch.FinishReason != cc.finish {
					t.Fatalf("choice: role %q content %q finish %q, want assistant %q %q", ch.Message.Role, ch.Message.Content, ch.FinishReason, up.text, cc.finish)
				}
				u := resp.Usage
				if u.PromptTokens != up.promptTokens || u.CompletionTokens != up.completionTokens || u.TotalTokens != up.promptTokens+up.completionTokens || u.PromptTokensDetails.CachedTokens != up.cachedTokens {
					t.Fatalf("usage %+v, want prompt %d completion %d cached %d", u, up.promptTokens, up.completionTokens, up.cachedTokens)
				}
				if p, m := svcOf(t, resp.JSON.ExtraFields["svc"].Raw()); p != up.provider || m != up.model {
					t.Fatalf("svc trace: provider %q model %q", p, m)
				}
			})
		}
	}
}

func TestOpenAISDKChatCompletionStream(t *testing.T) {
	type streamCase struct {
		name         string
		maxTokens    int64
		finish       string
		includeUsage bool
	}
	cases := []streamCase{
		{"with usage", 0, "stop", true},
		{"without usage", 0, "stop", false},
		{"token cap with usage", 3, "length", true},
	}
	for _, up := range sdkUpstreams {
		for _, sc := range cases {
			t.Run(up.name+"/"+sc.name, func(t *testing.T) {
				up := up.at(sc.maxTokens)
				e, f, hc := sdkEnv(t)
				client := newOpenAIClient(e, hc, e.tenantA)
				ctx := testCtx(t)
				params := openai.ChatCompletionNewParams{Model: openai.ChatModel(up.model), Messages: openaiConversation()}
				if sc.maxTokens > 0 {
					params.MaxCompletionTokens = openai.Int(sc.maxTokens)
				}
				whole, err := client.Chat.Completions.New(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				if sc.includeUsage {
					params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				}
				stream := client.Chat.Completions.NewStreaming(ctx, params)
				defer stream.Close()
				var acc openai.ChatCompletionAccumulator
				var deltas []string
				var finished []string // content the accumulator reported finished
				usageChunks := 0
				chunks := 0
				for stream.Next() {
					chunk := stream.Current()
					chunks++
					if !acc.AddChunk(chunk) {
						t.Fatalf("the accumulator refused chunk %d: %s", chunks, chunk.RawJSON())
					}
					if chunk.Object != "chat.completion.chunk" || chunk.ID != acc.ID || !servedAs(chunk.Model, up.model) {
						t.Fatalf("chunk %d: object %q id %q (first %q) model %q", chunks, chunk.Object, chunk.ID, acc.ID, chunk.Model)
					}
					if usageChunks > 0 {
						t.Fatalf("chunk after the usage chunk: %s", chunk.RawJSON())
					}
					if chunk.JSON.Usage.Valid() {
						usageChunks++
						if len(chunk.Choices) != 0 {
							t.Fatalf("the usage chunk has choices: %s", chunk.RawJSON())
						}
					}
					for _, c := range chunk.Choices {
						if c.Delta.Content != "" {
							deltas = append(deltas, c.Delta.Content)
						}
					}
					if content, ok := acc.JustFinishedContent(); ok {
						finished = append(finished, content)
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				checkTokenCaps(t, f, up, sc.maxTokens)
				if !strings.HasPrefix(acc.ID, "chatcmpl-") || acc.ID == whole.ID {
					t.Fatalf("stream id %q (the whole answer's %q)", acc.ID, whole.ID)
				}
				if !slices.Equal(deltas, up.streamed) {
					t.Fatalf("content deltas %q, want the upstream's %q", deltas, up.streamed)
				}
				if len(acc.Choices) != 1 {
					t.Fatalf("%d accumulated choices", len(acc.Choices))
				}
				got := acc.Choices[0]
				if got.Message.Content != up.streamedText() || strings.TrimSpace(got.Message.Content) != whole.Choices[0].Message.Content {
					t.Fatalf("accumulated %q, non-streamed %q", got.Message.Content, whole.Choices[0].Message.Content)
				}
				if got.Message.Role != "assistant" || got.FinishReason != sc.finish || got.FinishReason != whole.Choices[0].FinishReason {
					t.Fatalf("role %q finish %q, want assistant %q (non-streamed %q)", got.Message.Role, got.FinishReason, sc.finish, whole.Choices[0].FinishReason)
				}
				if !slices.Equal(finished, []string{up.streamedText()}) {
					t.Fatalf("the accumulator reported finished content %q, want it once, whole", finished)
				}
				u := acc.Usage
				if !sc.includeUsage {
					if usageChunks != 0 || u.TotalTokens != 0 {
						t.Fatalf("usage sent without stream_options.include_usage: %+v", u)
					}
					return
				}
				if usageChunks != 1 {
					t.Fatalf("%d usage chunks, want 1", usageChunks)
				}
				if u.PromptTokens != up.promptTokens || u.CompletionTokens != up.completionTokens || u.TotalTokens != up.promptTokens+up.completionTokens || u.PromptTokensDetails.CachedTokens != up.cachedTokens {
					t.Fatalf("streamed usage %+v, want prompt %d completion %d cached %d", u, up.promptTokens, up.completionTokens, up.cachedTokens)
				}
				if u.PromptTokens != whole.Usage.PromptTokens || u.CompletionTokens != whole.Usage.CompletionTokens {
					t.Fatalf("streamed usage %+v differs from the non-streamed %+v", u, whole.Usage)
				}
			})
		}
	}
}

func TestOpenAISDKErrors(t *testing.T) {
	type errCase struct {
		name       string
		model      string
		key        func(*env) string
		status     int
		typ, code  string
		param      string
		message    string // a part of the message
		retryAfter string
	}
	tenant := func(e *env) string { return e.tenantA }
	cases := []errCase{
		{"unknown model", "nobody:x", tenant, 404, "invalid_request_error", "model_not_found", "model", `no provider "nobody"`, ""},
		{"bad key", "openai:gpt-4o-mini", func(*env) string { return "not-a-key" }, 401, "invalid_request_error", "invalid_api_key", "", "not valid", ""},
		// The local model has no upstream to fail: Baton's own refusal.
		{"local model unknown", "local:other", tenant, 404, "invalid_request_error", "model_not_found", "model", "the local provider serves only local:echo", ""},
	}
	for _, up := range sdkUpstreams {
		if up.local {
			continue
		}
		cases = append(cases,
			errCase{up.name + " 429", up.provider + ":fail-429", tenant, 429, "rate_limit_error", "upstream_rate_limited", "", "provider " + up.provider + " answered 429: slow down", "7"},
			errCase{up.name + " 500", up.provider + ":fail-500", tenant, 502, "api_error", "upstream_error", "", "provider " + up.provider + " answered 500: boom", ""},
		)
	}
	check := func(t *testing.T, tc errCase, err error) {
		t.Helper()
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("error %T %v, want *openai.Error", err, err)
		}
		if apiErr.StatusCode != tc.status || apiErr.Type != tc.typ || apiErr.Code != tc.code || apiErr.Param != tc.param || !strings.Contains(apiErr.Message, tc.message) {
			t.Fatalf("status %d type %q code %q param %q message %q; want %d %q %q %q %q", apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Param, apiErr.Message, tc.status, tc.typ, tc.code, tc.param, tc.message)
		}
		if got := apiErr.Response.Header.Get("Retry-After"); got != tc.retryAfter {
			t.Fatalf("Retry-After %q, want %q", got, tc.retryAfter)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _, hc := sdkEnv(t)
			client := newOpenAIClient(e, hc, tc.key(e))
			params := openai.ChatCompletionNewParams{Model: openai.ChatModel(tc.model), Messages: openaiConversation()}
			_, err := client.Chat.Completions.New(testCtx(t), params)
			check(t, tc, err)

			// A stream that fails before its first delta is an ordinary
			// error answer, which the SDK's stream reports the same way.
			params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			stream := client.Chat.Completions.NewStreaming(testCtx(t), params)
			defer stream.Close()
			if stream.Next() {
				t.Fatalf("a failed stream yielded a chunk: %s", stream.Current().RawJSON())
			}
			check(t, tc, stream.Err())
		})
	}
}

// A stream that breaks after its first delta can no longer change its
// status: Baton ends it with an error chunk, which the SDK reports as a
// stream error after the text that did arrive.
func TestOpenAISDKStreamCutMidway(t *testing.T) {
	cases := []struct {
		up      upstreamCase
		code    string
		message string // a part of the message
	}{
		// The OpenAI fake's stream ends without [DONE]: a bad gateway.
		{sdkUpstreams[0], "upstream_error", "provider openai"},
		// The Anthropic fake sends an overloaded_error event.
		{sdkUpstreams[1], "upstream_overloaded", "Overloaded"},
		// The OpenAI fake as an openai-compatible server: as OpenAI.
		{sdkUpstreams[2], "upstream_error", "provider compat"},
	}
	for _, tc := range cases {
		t.Run(tc.up.name, func(t *testing.T) {
			e, _, hc := sdkEnv(t)
			client := newOpenAIClient(e, hc, e.tenantA)
			stream := client.Chat.Completions.NewStreaming(testCtx(t), openai.ChatCompletionNewParams{
				Model: openai.ChatModel(tc.up.provider + ":cut"), Messages: openaiConversation(),
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			})
			defer stream.Close()
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				if !acc.AddChunk(stream.Current()) {
					t.Fatalf("the accumulator refused %s", stream.Current().RawJSON())
				}
			}
			var se *ssestream.StreamError
			if err := stream.Err(); !errors.As(err, &se) {
				t.Fatalf("error %T %v, want *ssestream.StreamError", err, err)
			}
			var body struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Code    string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(se.Event.Data, &body); err != nil {
				t.Fatalf("error chunk %q: %v", se.Event.Data, err)
			}
			if body.Error.Type != "api_error" || body.Error.Code != tc.code || !strings.Contains(body.Error.Message, tc.message) {
				t.Fatalf("error chunk %s, want api_error %s %q", se.Event.Data, tc.code, tc.message)
			}
			if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != tc.up.streamed[0] || acc.Choices[0].FinishReason != "" {
				t.Fatalf("before the error: %+v, want the first word %q and no finish reason", acc.Choices, tc.up.streamed[0])
			}
		})
	}
}

// ---- anthropic-sdk-go ----

// The Anthropic SDK lists the same catalog, in the Models API's shape (the
// SDK sends anthropic-version), a model of each kind of upstream included
// with its provider beside.
func TestAnthropicSDKModelsList(t *testing.T) {
	e, _, hc := sdkEnv(t)
	client := newAnthropicClient(e, hc, e.tenantB)
	page, err := client.Models.List(testCtx(t), anthropic.ModelListParams{Limit: anthropic.Int(3)})
	if err != nil {
		t.Fatal(err)
	}
	if !page.HasMore || len(page.Data) != 3 || page.FirstID != page.Data[0].ID || page.LastID != page.Data[2].ID {
		t.Fatalf("page: has_more %v first %q last %q of %d", page.HasMore, page.FirstID, page.LastID, len(page.Data))
	}
	// The SDK's own paging (after_id, has_more) walks the whole catalog,
	// three at a time.
	var all []anthropic.ModelInfo
	iter := client.Models.ListAutoPaging(testCtx(t), anthropic.ModelListParams{Limit: anthropic.Int(3)})
	for iter.Next() {
		all = append(all, iter.Current())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if r := e.do("GET", "/v1/models?limit=abc", e.tenantB, nil, "anthropic-version", "2023-06-01"); r.status != 400 || r.str("error.type") != "invalid_request_error" {
		t.Fatalf("limit=abc: %d %s", r.status, r.raw)
	}
	if r := e.do("GET", "/v1/models?before_id="+all[4].ID+"&limit=2", e.tenantB, nil, "anthropic-version", "2023-06-01"); r.status != 200 ||
		r.str("first_id") != all[2].ID || r.str("last_id") != all[3].ID || r.str("has_more") != "true" {
		t.Fatalf("before_id: %d %s", r.status, r.raw)
	}
	var got []string
	provider := map[string]string{}
	for _, m := range all {
		var p string
		if err := json.Unmarshal([]byte(m.JSON.ExtraFields["provider"].Raw()), &p); err != nil || m.Type != "model" || m.DisplayName == "" || !strings.HasPrefix(m.ID, p+":") {
			t.Fatalf("model %s: want type model, a display name and its provider (%v)", m.RawJSON(), err)
		}
		got = append(got, m.ID)
		provider[m.ID] = p
	}
	var want []string
	for _, m := range e.catalog.List() {
		want = append(want, m.ID)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("SDK listed %v, catalog has %v", got, want)
	}
	for _, up := range sdkUpstreams {
		if provider[up.model] != up.provider {
			t.Fatalf("%s: %s listed with provider %q, want %q: %v", up.name, up.model, provider[up.model], up.provider, got)
		}
	}
}

func TestAnthropicSDKMessage(t *testing.T) {
	for _, up := range sdkUpstreams {
		for _, cc := range sdkCaps {
			t.Run(up.name+"/"+cc.name, func(t *testing.T) {
				up := up.at(cc.maxTokens)
				e, f, hc := sdkEnv(t)
				client := newAnthropicClient(e, hc, e.tenantA)
				system, msgs := anthropicConversation()
				maxTokens := orCap(cc.maxTokens, 1024)
				msg, err := client.Messages.New(testCtx(t), anthropic.MessageNewParams{Model: anthropic.Model(up.model), MaxTokens: maxTokens, System: system, Messages: msgs})
				if err != nil {
					t.Fatal(err)
				}
				checkTokenCaps(t, f, up, maxTokens)
				if !strings.HasPrefix(msg.ID, "msg_") || msg.Type != "message" || msg.Role != "assistant" || !servedAs(string(msg.Model), up.model) {
					t.Fatalf("id %q type %q role %q model %q", msg.ID, msg.Type, msg.Role, msg.Model)
				}
				if len(msg.Content) != 1 || msg.Content[0].Type != "text" || msg.Content[0].Text != up.text {
					t.Fatalf("content %s, want one text block %q", msg.RawJSON(), up.text)
				}
				if msg.StopReason != cc.stopReason || msg.StopSequence != "" {
					t.Fatalf("stop_reason %q stop_sequence %q, want %q", msg.StopReason, msg.StopSequence, cc.stopReason)
				}
				u := msg.Usage
				if u.InputTokens != up.inputTokens || u.OutputTokens != up.billedOutput(cc.maxTokens) || u.CacheReadInputTokens != up.cacheReadTokens || u.CacheCreationInputTokens != 0 {
					t.Fatalf("usage %+v, want input %d output %d cache reads %d", u, up.inputTokens, up.billedOutput(cc.maxTokens), up.cacheReadTokens)
				}
				if p, m := svcOf(t, msg.JSON.ExtraFields["svc"].Raw()); p != up.provider || m != up.model {
					t.Fatalf("svc trace: provider %q model %q", p, m)
				}
			})
		}
	}
}

func orCap(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

func TestAnthropicSDKMessageStream(t *testing.T) {
	for _, up := range sdkUpstreams {
		for _, cc := range sdkCaps {
			t.Run(up.name+"/"+cc.name, func(t *testing.T) {
				up := up.at(cc.maxTokens)
				e, f, hc := sdkEnv(t)
				client := newAnthropicClient(e, hc, e.tenantA)
				ctx := testCtx(t)
				system, msgs := anthropicConversation()
				params := anthropic.MessageNewParams{Model: anthropic.Model(up.model), MaxTokens: orCap(cc.maxTokens, 1024), System: system, Messages: msgs}
				whole, err := client.Messages.New(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				stream := client.Messages.NewStreaming(ctx, params)
				defer stream.Close()
				var acc anthropic.Message
				var events, deltas []string
				for stream.Next() {
					ev := stream.Current()
					if err := acc.Accumulate(ev); err != nil {
						t.Fatalf("accumulating %s: %v", ev.RawJSON(), err)
					}
					if len(events) == 0 || events[len(events)-1] != ev.Type {
						events = append(events, ev.Type)
					}
					if ev.Type == "content_block_delta" {
						if ev.Index != 0 || ev.Delta.Type != "text_delta" {
							t.Fatalf("delta %s", ev.RawJSON())
						}
						deltas = append(deltas, ev.Delta.Text)
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				checkTokenCaps(t, f, up, params.MaxTokens)
				// The SDK drops pings; the rest is the Messages grammar.
				if got := strings.Join(events, " "); got != "message_start content_block_start content_block_delta content_block_stop message_delta message_stop" {
					t.Fatalf("events: %s", got)
				}
				if !slices.Equal(deltas, up.streamed) {
					t.Fatalf("text deltas %q, want the upstream's %q", deltas, up.streamed)
				}
				if !strings.HasPrefix(acc.ID, "msg_") || acc.ID == whole.ID || !servedAs(string(acc.Model), up.model) || acc.Role != "assistant" || acc.Type != "message" {
					t.Fatalf("id %q (non-streamed %q) model %q role %q type %q", acc.ID, whole.ID, acc.Model, acc.Role, acc.Type)
				}
				if len(acc.Content) != 1 || acc.Content[0].Type != "text" || acc.Content[0].Text != up.streamedText() || strings.TrimSpace(acc.Content[0].Text) != whole.Content[0].Text {
					t.Fatalf("accumulated content %+v, non-streamed %q", acc.Content, whole.Content[0].Text)
				}
				if acc.StopReason != cc.stopReason || acc.StopReason != whole.StopReason {
					t.Fatalf("stop_reason %q, want %q (non-streamed %q)", acc.StopReason, cc.stopReason, whole.StopReason)
				}
				u := acc.Usage
				if u.OutputTokens != up.billedOutput(cc.maxTokens) || u.OutputTokens != whole.Usage.OutputTokens || u.InputTokens != up.inputTokens || u.CacheReadInputTokens != up.cacheReadTokens {
					t.Fatalf("accumulated usage %+v, want input %d output %d cache reads %d (non-streamed %+v)", u, up.inputTokens, up.billedOutput(cc.maxTokens), up.cacheReadTokens, whole.Usage)
				}
			})
		}
	}
}

func TestAnthropicSDKErrors(t *testing.T) {
	type errCase struct {
		name       string
		model      string
		maxTokens  int64
		key        func(*env) string
		status     int
		typ        anthropic.ErrorType
		message    string // a part of the message
		retryAfter string
	}
	tenant := func(e *env) string { return e.tenantA }
	cases := []errCase{
		{"unknown model", "nobody:x", 10, tenant, 404, anthropic.ErrorTypeNotFoundError, `no provider "nobody"`, ""},
		{"bad key", "anthropic:claude-haiku-4-5", 10, func(*env) string { return "not-a-key" }, 401, anthropic.ErrorTypeAuthenticationError, "not valid", ""},
		{"max_tokens 0", "anthropic:claude-haiku-4-5", 0, tenant, 400, anthropic.ErrorTypeInvalidRequestError, "max_tokens: must be at least 1", ""},
		// The local model has no upstream to fail: Baton's own refusals.
		{"local model unknown", "local:other", 10, tenant, 404, anthropic.ErrorTypeNotFoundError, "the local provider serves only local:echo", ""},
		{"local model max_tokens 0", "local:echo", 0, tenant, 400, anthropic.ErrorTypeInvalidRequestError, "max_tokens: must be at least 1", ""},
	}
	for _, up := range sdkUpstreams {
		if up.local {
			continue
		}
		cases = append(cases,
			errCase{up.name + " 429", up.provider + ":fail-429", 10, tenant, 429, anthropic.ErrorTypeRateLimitError, "provider " + up.provider + " answered 429: slow down", "7"},
			errCase{up.name + " 500", up.provider + ":fail-500", 10, tenant, 502, anthropic.ErrorTypeAPIError, "provider " + up.provider + " answered 500: boom", ""},
		)
	}
	check := func(t *testing.T, tc errCase, err error) {
		t.Helper()
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("error %T %v, want *anthropic.Error", err, err)
		}
		var body struct {
			Type  string `json:"type"`
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal([]byte(apiErr.RawJSON()), &body); err != nil {
			t.Fatalf("error body %q: %v", apiErr.RawJSON(), err)
		}
		if apiErr.StatusCode != tc.status || apiErr.Type() != tc.typ || body.Type != "error" || !strings.Contains(body.Error.Message, tc.message) || body.RequestID == "" {
			t.Fatalf("status %d type %q body %s; want %d %q %q", apiErr.StatusCode, apiErr.Type(), apiErr.RawJSON(), tc.status, tc.typ, tc.message)
		}
		if got := apiErr.Response.Header.Get("Retry-After"); got != tc.retryAfter {
			t.Fatalf("Retry-After %q, want %q", got, tc.retryAfter)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _, hc := sdkEnv(t)
			client := newAnthropicClient(e, hc, tc.key(e))
			system, msgs := anthropicConversation()
			params := anthropic.MessageNewParams{Model: anthropic.Model(tc.model), MaxTokens: tc.maxTokens, System: system, Messages: msgs}
			_, err := client.Messages.New(testCtx(t), params)
			check(t, tc, err)

			stream := client.Messages.NewStreaming(testCtx(t), params)
			defer stream.Close()
			if stream.Next() {
				t.Fatalf("a failed stream yielded an event: %s", stream.Current().RawJSON())
			}
			check(t, tc, stream.Err())
		})
	}
}

// A stream that breaks after its first delta ends with an error event,
// which the SDK reports as an *anthropic.Error of the event's type.
func TestAnthropicSDKStreamCutMidway(t *testing.T) {
	cases := []struct {
		up      upstreamCase
		typ     anthropic.ErrorType
		message string // a part of the message
	}{
		// The OpenAI fake's stream ends without [DONE]: a bad gateway.
		{sdkUpstreams[0], anthropic.ErrorTypeAPIError, "provider openai"},
		// The Anthropic fake's overloaded_error event keeps its type.
		{sdkUpstreams[1], anthropic.ErrorTypeOverloadedError, "Overloaded"},
		// The OpenAI fake as an openai-compatible server: as OpenAI.
		{sdkUpstreams[2], anthropic.ErrorTypeAPIError, "provider compat"},
	}
	for _, tc := range cases {
		t.Run(tc.up.name, func(t *testing.T) {
			e, _, hc := sdkEnv(t)
			client := newAnthropicClient(e, hc, e.tenantA)
			system, msgs := anthropicConversation()
			stream := client.Messages.NewStreaming(testCtx(t), anthropic.MessageNewParams{Model: anthropic.Model(tc.up.provider + ":cut"), MaxTokens: 50, System: system, Messages: msgs})
			defer stream.Close()
			var acc anthropic.Message
			for stream.Next() {
				if err := acc.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			var apiErr *anthropic.Error
			if err := stream.Err(); !errors.As(err, &apiErr) {
				t.Fatalf("error %T %v, want *anthropic.Error", err, err)
			}
			var body struct {
				Type  string `json:"type"`
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(apiErr.RawJSON()), &body); err != nil {
				t.Fatalf("error event %q: %v", apiErr.RawJSON(), err)
			}
			if apiErr.Type() != tc.typ || body.Type != "error" || !strings.Contains(body.Error.Message, tc.message) {
				t.Fatalf("error event type %q body %s, want %s %q", apiErr.Type(), apiErr.RawJSON(), tc.typ, tc.message)
			}
			if len(acc.Content) != 1 || acc.Content[0].Text != tc.up.streamed[0] || acc.StopReason != "" {
				t.Fatalf("before the error: content %+v stop %q, want the first word %q and no stop reason", acc.Content, acc.StopReason, tc.up.streamed[0])
			}
		})
	}
}

// ---- a client that goes away ----

// When an SDK client abandons a stream, Baton cancels the upstream call,
// and (checked by sdkEnv) no goroutine of the request outlives it.
func TestSDKClientGoneMidStream(t *testing.T) {
	clients := []struct {
		name string
		// stream opens a stream on openai:hang, which sends one word and
		// then waits for its request to be canceled; it returns once that
		// word has reached the client.
		stream func(t *testing.T, ctx context.Context, e *env, hc *http.Client) (closeStream func() error)
	}{
		{"openai-go", func(t *testing.T, ctx context.Context, e *env, hc *http.Client) func() error {
			client := newOpenAIClient(e, hc, e.tenantA)
			s := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "openai:hang", Messages: openaiConversation()})
			for s.Next() {
				if ch := s.Current().Choices; len(ch) > 0 && ch[0].Delta.Content == "roles " {
					return s.Close
				}
			}
			t.Fatalf("no first word: %v", s.Err())
			return nil
		}},
		{"anthropic-sdk-go", func(t *testing.T, ctx context.Context, e *env, hc *http.Client) func() error {
			client := newAnthropicClient(e, hc, e.tenantA)
			system, msgs := anthropicConversation()
			s := client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "openai:hang", MaxTokens: 50, System: system, Messages: msgs})
			for s.Next() {
				if ev := s.Current(); ev.Type == "content_block_delta" && ev.Delta.Text == "roles " {
					return s.Close
				}
			}
			t.Fatalf("no first word: %v", s.Err())
			return nil
		}},
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			e, f, hc := sdkEnv(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			closeStream := c.stream(t, ctx, e, hc)
			cancel() // the client goes away mid-stream
			closeStream()
			select {
			case m := <-f.canceled:
				if m != "hang" {
					t.Fatalf("canceled %q", m)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the upstream request was not canceled when the SDK client went away")
			}
		})
	}
}

// servedAs reports whether an answer's model names the model asked for:
// Baton's id when Baton wrote the answer, the provider's own name for it
// when the answer was passed through.
func servedAs(got, id string) bool {
	_, name, _ := strings.Cut(id, ":")
	return got == id || got == name
}
