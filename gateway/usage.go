package gateway

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
)

// EventUsageRecorded is the type of usage events.
const EventUsageRecorded = "UsageRecorded"

// UsageRecord is one model call as billed.
type UsageRecord struct {
	Tenant    string   `json:"tenant"`
	KeyID     string   `json:"keyId"`
	Front     string   `json:"front"` // chat.completions or messages
	Model     string   `json:"model"` // <provider>:<model>
	Provider  string   `json:"provider"`
	Stream    bool     `json:"stream"`
	Usage     Usage    `json:"usage"`
	CostUSD   *float64 `json:"costUsd"` // null when the model has no price: unknown, never 0
	LatencyMs int64    `json:"latencyMs"`
	Outcome   string   `json:"outcome"` // ok, partial, upstream_error, client_gone
	RequestID string   `json:"requestId"`
}

// UsageStream is where a tenant's usage events go.
func UsageStream(tenant string) string { return "usage-" + tenant }

// CostOf prices usage for a model; nil when the model has no price.
func CostOf(m *Model, u Usage) *float64 {
	if m == nil || m.Pricing == nil {
		return nil
	}
	c := m.Pricing.Cost(u)
	return &c
}

// RecordUsage appends a usage event with the given id (uuid.Nil: a new
// one). Usage events depend on no earlier event, so the expectation is only
// "first" or "not first".
func RecordUsage(ctx context.Context, store eventstore.Store, id uuid.UUID, rec UsageRecord) error {
	if id == uuid.Nil {
		id = uuid.Must(uuid.NewV7())
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	ev := eventstore.EventData{ID: id, Type: EventUsageRecorded, Data: data,
		Metadata: eventstore.Metadata{Tenant: rec.Tenant, Actor: "key:" + rec.KeyID, RequestID: rec.RequestID, SchemaVersion: 1}}
	_, err = appendUnordered(ctx, store, UsageStream(rec.Tenant), ev)
	return err
}
