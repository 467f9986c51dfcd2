package http

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"
	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/gateway/tasks"
)

type planRequest struct {
	Objective       string          `json:"objective"`
	Constraints     []string        `json:"constraints"`
	TargetExecutor  string          `json:"targetExecutor"`
	RiskLevel       string          `json:"riskLevel"`
	ContextPacketID string          `json:"contextPacketId"`
	Options         generateOptions `json:"options"`
}

var planNames = jsonNames[planRequest]()

// createPlan generates a plan through the agent_plan task, applies the
// policy of its risk level and stores it.
func (s *Server) createPlan(w http.ResponseWriter, r *http.Request) {
	var q planRequest
	body, ok := s.readJSON(w, r, &q)
	if !ok {
		return
	}
	if err := unknownField(body, planNames); err != nil {
		s.writeError(w, r, err)
		return
	}
	// A null among the constraints decodes as "": it would be planned for
	// and stored as an empty constraint.
	var notString error
	if cs := gjson.GetBytes(body, "constraints"); cs.IsArray() {
		cs.ForEach(func(i, c gjson.Result) bool {
			if c.Type != gjson.String {
				notString = fieldErr("/constraints/"+i.String(), "invalid_type", "must be a string")
			}
			return notString == nil
		})
	}
	if notString != nil {
		s.writeError(w, r, notString)
		return
	}
	if err := s.scan(body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := domain.CheckPlanRequest(q.Objective, q.TargetExecutor, q.RiskLevel); err != nil {
		s.writeError(w, r, err)
		return
	}
	input, _ := json.Marshal(map[string]any{"objective": q.Objective, "constraints": orEmpty(q.Constraints), "targetExecutor": q.TargetExecutor, "riskLevel": q.RiskLevel})
	t, _ := s.tasks.Get("agent_plan")
	if t == nil {
		s.writeError(w, r, domain.E("agent_plans", domain.KindUnavailable, "task_type_missing", "The agent_plan task type is not installed on this server."))
		return
	}
	// The plan's own fields are validated by the task's input schema and
	// reported at the top level, where the caller put them.
	if v, err := t.ValidateInput(input); err != nil || len(v) > 0 {
		var fields []domain.FieldError
		for _, x := range v {
			fields = append(fields, domain.FieldError{Pointer: x.Pointer, Code: "schema", Message: x.Message})
		}
		s.writeError(w, r, domain.Invalid("agent_plans", fields...))
		return
	}
	id := uuid.Must(uuid.NewV7()).String()
	if claim := claimOf(r.Context()); claim != nil {
		if target, _ := claim.Resume(); target != "" {
			// An earlier request of the key recorded this plan and kept
			// no answer: the plan it stored is the answer, not a second
			// model call (paid again) and a second plan.
			id = target
			plan, err := s.ledger.Plans.Get(r.Context(), principalOf(r.Context()), id)
			if err == nil {
				markResumed(w, r)
				w.Header().Set("Location", "/v1/agent-plans/"+id)
				writeJSON(w, http.StatusCreated, plan)
				return
			}
			if domain.KindOf(err) != domain.KindNotFound {
				s.writeError(w, r, err)
				return
			}
		}
		stateOf(r.Context()).target = id // recorded with the key at the model call
	}
	// Options are decoded with the body, by its rules (a name differing
	// only by case was refused above, as on generate).
	g := generateRequest{Type: "agent_plan", Input: input, ContextPacketID: q.ContextPacketID, Options: q.Options}
	gen, ok := s.runGeneration(w, r, &g, outputRule{check: planCheck})
	if !ok {
		return
	}
	plan, err := domain.BuildPlan(id, q.Objective, q.Constraints, q.TargetExecutor, q.RiskLevel, gen.output)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	usage, _ := json.Marshal(gen.usage)
	plan.Generation = domain.PlanGeneration{GenerationID: gen.id, Model: gen.model, Provider: gen.provider,
		TemplateVersion: gen.templateVersion, Attempts: len(gen.trace.Attempts), Usage: usage}
	plan.ContextPacketID = q.ContextPacketID
	plan.CreatedAt = time.Now().UTC().Truncate(time.Microsecond)
	if err := s.ledger.Plans.Create(r.Context(), callOf(r), plan); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/agent-plans/"+id)
	writeJSON(w, http.StatusCreated, plan)
}

// planCheck holds a plan's output to what BuildPlan takes, so that an
// answer it would refuse is re-asked, not a failure after the model's work.
func planCheck(out json.RawMessage) []tasks.Violation {
	var v []tasks.Violation
	for _, p := range domain.PlanOutputProblems(out) {
		v = append(v, tasks.Violation{Pointer: p.Pointer, Message: p.Message})
	}
	return v
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Server) getPlan(w http.ResponseWriter, r *http.Request) {
	plan, err := s.ledger.Plans.Get(r.Context(), principalOf(r.Context()), mux.Vars(r)["planId"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, plan)
}
