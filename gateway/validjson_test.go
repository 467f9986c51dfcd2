package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

func nested(depth int) []byte {
	return []byte(`{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`)
}

func TestValidJSONBoundsDepth(t *testing.T) {
	for _, c := range []struct {
		body string
		want bool
	}{
		{string(nested(MaxJSONDepth)), true},
		{string(nested(MaxJSONDepth + 1)), false},
		{`{"a":"` + strings.Repeat("[", MaxJSONDepth+5) + `"}`, true}, // brackets in a string do not nest
		{`{"a":"\"` + strings.Repeat("[", MaxJSONDepth+5) + `"}`, true},
		{`{"a":"\\"` + strings.Repeat("[", MaxJSONDepth+5) + `}`, false},
		{`{"a":1}`, true},
		{`{"a":1`, false},
	} {
		if got := ValidJSON([]byte(c.body)); got != c.want {
			t.Errorf("ValidJSON(%.40q... %d bytes) = %v, want %v", c.body, len(c.body), got, c.want)
		}
	}
	// Deep enough to overflow the stack through gjson's recursion alone.
	if ValidJSON([]byte(strings.Repeat("[", 12_000_000))) {
		t.Fatal("12 million open brackets taken for JSON")
	}
}

// FuzzValidJSON holds ValidJSON to encoding/json's verdict, which has the
// same depth limit.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"x\"]"}]}`, `[[[]]]`, `"\\"`, `{"a":"\u005b"}`, string(nested(MaxJSONDepth + 1))} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := ValidJSON(b), json.Valid(b); got != want {
			t.Fatalf("ValidJSON(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}
