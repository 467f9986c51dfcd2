package domain

import (
	"bytes"
	"testing"
)

// FuzzCanonicalFast holds the fast path to the general one: whatever it
// takes, it must write the same bytes, or the hash chains of events written
// before it would no longer verify.
func FuzzCanonicalFast(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[true,false,null,{"d":"x","c":-0.5e+10}]}`,
		`{"a":1,"a!":2,"a ":3,"ab":4}`, `{"é":"ü","e":"€"}`, ` { "x" : [ 1 , 2 ] } `,
		`{"a":1,"a":2}`, `"\u2028"`, "\"\u2028\"", `{"k":"<&>"}`, `"a\"b"`, `[]`, `{}`, `0`, `-0`, `01`, `1.`, `1e`, ``, `nul`,
		`{"handoffId":"h-1","proof":{"summary":"renewed","artifacts":[{"type":"log","text":"certbot renew: ok"}]},"status":"RUNNING"}`,
		"\"\x7f\"", "\"\xff\"", `[1,]`, `{"a":1,}`, `{"a" 1}`, `[[[[[[[[[[1]]]]]]]]]]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := canonicalFast(data)
		if !ok {
			return
		}
		want, _, err := CanonicalValue(data)
		if err != nil {
			t.Fatalf("the fast path took %q, which the general path refuses: %v", data, err)
		}
		if !bytes.Equal(fast, want) {
			t.Fatalf("%q: fast %q, general %q", data, fast, want)
		}
	})
}

func TestCanonicalFastTakesBatonsEvents(t *testing.T) {
	for _, s := range []string{
		`{"status":"APPROVED","decidedBy":"ann","request":{"kind":"approval","bodySha256":"ab"}}`,
		`{"executorRunId":"run-1","status":"RUNNING","proof":{"summary":"renewed","artifacts":[{"type":"log","text":"ok"}]}}`,
	} {
		if _, ok := canonicalFast([]byte(s)); !ok {
			t.Fatalf("the fast path refused %s", s)
		}
	}
}

func BenchmarkCanonicalFast(b *testing.B) {
	data := []byte(`{"executorRunId":"run-1","status":"RUNNING","proof":{"summary":"renewed the certificate","artifacts":[{"type":"log","text":"certbot renew: success, deployed to 3 hosts"}]},"request":{"kind":"proof","idempotencyKey":"proof-1","bodySha256":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}`)
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			canonicalFast(data)
		}
	})
	b.Run("general", func(b *testing.B) {
		for b.Loop() {
			CanonicalValue(data)
		}
	})
}
