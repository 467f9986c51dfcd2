package http_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

// An event the read models cannot apply, written around Baton (on a shared
// store, by another writer), quarantines its handoff only: reads of it name
// the event, callbacks on it record nothing, every other handoff is served
// and the server keeps following the store.
func TestBadEventQuarantinesItsHandoffOnly(t *testing.T) {
	e := newEnv(t)
	bad := e.contract(e.tenantA, nil)
	good := e.contract(e.tenantA, nil)
	// A review before any proof: the state machine does not allow it.
	if _, err := e.store.Append(context.Background(), domain.StreamID(bad), eventstore.Revision(0), eventstore.EventData{
		ID: uuid.Must(uuid.NewV7()), Type: domain.EventProofReviewed, Data: []byte(`{"verdict":"verified","reviewer":"mallory"}`),
		Metadata: eventstore.Metadata{Tenant: "b", Actor: "elsewhere", SchemaVersion: 1}}); err != nil { // its metadata names tenant b: the contract's tenant (a) owns it
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/handoff/contracts/" + bad, "/v1/executions/" + bad + "/ledger"} {
		r := e.do("GET", path, e.tenantA, nil)
		if r.status != 500 || r.str("code") != "handoff_quarantined" || !strings.Contains(r.str("detail"), "event 2 ("+domain.EventProofReviewed) {
			t.Fatalf("GET %s: %d %s", path, r.status, r.raw)
		}
		if r := e.do("GET", path, e.tenantB, nil); r.status != 404 {
			t.Fatalf("another tenant's GET %s: %d %s", path, r.status, r.raw)
		}
	}
	// Callbacks decide on the stream itself and fail on the same event:
	// nothing recorded; the owner learns why, another tenant that there is
	// no such handoff.
	if r := e.do("POST", "/v1/executions/"+bad+"/approval", e.tenantA, approveBody()); r.status != 500 || r.str("code") != "handoff_quarantined" || e.events(bad) != 2 {
		t.Fatalf("approval of a quarantined handoff: %d %s, %d events", r.status, r.raw, e.events(bad))
	}
	if r := e.do("POST", "/v1/executions/"+bad+"/approval", e.tenantB, approveBody()); r.status != 404 || e.events(bad) != 2 {
		t.Fatalf("another tenant's approval of a quarantined handoff: %d %s", r.status, r.raw)
	}
	list := e.must(e.do("GET", "/v1/handoff/contracts", e.tenantA, nil), 200)
	if !strings.Contains(string(list.raw), `"quarantined":{"seq":2,`) {
		t.Fatalf("listing: %s", list.raw)
	}
	h := e.must(e.do("GET", "/healthz", "", nil), 200)
	if h.str("status") != "degraded" || h.str("quarantinedHandoffs") != "1" {
		t.Fatalf("healthz: %s", h.raw)
	}
	// Everything else goes on: the other handoff, a new one.
	e.must(e.do("POST", "/v1/executions/"+good+"/approval", e.tenantA, approveBody()), 200)
	fresh := e.contract(e.tenantA, nil)
	if r := e.must(e.do("GET", "/v1/handoff/contracts/"+fresh, e.tenantA, nil), 200); r.str("state") != "contract_created" {
		t.Fatalf("a new handoff after the quarantine: %s", r.raw)
	}
	if r := e.must(e.do("GET", "/v1/handoff/contracts/"+good, e.tenantA, nil), 200); r.str("approvalPolicy.status") != "APPROVED" {
		t.Fatalf("the other handoff: %s", r.raw)
	}
}

// A contract on one handoff's stream that names another handoff is never
// decided on: the callback would otherwise record on the wrong handoff.
func TestStreamWhoseContractNamesAnotherHandoff(t *testing.T) {
	e := newEnv(t)
	real := e.contract(e.tenantA, nil)
	evs, err := e.store.ReadStream(context.Background(), domain.StreamID(real), 0, 1)
	if err != nil || len(evs) != 1 {
		t.Fatal(err, len(evs))
	}
	other := uuid.Must(uuid.NewV7()).String()
	copied := evs[0].EventData
	copied.ID = uuid.Must(uuid.NewV7())
	if _, err := e.store.Append(context.Background(), domain.StreamID(other), eventstore.NoStream(), copied); err != nil {
		t.Fatal(err)
	}
	// Its first event is the bad one: no contract of its own, so no owner;
	// tenants are told there is no such handoff, admins why.
	if r := e.do("POST", "/v1/executions/"+other+"/approval", e.tenantA, approveBody()); r.status != 404 || e.events(other) != 1 || e.events(real) != 1 {
		t.Fatalf("approval on the copied stream: %d %s; events %d and %d", r.status, r.raw, e.events(other), e.events(real))
	}
	if r := e.do("POST", "/v1/executions/"+other+"/approval", e.admin, approveBody()); r.status != 500 || r.str("code") != "handoff_quarantined" || e.events(other) != 1 {
		t.Fatalf("admin approval on the copied stream: %d %s", r.status, r.raw)
	}
	if r := e.do("GET", "/v1/handoff/contracts/"+other, e.admin, nil); r.status != 500 || r.str("code") != "handoff_quarantined" {
		t.Fatalf("admin read of the copied stream: %d %s", r.status, r.raw)
	}
}
