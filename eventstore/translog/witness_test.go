package translog_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/batonhq/baton/eventstore/translog"
)

// testWitness cosigns checkpoints as C2SP tlog-cosignature's Ed25519
// cosignature/v1 describes.
type testWitness struct {
	name string
	priv ed25519.PrivateKey
	vkey string
	id   uint32
}

func newTestWitness(t *testing.T, name string) *testWitness {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	key := append([]byte{0x04}, pub...)
	h := sha256.Sum256(append([]byte(name+"\n"), key...))
	id := binary.BigEndian.Uint32(h[:4])
	return &testWitness{name: name, priv: priv, id: id, vkey: fmt.Sprintf("%s+%08x+%s", name, id, base64.StdEncoding.EncodeToString(key))}
}

// cosign adds the witness's line to a signed checkpoint.
func (w *testWitness) cosign(signed []byte) []byte {
	text, _, _ := strings.Cut(string(signed), "\n\n")
	text += "\n"
	ts := uint64(time.Now().Unix())
	sig := ed25519.Sign(w.priv, []byte("cosignature/v1\ntime "+strconv.FormatUint(ts, 10)+"\n"+text))
	b := binary.BigEndian.AppendUint32(nil, w.id)
	b = binary.BigEndian.AppendUint64(b, ts)
	b = append(b, sig...)
	return append(append([]byte(nil), signed...), []byte("— "+w.name+" "+base64.StdEncoding.EncodeToString(b)+"\n")...)
}

func TestWitnessCosignaturesAreServedAndCounted(t *testing.T) {
	s := openStore(t)
	skey, vkey, _ := translog.GenerateKey("example.test/baton", nil)
	w1, w2, stranger := newTestWitness(t, "w1.example"), newTestWitness(t, "w2.example"), newTestWitness(t, "w3.example")
	appendEvents(t, s, 2, 20)
	ctx := context.Background()
	l := openLog(t, s, translog.Options{SignerKey: skey, Witnesses: []string{w1.vkey, w2.vkey}})
	if err := l.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	root, _ := l.Root(20)
	if _, err := l.SignAt(ctx, translog.Checkpoint{Origin: l.Origin(), Size: 20, Root: root}, 0); err != nil {
		t.Fatal(err)
	}
	l.CatchUp(ctx)
	signed, _ := l.Checkpoint()
	if n, err := l.AddCosignatures(ctx, stranger.cosign(signed)); err != nil || n != 0 {
		t.Fatalf("a stranger's cosignature: %d, %v", n, err)
	}
	if n, err := l.AddCosignatures(ctx, w2.cosign(w1.cosign(signed))); err != nil || n != 2 {
		t.Fatalf("two witnesses: %d, %v", n, err)
	}
	l.CatchUp(ctx)
	if n, err := l.AddCosignatures(ctx, w1.cosign(signed)); err != nil || n != 0 {
		t.Fatalf("again: %d, %v", n, err)
	}
	served, _ := l.Checkpoint()
	logV, _ := note.NewVerifier(vkey)
	var ws []note.Verifier
	for _, k := range []string{w1.vkey, w2.vkey, stranger.vkey} {
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
	l2 := openLog(t, s, translog.Options{SignerKey: skey, Witnesses: []string{w1.vkey, w2.vkey}})
	l2.CatchUp(ctx)
	if again, _ := l2.Checkpoint(); string(again) != string(served) {
		t.Fatalf("rebuilt log serves %q, want %q", again, served)
	}
	// A cosignature of a checkpoint the log does not hold is refused.
	forged := translog.Checkpoint{Origin: l.Origin(), Size: 19, Root: root}
	signer, _ := note.NewSigner(skey)
	fs, _ := note.Sign(&note.Note{Text: forged.Text()}, signer)
	if _, err := l.AddCosignatures(ctx, w1.cosign(fs)); err != translog.ErrNotLatest {
		t.Fatalf("cosigning an unknown checkpoint: %v", err)
	}
}
