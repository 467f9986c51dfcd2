package http_test

import (
	"context"
	"time"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/gateway"
)

// usageEvents waits for a tenant's usage stream to hold n events (usage is
// recorded after the answer is flushed) and returns them.
func (e *env) usageEvents(tenant string, n int) []eventstore.RecordedEvent {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, err := e.store.ReadStream(context.Background(), gateway.UsageStream(tenant), 0, n+100)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(evs) >= n || time.Now().After(deadline) {
			if len(evs) != n {
				e.t.Fatalf("usage events of %s: %d, want %d", tenant, len(evs), n)
			}
			return evs
		}
		time.Sleep(5 * time.Millisecond) // polling a bounded condition
	}
}
