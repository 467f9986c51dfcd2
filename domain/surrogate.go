package domain

import "bytes"

// LoneSurrogateAt is the offset of the first \u escape in b's strings
// that is half a surrogate pair without its other half, -1 for none. b is
// JSON (or about to be refused as not JSON).
func LoneSurrogateAt(b []byte) int {
	if bytes.IndexByte(b, '\\') < 0 {
		return -1
	}
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		var r rune
		for _, c := range b[i+2 : i+6] {
			switch {
			case c >= '0' && c <= '9':
				r = r<<4 | rune(c-'0')
			case c >= 'a' && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case c >= 'A' && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	in := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			in = !in
		case c == '\\' && in:
			r, ok := hex4(i)
			if !ok {
				i++ // a two-byte escape (\", \\, \n ...)
				continue
			}
			switch {
			case r >= 0xD800 && r <= 0xDBFF:
				if lo, ok := hex4(i + 6); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 11
					continue
				}
				return i
			case r >= 0xDC00 && r <= 0xDFFF:
				return i
			}
			i += 5
		}
	}
	return -1
}
