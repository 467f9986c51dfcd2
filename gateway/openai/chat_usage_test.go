package openai

import (
	"encoding/json"
	"testing"

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
