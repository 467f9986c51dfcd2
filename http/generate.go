package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/tasks"
	"github.com/tidwall/gjson"
)

// Structured generation: POST /v1/generate.

const (
	defaultMaxAttempts = 2
	maxMaxAttempts     = 5
	maxCostUSDLimit    = 1000.0
)

type generateRequest struct {
	Type            string          `json:"type"`
	Input           json.RawMessage `json:"input"`
	ContextPacketID string          `json:"contextPacketId"`
	Options         generateOptions `json:"options"`
}

// generateOptions are generate's options, and an agent plan's.
type generateOptions struct {
	TemplateVersion *int       `json:"templateVersion"`
	MaxAttempts     *int       `json:"maxAttempts"`
	LLM             llmOptions `json:"llm"`
}

type llmOptions struct {
	Mode       string   `json:"mode"`
	Model      string   `json:"model"`
	MaxCostUSD *float64 `json:"maxCostUsd"`
}

// The names each object of a generate or plan request holds.
var (
	generateNames = jsonNames[generateRequest]()
	optionNames   = jsonNames[generateOptions]()
	llmNames      = jsonNames[llmOptions]()
)

// jsonNames are the JSON names of T's fields, those of the structs it
// embeds among them.
func jsonNames[T any]() []string { return jsonFieldNames(reflect.TypeFor[T]()) }

func jsonFieldNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			names = append(names, jsonFieldNames(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

// unknownField refuses a name the request does not know at its top (top),
// in options or in options.llm: ignored, a limit misspelled or misplaced
// (max_cost_usd, options.maxCostUsd) would let the call run without it, and
// a field Baton does not read (a schema) would seem honoured.
func unknownField(body []byte, top []string) error {
	doc := gjson.ParseBytes(body)
	for _, o := range []struct {
		at    string
		obj   gjson.Result
		names []string
	}{{"", doc, top}, {"/options", doc.Get("options"), optionNames}, {"/options/llm", doc.Get("options.llm"), llmNames}} {
		if !o.obj.IsObject() {
			continue
		}
		var err error
		o.obj.ForEach(func(k, _ gjson.Result) bool {
			if !slices.Contains(o.names, k.Str) {
				where := o.at
				if where == "" {
					where = "the request"
				}
				err = fieldErr(o.at+"/"+domain.PointerToken(k.Str), "unknown_field", "unknown field %q: %s holds %s", k.Str, where, strings.Join(o.names, ", "))
			}
			return err == nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// attemptTrace is one attempt as the trace reports it.
type attemptTrace struct {
	Attempt int                 `json:"attempt"`
	Model   string              `json:"model"`
	Valid   bool                `json:"valid"`
	Errors  []tasks.Violation   `json:"errors"`
	Usage   gatewayUsageSummary `json:"usage"`
}

type gatewayUsageSummary struct {
	InputTokens  int      `json:"input_tokens"`
	OutputTokens int      `json:"output_tokens"`
	CostUSD      *float64 `json:"estimated_cost_usd"`
	Estimated    bool     `json:"estimated,omitempty"` // Baton counted what an upstream did not tell
}

type generateTrace struct {
	SelectedProvider string         `json:"selectedProvider"`
	SelectedModel    string         `json:"selectedModel"`
	FallbackUsed     bool           `json:"fallbackUsed"`
	Attempts         []attemptTrace `json:"attempts"`
	StoppedBy        string         `json:"stoppedBy,omitempty"` // cost_ceiling or budget, when one stopped a retry
	// ModelsTried are the models a failed attempt went to, in order (the
	// chain's fallbacks), when no answer came from any.
	ModelsTried []string `json:"modelsTried,omitempty"`
}

func fieldErr(pointer, code, format string, args ...any) error {
	return domain.Invalid("generate", domain.FieldError{Pointer: pointer, Code: code, Message: fmt.Sprintf(format, args...)})
}

// generateInput checks everything about a request that needs no upstream.
func (s *Server) generateInput(q *generateRequest) (*tasks.Type, int, int, error) {
	if q.Type == "" {
		return nil, 0, 0, fieldErr("/type", "required", "type is required; known types: %s", strings.Join(s.tasks.Names(), ", "))
	}
	t, ok := s.tasks.Get(q.Type)
	if !ok {
		e := domain.Invalid("generate", domain.FieldError{Pointer: "/type", Code: "unknown_task_type",
			Message: fmt.Sprintf("unknown task type %q; known types: %s (GET /v1/capabilities describes them)", q.Type, strings.Join(s.tasks.Names(), ", "))})
		e.Code = "unknown_task_type"
		return nil, 0, 0, e
	}
	trimmed := strings.TrimSpace(string(q.Input))
	if trimmed == "" || trimmed == "null" {
		return nil, 0, 0, fieldErr("/input", "required", "input is required: an object with the fields of type %s", t.Name)
	}
	if trimmed[0] != '{' {
		return nil, 0, 0, fieldErr("/input", "invalid_type", "input must be an object")
	}
	violations, err := t.ValidateInput(q.Input)
	if err != nil {
		return nil, 0, 0, fieldErr("/input", "invalid", "input is not valid JSON")
	}
	if len(violations) > 0 {
		var fields []domain.FieldError
		for _, v := range violations {
			fields = append(fields, domain.FieldError{Pointer: "/input" + v.Pointer, Code: "schema", Message: v.Message})
		}
		e := domain.Invalid("generate", fields...)
		e.Code, e.Message = "invalid_input", fmt.Sprintf("input does not match the input schema of %s (%d problems)", t.Name, len(fields))
		return nil, 0, 0, e
	}
	version := 0
	if v := q.Options.TemplateVersion; v != nil {
		version = *v
		if _, _, err := t.Render(version, q.Input, ""); err != nil || version < 1 { // 0 would mean "the newest" to Render
			return nil, 0, 0, fieldErr("/options/templateVersion", "unknown_version", "type %s has template versions %v", t.Name, t.Versions)
		}
	}
	attempts := defaultMaxAttempts
	if v := q.Options.MaxAttempts; v != nil {
		if *v < 1 || *v > maxMaxAttempts {
			return nil, 0, 0, fieldErr("/options/maxAttempts", "out_of_range", "maxAttempts must be between 1 and %d", maxMaxAttempts)
		}
		attempts = *v
	}
	if c := q.Options.LLM.MaxCostUSD; c != nil && (math.IsNaN(*c) || *c <= 0 || *c > maxCostUSDLimit) {
		return nil, 0, 0, fieldErr("/options/llm/maxCostUsd", "out_of_range", "maxCostUsd must be more than 0 and at most %g", maxCostUSDLimit)
	}
	if q.Options.LLM.Mode != "" && !gateway.IsMode(q.Options.LLM.Mode) {
		return nil, 0, 0, fieldErr("/options/llm/mode", "invalid_enum", "mode must be one of %s", strings.Join(gateway.Modes, ", "))
	}
	if q.Options.LLM.Mode != "" && q.Options.LLM.Model != "" {
		return nil, 0, 0, fieldErr("/options/llm/model", "conflict", "give a mode or a model, not both")
	}
	return t, version, attempts, nil
}

// worstOver is the highest worst case over a chain (a fallback may be
// dearer than the first choice), each model at the tier and in the
// geography its attempt is held at; nil when any model is unpriced. at
// says where the dearest is held when that is its provider's default, not
// what the request asked.
func (s *Server) worstOver(chain []gateway.Target, req gateway.Request) (worst *float64, at string) {
	var most float64
	for _, t := range chain {
		held := req
		held.ServiceTier = s.caller.TierFor(req.ServiceTier, t)
		held.Geo = gateway.GeoFor(req.Geo, t)
		w := gateway.WorstCost(held, t.Model)
		if w == nil {
			return nil, ""
		}
		if *w > most {
			most, at = *w, ""
			if held.ServiceTier != req.ServiceTier {
				at = gateway.AtDefaultTier(held.ServiceTier, t.Model.ID)
			}
			if held.Geo != req.Geo {
				at += gateway.InDefaultGeo(held.Geo, t.Model.ID)
			}
		}
	}
	return &most, at
}

func (s *Server) generate(w http.ResponseWriter, r *http.Request) {
	var q generateRequest
	body, ok := s.readJSON(w, r, &q)
	if !ok {
		return
	}
	if err := unknownField(body, generateNames); err != nil {
		s.writeError(w, r, err)
		return
	}
	g, ok := s.runGeneration(w, r, &q, outputRuleFor(q.Type, q.Input))
	if !ok {
		return
	}
	writeAnswer(w, map[string]any{
		"id": g.id, "object": "generation", "created": time.Now().Unix(), "type": g.taskType, "templateVersion": g.templateVersion,
		"output": g.output, "model": g.model, "provider": g.provider, "attempts": len(g.trace.Attempts), "usage": g.usage,
		"svc": map[string]any{"requestId": g.id, "trace": g.trace},
	})
}

// generation is a successful generation.
type generation struct {
	id, taskType, model, provider string
	templateVersion               int
	output                        json.RawMessage
	usage                         gatewayUsageSummary
	trace                         generateTrace
}

// runGeneration validates, routes and runs a generation with its retries.
// On failure it has written the answer and returns false.
// outputRule is what a task type's output must be beyond its schema,
// because it depends on the input: schema edits the schema the model is
// given (nil: as it is), check finds what is wrong with an output (nil:
// nothing more).
type outputRule struct {
	schema func(json.RawMessage) json.RawMessage
	check  func(json.RawMessage) []tasks.Violation
	// input is what is wrong with the input beyond its schema: no output
	// could pass check (nil: nothing).
	input []tasks.Violation
}

// runGeneration runs a task type's generation: its attempts re-ask the
// model with what was wrong with the last answer, by the output schema
// and by its rule.
func (s *Server) runGeneration(w http.ResponseWriter, r *http.Request, q *generateRequest, rule outputRule) (*generation, bool) {
	t, version, maxAttempts, err := s.generateInput(q)
	if err == nil && len(rule.input) > 0 {
		var fields []domain.FieldError
		for _, v := range rule.input {
			fields = append(fields, domain.FieldError{Pointer: "/input" + v.Pointer, Code: "schema", Message: v.Message})
		}
		e := domain.Invalid("generate", fields...)
		e.Code, e.Message = "invalid_input", fmt.Sprintf("input cannot be answered as %s asks (%s)", q.Type, plural(len(fields), "problem"))
		err = e
	}
	if err != nil {
		s.writeError(w, r, err)
		return nil, false
	}
	var contextText string
	if q.ContextPacketID != "" {
		contextText, err = s.contextPrompt(r.Context(), principalOf(r.Context()).Tenant, q.ContextPacketID)
		if err != nil {
			s.writeError(w, r, err)
			return nil, false
		}
	}
	prompt, version, err := t.Render(version, q.Input, contextText)
	if err != nil {
		s.writeError(w, r, err)
		return nil, false
	}
	model := q.Options.LLM.Model
	if model == "" {
		model = q.Options.LLM.Mode
	}
	if model == "" {
		model = gateway.ModeAuto
	}
	schema := t.Output
	if rule.schema != nil {
		schema = rule.schema(schema)
	}
	output := &gateway.OutputSchema{Name: "emit_" + t.Name, Schema: schema}
	req := gateway.Request{System: t.SystemPrompt(), MaxTokens: t.MaxTokens, Output: output,
		Messages: []gateway.Message{{Role: "user", Content: []gateway.Block{{Type: "text", Text: prompt}}}}}
	chain, err := s.plan(model, req)
	if errors.Is(err, gateway.ErrUnknownModel) {
		err = fieldErr("/options/llm/model", "unknown_model", "%s; GET /v1/models lists the models", publicMessage(err))
	}
	if err != nil {
		s.writeGatewayProblem(w, r, err, nil, "", nil)
		return nil, false
	}
	ceiling := q.Options.LLM.MaxCostUSD
	if ceiling != nil {
		worst, at := s.worstOver(chain, req)
		if worst == nil {
			e := domain.Invalid("generate", domain.FieldError{Pointer: "/options/llm/maxCostUsd", Code: "unpriced_model",
				Message: "a cost ceiling needs priced models; the route includes a model without a price"})
			e.Code = "cost_ceiling_unenforceable"
			s.writeError(w, r, e)
			return nil, false
		}
		if *worst > *ceiling {
			e := domain.Invalid("generate", domain.FieldError{Pointer: "/options/llm/maxCostUsd", Code: "cost_ceiling_exceeded",
				Message: fmt.Sprintf("one attempt may cost up to $%.6f (input bound + the type's token cap of %d%s), over the ceiling of $%.6f", *worst, t.MaxTokens, at, *ceiling)})
			e.Code, e.Message = "cost_ceiling_exceeded", "even one attempt could exceed maxCostUsd"
			s.writeError(w, r, e)
			return nil, false
		}
	}

	if !s.takeKey(w, r) {
		return nil, false
	}
	c := s.newCall(r, "generate", "gen_", req, false)
	defer c.ReleaseHold()
	if st := stateOf(r.Context()); st != nil {
		st.ran = true
	}
	trace := generateTrace{Attempts: []attemptTrace{}}
	var total gateway.Usage
	var spent float64
	costKnown := true
	// bill counts what an attempt was billed in the total, and in the
	// spent sum the ceiling holds retries to, and returns it as the trace
	// says it.
	bill := func(u gateway.Usage, cost *float64) gatewayUsageSummary {
		in := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
		total.InputTokens += in
		total.OutputTokens += u.OutputTokens
		total.Estimated = total.Estimated || u.Estimated
		if cost == nil {
			costKnown = false
		} else {
			spent = gateway.RoundUSD(spent + *cost)
		}
		return gatewayUsageSummary{InputTokens: in, OutputTokens: u.OutputTokens, CostUSD: cost, Estimated: u.Estimated}
	}
	// billFailed counts what the models of the chain that failed with the
	// prompt were billed (gateway.Call.Failed), into sum.
	billFailed := func(failed []gateway.Bill, sum *gatewayUsageSummary) {
		for _, f := range failed {
			u := bill(f.Usage, f.Cost)
			sum.InputTokens += u.InputTokens
			sum.OutputTokens += u.OutputTokens
			sum.Estimated = sum.Estimated || u.Estimated
			if sum.CostUSD != nil && u.CostUSD != nil {
				c := gateway.RoundUSD(*sum.CostUSD + *u.CostUSD)
				sum.CostUSD = &c
			} else {
				sum.CostUSD = nil
			}
		}
	}
	// paidFailure counts an attempt that ended with err after models of
	// its chain were billed for failing: an attempt of the trace, so that
	// attempts and usage agree.
	paidFailure := func(attempt int, err error) {
		if len(c.Failed) == 0 {
			return
		}
		zero := 0.0
		at := attemptTrace{Attempt: attempt, Model: c.Tried[len(c.Tried)-1], Usage: gatewayUsageSummary{CostUSD: &zero},
			Errors: []tasks.Violation{{Message: publicMessage(err)}}}
		billFailed(c.Failed, &at.Usage)
		trace.Attempts = append(trace.Attempts, at)
	}
	// Within an attempt, a fallback after a model that was billed for
	// failing must fit the ceiling too.
	ceilingStopped := false
	if ceiling != nil {
		c.MayFallBack = func(next gateway.Target) bool {
			sum := spent
			for _, f := range c.Failed {
				if f.Cost == nil {
					ceilingStopped = true
					return false
				}
				sum += *f.Cost
			}
			if worst, _ := s.worstOver([]gateway.Target{next}, req); worst == nil || sum+*worst > *ceiling {
				ceilingStopped = true
				return false
			}
			return true
		}
	}
	// The attempts an earlier request with this Idempotency-Key paid for
	// and never answered (its process died): taken as they were, not paid
	// for again.
	claim := claimOf(r.Context())
	var resumed []paidAttempt
	if claim != nil {
		for _, raw := range claim.Outputs() {
			var p paidAttempt
			if json.Unmarshal(raw, &p) != nil || p.Model == "" {
				break
			}
			resumed = append(resumed, p)
		}
	}
	var out json.RawMessage
	var answeredBy, answeredVia string // the model and provider of the last answer
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if ceiling != nil && attempt > 1 {
			if worst, _ := s.worstOver(chain, req); worst == nil || spent+*worst > *ceiling {
				trace.StoppedBy = "cost_ceiling"
				break
			}
		}
		var paid paidAttempt
		if attempt <= len(resumed) {
			paid = resumed[attempt-1]
		} else {
			c.Req = req
			resp, err := s.caller.Complete(r.Context(), c, chain)
			if be := (*gateway.BudgetError)(nil); (attempt > 1 || len(c.Failed) > 0) && errors.As(err, &be) {
				// Paid attempts came first (or, on the first, a model of its
				// chain billed for failing before the budget refused the
				// fallback): the answer is final, as when the ceiling stops a
				// retry, so that a retry under the same key does not pay for
				// them again only to meet the budget.
				trace.StoppedBy = "budget"
				paidFailure(attempt, err)
				break
			}
			if err != nil && ceilingStopped && (attempt > 1 || len(c.Failed) > 0) {
				// Likewise when the ceiling stopped the fallback: the
				// failure of the model before it would be no less paid for
				// again by a retry under the key.
				trace.StoppedBy = "cost_ceiling"
				paidFailure(attempt, err)
				break
			}
			if err != nil {
				trace.ModelsTried = c.Tried
				if ceilingStopped {
					trace.StoppedBy = "cost_ceiling"
				}
				paidFailure(attempt, err)
				var spentSoFar *gatewayUsageSummary
				if attempt > 1 || len(c.Failed) > 0 { // attempts were paid for: say so
					u := gatewayUsageSummary{InputTokens: total.InputTokens, OutputTokens: total.OutputTokens, Estimated: total.Estimated}
					if costKnown {
						u.CostUSD = &spent
					}
					spentSoFar = &u
				}
				s.writeGatewayProblem(w, r, err, &trace, c.ID, spentSoFar)
				return nil, false
			}
			// Its usage is recorded now, not once the generation answers:
			// a process that dies in a later attempt lost every attempt's
			// record (the usage writer's window is all a crash may lose),
			// and a retry that resumes this attempt does not pay for it, nor
			// record it, again.
			resp.Record()
			paid = paidAttempt{Text: resp.StructuredText(output), Billed: resp.Billed, Cost: resp.Cost,
				Model: c.Model.ID, Provider: c.Provider.Name(), Fallback: c.Fallback, Failed: slices.Clone(c.Failed)}
			if claim != nil {
				// Kept before anything else: a crash from here on is
				// resumed from it by the retry, not paid for again.
				b, _ := json.Marshal(paid)
				if err := claim.Keep(r.Context(), attempt, b); err != nil {
					s.log.Error().Str("requestId", RequestID(r.Context())).Err(err).Msg("a paid attempt's output not kept under its Idempotency-Key")
				}
			}
		}
		answeredBy, answeredVia = paid.Model, paid.Provider
		trace.SelectedProvider, trace.SelectedModel = paid.Provider, paid.Model
		trace.FallbackUsed = trace.FallbackUsed || paid.Fallback
		// What was billed, which the answer says: the answer, and the
		// models before it that failed with the prompt.
		at := attemptTrace{Attempt: attempt, Model: paid.Model, Errors: []tasks.Violation{}, Usage: bill(paid.Billed, paid.Cost)}
		billFailed(paid.Failed, &at.Usage)
		text := paid.Text
		obj, perr := tasks.ParseLenient(text)
		if perr == nil {
			perr = isText(obj)
		}
		if perr != nil {
			at.Errors = append(at.Errors, tasks.Violation{Pointer: "", Message: perr.Error()})
		} else if ptr, twice := duplicateName(obj); twice {
			// The schema is checked against the last of the two values (as
			// encoding/json keeps it); the output sent would hold both,
			// and a parser that keeps the first, or refuses a name given
			// twice, would read what was never checked.
			at.Errors = append(at.Errors, tasks.Violation{Pointer: ptr, Message: "the name is given twice in one object; give each name once"})
		} else if ptr, num, huge := hugeNumber(obj); huge {
			at.Errors = append(at.Errors, tasks.Violation{Pointer: ptr, Message: fmt.Sprintf("%s is past the range of a number a JSON parser reads; give a number within it", num)})
		} else if v, verr := t.ValidateOutput(obj); verr != nil {
			at.Errors = append(at.Errors, tasks.Violation{Pointer: "", Message: "not JSON: " + verr.Error()})
		} else {
			at.Errors = append(at.Errors, v...)
			if len(v) == 0 && rule.check != nil {
				at.Errors = append(at.Errors, rule.check(obj)...)
			}
		}
		at.Valid = len(at.Errors) == 0
		trace.Attempts = append(trace.Attempts, at)
		if at.Valid {
			out = obj
			break
		}
		// Re-ask with the validation errors.
		var fix strings.Builder
		fix.WriteString("That answer does not validate against the schema:\n")
		for _, v := range at.Errors {
			fix.WriteString("- " + v.String() + "\n")
		}
		fix.WriteString("Answer again with the corrected JSON object only.")
		req.Messages = append(req.Messages,
			gateway.Message{Role: "assistant", Content: []gateway.Block{{Type: "text", Text: clip(text, 8000)}}},
			gateway.Message{Role: "user", Content: []gateway.Block{{Type: "text", Text: fix.String()}}})
	}
	var totalCost *float64
	if costKnown {
		totalCost = &spent
	}
	usage := gatewayUsageSummary{InputTokens: total.InputTokens, OutputTokens: total.OutputTokens, CostUSD: totalCost, Estimated: total.Estimated}
	if out == nil {
		e := domain.E("generate", domain.KindInvalid, "output_invalid",
			"no attempt produced output that validates against the output schema of %s (%s)", t.Name, plural(len(trace.Attempts), "attempt"))
		switch trace.StoppedBy {
		case "cost_ceiling":
			e.Message += "; the cost ceiling stopped a further attempt"
		case "budget":
			e.Message += "; the tenant's budget stopped a further attempt"
		}
		p := s.problemFor(w, r, e)
		writeProblemExt(w, p, map[string]any{"attempts": len(trace.Attempts), "usage": usage,
			"svc": map[string]any{"requestId": c.ID, "trace": trace}})
		return nil, false
	}
	return &generation{id: c.ID, taskType: t.Name, model: answeredBy, provider: answeredVia, templateVersion: version,
		output: out, usage: usage, trace: trace}, true
}

// paidAttempt is an attempt's answer as a generation reads it, and what it
// was billed: kept under the request's Idempotency-Key as soon as it
// comes, so that a retry after a crash takes it rather than pay again.
type paidAttempt struct {
	Text     string         `json:"text"`
	Billed   gateway.Usage  `json:"billed"`
	Cost     *float64       `json:"costUsd"`
	Model    string         `json:"model"`
	Provider string         `json:"provider"`
	Fallback bool           `json:"fallback,omitempty"`
	Failed   []gateway.Bill `json:"failed,omitempty"` // models of the chain billed for failing first
}

// isText refuses an output that is JSON by its grammar but holds no text:
// bytes that are not UTF-8 (a forced tool's input is taken as the upstream
// sent it) or an escaped half of a surrogate pair alone. Written in the
// answer, strict parsers (jq, serde_json) refuse it, as the request
// decoder refuses such a body.
func isText(obj json.RawMessage) error {
	if !utf8.Valid(obj) {
		return errors.New("the answer is not UTF-8 text")
	}
	if at := domain.LoneSurrogateAt(obj); at >= 0 {
		return fmt.Errorf("the answer escapes half a UTF-16 surrogate pair alone (at byte %d), which is no character", at)
	}
	return nil
}

// hugeNumber finds a number in obj, JSON, past the range of a float64
// (1e400): JSON by its grammar, but answered as it is, encoding/json
// refuses to decode the whole answer and Python reads inf, as the request
// decoder refuses such a number. It returns its pointer and its text.
func hugeNumber(obj json.RawMessage) (string, string, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return "", "", false
	}
	var walk func(at string, v any) (string, string, bool)
	walk = func(at string, v any) (string, string, bool) {
		switch x := v.(type) {
		case json.Number:
			if _, err := strconv.ParseFloat(x.String(), 64); err != nil {
				return at, x.String(), true
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if p, n, ok := walk(at+"/"+domain.PointerToken(k), x[k]); ok {
					return p, n, true
				}
			}
		case []any:
			for i, e := range x {
				if p, n, ok := walk(at+"/"+strconv.Itoa(i), e); ok {
					return p, n, true
				}
			}
		}
		return "", "", false
	}
	return walk("", v)
}

// clip cuts s to at most n bytes, on a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// writeProblemExt writes a problem document with extension members.
func writeProblemExt(w http.ResponseWriter, p Problem, ext map[string]any) {
	b, _ := json.Marshal(p)
	var m map[string]any
	json.Unmarshal(b, &m)
	for k, v := range ext {
		m[k] = v
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(m)
}

// writeGatewayProblem answers a routing, budget or upstream failure of a
// generation as a problem document, with the trace so far.
func (s *Server) writeGatewayProblem(w http.ResponseWriter, r *http.Request, err error, trace *generateTrace, id string, usage *gatewayUsageSummary) {
	var de *domain.Error
	if errors.As(err, &de) {
		s.writeError(w, r, err)
		return
	}
	p := s.problemFor(w, r, err)
	ext := map[string]any{}
	if trace != nil {
		svc := map[string]any{"trace": trace}
		if id != "" {
			svc["requestId"] = id
		}
		ext["svc"] = svc
	}
	if usage != nil {
		ext["attempts"], ext["usage"] = len(trace.Attempts), usage
	}
	writeProblemExt(w, p, ext)
}

// contextPrompt loads a context packet of the tenant as prompt text.
func (s *Server) contextPrompt(ctx context.Context, tenant, id string) (string, error) {
	if s.contextLoader == nil {
		return "", fieldErr("/contextPacketId", "unsupported", "context packets are not available on this server")
	}
	return s.contextLoader(ctx, tenant, id)
}

// plural is "1 attempt", "2 attempts".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
