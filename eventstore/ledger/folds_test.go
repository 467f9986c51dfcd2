package ledger_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/ledger"
)

// runningProof is the n-th proof of run-1, still running.
func runningProof(n int) domain.ProofCommand {
	p := &domain.Proof{Summary: fmt.Sprintf("step %d", n), Artifacts: []domain.Artifact{{Type: "log", Text: "ok"}}}
	return domain.ProofCommand{ExecutorRunID: "run-1", Status: "RUNNING", Proof: p,
		Request: domain.RequestRef{Kind: domain.KindProof, BodySHA256: fmt.Sprintf("proof-%d", n)}}
}

// A callback on a handoff with a long ledger (an executor's progress
// reports over hours): what one more costs as the ledger grows.
func BenchmarkCallbackOnLongLedger(b *testing.B) {
	for _, events := range []int{10, 2500} {
		b.Run(fmt.Sprintf("events=%d", events), func(b *testing.B) {
			st, err := bolt.Open(b.TempDir(), bolt.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			s := ledger.NewHandoffs(st, nil)
			c := contract()
			c.ApprovalMode = domain.ApprovalModeAuto
			ctx := context.Background()
			out, err := s.Create(ctx, tenantA, c)
			if err != nil {
				b.Fatal(err)
			}
			id := out.Handoff.ID
			for i := out.Handoff.Head.Seq; i < uint64(events); i++ {
				if _, err := s.Handle(ctx, tenantA, id, runningProof(int(i))); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Handle(ctx, tenantA, id, runningProof(events+i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Two services on one store (two replicas): each keeps the state of the
// handoffs it acted on, and each command still sees what the other wrote
// since; a command replayed after later ones answers as of itself.
func TestKeptStateSeesOtherWriters(t *testing.T) {
	st := openStore(t)
	a, b := ledger.NewHandoffs(st, nil), ledger.NewHandoffs(st, nil)
	ctx := context.Background()
	created, err := a.Create(ctx, tenantA, contract())
	if err != nil {
		t.Fatal(err)
	}
	id := created.Handoff.ID
	approved, err := a.Handle(ctx, tenantA, id, approve("ann", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		s := a
		if i%2 == 1 {
			s = b
		}
		out, err := s.Handle(ctx, tenantA, id, runningProof(i))
		if err != nil {
			t.Fatal(err)
		}
		if got := len(out.Handoff.Proofs); got != i+1 {
			t.Fatalf("command %d saw %d proofs, want %d", i, got, i+1)
		}
	}
	// Replays: the last command as the newest state, an earlier one as of
	// its own event, through either service.
	last, err := a.Handle(ctx, tenantA, id, runningProof(5))
	if err != nil || !last.Replayed || len(last.Handoff.Proofs) != 6 {
		t.Fatalf("replay of the last: %+v %v", last, err)
	}
	again, err := b.Handle(ctx, tenantA, id, approve("ann", "k1"))
	if err != nil || !again.Replayed || len(again.Handoff.Proofs) != 0 || again.Handoff.Head != approved.Handoff.Head || again.Position != approved.Position {
		t.Fatalf("replay of the approval: %+v (head %v at %v), want head %v at %v: %v", again.Replayed, again.Handoff.Head, again.Position, approved.Handoff.Head, approved.Position, err)
	}
	// An event another writer appended that the machine cannot apply is
	// refused, though the state before it is kept.
	bad := runningProof(99)
	if _, err := a.Handle(ctx, tenantA, id, domain.ResultCommand{ExecutorRunID: "run-1", Status: domain.RunSucceeded,
		Result: &domain.Result{Summary: "done"}, Request: domain.RequestRef{Kind: domain.KindResult, BodySHA256: "r"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Handle(ctx, tenantA, id, bad); domain.KindOf(err) != domain.KindConflict {
		t.Fatalf("a proof after the result through the other service: %v", err)
	}
}

// streamReads counts the events its store's reads of one stream give out.
type streamReads struct {
	eventstore.Store
	stream string
	n      atomic.Int64
}

func (s *streamReads) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]eventstore.RecordedEvent, error) {
	evs, err := s.Store.ReadStream(ctx, stream, from, limit)
	if stream == s.stream {
		s.n.Add(int64(len(evs)))
	}
	return evs, err
}

// A keyed retry of a callback is answered the handoff as of that
// callback's event: the events up to it are read, not the whole stream
// (an approval retried after 8,000 heartbeats read and decoded them all,
// 12 to 140 ms, on every retry).
func TestReplayReadsUpToItsEvent(t *testing.T) {
	store := &streamReads{Store: openStore(t)}
	s := ledger.NewHandoffs(store, nil)
	ctx := t.Context()
	out, err := s.Create(ctx, tenantA, contract())
	if err != nil {
		t.Fatal(err)
	}
	id := out.Handoff.ID
	store.stream = domain.StreamID(id)
	if _, err := s.Handle(ctx, tenantA, id, approve("ann", "approve-1")); err != nil {
		t.Fatal(err)
	}
	const beats = 1200 // more than a page of reads
	for range beats {
		if _, err := s.Handle(ctx, tenantA, id, domain.HeartbeatCommand{ExecutorRunID: "run-1"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		s    *ledger.Handoffs
		most int64
	}{
		{"warm", s, 2}, // its state kept: the approval's two events
		{"cold", ledger.NewHandoffs(store, nil), 2 + 2 + beats}, // a restart: the state, once
	} {
		store.n.Store(0)
		r, err := c.s.Handle(ctx, tenantA, id, approve("ann", "approve-1"))
		if err != nil || !r.Replayed || r.Handoff.Head.Seq != 2 {
			t.Fatalf("%s: replay %+v, %v", c.name, r, err)
		}
		if n := store.n.Load(); n > c.most {
			t.Errorf("%s: a keyed replay read %d events of the handoff, want at most %d", c.name, n, c.most)
		}
	}
}
