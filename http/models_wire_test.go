package http_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/gateway"
)

// The models list writes a model's strings as every other answer does,
// without escaping HTML: a name with & < > comes back as written, in
// OpenAI's shape and in Anthropic's.
func TestModelListWritesNamesUnescaped(t *testing.T) {
	f := newFakeUpstreams(t)
	e := newEnvWith(t, gatewayCatalog(t, f, gateway.ProviderSpec{Name: "compat", Kind: "openai-compatible",
		BaseURL: f.openai.URL + "/v1", KeyEnv: "COMPAT_API_KEY", Models: []gateway.ModelSpec{{Name: "a&b<c>"}}}))
	const want = `"id":"compat:a&b<c>"`
	if r := e.must(e.do("GET", "/v1/models", e.tenantA, nil), 200); !strings.Contains(string(r.raw), want) {
		t.Errorf("OpenAI's shape: %s", r.raw)
	}
	if r := e.must(e.do("GET", "/v1/models?limit=1000", e.tenantA, nil, "anthropic-version", "2023-06-01"), 200); !strings.Contains(string(r.raw), want) {
		t.Errorf("Anthropic's shape: %s", r.raw)
	}
	if r := e.must(e.do("GET", "/v1/models/compat:a&b<c>", e.tenantA, nil), 200); !strings.Contains(string(r.raw), want) {
		t.Errorf("one model: %s", r.raw)
	}
}

// A client walking the Anthropic-shaped list by after_id or before_id goes
// on from where it was when the model its cursor names has left the
// catalog between two pages (a sync dropped it): the list is in id order,
// so the cursor keeps its place. An id of no provider is still a 400.
func TestModelPageCursorOfADroppedModel(t *testing.T) {
	cat := catalogWith(t, map[string]string{"ANTHROPIC_API_KEY": "k"})
	e := newEnvWith(t, cat)
	sync := func(at int, models ...string) {
		b, _ := json.Marshal(gateway.ModelsSynced{Provider: "anthropic", OK: true, Models: models, SyncedAt: time.Date(2026, 11, 29, 0, 0, at, 0, time.UTC)})
		if err := cat.Apply(eventstore.RecordedEvent{StreamID: gateway.CatalogStream, EventData: eventstore.NewEvent(gateway.EventModelsSynced, b, eventstore.Metadata{})}); err != nil {
			t.Fatal(err)
		}
	}
	sync(1, "claude-sonnet-5-5", "claude-x-1")
	av := []string{"anthropic-version", "2023-06-01"}
	if r := e.must(e.do("GET", "/v1/models?limit=1&after_id=anthropic:claude-sonnet-5-5", e.tenantA, nil, av...), 200); r.str("first_id") != "anthropic:claude-x-1" {
		t.Fatalf("before the drop: %s", r.raw)
	}
	sync(2, "claude-sonnet-5-5")
	if r := e.must(e.do("GET", "/v1/models?limit=1&after_id=anthropic:claude-x-1", e.tenantA, nil, av...), 200); r.str("first_id") != "local:echo" {
		t.Fatalf("after_id of the dropped model: %s", r.raw)
	}
	if r := e.must(e.do("GET", "/v1/models?limit=1&before_id=anthropic:claude-x-1", e.tenantA, nil, av...), 200); r.str("first_id") != "anthropic:claude-sonnet-5-5" {
		t.Fatalf("before_id of the dropped model: %s", r.raw)
	}
	for _, q := range []string{"after_id=nope", "before_id=nope:x-1", "after_id=anthropic:"} {
		if r := e.do("GET", "/v1/models?"+q, e.tenantA, nil, av...); r.status != 400 {
			t.Fatalf("%s: %d %s", q, r.status, r.raw)
		}
	}
}
