package http_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/eventstore/ledger"
)

// TestDeadlinesOverHTTP creates contracts with deadlines, renews a lease
// with heartbeats and refuses bad timing fields without recording anything.
func TestDeadlinesOverHTTP(t *testing.T) {
	e := newEnv(t)
	id := e.contract(e.tenantA, map[string]any{"heartbeatSeconds": 30, "onExecutorTimeout": "release", "resultTimeoutSeconds": 600})
	r := e.must(e.do("GET", "/v1/handoff/contracts/"+id, e.tenantA, nil), 200)
	if r.str("deadlines.heartbeatSeconds") != "30" || r.str("deadlines.onExecutorTimeout") != "release" || r.str("deadlines.leaseExpiresAt") != "" {
		t.Fatalf("deadlines before approval: %s", r.str("deadlines"))
	}
	e.must(e.post(id, "heartbeat", e.tenantA, map[string]any{"executorRunId": "run-1"}), 409)
	e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
	r = e.must(e.post(id, "heartbeat", e.tenantA, map[string]any{"executorRunId": "run-1", "executorType": "ops-bot"}), 200)
	if r.str("state") != "executor_started" || r.str("executorRunId") != "run-1" || r.str("deadlines.leaseExpiresAt") == "" || r.str("deadlines.resultDueAt") == "" {
		t.Fatalf("after the first heartbeat: %s", r.raw)
	}
	first := r.str("deadlines.leaseExpiresAt")
	time.Sleep(2 * time.Millisecond) // recorded times are in microseconds
	same := map[string]any{"executorRunId": "run-1"}
	r = e.must(e.post(id, "heartbeat", e.tenantA, same), 200)
	r2 := e.must(e.post(id, "heartbeat", e.tenantA, same), 200)
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatalf("leaseExpiresAt %q: %v", s, err)
		}
		return v
	}
	if !at(r.str("deadlines.leaseExpiresAt")).After(at(first)) || r2.num("ledgerHead.seq") != r.num("ledgerHead.seq")+1 || r2.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("renewals: lease %s then %s; seq %v then %v (each heartbeat is recorded)", first, r.str("deadlines.leaseExpiresAt"), r.num("ledgerHead.seq"), r2.num("ledgerHead.seq"))
	}
	if r := e.post(id, "heartbeat", e.tenantA, map[string]any{"executorRunId": "run-2"}); r.status != 409 || r.str("code") != "executor_run_mismatch" {
		t.Fatalf("another run's heartbeat: %d %s", r.status, r.raw)
	}
	if r := e.post(id, "heartbeat", e.tenantB, same); r.status != 404 {
		t.Fatalf("another tenant's heartbeat: %d %s", r.status, r.raw)
	}
	e.must(e.post(id, "heartbeat", e.tenantA, map[string]any{}), 422)

	before := e.head()
	for _, bad := range []map[string]any{
		{"approvalTimeoutSeconds": -5},
		{"heartbeatSeconds": 86401},
		{"onExecutorTimeout": "close"},
		{"heartbeatSeconds": 5, "onExecutorTimeout": "later"},
		{"approvalTimeoutSeconds": "20"},
		{"approvalTimeoutSeconds": 2.5},
	} {
		body := map[string]any{"objective": "x", "targetExecutor": "ops-bot", "executorProtocol": "ops_bot.v1", "riskLevel": "low"}
		for k, v := range bad {
			body[k] = v
		}
		if r := e.do("POST", "/v1/handoff/contracts", e.tenantA, body); r.status != 422 {
			t.Fatalf("%v: %d %s", bad, r.status, r.raw)
		}
	}
	if e.head() != before {
		t.Fatal("a refused contract appended events")
	}
}

// TestApprovalExpiresOverHTTP leaves a contract with a one-second approval
// deadline alone while a timer loop runs: the trail records the expiry
// once, and a late approval is refused.
func TestApprovalExpiresOverHTTP(t *testing.T) {
	e := newEnv(t)
	loop := &ledger.TimerLoop{
		Handoffs: ledger.NewHandoffs(e.store, nil), Changed: e.proj.Changed, Now: time.Now,
		Due: e.proj.DueHandoffs,
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); loop.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })

	id := e.contract(e.tenantA, map[string]any{"approvalTimeoutSeconds": 1})
	esc := e.contract(e.tenantA, map[string]any{"escalateAfterSeconds": 1, "escalateTo": "sre-leads", "requiredApprovals": 2})
	if r := e.must(e.do("GET", "/v1/handoff/contracts/"+id, e.tenantA, nil), 200); r.str("deadlines.approvalExpiresAt") == "" {
		t.Fatalf("no approvalExpiresAt: %s", r.raw)
	}
	r := mustLedger(t)(waitLedger(e, id, e.tenantA, "after=1&wait=20s"))
	if got := seqs(r); len(got) != 2 {
		t.Fatalf("events after the contract: %s", r.raw)
	}
	evs := r.body["events"].([]any)
	exp, closed := evs[0].(map[string]any), evs[1].(map[string]any)
	if exp["type"] != "ApprovalExpired" || exp["actor"] != "timer:approval_timeout" || closed["type"] != "LedgerClosed" || r.str("state") != "ledger_closed" {
		t.Fatalf("trail: %s", r.raw)
	}
	c := e.must(e.do("GET", "/v1/handoff/contracts/"+id, e.tenantA, nil, "Baton-Read-After", r.header.Get("Baton-Position")), 200)
	if c.str("approvalPolicy.status") != "EXPIRED" || c.str("ledger.finalStatus") != "EXPIRED" {
		t.Fatalf("contract after expiry: %s", c.raw)
	}
	if r := e.post(id, "approval", e.tenantA, approveBody()); r.status != 409 || r.str("code") != "ledger_closed" {
		t.Fatalf("late approval: %d %s", r.status, r.raw)
	}

	// An escalation is recorded once, and the approval stays open to the
	// next group.
	r = mustLedger(t)(waitLedger(e, esc, e.tenantA, "after=1&wait=20s"))
	if evs := r.body["events"].([]any); len(evs) != 1 || evs[0].(map[string]any)["type"] != "ApprovalEscalated" || r.str("state") != "contract_created" {
		t.Fatalf("escalation trail: %s", r.raw)
	}
	if d := r.body["events"].([]any)[0].(map[string]any)["data"].(map[string]any); d["to"] != "sre-leads" {
		t.Fatalf("escalated to %v", d["to"])
	}
	e.must(e.post(esc, "approval", e.tenantA2, approveBody()), 200)
}
