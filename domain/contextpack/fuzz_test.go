package contextpack

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzBuild builds packets from arbitrary hints and documents ("|" splits a
// string into several items, so duplicates come up) with the real
// tokenizer and scanner, and checks what every packet must satisfy.
func FuzzBuild(f *testing.F) {
	f.Add("Be brief.|Be  brief.", "Prefers email.|", "FAQ", "Refunds take 5 days.|Refunds take 5 days.", uint16(4000), false)
	f.Add("", "key "+fakeAWS, "Creds "+fakeBtn, strings.Repeat("long text ", 200), uint16(60), true)
	f.Add("\x00\u202e|\r\n", "e\u0301|\u00e9", "", "お誕生日おめでとう|"+strings.Repeat("x", 600), uint16(40), false)
	f.Add("password = [REDACTED:generic-api-key]", "<|endoftext|>", "\xff", "a|b|c", uint16(1), true)
	tok := mustTokenizer(f, "o200k_base")
	red := redactor(f)
	f.Fuzz(func(t *testing.T, policy, memory, title, text string, budget uint16, cl bool) {
		req := Request{
			PacketID:    "p",
			TokenBudget: 1 + int(budget)%5000,
			PolicyHints: strings.Split(policy, "|"),
			MemoryHints: strings.Split(memory, "|"),
		}
		for _, s := range strings.Split(text, "|") {
			req.RetrievalContext = append(req.RetrievalContext, Document{title, s})
		}
		tk := tok
		if cl {
			req.Encoding = "cl100k_base"
			tk = mustTokenizer(t, "cl100k_base")
		}
		p, err := Build(req, tk, red)
		if err != nil {
			t.Fatal(err)
		}
		count := func(s string) int { return len(tk.Encode(s)) }
		seen := map[string]int{}
		sum := 0
		for _, it := range p.Items {
			seen[fmt.Sprint(it.Section, it.Index)]++
			sum += it.Tokens
			if it.Text == "" || Normalize(it.Text) != it.Text || Normalize(it.Title) != it.Title {
				t.Fatalf("item not normalised: %+v", it)
			}
			if want := count(it.Title) + count(it.Text); it.Tokens != want {
				t.Fatalf("item tokens %d, counted %d: %+v", it.Tokens, want, it)
			}
			if found := scanner.ScanString("/x", it.Title+"\n"+it.Text); len(found) > 0 {
				t.Fatalf("kept text still holds a secret (%s): %+v", found[0].RuleID, it)
			}
		}
		for _, d := range p.Dropped {
			seen[fmt.Sprint(d.Section, d.Index)]++
		}
		if n := len(req.PolicyHints) + len(req.MemoryHints) + len(req.RetrievalContext); len(seen) != n {
			t.Fatalf("%d of %d items accounted for", len(seen), n)
		}
		for k, n := range seen {
			if n != 1 {
				t.Fatalf("%s accounted for %d times", k, n)
			}
		}
		if p.Tokens != sum || p.Tokens > p.TokenBudget {
			t.Fatalf("tokens %d, items %d, budget %d", p.Tokens, sum, p.TokenBudget)
		}
		if p.PromptTokens != count(p.PromptText()) {
			t.Fatalf("promptTokens %d", p.PromptTokens)
		}
		again, err := Build(req, tk, red)
		if err != nil || again.ContentHash != p.ContentHash || p.ContentHash != p.Hash() {
			t.Fatalf("hash not stable: %s %s", p.ContentHash, again.ContentHash)
		}
	})
}
