package contextpack

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Normalize returns text as a packet holds it, so that the same words
// always make the same packet, the same tokens and the same hash: valid
// UTF-8, LF line breaks, no control or format characters (invisible ones
// would let a secret slip past the scanner), NFKC, single spaces, no runs
// of empty lines. The steps: docs/api.md ("Context packets",
// Normalisation). Normalize(Normalize(s)) == Normalize(s).
func Normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '\r':
			if i < len(s) && s[i] == '\n' {
				i++
			}
			b.WriteByte('\n')
		case r == '\u0085', r == '\u2028', r == '\u2029':
			b.WriteByte('\n')
		case r == '\v', r == '\f':
			b.WriteByte(' ')
		case r == '\n', r == '\t':
			b.WriteRune(r)
		case r < 0x20, r >= 0x7f && r <= 0x9f, unicode.Is(unicode.Cf, r):
			// dropped
		default:
			b.WriteRune(r) // utf8.RuneError for invalid bytes: U+FFFD
		}
	}
	lines := strings.Split(norm.NFKC.String(b.String()), "\n")
	out := lines[:0]
	empty := 0
	for _, line := range lines {
		line = strings.Join(strings.FieldsFunc(line, unicode.IsSpace), " ")
		if line == "" {
			if empty++; empty > 1 {
				continue
			}
		} else {
			empty = 0
		}
		out = append(out, line)
	}
	return strings.Trim(strings.Join(out, "\n"), "\n")
}
