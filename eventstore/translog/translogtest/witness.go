// Package translogtest is a witness for tests of the transparency log:
// it cosigns checkpoints as C2SP tlog-cosignature's Ed25519
// cosignature/v1 describes, written from that document and not from
// Baton's verifier, so that each checks the other.
package translogtest

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Witness cosigns checkpoints; VKey is its verifier key,
// name+hash+key as C2SP signed-note writes it.
type Witness struct {
	Name string
	VKey string
	priv ed25519.PrivateKey
	id   uint32
}

// NewWitness makes a witness of a fresh key.
func NewWitness(name string) (*Witness, error) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, err
	}
	key := append([]byte{0x04}, pub...)
	h := sha256.Sum256(append([]byte(name+"\n"), key...))
	id := binary.BigEndian.Uint32(h[:4])
	return &Witness{Name: name, priv: priv, id: id, VKey: fmt.Sprintf("%s+%08x+%s", name, id, base64.StdEncoding.EncodeToString(key))}, nil
}

// Cosign returns signed with the witness's line added, dated now.
func (w *Witness) Cosign(signed []byte) []byte { return w.CosignAt(signed, time.Now()) }

// CosignAt is Cosign dated at.
func (w *Witness) CosignAt(signed []byte, at time.Time) []byte {
	text, _, _ := strings.Cut(string(signed), "\n\n")
	text += "\n"
	ts := uint64(at.Unix())
	sig := ed25519.Sign(w.priv, []byte("cosignature/v1\ntime "+strconv.FormatUint(ts, 10)+"\n"+text))
	b := binary.BigEndian.AppendUint32(nil, w.id)
	b = binary.BigEndian.AppendUint64(b, ts)
	return append(append([]byte(nil), signed...), "— "+w.Name+" "+base64.StdEncoding.EncodeToString(append(b, sig...))+"\n"...)
}
