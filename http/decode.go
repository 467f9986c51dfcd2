package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/gateway"
)

// DefaultMaxBody is the default request body limit.
const DefaultMaxBody = 1 << 20

// DefaultMaxModelBody is the default body limit of the model calls: as
// much as Anthropic's Messages API takes (32 MB), so that a long coding
// session's history goes through.
const DefaultMaxModelBody = 32 << 20

// tooLarge and malformed are the body errors: 413, and 400 for a body that
// is not JSON.
func tooLarge(limit int64) error {
	return domain.E("decode", domain.KindTooLarge, "body_too_large", "the request body is larger than %d bytes", limit)
}

func malformed(format string, args ...any) error {
	return domain.E("decode", domain.KindBadRequest, "malformed_json", format, args...)
}

// bodyReadTimeout bounds how long a request body may take to arrive,
// counted from the end of the headers: a client trickling a body, or
// stopping half-way, must not hold a connection, a goroutine and a buffer
// for ever. (Not a server-wide ReadTimeout, which would also cut streamed
// answers.) A variable for the tests.
var bodyReadTimeout = 30 * time.Second

// encoded reports whether a Content-Encoding (its header lines joined, as
// HTTP reads repeated lines) names a coding other than identity.
func encoded(ce string) bool {
	for c := range strings.SplitSeq(ce, ",") {
		if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
			return true
		}
	}
	return false
}

// readBody reads the whole body under the limit. The deadline for it to
// arrive (bodyReadTimeout) is set and lifted by withBodyDeadline: lifted
// here, it would be gone for the rest of a body not read to its end.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	// net/http does not decompress a request body: a compressed one would
	// be refused as "not valid JSON", which sends its client looking at
	// the wrong thing.
	if ce := strings.Join(r.Header.Values("Content-Encoding"), ", "); encoded(ce) {
		if len(ce) > 32 {
			ce = ce[:32] + "..."
		}
		return nil, domain.E("decode", domain.KindBadRequest, "unsupported_content_encoding",
			"the request body is sent with Content-Encoding %q, which is not supported; send it uncompressed", ce)
	}
	body, err := gateway.ReadAll(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	if err != nil {
		return nil, readFailure(err, limit, domain.E("decode", domain.KindBadRequest, "unreadable_body", "the request body could not be read"))
	}
	return body, nil
}

// readFailure is the answer to a body read that failed under a limit of
// limit bytes: too large, too slow, or else otherwise.
func readFailure(err error, limit int64, otherwise error) error {
	var over *http.MaxBytesError
	if errors.As(err, &over) {
		return tooLarge(limit)
	}
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		return bodyTimeout()
	}
	return otherwise
}

// bodyTimeout is the answer to a body that did not arrive in time.
func bodyTimeout() error {
	return domain.E("decode", domain.KindRequestTimeout, "body_timeout",
		"the request body did not arrive within %v of its headers (the server's limit); nothing was done: send it again", bodyReadTimeout)
}

// decodeBody parses a JSON object body into dst. Unknown fields are
// ignored, so additive changes stay compatible. Malformed JSON is a 400;
// JSON of the wrong shape is a 422 naming the field.
// readJSON reads the request's body and decodes it into dst. When either
// fails it has answered with Baton's error shape and ok is false.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, dst any) (body []byte, ok bool) {
	body, err := readBody(w, r, s.maxBody)
	if err == nil {
		err = decodeBody(body, dst)
	}
	if err != nil {
		s.writeError(w, r, err)
		return nil, false
	}
	return body, true
}

// decodeBody also refuses a body that gives a name twice in one object
// (duplicateName).
func decodeBody(body []byte, dst any) error { return decode(body, dst, true) }

// decodeWire is decodeBody for the model fronts, which refuse a name given
// twice where Baton and the provider could read different ones (skimObject,
// uniqueNames); deeper, the translated body is Baton's alone to read.
func decodeWire(body []byte, dst any) error {
	if err := gateway.TooManyItems(body, "messages"); err != nil {
		return err
	}
	return decode(body, dst, false)
}

func decode(body []byte, dst any, unique bool) error {
	trimmed := trimJSONSpace(body)
	if len(trimmed) == 0 {
		return malformed("the request body is empty; send a JSON object")
	}
	if !utf8.Valid(trimmed) {
		// JSON text is UTF-8 (RFC 8259): decoded, the bad bytes would
		// become U+FFFD, recorded for ever as if the client sent it.
		return malformed("the request body is not valid UTF-8 (at byte %d)", invalidUTF8At(body))
	}
	if trimmed[0] != '{' {
		if !json.Valid(trimmed) {
			return malformed("the request body is not valid JSON")
		}
		return domain.Invalid("decode", domain.FieldError{Pointer: "", Code: "invalid_type", Message: "the body must be a JSON object"})
	}
	if unique {
		// An escaped half of a surrogate pair alone (\ud800) is JSON by
		// its grammar, but no character: decoded it becomes U+FFFD, and the
		// ledger would record for ever what the client did not send.
		if at := domain.LoneSurrogateAt(trimmed); at >= 0 {
			return malformed("the request body escapes half a UTF-16 surrogate pair alone (at byte %d), which is no character; send the character itself or both halves", at)
		}
	}
	sent := trimmed
	trimmed = withoutFoldedKeys(trimmed, dst)
	// Unmarshal checks the whole document before decoding: a syntax error
	// means nothing was decoded.
	for fixes := 0; ; fixes++ {
		err := json.Unmarshal(trimmed, dst)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			if strings.Contains(se.Error(), "exceeded max depth") { // valid JSON, too deep to read
				return malformed("the request body nests arrays and objects more than %d deep (at byte %d)", gateway.MaxJSONDepth, se.Offset)
			}
			return malformed("the request body is not valid JSON (at byte %d)", se.Offset)
		}
		if fixes == 0 && unique {
			// The body is JSON (no syntax error); Unmarshal took the last
			// of two equal names without a word.
			if ptr, ok := duplicateName(sent); ok {
				return duplicateField(ptr)
			}
		}
		if err == nil {
			return nil
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if fixed, ok := gateway.WholeNumber(trimmed, te); ok && fixes < gateway.MaxNumberFixes {
				trimmed = fixed
				reflect.ValueOf(dst).Elem().SetZero()
				continue
			}
			ptr := fieldPointer(reflect.TypeOf(dst), te.Field, trimmed, te.Offset)
			kind := jsonKind(te.Type.Kind().String())
			if num, ok := strings.CutPrefix(te.Value, "number "); ok && kind == "a number" {
				// A number is what was asked: this one is beyond any float.
				return domain.Invalid("decode", domain.FieldError{Pointer: ptr, Code: "out_of_range", Message: fmt.Sprintf("is %s, a number out of range", num)})
			}
			return domain.Invalid("decode", domain.FieldError{Pointer: ptr, Code: "invalid_type", Message: fmt.Sprintf("must be %s, not %s", kind, te.Value)})
		}
		var de *domain.Error
		if errors.As(err, &de) { // a field's own decoder, naming it
			return de
		}
		return domain.Invalid("decode", domain.FieldError{Pointer: "", Code: "invalid_body", Message: err.Error()})
	}
}

// twiceFormat is the refusal of a name given twice, on every endpoint.
const twiceFormat = "the request body gives the field %q twice; a JSON object's names must be unique"

func duplicateField(ptr string) error {
	return duplicateFieldSaying(ptr, fmt.Sprintf(twiceFormat, ptr))
}

// duplicateFieldSaying is duplicateField with a message of its own.
func duplicateFieldSaying(ptr, msg string) error {
	e := domain.E("decode", domain.KindBadRequest, "duplicate_field", "%s", msg)
	e.Fields = []domain.FieldError{{Pointer: ptr, Code: "duplicate_field", Message: msg}}
	return e
}

// duplicateName returns the JSON pointer of the first name that doc, valid
// JSON, gives twice in one object (as encoding/json compares names when it
// fills a map; a struct field's name of another case is dropped before, by
// withoutFoldedKeys). One pass without recursion: gjson's ForEach at every
// level would scan a nested value again for each level above it.
func duplicateName(doc []byte) (string, bool) {
	var stack []nameLevel
	for i := 0; i < len(doc); i++ {
		switch doc[i] {
		case '{':
			stack = append(stack, nameLevel{object: true, wantName: true})
		case '[':
			stack = append(stack, nameLevel{})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].object {
					stack[n-1].wantName = true
				} else {
					stack[n-1].index++
				}
			}
		case '"':
			start := i
			for i++; i < len(doc) && doc[i] != '"'; i++ {
				if doc[i] == '\\' {
					i++
				}
			}
			n := len(stack)
			if n == 0 || !stack[n-1].wantName || i >= len(doc) {
				continue
			}
			top := &stack[n-1]
			top.wantName = false
			name := jsonName(doc[start : i+1])
			if top.named {
				if _, seen := top.names[name]; seen || name == top.first {
					return pointerOf(stack[:n-1], name), true
				}
				if top.names == nil {
					top.names = map[string]struct{}{top.first: {}}
				}
				top.names[name] = struct{}{}
			} else {
				top.first = name
			}
			top.named = true
			top.at = name
		}
	}
	return "", false
}

// nameLevel is an object or array that duplicateName is in.
type nameLevel struct {
	object, wantName bool
	named            bool                // an object's first name was read
	first            string              // its first name
	names            map[string]struct{} // all of them, from the second on
	at               string              // the name being read
	index            int                 // an array's element being read
}

// jsonName is a name as encoding/json decodes it, from its quoted text.
func jsonName(quoted []byte) string {
	if bytes.IndexByte(quoted, '\\') < 0 && utf8.Valid(quoted) {
		return string(quoted[1 : len(quoted)-1])
	}
	var s string
	json.Unmarshal(quoted, &s) // valid: the document is
	return s
}

// pointerOf is the JSON pointer of name in the object inside the levels
// of stack.
func pointerOf(stack []nameLevel, name string) string {
	var b strings.Builder
	for _, l := range stack {
		b.WriteByte('/')
		if l.object {
			b.WriteString(domain.PointerToken(l.at))
		} else {
			b.WriteString(strconv.Itoa(l.index))
		}
	}
	b.WriteByte('/')
	b.WriteString(domain.PointerToken(name))
	return b.String()
}

// fieldPointer is the JSON pointer of an UnmarshalTypeError in doc, the
// document decoded. Its Field is a path of Go's: it names the embedded
// structs a field was promoted from (OpenAISampling.seed), which the client
// never wrote, and no array index; the indexes are found in doc from where
// the decoder stopped (offset, just after the value at fault).
func fieldPointer(t reflect.Type, field string, doc []byte, offset int64) string {
	var names []string
	for seg := range strings.SplitSeq(field, ".") {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
			t = t.Elem()
		}
		if t != nil && t.Kind() == reflect.Struct {
			if f, ok := t.FieldByName(seg); ok && f.Anonymous && f.Tag.Get("json") == "" {
				t = f.Type
				continue
			}
			var next reflect.Type
			for _, jf := range jsonFields(t) {
				if jf.name == seg {
					next = jf.typ
					break
				}
			}
			t = next
		}
		names = append(names, seg)
	}
	var out []string
	cur := gjson.Parse(string(doc))
	into := func() { // down the array elements that hold the value at fault
		for cur.IsArray() {
			i, at := 0, -1
			cur.ForEach(func(_, v gjson.Result) bool {
				if int64(v.Index) < offset && offset <= int64(v.Index+len(v.Raw)) {
					at, cur = i, v
					return false
				}
				i++
				return true
			})
			if at < 0 {
				return
			}
			out = append(out, strconv.Itoa(at))
		}
	}
	for _, n := range names {
		into()
		out = append(out, n)
		if cur.IsObject() {
			cur = cur.Get(gjsonEscape(n))
		} else {
			cur = gjson.Result{}
		}
	}
	into()
	return "/" + strings.Join(out, "/")
}

// gjsonEscape escapes a field name for a gjson path.
func gjsonEscape(name string) string {
	var b strings.Builder
	for _, r := range name {
		if strings.ContainsRune(`.*?|#@!\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// trimJSONSpace trims only what JSON calls whitespace (RFC 8259: space,
// tab, line feed, carriage return). bytes.TrimSpace would also take a
// no-break space or U+2028 off a body that is then not JSON to the secret
// scanner, which parses the body as sent.
func trimJSONSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\n\r")
}

// jsonField is a struct field as encoding/json names it.
type jsonField struct {
	name string
	typ  reflect.Type
}

// fieldNames caches the JSON fields of a struct, embedded ones' included.
var fieldNames sync.Map // reflect.Type -> []jsonField

func jsonFields(t reflect.Type) []jsonField {
	if v, ok := fieldNames.Load(t); ok {
		return v.([]jsonField)
	}
	var fields []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			fields = append(fields, jsonFields(f.Type)...)
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		fields = append(fields, jsonField{tag, f.Type})
	}
	fieldNames.Store(t, fields)
	return fields
}

// foldedKeys collects the keys in v that encoding/json would take for a
// field of t of another case.
func foldedKeys(v gjson.Result, t reflect.Type, out *[]gjson.Result) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && v.IsObject():
		fields := jsonFields(t)
		v.ForEach(func(k, val gjson.Result) bool {
			for _, f := range fields {
				if k.Str == f.name {
					foldedKeys(val, f.typ, out)
					return true
				}
			}
			for _, f := range fields {
				if strings.EqualFold(k.Str, f.name) {
					*out = append(*out, k)
					break
				}
			}
			return true
		})
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t.Elem().Kind() != reflect.Uint8 && v.IsArray():
		v.ForEach(func(_, val gjson.Result) bool {
			foldedKeys(val, t.Elem(), out)
			return true
		})
	}
}

// withoutFoldedKeys renames to "" the keys that encoding/json would take
// for a field of another case ("Model", "ſtream", a message's "Content"):
// the wire formats Baton speaks name their fields exactly, so such a key
// is an unknown field, ignored as unknown fields are, not read as the
// field it resembles. No field is named "". The body is copied once,
// whatever the number of such keys (deleting them one by one copied it
// for each).
func withoutFoldedKeys(body []byte, dst any) []byte {
	t := reflect.TypeOf(dst)
	if t == nil {
		return body
	}
	var drop []gjson.Result
	foldedKeys(gjson.ParseBytes(body), t, &drop)
	if len(drop) == 0 || !gjson.ValidBytes(body) {
		return body // (a body that is not JSON is refused by Unmarshal, at its offset)
	}
	out := make([]byte, 0, len(body))
	last := 0
	for _, k := range drop { // in the body's order
		end := k.Index + len(k.Raw)
		if k.Index < last || end > len(body) || string(body[k.Index:end]) != k.Raw {
			continue
		}
		out = append(append(out, body[last:k.Index]...), `""`...)
		last = end
	}
	return append(out, body[last:]...)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	case "int", "int64", "int32", "uint", "uint64", "uint32":
		return "an integer"
	case "float64", "float32":
		return "a number"
	}
	return goKind
}

// invalidUTF8At is the offset of b's first byte that is not UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}
