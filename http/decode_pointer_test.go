package http

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// A type error's pointer names the fields as the body does, array
// indexes included, and no embedded struct.
func TestFieldPointer(t *testing.T) {
	type Inner struct {
		Seed *int `json:"seed"`
	}
	type req struct {
		Inner
		Grid  [][]int `json:"grid"`
		Items []struct {
			Tags []string `json:"tags"`
		} `json:"items"`
	}
	for body, want := range map[string]string{
		`{"seed":"x"}`:           "/seed",
		`{"grid":[[1],[2,"x"]]}`: "/grid/1/1",
		`{"items":[{"tags":["a"]},{"tags":["b",3,"c"]}]}`: "/items/1/tags/1",
		`{"items":[{"tags":"a"}]}`:                        "/items/0/tags",
		`{"items":{"tags":1}}`:                            "/items",
	} {
		var v req
		err := json.Unmarshal([]byte(body), &v)
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			t.Fatalf("%s: %v", body, err)
		}
		if got := fieldPointer(reflect.TypeOf(&v), te.Field, []byte(body), te.Offset); got != want {
			t.Errorf("%s: %s (Go's field %q), want %s", body, got, te.Field, want)
		}
	}
}

// decodeBody takes a whole number written otherwise for an integer field,
// and nothing else: not a fraction, a negative for an unsigned field, an
// integer out of range, nor such a number for a string.
func TestDecodeWholeNumbers(t *testing.T) {
	type req struct {
		N   int      `json:"n"`
		U   uint     `json:"u"`
		S   int32    `json:"s"`
		F   float64  `json:"f"`
		Str string   `json:"str"`
		Ns  []int    `json:"ns"`
		P   *int64   `json:"p"`
		X   []string `json:"x"`
	}
	var ok req
	if err := decodeBody([]byte(`{"n":1e3,"u":2.0,"s":-3E1,"f":1.5,"ns":[1,2.0,3e0],"p":4.00}`), &ok); err != nil || ok.N != 1000 || ok.U != 2 || ok.S != -30 ||
		ok.F != 1.5 || len(ok.Ns) != 3 || ok.Ns[1] != 2 || ok.Ns[2] != 3 || ok.P == nil || *ok.P != 4 {
		t.Fatalf("%+v %v", ok, err)
	}
	for _, body := range []string{`{"n":1.5}`, `{"u":-1.0}`, `{"s":1e12}`, `{"s":5000000000}`, `{"str":1e3}`, `{"n":1e300}`, `{"x":[2.0]}`} {
		var v req
		if err := decodeBody([]byte(body), &v); err == nil {
			t.Errorf("%s: taken as %+v", body, v)
		}
	}
}
