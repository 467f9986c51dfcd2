package contextpack

import (
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func mustTokenizer(t testing.TB, encoding string) Tokenizer {
	t.Helper()
	tok, err := NewTokenizer(encoding)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Known token ids, as OpenAI's tiktoken gives them (the "How to count
// tokens with tiktoken" cookbook lists the first three).
func TestTokenizerKnownValues(t *testing.T) {
	tests := []struct {
		encoding, text string
		want           []int
	}{
		{"o200k_base", "tiktoken is great!", []int{83, 8251, 2488, 382, 2212, 0}},
		{"cl100k_base", "tiktoken is great!", []int{83, 1609, 5963, 374, 2294, 0}},
		{"o200k_base", "antidisestablishmentarianism", []int{493, 129901, 376, 160388, 21203, 2367}},
		{"cl100k_base", "antidisestablishmentarianism", []int{519, 85342, 34500, 479, 8997, 2191}},
		{"o200k_base", "2 + 2 = 4", []int{17, 659, 220, 17, 314, 220, 19}},
		{"cl100k_base", "2 + 2 = 4", []int{17, 489, 220, 17, 284, 220, 19}},
		{"o200k_base", "hello world", []int{24912, 2375}},
		{"cl100k_base", "hello world", []int{15339, 1917}},
	}
	for _, tc := range tests {
		tok := mustTokenizer(t, tc.encoding)
		if got := tok.Encode(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("%s %q = %v, want %v", tc.encoding, tc.text, got, tc.want)
		}
		if got := tok.Decode(tc.want); got != tc.text {
			t.Errorf("%s decodes %v to %q", tc.encoding, tc.want, got)
		}
	}
	// The same Japanese greeting is 8 tokens in o200k_base, 9 in cl100k_base.
	for enc, want := range map[string]int{"o200k_base": 8, "cl100k_base": 9} {
		if n := len(mustTokenizer(t, enc).Encode("お誕生日おめでとう")); n != want {
			t.Errorf("%s: %d tokens, want %d", enc, n, want)
		}
	}
}

func TestTokenizerCountsSpecialTokensAsText(t *testing.T) {
	tok := mustTokenizer(t, "cl100k_base")
	got := tok.Encode("<|endoftext|>")
	if slices.Contains(got, 100257) || len(got) < 2 {
		t.Fatalf("special token text encoded as the special token: %v", got)
	}
}

func TestTokenizerRefusesUnknownEncodings(t *testing.T) {
	for _, enc := range []string{"", "p50k_base", "gpt2", "O200K_BASE"} {
		if _, err := NewTokenizer(enc); err == nil {
			t.Errorf("%q accepted", enc)
		}
	}
}

// Long runs without whitespace are encoded in pieces, so a megabyte of one
// letter takes a fraction of a second rather than hours, and text with
// only ordinary runs is encoded exactly as a whole.
func TestTokenizerLongRuns(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	n := len(tok.Encode(strings.Repeat("x", 1<<20)))
	if n == 0 || n > 1<<20 {
		t.Fatalf("%d tokens for a megabyte of x", n)
	}
	if segs := segments("ordinary words and a https://example.com/a/b?c=d url"); len(segs) != 1 {
		t.Fatalf("ordinary text cut into %d segments", len(segs))
	}
	long := "a " + strings.Repeat("ż", MaxRun) + " b"
	segs := segments(long)
	if strings.Join(segs, "") != long {
		t.Fatal("segments lose text")
	}
	for _, s := range segs {
		run := 0
		for _, f := range strings.Fields(s) {
			run = max(run, len(f))
		}
		if run > MaxRun {
			t.Fatalf("segment with a %d-byte run", run)
		}
	}
}

// The tokenizer never goes to the network: in a fresh process (no encoding
// loaded yet) whose HTTP proxy is an address nothing listens on, whose
// default HTTP transport fails every request, and whose tiktoken cache is
// an empty folder, both encodings load and count, and the cache stays
// empty. (tiktoken-go's default loader would download the .tiktoken files
// and cache them there.)
func TestTokenizerIsOffline(t *testing.T) {
	if os.Getenv("CONTEXTPACK_OFFLINE_CHILD") == "1" {
		http.DefaultTransport = failingTransport{t}
		for _, enc := range Encodings {
			if n := len(mustTokenizer(t, enc).Encode("tiktoken is great!")); n != 6 {
				t.Fatalf("%s: %d tokens", enc, n)
			}
		}
		return
	}
	if testing.Short() {
		t.Skip("loads both encodings in a child process")
	}
	cache := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTokenizerIsOffline$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(),
		"CONTEXTPACK_OFFLINE_CHILD=1",
		"HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9", "http_proxy=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9",
		"NO_PROXY=", "no_proxy=",
		"TIKTOKEN_CACHE_DIR="+cache, "DATA_GYM_CACHE_DIR="+cache,
	)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestTokenizerIsOffline") {
		t.Fatalf("offline child failed: %v\n%s", err, out)
	}
	if entries, _ := os.ReadDir(cache); len(entries) > 0 {
		t.Fatalf("the tokenizer wrote %d files to the tiktoken cache", len(entries))
	}
}

type failingTransport struct{ t *testing.T }

func (f failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.t.Errorf("network request to %s", r.URL)
	return nil, http.ErrNotSupported
}
