package contextpack

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Normalize returns text as a packet holds it, so that the same words
// always make the same packet, the same tokens and the same hash:
//
//  1. invalid UTF-8 becomes U+FFFD;
//  2. CR LF, a lone CR, NEL (U+0085) and the line and paragraph separators
//     (U+2028, U+2029) become LF; vertical tab and form feed become a space;
//  3. the other control characters (Unicode Cc) except LF and tab are
//     removed, as are the format characters (Unicode Cf: zero-width space
//     and joiners, soft hyphen, byte order mark, the bidirectional marks,
//     embeddings, overrides and isolates), which are invisible or can make
//     text read differently from what it says, and would let a secret with
//     one inside it slip past the secret scanner;
//  4. the text is put in Unicode NFKC: compatibility forms (full-width
//     letters, ligatures) become their plain letters, for the same reason
//     and so that what reads the same counts and hashes the same;
//  5. in each line, runs of whitespace (space, tab, no-break and the other
//     Unicode spaces) become one space, and the line is trimmed;
//  6. more than one empty line in a row becomes one, and empty lines at the
//     start and end go.
//
// Normalize(Normalize(s)) == Normalize(s).
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
