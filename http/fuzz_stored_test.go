package http_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/domain/contextpack"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/gateway"
)

// FuzzStoredPlansAndPackets decodes plans and context packets as the store
// holds them: on a shared store (KurrentDB) another writer, an older or
// newer replica, or an operator may have written them. The fuzzer writes a
// PlanCreated or ContextPacketCreated event with arbitrary data, then reads
// it through every endpoint that uses it: GET /v1/agent-plans/{id}, a
// handoff preview and a contract from the plan, a generate with the packet.
// Data that decodes into the type must never make a 500 (a panic is one,
// as the front recovers it); a contract refused appends nothing.
func FuzzStoredPlansAndPackets(f *testing.F) {
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		f.Fatal(err)
	}
	e := newEnvWith(f, cat)
	// Seeds: a plan and a packet as Baton writes them, and their breakages.
	plan := e.must(e.do("POST", "/v1/agent-plans", e.tenantA, map[string]any{"objective": "rotate the cert", "targetExecutor": "ops-bot", "riskLevel": "high",
		"options": map[string]any{"llm": map[string]any{"model": "local:echo"}}}), 201)
	packet := e.must(e.do("POST", "/v1/context/preview", e.tenantA, previewBody()), 201)
	for _, seed := range []struct {
		kind byte
		id   string
	}{{0, plan.str("planId")}, {1, packet.str("packetId")}} {
		stream := domain.PlanStream(seed.id)
		if seed.kind == 1 {
			stream = contextpack.StreamID(seed.id)
		}
		evs, err := e.store.ReadStream(context.Background(), stream, 0, 1)
		if err != nil || len(evs) != 1 {
			f.Fatalf("seed %s: %v %d", stream, err, len(evs))
		}
		f.Add(seed.kind, []byte(evs[0].Data))
	}
	for _, s := range []string{`{}`, `null`, `[]`, `{"riskLevel":"nope","approvalPolicy":{"mode":"auto"},"proofPolicy":{"artifactTypes":[""]}}`,
		`{"steps":[null],"proofPolicy":null}`, `{"sections":[{"title":"","text":""}],"tokens":-1}`, `{"text":"\u0000"}`, `{`} {
		f.Add(byte(0), []byte(s))
		f.Add(byte(1), []byte(s))
	}
	f.Fuzz(func(t *testing.T, kind byte, data []byte) {
		e.t = t
		ctx := context.Background()
		id := uuid.Must(uuid.NewV7()).String()
		isPacket := kind%2 == 1
		stream, typ := domain.PlanStream(id), domain.EventPlanCreated
		var decoded bool
		if isPacket {
			stream, typ = contextpack.StreamID(id), contextpack.EventCreated
			var p contextpack.Packet
			decoded = json.Unmarshal(data, &p) == nil
		} else {
			var p domain.Plan
			decoded = json.Unmarshal(data, &p) == nil
		}
		if _, err := e.store.Append(ctx, stream, eventstore.NoStream(), eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: typ, Data: data,
			Metadata: eventstore.Metadata{Tenant: "a", Actor: "fuzz", SchemaVersion: 1}}); err != nil {
			if !json.Valid(data) {
				return // the store keeps JSON only
			}
			t.Fatal(err)
		}
		call := func(method, path string, body any) response {
			t.Helper()
			r := e.do(method, path, e.tenantA, body)
			if r.status >= 500 && decoded {
				t.Fatalf("%s %s on stored %q: %d %s", method, path, data, r.status, r.raw)
			}
			if r.status >= 500 && r.status != http.StatusInternalServerError {
				t.Fatalf("%s %s on stored %q: %d %s", method, path, data, r.status, r.raw)
			}
			return r
		}
		if isPacket {
			call("POST", "/v1/generate", map[string]any{"type": "summarize", "input": map[string]any{"text": "x"}, "contextPacketId": id,
				"options": map[string]any{"maxAttempts": 1, "llm": map[string]any{"model": "local:echo"}}})
			call("POST", "/v1/agent-plans", map[string]any{"objective": "o", "targetExecutor": "t", "riskLevel": "low", "contextPacketId": id,
				"options": map[string]any{"maxAttempts": 1, "llm": map[string]any{"model": "local:echo"}}})
			return
		}
		call("GET", "/v1/agent-plans/"+id, nil)
		call("POST", "/v1/handoff/preview", map[string]any{"planId": id})
		before, err := e.store.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r := call("POST", "/v1/handoff/contracts", map[string]any{"planId": id, "executorProtocol": "ops_bot.v1"})
		if r.status != http.StatusCreated {
			evs, err := e.store.ReadAll(ctx, before, 1000)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if ev.Metadata.RequestID == r.header.Get("x-request-id") {
					t.Fatalf("contract refused (%d) yet %s appended", r.status, ev.Type)
				}
			}
		}
	})
}
