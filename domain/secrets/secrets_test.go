package secrets

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// Fake secrets are built at run time so that this file holds no literal a
// secret scanner would flag.
func randomFrom(rng *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

const (
	alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
)

func fakes() map[string]string {
	rng := rand.New(rand.NewPCG(1, 2))
	return map[string]string{
		"aws":      "AK" + "IA" + randomFrom(rng, upnum, 16),
		"github":   "gh" + "p_" + randomFrom(rng, alnum, 36),
		"slack":    "xo" + "xb-" + randomFrom(rng, "0123456789", 12) + "-" + randomFrom(rng, "0123456789", 13) + "-" + randomFrom(rng, alnum, 24),
		"stripe":   "sk" + "_live_" + randomFrom(rng, alnum, 32),
		"openai":   "sk" + "-" + randomFrom(rng, alnum, 20) + "T3Blbk" + "FJ" + randomFrom(rng, alnum, 20),
		"baton":    "btn" + "_sk_" + randomFrom(rng, alnum, 40),
		"password": randomFrom(rng, alnum, 16),
		"rsa":      "-----BEGIN RSA " + "PRIVATE KEY-----\n" + randomFrom(rng, alnum, 64) + "\n-----END RSA PRIVATE KEY-----",
		"openssh":  "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + randomFrom(rng, alnum, 64) + "\n-----END OPENSSH PRIVATE KEY-----",
	}
}

func TestScanStringFindsSecrets(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	f := fakes()
	tests := []struct {
		name  string
		value string
		rule  string // a rule id that must be among the findings
	}{
		{"aws access key", "deployed with key " + f["aws"], "aws-access-token"},
		{"github token", "export GITHUB_TOKEN=" + f["github"], "github-pat"},
		{"slack token", "notify via " + f["slack"], "slack-bot-token"},
		{"stripe key", "STRIPE_KEY=" + f["stripe"], "stripe-access-token"},
		{"openai key", "OPENAI_API_KEY=" + f["openai"], "openai-api-key"},
		{"baton key", "used " + f["baton"], "baton-api-key"},
		{"url userinfo", "cloned https://deploy:" + f["password"] + "@git.example.com/repo.git", "url-credentials"},
		{"url query token", "see https://files.example.com/report.pdf?access_token=" + f["password"] + "&x=1", "url-query-credential"},
		{"rsa private key", f["rsa"], "private-key"},
		{"openssh private key", f["openssh"], "private-key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := s.ScanString("/x", tc.value)
			var rules []string
			for _, g := range got {
				rules = append(rules, g.RuleID)
				if g.Pointer != "/x" {
					t.Fatalf("pointer %q", g.Pointer)
				}
			}
			if !strings.Contains(","+strings.Join(rules, ",")+",", ","+tc.rule+",") {
				t.Fatalf("findings %v, want %s", rules, tc.rule)
			}
			b, _ := json.Marshal(got)
			for _, secret := range f {
				if strings.Contains(string(b), secret) {
					t.Fatal("a finding contains the secret")
				}
			}
		})
	}
}

func TestScanStringIgnoresOrdinaryProof(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{
		"https://ci.example.com/runs/1284?page=2&tab=logs",
		"deployed commit 3f9a2c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f to staging",
		"handoff 0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b finished at 2026-11-22T10:30:00Z",
		"sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"certbot renew: success, certificate valid until 2027-02-20",
		"screenshot at https://files.example.com/shots/1.png",
		"the key rotation ran; no key material is included here",
	} {
		if got := s.ScanString("/x", v); len(got) != 0 {
			t.Errorf("%q: false positive %v", v, got)
		}
	}
}

func TestScanJSONPointersAndRoots(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	f := fakes()
	doc, _ := json.Marshal(map[string]any{
		"executorRunId": "run-1",
		"note":          f["github"], // outside the roots below
		"proof": map[string]any{
			"summary": "ok",
			"artifacts": []any{
				map[string]any{"type": "log", "text": "all good"},
				map[string]any{"type": "log", "text": f["stripe"]},
				map[string]any{"a/b~c": []any{"x", f["baton"]}},
			},
		},
	})
	got, err := s.ScanJSON(doc, "/proof")
	if err != nil {
		t.Fatal(err)
	}
	var ptrs []string
	for _, g := range got {
		ptrs = append(ptrs, g.RuleID+"@"+g.Pointer)
	}
	want := "stripe-access-token@/proof/artifacts/1/text,baton-api-key@/proof/artifacts/2/a~1b~0c/1"
	if strings.Join(ptrs, ",") != want {
		t.Fatalf("findings %v, want %s", ptrs, want)
	}
	all, _ := s.ScanJSON(doc)
	if len(all) != 3 {
		t.Fatalf("without roots: %v", all)
	}
	for _, bad := range []string{`{"a":`, `[1,2`, `{"a":1} {"b":2}`, ``} {
		if _, err := s.ScanJSON([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzScanJSON: never panics, and every finding's pointer resolves to a
// string in the document.
func FuzzScanJSON(f *testing.F) {
	s, err := New()
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"proof":{"summary":"ok","artifacts":[{"type":"log","text":"x"}]}}`))
	f.Add([]byte(`{"a/b":{"~":["https://u:p4ssw0rdxyz@h.example/x"]}}`))
	f.Add([]byte(`["btn_sk_` + strings.Repeat("aZ9", 13) + `a"]`))
	f.Add([]byte(`"plain"`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		found, err := s.ScanJSON(doc)
		if err != nil {
			return
		}
		var v any
		if json.Unmarshal(doc, &v) != nil {
			t.Fatalf("ScanJSON accepted invalid JSON %q", doc)
		}
		for _, fd := range found {
			if _, ok := resolve(v, fd.Pointer).(string); !ok {
				t.Fatalf("pointer %q does not name a string in %s", fd.Pointer, doc)
			}
		}
	})
}

func resolve(v any, ptr string) any {
	if ptr == "" {
		return v
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			v = c[tok]
		case []any:
			i := 0
			for _, ch := range tok {
				i = i*10 + int(ch-'0')
			}
			if i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

func BenchmarkScanJSON(b *testing.B) {
	s, err := New()
	if err != nil {
		b.Fatal(err)
	}
	doc, _ := json.Marshal(map[string]any{"executorRunId": "run-1", "status": "RUNNING", "proof": map[string]any{
		"summary": strings.Repeat("renewed the staging certificate and restarted nginx on three hosts. ", 10),
		"artifacts": []any{
			map[string]any{"type": "log", "text": strings.Repeat("2026-11-22T10:00:00Z certbot renew: success for staging.example.com\n", 15)},
			map[string]any{"type": "url", "text": "https://ci.example.com/runs/1284"},
		}}})
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, err := s.ScanJSON(doc, "/proof"); err != nil {
			b.Fatal(err)
		}
	}
}
