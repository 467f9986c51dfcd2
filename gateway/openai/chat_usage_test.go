package openai

import (
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/gateway"
)

// OpenAI's reasoning tokens are inside completion_tokens and its cached
// tokens inside prompt_tokens: the usage is billed as it reads (gateway's
// TestUsageIsBilledAsTheProvidersBill prices it).
func TestUsageAsOpenAIBills(t *testing.T) {
	var oa ChatUsage
	if err := json.Unmarshal([]byte(`{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500,
		"prompt_tokens_details":{"cached_tokens":600},"completion_tokens_details":{"reasoning_tokens":400}}`), &oa); err != nil {
		t.Fatal(err)
	}
	if u := oa.Usage(); u != (gateway.Usage{InputTokens: 400, OutputTokens: 500, CacheReadTokens: 600}) {
		t.Fatalf("OpenAI usage %+v", u)
	}
}

// Counts written as a float of an integer (1000.0, 6e2) are read by the
// adapter as the passthrough reads them (the translated answer was a 502,
// its call recorded free); a fraction is still a malformed answer.
func TestUsageCountsInAnyIntegerForm(t *testing.T) {
	raw := `{"prompt_tokens":1000.0,"completion_tokens":5e2,"total_tokens":1500.0,"prompt_tokens_details":{"cached_tokens":6e2,"cache_write_tokens":100.0}}`
	want := gateway.Usage{InputTokens: 300, OutputTokens: 500, CacheReadTokens: 600, CacheWriteTokens: 100}
	var oa ChatUsage
	if err := json.Unmarshal([]byte(raw), &oa); err != nil {
		t.Fatal(err)
	}
	if u := oa.Usage(); u != want {
		t.Errorf("adapter: %+v, want %+v", u, want)
	}
	if u := usageOf(gjson.Parse(raw)); u != want {
		t.Errorf("passthrough: %+v, want %+v", u, want)
	}
	var c ChatCompletion
	err := json.Unmarshal([]byte(`{"choices":[],"usage":{"prompt_tokens":"12","completion_tokens":1}}`), &c)
	if got := gateway.JSONMistake(err); got != "usage.prompt_tokens is a string where a whole number is expected" {
		t.Fatalf("a string: %v (%s)", err, got)
	}
}

// A fractional count is truncated by the adapter as by the passthrough
// (the translated answer was a 502, its call recorded free).
func TestUsageFractionalCounts(t *testing.T) {
	raw := `{"prompt_tokens":1000.9,"completion_tokens":500.5,"prompt_tokens_details":{"cached_tokens":600.2}}`
	want := gateway.Usage{InputTokens: 400, OutputTokens: 500, CacheReadTokens: 600}
	var oa ChatUsage
	if err := json.Unmarshal([]byte(raw), &oa); err != nil {
		t.Fatal(err)
	}
	if u := oa.Usage(); u != want {
		t.Errorf("adapter: %+v, want %+v", u, want)
	}
	if u := usageOf(gjson.Parse(raw)); u != want {
		t.Errorf("passthrough: %+v, want %+v", u, want)
	}
}
