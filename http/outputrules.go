package http

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/gateway/tasks"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// outputRuleFor is taskType's rule for input: what its output must be
// beyond the type's schema, because it depends on the input.
func outputRuleFor(taskType string, input json.RawMessage) outputRule {
	switch taskType {
	case "classify":
		return classifyRule(input)
	case "extract_fields":
		return extractRule(input)
	case "viral_hook":
		return outputRule{check: hookCheck}
	}
	return outputRule{}
}

// classifyRule: the label is one of the input's labels, given to the
// model as an enum (which OpenAI's strict structured output enforces) and
// checked.
func classifyRule(input json.RawMessage) outputRule {
	// As the template reads it: the field of that exact name.
	var given []string
	l := gjson.GetBytes(input, "labels")
	if !l.IsArray() || json.Unmarshal([]byte(l.Raw), &given) != nil || len(given) == 0 {
		return outputRule{} // the input schema refuses it first
	}
	labels, _ := json.Marshal(given)
	return outputRule{
		schema: withEnum("properties.label.enum", labels),
		check: func(out json.RawMessage) []tasks.Violation {
			// By its exact name, as the schema reads it (encoding/json
			// would take "Label" too).
			label := gjson.GetBytes(out, "label")
			if label.Type != gjson.String || slices.Contains(given, label.String()) {
				return nil // not a string: the schema's check says so
			}
			return []tasks.Violation{{Pointer: "/label", Message: "must be one of the labels given: " + string(labels)}}
		},
	}
}

// withEnum sets the enum at path of the schema the model is given.
func withEnum(path string, values []byte) func(json.RawMessage) json.RawMessage {
	return func(schema json.RawMessage) json.RawMessage {
		if out, err := sjson.SetRawBytes(schema, path, values); err == nil {
			return out
		}
		return schema
	}
}

// extractRule: the output gives each field asked for once, by its name,
// with a value of its type or null; the names go to the model as an enum.
func extractRule(input json.RawMessage) outputRule {
	// Every name by its exact spelling, as the schema and the template
	// read it (encoding/json would take "Name" or "NAME" too).
	type field struct{ Name, Type string }
	var asked []field
	f := gjson.GetBytes(input, "fields")
	if !f.IsArray() {
		return outputRule{} // the input schema refuses it first
	}
	for _, a := range f.Array() {
		asked = append(asked, field{a.Get("name").String(), a.Get("type").String()})
	}
	if len(asked) == 0 {
		return outputRule{}
	}
	types := map[string]string{}
	var names []string
	var conflicts []tasks.Violation
	for i, a := range asked {
		if typ, ok := types[a.Name]; !ok {
			names = append(names, a.Name)
		} else if typ != a.Type {
			// Given once, the field has one value: it cannot be of both.
			conflicts = append(conflicts, tasks.Violation{Pointer: fmt.Sprintf("/fields/%d/type", i),
				Message: fmt.Sprintf("%q is asked for as %s before; a field has one type", a.Name, typ)})
			continue
		}
		types[a.Name] = a.Type
	}
	enum, _ := json.Marshal(names)
	return outputRule{
		input:  conflicts,
		schema: withEnum("properties.fields.items.properties.name.enum", enum),
		check: func(out json.RawMessage) []tasks.Violation {
			fields := gjson.GetBytes(out, "fields")
			if !fields.IsArray() {
				return nil // the schema's check says what is wrong
			}
			var v []tasks.Violation
			seen := map[string]bool{}
			for i, got := range fields.Array() {
				at := fmt.Sprintf("/fields/%d", i)
				name := got.Get("name")
				if !got.IsObject() || name.Type != gjson.String {
					return nil // the schema's check says what is wrong
				}
				typ, ok := types[name.String()]
				value := got.Get("value")
				switch {
				case !ok:
					v = append(v, tasks.Violation{Pointer: at + "/name", Message: "must be one of the fields asked for: " + string(enum)})
				case seen[name.String()]:
					v = append(v, tasks.Violation{Pointer: at + "/name", Message: fmt.Sprintf("%q is given twice; give each field once", name.String())})
				case !valueOfType(json.RawMessage(value.Raw), typ):
					v = append(v, tasks.Violation{Pointer: at + "/value", Message: fmt.Sprintf("must be %s, or null when the text does not say", typeWords(typ))})
				}
				seen[name.String()] = true
			}
			var missing []string
			for _, n := range names {
				if !seen[n] {
					missing = append(missing, n)
				}
			}
			if len(missing) > 0 {
				v = append(v, tasks.Violation{Pointer: "/fields", Message: "missing " + strings.Join(missing, ", ") + "; give every field asked for, null when the text does not say"})
			}
			return v
		},
	}
}

// valueOfType reports whether a field's value is of the type asked for
// (extract_fields' types), or null.
func valueOfType(raw json.RawMessage, typ string) bool {
	g := gjson.ParseBytes(raw)
	if len(raw) == 0 || g.Type == gjson.Null {
		return true
	}
	switch typ {
	case "string":
		return g.Type == gjson.String
	case "number":
		return g.Type == gjson.Number
	case "integer":
		return g.Type == gjson.Number && g.Num == math.Trunc(g.Num) && !math.IsInf(g.Num, 0)
	case "boolean":
		return g.IsBool()
	case "date":
		_, err := time.Parse(time.DateOnly, g.Str)
		return g.Type == gjson.String && err == nil
	}
	return true
}

func typeWords(typ string) string {
	switch typ {
	case "date":
		return "a date, a string YYYY-MM-DD"
	case "integer":
		return "an integer"
	}
	return "a " + typ
}

// hookCheck: bestIndex names one of the hooks.
func hookCheck(out json.RawMessage) []tasks.Violation {
	g := gjson.ParseBytes(out)
	n, best := len(g.Get("hooks").Array()), g.Get("bestIndex")
	if best.Type != gjson.Number || n == 0 || best.Num >= 0 && best.Num < float64(n) {
		return nil // the schema's check says what is wrong
	}
	return []tasks.Violation{{Pointer: "/bestIndex", Message: fmt.Sprintf("must be the index of one of the %d hooks (0 to %d)", n, n-1)}}
}
