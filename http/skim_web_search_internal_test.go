package http

import "testing"

// The skim sums the max_uses of a Messages body's web search tools; a
// bound too large to count holds for the most it counts, never for none.
func TestSkimWebSearches(t *testing.T) {
	for _, c := range []struct {
		tools string
		want  int
	}{
		{`[{"type":"web_search_20250305","name":"web_search","max_uses":5}]`, 5},
		{`[{"type":"web_search_20250305","name":"web_search"}]`, 0},
		{`[{"type":"web_search_20250305","name":"a","max_uses":2},{"type":"web_search_20260209","name":"b","max_uses":3}]`, 5},
		{`[{"type":"web_search_20250305","name":"web_search","max_uses":"5"}]`, 0},
		{`[{"type":"web_search_20250305","name":"web_search","max_uses":0}]`, 0},
		{`[{"type":"web_fetch_20250910","name":"web_fetch","max_uses":5}]`, 0},
		{`[{"type":"web_search_20250305","name":"web_search","max_uses":1e300}]`, maxSkimmedCount},
		{`[{"type":"web_search_20250305","name":"web_search","max_uses":3000000000}]`, maxSkimmedCount},
	} {
		s, err := skimMessages([]byte(`{"model":"anthropic:m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":` + c.tools + `}`))
		if err != nil {
			t.Fatal(err)
		}
		if s.req.WebSearches != c.want {
			t.Errorf("%s: %d searches held for, want %d", c.tools, s.req.WebSearches, c.want)
		}
	}
}
