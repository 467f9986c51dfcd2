package http_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

// headerTap records the headers of each request a client sends.
type headerTap struct {
	next http.RoundTripper
	mu   sync.Mutex
	sent []http.Header
}

func (t *headerTap) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.sent = append(t.sent, r.Header.Clone())
	t.mu.Unlock()
	return t.next.RoundTrip(r)
}

// The Anthropic SDKs' majors of October 2026 speak API version 2026-10-21
// and send the key as a bearer token. Passed through, the client's version
// goes to Anthropic as sent (its rules are Anthropic's to apply), with
// Baton's upstream key in x-api-key and never the client's token.
func TestAnthropicSDKAPIVersion20261021(t *testing.T) {
	e, f, hc := sdkEnv(t)
	tap := &headerTap{next: hc.Transport}
	client := newAnthropicClient(e, &http.Client{Transport: tap}, e.tenantA)
	const model = "anthropic:claude-haiku-4-5"
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}

	msg, err := client.Messages.New(testCtx(t), anthropic.MessageNewParams{Model: model, MaxTokens: 64, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) == 0 || msg.Usage.InputTokens == 0 {
		t.Fatalf("message %s: no content or no usage", msg.RawJSON())
	}
	stream := client.Messages.NewStreaming(testCtx(t), anthropic.MessageNewParams{Model: model, MaxTokens: 64, Messages: msgs})
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Content) == 0 || acc.Usage.OutputTokens == 0 {
		t.Fatalf("streamed message %+v: no content or no usage", acc)
	}
	if _, err := client.Messages.CountTokens(testCtx(t), anthropic.MessageCountTokensParams{Model: model,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count me"))}}); err != nil {
		t.Fatal(err)
	}

	tap.mu.Lock()
	sent := tap.sent
	tap.mu.Unlock()
	if len(sent) != 3 {
		t.Fatalf("the SDK sent %d requests, want 3", len(sent))
	}
	for _, h := range sent {
		if h.Get("anthropic-version") != "2026-10-21" || h.Get("Authorization") != "Bearer "+e.tenantA || h.Get("x-api-key") != "" {
			t.Fatalf("the SDK sent anthropic-version %q, Authorization %q, x-api-key %q: not the case this test is for",
				h.Get("anthropic-version"), h.Get("Authorization"), h.Get("x-api-key"))
		}
	}
	f.mu.Lock()
	got := f.anthropicHeaders
	f.mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("the upstream took %d requests, want 3", len(got))
	}
	for i, h := range got {
		if h.Get("anthropic-version") != "2026-10-21" {
			t.Errorf("upstream request %d: anthropic-version %q, want the client's 2026-10-21", i, h.Get("anthropic-version"))
		}
		if h.Get("x-api-key") != "ak-upstream-test" || h.Get("Authorization") != "" {
			t.Errorf("upstream request %d: x-api-key %q, Authorization %q: want Baton's upstream key only", i, h.Get("x-api-key"), h.Get("Authorization"))
		}
	}
}

// An anthropic-version Baton does not know is refused, as Anthropic refuses
// it, when the body is translated: that version's rules may not be the
// known ones'. Passed through, it goes to Anthropic as sent, whose rules
// they are. None is taken as 2023-06-01, as curl and the docs' examples
// send none; the published versions are all read.
func TestAnthropicVersionOnTranslation(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, f))
	body := func(model string) string {
		return `{"model":"` + model + `","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	}
	for _, v := range []string{"", "2023-01-01", "2023-06-01", "2026-10-21"} {
		var h []string
		if v != "" {
			h = []string{"anthropic-version", v}
		}
		if r := e.do("POST", "/v1/messages", e.tenantA, body("openai:gpt-4o-mini"), h...); r.status != 200 {
			t.Errorf("version %q, translated: %d %s", v, r.status, r.raw)
		}
	}
	before := f.calls.Load()
	for _, v := range []string{"2099-01-01", "2023-06-01, 2023-06-01", "latest"} {
		r := e.do("POST", "/v1/messages", e.tenantA, body("openai:gpt-4o-mini"), "anthropic-version", v)
		if want := `anthropic-version: "` + v + `" is not a valid version`; r.status != 400 || r.str("error.type") != "invalid_request_error" || !strings.HasPrefix(r.str("error.message"), want) {
			t.Errorf("version %q, translated: %d %s, want 400 %q", v, r.status, r.raw, want)
		}
		r = e.do("POST", "/v1/messages/count_tokens", e.tenantA, `{"model":"local:echo","messages":[{"role":"user","content":"hi"}]}`, "anthropic-version", v)
		if r.status != 400 || r.str("error.type") != "invalid_request_error" {
			t.Errorf("version %q, counted here: %d %s", v, r.status, r.raw)
		}
	}
	if n := f.calls.Load() - before; n != 0 {
		t.Errorf("refused requests made %d upstream calls", n)
	}
	if r := e.do("POST", "/v1/messages", e.tenantA, body("anthropic:claude-haiku-4-5"), "anthropic-version", "2099-01-01"); r.status != 200 {
		t.Fatalf("version 2099-01-01, passed through: %d %s", r.status, r.raw)
	}
	f.mu.Lock()
	last := f.anthropicHeaders[len(f.anthropicHeaders)-1].Get("anthropic-version")
	f.mu.Unlock()
	if last != "2099-01-01" {
		t.Errorf("passed through, Anthropic got anthropic-version %q, want the client's", last)
	}
}
