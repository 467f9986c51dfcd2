package secrets

import (
	"sort"
	"strings"
)

// joined gathers a document's scanned strings for the pass over the whole
// document: each folded (see fold) and without line breaks, those of one
// shape (the same field in every element of an array,
// /proof/artifacts/*/text) end to end in document order, the shapes in the
// order they first appear, a line apart. A secret cut by a line break
// inside one string, or cut in two across two artifacts (with their "type"
// fields between them in the document), is whole there. A shape with one
// string and no line break in it is left out: that string was scanned as
// it is.
type joined struct {
	groups map[string]int // shape -> index in strs
	strs   [][]joinedString
}

type joinedString struct {
	ptr, text string
	broken    bool // holds a line break
}

// isLineBreak reports whether r ends a line: the characters Unicode calls
// mandatory breaks.
func isLineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}

// add takes a string, given folded.
func (j *joined) add(ptr, shape, folded string) {
	if j.groups == nil {
		j.groups = make(map[string]int)
	}
	g, ok := j.groups[shape]
	if !ok {
		g = len(j.strs)
		j.groups[shape] = g
		j.strs = append(j.strs, nil)
	}
	j.strs[g] = append(j.strs[g], joinedString{ptr, folded, strings.IndexFunc(folded, isLineBreak) >= 0})
}

// text is the joined text, with where each string ends in it and its
// pointer; "" when it would hold nothing but strings scanned as they are.
func (j *joined) text() (string, []int, []string) {
	var b strings.Builder
	var ends []int
	var ptrs []string
	for _, g := range j.strs {
		if len(g) == 1 && !g[0].broken {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n') // shapes are not glued: the rules' word boundaries hold there
		}
		for _, s := range g {
			if s.broken {
				for _, r := range s.text {
					if !isLineBreak(r) {
						b.WriteRune(r)
					}
				}
			} else {
				b.WriteString(s.text)
			}
			ends, ptrs = append(ends, b.Len()), append(ptrs, s.ptr)
		}
	}
	return b.String(), ends, ptrs
}

// scanJoined adds to found what the joined text holds and the strings
// scanned one by one did not show: each finding is named by its rule and
// the pointer of the string its match starts in, once. The text is not
// decoded (base64, hex, ...) as the strings were: that pass, over the
// whole document, would cost more than the rest of the scan together.
func (s *Scanner) scanJoined(j *joined, found []Finding) []Finding {
	text, ends, ptrs := j.text()
	if text == "" {
		return found
	}
	for _, c := range s.candidatesWith(s.plain, text) {
		i := sort.SearchInts(ends, c.at+1) // the first string ending after the match's start
		ptr := ptrs[min(i, len(ptrs)-1)]
		dup := false
		for _, f := range found {
			if f.RuleID == c.rule && f.Pointer == ptr {
				dup = true
				break
			}
		}
		if !dup {
			found = append(found, Finding{RuleID: c.rule, Pointer: ptr, Description: c.desc})
		}
	}
	return found
}
