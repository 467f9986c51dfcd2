package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/gateway"
)

// Anthropic's structured output (output_config.format, and strict tools)
// takes a subset of JSON Schema and answers 400 to the rest: no numeric,
// string-length or array-size bounds beyond minItems 0 or 1, objects
// closed (additionalProperties false), a short list of string formats
// (docs: build-with-claude/structured-outputs, JSON Schema limitations).
// Baton's own task schemas bound lengths and counts, and clients send
// OpenAI-style schemas that do too, so the schema a Claude model gets is
// brought into that subset as Anthropic's SDKs do it: what it cannot take
// is said in the description instead, and the answer is still checked
// against the whole schema (generate validates it; a client its own).

// unsupportedKeys are the keywords the subset lacks.
var unsupportedKeys = []string{
	"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
	"minLength", "maxLength", "maxItems", "uniqueItems", "contains", "minContains", "maxContains",
	"minProperties", "maxProperties", "patternProperties", "propertyNames", "dependentRequired",
	"dependentSchemas", "unevaluatedProperties", "unevaluatedItems", "prefixItems", "not", "if", "then", "else",
}

// nativeFormats are the string formats the subset takes.
var nativeFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}

// NativeSchema is schema as Claude's structured output takes it (above),
// without the meta keys ($schema, $id). A schema that is not a JSON
// object goes as it is: Anthropic says what is wrong with it.
func NativeSchema(schema json.RawMessage) json.RawMessage {
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber() // numbers kept as written
	var m map[string]any
	if d.Decode(&m) != nil || m == nil {
		return schema
	}
	delete(m, "$schema")
	delete(m, "$id")
	out, err := json.Marshal(nativeSchema(m, 0))
	if err != nil {
		return schema
	}
	return out
}

// nativeSchema rewrites s in place, and the schemas within it, to depth
// gateway.MaxJSONDepth (a decoded body is no deeper).
func nativeSchema(s map[string]any, depth int) map[string]any {
	if depth > gateway.MaxJSONDepth {
		return s
	}
	moved := map[string]any{}
	for _, k := range unsupportedKeys {
		if v, ok := s[k]; ok {
			moved[k] = v
			delete(s, k)
		}
	}
	if n, ok := s["minItems"].(json.Number); ok && n.String() != "0" && n.String() != "1" {
		moved["minItems"] = n
		s["minItems"] = json.Number("1") // the part of the bound it takes
	}
	if f, ok := s["format"].(string); ok && !slices.Contains(nativeFormats, f) {
		moved["format"] = f
		delete(s, "format")
	}
	if one, ok := s["oneOf"]; ok {
		// Exactly one is at least one, as the subset says it; generate's
		// check holds the rest.
		if _, both := s["anyOf"]; !both {
			s["anyOf"] = one
			delete(s, "oneOf")
		}
	}
	if isObjectSchema(s) {
		if ap, ok := s["additionalProperties"]; ok && ap != false {
			moved["additionalProperties"] = ap
		}
		s["additionalProperties"] = false
	}
	sub := func(v any) {
		if m, ok := v.(map[string]any); ok {
			nativeSchema(m, depth+1)
		}
	}
	for _, k := range []string{"properties", "$defs", "definitions"} {
		if m, ok := s[k].(map[string]any); ok {
			for _, v := range m {
				sub(v)
			}
		}
	}
	for _, k := range []string{"anyOf", "allOf", "oneOf"} {
		if a, ok := s[k].([]any); ok {
			for _, v := range a {
				sub(v)
			}
		}
	}
	switch it := s["items"].(type) {
	case map[string]any:
		sub(it)
	case []any: // the tuple form of older drafts
		moved["items"] = it
		delete(s, "items")
	}
	if len(moved) > 0 {
		s["description"] = withConstraints(s["description"], moved)
	}
	return s
}

// isObjectSchema reports whether s describes an object: its type says so,
// or it lists properties.
func isObjectSchema(s map[string]any) bool {
	switch t := s["type"].(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	_, props := s["properties"]
	return props
}

// withConstraints is a description with the constraints moved out of its
// schema said after it, as {minLength: 1, maxLength: 100}.
func withConstraints(desc any, moved map[string]any) string {
	keys := make([]string, 0, len(moved))
	for k := range moved {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v, err := json.Marshal(moved[k])
		if err != nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %s", k, v))
	}
	said := "{" + strings.Join(parts, ", ") + "}"
	if d, ok := desc.(string); ok && d != "" {
		return d + "\n\n" + said
	}
	return said
}
