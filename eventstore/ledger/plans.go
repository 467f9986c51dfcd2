package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

// Plans stores agent plans (one event per plan stream) and reads them
// back under the tenant rule.
type Plans struct{ store eventstore.Store }

// NewPlans is the plan service on store.
func NewPlans(store eventstore.Store) *Plans { return &Plans{store: store} }

// Create stores plan, made for call's principal.
func (s *Plans) Create(ctx context.Context, call Call, plan *domain.Plan) error {
	data, err := eventJSON(plan)
	if err != nil {
		return err
	}
	if len(data) > maxEventData {
		return domain.E("agent_plans", domain.KindTooLarge, "plan_too_large", "the plan would be recorded as an event of %d bytes, over the %d bytes an event may hold", len(data), maxEventData)
	}
	_, err = appendSettled(ctx, s.store, domain.PlanStream(plan.PlanID), eventstore.NoStream(), eventstore.NewEvent(domain.EventPlanCreated, data,
		eventstore.Metadata{Tenant: call.Principal.Tenant, Actor: call.Principal.Actor(), RequestID: call.RequestID, RecordedAt: plan.CreatedAt}))
	return err
}

// Get reads a plan p may see; any other id is not found.
func (s *Plans) Get(ctx context.Context, p domain.Principal, id string) (*domain.Plan, error) {
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
	if !p.CanSee(evs[0].Metadata.Tenant) {
		return nil, notFound
	}
	var plan domain.Plan
	if err := json.Unmarshal(evs[0].Data, &plan); err != nil {
		return nil, err
	}
	plan.Tenant = evs[0].Metadata.Tenant
	return &plan, nil
}
