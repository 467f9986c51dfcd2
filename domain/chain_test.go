package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// Nesting is bounded as encoding/json bounds it: a tampered event nested a
// million deep is refused, not walked until the verifier's stack runs out.
func TestCanonicalJSONBoundsNesting(t *testing.T) {
	for _, c := range []struct {
		depth int
		ok    bool
	}{{100, true}, {maxDepth, true}, {maxDepth + 1, false}, {1_000_000, false}} {
		doc := strings.Repeat("[", c.depth) + strings.Repeat("]", c.depth)
		_, err := CanonicalJSON([]byte(doc))
		if (err == nil) != c.ok {
			t.Fatalf("depth %d: %v", c.depth, err)
		}
	}
	if _, err := CanonicalJSON([]byte(`{"a":1,"b":{"a":2,"a":3}}`)); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("a duplicate key in a nested object: %v", err)
	}
	if _, err := CanonicalJSON([]byte(`{"a":1} {"b":2}`)); err == nil {
		t.Fatal("a second document was accepted")
	}
}

// canonicalByTokens is CanonicalJSON as it was before it decoded once: a
// token walk that refuses a key twice, then the same encoding. It is the
// oracle of FuzzCanonicalJSONOneDecode.
func canonicalByTokens(data []byte) ([]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return []byte("null"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := strictValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the document")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// FuzzCanonicalJSONOneDecode: the one-decode canonical form is the token
// walk's, byte for byte, and refuses what it refuses.
func FuzzCanonicalJSONOneDecode(f *testing.F) {
	for _, s := range []string{
		`{"type":"summarize","input":{"text":"x"},"options":{"maxAttempts":2,"llm":{"mode":"cheap","maxCostUsd":0.5}}}`,
		`{"a":1,"a":1}`, `{"a":1,"\u0061":2}`, `{"Type":"x","type":"y"}`, `{"a":[{"b":1,"b":2}]}`, `{"a":"b:c","d":"\"e\":"}`,
		`{"a" : 1 , "b":{"c" :[1,{"d":null}]}}`, `{"a":1} {"b":2}`, `{"a":1} x`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}",
		`[1.0,1e2,-0,12345678901234567890,1e400]`, `"<&>"`, `null`, `[]`, `{}`, `{"":1,"":2}`, ``, `  `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, wantErr := canonicalByTokens(in)
		got, err := CanonicalJSON(in)
		if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("%q: got %q (%v), the token walk %q (%v)", in, got, err, want, wantErr)
		}
		// A valid document with a key twice is refused naming the key (an
		// invalid one may be refused for either fault first).
		if wantErr != nil && json.Valid(in) && !strings.Contains(err.Error(), wantErr.Error()) {
			t.Fatalf("%q: %v, the token walk named %v", in, err, wantErr)
		}
	})
}

// BenchmarkCanonicalJSON: a generate request's body, by one decode and by
// the token walk it replaced.
func BenchmarkCanonicalJSON(b *testing.B) {
	body := []byte(`{"type":"business_strategy","input":{"goal":"Grow paid seats 20% next quarter","audience":"mid-market ops teams"},` +
		`"options":{"maxAttempts":2,"llm":{"mode":"balanced","maxCostUsd":0.05}}}`)
	for _, c := range []struct {
		name string
		f    func([]byte) ([]byte, error)
	}{{"one decode", CanonicalJSON}, {"token walk, replaced", canonicalByTokens}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.f(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
