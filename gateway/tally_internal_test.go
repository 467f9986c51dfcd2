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

// A stream that ends with no final report (the client left, or the
// upstream broke) after the upstream told its input is billed that input
// and Baton's count of the output, marked estimated whichever count of
// the output is billed: the floor of a token a delta is Baton's count too
// (it was marked only when the tokenizer counted more than the deltas).
func TestBillWithoutReportMarksTheOutputEstimated(t *testing.T) {
	var tl tally
	tl.See(Delta{Usage: &Usage{InputTokens: 100, OutputTokens: 1}})
	for range 5 {
		tl.See(Delta{Text: "word "})
	}
	u := tl.Bill(Request{}, nil)
	if u.InputTokens != 100 || u.OutputTokens < 5 || !u.Estimated {
		t.Fatalf("billed %+v", u)
	}
	// Nothing of the answer came: nothing counted, nothing estimated.
	var early tally
	early.See(Delta{Usage: &Usage{InputTokens: 100, OutputTokens: 1}})
	if u := early.Bill(Request{}, nil); u.InputTokens != 100 || u.OutputTokens != 1 || u.Estimated {
		t.Fatalf("billed %+v", u)
	}
}

// Where the call ran, told with the input at the stream's start
// (Anthropic's message_start inference_geo), is billed when the stream
// ends without a final report, as a whole stream's is: a workspace whose
// default is the US bills its rate (it was billed at the held geography,
// the standard rates, when the client left).
func TestBillKeepsTheGeographyToldEarly(t *testing.T) {
	var tl tally
	tl.See(Delta{Usage: &Usage{InputTokens: 100, OutputTokens: 1, Geo: "us"}})
	tl.See(Delta{Text: "word "})
	if u := tl.Bill(Request{}, nil); u.Geo != "us" {
		t.Fatalf("without a report: billed %+v", u)
	}
	m := &Model{ID: "p:m", Pricing: &Price{InputPerMTok: 3, OutputPerMTok: 15, USRate: 1.1, Source: "t"}}
	if c := CostOf(Request{}, m, tl.Bill(Request{}, nil)); c == nil || *c != RoundUSD((100*3+2*15)*1.1/1e6) {
		t.Fatalf("cost %v", c)
	}
}
