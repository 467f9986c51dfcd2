package gateway

import "testing"

// A final usage report that names no output though output streamed (a
// usage of {}, a message_delta without its count) is billed Baton's count
// of it, marked estimated; one that counts it stands as it is. Searches
// whose results streamed count though the report names none, and the
// input told early counts when the report names none.
func TestBillTakesWhatPassedOverAShortReport(t *testing.T) {
	var tl tally
	tl.See(Delta{Usage: &Usage{InputTokens: 100, OutputTokens: 1}})
	for range 5 {
		tl.See(Delta{Text: "word "})
	}
	tl.See(Delta{WebSearch: true, Commit: true})
	tl.See(Delta{WebSearch: true, Commit: true})
	u := tl.Bill(Request{}, &Usage{})
	if u.InputTokens != 100 || u.OutputTokens < 5 || u.WebSearches != 2 || !u.Estimated {
		t.Fatalf("billed %+v", u)
	}
	// A report that counts the output stands, even below a token a delta
	// (a server that streams less than a token at a time).
	u = tl.Bill(Request{}, &Usage{InputTokens: 120, OutputTokens: 2, WebSearches: 3})
	if u.InputTokens != 120 || u.OutputTokens != 2 || u.WebSearches != 3 || u.Estimated {
		t.Fatalf("billed %+v", u)
	}
}
