package contextpack

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/domain/secrets"
)

// runes is a tokenizer whose tokens are characters, so that budgets in
// tests are easy to read.
type runes struct{}

func (runes) Encode(s string) []int {
	out := make([]int, 0, len(s))
	for _, r := range s {
		out = append(out, int(r))
	}
	return out
}

func (runes) Decode(ts []int) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteRune(rune(t))
	}
	return b.String()
}

var (
	scanOnce sync.Once
	scanner  *secrets.Scanner
	scanErr  error
)

func redactor(t testing.TB) Redactor {
	t.Helper()
	scanOnce.Do(func() { scanner, scanErr = secrets.New() })
	if scanErr != nil {
		t.Fatal(scanErr)
	}
	return scanner
}

// Fake secrets are built at run time so that no file holds a literal a
// scanner would flag.
var (
	rng      = rand.New(rand.NewPCG(7, 11))
	fakeAWS  = "AK" + "IA" + randomFrom("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
	fakeBtn  = "btn" + "_sk_" + randomFrom("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 40)
	fakeSecs = []string{fakeAWS, fakeBtn}
)

func randomFrom(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func build(t testing.TB, req Request, tok Tokenizer) *Packet {
	t.Helper()
	if req.TokenBudget == 0 {
		req.TokenBudget = DefaultTokenBudget
	}
	if req.PacketID == "" {
		req.PacketID = "0195a000-0000-7000-8000-000000000001"
		req.CreatedAt = t0
	}
	p, err := Build(req, tok, redactor(t))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type kept struct {
	section string
	index   int
	tokens  int
}

func keptOf(p *Packet) []kept {
	out := []kept{}
	for _, it := range p.Items {
		out = append(out, kept{it.Section, it.Index, it.Tokens})
	}
	return out
}

func droppedOf(p *Packet) []string {
	out := []string{}
	for _, d := range p.Dropped {
		out = append(out, d.Section+"/"+string(rune('0'+d.Index))+":"+d.Reason)
	}
	return out
}

func TestBuildFitsTheBudgetInPriorityOrder(t *testing.T) {
	req := Request{
		PolicyHints:      []string{"pppp"},          // 4
		MemoryHints:      []string{"mmmmmm", "mm"},  // 6, 2
		RetrievalContext: []Document{{"T", "dddd"}}, // 1 + 4
	}
	tests := []struct {
		name    string
		budget  int
		kept    []kept
		dropped []string
	}{
		{"everything fits", 100, []kept{{SectionPolicy, 0, 4}, {SectionMemory, 0, 6}, {SectionMemory, 1, 2}, {SectionRetrieval, 0, 5}}, []string{}},
		{"exactly full", 17, []kept{{SectionPolicy, 0, 4}, {SectionMemory, 0, 6}, {SectionMemory, 1, 2}, {SectionRetrieval, 0, 5}}, []string{}},
		{"retrieval goes first", 12, []kept{{SectionPolicy, 0, 4}, {SectionMemory, 0, 6}, {SectionMemory, 1, 2}}, []string{"retrievalContext/0:over_budget"}},
		{"a smaller later item still fits", 7, []kept{{SectionPolicy, 0, 4}, {SectionMemory, 1, 2}}, []string{"memoryHints/0:over_budget", "retrievalContext/0:over_budget"}},
		{"policy that does not fit is dropped too", 3, []kept{{SectionMemory, 1, 2}}, []string{"policyHints/0:over_budget", "memoryHints/0:over_budget", "retrievalContext/0:over_budget"}},
		{"budget of one", 1, []kept{}, []string{"policyHints/0:over_budget", "memoryHints/0:over_budget", "memoryHints/1:over_budget", "retrievalContext/0:over_budget"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := req
			r.TokenBudget = tc.budget
			p := build(t, r, runes{})
			if got := keptOf(p); !reflect.DeepEqual(got, tc.kept) {
				t.Errorf("kept %v, want %v", got, tc.kept)
			}
			if got := droppedOf(p); !reflect.DeepEqual(got, tc.dropped) {
				t.Errorf("dropped %v, want %v", got, tc.dropped)
			}
			sum := 0
			for _, it := range p.Items {
				sum += it.Tokens
			}
			if p.Tokens != sum || p.Tokens > tc.budget || p.TokenBudget != tc.budget {
				t.Errorf("tokens %d (items %d), budget %d", p.Tokens, sum, p.TokenBudget)
			}
		})
	}
}

func TestBuildDroppedNamesTokensAndTitle(t *testing.T) {
	p := build(t, Request{TokenBudget: 5, RetrievalContext: []Document{{"Runbook", "too long for five"}}}, runes{})
	want := []Dropped{{Section: SectionRetrieval, Index: 0, Title: "Runbook", Reason: ReasonOverBudget, Tokens: 7 + 17}}
	if !reflect.DeepEqual(p.Dropped, want) {
		t.Fatalf("dropped %+v, want %+v", p.Dropped, want)
	}
}

func TestBuildTruncatesOneRetrievalDocument(t *testing.T) {
	long := strings.Repeat("abcdefghi ", 20) // 199 characters once trimmed
	req := Request{
		TokenBudget:      50,
		PolicyHints:      []string{"pppp"},
		RetrievalContext: []Document{{"T", long}, {"U", "short"}},
	}
	p := build(t, req, runes{})
	if len(p.Items) != 2 {
		t.Fatalf("items %+v", p.Items)
	}
	it := p.Items[1]
	if !it.Truncated || it.OriginalTokens != 1+199 || it.Tokens > 46 || it.Tokens < 46-1 {
		t.Fatalf("cut item %+v", it)
	}
	if !strings.HasPrefix(Normalize(long), it.Text) || it.Text != Normalize(it.Text) {
		t.Fatalf("cut text %q is not a normalised prefix", it.Text)
	}
	if got := droppedOf(p); !reflect.DeepEqual(got, []string{"retrievalContext/1:over_budget"}) {
		t.Fatalf("dropped %v: only one document is cut", got)
	}
	if !strings.Contains(p.PromptText(), "## T (truncated)\n") {
		t.Fatalf("prompt does not say the document was cut:\n%s", p.PromptText())
	}
}

func TestBuildCutsOnlyWhenEnoughIsLeft(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, tc := range []struct {
		budget int
		cut    bool
	}{{MinTruncatedTokens, true}, {MinTruncatedTokens - 1, false}} {
		p := build(t, Request{TokenBudget: tc.budget, RetrievalContext: []Document{{"", long}}}, runes{})
		if cut := len(p.Items) == 1 && p.Items[0].Truncated; cut != tc.cut {
			t.Errorf("budget %d: cut %v, want %v (%+v)", tc.budget, cut, tc.cut, p)
		}
	}
	// Hints are never cut.
	p := build(t, Request{TokenBudget: 60, PolicyHints: []string{long}}, runes{})
	if len(p.Items) != 0 || p.Dropped[0].Reason != ReasonOverBudget {
		t.Fatalf("a policy hint was cut: %+v", p)
	}
}

func TestBuildTruncatesAtATokenBoundary(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	text := strings.Repeat("お誕生日おめでとう。Zażółć gęślą jaźń, naïve café. ", 40)
	p := build(t, Request{TokenBudget: 100, RetrievalContext: []Document{{"Greetings", text}}}, tok)
	it := p.Items[0]
	if !it.Truncated || it.Tokens > 100 || it.Tokens < 90 {
		t.Fatalf("item %+v", it)
	}
	if it.Tokens != len(tok.Encode("Greetings"))+len(tok.Encode(it.Text)) {
		t.Fatalf("tokens %d do not count the cut text", it.Tokens)
	}
	if !strings.HasPrefix(Normalize(text), it.Text) {
		t.Fatalf("cut text is not a prefix: %q", it.Text)
	}
}

func TestBuildRemovesDuplicatesAfterNormalising(t *testing.T) {
	req := Request{
		PolicyHints:      []string{"Never promise refunds.", "  Never   promise\trefunds. "},
		MemoryHints:      []string{"Prefers e\u0301mail.", "Never promise refunds.", "Prefers \u00e9mail."},
		RetrievalContext: []Document{{"Policy", "Never promise refunds."}, {"Other", "Different."}},
	}
	p := build(t, req, runes{})
	want := []Dropped{
		{Section: SectionPolicy, Index: 1, Reason: ReasonDuplicate, Tokens: 22, DuplicateOf: &Ref{SectionPolicy, 0}},
		{Section: SectionMemory, Index: 1, Reason: ReasonDuplicate, Tokens: 22, DuplicateOf: &Ref{SectionPolicy, 0}},
		{Section: SectionMemory, Index: 2, Reason: ReasonDuplicate, Tokens: 14, DuplicateOf: &Ref{SectionMemory, 0}},
		{Section: SectionRetrieval, Index: 0, Title: "Policy", Reason: ReasonDuplicate, Tokens: 6 + 22, DuplicateOf: &Ref{SectionPolicy, 0}},
	}
	if !reflect.DeepEqual(p.Dropped, want) {
		got, _ := json.Marshal(p.Dropped)
		t.Fatalf("dropped %s", got)
	}
	if got := keptOf(p); !reflect.DeepEqual(got, []kept{{SectionPolicy, 0, 22}, {SectionMemory, 0, 14}, {SectionRetrieval, 1, 5 + 10}}) {
		t.Fatalf("kept %v", got)
	}
}

func TestBuildDropsEmptyItems(t *testing.T) {
	p := build(t, Request{MemoryHints: []string{"", " \t\x07 ", "ok"}, RetrievalContext: []Document{{"Title only", ""}}}, runes{})
	if got := droppedOf(p); !reflect.DeepEqual(got, []string{"memoryHints/0:empty", "memoryHints/1:empty", "retrievalContext/0:empty"}) {
		t.Fatalf("dropped %v", got)
	}
}

func TestBuildRedactsSecretsNamingTheRule(t *testing.T) {
	req := Request{
		PolicyHints:      []string{"Use key " + fakeAWS + " for S3 uploads."},
		MemoryHints:      []string{"Customer pasted " + fakeBtn + " and " + fakeBtn + " in chat."},
		RetrievalContext: []Document{{"Creds " + fakeBtn, "AWS: " + fakeAWS}, {"Same text", "AWS: " + fakeAWS[:4] + randomFrom("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)}},
	}
	p := build(t, req, runes{})
	texts := []string{}
	for _, it := range p.Items {
		texts = append(texts, it.Title+"|"+it.Text)
	}
	want := []string{
		"|Use key [REDACTED:aws-access-token] for S3 uploads.",
		"|Customer pasted [REDACTED:baton-api-key] and [REDACTED:baton-api-key] in chat.",
		"Creds [REDACTED:baton-api-key]|AWS: [REDACTED:aws-access-token]",
	}
	if !reflect.DeepEqual(texts, want) {
		t.Fatalf("texts %q\nwant  %q", texts, want)
	}
	wantRed := []Redaction{
		{SectionPolicy, 0, "text", "aws-access-token", 1},
		{SectionMemory, 0, "text", "baton-api-key", 2},
		{SectionRetrieval, 0, "title", "baton-api-key", 1},
		{SectionRetrieval, 0, "text", "aws-access-token", 1},
		{SectionRetrieval, 1, "text", "aws-access-token", 1},
	}
	if !reflect.DeepEqual(p.Redactions, wantRed) {
		t.Fatalf("redactions %+v", p.Redactions)
	}
	// Two different keys redact to the same text: the second is a duplicate.
	if got := droppedOf(p); !reflect.DeepEqual(got, []string{"retrievalContext/1:duplicate"}) {
		t.Fatalf("dropped %v", got)
	}
	b, _ := json.Marshal(p)
	for _, s := range append(fakeSecs, fakeAWS[4:], fakeBtn[7:]) {
		if strings.Contains(string(b), s) || strings.Contains(p.PromptText(), s) {
			t.Fatal("the packet holds a secret")
		}
	}
}

func TestBuildRefusesSecretsInIDs(t *testing.T) {
	_, err := Build(Request{TokenBudget: 10, ThreadID: "t-1", CustomerID: fakeBtn}, runes{}, redactor(t))
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Code != "secret_detected" {
		t.Fatalf("err %v", err)
	}
	if len(de.Findings) != 1 || de.Findings[0] != (domain.SecretFinding{RuleID: "baton-api-key", Pointer: "/customerId"}) {
		t.Fatalf("findings %+v", de.Findings)
	}
	if strings.Contains(err.Error(), fakeBtn) {
		t.Fatal("the error quotes the secret")
	}
}

func TestValidate(t *testing.T) {
	long := strings.Repeat("é", MaxIDChars+1)
	tests := []struct {
		name string
		req  Request
		ptrs []string
	}{
		{"budget zero", Request{TokenBudget: 0}, []string{"/options/tokenBudget"}},
		{"budget negative", Request{TokenBudget: -5}, []string{"/options/tokenBudget"}},
		{"budget too large", Request{TokenBudget: MaxTokenBudget + 1}, []string{"/options/tokenBudget"}},
		{"unknown encoding", Request{TokenBudget: 10, Encoding: "p50k_base"}, []string{"/options/encoding"}},
		{"long ids", Request{TokenBudget: 10, ThreadID: long, CustomerID: long}, []string{"/threadId", "/customerId"}},
		// Ids are plain text, as Baton's other names and ids: a line break
		// or an override was kept or dropped without a word.
		{"ids with control characters", Request{TokenBudget: 10, ThreadID: "thr\n42", CustomerID: "cus_7\u202e"}, []string{"/threadId", "/customerId"}},
		{"too many items", Request{TokenBudget: 10, MemoryHints: make([]string, MaxItems+1), RetrievalContext: make([]Document, MaxItems+1)}, []string{"/memoryHints", "/retrievalContext"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.req, runes{}, redactor(t))
			var de *domain.Error
			if !errors.As(err, &de) || de.Kind != domain.KindInvalid {
				t.Fatalf("err %v", err)
			}
			var ptrs []string
			for _, f := range de.Fields {
				ptrs = append(ptrs, f.Pointer)
			}
			if !reflect.DeepEqual(ptrs, tc.ptrs) {
				t.Fatalf("pointers %v, want %v", ptrs, tc.ptrs)
			}
		})
	}
	for _, ok := range []Request{
		{TokenBudget: MinTokenBudget}, {TokenBudget: MaxTokenBudget, Encoding: "cl100k_base"},
		{TokenBudget: 10, ThreadID: strings.Repeat("é", MaxIDChars), MemoryHints: make([]string, MaxItems)},
	} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%v refused: %v", ok.TokenBudget, err)
		}
	}
}

func TestHashIsStableAndCoversContentOnly(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	req := Request{
		ThreadID: "thr_1", CustomerID: "cus_1", TokenBudget: 4000,
		PolicyHints:      []string{"Be brief.", "Cite sources."},
		MemoryHints:      []string{"Prefers <email> & chat."},
		RetrievalContext: []Document{{"FAQ", "Refunds take 5 days."}},
	}
	a := build(t, req, tok)
	req2 := req
	req2.PacketID, req2.CreatedAt = "0195a000-0000-7000-8000-000000000002", t0.Add(time.Hour)
	b := build(t, req2, tok)
	if a.ContentHash != b.ContentHash || a.PacketID == b.PacketID {
		t.Fatalf("same content, different hash: %s %s", a.ContentHash, b.ContentHash)
	}
	bigger := req
	bigger.TokenBudget = 100000
	if h := build(t, bigger, tok).ContentHash; h != a.ContentHash {
		t.Fatal("a budget that keeps the same items changed the hash")
	}
	swapped := req
	swapped.PolicyHints = []string{"Cite sources.", "Be brief."}
	if h := build(t, swapped, tok).ContentHash; h == a.ContentHash {
		t.Fatal("reordered hints kept the hash: order is content")
	}
	messy := req
	messy.PolicyHints = []string{"  Be   brief. ", "Cite\tsources.\r\n"}
	if h := build(t, messy, tok).ContentHash; h != a.ContentHash {
		t.Fatal("whitespace that normalises away changed the hash")
	}
	cl := req
	cl.Encoding = "cl100k_base"
	if h := build(t, cl, tok).ContentHash; h == a.ContentHash {
		t.Fatal("the encoding is not in the hash")
	}

	// The canonical form, written out by hand.
	canonical := `{"customerId":"cus_1","encoding":"o200k_base","items":[` +
		`{"index":0,"section":"policyHints","text":"Be brief.","title":"","tokens":` + itoa(len(tok.Encode("Be brief."))) + `,"truncated":false},` +
		`{"index":1,"section":"policyHints","text":"Cite sources.","title":"","tokens":` + itoa(len(tok.Encode("Cite sources."))) + `,"truncated":false},` +
		`{"index":0,"section":"memoryHints","text":"Prefers <email> & chat.","title":"","tokens":` + itoa(len(tok.Encode("Prefers <email> & chat."))) + `,"truncated":false},` +
		`{"index":0,"section":"retrievalContext","text":"Refunds take 5 days.","title":"FAQ","tokens":` + itoa(len(tok.Encode("FAQ"))+len(tok.Encode("Refunds take 5 days."))) + `,"truncated":false}` +
		`],"schema":"baton.context.v1","threadId":"thr_1"}`
	sum := sha256.Sum256([]byte(canonical))
	if want := "sha256:" + hex.EncodeToString(sum[:]); a.ContentHash != want {
		t.Fatalf("hash %s, want %s of\n%s", a.ContentHash, want, canonical)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestTokenCountsUseTheEncoding(t *testing.T) {
	for _, tc := range []struct {
		encoding string
		want     int
	}{{"o200k_base", 8}, {"cl100k_base", 9}} {
		tok := mustTokenizer(t, tc.encoding)
		p := build(t, Request{Encoding: tc.encoding, MemoryHints: []string{"お誕生日おめでとう", "tiktoken is great!"}}, tok)
		if p.Encoding != tc.encoding || p.Items[0].Tokens != tc.want || p.Items[1].Tokens != 6 || p.Tokens != tc.want+6 {
			t.Fatalf("%s: %+v", tc.encoding, p)
		}
		if p.PromptTokens != len(tok.Encode(p.PromptText())) {
			t.Fatalf("promptTokens %d", p.PromptTokens)
		}
	}
	if p := build(t, Request{}, mustTokenizer(t, DefaultEncoding)); p.Encoding != "o200k_base" {
		t.Fatalf("default encoding %q", p.Encoding)
	}
}

func TestPromptText(t *testing.T) {
	p := build(t, Request{
		TokenBudget:      1000,
		PolicyHints:      []string{"Be brief.", "Two\nlines."},
		MemoryHints:      []string{"Prefers email."},
		RetrievalContext: []Document{{"FAQ", "Refunds take 5 days.\n\nAsk for the order id."}, {"", "No title here."}},
	}, runes{})
	want := "# Policies\n- Be brief.\n- Two\n  lines.\n\n# Memory\n- Prefers email.\n\n# Retrieved context\n\n## FAQ\nRefunds take 5 days.\n\nAsk for the order id.\n\n## Untitled\nNo title here.\n"
	if got := p.PromptText(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if got := (&Packet{}).PromptText(); got != "" {
		t.Fatalf("empty packet renders %q", got)
	}
}

func TestPacketJSONShape(t *testing.T) {
	p := build(t, Request{}, runes{})
	b, _ := json.Marshal(p)
	for _, k := range []string{`"object":"context.packet"`, `"items":[]`, `"dropped":[]`, `"redactions":[]`, `"schema":"baton.context.v1"`, `"contentHash":"sha256:`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("%s missing from %s", k, b)
		}
	}
}

// A secret written with an invisible character inside it, or in full-width
// letters, is still found: normalisation removes format characters and
// folds compatibility forms before the scan.
func TestBuildRedactsDisguisedSecrets(t *testing.T) {
	fullWidth := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			if r >= '!' && r <= '~' {
				r += 0xFEE0 // the full-width form of an ASCII character
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	disguised := []string{
		fakeBtn[:20] + "\u200b" + fakeBtn[20:], // zero-width space
		fakeBtn[:20] + "\u00ad" + fakeBtn[20:], // soft hyphen
		fakeBtn[:20] + "\u2060" + fakeBtn[20:], // word joiner
		"\ufeff" + fakeAWS,                     // byte order mark
		fullWidth(fakeBtn),
	}
	for i, d := range disguised {
		p := build(t, Request{MemoryHints: []string{"key: " + d + " ok"}}, runes{})
		b, _ := json.Marshal(p)
		if len(p.Redactions) != 1 || strings.Contains(string(b), fakeBtn[8:]) || strings.Contains(string(b), fakeAWS[4:]) {
			t.Errorf("disguise %d: redactions %+v, items %+v", i, p.Redactions, p.Items)
		}
	}
}

// Cutting a document to the budget can end it on what then reads as a
// secret (a key-like run whose longer tail did not match): the cut text is
// scanned again.
func TestBuildRescansAfterTheCut(t *testing.T) {
	// An AWS key id followed by more key characters is not an AWS key id;
	// cut after its 20th character, it is.
	long := fakeAWS + randomFrom("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 8)
	prefix := "Deployment notes for the storage team, kept short. The access key id is "
	text := prefix + long
	full := build(t, Request{RetrievalContext: []Document{{"", text}}}, runes{})
	if len(full.Redactions) != 0 {
		t.Skipf("the scanner flags the longer run too (%+v); nothing to rescan", full.Redactions)
	}
	budget := len([]rune(prefix + fakeAWS)) // runes{} counts one token a rune
	p := build(t, Request{TokenBudget: budget, RetrievalContext: []Document{{"", text}}}, runes{})
	if len(p.Items) != 1 || !p.Items[0].Truncated {
		t.Fatalf("items %+v", p.Items)
	}
	if strings.Contains(p.Items[0].Text, fakeAWS) || len(p.Redactions) != 1 || p.Redactions[0].RuleID != "aws-access-token" {
		t.Fatalf("after the cut: %q, redactions %+v", p.Items[0].Text, p.Redactions)
	}
	if p.Tokens > budget {
		t.Fatalf("%d tokens over a budget of %d", p.Tokens, budget)
	}
}
