package http_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/eventstore"
)

// planStoreDies fails the append of a plan while dead, as a process that
// died after the model answered and before it stored the plan.
type planStoreDies struct {
	eventstore.Store
	exclusive bool
	dead      atomic.Bool
}

func (d *planStoreDies) Exclusive() bool { return d.exclusive }

func (d *planStoreDies) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if d.dead.Load() && len(evs) > 0 && evs[0].Type == "PlanCreated" {
		return eventstore.AppendResult{}, errors.New("the process died")
	}
	return d.Store.Append(ctx, stream, exp, evs...)
}

// A keyed agent plan whose model answered and whose plan was never stored
// is made, on the retry, from the answer kept under the key: the plan its
// key recorded, without a second model call.
func TestAgentPlanResumedBeforeItsStoreIsNotPaidTwice(t *testing.T) {
	for _, shared := range []bool{false, true} {
		good := `{"summary":"s","steps":[{"title":"Rotate","description":"d","kind":"external_action","requiresApproval":false,"proof":[]}]}`
		u := newScripted(t, good)
		e, store := faultyEnv(t, u, func(s eventstore.Store) *planStoreDies { return &planStoreDies{Store: s, exclusive: !shared} })
		body := map[string]any{"objective": "rotate the cert", "targetExecutor": "ops-bot", "riskLevel": "low",
			"options": map[string]any{"llm": map[string]any{"model": "openai:gpt-4o-mini"}}}
		store.dead.Store(true)
		if first := e.do("POST", "/v1/agent-plans", e.tenantA, body, "Idempotency-Key", "plan-before-store"); first.status < 500 {
			t.Fatalf("shared %v: first: %d %s", shared, first.status, first.raw)
		}
		store.dead.Store(false)
		retry := e.must(e.do("POST", "/v1/agent-plans", e.tenantA, body, "Idempotency-Key", "plan-before-store"), 201)
		if u.calls.Load() != 1 || e.countType("PlanCreated") != 1 || retry.str("generation.attempts") != "1" {
			t.Fatalf("shared %v: %d model calls, %d plans: %s", shared, u.calls.Load(), e.countType("PlanCreated"), retry.raw)
		}
	}
}
