package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/ledger"
)

// chainTestStore is the global feed of an in-memory store: what the
// verification reads (ReadStream, ReadAll). Other methods are not used.
type chainTestStore struct {
	eventstore.Store
	feed    []eventstore.RecordedEvent
	readErr error
}

func (s *chainTestStore) ReadStream(_ context.Context, stream string, from uint64, limit int) ([]eventstore.RecordedEvent, error) {
	if err := eventstore.ValidateStreamID(stream); err != nil {
		return nil, err
	}
	if s.readErr != nil {
		return nil, s.readErr
	}
	var out []eventstore.RecordedEvent
	for _, ev := range s.feed {
		if ev.StreamID == stream && ev.Revision >= from && len(out) < limit {
			out = append(out, ev)
		}
	}
	return out, nil
}

func (s *chainTestStore) ReadAll(_ context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	var out []eventstore.RecordedEvent
	for _, ev := range s.feed {
		if after.Less(ev.Position) && len(out) < limit {
			out = append(out, ev)
		}
	}
	return out, nil
}

// add appends events to stream as Baton's write side records them:
// chained after what the stream holds.
func (s *chainTestStore) add(t *testing.T, stream, id string, events ...domain.Event) {
	t.Helper()
	prev, rev := domain.GenesisHash(id), uint64(0)
	for _, ev := range s.feed {
		if ev.StreamID == stream {
			prev, rev = ev.Metadata.Hash, ev.Revision+1
		}
	}
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	for _, e := range events {
		data, err := json.Marshal(e.Data)
		if err != nil {
			t.Fatal(err)
		}
		c, err := domain.Canonical(id, rev+1, e.Type, "tenant:t", at, data)
		if err != nil {
			t.Fatal(err)
		}
		hash := domain.ChainHash(prev, c)
		s.feed = append(s.feed, eventstore.RecordedEvent{StreamID: stream, Revision: rev,
			Position:  eventstore.Position{Commit: uint64(len(s.feed)) + 1, Prepare: uint64(len(s.feed)) + 1},
			EventData: eventstore.EventData{Type: e.Type, Data: data, Metadata: eventstore.Metadata{Actor: "tenant:t", RecordedAt: at, PrevHash: prev, Hash: hash}}})
		prev, rev = hash, rev+1
	}
}

// opened is a new handoff id's contract and its approval.
func opened(id string) []domain.Event {
	return []domain.Event{
		{Type: domain.EventContractCreated, Data: domain.ContractCreated{HandoffID: id, Tenant: "t", Objective: "Rotate a certificate",
			TargetExecutor: "ops", ExecutorProtocol: "ops.v1", RiskLevel: "low", ApprovalMode: domain.ApprovalModeManual}},
		{Type: domain.EventApprovalDecided, Data: domain.ApprovalDecided{Status: domain.ApprovalApproved, DecidedBy: "alice"}},
	}
}

func (s *chainTestStore) hash(stream string, rev uint64) string {
	for _, ev := range s.feed {
		if ev.StreamID == stream && ev.Revision == rev {
			return ev.Metadata.Hash
		}
	}
	return ""
}

func verifyAll(t *testing.T, s *chainTestStore, ids []string, receipts map[string][]domain.LedgerHead) []ledger.ChainReport {
	t.Helper()
	var got []ledger.ChainReport
	if err := ledger.VerifyHandoffs(context.Background(), s, ids, receipts, func(r ledger.ChainReport) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestVerifyHandoffs(t *testing.T) {
	const id = "h1"
	zero := strings.Repeat("0", 64)
	tests := []struct {
		name     string
		build    func(t *testing.T, s *chainTestStore)
		receipts []domain.LedgerHead // for id; seq 2's hash filled in where Hash is "head"
		status   ledger.ChainStatus
		events   int
		brk      string // a part of Break
	}{
		{name: "intact", status: ledger.ChainIntact, events: 2},
		{name: "intact with every receipt", receipts: []domain.LedgerHead{{Seq: 2, Hash: "head"}, {Seq: 2, Hash: "head"}}, status: ledger.ChainIntact, events: 2},
		{name: "missing", build: func(*testing.T, *chainTestStore) {}, status: ledger.ChainMissing},
		{name: "a wrong receipt before a right one", receipts: []domain.LedgerHead{{Seq: 2, Hash: zero}, {Seq: 2, Hash: "head"}},
			status: ledger.ChainBroken, events: 2, brk: "handoff h1: receipt 2:" + zero + " does not match event 2, whose hash is now"},
		{name: "a wrong receipt after a right one", receipts: []domain.LedgerHead{{Seq: 2, Hash: "head"}, {Seq: 1, Hash: zero}},
			status: ledger.ChainBroken, events: 2, brk: "the ledger was rewritten"},
		{name: "a receipt beyond the head", receipts: []domain.LedgerHead{{Seq: 5, Hash: zero}},
			status: ledger.ChainBroken, events: 2, brk: "is beyond the ledger's head (2 events): events are missing"},
		{name: "a receipt of seq 0", receipts: []domain.LedgerHead{{Seq: 0, Hash: zero}},
			status: ledger.ChainBroken, events: 2, brk: "names no event"},
		{name: "altered event", build: func(t *testing.T, s *chainTestStore) {
			s.add(t, domain.StreamID(id), id, opened(id)...)
			s.feed[1].Data = json.RawMessage(`{"status":"APPROVED","decidedBy":"mallory"}`)
		}, status: ledger.ChainBroken, events: 2, brk: "handoff h1: event 2 (ApprovalDecided): hash does not match the event's content"},
		{name: "a step the state machine refuses", build: func(t *testing.T, s *chainTestStore) {
			s.add(t, domain.StreamID(id), id, opened(id)...)
			s.add(t, domain.StreamID(id), id, domain.Event{Type: domain.EventProofReviewed, Data: domain.ProofReviewed{Verdict: domain.VerdictVerified, Reviewer: "mallory"}})
		}, status: ledger.ChainBroken, events: 3, brk: "handoff h1: event 3 (ProofReviewed) is not a step Baton allows"},
		{name: "a contract naming another handoff", build: func(t *testing.T, s *chainTestStore) {
			s.add(t, domain.StreamID(id), id, opened("h2")...)
		}, status: ledger.ChainBroken, events: 2, brk: `handoff h1: event 1 (ContractCreated) is not a step Baton allows: its contract names handoff "h2"`},
		{name: "unreadable metadata", build: func(t *testing.T, s *chainTestStore) {
			s.add(t, domain.StreamID(id), id, opened(id)...)
			s.feed[1].Metadata, s.feed[1].Unreadable = eventstore.Metadata{}, "not JSON"
		}, status: ledger.ChainBroken, events: 2, brk: `handoff h1: event 2 (ApprovalDecided): its metadata cannot be read: "not JSON"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &chainTestStore{}
			if tt.build != nil {
				tt.build(t, s)
			} else {
				s.add(t, domain.StreamID(id), id, opened(id)...)
			}
			var receipts []domain.LedgerHead
			for _, r := range tt.receipts {
				if r.Hash == "head" {
					r.Hash = s.hash(domain.StreamID(id), 1)
				}
				receipts = append(receipts, r)
			}
			got := verifyAll(t, s, []string{id}, map[string][]domain.LedgerHead{id: receipts})
			if len(got) != 1 {
				t.Fatalf("%d reports, want 1: %+v", len(got), got)
			}
			r := got[0]
			if r.HandoffID != id || r.Status != tt.status || r.Events != tt.events || !strings.Contains(r.Break, tt.brk) || (tt.brk == "") != (r.Break == "") {
				t.Fatalf("report %+v\nwant status %d, %d events, a break with %q", r, tt.status, tt.events, tt.brk)
			}
			if r.Status == ledger.ChainIntact && r.Head != (domain.LedgerHead{Seq: 2, Hash: s.hash(domain.StreamID(id), 1)}) {
				t.Fatalf("head %+v", r.Head)
			}
		})
	}
}

// Without ids, every handoff of the store is verified, in the order of
// the global feed; other streams are not handoffs.
func TestVerifyHandoffsFindsEveryHandoff(t *testing.T) {
	s := &chainTestStore{}
	s.add(t, domain.StreamID("b"), "b", opened("b")[:1]...)
	s.feed = append(s.feed, eventstore.RecordedEvent{StreamID: domain.KeysStream, Position: eventstore.Position{Commit: 2, Prepare: 2},
		EventData: eventstore.EventData{Type: domain.EventKeyCreated, Data: json.RawMessage(`{}`)}})
	s.add(t, domain.StreamID("a"), "a", opened("a")...)
	s.add(t, domain.StreamID("b"), "b", opened("b")[1:]...)
	var ids []string
	for _, r := range verifyAll(t, s, nil, nil) {
		if r.Status != ledger.ChainIntact {
			t.Fatalf("report %+v", r)
		}
		ids = append(ids, fmt.Sprintf("%s:%d", r.HandoffID, r.Events))
	}
	if strings.Join(ids, " ") != "b:2 a:2" {
		t.Fatalf("verified %v, want b:2 a:2", ids)
	}
}

// A handoff whose stream name the store cannot read back is reported,
// its id quoted, and the others still verified; a failing store stops the
// verification with its error.
func TestVerifyHandoffsStreamNamesAndStoreErrors(t *testing.T) {
	s := &chainTestStore{}
	s.add(t, domain.StreamID("a"), "a", opened("a")...)
	got := verifyAll(t, s, []string{"bad\x00id", "a"}, nil)
	if len(got) != 2 || got[0].Status != ledger.ChainBroken || !strings.HasPrefix(got[0].Break, `handoff "bad\x00id": its stream name cannot be read back`) || got[1].Status != ledger.ChainIntact {
		t.Fatalf("reports %+v", got)
	}

	s.readErr = errors.New("disk on fire")
	err := ledger.VerifyHandoffs(context.Background(), s, []string{"a"}, nil, func(r ledger.ChainReport) { t.Fatalf("reported %+v", r) })
	if !errors.Is(err, s.readErr) {
		t.Fatalf("err = %v", err)
	}
}

// CheckChain checks a ledger as a server shows it: the chain and every
// receipt, without folding it.
func TestCheckChain(t *testing.T) {
	s := &chainTestStore{}
	s.add(t, domain.StreamID("h"), "h", opened("h")...)
	s.add(t, domain.StreamID("h"), "h", domain.Event{Type: domain.EventProofReviewed, Data: domain.ProofReviewed{Verdict: domain.VerdictVerified, Reviewer: "r"}})
	var recs []domain.Recorded
	for _, ev := range s.feed {
		recs = append(recs, domain.Recorded{Seq: ev.Revision + 1, Type: ev.Type, Data: ev.Data, Actor: ev.Metadata.Actor,
			RecordedAt: ev.Metadata.RecordedAt, PrevHash: ev.Metadata.PrevHash, Hash: ev.Metadata.Hash})
	}
	head := domain.LedgerHead{Seq: 3, Hash: recs[2].Hash}
	if r := ledger.CheckChain("h", recs, []domain.LedgerHead{{Seq: 1, Hash: recs[0].Hash}, head}); r.Status != ledger.ChainIntact || r.Head != head || r.Events != 3 {
		t.Fatalf("intact chain: %+v", r)
	}
	if r := ledger.CheckChain("h", recs, []domain.LedgerHead{{Seq: 1, Hash: recs[1].Hash}, head}); r.Status != ledger.ChainBroken || !strings.Contains(r.Break, "receipt 1:") {
		t.Fatalf("a wrong first receipt: %+v", r)
	}
	if r := ledger.CheckChain("other", recs, nil); r.Status != ledger.ChainBroken || !strings.Contains(r.Break, "handoff other: event 1") {
		t.Fatalf("another handoff's chain: %+v", r)
	}
	if r := ledger.CheckChain("h", nil, nil); r.Status != ledger.ChainMissing {
		t.Fatalf("no events: %+v", r)
	}
}
