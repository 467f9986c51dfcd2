package secrets

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/text/unicode/norm"
)

// fold is what the second pass scans: value without format characters
// (Unicode Cf: zero-width space, soft hyphen, ...), in NFKC (full-width and
// mathematical letters become ASCII), then without combining marks (Mn),
// and with every other character whose Unicode confusable skeleton
// (UTS #39, confusablesASCII) is ASCII replaced by that skeleton: Cyrillic
// р becomes p, Greek ο becomes o. ASCII text is returned as it is: the
// skeleton also maps ASCII to ASCII (m to rn, 0 to O), which would break
// the very tokens the rules look for.
func fold(v string) string {
	if isASCII(v) {
		return v
	}
	v = norm.NFKC.String(strings.Map(func(r rune) rune {
		if r >= utf8.RuneSelf && unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, v))
	var b strings.Builder
	b.Grow(len(v))
	var memo map[rune]string // a text repeats few distinct characters
	for _, r := range v {
		switch {
		case r < utf8.RuneSelf:
			b.WriteByte(byte(r))
		case r >= 0x300 && unicode.Is(unicode.Mn, r): // no mark comes before U+0300
		default:
			sk, ok := memo[r]
			if !ok {
				sk = confusablesASCII(r)
				if memo == nil {
					memo = make(map[rune]string)
				}
				memo[r] = sk
			}
			b.WriteString(sk)
		}
	}
	return b.String()
}

// confusablesASCII is r's skeleton without combining marks when that is
// ASCII, else r itself.
func confusablesASCII(r rune) string {
	sk := strings.Map(func(c rune) rune {
		if unicode.Is(unicode.Mn, c) {
			return -1
		}
		return c
	}, confusables.Skeleton(string(r)))
	if sk == "" || !isASCII(sk) {
		return string(r)
	}
	return sk
}

func isASCII(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
