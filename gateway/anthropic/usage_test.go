package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/batonhq/baton/gateway"
	"github.com/tidwall/gjson"
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

// The 1-hour part of the cache writes is read apart, for its rate, from a
// whole answer's usage (the adapter's and the passthrough's) and kept a
// part of the writes: negative is 0, more than the writes is the writes.
func TestUsageOneHourCacheWrites(t *testing.T) {
	for _, c := range []struct {
		usage      string
		write, w1h int
	}{
		{`{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":3000,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000}}`, 3000, 2000},
		{`{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":300}`, 300, 0},
		{`{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":300,"cache_creation":{"ephemeral_1h_input_tokens":-7}}`, 300, 0},
		{`{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":300,"cache_creation":{"ephemeral_1h_input_tokens":900}}`, 300, 300},
		{`{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":-5,"cache_creation":{"ephemeral_1h_input_tokens":900}}`, 0, 0},
	} {
		want := gateway.Usage{InputTokens: 10, OutputTokens: 5, CacheWriteTokens: c.write, CacheWrite1hTokens: c.w1h}
		var an MessagesUsage
		if err := json.Unmarshal([]byte(c.usage), &an); err != nil {
			t.Fatal(err)
		}
		if u := an.usage(); u != want {
			t.Errorf("adapter: %s read as %+v, want %+v", c.usage, u, want)
		}
		if u := usageOf(gjson.Parse(c.usage)); u != want {
			t.Errorf("passthrough: %s read as %+v, want %+v", c.usage, u, want)
		}
	}
}

// Baton's own usage tells the split of the writes when some were 1-hour
// ones, as Anthropic does, and has no cache_creation otherwise.
func TestAnswerUsageCacheCreation(t *testing.T) {
	b, err := json.Marshal(Usage(gateway.Usage{InputTokens: 1, CacheWriteTokens: 3000, CacheWrite1hTokens: 2000}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(b, "cache_creation").Raw; got != `{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000}` {
		t.Fatalf("cache_creation %s in %s", got, b)
	}
	b, _ = json.Marshal(Usage(gateway.Usage{InputTokens: 1, CacheWriteTokens: 3000}, nil))
	if gjson.GetBytes(b, "cache_creation").Exists() {
		t.Fatalf("cache_creation without 1-hour writes: %s", b)
	}
}

// The web search tool's searches are read from a whole answer's usage (the
// adapter's and the passthrough's), negative as 0, and told back in
// Baton's own usage only when some ran.
func TestUsageWebSearches(t *testing.T) {
	for _, c := range []struct {
		usage string
		want  int
	}{
		{`{"input_tokens":10,"output_tokens":5,"server_tool_use":{"web_search_requests":4}}`, 4},
		{`{"input_tokens":10,"output_tokens":5,"server_tool_use":{"web_search_requests":-2}}`, 0},
		{`{"input_tokens":10,"output_tokens":5,"server_tool_use":{"web_fetch_requests":2}}`, 0},
		{`{"input_tokens":10,"output_tokens":5}`, 0},
	} {
		var an MessagesUsage
		if err := json.Unmarshal([]byte(c.usage), &an); err != nil {
			t.Fatal(err)
		}
		if u := an.usage(); u.WebSearches != c.want {
			t.Errorf("adapter: %s read %d searches, want %d", c.usage, u.WebSearches, c.want)
		}
		if u := usageOf(gjson.Parse(c.usage)); u.WebSearches != c.want {
			t.Errorf("passthrough: %s read %d searches, want %d", c.usage, u.WebSearches, c.want)
		}
	}
	b, _ := json.Marshal(Usage(gateway.Usage{InputTokens: 1, WebSearches: 2}, nil))
	if got := gjson.GetBytes(b, "server_tool_use").Raw; got != `{"web_search_requests":2}` {
		t.Fatalf("server_tool_use %s in %s", got, b)
	}
	b, _ = json.Marshal(Usage(gateway.Usage{InputTokens: 1}, nil))
	if gjson.GetBytes(b, "server_tool_use").Exists() {
		t.Fatalf("server_tool_use without searches: %s", b)
	}
}

// Counts written as a float of an integer (1200.0, 3e3) are read by the
// adapter as the passthrough reads them (the translated answer was a 502,
// its call recorded free); a fraction is still a malformed answer.
func TestUsageCountsInAnyIntegerForm(t *testing.T) {
	raw := `{"input_tokens":1200.0,"output_tokens":7e0,"cache_read_input_tokens":3e3,"cache_creation_input_tokens":300.0,"cache_creation":{"ephemeral_5m_input_tokens":200.0,"ephemeral_1h_input_tokens":1e2},"server_tool_use":{"web_search_requests":2.0}}`
	want := gateway.Usage{InputTokens: 1200, OutputTokens: 7, CacheReadTokens: 3000, CacheWriteTokens: 300, CacheWrite1hTokens: 100, WebSearches: 2}
	var an MessagesUsage
	if err := json.Unmarshal([]byte(raw), &an); err != nil {
		t.Fatal(err)
	}
	if u := an.usage(); u != want {
		t.Errorf("adapter: %+v, want %+v", u, want)
	}
	if u := usageOf(gjson.Parse(raw)); u != want {
		t.Errorf("passthrough: %+v, want %+v", u, want)
	}
	var m Message
	err := json.Unmarshal([]byte(`{"type":"message","content":[],"usage":{"input_tokens":"12","output_tokens":1}}`), &m)
	if got := gateway.JSONMistake(err); got != "usage.input_tokens is a string where a whole number is expected" {
		t.Fatalf("a string: %v (%s)", err, got)
	}
}

// A fractional count is truncated by the adapter as by the passthrough
// (the translated answer was a 502, its call recorded free).
func TestUsageFractionalCounts(t *testing.T) {
	raw := `{"input_tokens":1200.7,"output_tokens":7.2,"cache_read_input_tokens":-3.5}`
	want := gateway.Usage{InputTokens: 1200, OutputTokens: 7}
	var an MessagesUsage
	if err := json.Unmarshal([]byte(raw), &an); err != nil {
		t.Fatal(err)
	}
	if u := an.usage(); u != want {
		t.Errorf("adapter: %+v, want %+v", u, want)
	}
	if u := usageOf(gjson.Parse(raw)); u != want {
		t.Errorf("passthrough: %+v, want %+v", u, want)
	}
}
