package http

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/anthropic"
	"github.com/batonhq/baton/gateway/openai"
)

// A front's body goes to a provider of its own wire format as it is
// (gateway.Forwarder): these read, with gjson and without decoding the
// whole body, what routing, budgets and limits need. docs/api.md,
// Passthrough.

// skimmed is what a front reads of a body it may pass through.
type skimmed struct {
	model       string
	stream      bool
	streamUsage bool            // chat's stream_options.include_usage
	req         gateway.Request // the cap, the tools' names, the body's size
}

// skimDoc is a body's top-level fields, read in one pass: each skim
// looks a field up here rather than scanning the body again.
type skimDoc struct {
	keys []string
	vals []gjson.Result
	// The first fields' room, in the one allocation of the skimDoc.
	keyRoom [16]string
	valRoom [16]gjson.Result
}

// Get is gjson's Get for a path whose first name is a top-level field.
func (d *skimDoc) Get(path string) gjson.Result {
	first, rest, nested := strings.Cut(path, ".")
	for i, k := range d.keys {
		if k == first {
			if nested {
				return d.vals[i].Get(rest)
			}
			return d.vals[i]
		}
	}
	return gjson.Result{}
}

// skimObject checks that body is one JSON object of UTF-8 text (RFC 8259;
// it is forwarded as sent), answering as decodeBody does when it is not,
// and reads its top-level fields. A name given twice (or twice but for
// case) is refused: Baton would read the first (routing, pricing and the
// budget on one model) where the provider's parser takes the last (and
// runs another).
func skimObject(body []byte) (*skimDoc, error) {
	trimmed := trimJSONSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' || !gateway.ValidJSON(trimmed) || !utf8.Valid(trimmed) {
		var v struct{}
		if err := decodeBody(body, &v); err != nil {
			return nil, err
		}
		return nil, malformed("the request body is not valid JSON")
	}
	d := &skimDoc{}
	d.keys, d.vals = d.keyRoom[:0], d.valRoom[:0]
	dup, dupFirst := "", ""
	// The body is read in place, not copied (a long prompt is megabytes):
	// the strings taken from it share its bytes, which never change, and a
	// string kept beyond the call is cloned (the model's name).
	gjson.Parse(unsafe.String(unsafe.SliceData(trimmed), len(trimmed))).ForEach(func(k, v gjson.Result) bool {
		if i := nameIn(d.keys, k.Str); i >= 0 {
			dup, dupFirst = k.Str, d.keys[i]
			return false
		}
		d.keys, d.vals = append(d.keys, k.Str), append(d.vals, v)
		return true
	})
	if dup != "" {
		return nil, twice(dup, dupFirst, dup)
	}
	return d, nil
}

// twice refuses a name given twice at field: as first, then as again,
// which may differ in case only (one field to a Go server's parser).
func twice(field, first, again string) error {
	if first != again {
		return duplicateFieldSaying(field, fmt.Sprintf("the request body gives the field %q twice, as %q and %q: names equal but for case are one field to some parsers; send it once", field, first, again))
	}
	return duplicateField(field)
}

// nameIn is the index of name among names, or of one equal to it but for
// case (a Go server's encoding/json takes "Model" for model), -1 for none.
func nameIn(names []string, name string) int {
	return slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, name) })
}

// uniqueNames refuses a name given twice (or equal but for case) in the
// objects at paths, which Baton reads or edits: gjson reads the first of
// two, a provider's parser the last, so the two would disagree (stream
// options with include_usage true then false: no usage to bill).
func uniqueNames(g *skimDoc, paths ...string) error {
	for _, path := range paths {
		if err := uniqueIn(g.Get(path), path); err != nil {
			return err
		}
	}
	return nil
}

// uniqueIn is uniqueNames of one value v, at path.
func uniqueIn(v gjson.Result, path string) error {
	if !v.IsObject() {
		return nil
	}
	var seen []string
	dup, first := "", ""
	v.ForEach(func(k, _ gjson.Result) bool {
		if i := nameIn(seen, k.Str); i >= 0 {
			dup, first = k.Str, seen[i]
			return false
		}
		seen = append(seen, k.Str)
		return true
	})
	if dup != "" {
		return twice(path+"."+dup, path+"."+first, path+"."+dup)
	}
	return nil
}

// nonEmptyArray reports whether v is an array with an element.
func nonEmptyArray(v gjson.Result) bool {
	some := false
	if v.IsArray() {
		v.ForEach(func(_, _ gjson.Result) bool { some = true; return false })
	}
	return some
}

// skimString reads a string field that Baton acts on (a tier it prices, an
// id it looks up): another type would pass Baton by and reach the provider,
// so it is refused as the translated path refuses it.
func skimString(g *skimDoc, param string) (string, error) {
	v := g.Get(param)
	if v.Exists() && v.Type != gjson.String && v.Type != gjson.Null {
		return "", typeErr(param, "a string")
	}
	return v.Str, nil
}

func typeErr(param, want string) error {
	return domain.Invalid("decode", domain.FieldError{Pointer: "/" + param, Code: "invalid_type", Message: "must be " + want})
}

// maxSkimmedCount bounds a token cap or a number of answers (2^31 - 1,
// far above any model's): the budget's worst case multiplies them, and
// must not wrap.
const maxSkimmedCount = math.MaxInt32

// skimCap reads a token cap: absent, or an integer of at least 1. sep
// joins the field's name to the message, in the front's own style.
func skimCap(g *skimDoc, param, sep string) (n int, set bool, err error) {
	v := g.Get(param)
	if !v.Exists() || v.Type == gjson.Null {
		return 0, false, nil
	}
	if v.Type != gjson.Number || v.Num != math.Trunc(v.Num) {
		return 0, false, typeErr(param, "an integer")
	}
	if v.Num < 1 {
		return 0, false, badRequest(param, "%s%smust be at least 1", param, sep)
	}
	if v.Num > maxSkimmedCount {
		return 0, false, badRequest(param, "%s%smust be at most %d", param, sep, maxSkimmedCount)
	}
	return int(v.Num), true, nil
}

func skimCommon(g *skimDoc, body []byte, modelMsg string) (skimmed, error) {
	s, err := skimModel(g, body, modelMsg)
	if err != nil {
		return s, err
	}
	msgs := g.Get("messages")
	if msgs.Exists() && !msgs.IsArray() {
		return s, typeErr("messages", "an array")
	}
	return s, nil
}

// skimModel reads what every front's body has: the model, stream and the
// tools' names.
func skimModel(g *skimDoc, body []byte, modelMsg string) (skimmed, error) {
	var s skimmed
	m := g.Get("model")
	if m.Exists() && m.Type != gjson.String {
		return s, typeErr("model", "a string")
	}
	if s.model = strings.Clone(m.Str); s.model == "" {
		return s, badRequest("model", "%s", modelMsg)
	}
	if st := g.Get("stream"); st.Exists() && st.Type != gjson.Null {
		if st.Type != gjson.True && st.Type != gjson.False {
			return s, typeErr("stream", "a boolean")
		}
		s.stream = st.Bool()
	}
	s.req.Body = body
	g.Get("tools").ForEach(func(_, t gjson.Result) bool {
		name := t.Get("name").Str
		if name == "" {
			name = t.Get("function.name").Str
		}
		s.req.Tools = append(s.req.Tools, gateway.Tool{Name: name})
		if strings.HasPrefix(t.Get("type").Str, "web_search_") {
			// Anthropic's web search tool: its max_uses bounds what it bills.
			// A bound past what is counted holds for the most that is, not
			// for none: a larger max_uses must never hold less.
			if n := t.Get("max_uses"); n.Type == gjson.Number && n.Num >= 1 {
				s.req.WebSearches = int(min(float64(s.req.WebSearches)+n.Num, maxSkimmedCount))
			}
		}
		return true
	})
	return s, nil
}

// skimMessages reads a Messages API body.
func skimMessages(body []byte) (skimmed, error) { return skimAnthropic(body, true) }

// skimCount reads a count_tokens body: a Messages body without max_tokens.
func skimCount(body []byte) (skimmed, error) { return skimAnthropic(body, false) }

func skimAnthropic(body []byte, needsCap bool) (skimmed, error) {
	g, err := skimObject(body)
	if err != nil {
		return skimmed{}, err
	}
	s, err := skimCommon(g, body, "model: Field required")
	if err != nil {
		return s, err
	}
	if needsCap {
		n, set, err := skimCap(g, "max_tokens", ": ")
		if err != nil {
			return s, err
		}
		if !set {
			return s, badRequest("max_tokens", "max_tokens: Field required")
		}
		s.req.MaxTokens = n
	}
	if !nonEmptyArray(g.Get("messages")) {
		return s, badRequest("messages", "messages: at least one message is required")
	}
	s.req.NeedsJSON = g.Get("output_config.format").Exists()
	// Fast mode is held and billed as a fast tier (Price.FastRate); a
	// speed not yet known, as a tier without a rate.
	speed, err := skimString(g, "speed")
	if err != nil {
		return s, err
	}
	if needsCap && speed != "" && speed != "standard" {
		s.req.ServiceTier = gateway.TierName(speed)
	}
	// So is a geography asked for: US-only inference costs more.
	geo, err := skimString(g, "inference_geo")
	if err != nil {
		return s, err
	}
	if needsCap {
		s.req.Geo = gateway.GeoName(geo)
	}
	return s, uniqueNames(g, "output_config")
}

// skimChat reads a chat completions body.
func skimChat(body []byte) (skimmed, error) {
	g, err := skimObject(body)
	if err != nil {
		return skimmed{}, err
	}
	s, err := skimCommon(g, body, "model is required, as <provider>:<model>")
	if err != nil {
		return s, err
	}
	if !nonEmptyArray(g.Get("messages")) {
		return s, badRequest("messages", "messages must hold at least one message")
	}
	// Both caps given: the larger bounds the budget, as an upstream may
	// read either (OpenAI-compatible servers often max_tokens alone).
	for _, param := range []string{"max_completion_tokens", "max_tokens"} {
		n, _, err := skimCap(g, param, " ")
		if err != nil {
			return s, err
		}
		if n > s.req.MaxTokens {
			s.req.MaxTokens, s.req.CapParam = n, ""
			if param == "max_completion_tokens" {
				s.req.CapParam = param
			}
		}
	}
	// n answers are each billed their output.
	if s.req.Choices, _, err = skimCap(g, "n", " "); err != nil {
		return s, err
	}
	rf := g.Get("response_format.type").Str
	s.req.NeedsJSON = rf == "json_schema" || rf == "json_object"
	if so := g.Get("stream_options"); so.Exists() && so.Type != gjson.Null && !so.IsObject() {
		return s, typeErr("stream_options", "an object") // Baton sets include_usage in it
	}
	// include_usage is read and then set by Baton: a value of another type
	// would be taken as false and replaced, never reaching the provider that
	// would refuse it.
	iu := g.Get("stream_options.include_usage")
	if iu.Exists() && iu.Type != gjson.Null && iu.Type != gjson.True && iu.Type != gjson.False {
		return s, typeErr("stream_options/include_usage", "a boolean")
	}
	s.streamUsage = iu.Bool()
	if s.req.ServiceTier, err = skimString(g, "service_tier"); err != nil {
		return s, err
	}
	return s, uniqueNames(g, "stream_options", "response_format")
}

// skimResponses reads a Responses API body. Nothing else is checked: a
// body passed through is OpenAI's to judge.
func skimResponses(body []byte) (skimmed, error) {
	g, err := skimObject(body)
	if err != nil {
		return skimmed{}, err
	}
	s, err := skimModel(g, body, "model is required, as <provider>:<model> or a mode")
	if err != nil {
		return s, err
	}
	if s.req.MaxTokens, _, err = skimCap(g, "max_output_tokens", " "); err != nil {
		return s, err
	}
	// store and background are acted on (kept or not; refused): a boolean,
	// as OpenAI takes them, so a lenient upstream cannot read "false" as
	// true where Baton read it as false, or the other way round.
	for _, param := range []string{"store", "background"} {
		if v := g.Get(param); v.Exists() && v.Type != gjson.True && v.Type != gjson.False && v.Type != gjson.Null {
			return s, typeErr(param, "a boolean")
		}
	}
	// A background response is answered (queued) before it runs: nothing
	// Baton could bill or hold the budget for. Refused, as translated.
	if g.Get("background").Type == gjson.True {
		return s, badRequest("background", "background responses are not supported through this gateway; send the request without background and wait for its answer (or stream it)")
	}
	f := g.Get("text.format.type").Str
	s.req.NeedsJSON = f == "json_schema" || f == "json_object"
	if s.req.ServiceTier, err = skimString(g, "service_tier"); err != nil {
		return s, err
	}
	if _, err = skimString(g, "previous_response_id"); err != nil {
		return s, err // looked up in the tenant's store, not passed by
	}
	if s.req.WebSearches, s.req.FileSearches, s.req.SearchPreview, err = skimToolCalls(g); err != nil {
		return s, err
	}
	// Each input item's type, role and id say whether it is a reference
	// to an item Baton checks is the tenant's (ResolveReferences).
	var dup error
	n := 0
	g.Get("input").ForEach(func(_, it gjson.Result) bool {
		dup = uniqueIn(it, fmt.Sprintf("input[%d]", n)) // OpenAI's form of the field (error.param)
		n++
		return dup == nil
	})
	if dup != nil {
		return s, dup
	}
	return s, uniqueNames(g, "text", "text.format")
}

// skimToolCalls is the most web searches and file search calls a
// Responses body allows: its max_tool_calls (which bounds every built-in
// tool's calls together) for each of the two tools it offers; without it,
// they are not bounded, and none are held for (docs/budgets.md). preview:
// it offers the legacy web_search_preview, whose searches may cost more;
// with both search tools, its searches are held and billed at the dearer.
func skimToolCalls(g *skimDoc) (web, files int, preview bool, err error) {
	v := g.Get("max_tool_calls")
	set := v.Exists() && v.Type != gjson.Null
	if set && (v.Type != gjson.Number || v.Num != math.Trunc(v.Num)) {
		return 0, 0, false, typeErr("max_tool_calls", "an integer")
	}
	if set && v.Num < 0 {
		return 0, 0, false, badRequest("max_tool_calls", "max_tool_calls must be at least 0")
	}
	searches, fileSearch := false, false
	g.Get("tools").ForEach(func(_, t gjson.Result) bool {
		typ := t.Get("type").Str
		searches = searches || strings.HasPrefix(typ, "web_search")
		preview = preview || strings.HasPrefix(typ, "web_search_preview")
		fileSearch = fileSearch || typ == "file_search"
		return true
	})
	if !set {
		return 0, 0, preview, nil
	}
	n := int(min(v.Num, maxSkimmedCount))
	if searches {
		web = n
	}
	if fileSearch {
		files = n
	}
	return web, files, preview, nil
}

// keepSkimmed adds to a decoded request what the skim of its body read and
// the decoder does not keep: a model of the chain that takes the body as
// it is is held and billed for it (the geography asked for, an explicit
// global not being the workspace's default; the searches of tools the
// decoder drops, as Codex's cache-only search).
func keepSkimmed(req *gateway.Request, sk gateway.Request) {
	req.Geo = cmp.Or(req.Geo, sk.Geo)
	req.WebSearches = max(req.WebSearches, sk.WebSearches)
	req.FileSearches = max(req.FileSearches, sk.FileSearches)
	req.SearchPreview = req.SearchPreview || sk.SearchPreview
}

// speaksAll reports whether every target takes the format as it is.
func speaksAll(chain []gateway.Target, format string) bool {
	return !slices.ContainsFunc(chain, func(t gateway.Target) bool { return !speaks(t, format) })
}

func speaks(t gateway.Target, format string) bool {
	f, ok := t.Provider.(gateway.Forwarder)
	return ok && f.Speaks(format)
}

// nativeOf is the request as the client sent it, with the protocol headers
// a provider of its format takes.
func nativeOf(r *http.Request, format string, body []byte) *gateway.Native {
	n := &gateway.Native{Format: format, Body: body, Query: r.URL.RawQuery}
	if format != gateway.FormatAnthropic {
		for h, vs := range r.Header {
			if openai.ClientHeader(h) {
				if n.Header == nil {
					n.Header = http.Header{}
				}
				n.Header[h] = vs // Codex's (openai.ClientHeader)
			}
		}
		return n
	}
	n.Header = http.Header{}
	for _, h := range []string{"anthropic-version", "anthropic-beta"} {
		for _, v := range r.Header.Values(h) {
			n.Header.Add(h, v)
		}
	}
	return n
}

// withSvc adds Baton's fields to a passed-through JSON answer or event: svc
// at path, and the estimated cost in the usage object at usage (when it
// has one). Each is spliced into its object in place (one copy of the
// answer, no re-encoding); sjson does it where the splice cannot (the
// field already there, a path with no object).
func withSvc(raw []byte, path string, svc any, usage string, cost *float64) []byte {
	if svc != nil {
		raw = setField(raw, path, svc)
	}
	if usage != "" && gjson.GetBytes(raw, usage).IsObject() {
		raw = setField(raw, usage+".estimated_cost_usd", cost)
	}
	return raw
}

// passedAnswer is a passed-through whole answer as the client gets it: svc
// and the cost added and, when the upstream reported no usage, Baton's
// count (marked estimated) in the front's usage shape.
func passedAnswer[U any](c *gateway.Call, a *gateway.Answer, usage func(gateway.Usage, *float64) U) []byte {
	raw := a.Raw
	if a.Usage.Estimated {
		raw = withSvc(raw, "usage", usage(a.Usage, nil), "", nil)
	}
	return withSvcAndCost(raw, newSvc(c, a.NativeStop), a.Cost)
}

// withSvcAndCost is withSvc for a finished answer's top-level svc and
// usage: one pass over its top-level fields and one copy, as it runs on
// every passed-through answer.
func withSvcAndCost(raw []byte, svc svcTrace, cost *float64) []byte {
	t := trimJSONSpace(raw)
	if len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' {
		return withSvc(raw, "svc", svc, "usage", cost)
	}
	var usage gjson.Result
	plain := true
	gjson.ParseBytes(t).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "svc":
			plain = false
		case "usage":
			if usage.Exists() || v.IsObject() && v.Get("estimated_cost_usd").Exists() {
				plain = false // a repeated usage, or one that has the field: sjson decides
			}
			usage = v
		}
		return plain
	})
	end := usage.Index + len(usage.Raw) - 1
	if !plain || usage.IsObject() && (usage.Index <= 0 || end >= len(t) || t[end] != '}') {
		return withSvc(raw, "svc", svc, "usage", cost)
	}
	costJSON, ok := appendCost(nil, cost)
	if !ok {
		return withSvc(raw, "svc", svc, "usage", cost)
	}
	out := make([]byte, 0, len(t)+len(costJSON)+256)
	rest := t[:len(t)-1]
	if usage.IsObject() {
		out = append(out, t[:end]...)
		if !emptyObject(usage.Raw) {
			out = append(out, ',')
		}
		out = append(out, `"estimated_cost_usd":`...)
		out = append(out, costJSON...)
		rest = t[end : len(t)-1]
	}
	out = append(out, rest...)
	if !emptyObject(string(t)) {
		out = append(out, ',')
	}
	out = append(out, `"svc":`...)
	out = svc.appendJSON(out)
	return append(out, '}')
}

// appendCost appends an estimated cost's JSON (null when there is none)
// as encoding/json writes it, without reflection; not ok for a value JSON
// cannot hold.
func appendCost(b []byte, cost *float64) ([]byte, bool) {
	switch {
	case cost == nil:
		return append(b, "null"...), true
	case math.IsNaN(*cost) || math.IsInf(*cost, 0):
		return b, false
	}
	return gateway.AppendJSONFloat(b, *cost), true
}

// emptyObject reports whether a JSON object's text has no member.
func emptyObject(obj string) bool {
	for i := 1; i < len(obj)-1; i++ {
		if !isJSONSpace(obj[i]) {
			return false
		}
	}
	return true
}

// setField sets the field at path (parent.key) to v's JSON.
func setField(raw []byte, path string, v any) []byte {
	var val []byte
	if svc, ok := v.(svcTrace); ok {
		val = svc.appendJSON(make([]byte, 0, 192)) // on every answer: without reflection
	} else if cost, ok := v.(*float64); ok {
		if val, ok = appendCost(nil, cost); !ok {
			return raw
		}
	} else {
		var err error
		if val, err = json.Marshal(v); err != nil {
			return raw
		}
	}
	parent, key := "", path
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		parent, key = path[:i], path[i+1:]
	}
	if out, ok := spliceField(raw, parent, key, val); ok {
		return out
	}
	if out, err := sjson.SetRawBytes(raw, path, val); err == nil {
		return out
	}
	return raw
}

// spliceField adds "key":val at the end of the object at parent ("" for
// the top), when that object exists and has no such key.
func spliceField(raw []byte, parent, key string, val []byte) ([]byte, bool) {
	start, end := 0, len(raw)-1
	for start <= end && isJSONSpace(raw[start]) {
		start++
	}
	for end >= start && isJSONSpace(raw[end]) {
		end--
	}
	if parent != "" {
		obj := gjson.GetBytes(raw, parent)
		if !obj.IsObject() || obj.Index <= 0 || obj.Index+len(obj.Raw) > len(raw) {
			return nil, false
		}
		start, end = obj.Index, obj.Index+len(obj.Raw)-1
		if gjson.GetBytes(raw, parent+"."+key).Exists() {
			return nil, false
		}
	} else if gjson.GetBytes(raw, key).Exists() {
		return nil, false
	}
	if start >= end || raw[start] != '{' || raw[end] != '}' {
		return nil, false
	}
	empty := true
	for _, b := range raw[start+1 : end] {
		if !isJSONSpace(b) {
			empty = false
			break
		}
	}
	out := make([]byte, 0, len(raw)+len(key)+len(val)+4)
	out = append(out, raw[:end]...)
	if !empty {
		out = append(out, ',')
	}
	out = append(out, '"')
	out = append(out, key...)
	out = append(out, '"', ':')
	out = append(out, val...)
	return append(out, raw[end:]...), true
}

func isJSONSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// writeRaw writes a passed-through JSON answer and flushes it.
func writeRaw(w http.ResponseWriter, raw []byte) {
	// With its length the answer leaves in one write, not as chunks.
	h := w.Header()
	h["Content-Type"] = gateway.JSONType
	h["Content-Length"] = []string{strconv.Itoa(len(raw))}
	w.WriteHeader(http.StatusOK)
	writeWhole(w, raw)
}

// pipeWire is how a front's stream is passed through: where Baton's
// fields go and how a failure is told.
type pipeWire struct {
	f        errFormat
	named    bool   // event: lines
	ping     bool   // Anthropic's ping while the upstream is silent
	firstSvc string // svc in the first event
	stopSvc  string // svc in the event that ends the answer
	usage    string // the usage object of the event with the final usage
	// responses: the Responses API's stream (svc only where there is a
	// response object; a failure told with the next sequence numbers).
	responses bool
	// completed, when set, is given the response of the first event that
	// ends a Responses stream, as it will be sent, before it is: the front
	// stores it, and says false when it could not (the event then says
	// store: false). began is given the first response object the stream
	// sent.
	completed func(response []byte) (kept bool)
	began     func(response []byte)
}

var (
	chatPipe      = pipeWire{f: openaiErrors, firstSvc: "svc", stopSvc: "svc", usage: "usage"}
	messagesPipe  = pipeWire{f: anthropicErrors, named: true, ping: true, firstSvc: "message.svc", stopSvc: "svc", usage: "usage"}
	responsesPipe = pipeWire{f: openaiErrors, named: true, firstSvc: "response.svc", stopSvc: "response.svc", usage: "response.usage", responses: true}
)

// openStream opens a streamed call's upstream and starts the event stream.
// A passed-through stream is piped to its end here (done); otherwise the
// caller writes the front's own events, and closes up.
func (s *Server) openStream(w http.ResponseWriter, r *http.Request, c *gateway.Call, chain []gateway.Target, wire pipeWire) (up *gateway.Upstream, sse *sseWriter, done bool) {
	// A front without pings has nothing to do while the upstream is
	// silent: its stream is read on this goroutine (gateway.Call.Direct).
	c.Direct = !wire.ping
	up, err := s.caller.Open(r.Context(), c, chain)
	if err != nil {
		// Nothing has reached the client yet: an ordinary error answer.
		s.writeErrorAs(w, r, wire.f, err)
		return nil, nil, true
	}
	droppedHeader(w, c)
	if sse, err = sseHeaders(w); err != nil {
		up.End("upstream_error")
		up.Close()
		s.writeErrorAs(w, r, wire.f, err)
		return nil, nil, true
	}
	sse.bound(w, modelWriteStall)
	sse.holdHeaders(headerHold)
	if c.Passthrough {
		defer sse.unbound()
		s.pipe(w, r, c, up, sse, wire)
		return nil, nil, true
	}
	return up, sse, false // the caller unbounds sse
}

// DroppedToolsHeader names the tools a translated request went without.
const DroppedToolsHeader = "Baton-Dropped-Tools"

func droppedHeader(w http.ResponseWriter, c *gateway.Call) {
	if !c.Passthrough && len(c.Dropped) > 0 {
		w.Header().Set(DroppedToolsHeader, strings.Join(c.Dropped, ", "))
	}
}

// pipe passes an upstream stream through to the client event by event,
// adding Baton's fields to the first event and to the one that reports the
// final usage, and settles the call when that usage comes (or, without
// one, at the end, on what was sent).
func (s *Server) pipe(w http.ResponseWriter, r *http.Request, c *gateway.Call, up *gateway.Upstream, sse *sseWriter, wire pipeWire) {
	defer up.Close()
	named := wire.named
	var tick <-chan time.Time
	if wire.ping {
		ticker := time.NewTicker(pingEvery)
		defer ticker.Stop()
		tick = ticker.C
	}
	var record func()
	first, stopSeen := true, false
	seq, created := int64(-1), []byte(nil) // the Responses stream's last sequence number and response object
	defer func() {
		if record != nil {
			record()
		}
	}()
	for {
		p, ticked, left := up.Next(tick, sse.flush)
		if left {
			up.Gone()
			return
		}
		if ticked {
			// Anthropic's streams start with message_start; until the
			// upstream's has come, the keep-alive is a comment, which
			// every SSE parser skips.
			err := error(nil)
			if first {
				err = sse.comment("ping")
			} else {
				err = sse.event("ping", anthropic.PingEvent)
			}
			if err != nil {
				up.Gone()
				return
			}
			continue
		}
		if errors.Is(p.Err, io.EOF) {
			if !up.Settled() {
				_, _, record = up.Finish(nil)
			}
			return // what is left leaves with the body's end, in one write
		}
		if p.Err != nil {
			// The status is claimed before the attempt is billed: billing
			// may count a long prompt, which outlasts the headers' hold.
			claimed := sse.claimStatus()
			if _, _, tell := up.Fail(p.Err); tell || stopping(r) {
				switch {
				case claimed:
					// Nothing has left: an ordinary error answer, its
					// status the failure's, as a whole call's would be.
					s.writeErrorAs(w, r, wire.f, p.Err)
				case wire.responses:
					d := describe(r, p.Err)
					failResponse(sse, seq, created, d.Code, d.Message, d.openaiParam())
				case named:
					tellMessages(sse, r, p.Err)
				default:
					tellChat(sse, r, p.Err)
				}
			}
			return
		}
		d := p.D
		raw := d.Raw
		if wire.responses && raw != nil {
			g := gjson.ParseBytes(raw)
			if n := g.Get("sequence_number"); n.Exists() {
				seq = n.Int()
			}
			if created == nil && g.Get("response").IsObject() {
				created = []byte(g.Get("response").Raw)
				if wire.began != nil {
					wire.began(created)
				}
			}
		}
		// A Messages stream begins at its message_start (an upstream may
		// ping first); the others at their first event.
		starts := first && (!wire.named || wire.responses || d.Event == "message_start")
		ending := raw != nil && d.StopReason != "" && !stopSeen
		if ending {
			// The event that ends the answer (message_delta, the finish
			// chunk, response.completed) says how: svc with the native
			// stop reason.
			stopSeen = true
			raw = withSvc(raw, wire.stopSvc, newSvc(c, d.NativeStop), "", nil)
		} else if raw != nil && starts && string(raw) != "[DONE]" && (!wire.responses || gjson.GetBytes(raw, "response").IsObject()) {
			raw = withSvc(raw, wire.firstSvc, newSvc(c, ""), "", nil)
		}
		if !up.Settled() && d.Usage != nil && d.StopReason != "" {
			var cost *float64
			_, cost, record = up.Finish(d.Usage)
			if raw != nil && (named || c.Native.StreamUsage) { // a chat chunk goes without the usage the client did not ask for
				raw = withSvc(raw, "", nil, wire.usage, cost)
			}
		} else if named && ending && !up.Settled() {
			// The upstream told no usage: Baton's count, billed and sent in
			// the ending event's usage, marked estimated, as the chat
			// stream's usage chunk and the whole answers carry it.
			u, cost, rec := up.Finish(nil)
			record = rec
			raw = withEstimate(raw, wire, u, cost)
		}
		if raw == nil {
			continue
		}
		if ending && wire.completed != nil && !wire.completed([]byte(gjson.GetBytes(raw, "response").Raw)) {
			raw = notKept(raw, "response.store")
		}
		if !named && !up.Settled() && string(raw) == "[DONE]" {
			// The upstream reported no usage: Baton's count, billed and,
			// when the client asked for usage, sent marked estimated.
			u, cost, rec := up.Finish(nil)
			record = rec
			if c.Native.StreamUsage {
				if sse.data(openai.UsageChunk(c.ID, c.Model.ID, c.Start.Unix(), openai.NewChatUsage(u, cost))) != nil {
					return
				}
			}
		}
		first = first && !starts
		var err error
		if named {
			err = sse.rawEvent(d.Event, raw)
		} else {
			err = sse.rawData(raw)
		}
		if err != nil {
			up.Gone()
			return
		}
	}
}

// withEstimate sets the usage of a named stream's ending event (Messages'
// message_delta, Responses' response.completed) to Baton's estimate u at
// cost, when the upstream told none. The event goes as it was if the
// usage cannot be set.
func withEstimate(raw []byte, wire pipeWire, u gateway.Usage, cost *float64) []byte {
	var usage any = anthropic.Usage(u, cost)
	if wire.responses {
		usage = openai.NewResponsesUsage(u, cost)
	}
	b, err := json.Marshal(usage)
	if err != nil {
		return raw
	}
	if out, err := sjson.SetRawBytes(raw, wire.usage, b); err == nil {
		return out
	}
	return raw
}

// failResponse ends a passed-through Responses stream that broke after it
// began, as the translated stream does: an error event, then
// response.failed with the response the stream created, numbered after
// the upstream's last event.
func failResponse(sse *sseWriter, seq int64, created []byte, code, message, param string) {
	if sse.event("error", openai.ResponsesErrorEvent(seq+1, code, message, param)) != nil || created == nil {
		return
	}
	resp, err := sjson.SetBytes(created, "status", "failed")
	if err == nil {
		resp, err = sjson.SetBytes(resp, "error", openai.NewResponsesError(code, message))
	}
	if err != nil {
		return
	}
	sse.event("response.failed", openai.ResponsesFailedEvent(seq+2, json.RawMessage(resp)))
}

// appendJSON is json.Marshal's encoding of s.
func (s svcTrace) appendJSON(b []byte) []byte {
	b = append(b, `{"requestId":`...)
	b = gateway.AppendJSONString(b, s.RequestID)
	b = append(b, `,"trace":{"selectedProvider":`...)
	b = gateway.AppendJSONString(b, s.Trace.SelectedProvider)
	b = append(b, `,"selectedModel":`...)
	b = gateway.AppendJSONString(b, s.Trace.SelectedModel)
	b = append(b, `,"fallbackUsed":`...)
	b = strconv.AppendBool(b, s.Trace.FallbackUsed)
	if s.Trace.NativeStopReason != "" {
		b = append(b, `,"nativeStopReason":`...)
		b = gateway.AppendJSONString(b, s.Trace.NativeStopReason)
	}
	return append(b, "}}"...)
}
