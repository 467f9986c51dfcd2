package http

import (
	"encoding/json"
	"reflect"
	"regexp"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

var plainPath = regexp.MustCompile(`^[a-z_]+(\.[a-z_]+)*$`)

// FuzzSetField: Baton's fields spliced into an upstream's answer (any bytes
// a provider may send) give what sjson's full edit gives, and never a body
// that is not JSON when the answer was.
func FuzzSetField(f *testing.F) {
	for _, s := range []string{`{}`, ` { } `, `{"a":1}`, `{"usage":{}}`, `{"usage":{"x":1},"svc":2}`, `{"message":{"id":"m"}}`,
		`{"message":[1]}`, `[1]`, `"x"`, `{"a":"}"}`, `{"usage":{"estimated_cost_usd":1}}`, "{\"a\":1}\n"} {
		f.Add([]byte(s), "svc")
		f.Add([]byte(s), "usage.estimated_cost_usd")
		f.Add([]byte(s), "message.svc")
	}
	f.Fuzz(func(t *testing.T, raw []byte, path string) {
		if !gjson.ValidBytes(raw) || !plainPath.MatchString(path) {
			return // Baton's paths are plain names (svc, message.svc, usage.estimated_cost_usd)
		}
		got := setField(raw, path, map[string]any{"requestId": "r"})
		if json.Valid(raw) && !json.Valid(got) {
			t.Fatalf("%s -> not JSON: %s", raw, got)
		}
		want, err := sjson.SetRawBytes(raw, path, []byte(`{"requestId":"r"}`))
		if err != nil {
			return
		}
		var a, b any
		if json.Unmarshal(got, &a) != nil || json.Unmarshal(want, &b) != nil {
			return
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s at %q: spliced %s, sjson %s", raw, path, got, want)
		}
	})
}

// FuzzSvcJSON: svc written by hand is what json.Marshal writes.
func FuzzSvcJSON(f *testing.F) {
	f.Add("chatcmpl-1", "openai", "openai:gpt-4o-mini", true, "stop")
	f.Add("a\"b", "<p>", "x\u2028y", false, "")
	f.Fuzz(func(t *testing.T, id, prov, model string, fb bool, stop string) {
		var s svcTrace
		s.RequestID, s.Trace.SelectedProvider, s.Trace.SelectedModel, s.Trace.FallbackUsed, s.Trace.NativeStopReason = id, prov, model, fb, stop
		want, _ := json.Marshal(s)
		if got := s.appendJSON(nil); string(got) != string(want) {
			t.Fatalf("%s, want %s", got, want)
		}
	})
}

// FuzzSvcAndCost: the one-pass splice of a finished answer's svc and cost
// gives what the general edit gives.
func FuzzSvcAndCost(f *testing.F) {
	for _, s := range []string{`{}`, ` {"id":"x"} `, `{"usage":{}}`, `{"usage":{"a":1},"x":[1,{"usage":2}]}`, `{"usage":3}`,
		`{"svc":1}`, `{"usage":{"estimated_cost_usd":1}}`, `{"usage":{},"usage":{"b":2}}`, `[1]`, `{"a":"}"}`} {
		f.Add([]byte(s), 0.25, true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, c float64, priced bool) {
		if !json.Valid(raw) {
			return
		}
		var cost *float64
		if priced {
			cost = &c
		}
		var s svcTrace
		s.RequestID = "r"
		got := withSvcAndCost(raw, s, cost)
		want := withSvc(raw, "svc", s, "usage", cost)
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("%s -> not JSON: %s", raw, got)
		}
		if json.Unmarshal(want, &b) != nil {
			return
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: spliced %s, general %s", raw, got, want)
		}
	})
}
