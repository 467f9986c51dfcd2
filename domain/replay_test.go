package domain_test

import (
	"reflect"
	"testing"

	"github.com/batonhq/baton/domain"
)

// sent is cmd as received with an Idempotency-Key (or none) and a body hash.
func sent(cmd domain.Command, key, body string) domain.Command {
	ref := domain.RequestRef{IdempotencyKey: key, BodySHA256: body}
	switch c := cmd.(type) {
	case domain.ApprovalCommand:
		c.Request = ref
		return c
	case domain.ProofCommand:
		c.Request = ref
		return c
	case domain.ResultCommand:
		c.Request = ref
		return c
	case domain.ReviewCommand:
		c.Request = ref
		return c
	}
	panic("unknown command")
}

// TestReplay checks how a retried callback is recognised: by its
// Idempotency-Key on any earlier callback of its kind, or, without a key, by
// a body identical to the last accepted callback's. A retry is answered
// with the seq of the first callback's last event.
func TestReplay(t *testing.T) {
	// approval (seq 2) with a key, proof (seqs 3-4) without, review (seq 5)
	// with a key.
	three := []domain.Command{
		sent(approve(), "k-approve", "b-approve"),
		sent(proof("run-1"), "", "b-proof"),
		sent(review(domain.VerdictVerified), "k-review", "b-review"),
	}
	tests := []struct {
		name     string
		contract domain.CreateContract
		before   []domain.Command
		kind     string
		ref      domain.RequestRef
		// a replay: the seq that answers it and the state there
		wantReplay bool
		wantSeq    uint64
		wantState  domain.State
		// a refusal
		wantCode string
	}{
		{
			name: "same key and body after later callbacks", contract: contract("log"), before: three,
			kind: domain.KindApproval, ref: domain.RequestRef{IdempotencyKey: "k-approve", BodySHA256: "b-approve"},
			wantReplay: true, wantSeq: 2, wantState: domain.StateApprovalDecided,
		},
		{
			name: "same key with another body is refused", contract: contract("log"), before: three,
			kind: domain.KindApproval, ref: domain.RequestRef{IdempotencyKey: "k-approve", BodySHA256: "b-other"},
			wantCode: "idempotency_key_reused",
		},
		{
			name: "a key belongs to its callback kind", contract: contract("log"), before: three,
			kind: domain.KindProof, ref: domain.RequestRef{IdempotencyKey: "k-approve", BodySHA256: "b-other"},
		},
		{
			name: "a new key with the last callback's body is a new callback", contract: contract("log"), before: three,
			kind: domain.KindReview, ref: domain.RequestRef{IdempotencyKey: "k-new", BodySHA256: "b-review"},
		},
		{
			name: "no key and the last callback's body", contract: contract("log"), before: three,
			kind: domain.KindReview, ref: domain.RequestRef{BodySHA256: "b-review"},
			wantReplay: true, wantSeq: 5, wantState: domain.StateProofReviewed,
		},
		{
			name: "no key and an earlier callback's body is a new callback", contract: contract("log"), before: three,
			kind: domain.KindProof, ref: domain.RequestRef{BodySHA256: "b-proof"},
		},
		{
			name: "no key and the last body under another kind", contract: contract("log"), before: three,
			kind: domain.KindResult, ref: domain.RequestRef{BodySHA256: "b-review"},
		},
		{
			name: "no key and another body", contract: contract("log"), before: three,
			kind: domain.KindReview, ref: domain.RequestRef{BodySHA256: "b-other"},
		},
		{
			name: "a rejection answers with the close", contract: contract("log"),
			before: []domain.Command{sent(reject(), "k-reject", "b-reject")},
			kind:   domain.KindApproval, ref: domain.RequestRef{IdempotencyKey: "k-reject", BodySHA256: "b-reject"},
			wantReplay: true, wantSeq: 3, wantState: domain.StateLedgerClosed,
		},
		{
			name: "the first proof answers with the proof, not the start", contract: contract("log"),
			before: []domain.Command{approve(), sent(proof("run-1"), "k-proof", "b-proof")},
			kind:   domain.KindProof, ref: domain.RequestRef{IdempotencyKey: "k-proof", BodySHA256: "b-proof"},
			wantReplay: true, wantSeq: 4, wantState: domain.StateProofReceived,
		},
		{
			name: "a closing result retried without a key answers with the close", contract: contract(),
			before: []domain.Command{approve(), sent(result("run-1", domain.RunSucceeded), "", "b-result")},
			kind:   domain.KindResult, ref: domain.RequestRef{BodySHA256: "b-result"},
			wantReplay: true, wantSeq: 5, wantState: domain.StateLedgerClosed,
		},
		{
			name: "a result with proof is a result callback", contract: contract("log"),
			before: []domain.Command{approve(), sent(resultWithProof("run-1", domain.RunSucceeded), "k-result", "b-result")},
			kind:   domain.KindResult, ref: domain.RequestRef{IdempotencyKey: "k-result", BodySHA256: "b-result"},
			wantReplay: true, wantSeq: 5, wantState: domain.StateResultReceived,
		},
		{
			name: "a result with proof is not a proof callback", contract: contract("log"),
			before: []domain.Command{approve(), sent(resultWithProof("run-1", domain.RunSucceeded), "k-result", "b-result")},
			kind:   domain.KindProof, ref: domain.RequestRef{IdempotencyKey: "k-result", BodySHA256: "b-result"},
		},
		{
			name: "the automatic approval answers no callback", contract: autoContract("low"),
			kind: domain.KindApproval, ref: domain.RequestRef{BodySHA256: "b-approve"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := open(t, tc.contract)
			l.do(tc.before...)
			seq, replay, err := l.h.Replay("handoff."+tc.kind, tc.kind, tc.ref)
			if want, _ := domain.Fold(l.recs); !reflect.DeepEqual(l.h, want) {
				t.Fatal("Replay changed the handoff")
			}
			if tc.wantCode != "" {
				refusal(t, nil, err, domain.KindInvalid, tc.wantCode)
				return
			}
			if err != nil || replay != tc.wantReplay || seq != tc.wantSeq {
				t.Fatalf("Replay = %d, %v, %v; want %d, %v", seq, replay, err, tc.wantSeq, tc.wantReplay)
			}
			if !replay {
				return
			}
			answer, err := domain.Fold(l.recs[:seq])
			if err != nil {
				t.Fatal(err)
			}
			if answer.State != tc.wantState || answer.Head != (domain.LedgerHead{Seq: seq, Hash: l.recs[seq-1].Hash}) {
				t.Fatalf("the answer at seq %d is %s with head %+v, want %s", seq, answer.State, answer.Head, tc.wantState)
			}
		})
	}
}
