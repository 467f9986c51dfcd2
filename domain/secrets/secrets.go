// Package secrets finds secrets in untrusted JSON (executor proof and
// result callbacks) so that Baton can refuse them with a 422 naming the rule
// and the RFC 6901 JSON pointer of the value, never the secret.
//
// # Rules
//
// The maintained rule set is gitleaks' default configuration
// (github.com/zricethezav/gitleaks/v8, the gitleaks.toml embedded in its
// config package) run through gitleaks' own detector (detect.Detector), so
// every rule gets the keyword prefilter, entropy threshold, allowlists,
// stop words and "generic rule loses to a specific one" filter exactly as the
// gitleaks CLI applies them. The detector is set up for untrusted input:
//
//   - "gitleaks:allow" markers are ignored (IgnoreGitleaksAllow), so a sender
//     cannot switch the scan off by writing the marker next to its secret;
//   - encoded text (percent, \u escapes, hex, base64) is decoded and scanned
//     again up to DecodeDepth levels, the CLI's default, so a base64'd
//     credential is still found (a string in which the decoder could find
//     nothing to decode skips those passes: same findings, a third the cost);
//   - gitleaks' global logger, which logs matched secrets at debug and trace
//     level, is replaced by a no-op logger once, on the first New;
//   - the embedded configuration is parsed once per process
//     (detect.NewDetectorDefaultConfig goes through viper's global instance)
//     and shared, read-only, by every Scanner's detector.
//
// Baton adds rules of its own, each with a cheap literal prefilter:
//
//   - baton-api-key: "btn_sk_" followed by 40 characters of [A-Za-z0-9];
//   - url-credentials: a password in a URL's userinfo (scheme://user:pass@host);
//   - url-query-credential: a query (or fragment) parameter named like a
//     credential (token, access_token, api_key, apikey, key, secret, password,
//     passwd, pwd, auth, signature, sig, X-Amz-Signature, client_secret, ...)
//     whose value is at least 8 characters, mixes two of lower case, upper
//     case and digits (or is 24 characters or longer), holds no space and is
//     no placeholder;
//   - private-key: any PEM private key armour line (RSA, EC, DSA, OPENSSH,
//     ENCRYPTED, PGP ... PRIVATE KEY[ BLOCK]), even without a body. gitleaks
//     has a rule of the same id that needs a 64-character body; the two are
//     reported as one.
//
// Passwords and parameter values that are obviously placeholders or already
// masked (***, xxxx, ${VAR}, $VAR, <password>, {{ .Token }}, %s, REDACTED,
// and Redact's own [REDACTED:<rule-id>] markers) are not findings.
//
// A string value yields at most one finding per rule, ordered by where the
// match starts in the value; values are visited in document order.
//
// A value with anything but ASCII is scanned a second time folded: format
// characters and combining marks removed, NFKC, and every other character
// whose Unicode confusable skeleton (UTS #39, through
// github.com/mtibben/confusables, Unicode 13.0 data) is ASCII replaced by it,
// so Cyrillic р reads as p. Then a document's strings are scanned once more
// joined, folded and without line breaks, those of one field across an
// array's elements side by side (joined.go): a token wrapped over two lines
// or cut across two artifacts is found, named by the pointer of the string
// where its match starts. That pass does not decode encoded text.
//
// Callers that keep the text rather than refuse it (context packets) use
// Matches, which places every occurrence of every rule, and Redact, which
// replaces each with [REDACTED:<rule-id>] (see redact.go).
//
// Cost: about 0.15 ms for a typical 2 KB callback body (BenchmarkScanJSON;
// the joined pass adds about a quarter to it); text dense with rule keywords
// runs at roughly 1 MB/s, so callers bound the body size.
//
// The package does no I/O: the rules come from the configuration compiled
// into the gitleaks module. gitleaks' detect package does link in code for
// its file, git and archive sources; none of it runs here.
package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/domain/secrets/gitleaks"
)

// Finding is one secret found. It never holds the secret itself.
type Finding struct {
	RuleID      string `json:"ruleId"`
	Pointer     string `json:"pointer"` // RFC 6901 pointer of the string value, e.g. /proof/artifacts/0/text
	Description string `json:"description,omitempty"`
}

// Rule ids of Baton's own rules.
const (
	RuleBatonAPIKey         = "baton-api-key"
	RuleURLCredentials      = "url-credentials"
	RuleURLQueryCredential  = "url-query-credential"
	RulePrivateKey          = "private-key"
	DecodeDepth             = 5     // decoding passes over encoded text, as the gitleaks CLI's default
	MaxDepth                = 10000 // JSON nesting limit, as encoding/json's
	minQueryCredentialChars = 8
)

// Scanner is safe for concurrent use; build it once.
type Scanner struct {
	decoding *gitleaks.Detector // decodes encoded text, DecodeDepth levels
	plain    *gitleaks.Detector // the same rules, no decoding passes
}

// New builds a scanner with gitleaks' default rules and Baton's own.
func New() (*Scanner, error) {
	d, err := gitleaks.New(DecodeDepth)
	if err != nil {
		return nil, fmt.Errorf("secrets: gitleaks default rules: %w", err)
	}
	p, err := gitleaks.New(0)
	if err != nil {
		return nil, fmt.Errorf("secrets: gitleaks default rules: %w", err)
	}
	return &Scanner{decoding: d, plain: p}, nil
}

// newOwn is New on rules of its own (gitleaks.NewOwn), dropped with it.
func newOwn() (*Scanner, error) {
	ds, err := gitleaks.NewOwn(DecodeDepth, 0)
	if err != nil {
		return nil, fmt.Errorf("secrets: gitleaks default rules: %w", err)
	}
	return &Scanner{decoding: ds[0], plain: ds[1]}, nil
}

// mayBeEncoded reports whether gitleaks' decoder could find an encoded
// segment in v: a superset of its patterns (percent: '%'; unicode: "U+" or
// a backslash; hex and base64: a run of 16 or more of [A-Za-z0-9_/+-]).
// Where it cannot, the decoding passes would find nothing, so the cheaper
// detector gives the same findings; the decoder's regular expression is most
// of the cost of scanning ordinary prose.
func mayBeEncoded(v string) bool {
	run := 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '%', c == '\\', c == '+' && i > 0 && v[i-1] == 'U':
			return true
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '/', c == '+', c == '-':
			if run++; run >= 16 {
				return true
			}
		default:
			run = 0
		}
	}
	return false
}

var (
	batonKeyRE   = regexp.MustCompile(`btn_sk_[A-Za-z0-9]{40}`)
	privateKeyRE = regexp.MustCompile(`-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----`)
	// userinfoRE: scheme://user:password@ where neither part holds a
	// character RFC 3986 forbids there unescaped.
	userinfoRE = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://([^\s/?#@:]*):([^\s/?#@]+)@`)
	urlRE      = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>\x60]+`)
	// placeholderRE matches values that stand for a secret without being one.
	placeholderRE = regexp.MustCompile(`(?i)^(?:\*+|x+|\.+|_+|-+|#+|•+|\$\{[^}]*\}|(?-i:\$\(?[A-Z_][A-Z0-9_]*\)?)|%[sv]|<[^<>]*>|\[[^\[\]]*\]|\{\{[^}]*\}\}|\{[A-Za-z_][A-Za-z0-9_]*\}|:[a-z_]+|redacted|masked|hidden|removed|changeme|placeholder|password|secret|token|pass|pwd|\[?filtered\]?|\[redacted:[a-z0-9_.-]*\]?)$`)
)

// credentialParams are query parameters whose values are credentials,
// lower case.
var credentialParams = map[string]bool{
	"token": true, "access_token": true, "refresh_token": true, "id_token": true, "auth_token": true,
	"api_key": true, "apikey": true, "api-key": true, "key": true, "private_token": true,
	"secret": true, "client_secret": true, "password": true, "passwd": true, "pwd": true,
	"auth": true, "signature": true, "sig": true,
	"x-amz-signature": true, "x-amz-security-token": true, "x-goog-signature": true, "x-goog-credential": true,
	"sessionid": true, "session_id": true,
}

// candidate is a finding with where it starts in the value and the matched
// text (kept only to compare with other matches, never returned).
type candidate struct {
	at    int
	rule  string
	desc  string
	match string
}

// ScanString scans one string value; pointer names it in the findings. A
// value with anything but ASCII is scanned a second time folded (see
// fold): invisible format characters and combining marks removed,
// compatibility forms and look-alike letters replaced by the ASCII they
// imitate, so that a secret cannot hide behind them.
func (s *Scanner) ScanString(pointer, value string) []Finding {
	return s.scanFolded(pointer, value, fold(value))
}

// scanFolded is ScanString with value's fold already made.
func (s *Scanner) scanFolded(pointer, value, folded string) []Finding {
	out := s.scanString(pointer, value)
	if folded != value {
		for _, f := range s.scanString(pointer, folded) {
			if !slices.ContainsFunc(out, func(g Finding) bool { return g.RuleID == f.RuleID }) {
				out = append(out, f)
			}
		}
	}
	return out
}

func (s *Scanner) scanString(pointer, value string) []Finding {
	cands := s.candidates(value)
	if len(cands) == 0 {
		return nil
	}
	out := make([]Finding, 0, len(cands))
	seen := make(map[string]bool, len(cands))
	for _, c := range cands {
		if seen[c.rule] {
			continue
		}
		seen[c.rule] = true
		out = append(out, Finding{RuleID: c.rule, Pointer: pointer, Description: c.desc})
	}
	return out
}

// candidates finds the secrets in value: every gitleaks finding and the
// first match of each of Baton's rules, ordered by where they start, then
// by rule id. Encoded text is decoded and scanned again when it may hold
// some (mayBeEncoded).
func (s *Scanner) candidates(value string) []candidate {
	return s.candidatesWith(s.detectorFor(value), value)
}

// detectorFor is the detector value needs: the decoding one only when an
// encoded segment may be in it (mayBeEncoded).
func (s *Scanner) detectorFor(value string) *gitleaks.Detector {
	if mayBeEncoded(value) {
		return s.decoding
	}
	return s.plain
}

// candidatesWith is candidates with gitleaks' rules run by d.
func (s *Scanner) candidatesWith(d *gitleaks.Detector, value string) []candidate {
	var cands []candidate
	// Literal prefilters keep the regular expressions off ordinary text.
	if strings.Contains(value, "PRIVATE KEY") {
		if loc := privateKeyRE.FindStringIndex(value); loc != nil {
			cands = append(cands, candidate{loc[0], RulePrivateKey, "PEM private key block", value[loc[0]:loc[1]]})
		}
	}
	if strings.Contains(value, "btn_sk_") {
		if loc := batonKeyRE.FindStringIndex(value); loc != nil {
			cands = append(cands, candidate{loc[0], RuleBatonAPIKey, "Baton API key", value[loc[0]:loc[1]]})
		}
	}
	if strings.Contains(value, "://") {
		if strings.Contains(value, "@") {
			for _, m := range userinfoRE.FindAllStringSubmatchIndex(value, -1) {
				if pass := value[m[4]:m[5]]; !placeholder(pass) {
					cands = append(cands, candidate{m[4], RuleURLCredentials, "password in a URL's userinfo", pass})
					break
				}
			}
		}
		if strings.ContainsAny(value, "?#") {
			if c, ok := queryCredential(value); ok {
				cands = append(cands, c)
			}
		}
	}
	ours := len(cands)
	for _, f := range d.Detect(value) {
		if generic(f.RuleID) && coveredBy(f.Secret, cands[:ours]) {
			continue // as gitleaks does: a specific rule beats a generic one
		}
		cands = append(cands, candidate{offset(value, f.StartLine, f.StartColumn), f.RuleID, f.Description, f.Secret})
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].at != cands[j].at {
			return cands[i].at < cands[j].at
		}
		return cands[i].rule < cands[j].rule
	})
	return cands
}

func generic(ruleID string) bool { return strings.Contains(strings.ToLower(ruleID), "generic") }

func coveredBy(secret string, cands []candidate) bool {
	for _, c := range cands {
		if strings.Contains(c.match, secret) {
			return true
		}
	}
	return false
}

// offset turns a gitleaks finding's 0-based line and 1-based column back
// into a byte offset of value (gitleaks counts a column after the first line
// from the newline that ends the line before).
func offset(value string, line, col int) int {
	at := col - 1
	if line > 0 {
		n, i := 0, -1
		for n < line {
			j := strings.IndexByte(value[i+1:], '\n')
			if j < 0 {
				break
			}
			i += j + 1
			n++
		}
		at += max(i, 0)
	}
	return min(max(at, 0), len(value))
}

// placeholder reports whether v stands for a secret without being one.
func placeholder(v string) bool {
	if u, err := url.PathUnescape(v); err == nil {
		v = u
	}
	return placeholderRE.MatchString(strings.TrimSpace(v))
}

// queryCredential finds the first query or fragment parameter, in any URL of
// value, that is named like a credential and holds a credential-like value.
func queryCredential(value string) (candidate, bool) {
	for _, loc := range urlSpans(value) {
		raw := value[loc[0]:loc[1]]
		q := strings.IndexAny(raw, "?#")
		if q < 0 {
			continue
		}
		at := loc[0] + q + 1
		for _, part := range strings.FieldsFunc(raw[q+1:], func(r rune) bool { return r == '&' || r == ';' || r == '#' || r == '?' }) {
			k, v, ok := strings.Cut(part, "=")
			if !ok {
				continue
			}
			if uk, err := url.QueryUnescape(k); err == nil {
				k = uk
			}
			if !credentialParams[strings.ToLower(k)] {
				continue
			}
			v = strings.TrimRight(v, ".,;:)]}'\"")
			if uv, err := url.PathUnescape(v); err == nil { // not QueryUnescape: keep '+' of base64
				v = uv
			}
			if credentialLike(v) {
				i := strings.Index(value[at:], part)
				return candidate{at + max(i, 0), RuleURLQueryCredential, "credential in URL query parameter " + strings.ToLower(k), v}, true
			}
		}
	}
	return candidate{}, false
}

// credentialLike: long enough, not a placeholder, no prose, and either
// mixing letters and digits or letter cases, or long (so ?key=deployment
// and ?key=my-feature-branch are not findings, ?key=Ab12... is).
func credentialLike(v string) bool {
	if len(v) < minQueryCredentialChars || strings.ContainsAny(v, " \t\n") || placeholder(v) {
		return false
	}
	if len(v) >= 24 {
		return true
	}
	var lower, upper, digit int
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z':
			lower = 1
		case r >= 'A' && r <= 'Z':
			upper = 1
		case r >= '0' && r <= '9':
			digit = 1
		}
	}
	return lower+upper+digit >= 2
}

// Scan is ScanJSON in the domain's terms: rule and pointer of each finding.
func (s *Scanner) Scan(doc []byte, roots ...string) ([]domain.SecretFinding, error) {
	found, err := s.ScanJSON(doc, roots...)
	if err != nil {
		return nil, err
	}
	out := make([]domain.SecretFinding, len(found))
	for i, f := range found {
		out[i] = domain.SecretFinding{RuleID: f.RuleID, Pointer: f.Pointer}
	}
	return out, nil
}

// ScanJSON walks every string value of a JSON document, in document order,
// and reports findings. With roots, only values at or under those pointer
// prefixes are scanned (e.g. "/proof", "/result"). Then the strings are
// scanned once more joined end to end, folded and without line breaks, the
// same field of every element of an array side by side (see joined); what
// only that pass finds follows, named by the pointer of the string its
// match starts in. A document that is not exactly one JSON value is an
// error; the error never quotes the document.
func (s *Scanner) ScanJSON(doc []byte, roots ...string) ([]Finding, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out []Finding
	var all joined
	w := walker{dec: dec, visit: func(ptr, shape, v string) {
		if under(ptr, roots) {
			f := fold(v)
			out = append(out, s.scanFolded(ptr, v, f)...)
			all.add(ptr, shape, f)
		}
	}}
	if err := w.walk("", "", 0); err != nil {
		return nil, invalid(dec, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("secrets: invalid JSON: data after the document at byte %d", dec.InputOffset())
	}
	return s.scanJoined(&all, out), nil
}

// invalid describes a JSON error by offset only, so that no part of the
// document (which may hold a secret) reaches an error message or a log.
func invalid(dec *json.Decoder, err error) error {
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("secrets: invalid JSON: syntax error at byte %d", syn.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("secrets: invalid JSON: unexpected end of input")
	case errors.Is(err, errTooDeep):
		return fmt.Errorf("secrets: invalid JSON: nested deeper than %d at byte %d", MaxDepth, dec.InputOffset())
	default:
		return fmt.Errorf("secrets: invalid JSON at byte %d", dec.InputOffset())
	}
}

var errTooDeep = errors.New("too deep")

func under(ptr string, roots []string) bool {
	if len(roots) == 0 {
		return true
	}
	for _, r := range roots {
		if strings.HasPrefix(ptr, r) && (len(ptr) == len(r) || ptr[len(r)] == '/') {
			return true
		}
	}
	return false
}

type walker struct {
	dec   *json.Decoder
	visit func(ptr, shape, v string)
}

// walk reads the next JSON value, calling visit for every string in it
// with its pointer and its shape: the pointer with "*" for every array
// index, the same for a field in every element of an array.
func (w *walker) walk(ptr, shape string, depth int) error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= MaxDepth {
			return errTooDeep
		}
		switch t {
		case '{':
			for w.dec.More() {
				kt, err := w.dec.Token()
				if err != nil {
					return err
				}
				key, ok := kt.(string)
				if !ok {
					return errors.New("object key is not a string")
				}
				if err := w.walk(ptr+"/"+domain.PointerToken(key), shape+"/"+domain.PointerToken(key), depth+1); err != nil {
					return err
				}
			}
		case '[':
			for i := 0; w.dec.More(); i++ {
				if err := w.walk(ptr+"/"+strconv.Itoa(i), shape+"/*", depth+1); err != nil {
					return err
				}
			}
		default:
			return errors.New("unexpected delimiter")
		}
		_, err := w.dec.Token() // the closing '}' or ']'
		return err
	case string:
		w.visit(ptr, shape, t)
	}
	return nil
}

// Lazy is a Scanner built on first use: gitleaks' compiled rules (about
// 6 MB) are most of an idle server's heap, and a server that only proxies
// model calls never scans. The first scan pays the build (about 40 ms);
// later ones share it. Safe for concurrent use.
type Lazy struct {
	once  sync.Once
	s     *Scanner
	err   error
	built atomic.Bool

	// A scanner lent to rare checks while none is kept (ScanTextRare).
	mu    sync.Mutex
	lent  *Scanner
	loans int
}

// NewLazy returns a scanner that builds itself on first use.
func NewLazy() *Lazy { return &Lazy{} }

// Get builds the scanner if it is not built yet.
func (l *Lazy) Get() (*Scanner, error) {
	l.once.Do(func() {
		l.s, l.err = New()
		l.built.Store(true)
		// Parsing the rules leaves about 25 MB of garbage, several times
		// what the scanner keeps, and Baton's heap floor defers collecting
		// it; building is once a process, so hand it back now, off the
		// caller's path.
		go debug.FreeOSMemory()
	})
	return l.s, l.err
}

// ScanTextRare is ScanText for a check too rare to keep the scanner for
// (a key's label): with no scanner built, and no rules loaded in the
// process, it builds one for this check and those that overlap it, and
// drops it, with the memory it took, when they end. A server that only
// proxies model calls then keeps no scanner for the keys it makes; the
// check costs the build (about 40 ms) each time.
func (l *Lazy) ScanTextRare(v string) (ruleID string, found bool) {
	if isUUID(v) || l.built.Load() || gitleaks.Loaded() {
		return l.ScanText(v)
	}
	s, err := l.borrow()
	if err != nil {
		return "scanner_unavailable", true
	}
	defer l.giveBack()
	return s.ScanText(v)
}

func (l *Lazy) borrow() (*Scanner, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lent == nil {
		s, err := newOwn()
		if err != nil {
			return nil, err
		}
		l.lent = s
	}
	l.loans++
	return l.lent, nil
}

func (l *Lazy) giveBack() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loans--; l.loans == 0 {
		l.lent = nil
		go debug.FreeOSMemory() // the rules and the build's garbage
	}
}

// Scan is Scanner.Scan.
func (l *Lazy) Scan(doc []byte, roots ...string) ([]domain.SecretFinding, error) {
	s, err := l.Get()
	if err != nil {
		return nil, err
	}
	return s.Scan(doc, roots...)
}

// Redact is Scanner.Redact. Should the rules fail to build, it fails
// closed: the whole text is replaced, so nothing unscanned gets through.
func (l *Lazy) Redact(value string) (string, []Finding) {
	s, err := l.Get()
	if err != nil {
		if value == "" {
			return value, nil
		}
		return RedactionMarker("scanner_unavailable"), nil
	}
	return s.Redact(value)
}
