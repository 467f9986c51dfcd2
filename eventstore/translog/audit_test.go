package translog

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

func FuzzReadBundle(f *testing.F) {
	ev := domain.Recorded{Seq: 1, Type: "ContractCreated", Data: json.RawMessage(`{}`), Actor: "a", RecordedAt: time.Unix(1, 0).UTC()}
	good, _ := json.Marshal(Bundle{Format: BundleFormat, HandoffID: "h1", Events: []domain.Recorded{ev}, Receipts: []Receipt{{Seq: 1, LeafIndex: 3, Proof: "c2sp.org/tlog-proof@v1\nindex 3\n\no\n4\nAAAA\n"}}})
	f.Add(good)
	f.Add([]byte(`{"format":"baton.audit-bundle/v1","handoffId":"h","events":[],"receipts":[{"seq":1,"leafIndex":0}]}`))
	f.Add([]byte(`{"format":"x"}`))
	_, vkey, _ := GenerateKey("fuzz.test/log", bytes.NewReader(make([]byte, 64)))
	f.Fuzz(func(t *testing.T, b []byte) {
		bd, err := ReadBundle(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, r := range bd.Receipts {
			if r.Seq == 0 || r.Seq > uint64(len(bd.Events)) {
				t.Fatalf("receipt %+v accepted for %d events", r, len(bd.Events))
			}
		}
		// Whatever it holds, verifying it reports, never panics.
		if _, err := VerifyBundle(bd, vkey, &bd, nil, 0); err != nil {
			t.Fatal(err)
		}
	})
}

func TestReadBundleRefuses(t *testing.T) {
	for _, s := range []string{
		`{"format":"baton.audit-bundle/v1","handoffId":"h","events":[],"receipts":[],"x":1}`,
		`{"format":"baton.audit-bundle/v2","handoffId":"h","events":[],"receipts":[]}`,
		`{"format":"baton.audit-bundle/v1","handoffId":"h\n","events":[],"receipts":[]}`,
		`{"format":"baton.audit-bundle/v1","handoffId":"h","events":[],"receipts":[{"seq":1,"leafIndex":0}]}`,
		`{"format":"baton.audit-bundle/v1","handoffId":"h","events":[],"receipts":[]} {}`,
	} {
		if _, err := ReadBundle(bytes.NewReader([]byte(s))); err == nil {
			t.Errorf("%s accepted", s)
		}
	}
}

var fuzzLeaf = eventstore.RecordedEvent{StreamID: "handoff-h", Position: eventstore.Position{Commit: 1, Prepare: 1},
	EventData: eventstore.EventData{Type: "T", Data: json.RawMessage(`{}`), Metadata: eventstore.Metadata{Actor: "a", RecordedAt: time.Unix(1, 0)}}}

// FuzzCheckpointClaim: a claim in the checkpoint stream is written by
// whoever can append to the store; whatever it holds, the log reports it
// or takes it, and takes it only when it is its own root, signed.
func FuzzCheckpointClaim(f *testing.F) {
	skey, vkey, _ := GenerateKey("fuzz.test/log", bytes.NewReader(make([]byte, 64)))
	f.Add([]byte(`{"size":1,"root":"","checkpoint":"fuzz.test/log\n1\nAAAA\n\n— fuzz.test/log AAAA\n"}`), "LogCheckpointSigned")
	f.Add([]byte(`{"size":-1}`), "LogCheckpointSigned")
	// A good claim: the root of the one leaf below, signed.
	_, entry, _ := Leaf(fuzzLeaf)
	signer, _ := note.NewSigner(skey)
	good, _ := note.Sign(&note.Note{Text: Checkpoint{Origin: "fuzz.test/log", Size: 1, Root: tlog.RecordHash(entry)}.Text()}, signer)
	rec, _ := json.Marshal(checkpointRecord{Size: 1, Checkpoint: string(good)})
	f.Add(rec, EventCheckpointSigned)
	f.Add([]byte(`[]`), "X")
	f.Fuzz(func(t *testing.T, data []byte, typ string) {
		l, err := Open(filepath.Join(t.TempDir(), FileName), nil, Options{SignerKey: skey, VerifierKey: vkey, OnFork: func(Fork) {}})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		leaf := fuzzLeaf
		claim := eventstore.RecordedEvent{StreamID: CheckpointStream, Position: eventstore.Position{Commit: 2, Prepare: 2},
			EventData: eventstore.EventData{Type: typ, Data: data}}
		if err := l.apply([]eventstore.RecordedEvent{leaf, claim}); err != nil {
			t.Fatal(err)
		}
		signed, cp := l.Checkpoint()
		if string(data) == string(rec) && typ == EventCheckpointSigned && signed == nil {
			t.Fatal("the good claim was not taken")
		}
		if signed != nil {
			root, _ := l.Root(1)
			if cp.Size != 1 || cp.Root != root {
				t.Fatalf("took %+v", cp)
			}
		}
	})
}

// FuzzWitnessVerifier: a witness key is read from flags and files; a
// signature checked with it comes from anyone who posts one.
func FuzzWitnessVerifier(f *testing.F) {
	f.Add("w1.example+1a2b3c4d+BAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", []byte("text\n"), []byte("sig"))
	f.Add("w+00000000+", []byte{}, make([]byte, 72))
	f.Fuzz(func(t *testing.T, vkey string, msg, sig []byte) {
		v, err := NewWitnessVerifier(vkey)
		if err != nil {
			return
		}
		if v.Name() == "" || strings.ContainsAny(v.Name(), " +\n") {
			t.Fatalf("key %q read with name %q", vkey, v.Name())
		}
		v.Verify(msg, sig) // never panics
	})
}

// An old receipt whose checkpoint the log key does not verify (a bundle
// kept under a key since replaced, or its checkpoint altered) is named as
// such: it says nothing of the ledger, which is not "rewritten".
func TestOldReceiptOfAnotherKeyIsNotARewrite(t *testing.T) {
	ev := domain.Recorded{Seq: 1, Type: "ContractCreated", Data: json.RawMessage(`{}`), Actor: "a", RecordedAt: time.Unix(1, 0).UTC()}
	c, err := domain.Canonical("h1", 1, ev.Type, ev.Actor, ev.RecordedAt, ev.Data)
	if err != nil {
		t.Fatal(err)
	}
	ev.PrevHash = domain.GenesisHash("h1")
	ev.Hash = domain.ChainHash(ev.PrevHash, c)
	bundle := func(name string) (Bundle, string) {
		skey, vkey, _ := GenerateKey(name, nil)
		signer, _ := note.NewSigner(skey)
		signed, _ := note.Sign(&note.Note{Text: Checkpoint{Origin: name, Size: 1, Root: tlog.RecordHash(c)}.Text()}, signer)
		proof := Proof{Index: 0, Checkpoint: signed}.Text()
		return Bundle{Format: BundleFormat, HandoffID: "h1", Events: []domain.Recorded{ev}, Receipts: []Receipt{{Seq: 1, LeafIndex: 0, Proof: proof}}}, vkey
	}
	old, _ := bundle("old.test/log")
	cur, vkey := bundle("new.test/log")
	rep, err := VerifyBundle(cur, vkey, &old, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || strings.Contains(rep.Problems[0].Detail, "rewritten") || !strings.Contains(rep.Problems[0].Detail, "does not verify") {
		t.Fatalf("problems: %+v", rep.Problems)
	}
}

// chained gives evs their seqs and chain hashes as handoff id's ledger.
func chained(t *testing.T, id string, evs ...domain.Recorded) []domain.Recorded {
	t.Helper()
	prev := domain.GenesisHash(id)
	for i := range evs {
		evs[i].Seq, evs[i].PrevHash = uint64(i+1), prev
		c, err := domain.Canonical(id, evs[i].Seq, evs[i].Type, evs[i].Actor, evs[i].RecordedAt, evs[i].Data)
		if err != nil {
			t.Fatal(err)
		}
		evs[i].Hash = domain.ChainHash(prev, c)
		prev = evs[i].Hash
	}
	return evs
}

// provedBundle is the bundle of evs, the first proved ones the whole log,
// signed with skey; the others have receipts without proofs.
func provedBundle(t *testing.T, id, skey string, evs []domain.Recorded, proved int) Bundle {
	t.Helper()
	var stored []tlog.Hash
	hr := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = stored[x]
		}
		return out, nil
	})
	for i := 0; i < proved; i++ {
		c, _ := domain.Canonical(id, evs[i].Seq, evs[i].Type, evs[i].Actor, evs[i].RecordedAt, evs[i].Data)
		hs, err := tlog.StoredHashes(int64(i), c, hr)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, hs...)
	}
	b := Bundle{Format: BundleFormat, HandoffID: id, Events: evs}
	var signed []byte
	if proved > 0 {
		root, err := tlog.TreeHash(int64(proved), hr)
		if err != nil {
			t.Fatal(err)
		}
		signer, _ := note.NewSigner(skey)
		if signed, err = note.Sign(&note.Note{Text: Checkpoint{Origin: signer.Name(), Size: int64(proved), Root: root}.Text()}, signer); err != nil {
			t.Fatal(err)
		}
	}
	for i := range evs {
		r := Receipt{Seq: evs[i].Seq, LeafIndex: int64(i)}
		if i < proved {
			p, err := tlog.ProveRecord(int64(proved), int64(i), hr)
			if err != nil {
				t.Fatal(err)
			}
			r.Proof = Proof{Index: int64(i), Hashes: p, Checkpoint: signed}.Text()
		}
		b.Receipts = append(b.Receipts, r)
	}
	return b
}

// With --old, an event the old bundle kept before a checkpoint covered it
// (its receipt without a proof) is compared with the event now at its seq
// too: the kept events are the ledger as it was, proved or not. Only the
// proved ones were compared, and a kept event rewritten or removed since
// went unseen (ok). An old bundle whose own chain is broken proves
// nothing of the ledger.
func TestOldEventsKeptWithoutAProofAreCompared(t *testing.T) {
	skey, vkey, _ := GenerateKey("example.test/log", nil)
	ev := func(typ, data string, at int64) domain.Recorded {
		return domain.Recorded{Type: typ, Data: json.RawMessage(data), Actor: "a", RecordedAt: time.Unix(at, 0).UTC()}
	}
	created := ev("ContractCreated", `{}`, 1)
	approved := ev("ApprovalDecided", `{"decidedBy":"alice","status":"APPROVED"}`, 2)
	rewritten := ev("ApprovalDecided", `{"decidedBy":"mallory","status":"APPROVED"}`, 2)
	started := ev("ProofReceived", `{}`, 3)
	cur := provedBundle(t, "h1", skey, chained(t, "h1", created, approved), 2)
	for _, c := range []struct {
		name string
		old  Bundle
		want string // in the only problem; "" for none
	}{
		{"the same events", provedBundle(t, "h1", skey, chained(t, "h1", created, approved), 1), ""},
		{"a kept event rewritten", provedBundle(t, "h1", skey, chained(t, "h1", created, rewritten), 1), "rewritten"},
		{"a kept event removed", provedBundle(t, "h1", skey, chained(t, "h1", created, approved, started), 2), "removed"},
	} {
		rep, err := VerifyBundle(cur, vkey, &c.old, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.want == "" && len(rep.Problems) != 0,
			c.want != "" && (len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Detail, c.want)):
			t.Errorf("%s: problems %+v", c.name, rep.Problems)
		}
	}
	tampered := provedBundle(t, "h1", skey, chained(t, "h1", created, approved), 1)
	tampered.Events[1].Data = json.RawMessage(`{"decidedBy":"eve","status":"APPROVED"}`)
	rep, err := VerifyBundle(cur, vkey, &tampered, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || strings.Contains(rep.Problems[0].Detail, "rewritten") || !strings.Contains(rep.Problems[0].Detail, "old bundle") {
		t.Errorf("an old bundle with a broken chain: problems %+v", rep.Problems)
	}
}
