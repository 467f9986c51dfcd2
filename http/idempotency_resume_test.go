package http_test

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/gateway"
)

// dyingStore stands for a process that dies after the model answered and
// before its answer was kept: a kept answer first written while dead is
// never written.
type dyingStore struct {
	eventstore.Store
	exclusive bool
	dead      atomic.Bool
	lost      sync.Map // event id -> true: the writes of the dead process
}

func (d *dyingStore) Exclusive() bool { return d.exclusive }

func (d *dyingStore) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	for _, ev := range evs {
		if _, lost := d.lost.Load(ev.ID); lost || d.dead.Load() && ev.Type == "IdempotencyCompleted" {
			d.lost.Store(ev.ID, true)
			return eventstore.AppendResult{}, errors.New("the process died")
		}
	}
	return d.Store.Append(ctx, stream, exp, evs...)
}

// A keyed generate whose process died between the model's answers (paid
// for) and its kept answer is resumed by the retry from the outputs kept
// under the key: the model is not called, nor paid, again. It was: the
// outputs were kept nowhere, and the retry ran the whole generation again.
func TestGenerateResumedAfterACrashIsNotPaidTwice(t *testing.T) {
	for _, shared := range []bool{false, true} {
		u := newScripted(t, `{"summary": 5}`, validSummary, validSummary, validSummary)
		e, store := faultyEnv(t, u, func(s eventstore.Store) *dyingStore { return &dyingStore{Store: s, exclusive: !shared} })
		e.front.SetIdempotencyLease(200 * time.Millisecond)
		body := genBody(nil)
		store.dead.Store(true)
		first := e.must(e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "crash-1"), 200)
		store.dead.Store(false)
		if u.calls.Load() != 2 || first.str("attempts") != "2" {
			t.Fatalf("shared %v: first: %s (calls %d)", shared, first.raw, u.calls.Load())
		}
		// The dead process's claim holds the key for its lease (here, in
		// this process's memory on the embedded store too, as its answer's
		// write is tried again).
		if r := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "crash-1"); r.status != 409 {
			t.Fatalf("shared %v: a retry within the dead claim's lease: %d %s", shared, r.status, r.raw)
		}
		time.Sleep(300 * time.Millisecond)
		retry := e.must(e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "crash-1"), 200)
		if u.calls.Load() != 2 {
			t.Fatalf("shared %v: the retry after the crash called the model again (%d calls): %s", shared, u.calls.Load(), retry.raw)
		}
		if retry.str("output") != first.str("output") || retry.str("attempts") != "2" || retry.str("usage") != first.str("usage") || retry.str("model") != first.str("model") {
			t.Fatalf("shared %v: resumed %s\nfirst %s", shared, retry.raw, first.raw)
		}
		// Kept now: replayed.
		again := e.must(e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "crash-1"), 200)
		if again.header.Get("Idempotent-Replayed") != "true" || string(again.raw) != string(retry.raw) || u.calls.Load() != 2 {
			t.Fatalf("shared %v: replay %d %s", shared, again.status, again.raw)
		}
		// Another body under a key whose request died is not given its
		// outputs: it runs.
		store.dead.Store(true)
		e.must(e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "crash-2"), 200)
		store.dead.Store(false)
		time.Sleep(300 * time.Millisecond)
		other := genBody(map[string]any{"input": map[string]any{"text": "Another text."}})
		e.must(e.do("POST", "/v1/generate", e.tenantA, other, "Idempotency-Key", "crash-2"), 200)
		if u.calls.Load() != 4 {
			t.Fatalf("shared %v: another body under a crashed key: %d calls, want 4", shared, u.calls.Load())
		}
	}
}

// flakyStore fails the first write of a kept answer (or of the event of
// type typ) once, as a store that lost its connection for a moment.
type flakyStore struct {
	eventstore.Store
	exclusive bool
	typ       string
	failed    atomic.Bool
}

func (f *flakyStore) Exclusive() bool { return f.exclusive }

func (f *flakyStore) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	typ := cmp.Or(f.typ, "IdempotencyCompleted")
	if len(evs) > 0 && evs[0].Type == typ && f.failed.CompareAndSwap(false, true) {
		return eventstore.AppendResult{}, eventstore.ErrUnavailable
	}
	return f.Store.Append(ctx, stream, exp, evs...)
}

// A live process whose answer's write alone failed writes it again: a
// retry meanwhile is told the request is in flight, and then gets the
// answer replayed; the work is not done twice. On a shared store the key
// stayed in flight for the whole lease (ten minutes of 409s); on the
// embedded store it was freed, and the retry made a second handoff.
func TestKeptAnswerWriteFailureIsWrittenAgain(t *testing.T) {
	for _, shared := range []bool{false, true} {
		u := newScripted(t, validSummary)
		e, store := faultyEnv(t, u, func(s eventstore.Store) *flakyStore { return &flakyStore{Store: s, exclusive: !shared} })
		contract := map[string]any{"objective": "Rotate the staging TLS certificate", "targetExecutor": "ops-bot",
			"executorProtocol": "ops_bot.v1", "riskLevel": "medium", "approvalMode": "manual", "proofRequired": []string{"log"}}
		for _, c := range []struct {
			path   string
			body   any
			status int
		}{{"/v1/handoff/contracts", contract, 201}, {"/v1/generate", genBody(nil), 200}} {
			store.failed.Store(false)
			first := e.must(e.do("POST", c.path, e.tenantA, c.body, "Idempotency-Key", "flaky-write"+c.path), c.status)
			if !store.failed.Load() {
				t.Fatal("the answer's write did not fail")
			}
			var retry response
			for deadline := time.Now().Add(5 * time.Second); ; {
				retry = e.do("POST", c.path, e.tenantA, c.body, "Idempotency-Key", "flaky-write"+c.path)
				if retry.status != 409 || time.Now().After(deadline) {
					break
				}
				if retry.str("code") != "idempotency_in_flight" || retry.header.Get("Retry-After") != "1" {
					t.Fatalf("shared %v %s: %d %s", shared, c.path, retry.status, retry.raw)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if retry.status != c.status || retry.header.Get("Idempotent-Replayed") != "true" || string(retry.raw) != string(first.raw) {
				t.Fatalf("shared %v %s: the retry after the answer's write failed: %d %s (replayed %q)", shared, c.path, retry.status, retry.raw, retry.header.Get("Idempotent-Replayed"))
			}
		}
		if n := e.countType("ContractCreated"); n != 1 || u.calls.Load() != 1 {
			t.Fatalf("shared %v: %d handoffs, %d model calls", shared, n, u.calls.Load())
		}
	}
}

// On a shared store, a key whose release alone failed (a 5xx answer) is
// released again: the retry the 503 asks for runs at once. It was a 409
// idempotency_in_flight for the rest of the key's lease, ten minutes.
func TestReleaseWriteFailureIsWrittenAgain(t *testing.T) {
	u := newScripted(t, "STATUS 503", validSummary)
	e, store := faultyEnv(t, u, func(s eventstore.Store) *flakyStore { return &flakyStore{Store: s, typ: "IdempotencyReleased"} })
	body := genBody(nil)
	if first := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "flaky-release"); first.status < 500 || !store.failed.Load() {
		t.Fatalf("first: %d %s (release failed %v)", first.status, first.raw, store.failed.Load())
	}
	var retry response
	for deadline := time.Now().Add(5 * time.Second); ; {
		retry = e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "flaky-release")
		if retry.status != 409 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if retry.status != 200 || u.calls.Load() != 2 {
		t.Fatalf("the retry after the release's write failed: %d %s (%d calls)", retry.status, retry.raw, u.calls.Load())
	}
}

// faultyEnv is a scripted env whose front's store is wrap's (fault
// injection; the read models follow the store itself), and that store.
func faultyEnv[S eventstore.Store](t *testing.T, u *scriptedUpstream, wrap func(eventstore.Store) S) (*env, S) {
	t.Helper()
	var store S
	e := scriptedEnvStore(t, u, func(s eventstore.Store) eventstore.Store {
		store = wrap(s)
		return store
	})
	return e, store
}

// A paid attempt's usage is recorded as soon as the attempt is billed,
// not when the whole generation answers: a process that dies in a later
// attempt has recorded it (within the usage writer's window), and the
// retry under the key, which takes that attempt without paying again,
// need not. It was held until the answer: a crash mid-generation lost
// every attempt's usage, and the retry recorded only its own calls, so
// the tenant's usage and budget never counted what the resumed attempts
// were billed.
func TestGeneratePaidAttemptUsageRecordedAtOnce(t *testing.T) {
	u := newScripted(t, `{"summary": 5}`, validSummary)
	u.gate = make(chan struct{}, 2)
	u.gate <- struct{}{} // the first attempt answers; the second waits
	e := scriptedEnvOn(t, u, false)
	done := make(chan response, 1)
	go func() {
		done <- e.do("POST", "/v1/generate", e.tenantA, genBody(nil), "Idempotency-Key", "usage-at-once")
	}()
	<-u.arrivals
	<-u.arrivals // the second attempt is with the model
	recorded := false
	for deadline := time.Now().Add(3 * time.Second); !recorded && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		recorded = e.countType("UsageBatchRecorded")+e.countType("UsageRecorded") > 0
	}
	u.gate <- struct{}{}
	r := e.must(<-done, 200)
	if !recorded {
		t.Fatalf("the first attempt's usage was not recorded while the second ran: %s", r.raw)
	}
	e.front.Close() // the usage writer appends what it holds
	n := 0
	evs, err := e.store.ReadAll(context.Background(), eventstore.Position{}, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		recs, _ := gateway.UsageRecords(ev)
		n += len(recs)
	}
	if n != 2 {
		t.Fatalf("%d usage records for two paid attempts", n)
	}
}
