package secrets

import (
	"slices"
	"testing"
)

// FuzzURLSpans: urlSpans finds the URLs urlRE finds, at the same places.
func FuzzURLSpans(f *testing.F) {
	for _, seed := range []string{
		"see https://files.example.com/r.pdf?access_token=x&y=1 and http://a.b/c",
		"1://x a://y", "a:// b", "://x", "x://", "git+ssh://h/r.git", "-.+a1://h", "a://b://c",
		"http://a?u=http://b?token=c", "\"https://a\"'b://c'<d://e>`f://g`", "é://x", "a\xff://\xfe\xff",
		"https://a\vb c\u00a0d://e\tf://g\nh://i\fj://k\rl://m",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, want := urlSpans(v), urlRE.FindAllStringIndex(v, -1)
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("urlSpans(%q) = %v, urlRE finds %v", v, got, want)
		}
	})
}
