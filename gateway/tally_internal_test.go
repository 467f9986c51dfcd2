package gateway

import "testing"

// A final usage report never bills less than what was seen to pass: the
// searches whose results streamed (a message_delta naming none), a token
// a delta that carried output (a report of none), and the input told early
// when the report names none.
func TestBillTakesWhatPassedOverAShortReport(t *testing.T) {
	var tl tally
	tl.See(Delta{Usage: &Usage{InputTokens: 100, OutputTokens: 1}})
	for range 5 {
		tl.See(Delta{Text: "word "})
	}
	tl.See(Delta{WebSearch: true, Commit: true})
	tl.See(Delta{WebSearch: true, Commit: true})
	u := tl.Bill(Request{}, &Usage{OutputTokens: 2})
	if u.InputTokens != 100 || u.OutputTokens < 5 || u.WebSearches != 2 || !u.Estimated {
		t.Fatalf("billed %+v", u)
	}
	// A full report stands as it is.
	u = tl.Bill(Request{}, &Usage{InputTokens: 120, OutputTokens: 40, WebSearches: 3})
	if u.InputTokens != 120 || u.OutputTokens != 40 || u.WebSearches != 3 || u.Estimated {
		t.Fatalf("billed %+v", u)
	}
}
