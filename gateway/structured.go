package gateway

import (
	"encoding/json"

	"github.com/tidwall/gjson"
)

// WithoutMetaKeys drops the root's "$schema" and "$id": providers take a
// schema's body, not its identity.
func WithoutMetaKeys(schema json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(schema, &m) != nil {
		return schema
	}
	delete(m, "$schema")
	delete(m, "$id")
	out, err := json.Marshal(m)
	if err != nil {
		return schema
	}
	return out
}

// StructuredText is the answer to a structured-output request: the input
// of the forced tool when the provider answered with it, else the text.
func (r *Response) StructuredText(o *OutputSchema) string {
	if o != nil {
		for _, b := range r.Content {
			if b.Type == "tool_use" && b.Name == o.Name && len(b.Input) > 0 {
				return string(b.Input)
			}
		}
	}
	return r.Text()
}

// ObjectRoot reports whether a JSON Schema (an object) describes an
// object at its root, or says no type there: the structured output of
// OpenAI and of Anthropic's forced tool take nothing else.
func ObjectRoot(schema []byte) bool {
	t := gjson.GetBytes(schema, "type")
	return !t.Exists() || t.Type == gjson.String && t.Str == "object"
}

// StrictSchema reports whether a JSON Schema meets the rules of OpenAI's
// strict structured outputs that other providers do not hold a schema
// to: every object closed (additionalProperties false) with every one of
// its properties required. Anthropic takes optional properties; sent
// strict, such a schema is OpenAI's 400, so it goes without strict.
func StrictSchema(schema json.RawMessage) bool {
	return strictNode(gjson.ParseBytes(schema))
}

func strictNode(s gjson.Result) bool {
	if !s.IsObject() {
		return true // true, false: nothing to hold
	}
	props := s.Get("properties")
	t := s.Get("type")
	object := props.Exists() || t.Str == "object" || t.IsArray() && namesObject(t)
	if object {
		if ap := s.Get("additionalProperties"); ap.Type != gjson.False {
			return false
		}
		required := map[string]bool{}
		for _, r := range s.Get("required").Array() {
			required[r.Str] = true
		}
		ok := true
		props.ForEach(func(k, v gjson.Result) bool {
			ok = required[k.Str] && strictNode(v)
			return ok
		})
		if !ok {
			return false
		}
	}
	for _, key := range []string{"items", "prefixItems", "anyOf", "oneOf", "allOf", "not"} {
		v := s.Get(key)
		if v.IsArray() {
			for _, e := range v.Array() {
				if !strictNode(e) {
					return false
				}
			}
		} else if !strictNode(v) {
			return false
		}
	}
	for _, key := range []string{"$defs", "definitions"} {
		ok := true
		s.Get(key).ForEach(func(_, v gjson.Result) bool {
			ok = strictNode(v)
			return ok
		})
		if !ok {
			return false
		}
	}
	return true
}

// namesObject reports whether a type array names object.
func namesObject(t gjson.Result) bool {
	for _, e := range t.Array() {
		if e.Str == "object" {
			return true
		}
	}
	return false
}
