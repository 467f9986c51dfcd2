package http

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/batonhq/baton/domain"
)

func TestLoneSurrogateAt(t *testing.T) {
	for body, want := range map[string]int{
		`{"a":"x"}`:                  -1,
		`{"a":"\ud83d\ude00"}`:       -1, // a pair: 😀
		`{"a":"\uD83D\uDE00"}`:       -1,
		`{"a":"\u00e9\\ud800"}`:      -1, // an escaped backslash, then text
		`{"a":"r\ud800"}`:            7,
		`{"a":"r\udfff"}`:            7,
		`{"a":"\ud800\u0041"}`:       6,
		`{"a":"\ud800\ud800\udc00"}`: 6,
		`{"\ud800":1}`:               2,
		`{"a":"\\\ud800"}`:           8,
	} {
		if got := domain.LoneSurrogateAt([]byte(body)); got != want {
			t.Errorf("%s: %d, want %d", body, got, want)
		}
	}
	// Refused where the ledger decodes, as malformed JSON naming the byte.
	var v map[string]any
	if err := decodeBody([]byte(`{"executorRunId":"r\ud800"}`), &v); err == nil || !strings.Contains(err.Error(), "surrogate") {
		t.Fatalf("decodeBody: %v", err)
	}
}

// FuzzLoneSurrogateAt: whatever the body, no panic; an offset it names is
// a surrogate escape; and a valid JSON body it passes decodes to no more
// U+FFFD than the body spells (literally or escaped): none made up.
func FuzzLoneSurrogateAt(f *testing.F) {
	for _, s := range []string{`{"a":"\ud800"}`, `{"a":"\ud83d\ude00"}`, `"\\\ud800"`, `["\udc00\ud800"]`, `{"a":"\ufffd"}`, `"\u"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		at := domain.LoneSurrogateAt(b)
		if at >= 0 {
			if at+6 > len(b) || b[at] != '\\' || (b[at+2]|0x20) != 'd' {
				t.Fatalf("%q: offset %d is not a surrogate escape", b, at)
			}
			return
		}
		var v any
		if !utf8.Valid(b) || json.Unmarshal(b, &v) != nil {
			return
		}
		spelled := bytes.Count(b, []byte("\uFFFD")) + bytes.Count(bytes.ToLower(b), []byte(`\ufffd`))
		if got := countFFFD(v); got > spelled {
			t.Fatalf("%q decodes to %d U+FFFD, the body spells %d", b, got, spelled)
		}
	})
}

func countFFFD(v any) int {
	switch x := v.(type) {
	case string:
		return strings.Count(x, "\uFFFD")
	case []any:
		n := 0
		for _, e := range x {
			n += countFFFD(e)
		}
		return n
	case map[string]any:
		n := 0
		for k, e := range x {
			n += strings.Count(k, "\uFFFD") + countFFFD(e)
		}
		return n
	}
	return 0
}
