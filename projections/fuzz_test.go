package projections

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/records"
)

// fuzzAt is the time every fuzzed event is recorded at.
var fuzzAt = time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC)

// readModel is a runner with both projectors on a temp file. reset empties
// it between inputs, which is cheaper than a new file and the same state.
type readModel struct {
	r   *Runner
	h   *Handoffs
	pos uint64
}

// refolding is the handoff projector without its cache: every event is
// folded again from the stored rows, as after a restart.
type refolding struct{ *Handoffs }

func (p refolding) Apply(tx *bbolt.Tx, ev eventstore.RecordedEvent) error {
	p.Forget()
	return p.Handoffs.Apply(tx, ev)
}

func openReadModel(tb testing.TB, refold bool) *readModel {
	h := NewHandoffs()
	var p Projector = h
	if refold {
		p = refolding{h}
	}
	r, err := Open(filepath.Join(tb.TempDir(), "readmodel.db"), nil, p, Keys{})
	if err != nil {
		tb.Fatal(err)
	}
	r.db.NoSync = true // a throwaway file: fsync would only slow the fuzzer
	tb.Cleanup(func() { r.Close() })
	return &readModel{r: r, h: h}
}

func (m *readModel) buckets() [][]byte { return append(m.h.Buckets(), Keys{}.Buckets()...) }

func (m *readModel) reset(tb testing.TB) {
	tb.Helper()
	err := m.r.db.Update(func(tx *bbolt.Tx) error {
		for _, b := range append(m.buckets(), bucketCheckpoint) {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	m.h.Forget()
	m.r.keys.invalidate()
	m.r.pos.Store(&eventstore.Position{})
	m.pos = 0
}

// apply feeds a burst of events through the runner in one transaction, as
// a subscription delivers them.
func (m *readModel) apply(evs ...eventstore.RecordedEvent) error {
	evs = slices.Clone(evs)
	for i := range evs {
		m.pos++
		evs[i].Position = eventstore.Position{Commit: m.pos, Prepare: m.pos}
	}
	return m.r.apply(evs)
}

// dump renders the projectors' buckets (not the checkpoint).
func (m *readModel) dump(tb testing.TB) string {
	tb.Helper()
	return m.dumpExcept(tb, nil)
}

// dumpExcept is dump without one bucket.
func (m *readModel) dumpExcept(tb testing.TB, except []byte) string {
	tb.Helper()
	var b strings.Builder
	err := m.r.View(func(tx *bbolt.Tx) error {
		for _, name := range m.buckets() {
			if string(name) == string(except) {
				continue
			}
			err := tx.Bucket(name).ForEach(func(k, v []byte) error {
				fmt.Fprintf(&b, "%s %q %q\n", name, k, v)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

// handoffEvents returns a valid handoff stream built with the domain's own
// decisions, as the store delivers it: created, approved, started, proof,
// review, result, closed.
func handoffEvents(tb testing.TB, id, tenant string) []eventstore.RecordedEvent {
	tb.Helper()
	h := &domain.Handoff{}
	prev := domain.GenesisHash(id)
	var out []eventstore.RecordedEvent
	add := func(evs []domain.Event, err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		for _, ev := range evs {
			data, err := json.Marshal(ev.Data)
			if err != nil {
				tb.Fatal(err)
			}
			rev := uint64(len(out))
			c, err := domain.Canonical(id, rev+1, ev.Type, "ops", fuzzAt, data)
			if err != nil {
				tb.Fatal(err)
			}
			rec := eventstore.RecordedEvent{StreamID: domain.StreamID(id), Revision: rev, EventData: eventstore.EventData{
				Type: ev.Type, Data: data, Metadata: eventstore.Metadata{Tenant: tenant, Actor: "ops", RecordedAt: fuzzAt,
					PrevHash: prev, Hash: domain.ChainHash(prev, c)}}}
			if err := h.Apply(records.Recorded(rec)); err != nil {
				tb.Fatal(err)
			}
			out, prev = append(out, rec), rec.Metadata.Hash
		}
	}
	add(domain.DecideCreate(domain.CreateContract{HandoffID: id, Tenant: tenant, Objective: "refund order 7", TargetExecutor: "bot",
		ExecutorProtocol: "bot.v1", RiskLevel: "high", ProofRequired: []string{"log"}}))
	add(h.Decide(domain.ApprovalCommand{Status: domain.ApprovalApproved, ApprovedBy: "ann", Request: domain.RequestRef{BodySHA256: "a1"}}))
	add(h.Decide(domain.ProofCommand{ExecutorRunID: "run-1", Status: domain.RunRunning, Request: domain.RequestRef{BodySHA256: "b2"},
		Proof: &domain.Proof{Summary: "refunded", Artifacts: []domain.Artifact{{Type: "log", Text: "200 OK"}}}}))
	add(h.Decide(domain.ReviewCommand{Verdict: domain.VerdictVerified, Reviewer: "vic", Request: domain.RequestRef{BodySHA256: "c3"}}))
	add(h.Decide(domain.ResultCommand{ExecutorRunID: "run-1", Status: domain.RunSucceeded, Result: &domain.Result{Summary: "done"},
		Request: domain.RequestRef{BodySHA256: "d4"}}))
	if len(out) != len(domain.States) || h.State != domain.StateLedgerClosed {
		tb.Fatalf("the lifecycle stream has %d events and ends in %s", len(out), h.State)
	}
	return out
}

// handoffTypes are the event types the handoff projection handles, plus
// one it does not.
var handoffTypes = []struct {
	name    string
	payload func() any
}{
	{domain.EventContractCreated, func() any { return new(domain.ContractCreated) }},
	{domain.EventApprovalDecided, func() any { return new(domain.ApprovalDecided) }},
	{domain.EventExecutorStarted, func() any { return new(domain.ExecutorStarted) }},
	{domain.EventProofReceived, func() any { return new(domain.ProofReceived) }},
	{domain.EventProofReviewed, func() any { return new(domain.ProofReviewed) }},
	{domain.EventResultReceived, func() any { return new(domain.ResultReceived) }},
	{domain.EventLedgerClosed, func() any { return new(domain.LedgerClosed) }},
	{domain.EventApprovalExpired, func() any { return new(domain.ApprovalExpired) }},
	{domain.EventExecutorHeartbeat, func() any { return new(domain.ExecutorHeartbeat) }},
	{domain.EventExecutorTimedOut, func() any { return new(domain.ExecutorTimedOut) }},
	{domain.EventApprovalGranted, func() any { return new(domain.ApprovalGranted) }},
	{domain.EventApprovalEscalated, func() any { return new(domain.ApprovalEscalated) }},
	{"HandoffArchived", nil},
}

// readHandoff reads one handoff the way the API does and fails on any read
// error; it returns what it read, for comparisons.
func (m *readModel) readHandoff(tb testing.TB, id string) string {
	tb.Helper()
	view, tenant, found, err := m.r.Contract(id)
	if err != nil || !found {
		tb.Fatalf("contract %s: found %v, %v", id, found, err)
	}
	var v domain.ContractView
	if err := json.Unmarshal(view, &v); err != nil {
		tb.Fatalf("contract %s does not decode: %v", id, err)
	}
	entries, err := m.r.Ledger(id)
	if err != nil || len(entries) == 0 {
		tb.Fatalf("ledger %s: %d entries, %v", id, len(entries), err)
	}
	for i, e := range entries {
		if e.Seq != uint64(i)+1 {
			tb.Fatalf("ledger %s: entry %d has seq %d", id, i+1, e.Seq)
		}
	}
	if last := entries[len(entries)-1]; v.State != last.StateAfter || v.LedgerHead.Seq != last.Seq {
		tb.Fatalf("contract %s is %s at %d, its ledger %s at %d", id, v.State, v.LedgerHead.Seq, last.StateAfter, last.Seq)
	}
	list, _, err := m.r.ListContracts(tenant, ContractFilter{Limit: 10})
	if err != nil || len(list) == 0 {
		tb.Fatalf("tenant %q lists %d contracts, %v", tenant, len(list), err)
	}
	trail, _ := json.Marshal(entries)
	return fmt.Sprintf("%s\n%s\n%s", tenant, view, trail)
}

// FuzzHandoffsApply feeds one handoff (A) an event of any type with a fuzzed
// payload, between another handoff's (B) events, as the global feed
// interleaves streams. The read models never stop on it: an event that does
// not decode or apply quarantines A (its views stay as they were, reads of A
// name the event, A's later events are skipped); a successful apply leaves
// A readable; B reads as if A never existed; and the read models are the
// same bytes with the cache and when every event is folded again from the
// stored rows.
func FuzzHandoffsApply(f *testing.F) {
	a, b := handoffEvents(f, "A", "acme"), handoffEvents(f, "B", "beta")
	for i, ev := range a {
		f.Add(uint8(i), uint8(i), []byte(ev.Data))
	}
	f.Add(uint8(7), uint8(1), []byte(a[1].Data))
	f.Add(uint8(0), uint8(0), []byte(`{"handoffId":"A","tenant":"acme\u0000x","metadata":{"k":[1.5,null]}}`))
	f.Add(uint8(3), uint8(3), []byte(`{"executorRunId":1}`))
	f.Add(uint8(2), uint8(7), []byte(`{}`))
	f.Add(uint8(1), uint8(1), []byte(`null`))
	f.Add(uint8(4), uint8(4), []byte(``))
	cached, refolded := openReadModel(f, false), openReadModel(f, true)
	if err := cached.apply(b...); err != nil {
		f.Fatal(err)
	}
	wantB := cached.readHandoff(f, "B")
	f.Fuzz(func(t *testing.T, at, typ uint8, data []byte) {
		k := int(at) % (len(a) + 1)
		tp := handoffTypes[int(typ)%len(handoffTypes)]
		fuzzed := a[min(k, len(a)-1)]
		fuzzed.Revision, fuzzed.Type, fuzzed.Data = uint64(k), tp.name, data
		undecodable := tp.payload == nil || json.Unmarshal(data, tp.payload()) != nil

		run := func(m *readModel) (string, bool) {
			m.reset(t)
			if err := m.apply(slices.Concat(b[:1], a[:k])...); err != nil {
				t.Fatalf("valid events refused: %v", err)
			}
			before := m.dumpExcept(t, bucketQuarantine)
			if err := m.apply(fuzzed); err != nil {
				t.Fatalf("%s %q stopped the read models (it should quarantine its handoff): %v", tp.name, data, err)
			}
			_, _, _, cerr := m.r.Contract("A")
			var q *QuarantinedError
			refused := errors.As(cerr, &q)
			switch {
			case cerr != nil && !refused:
				t.Fatalf("contract A: %v", cerr)
			case undecodable && !refused:
				t.Fatalf("%s %q at seq %d does not decode, yet it was applied", tp.name, data, k+1)
			case refused && m.dumpExcept(t, bucketQuarantine) != before:
				t.Fatalf("refused %s %q changed the read models", tp.name, data)
			case refused && (q.Seq != uint64(k)+1 || q.Type != tp.name):
				t.Fatalf("quarantine of A names seq %d %s, want %d %s", q.Seq, q.Type, k+1, tp.name)
			}
			// B goes on; after a quarantine, A's later events are counted,
			// not applied.
			rest := b[1:]
			if refused {
				rest = slices.Concat(a[min(k+1, len(a)):], rest)
			}
			if err := m.apply(rest...); err != nil {
				t.Fatalf("handoff B refused after A's %s %q: %v", tp.name, data, err)
			}
			if refused {
				if _, err := m.r.Ledger("A"); !errors.As(err, &q) {
					t.Fatalf("ledger of quarantined A: %v", err)
				}
				if k > 0 {
					list, _, err := m.r.ListContracts("acme", ContractFilter{Limit: 10})
					if err != nil || len(list) != 1 || !json.Valid(list[0]) || !strings.HasPrefix(string(list[0]), `{"quarantined":{`) {
						t.Fatalf("listing of quarantined A: %s, %v", list, err)
					}
				}
			} else {
				m.readHandoff(t, "A")
			}
			if got := m.readHandoff(t, "B"); got != wantB {
				t.Fatalf("handoff A's event %s %q changed handoff B:\n got %s\nwant %s", tp.name, data, got, wantB)
			}
			return m.dump(t), refused
		}
		withCache, r1 := run(cached)
		without, r2 := run(refolded)
		if r1 != r2 || withCache != without {
			t.Fatalf("the cache changed the outcome of %s %q: quarantined %v and %v, same bytes %v", tp.name, data, r1, r2, withCache == without)
		}
	})
}

// FuzzKeysApply applies a key event with a fuzzed payload after one live
// key (key_a) and one revoked key (key_b). A payload that does not decode
// is refused and changes nothing; revoking an unknown key creates none;
// revoking key_a takes it out of authentication, revoking key_b again keeps
// the first revocation; a created key can be looked up both ways; and the
// auth read model stays readable.
func FuzzKeysApply(f *testing.F) {
	keyA := domain.KeyCreated{KeyID: "key_a", Tenant: "acme", Hash: domain.HashKey("secret-a"), Display: "btn_sk_AAAA…aaaa", Label: "ci"}
	keyB := domain.KeyCreated{KeyID: "key_b", Tenant: "beta", Admin: true, Hash: domain.HashKey("secret-b"), Display: "btn_sk_BBBB…bbbb"}
	keyEvent := func(typ string, data []byte) eventstore.RecordedEvent {
		return eventstore.RecordedEvent{StreamID: domain.KeysStream, EventData: eventstore.EventData{
			Type: typ, Data: data, Metadata: eventstore.Metadata{Actor: "admin", RecordedAt: fuzzAt}}}
	}
	var setup []eventstore.RecordedEvent
	for _, d := range []any{keyA, keyB, domain.KeyRevoked{KeyID: keyB.KeyID}} {
		data, err := json.Marshal(d)
		if err != nil {
			f.Fatal(err)
		}
		typ := domain.EventKeyCreated
		if _, ok := d.(domain.KeyRevoked); ok {
			typ = domain.EventKeyRevoked
		}
		setup = append(setup, keyEvent(typ, data))
	}
	types := []string{domain.EventKeyCreated, domain.EventKeyRevoked, "KeyRotated"}
	for _, s := range []string{
		`{"keyId":"key_c","tenant":"acme","admin":false,"hash":"c0ffee","display":"btn_sk_CCCC…cccc","label":"x"}`,
		`{"keyId":"key_a","tenant":"acme","hash":"` + keyB.Hash + `"}`,
		`{"keyId":"key_a"}`, `{"keyId":"key_b"}`, `{"keyId":"key_zz"}`, `{"keyId":""}`,
		`{}`, `null`, `{"keyId":5}`, `{"admin":"yes"}`, ``, `[`,
	} {
		for typ := range types {
			f.Add(uint8(typ), []byte(s))
		}
	}
	m := openReadModel(f, false)
	f.Fuzz(func(t *testing.T, typ uint8, data []byte) {
		m.reset(t)
		for _, ev := range setup {
			if err := m.apply(ev); err != nil {
				t.Fatal(err)
			}
		}
		before := m.dump(t)
		countBefore, err := m.r.KeyCount()
		if err != nil {
			t.Fatal(err)
		}
		ev := keyEvent(types[int(typ)%len(types)], data)
		err = m.apply(ev)
		after := m.dump(t)

		var created domain.KeyCreated
		var revoked domain.KeyRevoked
		decodeErr := errors.New("not a key event")
		switch ev.Type {
		case domain.EventKeyCreated:
			decodeErr = json.Unmarshal(data, &created)
		case domain.EventKeyRevoked:
			decodeErr = json.Unmarshal(data, &revoked)
		}
		switch {
		case ev.Type == domain.EventKeyCreated || ev.Type == domain.EventKeyRevoked:
			if decodeErr != nil && err == nil {
				t.Fatalf("%s %q does not decode, yet it was applied", ev.Type, data)
			}
		case err != nil || after != before:
			t.Fatalf("an event the projection does not handle (%s) changed it: %v", ev.Type, err)
		}
		if err != nil && after != before {
			t.Fatalf("refused %s %q changed the read model", ev.Type, data)
		}
		if err == nil && decodeErr == nil {
			switch ev.Type {
			case domain.EventKeyRevoked:
				switch revoked.KeyID {
				case keyA.KeyID:
					rec, err := m.r.KeyByID(keyA.KeyID)
					if _, herr := m.r.KeyByHash(keyA.Hash); err != nil || rec.RevokedAt == nil || !rec.RevokedAt.Equal(fuzzAt) || !errors.Is(herr, ErrNoKey) {
						t.Fatalf("revoked key_a reads as %+v (%v); by hash: %v", rec, err, herr)
					}
				default: // key_b is revoked already; any other key is unknown
					if after != before {
						t.Fatalf("revoking %q changed the read model:\n%s", revoked.KeyID, after)
					}
				}
			case domain.EventKeyCreated:
				want := domain.KeyRecord{KeyID: created.KeyID, Tenant: created.Tenant, Admin: created.Admin,
					Display: created.Display, Label: created.Label, CreatedAt: fuzzAt}
				byID, err := m.r.KeyByID(created.KeyID)
				if err != nil || !liveKeyIs(byID, want) {
					t.Fatalf("created key by id: %+v, %v; want %+v", byID, err, want)
				}
				byHash, err := m.r.KeyByHash(created.Hash)
				if err != nil || !liveKeyIs(byHash, want) {
					t.Fatalf("created key by hash: %+v, %v; want %+v", byHash, err, want)
				}
			}
		}
		// Whatever happened, every key reads back.
		n, err := m.r.KeyCount()
		if err != nil || n < countBefore {
			t.Fatalf("key count %d after %d: %v", n, countBefore, err)
		}
		var ids, hashes []string
		err = m.r.View(func(tx *bbolt.Tx) error {
			tx.Bucket(bucketKeyHashe).ForEach(func(id, _ []byte) error { ids = append(ids, string(id)); return nil })
			return tx.Bucket(bucketKeys).ForEach(func(hash, _ []byte) error { hashes = append(hashes, string(hash)); return nil })
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if _, err := m.r.KeyByID(id); err != nil {
				t.Fatalf("key %q does not read back: %v", id, err)
			}
		}
		for _, h := range hashes {
			if _, err := m.r.KeyByHash(h); err != nil && !errors.Is(err, ErrNoKey) {
				t.Fatalf("key with hash %q does not read back: %v", h, err)
			}
		}
	})
}

// liveKeyIs reports whether rec is a live key with want's fields.
func liveKeyIs(rec, want domain.KeyRecord) bool {
	return rec.KeyID == want.KeyID && rec.Tenant == want.Tenant && rec.Admin == want.Admin && rec.Display == want.Display &&
		rec.Label == want.Label && rec.CreatedAt.Equal(want.CreatedAt) && rec.RevokedAt == nil
}
