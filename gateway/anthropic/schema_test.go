package anthropic

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/batonhq/baton/gateway/tasks"
)

// A schema beyond Anthropic's structured-output subset is brought into it
// as the SDKs do: bounds it cannot take are said in the description,
// objects closed, formats it lacks moved out, oneOf read as anyOf, all the
// way down (properties, items, $defs, anyOf); what it takes is kept.
func TestNativeSchemaKeepsToTheSubset(t *testing.T) {
	in := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{
		"name":{"type":"string","minLength":1,"maxLength":100,"description":"Who"},
		"email":{"type":"string","format":"email","pattern":"^[^@]+@[^@]+$"},
		"color":{"type":"string","format":"color"},
		"tags":{"type":"array","minItems":3,"maxItems":5,"uniqueItems":true,"items":{"type":"string","maxLength":20}},
		"one":{"type":"array","minItems":1,"items":{"$ref":"#/$defs/point"}},
		"score":{"type":"number","minimum":0,"maximum":1.5},
		"extra":{"type":"object","additionalProperties":{"type":"string"}},
		"either":{"oneOf":[{"type":"integer","multipleOf":2},{"type":"object","properties":{"x":{"type":"integer"}}}]}
	},"required":["name"],"$defs":{"point":{"type":"object","properties":{"x":{"type":"integer","exclusiveMinimum":0}},"required":["x"]}}}`
	want := `{"$defs":{"point":{"additionalProperties":false,"properties":{"x":{"description":"{exclusiveMinimum: 0}","type":"integer"}},"required":["x"],"type":"object"}},` +
		`"additionalProperties":false,"properties":{` +
		`"color":{"description":"{format: \"color\"}","type":"string"},` +
		`"either":{"anyOf":[{"description":"{multipleOf: 2}","type":"integer"},{"additionalProperties":false,"properties":{"x":{"type":"integer"}},"type":"object"}]},` +
		`"email":{"format":"email","pattern":"^[^@]+@[^@]+$","type":"string"},` +
		`"extra":{"additionalProperties":false,"description":"{additionalProperties: {\"type\":\"string\"}}","type":"object"},` +
		`"name":{"description":"Who\n\n{maxLength: 100, minLength: 1}","type":"string"},` +
		`"one":{"items":{"$ref":"#/$defs/point"},"minItems":1,"type":"array"},` +
		`"score":{"description":"{maximum: 1.5, minimum: 0}","type":"number"},` +
		`"tags":{"description":"{maxItems: 5, minItems: 3, uniqueItems: true}","items":{"description":"{maxLength: 20}","type":"string"},"minItems":1,"type":"array"}` +
		`},"required":["name"],"type":"object"}`
	var got, exp any
	if err := json.Unmarshal(NativeSchema(json.RawMessage(in)), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(exp)
	if string(g) != string(w) {
		t.Fatalf("got  %s\nwant %s", g, w)
	}
	for _, s := range []string{`[1,2]`, `"x"`, `not json`, `null`} {
		if out := NativeSchema(json.RawMessage(s)); string(out) != s {
			t.Errorf("%s became %s, want it sent as it is", s, out)
		}
	}
}

// Every task type's output schema, as a Claude model of native structured
// output gets it, keeps to the subset: Baton's schemas bound lengths and
// counts, which Anthropic answers with a 400 (every generate on such a
// model failed so).
func TestTaskOutputSchemasKeepToTheSubset(t *testing.T) {
	reg, err := tasks.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, ty := range reg.All() {
		var s any
		if err := json.Unmarshal(NativeSchema(ty.Output), &s); err != nil {
			t.Fatal(err)
		}
		var walk func(v any, at string)
		walk = func(v any, at string) {
			switch v := v.(type) {
			case map[string]any:
				for _, k := range unsupportedKeys {
					if _, ok := v[k]; ok && !isPropertyMap(at) {
						t.Errorf("%s: %s%s has %s", ty.Name, at, "", k)
					}
				}
				if n, ok := v["minItems"].(float64); ok && n > 1 && !isPropertyMap(at) {
					t.Errorf("%s: %s has minItems %v", ty.Name, at, n)
				}
				if f, ok := v["format"].(string); ok && !isPropertyMap(at) && !slices.Contains(nativeFormats, f) {
					t.Errorf("%s: %s has format %s", ty.Name, at, f)
				}
				if !isPropertyMap(at) && isObjectSchema(v) && v["additionalProperties"] != false {
					t.Errorf("%s: %s is an object not closed", ty.Name, at)
				}
				for k, c := range v {
					walk(c, at+"/"+k)
				}
			case []any:
				for _, c := range v {
					walk(c, at+"/[]")
				}
			}
		}
		walk(s, "")
	}
}

// isPropertyMap reports whether at names a map of schemas by name (its
// keys are names, not keywords).
func isPropertyMap(at string) bool {
	for _, k := range []string{"/properties", "/$defs", "/definitions"} {
		if len(at) >= len(k) && at[len(at)-len(k):] == k {
			return true
		}
	}
	return false
}
