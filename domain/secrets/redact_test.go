package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestRedactNamesTheRule(t *testing.T) {
	s := newScanner(t)
	f := fakes()
	tests := []struct {
		name  string
		value string
		rule  string
	}{
		{"aws access key id", "deployed with key " + f["aws"].token + " to us-east-1", "aws-access-token"},
		{"github token", "export GITHUB_TOKEN=" + f["github"].token, "github-pat"},
		{"slack bot token", "notify via " + f["slack"].token, "slack-bot-token"},
		{"stripe secret key", "STRIPE_KEY=" + f["stripe"].token, "stripe-access-token"},
		{"openai key", "OPENAI_API_KEY=" + f["openai"].token, "openai-api-key"},
		{"generic assignment with entropy", "db_password = " + f["generic"].core, "generic-api-key"},
		{"baton key", "used " + f["baton"].token + " for the call", "baton-api-key"},
		{"url userinfo", "cloned https://deploy:" + f["password"].core + "@git.example.com/repo.git", "url-credentials"},
		{"url query token", "see https://files.example.com/report.pdf?access_token=" + f["password"].core + "&x=1", "url-query-credential"},
		{"rsa private key", "key:\n" + f["rsa"].token + "\nthanks", "private-key"},
		{"openssh private key", f["openssh"].token, "private-key"},
		{"pgp private key block", f["pgp"].token, "private-key"},
		{"base64 of a token", "config blob: " + base64.StdEncoding.EncodeToString([]byte("token: "+f["github"].token)), "github-pat"},
		{"percent-encoded token", "q=" + percentEncode(f["github"].token), "github-pat"},
		{"hex of a token", "dump " + hex.EncodeToString([]byte(f["github"].token)), "github-pat"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, found := s.Redact(tc.value)
			if !strings.Contains(out, RedactionMarker(tc.rule)) {
				t.Fatalf("no %s marker in %q", tc.rule, out)
			}
			if !slices.Contains(rulesOf(found), tc.rule) {
				t.Fatalf("findings %v, want %s", rulesOf(found), tc.rule)
			}
			assertNoLeak(t, "redacted text", out)
			if again := s.ScanString("/x", out); len(again) > 0 {
				t.Fatalf("the scanner still flags %v in %q", rulesOf(again), out)
			}
			if twice, more := s.Redact(out); twice != out || len(more) > 0 {
				t.Fatalf("redacting again changed %q to %q", out, twice)
			}
		})
	}
}

func TestRedactReplacesOnlyTheSecret(t *testing.T) {
	s := newScanner(t)
	f := fakes()
	tests := []struct{ name, value, want string }{
		{"aws key in prose", "deployed with key " + f["aws"].token + " to us-east-1", "deployed with key [REDACTED:aws-access-token] to us-east-1"},
		{"baton key", "call with " + f["baton"].token + ".", "call with [REDACTED:baton-api-key]."},
		{"assignment keeps its name", "db_password = " + f["generic"].core, "db_password = [REDACTED:generic-api-key]"},
		{"userinfo keeps user and host", "https://deploy:" + f["password"].core + "@git.example.com/repo.git", "https://deploy:[REDACTED:url-credentials]@git.example.com/repo.git"},
		{"query keeps the other parameters", "https://x.example.com/r?access_token=" + f["password"].core + "&page=2", "https://x.example.com/r?access_token=[REDACTED:url-query-credential]&page=2"},
		{"pem block up to its end line", "before\n" + f["ec"].token + "\nafter", "before\n[REDACTED:private-key]\nafter"},
		{"pem header without end stops at a blank line", "-----BEGIN RSA PRIV" + "ATE KEY-----\nabc\n\nafter", "[REDACTED:private-key]\n\nafter"},
		{"every occurrence", f["baton"].token + " and " + f["baton"].token, "[REDACTED:baton-api-key] and [REDACTED:baton-api-key]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := s.Redact(tc.value)
			if out != tc.want {
				t.Fatalf("got  %q\nwant %q", out, tc.want)
			}
		})
	}
}

func TestRedactCountsEveryOccurrence(t *testing.T) {
	s := newScanner(t)
	f := fakes()
	other := "AK" + "IA" + randomFrom(rand.New(rand.NewPCG(3, 4)), b32, 16)
	value := "first " + f["aws"].token + ", second " + f["baton"].token + ", third " + other
	out, found := s.Redact(value)
	if got := rulesOf(found); !slices.Equal(got, []string{"aws-access-token", "baton-api-key", "aws-access-token"}) {
		t.Fatalf("findings %v in order of place", got)
	}
	if n := strings.Count(out, "[REDACTED:"); n != 3 {
		t.Fatalf("%d markers in %q", n, out)
	}
	for _, fd := range found {
		if fd.Pointer != "" {
			t.Fatalf("Redact names no pointer, got %q", fd.Pointer)
		}
	}
}

func TestRedactLeavesOrdinaryTextAlone(t *testing.T) {
	s := newScanner(t)
	for _, v := range []string{
		"",
		"certbot renew: success, certificate valid until 2027-02-20",
		"https://ci.example.com/runs/1284?page=2&tab=logs&sort=desc",
		"cloned ssh://git@github.com/acme/api.git",
		"sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"password: ${DB_PASSWORD} and https://user:****@example.com/",
		"Customer prefers email; never call before 9am CET.",
	} {
		out, found := s.Redact(v)
		if out != v || len(found) > 0 {
			t.Errorf("%q became %q (%v)", v, out, rulesOf(found))
		}
	}
}

func TestMatchesPlaceTheSecret(t *testing.T) {
	s := newScanner(t)
	f := fakes()
	tests := []struct{ name, value, secret, rule string }{
		{"aws", "key " + f["aws"].token + " here", f["aws"].token, "aws-access-token"},
		{"github on the second line", "line one\nGITHUB_TOKEN=" + f["github"].token + "\nthree", f["github"].token, "github-pat"},
		{"baton", "x " + f["baton"].token, f["baton"].token, "baton-api-key"},
		{"userinfo", "redis://:" + f["password"].core + "@cache:6379/0", f["password"].core, "url-credentials"},
		{"query", "https://a.example.com/?sig=" + f["password"].core + "&a=b", f["password"].core, "url-query-credential"},
		{"pem", "k:\n" + f["rsa"].token + "\n", f["rsa"].token, "private-key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ms := s.Matches(tc.value)
			for _, m := range ms {
				if m.RuleID == tc.rule {
					if got := tc.value[m.Start:m.End]; got != tc.secret {
						t.Fatalf("span [%d,%d) holds %q, want the secret", m.Start, m.End, got)
					}
					return
				}
			}
			t.Fatalf("no %s match among %+v", tc.rule, ms)
		})
	}
}

func TestMatchesFindAtLeastWhatScanStringFinds(t *testing.T) {
	s := newScanner(t)
	for name, f := range fakes() {
		value := "prefix " + f.token + " suffix"
		want := rulesOf(s.ScanString("/x", value))
		var got []string
		for _, m := range s.Matches(value) {
			got = append(got, m.RuleID)
		}
		for _, r := range want {
			if !slices.Contains(got, r) {
				t.Errorf("%s: ScanString finds %s, Matches does not (%v)", name, r, got)
			}
		}
	}
}

// FuzzRedact: whatever the text, Redact returns text the scanner does not
// flag, redacting it again changes nothing, and every span is in range.
func FuzzRedact(f *testing.F) {
	fk := fakes()
	for _, seed := range []string{
		"", "plain text", "key " + fk["aws"].token, fk["baton"].token + fk["baton"].token,
		"https://u:" + fk["password"].core + "@h/?token=" + fk["password"].core,
		fk["rsa"].token, "-----BEGIN PRIV" + "ATE KEY-----", "a\nb\nGITHUB_TOKEN=" + fk["github"].token,
		base64.StdEncoding.EncodeToString([]byte("token: " + fk["github"].token)),
		"[REDACTED:aws-access-token]", "password = [REDACTED:generic-api-key]",
	} {
		f.Add(seed)
	}
	s := newScanner(f)
	f.Fuzz(func(t *testing.T, v string) {
		for _, m := range s.Matches(v) {
			if m.Start < 0 || m.End > len(v) || m.Start > m.End {
				t.Fatalf("match %+v out of range of %d bytes", m, len(v))
			}
		}
		out, _ := s.Redact(v)
		if found := s.ScanString("/x", out); len(found) > 0 {
			t.Fatalf("Redact(%q) = %q, still flagged %v", v, out, rulesOf(found))
		}
		if again, _ := s.Redact(out); again != out {
			t.Fatalf("Redact is not idempotent: %q then %q", out, again)
		}
	})
}
