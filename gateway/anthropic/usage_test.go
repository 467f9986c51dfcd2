package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/batonhq/baton/gateway"
)

// Anthropic's thinking is inside output_tokens, and its cache reads and
// writes are apart from input_tokens: the usage is billed as it reads
// (gateway's TestUsageIsBilledAsTheProvidersBill prices it).
func TestUsageAsAnthropicBills(t *testing.T) {
	var an MessagesUsage
	if err := json.Unmarshal([]byte(`{"input_tokens":100,"cache_read_input_tokens":2000,"cache_creation_input_tokens":300,"output_tokens":700}`), &an); err != nil {
		t.Fatal(err)
	}
	if u := an.usage(); u != (gateway.Usage{InputTokens: 100, OutputTokens: 700, CacheReadTokens: 2000, CacheWriteTokens: 300}) {
		t.Fatalf("Anthropic usage %+v", u)
	}
}
