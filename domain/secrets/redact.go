package secrets

import (
	"net/url"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Match is one secret found in a string: the rule and the byte range
// [Start, End) of the secret in the string. It never holds the secret.
//
// The range covers what must go for the secret to be gone: the secret
// group of a gitleaks rule (not the "api_key =" around it), the password
// of a URL's userinfo, the value of a credential query parameter, a Baton
// key, a whole PEM private key block (armour and body, up to its END line
// or, without one, the first blank line), and for a secret gitleaks found
// only after decoding (base64, hex, percent, \u escapes) the encoded text
// it came from.
type Match struct {
	RuleID      string
	Description string
	Start, End  int
}

// MaxRedactPasses bounds how often Redact rescans its own output. A value
// the scanner still flags after that many passes is replaced whole.
const MaxRedactPasses = 3

// RedactionMarker is what Redact puts where a secret of rule ruleID was.
func RedactionMarker(ruleID string) string { return "[REDACTED:" + ruleID + "]" }

var privateKeyEndRE = regexp.MustCompile(`-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----`)

// Matches finds every secret in value with where it is: unlike ScanString,
// every occurrence of each rule, so that a caller can remove them all.
// Matches may overlap (a gitleaks rule inside a PEM block, say); they are
// ordered by start, then rule id.
func (s *Scanner) Matches(value string) []Match {
	var ms []Match
	if strings.Contains(value, "PRIVATE KEY") {
		for _, loc := range privateKeyRE.FindAllStringIndex(value, -1) {
			ms = append(ms, Match{RulePrivateKey, "PEM private key block", loc[0], pemBlockEnd(value, loc[1])})
		}
	}
	if strings.Contains(value, "btn_sk_") {
		for _, loc := range batonKeyRE.FindAllStringIndex(value, -1) {
			ms = append(ms, Match{RuleBatonAPIKey, "Baton API key", loc[0], loc[1]})
		}
	}
	if strings.Contains(value, "://") {
		if strings.Contains(value, "@") {
			for _, m := range userinfoRE.FindAllStringSubmatchIndex(value, -1) {
				if !placeholder(value[m[4]:m[5]]) {
					ms = append(ms, Match{RuleURLCredentials, "password in a URL's userinfo", m[4], m[5]})
				}
			}
		}
		if strings.ContainsAny(value, "?#") {
			ms = append(ms, queryCredentialMatches(value)...)
		}
	}
	ours := make([]candidate, len(ms))
	for i, m := range ms {
		ours[i] = candidate{at: m.Start, rule: m.RuleID, match: value[m.Start:m.End]}
	}
	for _, f := range s.detectorFor(value).Detect(value) {
		if generic(f.RuleID) && coveredBy(f.Secret, ours) {
			continue // as in ScanString: a specific rule beats a generic one
		}
		start, end := secretSpan(value, f.Secret, offset(value, f.StartLine, f.StartColumn), endOffset(value, f.EndLine, f.EndColumn))
		ms = append(ms, Match{f.RuleID, f.Description, start, end})
	}
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].Start != ms[j].Start {
			return ms[i].Start < ms[j].Start
		}
		return ms[i].RuleID < ms[j].RuleID
	})
	return ms
}

// Redact returns value with every secret replaced by
// RedactionMarker(rule), and one Finding (rule and description; no
// pointer) per replacement, in order. Overlapping matches are replaced
// together under the rule of the one that starts first.
//
// Redact rescans its output: a secret that only shows once another is
// gone (or one whose place the scanner could not tell exactly) is replaced
// in the next pass. If the scanner still flags the text after
// MaxRedactPasses passes, the whole value is replaced by one marker. So
// ScanString finds nothing in what Redact returns, unless the marker itself
// is flagged, which no rule does.
func (s *Scanner) Redact(value string) (string, []Finding) {
	var found []Finding
	for pass := 0; ; pass++ {
		ms := merge(s.Matches(value))
		if len(ms) == 0 {
			return value, found
		}
		if pass == MaxRedactPasses {
			found = append(found, Finding{RuleID: ms[0].RuleID, Description: ms[0].Description})
			return RedactionMarker(ms[0].RuleID), found
		}
		var b strings.Builder
		last := 0
		for _, m := range ms {
			b.WriteString(value[last:m.Start])
			b.WriteString(RedactionMarker(m.RuleID))
			last = m.End
			found = append(found, Finding{RuleID: m.RuleID, Description: m.Description})
		}
		b.WriteString(value[last:])
		value = b.String()
	}
}

// merge joins overlapping matches (sorted by start) into one, named by the
// first; matches that only touch stay apart.
func merge(ms []Match) []Match {
	out := ms[:0:0]
	for _, m := range ms {
		if n := len(out); n > 0 && m.Start < out[n-1].End {
			out[n-1].End = max(out[n-1].End, m.End)
			continue
		}
		out = append(out, m)
	}
	return out
}

// pemBlockEnd is where the PEM block whose BEGIN line ends at from ends:
// after its END line, or without one at the first blank line, or at the end
// of value.
func pemBlockEnd(value string, from int) int {
	if loc := privateKeyEndRE.FindStringIndex(value[from:]); loc != nil {
		return from + loc[1]
	}
	if i := strings.Index(value[from:], "\n\n"); i >= 0 {
		return from + i
	}
	return len(value)
}

// endOffset turns a gitleaks finding's 0-based end line and column back
// into a byte offset of value, as offset does for the start; -1 when the
// place is not in value.
func endOffset(value string, line, col int) int {
	base, from := 0, 0
	for n := 0; n < line; n++ {
		j := strings.IndexByte(value[from:], '\n')
		if j < 0 {
			return -1
		}
		base = from + j // the newline that ends the line before
		from = base + 1
	}
	if end := base + col; col > 0 && end <= len(value) {
		return end
	}
	return -1
}

// secretSpan places a gitleaks secret in value: the secret's own text
// inside the match [at, end) when it is there; the match itself when the
// secret was decoded from it (its text is then not in value); else the
// word at at.
func secretSpan(value, secret string, at, end int) (int, int) {
	window := value[at:]
	if end > at {
		window = value[at:end]
	}
	if secret != "" {
		if i := strings.Index(window, secret); i >= 0 {
			return at + i, at + i + len(secret)
		}
	}
	if end > at {
		return at, end
	}
	w := strings.IndexFunc(window, unicode.IsSpace)
	if w <= 0 {
		w = len(window)
	}
	return at, at + w
}

// queryCredentialMatches finds every query or fragment parameter, in every
// URL of value, that queryCredential would report, with the place of its
// raw value.
func queryCredentialMatches(value string) []Match {
	var out []Match
	for _, loc := range urlSpans(value) {
		raw := value[loc[0]:loc[1]]
		q := strings.IndexAny(raw, "?#")
		if q < 0 {
			continue
		}
		for i := q + 1; i < len(raw); {
			j := i + strings.IndexAny(raw[i:], "&;#?")
			if j < i {
				j = len(raw)
			}
			part := raw[i:j]
			if k, v, ok := strings.Cut(part, "="); ok {
				if uk, err := url.QueryUnescape(k); err == nil {
					k = uk
				}
				if credentialParams[strings.ToLower(k)] {
					v = strings.TrimRight(v, ".,;:)]}'\"")
					uv := v
					if u, err := url.PathUnescape(v); err == nil {
						uv = u
					}
					if credentialLike(uv) {
						start := loc[0] + i + strings.IndexByte(part, '=') + 1
						out = append(out, Match{RuleURLQueryCredential, "credential in URL query parameter " + strings.ToLower(k), start, start + len(v)})
					}
				}
			}
			i = j + 1
		}
	}
	return out
}
