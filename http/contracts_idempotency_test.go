package http_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/gateway"
)

// TestCreateContractIdempotencyKey: a contract create retried with its
// Idempotency-Key is answered the first create's 201 and makes no second
// handoff; the key with another body is refused, and a create refused
// before it stored anything leaves the key free for the corrected one.
func TestCreateContractIdempotencyKey(t *testing.T) {
	e := newEnv(t)
	body := `{"objective":"Rotate the staging TLS certificate","targetExecutor":"ops-bot","executorProtocol":"ops_bot.v1","riskLevel":"medium"}`
	first := e.must(e.do("POST", "/v1/handoff/contracts", e.tenantA, body, "Idempotency-Key", "create-1"), 201)
	id := first.str("handoffId")
	// The same request again, its keys in another order: the first answer.
	again := e.must(e.do("POST", "/v1/handoff/contracts", e.tenantA,
		`{"riskLevel":"medium","executorProtocol":"ops_bot.v1","targetExecutor":"ops-bot","objective":"Rotate the staging TLS certificate"}`,
		"Idempotency-Key", "create-1"), 201)
	if again.str("handoffId") != id || again.header.Get("Idempotent-Replayed") != "true" || again.header.Get("Location") != "/v1/handoff/contracts/"+id {
		t.Fatalf("retry: %s %v, want the replay of %s", again.raw, again.header, id)
	}
	list := e.must(e.do("GET", "/v1/handoff/contracts", e.tenantA, nil), 200)
	if n := strings.Count(string(list.raw), `"handoffId"`); n != 1 {
		t.Fatalf("%d contracts after a retried create, want 1: %s", n, list.raw)
	}
	// Another body under the key: refused, nothing made.
	r := e.must(e.do("POST", "/v1/handoff/contracts", e.tenantA, strings.Replace(body, "medium", "high", 1), "Idempotency-Key", "create-1"), 422)
	if r.str("code") != "idempotency_key_reused" {
		t.Fatalf("another body: %s", r.raw)
	}
	// The key is the tenant's: another tenant's create with it is its own.
	if b := e.must(e.do("POST", "/v1/handoff/contracts", e.tenantB, body, "Idempotency-Key", "create-1"), 201); b.str("handoffId") == id || b.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("tenant b's create answered tenant a's: %s", b.raw)
	}
	// A refusal of the request is not kept: corrected, it runs.
	e.must(e.do("POST", "/v1/handoff/contracts", e.tenantA, strings.Replace(body, `"riskLevel":"medium"`, `"riskLevel":"severe"`, 1), "Idempotency-Key", "create-2"), 422)
	if ok := e.must(e.do("POST", "/v1/handoff/contracts", e.tenantA, body, "Idempotency-Key", "create-2"), 201); ok.str("handoffId") == id {
		t.Fatalf("a second key answered the first create: %s", ok.raw)
	}
	e.must(e.do("POST", "/v1/handoff/contracts", e.tenantA, body, "Idempotency-Key", ""), 422)
	// Creates racing with one key make one handoff: the others are its
	// replay, or told it is still running.
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[string]bool{}
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.do("POST", "/v1/handoff/contracts", e.tenantA, body, "Idempotency-Key", "create-race")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.status == 201:
				ids[r.str("handoffId")] = true
			case r.status != 409 || r.str("code") != "idempotency_in_flight":
				t.Errorf("racing create: %d %s", r.status, r.raw)
			}
		}()
	}
	wg.Wait()
	if len(ids) != 1 {
		t.Fatalf("racing creates with one key made %d handoffs", len(ids))
	}
}

// lostAnswerStore commits the first append to a stream with prefix and
// then answers it as a store that went away mid-write does.
type lostAnswerStore struct {
	eventstore.Store
	prefix string
	lost   atomic.Bool
}

func (s *lostAnswerStore) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	res, err := s.Store.Append(ctx, stream, exp, evs...)
	if err == nil && strings.HasPrefix(stream, s.prefix) && s.lost.CompareAndSwap(false, true) {
		return eventstore.AppendResult{}, eventstore.ErrUnavailable
	}
	return res, err
}

// A create whose append committed but whose answer was lost (the store
// went away mid-write) is settled by appending the same events again,
// which the store answers from the commit: 201, one handoff. It was a 503
// that freed the key, and the client's retry under its Idempotency-Key,
// as the 503 told it to, made a second handoff. The same holds for plans
// and webhook endpoints.
func TestCreateWhoseAnswerWasLostMakesOne(t *testing.T) {
	for _, c := range []struct {
		prefix, path, list, id string
		body                   any
	}{
		{"handoff-", "/v1/handoff/contracts", "/v1/handoff/contracts", "handoffId",
			map[string]any{"objective": "x", "targetExecutor": "ops-bot", "executorProtocol": "ops_bot.v1", "riskLevel": "low"}},
		{domain.WebhooksStream, "/v1/webhooks", "/v1/webhooks", "webhookId",
			map[string]any{"url": "https://hooks.example.com/baton", "eventTypes": []string{"*"}}},
	} {
		t.Run(c.path, func(t *testing.T) {
			e := newEnvStore(t, nil, func(s eventstore.Store) eventstore.Store { return &lostAnswerStore{Store: s, prefix: c.prefix} })
			first := e.do("POST", c.path, e.tenantA, c.body, "Idempotency-Key", "create-1")
			retry := e.do("POST", c.path, e.tenantA, c.body, "Idempotency-Key", "create-1")
			if first.status != 201 || retry.status != 201 || retry.str(c.id) != first.str(c.id) {
				t.Fatalf("first %d %s; retry %d %s", first.status, first.raw, retry.status, retry.raw)
			}
			list := e.must(e.do("GET", c.list, e.tenantA, nil), 200)
			if n := strings.Count(string(list.raw), `"`+c.id+`"`); n != 1 {
				t.Fatalf("%d made, want 1: %s", n, list.raw)
			}
		})
	}
}

// unkeptAnswerStore fails every append of a kept answer, as a process
// that died between a create's event and its answer left it; exclusive
// says whether it stands for the embedded store (the claim in memory) or
// a shared one.
type unkeptAnswerStore struct {
	eventstore.Store
	exclusive bool
	failed    atomic.Int32
}

func (s *unkeptAnswerStore) Exclusive() bool { return s.exclusive }

func (s *unkeptAnswerStore) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if len(evs) == 1 && evs[0].Type == "IdempotencyCompleted" && s.failed.Add(1) == 1 {
		return eventstore.AppendResult{}, eventstore.ErrUnavailable
	}
	return s.Store.Append(ctx, stream, exp, evs...)
}

// A keyed create whose handoff was written but whose answer was not kept
// (the process died between the two appends) is answered, on the retry,
// with the handoff it made: the key's claim names the handoff before it is
// written. The retry made a second handoff. Context packets and webhook
// endpoints likewise.
func TestCreateWhoseAnswerWasNotKeptMakesOne(t *testing.T) {
	for _, c := range []struct {
		path, id, list string
		body, other    func() any
	}{
		{"/v1/handoff/contracts", "handoffId", "/v1/handoff/contracts",
			func() any {
				return map[string]any{"objective": "x", "targetExecutor": "ops-bot", "executorProtocol": "ops_bot.v1", "riskLevel": "low"}
			},
			func() any {
				return map[string]any{"objective": "x", "targetExecutor": "ops-bot", "executorProtocol": "ops_bot.v1", "riskLevel": "high"}
			}},
		{"/v1/webhooks", "webhookId", "/v1/webhooks",
			func() any {
				return map[string]any{"url": "https://hooks.example.com/baton", "eventTypes": []string{"*"}}
			},
			func() any {
				return map[string]any{"url": "https://hooks.example.com/other", "eventTypes": []string{"*"}}
			}},
		{"/v1/context/preview", "packetId", "",
			func() any { return previewBody() },
			func() any { b := previewBody(); b["threadId"] = "thr_43"; return b }},
	} {
		for _, exclusive := range []bool{true, false} {
			t.Run(c.path+map[bool]string{true: "/embedded", false: "/shared"}[exclusive], func(t *testing.T) {
				us := &unkeptAnswerStore{exclusive: exclusive}
				e := newEnvStore(t, nil, func(s eventstore.Store) eventstore.Store { us.Store = s; return us })
				if exclusive {
					// Its claim in memory died with it: the answer's
					// write is tried again for a lease at most.
					e.front.SetIdempotencyLease(time.Millisecond)
				}
				first := e.must(e.do("POST", c.path, e.tenantA, c.body(), "Idempotency-Key", "create-1"), 201)
				if !exclusive {
					// On a shared store the claim is another replica's until
					// its lease runs out; a replica that died renews it no more.
					e.front.SetIdempotencyLease(time.Millisecond)
				}
				time.Sleep(5 * time.Millisecond)
				retry := e.must(e.do("POST", c.path, e.tenantA, c.body(), "Idempotency-Key", "create-1"), 201)
				if retry.str(c.id) != first.str(c.id) || retry.header.Get("Idempotent-Replayed") != "true" ||
					retry.header.Get("Original-Request-Id") != first.header.Get("X-Request-Id") || retry.header.Get("Location") != first.header.Get("Location") {
					t.Fatalf("first %v %s; retry %v %s", first.header, first.raw, retry.header, retry.raw)
				}
				if c.list != "" {
					list := e.must(e.do("GET", c.list, e.tenantA, nil), 200)
					if n := strings.Count(string(list.raw), `"`+c.id+`"`); n != 1 {
						t.Fatalf("%d made, want 1: %s", n, list.raw)
					}
				}
				// The retry's answer is kept: the next one is its replay.
				again := e.must(e.do("POST", c.path, e.tenantA, c.body(), "Idempotency-Key", "create-1"), 201)
				if again.str(c.id) != first.str(c.id) || again.header.Get("Original-Request-Id") != first.header.Get("X-Request-Id") {
					t.Fatalf("third: %v %s", again.header, again.raw)
				}
				// Another body under the key is still refused.
				if r := e.must(e.do("POST", c.path, e.tenantA, c.other(), "Idempotency-Key", "create-1"), 422); r.str("code") != "idempotency_key_reused" {
					t.Fatalf("another body: %s", r.raw)
				}
			})
		}
	}
}

// smallAppendStore refuses an append of more than max bytes of event data,
// as KurrentDB does past its --max-append-size.
type smallAppendStore struct {
	eventstore.Store
	max int
}

func (s smallAppendStore) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	n := 0
	for _, ev := range evs {
		n += len(ev.Data)
	}
	if n > s.max {
		return eventstore.AppendResult{}, fmt.Errorf("%w: append of %d bytes, the server takes at most %d", eventstore.ErrTooLarge, n, s.max)
	}
	return s.Store.Append(ctx, stream, exp, evs...)
}

// A create whose event comes to more than the store takes in one append
// (KurrentDB's --max-append-size: a context packet near the body limit
// passes the 1 MiB default) is 413 event_too_large, as a callback's is,
// and records nothing. It was a 500 internal_error, which clients retry.
func TestCreateOverTheAppendSizeIs413(t *testing.T) {
	e := newEnvStore(t, nil, func(s eventstore.Store) eventstore.Store { return smallAppendStore{Store: s, max: 4 << 10} })
	long := strings.Repeat("certificate ", 400)
	packet := previewBody()
	packet["retrievalContext"] = []map[string]any{{"title": "Runbook", "text": long}}
	for _, c := range []struct {
		path string
		body any
	}{
		{"/v1/handoff/contracts", map[string]any{"objective": long[:4000], "targetExecutor": "ops-bot", "executorProtocol": "ops_bot.v1", "riskLevel": "low"}},
		{"/v1/context/preview", packet},
	} {
		for _, key := range []string{"", "big-1"} {
			before := e.head()
			var r response
			if key == "" {
				r = e.do("POST", c.path, e.tenantA, c.body)
			} else {
				r = e.do("POST", c.path, e.tenantA, c.body, "Idempotency-Key", key)
			}
			if r.status != 413 || r.str("code") != "event_too_large" {
				t.Fatalf("%s (key %q): %d %s, want 413 event_too_large", c.path, key, r.status, r.raw)
			}
			if key == "" && e.head() != before {
				t.Fatalf("%s: a refused create appended", c.path)
			}
		}
	}
}

// An agent plan likewise: its key records the plan's id at the model call,
// and a retry after a plan stored with no answer kept is answered that
// plan, without a second model call (paid again) or a second plan.
func TestPlanWhoseAnswerWasNotKeptMakesOne(t *testing.T) {
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	for _, exclusive := range []bool{true, false} {
		us := &unkeptAnswerStore{exclusive: exclusive}
		e := newEnvStore(t, cat, func(s eventstore.Store) eventstore.Store { us.Store = s; return us })
		if exclusive {
			e.front.SetIdempotencyLease(time.Millisecond) // its claim in memory died with it
		}
		planOnce(t, e, !exclusive)
	}
}

func planOnce(t *testing.T, e *env, shared bool) {
	body := map[string]any{"objective": "rotate the certificate", "targetExecutor": "ops-bot", "riskLevel": "low"}
	first := e.must(e.do("POST", "/v1/agent-plans", e.tenantA, body, "Idempotency-Key", "plan-1"), 201)
	if shared {
		e.front.SetIdempotencyLease(time.Millisecond) // the replica that ran it died
	}
	time.Sleep(5 * time.Millisecond)
	retry := e.must(e.do("POST", "/v1/agent-plans", e.tenantA, body, "Idempotency-Key", "plan-1"), 201)
	if retry.str("planId") != first.str("planId") || retry.header.Get("Idempotent-Replayed") != "true" || retry.header.Get("Location") != first.header.Get("Location") {
		t.Fatalf("first %s; retry %v %s", first.raw, retry.header, retry.raw)
	}
	plans, gens := 0, 0
	for evs, err := range eventstore.FeedPages(t.Context(), e.store, 1000) {
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			switch {
			case ev.Type == domain.EventPlanCreated:
				plans++
			case strings.HasPrefix(ev.StreamID, "generation-"):
				gens++
			}
		}
	}
	if plans != 1 {
		t.Fatalf("%d plans stored, want 1 (%d generation events)", plans, gens)
	}
	if again := e.must(e.do("POST", "/v1/agent-plans", e.tenantA, body, "Idempotency-Key", "plan-1"), 201); again.str("planId") != first.str("planId") {
		t.Fatalf("third: %s", again.raw)
	}
}

// A keyed rotation whose answer was not kept likewise: its retry is
// answered the secret it made, and does not rotate again (which would end
// the secret the receiver still holds at once, and hand out a third).
func TestRotationWhoseAnswerWasNotKeptRotatesOnce(t *testing.T) {
	for _, exclusive := range []bool{true, false} {
		us := &unkeptAnswerStore{exclusive: exclusive}
		e := newEnvStore(t, nil, func(s eventstore.Store) eventstore.Store { us.Store = s; return us })
		hook := e.must(e.do("POST", "/v1/webhooks", e.tenantA, map[string]any{"url": "https://hooks.example.com/baton", "eventTypes": []string{"*"}}), 201)
		path := "/v1/webhooks/" + hook.str("webhookId") + "/rotate"
		if exclusive {
			e.front.SetIdempotencyLease(time.Millisecond) // its claim in memory died with it
		}
		first := e.must(e.do("POST", path, e.tenantA, nil, "Idempotency-Key", "rot-1"), 200)
		if !exclusive {
			e.front.SetIdempotencyLease(time.Millisecond) // the replica that ran it died
		}
		time.Sleep(5 * time.Millisecond)
		retry := e.must(e.do("POST", path, e.tenantA, nil, "Idempotency-Key", "rot-1"), 200)
		if retry.str("secret") != first.str("secret") || retry.str("previousSecretExpiresAt") != first.str("previousSecretExpiresAt") ||
			retry.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("first %s; retry %v %s", first.raw, retry.header, retry.raw)
		}
		rotations := 0
		for evs, err := range eventstore.FeedPages(t.Context(), e.store, 1000) {
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if ev.Type == domain.EventWebhookSecretRotated {
					rotations++
				}
			}
		}
		if rotations != 1 {
			t.Fatalf("%d rotations recorded, want 1", rotations)
		}
	}
}
