package http

import (
	"encoding/json"
	"math"
	"testing"
)

// The estimated cost is written as encoding/json writes it.
func TestAppendCostIsEncodingJSONs(t *testing.T) {
	for _, f := range []float64{0, 1, 0.000148, 3.7e-6, 1e-7, 9.99e-7, 2.5e-9, 123.456, 1e20, 1e21, 1.5e21, -0.02015, 0.1 + 0.2} {
		want, _ := json.Marshal(&f)
		got, ok := appendCost(nil, &f)
		if !ok || string(got) != string(want) {
			t.Errorf("%v: %s, want %s", f, got, want)
		}
	}
	if got, ok := appendCost(nil, nil); !ok || string(got) != "null" {
		t.Errorf("nil: %s", got)
	}
	for _, f := range []float64{math.NaN(), math.Inf(1)} {
		if _, ok := appendCost(nil, &f); ok {
			t.Errorf("%v: ok", f)
		}
	}
}
