package http_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/eventstore"
	batonhttp "github.com/batonhq/baton/http"
)

func TestPositionTokens(t *testing.T) {
	for _, p := range []eventstore.Position{{Commit: 1, Prepare: 1}, {Commit: 1 << 40, Prepare: 1<<40 - 7}, {Commit: ^uint64(0) - 1, Prepare: 0}} {
		got, err := batonhttp.ParsePosition(batonhttp.FormatPosition(p))
		if err != nil || got != p {
			t.Fatalf("round trip of %+v = %+v, %v", p, got, err)
		}
	}
	for _, bad := range []string{"", "12", "12/", "/12", "a/1", "1/b", "-1/2", "1/2/3", "1.5/2", "99999999999999999999/1"} {
		if _, err := batonhttp.ParsePosition(bad); err == nil {
			t.Errorf("ParsePosition(%q) succeeded", bad)
		}
	}
}

// TestConsistencyToken: writes answer the position of their last event;
// reads that carry a position are served once the read models include it,
// and answer a position of their own; a position the read models do not
// reach in time is a 503 after the read wait.
func TestConsistencyToken(t *testing.T) {
	e := newEnv(t)
	pos := func(r response) eventstore.Position {
		t.Helper()
		v := r.header.Get(batonhttp.PositionHeader)
		p, err := batonhttp.ParsePosition(v)
		if err != nil {
			t.Fatalf("%s %q: %v (%s)", batonhttp.PositionHeader, v, err, r.raw)
		}
		return p
	}
	created := e.must(e.do("POST", "/v1/handoff/contracts", e.tenantA, map[string]any{
		"objective": "Rotate the staging TLS certificate", "targetExecutor": "ops-bot",
		"executorProtocol": "ops_bot.v1", "riskLevel": "medium", "approvalMode": "manual", "proofRequired": []string{"log"},
	}), 201)
	id := created.str("handoffId")
	p1 := pos(created)
	evs, err := e.store.ReadStream(t.Context(), "handoff-"+id, 0, 10)
	if err != nil || len(evs) != 1 || evs[0].Position != p1 {
		t.Fatalf("create answered %+v; the stream holds %+v (%v)", p1, evs, err)
	}

	got := e.must(e.do("GET", "/v1/handoff/contracts/"+id, e.tenantA, nil, batonhttp.ReadAfterHeader, batonhttp.FormatPosition(p1)), 200)
	if got.str("handoffId") != id || pos(got).Less(p1) {
		t.Fatalf("read after %+v answered %s at %+v", p1, got.str("handoffId"), pos(got))
	}

	body := approveBody()
	approved := e.must(e.post(id, "approval", e.tenantA, body, "Idempotency-Key", "k-1"), 200)
	p2 := pos(approved)
	if !p1.Less(p2) {
		t.Fatalf("approval at %+v, not after the creation at %+v", p2, p1)
	}
	replay := e.must(e.post(id, "approval", e.tenantA, body, "Idempotency-Key", "k-1"), 200)
	if replay.header.Get("Idempotent-Replayed") != "true" || pos(replay) != p2 {
		t.Fatalf("replay: replayed %q at %+v, want the original %+v", replay.header.Get("Idempotent-Replayed"), pos(replay), p2)
	}
	for _, path := range []string{"/v1/executions/" + id + "/ledger", "/v1/handoff/contracts"} {
		r := e.must(e.do("GET", path, e.tenantA, nil, batonhttp.ReadAfterHeader, batonhttp.FormatPosition(p2)), 200)
		if pos(r).Less(p2) {
			t.Fatalf("%s after %+v answered %+v", path, p2, pos(r))
		}
	}
	// Without the header reads work as before, and still answer a position.
	pos(e.must(e.do("GET", "/v1/handoff/contracts/"+id, e.tenantA, nil), 200))

	bad := e.do("GET", "/v1/handoff/contracts/"+id, e.tenantA, nil, batonhttp.ReadAfterHeader, "yesterday")
	if bad.status != 422 || bad.str("code") != "validation_failed" || !strings.Contains(bad.str("fields"), `"invalid_position"`) {
		t.Fatalf("malformed token: %d %s", bad.status, bad.raw)
	}

	// A position this store has not reached (another store's, or made up):
	// told at once, not waited for.
	future := eventstore.Position{Commit: p2.Commit + 1000, Prepare: p2.Prepare + 1000}
	start := time.Now()
	ahead := e.do("GET", "/v1/handoff/contracts/"+id, e.tenantA, nil, batonhttp.ReadAfterHeader, batonhttp.FormatPosition(future))
	if ahead.status != 409 || ahead.str("code") != "position_ahead" || !strings.Contains(ahead.str("detail"), batonhttp.FormatPosition(future)) {
		t.Fatalf("a token past the store's head: %d %s", ahead.status, ahead.raw)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a token past the store's head answered after %v, the read wait", took)
	}
}

// aheadStore tells a head past the store's own: the read models behind
// what the store has committed (another replica's writes not yet read).
type aheadStore struct{ eventstore.Store }

func (s aheadStore) Head(ctx context.Context) (eventstore.Position, error) {
	p, err := s.Store.Head(ctx)
	p.Commit, p.Prepare = p.Commit+1000, p.Prepare+1000
	return p, err
}

// Read models that do not reach the store's head within the read wait:
// 503 read_model_behind with Retry-After, after the wait.
func TestReadModelsBehindTheStore(t *testing.T) {
	e := newEnvStore(t, nil, func(s eventstore.Store) eventstore.Store { return aheadStore{s} })
	id := e.contract(e.tenantA, nil)
	start := time.Now()
	behind := e.do("GET", "/v1/handoff/contracts/"+id, e.tenantA, nil)
	took := time.Since(start)
	if behind.status != 503 || behind.str("code") != "read_model_behind" || behind.header.Get("Retry-After") == "" {
		t.Fatalf("read models behind: %d %s (Retry-After %q)", behind.status, behind.raw, behind.header.Get("Retry-After"))
	}
	if took < 2*time.Second || took > 30*time.Second {
		t.Fatalf("answered after %v, want the 2 s read wait", took)
	}
}
