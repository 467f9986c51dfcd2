package http

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
)

// duplicateName finds a name given twice in one object, wherever it is,
// as encoding/json reads names; equal names in different objects, in
// values, or equal but for case are not duplicates.
func TestDuplicateName(t *testing.T) {
	for body, want := range map[string]string{
		`{"a":1,"b":2}`:                            "",
		`{"a":1,"a":2}`:                            "/a",
		`{"a":{"b":1},"b":{"a":1}}`:                "",
		`[{"a":1},{"a":2}]`:                        "",
		`{"a":"\"a\":","b":["a","a"]}`:             "",
		`{"a":1,"A":2}`:                            "",
		`{"a":1,"\u0061":2}`:                       "/a",
		`{"":1,"":2}`:                              "/",
		`{"x":[1,{"y":[{},{"k":1,"j":2,"k":3}]}]}`: "/x/1/y/1/k",
		`{"a/b":{"c~":1,"c~":2}}`:                  "/a~1b/c~0",
		`{"s":"\\","t":{"u":1},"t":2}`:             "/t",
		"{\"a\xff\":1,\"a\xfe\":2}":                "/a\ufffd",
	} {
		got, ok := duplicateName([]byte(body))
		if got != want || ok != (want != "") {
			t.Errorf("%s: %q %v, want %q", body, got, ok, want)
		}
	}
}

// A body as deep as encoding/json takes is walked without recursion, and
// the pointer names every level.
func TestDuplicateNameDeep(t *testing.T) {
	const depth = 9999
	deep := strings.Repeat(`{"a":[`, depth/2) + `{"b":1,"b":2}` + strings.Repeat(`]}`, depth/2)
	got, ok := duplicateName([]byte(deep))
	if !ok || !strings.HasSuffix(got, "/a/0/b") || strings.Count(got, "/") != depth/2*2+1 {
		t.Fatalf("%v %.40s...", ok, got)
	}
}

// duplicateName agrees with a slower oracle that walks the document with
// encoding/json's tokenizer, keeping each open object's names: the same
// first duplicate, at the same pointer, or none.
func FuzzDuplicateName(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"x":[1,{"y":[{},{"k":1,"j":2,"k":3}]}]}`, `{"a/b":{"c~":1,"c~":2}}`,
		`{"a":"\"a\":","b":["a","a"]}`, `{"\u0061":1,"a":2}`, `[{"a":1},{"a":2}]`, `{"s":"\\","t":{"u":1},"t":2}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return
		}
		got, ok := duplicateName(doc)
		want, wantOK := duplicateOracle(t, doc)
		if got != want || ok != wantOK {
			t.Fatalf("%q: %q %v, the oracle %q %v", doc, got, ok, want, wantOK)
		}
	})
}

func duplicateOracle(t *testing.T, doc []byte) (string, bool) {
	type level struct {
		object bool
		names  map[string]bool
		key    string // the object's name being read
		index  int    // the array's element being read
		want   bool   // an object's next string is a name
	}
	escape := strings.NewReplacer("~", "~0", "/", "~1").Replace // the oracle's own
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber() // a number past float64 is still JSON
	var stack []*level
	// value ends a value in the level above: an array moves on, an object
	// wants its next name.
	value := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].object {
				stack[n-1].want = true
			} else {
				stack[n-1].index++
			}
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return "", false
		}
		if err != nil {
			t.Fatalf("the oracle cannot read %q: %v", doc, err)
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &level{object: true, names: map[string]bool{}, want: true})
			case '[':
				stack = append(stack, &level{})
			default:
				stack = stack[:len(stack)-1]
				value()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].want {
				top := stack[n-1]
				if top.names[v] {
					var b strings.Builder
					for _, l := range stack[:n-1] {
						b.WriteByte('/')
						if l.object {
							b.WriteString(escape(l.key))
						} else {
							b.WriteString(strconv.Itoa(l.index))
						}
					}
					return b.String() + "/" + escape(v), true
				}
				top.names[v], top.key, top.want = true, v, false
				continue
			}
			value()
		default:
			value()
		}
	}
}
