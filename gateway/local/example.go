package local

import (
	"math"
	"slices"
	"sort"
	"strings"
)

// exampleOf builds a JSON value that validates against a schema of the
// subset the task types use (type, properties, required, items, minItems,
// maxItems, enum, const, minimum, maximum, minLength, maxLength), filling
// strings with the prompt's words. It is how the provider answers structured requests: deterministic, schema-valid, and
// plainly not a language model. nth is the index of the array item the
// value is in (0 outside arrays): the items of an array take an enum's
// values in turn, so that items named by an enum (extract_fields' fields)
// name each once.
func exampleOf(schema map[string]any, words []string, path string, nth int) any {
	word := func(n int) string {
		if len(words) == 0 {
			return "example"
		}
		var b []string
		for i := range n {
			b = append(b, words[(len(path)+i)%len(words)])
		}
		return strings.Join(b, " ")
	}
	if c, ok := schema["const"]; ok {
		return c
	}
	if e, ok := schema["enum"].([]any); ok && len(e) > 0 {
		return e[nth%len(e)]
	}
	typ := schema["type"]
	if list, ok := typ.([]any); ok && len(list) > 0 {
		typ = list[0]
		if slices.Contains(list, any("null")) {
			typ = "null" // valid whatever else a rule beyond the schema asks of the value
		}
	}
	num := func(key string, def float64) float64 {
		if v, ok := schema[key].(float64); ok {
			return v
		}
		return def
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := props[k].(map[string]any); ok {
				out[k] = exampleOf(ps, words, path+"/"+k, nth)
			}
		}
		return out
	case "array":
		items, _ := schema["items"].(map[string]any)
		n := int(math.Max(1, num("minItems", 1)))
		if k := enumOfItems(items); k > n {
			n = k // an item for each value: items named by an enum name each once
		}
		if mx := num("maxItems", math.Inf(1)); float64(n) > mx {
			n = int(mx)
		}
		out := make([]any, 0, n)
		for i := range n {
			out = append(out, exampleOf(items, words, path+"/"+strings.Repeat("i", i+1), i))
		}
		return out
	case "integer":
		return int64(math.Max(num("minimum", 0), 0))
	case "number":
		lo, hi := num("minimum", 0), num("maximum", 1)
		return math.Min(math.Max(lo, 0.5), hi)
	case "boolean":
		return false
	case "null":
		return nil
	}
	// string (or no type): words from the prompt, within the length bounds.
	s := word(6)
	if mx := int(num("maxLength", 0)); mx > 0 && len([]rune(s)) > mx {
		s = string([]rune(s)[:mx])
	}
	for mn := int(num("minLength", 0)); len([]rune(s)) < mn; {
		s += " " + word(1)
	}
	return s
}

// enumOfItems is the most values an enum of an object item's properties
// has (0: none).
func enumOfItems(items map[string]any) int {
	props, _ := items["properties"].(map[string]any)
	n := 0
	for _, p := range props {
		if ps, ok := p.(map[string]any); ok {
			if e, ok := ps["enum"].([]any); ok {
				n = max(n, len(e))
			}
		}
	}
	return n
}
