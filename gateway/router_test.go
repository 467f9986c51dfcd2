package gateway

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// prose is n bytes of English text (a sentence of 45 bytes, 10 tokens in
// o200k_base, repeated).
func prose(n int) string {
	const s = "The quick brown fox jumps over the lazy dog. "
	return strings.Repeat(s, n/len(s)+1)[:n]
}

func userText(text string) Request {
	return Request{Messages: []Message{{Role: "user", Content: []Block{{Type: "text", Text: text}}}}, MaxTokens: 256}
}

// A mode routes a prompt by its estimated tokens, not its bytes: 20 KB of
// prose (about 4,500 tokens) fits a model with 8,192 tokens of context,
// though its byte count, the budget's bound, does not; 60 KB (about
// 13,500 tokens) does not fit, and the mode has no route.
func TestModeRoutesByEstimatedTokens(t *testing.T) {
	c, err := catalogFromFile(t, `{"providers":[{"name":"small","kind":"openai-compatible","baseUrl":"http://127.0.0.1:1/v1",
		"models":[{"name":"ctx-8k","contextTokens":8192,"modes":["cheap"],"pricing":{"inputPerMTok":0.1,"outputPerMTok":0.2,"source":"test"}}]}]}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	fits := userText(prose(20 << 10))
	if in, _ := WorstTokens(fits, nil); in <= 8192 {
		t.Fatalf("the test's premise: the byte bound %d should exceed the context", in)
	}
	chain, err := c.Chain("cheap", fits)
	if err != nil {
		t.Fatalf("20 KB of prose to mode cheap: %v", err)
	}
	if chain[0].Model.ID != "small:ctx-8k" {
		t.Fatalf("20 KB of prose routed to %s", chain[0].Model.ID)
	}
	if _, err := c.Chain("cheap", userText(prose(60<<10))); !errors.Is(err, ErrPromptTooLong) {
		t.Fatalf("60 KB of prose to an 8k model: err = %v, want the prompt too long", err)
	}
	// Too long for every model: counted only as far as the largest
	// context, not to its end.
	huge := prose(4 << 20)
	n, over, ok := CountTokensUpTo(huge, 8192)
	if !ok || !over || n <= 8192 || n > 8192+countChunk {
		t.Fatalf("4 MiB counted up to 8,192: n %d, over %v", n, over)
	}

	// Only a model the mode could take decides whether the prompt is
	// counted: with no provider configured but the local one (a context of
	// 1 Mi tokens), the built-in 128k models do not make a 200 KB prompt
	// worth tokenizing.
	local, err := NewCatalog(Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	before := routeEstimates.Load()
	chain, err = local.Chain("cheap", userText(prose(200<<10)))
	if err != nil || chain[0].Model.ID != "local:echo" {
		t.Fatalf("200 KB to mode cheap with only the local provider: %v", err)
	}
	if n := routeEstimates.Load() - before; n != 0 {
		t.Fatalf("the prompt was tokenized %d times, though no model the mode could take has a smaller context than its bytes", n)
	}
	if _, err := c.Chain("cheap", fits); err != nil || routeEstimates.Load()-before != 1 {
		t.Fatalf("20 KB to the 8k model: err %v, tokenized %d times, want once", err, routeEstimates.Load()-before)
	}
}

// Counted a piece at a time, a long text comes to its whole count within
// a few tokens a piece (pieces end where words do), and to the same verdict.
func TestCountTokensUpToMatchesWholeCount(t *testing.T) {
	text := prose(2 << 20)
	whole, ok := CountTokens(text)
	if !ok {
		t.Fatal("no tokenizer")
	}
	n, over, _ := CountTokensUpTo(text, math.MaxInt)
	if over || n < whole-whole/1000 || n > whole+whole/1000 {
		t.Fatalf("in pieces %d, whole %d", n, whole)
	}
	if _, over, _ := CountTokensUpTo(text, whole+whole/100); over {
		t.Fatal("over a limit above the count")
	}
}

// The estimate lies between the o200k_base count and the byte bound, and
// carries the framing the bound adds.
func TestEstimateInputTokens(t *testing.T) {
	for _, n := range []int{0, 100, 20 << 10} {
		req := userText(prose(n))
		req.System = "Answer briefly."
		est := EstimateInputTokens(req)
		bound, _ := WorstTokens(req, nil)
		count, ok := CountTokens(req.System + "\n" + prose(n))
		if !ok {
			t.Fatal("no tokenizer")
		}
		if est < count || est > bound {
			t.Errorf("%d bytes: estimate %d, want between the count %d and the bound %d", n, est, count, bound)
		}
		if n == 20<<10 && est > bound/2 {
			t.Errorf("%d bytes of prose: estimate %d is more than half the byte bound %d", n, est, bound)
		}
	}
}

// A bare model name is the one configured model of that name; names that
// several providers list, or none, are refused with what to send instead.
func TestBareModelNames(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
	c, err := NewCatalog(Config{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	p, m, err := c.Resolve("gpt-4o-mini")
	if err != nil || p.Name() != "openai" || m.ID != "openai:gpt-4o-mini" {
		t.Fatalf("gpt-4o-mini: %v %v %v", p, m, err)
	}
	if _, m, err := c.Resolve("claude-haiku-4-5"); err != nil || m.ID != "anthropic:claude-haiku-4-5" {
		t.Fatalf("claude-haiku-4-5: %v %v", m, err)
	}
	if _, _, err := c.Resolve("no-such-model"); !errors.Is(err, ErrUnknownModel) || !strings.Contains(err.Error(), "no configured provider") {
		t.Fatalf("unknown bare name: %v", err)
	}
	// Unconfigured providers' models are not taken for a bare name.
	bare, _ := NewCatalog(Config{Getenv: func(string) string { return "" }})
	if _, _, err := bare.Resolve("gpt-4o-mini"); !errors.Is(err, ErrUnknownModel) {
		t.Fatalf("a bare name resolved to an unconfigured provider: %v", err)
	}
}

// A bare name several providers list is refused naming them, on every
// front: it is not taken for the front's own provider's model of that
// name (which none of them is, and which would go unpriced).
func TestAmbiguousBareNameRefused(t *testing.T) {
	price := `"pricing":{"inputPerMTok":1,"outputPerMTok":2,"source":"test"}`
	file := filepath.Join(t.TempDir(), "providers.json")
	os.WriteFile(file, []byte(`{"providers":[
		{"name":"oa","kind":"openai-compatible","baseUrl":"http://127.0.0.1:9/v1","models":[{"name":"blast","contextTokens":1000,`+price+`}]},
		{"name":"an","kind":"anthropic","baseUrl":"http://127.0.0.1:9","keyEnv":"AN_KEY","models":[{"name":"blast","contextTokens":1000,`+price+`}]}]}`), 0o600)
	env := map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "AN_KEY": "k"}
	c, err := NewCatalog(Config{Getenv: func(k string) string { return env[k] }, ProvidersFile: file})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{FormatChat, FormatAnthropic, FormatResponses} {
		chain, err := c.Plan(format, "blast", Request{})
		if !errors.Is(err, ErrUnknownModel) || !strings.Contains(err.Error(), `"blast" names a model of several providers (an:blast, oa:blast)`) {
			t.Fatalf("%s: %v %v", format, chain, err)
		}
	}
}

// A configured provider serves a model the catalog does not list, by its
// <provider>:<model> id; a name no provider could mean (white space,
// control characters, a leading colon) is refused instead of sent on.
func TestUnlistedModelNames(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "k"}
	c, err := NewCatalog(Config{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	if _, m, err := c.Resolve("openai:gpt-7-preview"); err != nil || m.Model != "gpt-7-preview" {
		t.Fatalf("an unlisted model: %v %v", m, err)
	}
	for _, id := range []string{"openai:gpt-4o-mini ", "openai: gpt-4o-mini", "openai:gpt-4o-mini\n", "openai::gpt-4o-mini", "openai:gpt\t4o"} {
		if _, _, err := c.Resolve(id); !errors.Is(err, ErrUnknownModel) || !strings.Contains(err.Error(), "white space") {
			t.Fatalf("%q: %v", id, err)
		}
	}
}
