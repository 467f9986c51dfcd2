package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

type planRequest struct {
	Objective       string          `json:"objective"`
	Constraints     []string        `json:"constraints"`
	TargetExecutor  string          `json:"targetExecutor"`
	RiskLevel       string          `json:"riskLevel"`
	ContextPacketID string          `json:"contextPacketId"`
	Options         json.RawMessage `json:"options"`
}

// createPlan generates a plan through the agent_plan task, applies the
// policy of its risk level and stores it.
func (s *Server) createPlan(w http.ResponseWriter, r *http.Request) {
	var q planRequest
	body, ok := s.readJSON(w, r, &q)
	if !ok {
		return
	}
	if err := s.scan(body); err != nil {
		s.writeError(w, r, err)
		return
	}
	input, _ := json.Marshal(map[string]any{"objective": q.Objective, "constraints": orEmpty(q.Constraints), "targetExecutor": q.TargetExecutor, "riskLevel": q.RiskLevel})
	t, _ := s.tasks.Get("agent_plan")
	if t == nil {
		writeProblem(w, r, http.StatusServiceUnavailable, "task_type_missing", "The agent_plan task type is not installed on this server.")
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
	g := generateRequest{Type: "agent_plan", Input: input, ContextPacketID: q.ContextPacketID}
	if len(q.Options) > 0 && string(q.Options) != "null" {
		if err := json.Unmarshal(q.Options, &g.Options); err != nil {
			s.writeError(w, r, fieldErr("/options", "invalid_type", "options must be an object like generate's options"))
			return
		}
	}
	gen, ok := s.runGeneration(w, r, &g)
	if !ok {
		return
	}
	defer gen.record()
	id := uuid.Must(uuid.NewV7()).String()
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
	data, err := json.Marshal(plan)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p := principalOf(r.Context())
	if _, err := s.store.Append(r.Context(), domain.PlanStream(id), eventstore.NoStream(), eventstore.EventData{
		ID: uuid.Must(uuid.NewV7()), Type: domain.EventPlanCreated, Data: data,
		Metadata: eventstore.Metadata{Tenant: p.Tenant, Actor: p.Actor(), RequestID: RequestID(r.Context()), SchemaVersion: 1, RecordedAt: plan.CreatedAt},
	}); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/agent-plans/"+id)
	writeJSON(w, http.StatusCreated, plan)
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// loadPlan reads a plan the principal may see: its tenant's, or any for an
// admin key. Anything else is not found.
func (s *Server) loadPlan(ctx context.Context, id string) (*domain.Plan, error) {
	notFound := domain.E("agent_plans", domain.KindNotFound, "plan_not_found", "no plan %s", id)
	if _, err := uuid.Parse(id); err != nil || strings.ContainsAny(id, "{}") {
		return nil, notFound
	}
	evs, err := s.store.ReadStream(ctx, domain.PlanStream(id), 0, 1)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 || evs[0].Type != domain.EventPlanCreated {
		return nil, notFound
	}
	if evs[0].Unreadable != "" {
		return nil, fmt.Errorf("plan %s: %s", id, evs[0].Unreadable) // no tenant to check it against
	}
	p := principalOf(ctx)
	if evs[0].Metadata.Tenant != p.Tenant && !p.Admin {
		return nil, notFound
	}
	var plan domain.Plan
	if err := json.Unmarshal(evs[0].Data, &plan); err != nil {
		return nil, err
	}
	plan.Tenant = evs[0].Metadata.Tenant
	return &plan, nil
}

func (s *Server) getPlan(w http.ResponseWriter, r *http.Request) {
	plan, err := s.loadPlan(r.Context(), mux.Vars(r)["planId"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, plan)
}

// fromPlan fills a contract request's missing fields from its plan:
// objective, target executor, risk level, approval mode and proof types.
// A planId the caller cannot see is a 422 on /planId.
func (s *Server) fromPlan(ctx context.Context, c *domain.CreateContract) error {
	if c.PlanID == "" {
		return nil
	}
	plan, err := s.loadPlan(ctx, c.PlanID)
	var de *domain.Error
	if errors.As(err, &de) && de.Kind == domain.KindNotFound {
		return domain.Invalid("handoff.create", domain.FieldError{Pointer: "/planId", Code: "unknown_plan", Message: "no plan with this id for this tenant; create one with POST /v1/agent-plans"})
	}
	if err != nil {
		return err
	}
	if c.Objective == "" {
		c.Objective = plan.Objective
	}
	if c.TargetExecutor == "" {
		c.TargetExecutor = plan.TargetExecutor
	}
	if c.RiskLevel == "" {
		c.RiskLevel = plan.RiskLevel
	}
	if c.ApprovalMode == "" {
		c.ApprovalMode = plan.ApprovalPolicy.Mode
	}
	if c.ProofRequired == nil {
		c.ProofRequired = append([]string{}, plan.ProofPolicy.ArtifactTypes...)
	}
	// A contract may tighten its plan's policy, never loosen it: the plan's
	// approval and proof follow from its risk, and a contract that set a
	// lower risk, auto approval or less proof would step around them.
	var fields []domain.FieldError
	if slices.Index(domain.RiskLevels, c.RiskLevel) >= 0 && slices.Index(domain.RiskLevels, c.RiskLevel) < slices.Index(domain.RiskLevels, plan.RiskLevel) {
		fields = append(fields, domain.FieldError{Pointer: "/riskLevel", Code: "below_plan",
			Message: fmt.Sprintf("the plan's risk level is %s; a contract from it cannot be lower", plan.RiskLevel)})
	}
	if plan.ApprovalPolicy.Mode == domain.ApprovalModeManual && c.ApprovalMode != domain.ApprovalModeManual {
		fields = append(fields, domain.FieldError{Pointer: "/approvalMode", Code: "below_plan",
			Message: "the plan requires manual approval; a contract from it cannot approve itself"})
	}
	for _, typ := range plan.ProofPolicy.ArtifactTypes {
		if !slices.Contains(c.ProofRequired, typ) {
			fields = append(fields, domain.FieldError{Pointer: "/proofRequired", Code: "below_plan",
				Message: fmt.Sprintf("the plan requires proof of type %q; a contract from it must require it too", typ)})
		}
	}
	if len(fields) > 0 {
		return domain.Invalid("handoff.create", fields...)
	}
	return nil
}
