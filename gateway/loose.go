package gateway

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// LooseString and LooseInt are fields of the providers' wire types that
// Baton writes on its own answers but does not read from an upstream's (an
// object name, a role, an index, a creation time): they decode any JSON
// value, another type as the zero value, so that a compatible server's odd
// value there does not fail its answer; they encode as what they hold.
type LooseString string

// LooseInt decodes a number with a fraction truncated (SambaNova sends
// fractional seconds), anything else as 0.
type LooseInt int64

func (s *LooseString) UnmarshalJSON(b []byte) error {
	var v string
	if len(b) > 0 && b[0] == '"' && json.Unmarshal(b, &v) == nil {
		*s = LooseString(v)
		return nil
	}
	*s = ""
	return nil
}

func (n *LooseInt) UnmarshalJSON(b []byte) error {
	*n = 0
	if f, err := strconv.ParseFloat(string(b), 64); err == nil && f > math.MinInt64 && f < math.MaxInt64 {
		*n = LooseInt(f)
	}
	return nil
}

// Count is a token count of an upstream's usage as an adapter reads it:
// any JSON number within an int's range, an integer in any form of one
// (1200, 1200.0, 1.2e3) and a fraction truncated (12.7 is 12), as the
// passthrough reads the same answer (gjson's Int): the call was served, and
// is billed alike either way. Another JSON type, or a number beyond an
// int, is encoding/json's error for an int (the answer is malformed); null
// leaves it as it is.
type Count int

func (n *Count) UnmarshalJSON(b []byte) error {
	var i int
	err := json.Unmarshal(b, &i)
	if err == nil {
		*n = Count(i)
		return nil
	}
	if f, ferr := strconv.ParseFloat(string(b), 64); ferr == nil && f > math.MinInt64 && f < math.MaxInt64 {
		*n = Count(f)
		return nil
	}
	return err
}

// Deref is *p, or T's zero value for nil (an optional field of a wire
// type read where its absence means empty).
func Deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// JSONOf is v as JSON text, for values that always encode (strings, maps
// and slices of them), as the adapters fill a wire type's raw fields.
func JSONOf(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// MaxNumberFixes bounds the decodes of one body that WholeNumber mends.
const MaxNumberFixes = 16

// WholeNumber mends the integer a type error is about when it was written
// as a whole number in another form (1e3, 1000.0: what a Python client's
// float gives): the providers take it, and so does the passthrough's
// skim, so a translated call does too, on every front. It returns doc
// with the number written as an integer (a copy), or false.
func WholeNumber(doc []byte, te *json.UnmarshalTypeError) ([]byte, bool) {
	text, isNum := strings.CutPrefix(te.Value, "number ")
	end := int(te.Offset)
	if !isNum || !strings.ContainsAny(text, ".eE") || end < len(text) || end > len(doc) || string(doc[end-len(text):end]) != text {
		return nil, false
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return nil, false
	}
	switch te.Type.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		if f < 0 {
			return nil, false
		}
	default:
		return nil, false
	}
	out := make([]byte, 0, len(doc))
	out = append(out, doc[:end-len(text)]...)
	out = strconv.AppendInt(out, int64(f), 10)
	return append(out, doc[end:]...), true
}
