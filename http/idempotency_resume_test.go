package http_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/gateway"
)

// dyingStore stands for a process that dies after the model answered and
// before its answer was kept: while dead, the kept answer's append fails.
type dyingStore struct {
	eventstore.Store
	exclusive bool
	dead      atomic.Bool
}

func (d *dyingStore) Exclusive() bool { return d.exclusive }

func (d *dyingStore) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	for _, ev := range evs {
		if d.dead.Load() && ev.Type == "IdempotencyCompleted" {
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
		vars := map[string]string{"OPENAI_BASE_URL": u.srv.URL + "/v1", "OPENAI_API_KEY": "k"}
		cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
		if err != nil {
			t.Fatal(err)
		}
		var store *dyingStore
		e := newEnvStore(t, cat, func(s eventstore.Store) eventstore.Store {
			store = &dyingStore{Store: s, exclusive: !shared}
			return store
		})
		e.front.SetIdempotencyLease(200 * time.Millisecond)
		body := genBody(nil)
		store.dead.Store(true)
		first := e.must(e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "crash-1"), 200)
		store.dead.Store(false)
		if u.calls.Load() != 2 || first.str("attempts") != "2" {
			t.Fatalf("shared %v: first: %s (calls %d)", shared, first.raw, u.calls.Load())
		}
		if shared {
			// The dead process's claim holds the key for its lease.
			if r := e.do("POST", "/v1/generate", e.tenantA, body, "Idempotency-Key", "crash-1"); r.status != 409 {
				t.Fatalf("a retry within the dead claim's lease: %d %s", r.status, r.raw)
			}
			time.Sleep(300 * time.Millisecond)
		}
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
		if shared {
			time.Sleep(300 * time.Millisecond)
		}
		other := genBody(map[string]any{"input": map[string]any{"text": "Another text."}})
		e.must(e.do("POST", "/v1/generate", e.tenantA, other, "Idempotency-Key", "crash-2"), 200)
		if u.calls.Load() != 4 {
			t.Fatalf("shared %v: another body under a crashed key: %d calls, want 4", shared, u.calls.Load())
		}
	}
}
