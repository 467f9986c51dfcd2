package eventstore

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

var validJSONSeeds = []string{
	``, ` `, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e`, `1e+`, `1E-7`, `-12.5e10`, `.5`, `+1`,
	`true`, `tru`, `truex`, `false`, `null`, `nul`, `nulll`, `NaN`,
	`""`, `"`, `"a\"b"`, `"\u00e9\uD83D"`, `"\u00g0"`, `"\u12"`, `"\x"`, `"tab	in"`, "\"\xff\xfe\"", `"\/\b\f\n\r\t"`,
	`[]`, `[`, `]`, `[1,]`, `[,1]`, `[1 2]`, ` [ 1 , [ ] , { } ] `, `[1]]`, `[[[]]]`,
	`{}`, `{`, `{"a":1}`, `{"a" : [1, {"b": null}] }`, `{"a"}`, `{"a":}`, `{a:1}`, `{"a":1,}`, `{,"a":1}`, `{"a":1 "b":2}`, `{"a":1}}`, `{}{}`,
	`1 2`, "\t\r\n1\n", `{"records":[{"requestId":"r1","model":"p:m","inputTokens":12,"costMicros":1.5e-3}]}`,
}

// validJSON answers as encoding/json's Valid does.
func FuzzValidJSON(f *testing.F) {
	for _, s := range validJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := validJSON(data), json.Valid(data); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid %v", data, got, want)
		}
	})
}

func TestValidJSONSeeds(t *testing.T) {
	for _, s := range validJSONSeeds {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid %v", s, got, want)
		}
	}
}

// Nesting is bounded where encoding/json bounds it.
func TestValidJSONNesting(t *testing.T) {
	for _, n := range []int{maxNesting - 1, maxNesting, maxNesting + 1} {
		for _, open := range []string{"[", `{"a":`} {
			close := "]"
			if open != "[" {
				close = "}"
			}
			doc := []byte(strings.Repeat(open, n) + "1" + strings.Repeat(close, n))
			if got, want := validJSON(doc), json.Valid(doc); got != want {
				t.Errorf("%d levels of %s: validJSON %v, json.Valid %v", n, open, got, want)
			}
		}
	}
}

// BenchmarkValidJSON is the check on a usage batch's data, 100 records.
func BenchmarkValidJSON(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"tenant":"bench","records":[`)
	for i := range 100 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":"0b6f3c1e-5d2a-4f7b-9c3e-%012d","requestId":"req_%d","model":"bench-upstream:echo-fast","provider":"bench-upstream","kind":"chat","stream":false,"inputTokens":12,"outputTokens":5,"cachedTokens":0,"costMicros":17,"at":"2026-11-29T11:30:00.123456Z"}`, i, i)
	}
	sb.WriteString(`]}`)
	data := []byte(sb.String())
	for _, c := range []struct {
		name  string
		valid func([]byte) bool
	}{{"encoding/json", json.Valid}, {"validJSON", validJSON}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if !c.valid(data) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
