package gateway

import "github.com/tidwall/gjson"

// MaxJSONDepth is the deepest nesting of arrays and objects Baton reads,
// as encoding/json allows. gjson validates by recursion, a frame a level:
// a 32 MiB body of brackets alone would overflow the goroutine's stack,
// which no recover catches, and end the process.
const MaxJSONDepth = 10000

// ValidJSON reports whether b is one JSON value nested at most
// MaxJSONDepth deep. The depth is counted first, in one pass without
// recursion, so that gjson never descends further.
func ValidJSON(b []byte) bool {
	return shallow(b) && gjson.ValidBytes(b)
}

// TooDeep reports whether b's brackets outside strings nest deeper than
// MaxJSONDepth: a body refused for it is told so, not "not valid JSON".
func TooDeep(b []byte) bool { return !shallow(b) }

// shallow reports whether b's brackets outside strings nest at most
// MaxJSONDepth deep (b need not be valid JSON).
func shallow(b []byte) bool {
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte cannot end the string
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			if depth++; depth > MaxJSONDepth {
				return false
			}
		case ']', '}':
			depth--
		}
	}
	return true
}
