package http

import (
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
