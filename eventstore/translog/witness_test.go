package translog_test

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/batonhq/baton/eventstore/translog"
	"github.com/batonhq/baton/eventstore/translog/translogtest"
)

func TestWitnessCosignaturesAreServedAndCounted(t *testing.T) {
	s := openStore(t)
	skey, vkey, _ := translog.GenerateKey("example.test/baton", nil)
	w1, w2, stranger := newWitness(t, "w1.example"), newWitness(t, "w2.example"), newWitness(t, "w3.example")
	appendEvents(t, s, 2, 20)
	ctx := context.Background()
	l := openLog(t, s, translog.Options{SignerKey: skey, Witnesses: []string{w1.VKey, w2.VKey}})
	if err := l.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	root, _ := l.Root(20)
	if _, err := l.SignAt(ctx, translog.Checkpoint{Origin: l.Origin(), Size: 20, Root: root}, 0); err != nil {
		t.Fatal(err)
	}
	l.CatchUp(ctx)
	signed, _ := l.Checkpoint()
	if n, err := l.AddCosignatures(ctx, stranger.Cosign(signed)); err != nil || n != 0 {
		t.Fatalf("a stranger's cosignature: %d, %v", n, err)
	}
	if n, err := l.AddCosignatures(ctx, w2.Cosign(w1.Cosign(signed))); err != nil || n != 2 {
		t.Fatalf("two witnesses: %d, %v", n, err)
	}
	l.CatchUp(ctx)
	if n, err := l.AddCosignatures(ctx, w1.Cosign(signed)); err != nil || n != 0 {
		t.Fatalf("again: %d, %v", n, err)
	}
	served, _ := l.Checkpoint()
	logV, _ := note.NewVerifier(vkey)
	var ws []note.Verifier
	for _, k := range []string{w1.VKey, w2.VKey, stranger.VKey} {
		v, err := translog.NewWitnessVerifier(k)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, v)
	}
	if _, err := translog.Witnessed(served, logV, ws, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := translog.Witnessed(served, logV, ws, 3); err == nil || !strings.Contains(err.Error(), "2 of the witnesses cosigned it, 3 required") {
		t.Fatalf("quorum 3: %v", err)
	}
	// Receipts prove against the cosigned checkpoint; a replica rebuilt
	// from zero serves the same.
	rs, _ := l.Receipts("h0")
	p, err := translog.ParseProof([]byte(rs[0].Proof))
	if err != nil || string(p.Checkpoint) != string(served) {
		t.Fatalf("receipt's checkpoint %q, %v", p.Checkpoint, err)
	}
	l2 := openLog(t, s, translog.Options{SignerKey: skey, Witnesses: []string{w1.VKey, w2.VKey}})
	l2.CatchUp(ctx)
	if again, _ := l2.Checkpoint(); string(again) != string(served) {
		t.Fatalf("rebuilt log serves %q, want %q", again, served)
	}
	// A cosignature of a checkpoint the log does not hold is refused.
	forged := translog.Checkpoint{Origin: l.Origin(), Size: 19, Root: root}
	signer, _ := note.NewSigner(skey)
	fs, _ := note.Sign(&note.Note{Text: forged.Text()}, signer)
	if _, err := l.AddCosignatures(ctx, w1.Cosign(fs)); err != translog.ErrNotLatest {
		t.Fatalf("cosigning an unknown checkpoint: %v", err)
	}
}

func newWitness(t *testing.T, name string) *translogtest.Witness {
	w, err := translogtest.NewWitness(name)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
