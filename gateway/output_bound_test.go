package gateway

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// An upstream that reports more output tokens than the request let the
// model write is billed the request's bound, and the caller is told; a
// model whose context is not declared, called without a cap, is held to
// the count no call reaches (MaxReportedTokens). An OpenAI-compatible server's cap may leave its
// reasoning out: its count is held to the model's context only.
func TestReportedOutputBilledNoFurtherThanTheBound(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":1000000000000000}}`)
	}))
	t.Cleanup(up.Close)
	price := `"pricing":{"inputPerMTok":1,"outputPerMTok":10,"source":"test"}`
	models := `[{"name":"known","contextTokens":8192,` + price + `},{"name":"open",` + price + `}]`
	cat, err := catalogFromFile(t, `{"providers":[{"name":"p","kind":"openai","baseUrl":"`+up.URL+`/v1","keyEnv":"P_KEY","models":`+models+`},`+
		`{"name":"c","kind":"openai-compatible","baseUrl":"`+up.URL+`/v1","keyEnv":"P_KEY","models":`+models+`}]}`, map[string]string{"P_KEY": "k"})
	if err != nil {
		t.Fatal(err)
	}
	var told []string
	k := &Caller{OverReported: func(provider, model, count string, reported, bound int) {
		told = append(told, fmt.Sprintf("%s %s %d>%d", provider, model, reported, bound))
	}}
	msgs := []Message{{Role: "user", Content: []Block{{Type: "text", Text: "hi"}}}}
	for _, tc := range []struct {
		model    string
		req      Request
		wantOut  int
		wantTold string
	}{
		{"p:known", Request{Messages: msgs, MaxTokens: 50}, 50, "p p:known 1000000000000000>50"},
		{"p:known", Request{Messages: msgs, MaxTokens: 50, Choices: 3}, 150, "p p:known 1000000000000000>150"},
		{"p:known", Request{Messages: msgs}, 8192, "p p:known 1000000000000000>8192"},                  // no cap: the context bounds it
		{"p:open", Request{Messages: msgs}, MaxReportedTokens, "p p:open 1000000000000000>1000000000"}, // nothing declared: no call writes more
		{"c:known", Request{Messages: msgs, MaxTokens: 50}, 8192, "c c:known 1000000000000000>8192"},
		{"c:open", Request{Messages: msgs, MaxTokens: 50}, MaxReportedTokens, "c c:open 1000000000000000>1000000000"},
	} {
		told = nil
		chain, err := cat.Plan("", tc.model, tc.req)
		if err != nil {
			t.Fatal(err)
		}
		c := &Call{ID: "c", Front: "generate", Tenant: "t", Req: tc.req}
		a, err := k.Complete(t.Context(), c, chain)
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		want := RoundUSD((10*1.0 + float64(tc.wantOut)*10) / 1e6)
		if a.Cost == nil || *a.Cost != want {
			t.Errorf("%s %+v: cost %v, want %v", tc.model, tc.req.MaxTokens, a.Cost, want)
		}
		if got := fmt.Sprint(told); got != "["+tc.wantTold+"]" {
			t.Errorf("%s: told %v, want %q", tc.model, told, tc.wantTold)
		}
	}
}

// Whose cap bounds what is billed: OpenAI's (reasoning counts in it); not
// Anthropic's (thinking interleaved with tool calls may pass max_tokens)
// nor an OpenAI-compatible server's, held to the model's context.
func TestBilledOutputBoundByKind(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		ctx   int
		want  int
		known bool
	}{
		{"openai", 8192, 100, true},
		{"anthropic", 200000, 200000, true},
		{"openai-compatible", 8192, 8192, true},
		{"openai-compatible", 0, 0, false},
	} {
		got, known := BilledOutputBound(Request{MaxTokens: 50, Choices: 2}, &Model{Kind: tc.kind, ContextTokens: tc.ctx})
		want := tc.want
		if tc.kind != "openai" && tc.known {
			want = tc.ctx * 2
		}
		if got != want || known != tc.known {
			t.Errorf("%s (context %d): %d %v, want %d %v", tc.kind, tc.ctx, got, known, want, tc.known)
		}
	}
}

// An input, a cache read or a search count no call reaches (a corrupt or
// hostile upstream's 9e18, which would bill trillions of dollars) is not
// billed as told: the input is Baton's count of the request, marked
// estimated, and the searches the ceiling; the caller is told.
func TestReportedInputPastAnyCallBilledAsCounted(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9000000000000000000,"completion_tokens":3}}`)
	}))
	t.Cleanup(up.Close)
	cat, err := catalogFromFile(t, `{"providers":[{"name":"p","kind":"openai","baseUrl":"`+up.URL+`/v1","keyEnv":"P_KEY","models":[{"name":"m","contextTokens":8192,"pricing":{"inputPerMTok":1,"outputPerMTok":10,"source":"test"}}]}]}`, map[string]string{"P_KEY": "k"})
	if err != nil {
		t.Fatal(err)
	}
	var told []string
	k := &Caller{OverReported: func(provider, model, count string, reported, billed int) {
		told = append(told, fmt.Sprintf("%s %d>%d", count, reported, billed))
	}}
	req := Request{Messages: []Message{{Role: "user", Content: []Block{{Type: "text", Text: "say hi to everyone in the room"}}}}, MaxTokens: 50}
	chain, err := cat.Plan("", "p:m", req)
	if err != nil {
		t.Fatal(err)
	}
	a, err := k.Complete(t.Context(), &Call{ID: "c", Front: "chat", Tenant: "t", Req: req}, chain)
	if err != nil {
		t.Fatal(err)
	}
	est := EstimateUsage(req, "", countOr4).InputTokens
	if a.Billed.InputTokens != est || !a.Billed.Estimated || a.Billed.OutputTokens != 3 || a.Cost == nil || *a.Cost > 0.01 {
		t.Fatalf("billed %+v at %v; want the input Baton counts (%d), estimated", a.Billed, a.Cost, est)
	}
	if want := fmt.Sprintf("[input tokens 9000000000000000000>%d]", est); fmt.Sprint(told) != want {
		t.Fatalf("told %v, want %s", told, want)
	}

	// The ceilings themselves, on the usage as settled.
	c := &Call{ID: "c", Front: "chat", Tenant: "t", Req: req, Model: chain[0].Model, Provider: chain[0].Provider}
	told = nil
	u := k.bounded(c, Usage{InputTokens: 5, CacheReadTokens: MaxReportedTokens, OutputTokens: 1, WebSearches: 1 << 40, FileSearches: 7})
	if u.InputTokens != est || u.CacheReadTokens != 0 || !u.Estimated || u.WebSearches != MaxReportedSearches || u.FileSearches != 7 {
		t.Fatalf("bounded %+v", u)
	}
	if len(told) != 2 {
		t.Fatalf("told %v", told)
	}
	told = nil
	if u := k.bounded(c, Usage{InputTokens: 5, CacheReadTokens: 100, OutputTokens: 1, WebSearches: 3}); u.InputTokens != 5 || u.CacheReadTokens != 100 || u.Estimated || u.WebSearches != 3 || len(told) != 0 {
		t.Fatalf("a plausible usage changed: %+v, told %v", u, told)
	}
}
