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
