package contextpack

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func TestNormalize(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"already normal", "Refunds over 100 EUR need approval.", "Refunds over 100 EUR need approval."},
		{"nfc composes", "Cafe\u0301 Ko\u0308ln", "Caf\u00e9 K\u00f6ln"},
		{"nfc keeps precomposed", "Caf\u00e9", "Caf\u00e9"},
		{"control characters go", "a\x00b\x07c\x1bd\x7fe\u0080f", "abcdef"},
		{"tab and spaces collapse", "a \t  b\t\tc", "a b c"},
		{"no-break and ideographic spaces are whitespace", "a\u00a0b\u3000c\u2009d", "a b c d"},
		{"vertical tab and form feed are spaces", "a\vb\fc", "a b c"},
		{"crlf, cr, nel and separators become lf", "a\r\nb\rc\u0085d\u2028e\u2029f", "a\nb\nc\nd\ne\nf"},
		{"lines are trimmed", "  a  \n\t b \t", "a\nb"},
		{"one empty line at most", "a\n\n\n\n  \n\nb", "a\n\nb"},
		{"leading and trailing empty lines go", "\n\n  a\n\n", "a"},
		{"bidi overrides go", "pay \u202eevil\u202c now \u2066x\u2069", "pay evil now x"},
		{"invalid utf-8 becomes U+FFFD", "a\xffb", "a\ufffdb"},
		{"only whitespace and controls is empty", " \t\x07\r\n \u00a0", ""},
		{"a stripped control does not block composition", "e\x07\u0301", "\u00e9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Normalize(tc.in); got != tc.want {
				t.Fatalf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzNormalize: the result is valid NFC UTF-8 without controls other than
// LF, without doubled or edge whitespace, and normalising it again changes
// nothing.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"", "a  b", "e\u0301", "\r\n\r\n\r\n", "x\x00\u202e", "\xff\xfe", "a\u00a0\u0301", " \u0301", "\n\u0301", "\u1100\u1161\u11a8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Normalize(s)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		if !norm.NFC.IsNormalString(got) {
			t.Fatalf("not NFC: %q", got)
		}
		if again := Normalize(got); again != got {
			t.Fatalf("not idempotent: %q then %q", got, again)
		}
		if strings.TrimFunc(got, unicode.IsSpace) != got {
			t.Fatalf("edge whitespace: %q", got)
		}
		for _, r := range got {
			if r != '\n' && unicode.Is(unicode.Cc, r) {
				t.Fatalf("control %U in %q", r, got)
			}
		}
		if strings.Contains(got, "  ") || strings.Contains(got, "\n\n\n") || strings.Contains(got, "\t") {
			t.Fatalf("whitespace not collapsed: %q", got)
		}
	})
}
