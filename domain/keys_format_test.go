package domain

import "testing"

// LooksLikeKey is held to the key format's regular expression.
func FuzzLooksLikeKey(f *testing.F) {
	f.Add("btn_sk_" + "abcdefghijABCDEFGHIJ0123456789abcdefghij")
	f.Add("btn_sk_" + "abcdefghijABCDEFGHIJ0123456789abcdefghi-")
	f.Add("btn_sk_short")
	f.Add("btn_sk_" + "abcdefghijABCDEFGHIJ0123456789abcdefghij\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := LooksLikeKey(s), keyRE.MatchString(s); got != want {
			t.Fatalf("LooksLikeKey(%q) = %v, the format says %v", s, got, want)
		}
	})
}
