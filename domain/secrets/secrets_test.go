package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/zricethezav/gitleaks/v8/detect/codec"

	"github.com/batonhq/baton/domain"
)

// Fake secrets are built at run time, from a seeded generator, so that this
// file holds no literal a secret scanner would flag, while the values still
// have the entropy gitleaks' rules ask for.

const (
	alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b32    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	digits = "0123456789"
	b64    = alnum + "+/"
)

func randomFrom(rng *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

func pemBlock(rng *rand.Rand, kind string) string {
	var body strings.Builder
	for range 6 {
		body.WriteString(randomFrom(rng, b64, 64) + "\n")
	}
	label := kind + "PRIV" + "ATE KEY"
	return "-----BEGIN " + label + "-----\n" + body.String() + "-----END " + label + "-----"
}

// fake holds one fake secret: the whole token and the part of it that must
// never leave the scanner.
type fake struct{ token, core string }

var (
	fakesOnce sync.Once
	fakeSet   map[string]fake
)

func fakes() map[string]fake {
	fakesOnce.Do(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		mk := func(prefix, core, suffix string) fake { return fake{prefix + core + suffix, core} }
		fakeSet = map[string]fake{
			"aws":      mk("AK"+"IA", randomFrom(rng, b32, 16), ""),
			"github":   mk("gh"+"p_", randomFrom(rng, alnum, 36), ""),
			"slack":    mk("xo"+"xb-", randomFrom(rng, digits, 12)+"-"+randomFrom(rng, digits, 13)+"-"+randomFrom(rng, alnum, 24), ""),
			"stripe":   mk("sk"+"_live_", randomFrom(rng, alnum, 32), ""),
			"openai":   mk("sk"+"-", randomFrom(rng, alnum, 20)+"T3Blbk"+"FJ"+randomFrom(rng, alnum, 20), ""),
			"baton":    mk("btn"+"_sk_", randomFrom(rng, alnum, 40), ""),
			"password": mk("", randomFrom(rng, alnum, 12)+"-"+randomFrom(rng, alnum, 6), ""),
			"generic":  mk("", randomFrom(rng, alnum, 28), ""),
			"rsa":      {token: pemBlock(rng, "RSA ")},
			"openssh":  {token: pemBlock(rng, "OPENSSH ")},
			"ec":       {token: pemBlock(rng, "EC ")},
			"pkcs8":    {token: pemBlock(rng, "")},
			"pgp":      {token: "-----BEGIN PGP PRIV" + "ATE KEY BLOCK-----\n\n" + randomFrom(rng, b64, 64) + "\n-----END PGP PRIVATE KEY BLOCK-----"},
		}
		for k, f := range fakeSet {
			if f.core == "" { // PEM: the body is what must not leak
				f.core = strings.Split(f.token, "\n")[len(strings.Split(f.token, "\n"))-2]
				fakeSet[k] = f
			}
		}
	})
	return fakeSet
}

func percentEncode(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		fmt.Fprintf(&b, "%%%02X", v[i])
	}
	return b.String()
}

func newScanner(t testing.TB) *Scanner {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// assertNoLeak fails if text holds any 12-byte window of any fake secret.
func assertNoLeak(t testing.TB, what, text string) {
	t.Helper()
	for name, f := range fakes() {
		for i := 0; i+12 <= len(f.core); i++ {
			if strings.Contains(text, f.core[i:i+12]) {
				t.Fatalf("%s holds part of the %s secret: %s", what, name, text)
			}
		}
	}
}

func rulesOf(found []Finding) []string {
	var out []string
	for _, f := range found {
		out = append(out, f.RuleID)
	}
	return out
}

func TestScanStringFindsSecrets(t *testing.T) {
	s := newScanner(t)
	f := fakes()
	tests := []struct {
		name  string
		value string
		rule  string // a rule id that must be among the findings
	}{
		{"aws access key id", "deployed with key " + f["aws"].token + " to us-east-1", "aws-access-token"},
		{"aws access key id in json-ish text", `{"AccessKeyId": "` + f["aws"].token + `"}`, "aws-access-token"},
		{"github token", "export GITHUB_TOKEN=" + f["github"].token, "github-pat"},
		{"slack bot token", "notify via " + f["slack"].token, "slack-bot-token"},
		{"stripe secret key", "STRIPE_KEY=" + f["stripe"].token, "stripe-access-token"},
		{"openai key", "OPENAI_API_KEY=" + f["openai"].token, "openai-api-key"},
		{"generic assignment with entropy", "db_password = " + f["generic"].core, "generic-api-key"},
		{"baton key", "used " + f["baton"].token + " for the call", "baton-api-key"},
		{"baton key alone", f["baton"].token, "baton-api-key"},
		{"url userinfo", "cloned https://deploy:" + f["password"].core + "@git.example.com/repo.git", "url-credentials"},
		{"url userinfo, no user", "redis://:" + f["password"].core + "@cache.internal:6379/0", "url-credentials"},
		{"database url", "DATABASE_URL=postgres://app:" + f["password"].core + "@db.internal:5432/app?sslmode=require", "url-credentials"},
		{"url query token", "see https://files.example.com/report.pdf?access_token=" + f["password"].core + "&x=1", "url-query-credential"},
		{"url query api key, upper case name", "GET https://api.example.com/v1/items?page=2&API_KEY=" + f["password"].core, "url-query-credential"},
		{"url query short name sig", "https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sig=" + f["password"].core + "%3D", "url-query-credential"},
		{"presigned s3 url", "https://bucket.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=" + strings.ToLower(f["generic"].core) + "0123", "url-query-credential"},
		{"userinfo password that starts with $", "https://ci:$" + strings.ToLower(f["password"].core) + "@git.example.com/", "url-credentials"},
		{"sas signature with a raw plus", "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig=" + f["password"].core[:9] + "+" + f["password"].core[9:] + "=", "url-query-credential"},
		{"oauth token in fragment", "redirected to https://app.example.com/cb#access_token=" + f["password"].core + "&token_type=bearer", "url-query-credential"},
		{"client secret, percent-encoded name", "https://auth.example.com/token?client%5Fsecret=" + f["password"].core, "url-query-credential"},
		{"rsa private key", f["rsa"].token, "private-key"},
		{"openssh private key", "key file:\n" + f["openssh"].token + "\n", "private-key"},
		{"ec private key", f["ec"].token, "private-key"},
		{"pkcs8 private key", f["pkcs8"].token, "private-key"},
		{"pgp private key block", f["pgp"].token, "private-key"},
		{"private key header only", "-----BEGIN RSA PRIV" + "ATE KEY-----", "private-key"},
		{"gitleaks:allow does not switch scanning off", "GITHUB_TOKEN=" + f["github"].token + " # gitleaks" + ":allow", "github-pat"},
		{"base64 of a token is decoded", "config blob: " + base64.StdEncoding.EncodeToString([]byte("token: "+f["github"].token)), "github-pat"},
		{"percent-encoded token is decoded", "q=" + percentEncode(f["github"].token), "github-pat"},
		{"hex of a token is decoded", "dump " + hex.EncodeToString([]byte(f["github"].token)), "github-pat"},
		{"zero-width space inside a token", "GITHUB_TOKEN=" + f["github"].token[:10] + "\u200b" + f["github"].token[10:], "github-pat"},
		{"soft hyphen inside a baton key", "used " + f["baton"].token[:12] + "\u00ad" + f["baton"].token[12:], "baton-api-key"},
		{"full-width token", "key " + fullWidth(f["aws"].token), "aws-access-token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := s.ScanString("/x", tc.value)
			for _, g := range got {
				if g.Pointer != "/x" {
					t.Fatalf("pointer %q", g.Pointer)
				}
			}
			if !slices.Contains(rulesOf(got), tc.rule) {
				t.Fatalf("findings %v, want %s", rulesOf(got), tc.rule)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			assertNoLeak(t, "findings", string(b))
		})
	}
}

func TestScanStringIgnoresOrdinaryProof(t *testing.T) {
	s := newScanner(t)
	tests := []struct{ name, value string }{
		{"plain url", "screenshot at https://files.example.com/shots/1.png"},
		{"url with ordinary query", "https://ci.example.com/runs/1284?page=2&tab=logs&sort=desc"},
		{"url with port and path", "health check https://staging.example.com:8443/healthz returned 200"},
		{"ssh clone url with user only", "cloned ssh://git@github.com/acme/api.git and git@github.com:acme/web.git"},
		{"url with at-sign in path", "https://registry.npmjs.org/@acme/ui/-/ui-1.2.3.tgz"},
		{"email address", "notified ops@example.com and on-call@example.org"},
		{"uuid", "handoff 0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b finished"},
		{"short commit in prose", "deployed commit 3f9a2c1 to staging"},
		{"full commit sha in prose", "deployed commit 3f9a2c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f to production"},
		{"sha-256 labelled as a hash", "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
		{"sha-256 artifact hash", "SHA-256 hash of build.tar.gz is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"image digest", "pushed ghcr.io/acme/api@sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"},
		{"rfc 3339 timestamps", "started 2026-11-22T10:30:00Z, finished 2026-11-22T10:31:07.123456+01:00"},
		{"unix timestamps", "ts=1763807400 took 1763807467"},
		{"certificate renewal", "certbot renew: success, certificate valid until 2027-02-20"},
		{"words about keys", "the key rotation ran; no key material, token or password is included here"},
		{"public key and certificate armour", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n-----BEGIN CERTIFICATE-----"},
		{"masked userinfo password", "cloned https://deploy:****@git.example.com/repo.git"},
		{"placeholder userinfo password", "DATABASE_URL=postgres://app:${DB_PASSWORD}@db.internal:5432/app"},
		{"angle placeholder in query", "call https://api.example.com/v1?api_key=<your-api-key>"},
		{"empty query token", "https://example.com/reset?token=&step=2"},
		{"short query value", "https://example.com/search?key=abc12"},
		{"word as query value", "https://wiki.example.com/page?key=deployment"},
		{"hyphenated words as query value", "https://wiki.example.com/page?key=my-feature-branch&auth=google"},
		{"variable as query value", "https://api.example.com/v1?token=$API_TOKEN and ?password={{ .Password }}"},
		{"redacted query value", "https://example.com/cb?code=1&access_token=REDACTED"},
		{"baton key prefix without key", "keys look like btn_sk_ followed by 40 characters"},
		{"empty string", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.ScanString("/x", tc.value); len(got) != 0 {
				t.Errorf("false positive %v", got)
			}
		})
	}
}

func TestScanStringOneFindingPerRuleInMatchOrder(t *testing.T) {
	s := newScanner(t)
	f := fakes()
	v := "first " + f["baton"].token + " then https://u:" + f["password"].core + "@h.example/ and " +
		f["github"].token + " and again " + f["baton"].token
	got := rulesOf(s.ScanString("/v", v))
	want := []string{"baton-api-key", "url-credentials", "github-pat"}
	if !slices.Equal(got, want) {
		t.Fatalf("rules %v, want %v", got, want)
	}
	for range 20 { // gitleaks keeps its rules in a map: the order must not depend on it
		if again := rulesOf(s.ScanString("/v", v)); !slices.Equal(again, want) {
			t.Fatalf("rules %v, then %v", want, again)
		}
	}
}

func TestScanJSONPointers(t *testing.T) {
	s := newScanner(t)
	f := fakes()
	doc, err := json.Marshal(map[string]any{
		"executorRunId": "run-1",
		"note":          f["github"].token, // outside the roots below
		"proofs":        f["aws"].token,    // "/proof" is not a prefix of this pointer's segments
		"proof": map[string]any{
			"summary": "ok",
			"artifacts": []any{
				map[string]any{"type": "log", "text": "all good"},
				map[string]any{"type": "log", "text": f["stripe"].token},
				map[string]any{"a/b~c": []any{"x", map[string]any{"deep": []any{[]any{"y", f["baton"].token}}}}},
			},
		},
		"reason": "https://u:" + f["password"].core + "@h.example/x",
	})
	if err != nil {
		t.Fatal(err)
	}
	pointers := func(found []Finding) []string {
		var out []string
		for _, g := range found {
			out = append(out, g.RuleID+"@"+g.Pointer)
		}
		return out
	}
	tests := []struct {
		name  string
		roots []string
		want  []string
	}{
		{"proof only", []string{"/proof"}, []string{
			"stripe-access-token@/proof/artifacts/1/text",
			"baton-api-key@/proof/artifacts/2/a~1b~0c/1/deep/0/1",
		}},
		{"a root that is a string value", []string{"/reason"}, []string{"url-credentials@/reason"}},
		{"a root deep inside", []string{"/proof/artifacts/2"}, []string{"baton-api-key@/proof/artifacts/2/a~1b~0c/1/deep/0/1"}},
		{"an escaped root", []string{"/proof/artifacts/2/a~1b~0c"}, []string{"baton-api-key@/proof/artifacts/2/a~1b~0c/1/deep/0/1"}},
		{"a root that is absent", []string{"/result"}, nil},
		{"all, in document order (keys sorted by json.Marshal)", nil, []string{
			"github-pat@/note",
			"stripe-access-token@/proof/artifacts/1/text",
			"baton-api-key@/proof/artifacts/2/a~1b~0c/1/deep/0/1",
			"aws-access-token@/proofs",
			"url-credentials@/reason",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ScanJSON(doc, tc.roots...)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(pointers(got), tc.want) {
				t.Fatalf("findings %v, want %v", pointers(got), tc.want)
			}
			b, _ := json.Marshal(got)
			assertNoLeak(t, "findings", string(b))
		})
	}

	t.Run("domain findings", func(t *testing.T) {
		got, err := s.Scan(doc, "/proof")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[1].RuleID != "baton-api-key" || got[1].Pointer != "/proof/artifacts/2/a~1b~0c/1/deep/0/1" {
			t.Fatalf("Scan: %+v", got)
		}
	})
}

func TestScanJSONRejectsInvalidJSON(t *testing.T) {
	s := newScanner(t)
	f := fakes()
	tests := []struct{ name, doc string }{
		{"empty", ``},
		{"only whitespace", " \n\t"},
		{"truncated object", `{"a":`},
		{"truncated array", `[1,2`},
		{"truncated string holding a secret", `{"proof":{"text":"` + f["github"].token},
		{"control character inside a secret", `{"t":"` + f["github"].token[:20] + "\x01" + f["github"].token[20:] + `"}`},
		{"bad escape inside a secret", `{"t":"` + f["baton"].token + `\q"}`},
		{"two documents", `{"a":1} {"b":2}`},
		{"trailing garbage after a secret", `{"t":"x"}` + f["aws"].token},
		{"single quotes", `{'a':'b'}`},
		{"non-string key", `{1:2}`},
		{"trailing comma", `{"a":1,}`},
		{"bare word", `proof`},
		{"missing colon", `{"a" "b"}`},
		{"nested too deep", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ScanJSON([]byte(tc.doc))
			if err == nil {
				t.Fatalf("no error; findings %v", got)
			}
			if got != nil {
				t.Fatalf("findings %v with an error", got)
			}
			if !strings.HasPrefix(err.Error(), "secrets: invalid JSON") {
				t.Fatalf("error %q", err)
			}
			assertNoLeak(t, "error", err.Error())
			if _, err := s.Scan([]byte(tc.doc)); err == nil {
				t.Fatal("Scan: no error")
			}
		})
	}
	for _, ok := range []string{`"just a string"`, `42`, `null`, `[]`, `{}`, ` {"a":[true,false,null,1.5e3]} `, strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)} {
		if _, err := s.ScanJSON([]byte(ok)); err != nil {
			t.Errorf("%.40q: %v", ok, err)
		}
	}
}

func TestScannerIsSafeForConcurrentUse(t *testing.T) {
	f := fakes()
	doc, _ := json.Marshal(map[string]any{"proof": map[string]any{"text": []string{"ok", f["github"].token, f["baton"].token}}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			s, err := New() // New may run concurrently too
			if err != nil {
				t.Error(err)
				return
			}
			for range 20 {
				got, err := s.ScanJSON(doc, "/proof")
				if err != nil || len(got) != 2 {
					t.Errorf("got %v, %v", got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestMayBeEncoded(t *testing.T) {
	tests := []struct {
		name string
		v    string
		want bool
	}{
		{"prose", "renewed the certificate on staging-3.example.com at 2026-11-22T10:00:00Z", false},
		{"short hex", "deployed commit 3f9a2c1", false},
		{"15-character run", "abcdefghij/+-_0 and more", false},
		{"16-character run", "abcdefghij/+-_01 and more", true},
		{"sha-256 hex", "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", true},
		{"percent", "100% done", true},
		{"backslash u", `caf\u00e9`, true},
		{"U+", "U+0041 is A", true},
		{"empty", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mayBeEncoded(tc.v); got != tc.want {
				t.Fatalf("mayBeEncoded = %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzMayBeEncoded: where mayBeEncoded says no, gitleaks' decoder finds no
// encoded segment, so skipping the decoding passes loses nothing.
func FuzzMayBeEncoded(f *testing.F) {
	for _, seed := range []string{"plain prose", "%41%42", `\u0041`, "U+0041 ", "0123456789abcdef0123456789abcdef", "aGVsbG8gd29ybGQhIQ==", "a-b_c/d+e-f_g/h+i"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if mayBeEncoded(v) {
			return
		}
		if _, segments := codec.NewDecoder().Decode(v, nil); len(segments) != 0 {
			t.Fatalf("mayBeEncoded(%q) is false, but the decoder found %d segment(s)", v, len(segments))
		}
	})
}

// FuzzScanJSON: never panics; rejects what encoding/json rejects; every
// string that, scanned alone, yields a finding yields it in the document
// too; every other finding comes from the pass over the strings joined
// (rebuilt here from the document: grouped by shape, folded, without line
// breaks), and names a string in which a match of its rule starts there.
func FuzzScanJSON(f *testing.F) {
	s := newScanner(f)
	f.Add([]byte(`{"proof":{"summary":"ok","artifacts":[{"type":"log","text":"x"}]}}`))
	f.Add([]byte(`{"a/b":{"~":["https://u:` + `p4ssw0rdxyz@h.example/x"]}}`))
	f.Add([]byte(`{"a":"https://h.example/?token=` + `Ab12Cd34Ef","a":1}`))
	f.Add([]byte(`["btn_sk_` + strings.Repeat("aZ9", 13) + `a"]`))
	f.Add([]byte(`["btn_sk_` + strings.Repeat("aZ9", 6) + `","` + strings.Repeat("aZ9", 7) + `a"]`))
	f.Add([]byte(`{"t":"btn_sk_` + strings.Repeat("aZ9", 6) + `\n` + strings.Repeat("aZ9", 7) + `a"}`))
	f.Add([]byte(`{"a":[{"type":"log","text":"gh` + `\u0440_` + strings.Repeat("aZ9", 6) + `"},{"type":"log","text":"` + strings.Repeat("aZ9", 6) + `"}]}`))
	f.Add([]byte(`"-----BEGIN EC PRIV` + `ATE KEY-----"`))
	f.Add([]byte(`{"t":"\u00e9\ud800 https://x:` + `y@z"}`))
	f.Add([]byte(`"plain"`))
	f.Add([]byte(`1e999`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		found, err := s.ScanJSON(doc)
		if valid := json.Valid(doc); valid != (err == nil) {
			t.Fatalf("json.Valid %v, ScanJSON error %v", valid, err)
		}
		if err != nil {
			return
		}
		strs := documentStrings(t, doc)
		alone := map[Finding]bool{}
		for _, d := range strs {
			for _, fd := range s.ScanString(d.ptr, d.v) {
				alone[fd] = true
				if !slices.Contains(found, fd) {
					t.Fatalf("%+v: found in its string alone, not in the document", fd)
				}
			}
		}
		var text string
		var ends []int
		var ptrs []string
		for _, fd := range found {
			if alone[fd] {
				continue
			}
			if text == "" {
				text, ends, ptrs = joinedText(strs)
			}
			hit := false
			for _, c := range s.candidatesWith(s.plain, text) {
				i := min(sort.SearchInts(ends, c.at+1), len(ptrs)-1) // the string the match starts in (or, on a line between groups, the next)
				hit = hit || c.rule == fd.RuleID && ptrs[i] == fd.Pointer
			}
			if !hit {
				t.Fatalf("%+v: neither a string at that pointer nor the joined strings yield it", fd)
			}
		}
	})
}

// docString is a string value of a document: pointer, shape (the pointer
// with "*" for array indices) and value.
type docString struct{ ptr, shape, v string }

// joinedText is what the pass over the whole document scans, built apart
// from the package's code: strings grouped by shape in order of first
// appearance, a line between groups, folded and without line breaks, and
// without the groups of one string holding no line break; with where each
// string ends and its pointer.
func joinedText(strs []docString) (string, []int, []string) {
	var order []string
	groups := map[string][]docString{}
	for _, d := range strs {
		if _, ok := groups[d.shape]; !ok {
			order = append(order, d.shape)
		}
		groups[d.shape] = append(groups[d.shape], d)
	}
	lineBreaks := strings.NewReplacer("\n", "", "\r", "", "\v", "", "\f", "", "\u0085", "", "\u2028", "", "\u2029", "")
	var b strings.Builder
	var ends []int
	var ptrs []string
	for _, sh := range order {
		g := groups[sh]
		if f := fold(g[0].v); len(g) == 1 && lineBreaks.Replace(f) == f {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		for _, d := range g {
			b.WriteString(lineBreaks.Replace(fold(d.v)))
			ends, ptrs = append(ends, b.Len()), append(ptrs, d.ptr)
		}
	}
	return b.String(), ends, ptrs
}

// documentStrings lists every string value of doc in document order, with
// its pointer and shape. It walks the tokens with an explicit stack, apart
// from the package's own walker.
func documentStrings(t *testing.T, doc []byte) []docString {
	type frame struct {
		ptr, shape string
		array      bool
		index      int
		key        string
		atKey      bool
	}
	esc := strings.NewReplacer("~", "~0", "/", "~1")
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out []docString
	var stack []*frame
	here := func() (string, string) { // pointer and shape of the value about to be read
		if len(stack) == 0 {
			return "", ""
		}
		top := stack[len(stack)-1]
		if top.array {
			return top.ptr + "/" + strconv.Itoa(top.index), top.shape + "/*"
		}
		return top.ptr + "/" + esc.Replace(top.key), top.shape + "/" + esc.Replace(top.key)
	}
	done := func() { // a value was read
		if len(stack) == 0 {
			return
		}
		top := stack[len(stack)-1]
		if top.array {
			top.index++
		} else {
			top.atKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("decoding valid JSON: %v", err)
		}
		if len(stack) > 0 && !stack[len(stack)-1].array && stack[len(stack)-1].atKey {
			if k, ok := tok.(string); ok {
				stack[len(stack)-1].key, stack[len(stack)-1].atKey = k, false
				continue
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			ptr, shape := here()
			stack = append(stack, &frame{ptr: ptr, shape: shape, array: tok == json.Delim('['), atKey: true})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
			continue
		}
		if v, ok := tok.(string); ok {
			ptr, shape := here()
			out = append(out, docString{ptr, shape, v})
		}
		done()
	}
}

// body2KB is a typical proof callback: prose, log lines, URLs, commit ids,
// hashes, timestamps and UUIDs, about 2 KB.
func body2KB() []byte {
	var log strings.Builder
	for i := range 20 {
		log.WriteString("2026-11-22T10:0" + strconv.Itoa(i%10) + ":00Z certbot renew: success for staging-" + strconv.Itoa(i) + ".example.com\n")
	}
	doc, _ := json.Marshal(map[string]any{
		"executorRunId": "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
		"status":        "SUCCEEDED",
		"proof": map[string]any{
			"summary": "Renewed the staging certificate, deployed commit 3f9a2c1 and restarted nginx on three hosts; " +
				"all health checks at https://staging.example.com/healthz returned 200.",
			"artifacts": []any{
				map[string]any{"type": "log", "text": log.String()},
				map[string]any{"type": "url", "text": "https://ci.example.com/runs/1284?page=2&tab=logs"},
				map[string]any{"type": "hash", "text": "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
			},
			"checks": []any{
				map[string]any{"name": "tls", "ok": true, "at": "2026-11-22T10:12:00Z"},
				map[string]any{"name": "http", "ok": true, "latencyMs": 42},
			},
		},
	})
	return doc
}

func TestBenchmarkBodyIsTypical(t *testing.T) {
	doc := body2KB()
	if n := len(doc); n < 1800 || n > 2300 {
		t.Fatalf("benchmark body is %d bytes, want about 2 KB", n)
	}
	found, err := newScanner(t).ScanJSON(doc)
	if err != nil || len(found) != 0 {
		t.Fatalf("%v, %v", found, err)
	}
}

func BenchmarkScanJSON(b *testing.B) {
	s := newScanner(b)
	doc := body2KB()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.ScanJSON(doc, "/proof", "/result", "/reason"); err != nil {
			b.Fatal(err)
		}
	}
}

// The lazy scanner finds what the scanner finds, built once however many
// goroutines ask first.
func TestLazyScannerMatchesScanner(t *testing.T) {
	eager, err := New()
	if err != nil {
		t.Fatal(err)
	}
	lazy := NewLazy()
	doc := []byte(`{"note":"deploy with AKIAIOSFODNN7EXAMPLQ and aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY1"}`)
	want, err := eager.Scan(doc)
	if err != nil || len(want) == 0 {
		t.Fatalf("eager scan: %v %v", want, err)
	}
	var wg sync.WaitGroup
	got := make([][]domain.SecretFinding, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = lazy.Scan(doc)
		}()
	}
	wg.Wait()
	for _, g := range got {
		if !reflect.DeepEqual(g, want) {
			t.Fatalf("lazy %v, eager %v", g, want)
		}
	}
	text := "token ghp_8kQz3VnR1pXw7LmT2yBc9dHf4GjK6sNa0eUq"
	r1, f1 := lazy.Redact(text)
	r2, f2 := eager.Redact(text)
	if r1 != r2 || !reflect.DeepEqual(f1, f2) || r1 == text {
		t.Fatalf("redact: lazy %q %v, eager %q %v", r1, f1, r2, f2)
	}
}

// fullWidth writes ASCII in its full-width forms (U+FF01-U+FF5E).
func fullWidth(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '!' && r <= '~' {
			r += 0xFEE0
		}
		b.WriteRune(r)
	}
	return b.String()
}
