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
