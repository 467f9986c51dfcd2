package tasks

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"
)

func TestEmbeddedTypesLoad(t *testing.T) {
	r, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"agent_plan", "business_strategy", "classify", "extract_fields", "reply_draft", "summarize", "viral_hook"}
	if got := strings.Join(r.Names(), ","); got != strings.Join(want, ",") {
		t.Fatalf("types %s", got)
	}
	bs, _ := r.Get("business_strategy")
	if bs.Latest != 2 || len(bs.Versions) != 2 {
		t.Fatalf("business_strategy versions %v", bs.Versions)
	}
}

func TestAddingATypeIsAddingFiles(t *testing.T) {
	fsys := fstest.MapFS{
		"haiku/type.json":          {Data: []byte(`{"description":"a haiku","maxTokens":60}`)},
		"haiku/input.schema.json":  {Data: []byte(`{"type":"object","properties":{"about":{"type":"string"}},"required":["about"]}`)},
		"haiku/output.schema.json": {Data: []byte(`{"type":"object","properties":{"lines":{"type":"array","items":{"type":"string"},"minItems":3,"maxItems":3}},"required":["lines"]}`)},
		"haiku/v1.tmpl":            {Data: []byte(`A haiku about {{.Input.about}}.`)},
	}
	r, err := Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	h, ok := r.Get("haiku")
	if !ok {
		t.Fatal("no haiku")
	}
	p, v, err := h.Render(0, json.RawMessage(`{"about":"logs"}`), "")
	if err != nil || v != 1 || p != "A haiku about logs." {
		t.Fatalf("%q %d %v", p, v, err)
	}
	// A broken type does not load.
	for name, bad := range map[string]fstest.MapFS{
		"bad schema":  {"x/type.json": {Data: []byte(`{"description":"d","maxTokens":1}`)}, "x/input.schema.json": {Data: []byte(`{"type":"nope"}`)}, "x/output.schema.json": {Data: []byte(`{}`)}, "x/v1.tmpl": {Data: []byte(`x`)}},
		"no template": {"x/type.json": {Data: []byte(`{"description":"d","maxTokens":1}`)}, "x/input.schema.json": {Data: []byte(`{}`)}, "x/output.schema.json": {Data: []byte(`{}`)}},
		"bad meta":    {"x/type.json": {Data: []byte(`{"description":"d","maxTokens":1,"extra":1}`)}, "x/input.schema.json": {Data: []byte(`{}`)}, "x/output.schema.json": {Data: []byte(`{}`)}, "x/v1.tmpl": {Data: []byte(`x`)}},
		"bad tmpl":    {"x/type.json": {Data: []byte(`{"description":"d","maxTokens":1}`)}, "x/input.schema.json": {Data: []byte(`{}`)}, "x/output.schema.json": {Data: []byte(`{}`)}, "x/v1.tmpl": {Data: []byte(`{{.Input`)}},
	} {
		if _, err := Load(bad); err == nil {
			t.Errorf("%s loaded", name)
		}
	}
}

func TestValidationNamesEachField(t *testing.T) {
	r, _ := Default()
	ty, _ := r.Get("business_strategy")
	v, err := ty.ValidateInput([]byte(`{"goal":1,"audience":"x","constraints":["a",2]}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range v {
		got = append(got, x.Pointer)
	}
	if strings.Join(got, " ") != "/audience /constraints/1 /goal" {
		t.Fatalf("%v", v)
	}
	if v, _ := ty.ValidateInput([]byte(`{"goal":"grow revenue","audience":"devs"}`)); len(v) != 0 {
		t.Fatalf("valid input refused: %v", v)
	}
}

func TestParseLenient(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1}`:                 `{"a":1}`,
		"  {\"a\":1}\n":           `{"a":1}`,
		"```json\n{\"a\":1}\n```": `{"a":1}`,
		"Sure! Here it is:\n```\n{\"a\":{\"b\":2}}\n```\nAnything else?":       `{"a":{"b":2}}`,
		`The answer is {"a":"}{"} as asked.`:                                   `{"a":"}{"}`,
		`{broken {"a":[1,2]} tail`:                                             `{"a":[1,2]}`,
		`{"s":"\"}"}`:                                                          `{"s":"\"}"}`,
		`{ stray {also {"a":1} tail`:                                           `{"a":1}`,
		`{"a":{"b":1} x} then`:                                                 `{"b":1}`,
		`prose "with {quotes}" then {"a":2}`:                                   `{"a":2}`,
		`The object (it starts with "{") is: {"label":"spam"}`:                 `{"label":"spam"}`,
		`Use { and a stray " quote. Answer: {"label":"spam"}`:                  `{"label":"spam"}`,
		`I'd write {"label": "spam} first, but the answer is {"label":"spam"}`: `{"label":"spam"}`,
	} {
		got, err := ParseLenient(in)
		if err != nil || string(got) != want {
			t.Errorf("%q: %s, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "no json here", "[1,2]", `{"a":`, "```\n```"} {
		if got, err := ParseLenient(in); err == nil {
			t.Errorf("%q parsed as %s", in, got)
		}
	}
}

// An answer of a megabyte of unclosed or nested braces is searched in one
// pass: it took minutes when each brace started a scan to the end.
func TestParseLenientHostileAnswers(t *testing.T) {
	const n = 1 << 20
	for name, in := range map[string]string{
		"open braces":       strings.Repeat("{", n-1),
		"unclosed keys":     strings.Repeat(`{"a":`, n/5-1),
		"nested, each cut":  strings.Repeat(`{"a":`, n/20) + "1" + strings.Repeat("} x", n/20),
		"longer than bound": strings.Repeat("{", n+1),
	} {
		if got, err := ParseLenient(in); err == nil {
			t.Errorf("%s: parsed as %.40s", name, got)
		}
	}
	in := strings.Repeat("{", n/2) + ` {"ok":true}`
	if got, err := ParseLenient(in); err != nil || string(got) != `{"ok":true}` {
		t.Errorf("an object after half a megabyte of braces: %.40s, %v", got, err)
	}
}

// FuzzParseLenient: model output is untrusted; whatever it is, the parser
// returns a valid JSON object or an error, never panics.
func FuzzParseLenient(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "```json\n{}\n```", `x {"a":"}"} y`, `{{{{`, `"\`, "```"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseLenient(s)
		if err != nil {
			return
		}
		var m map[string]any
		if json.Unmarshal(got, &m) != nil {
			t.Fatalf("%q gave %q, not a JSON object", s, got)
		}
	})
}

// FuzzValidateOutput: validation of arbitrary output never panics and
// accepts only what the schema allows.
func FuzzValidateOutput(f *testing.F) {
	r, err := Default()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{`{"summary":"s","keyPoints":["k"]}`, `{}`, `[]`, `{"summary":1}`, `null`} {
		f.Add(uint8(0), s)
	}
	types := r.All()
	f.Fuzz(func(t *testing.T, which uint8, s string) {
		ty := types[int(which)%len(types)]
		v, err := ty.ValidateOutput([]byte(s))
		if err == nil && len(v) == 0 && !json.Valid([]byte(s)) {
			t.Fatalf("invalid JSON %q accepted", s)
		}
	})
}
