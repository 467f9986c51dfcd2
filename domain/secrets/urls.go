package secrets

import "strings"

// urlSpans is urlRE.FindAllStringIndex(value, -1), found from each "://"
// instead of by trying the pattern at every byte: backtracking over every
// run of scheme characters, that made the URL rules the costliest part of
// scanning a long text (a document's strings joined). FuzzURLSpans holds
// the two to the same answers.
func urlSpans(value string) [][]int {
	var out [][]int
	for i := 0; i < len(value); {
		k := strings.Index(value[i:], "://")
		if k < 0 {
			break
		}
		k += i
		// The leftmost start: the first letter of the run of scheme
		// characters before "://".
		start := k
		for start > i && schemeChar(value[start-1]) {
			start--
		}
		for start < k && !asciiLetter(value[start]) {
			start++
		}
		end := k + 3
		for end < len(value) && urlChar(value[end]) {
			end++
		}
		if start == k || end == k+3 {
			i = k + 1 // no scheme, or nothing after it: no URL here
			continue
		}
		out = append(out, []int{start, end})
		i = end
	}
	return out
}

func asciiLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// schemeChar is [A-Za-z0-9+.-].
func schemeChar(c byte) bool {
	return asciiLetter(c) || '0' <= c && c <= '9' || c == '+' || c == '.' || c == '-'
}

// urlChar is [^\s"'<>\x60] (RE2's \s: tab, line feed, form feed, carriage
// return, space), byte by byte: every byte it leaves out is ASCII.
func urlChar(c byte) bool {
	switch c {
	case '\t', '\n', '\f', '\r', ' ', '"', '\'', '<', '>', '`':
		return false
	}
	return true
}
