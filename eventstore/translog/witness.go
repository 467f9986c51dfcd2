package translog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"
	"golang.org/x/mod/sumdb/note"

	"github.com/batonhq/baton/eventstore"
)

// Witness cosignatures (C2SP tlog-cosignature, the Ed25519 cosignature/v1
// type): a witness that has checked a checkpoint's consistency with every
// one it saw before adds its signature line. Baton takes the lines of the
// witnesses it is configured with and serves them on the checkpoint; the
// auditor's tools can require a quorum of them.

// EventCheckpointCosigned is the type of a checkpoint stream event adding
// witnesses' cosignature lines to a checkpoint already claimed.
const EventCheckpointCosigned = "LogCheckpointCosigned"

const algCosignatureV1 = 0x04

// cosignatureVerifier verifies Ed25519 cosignature/v1 signatures.
type cosignatureVerifier struct {
	name string
	hash uint32
	pub  ed25519.PublicKey
}

func (v *cosignatureVerifier) Name() string    { return v.name }
func (v *cosignatureVerifier) KeyHash() uint32 { return v.hash }
func (v *cosignatureVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	ts := binary.BigEndian.Uint64(sig)
	if ts > 1<<63-1 {
		return false
	}
	m := append([]byte("cosignature/v1\ntime "+strconv.FormatUint(ts, 10)+"\n"), msg...)
	return ed25519.Verify(v.pub, m, sig[8:])
}

// NewWitnessVerifier reads a witness's verifier key, name+hash+base64(0x04
// || Ed25519 public key), as C2SP tlog-cosignature encodes it.
func NewWitnessVerifier(vkey string) (note.Verifier, error) {
	name, rest, ok1 := strings.Cut(strings.TrimSpace(vkey), "+")
	hash16, key64, ok2 := strings.Cut(rest, "+")
	h, err1 := strconv.ParseUint(hash16, 16, 32)
	key, err2 := base64.StdEncoding.DecodeString(key64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || len(hash16) != 8 || name == "" || strings.ContainsAny(name, " \t\n+") {
		return nil, fmt.Errorf("witness key %q: not name+hash+key", vkey)
	}
	if len(key) != 1+ed25519.PublicKeySize || key[0] != algCosignatureV1 {
		return nil, fmt.Errorf("witness key %q: not an Ed25519 cosignature/v1 key (type 0x04)", vkey)
	}
	if witnessKeyID(name, key) != uint32(h) {
		return nil, fmt.Errorf("witness key %q: its hash is not the key's", vkey)
	}
	return &cosignatureVerifier{name: name, hash: uint32(h), pub: ed25519.PublicKey(key[1:])}, nil
}

// NewWitnessVerifiers reads witnesses' verifier keys; a key given twice
// is one witness (counted twice, note.Open finds the checkpoint's
// signatures ambiguous).
func NewWitnessVerifiers(vkeys []string) ([]note.Verifier, error) {
	var out []note.Verifier
	for _, k := range slices.Compact(slices.Sorted(slices.Values(vkeys))) {
		v, err := NewWitnessVerifier(k)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// witnessKeyID is SHA-256(name || "\n" || 0x04 || public key)[:4].
func witnessKeyID(name string, key []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name + "\n"))
	h.Write(key)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// CosignatureLines verifies signed (a checkpoint with signature lines)
// with the log key and the witnesses, and returns the signature lines of
// the witnesses that verify, one per witness, and the checkpoint.
func CosignatureLines(signed []byte, logV note.Verifier, witnesses []note.Verifier) (Checkpoint, []string, error) {
	n, err := note.Open(signed, note.VerifierList(append([]note.Verifier{logV}, witnesses...)...))
	if err != nil {
		return Checkpoint{}, nil, fmt.Errorf("the checkpoint does not verify: %v", err)
	}
	cp, err := ParseCheckpoint(n.Text)
	if err != nil {
		return cp, nil, err
	}
	logSigned := false
	var lines []string
	seen := map[string]bool{}
	for _, s := range n.Sigs {
		if s.Name == logV.Name() && s.Hash == logV.KeyHash() {
			logSigned = true
			continue
		}
		if !seen[s.Name] {
			seen[s.Name] = true
			lines = append(lines, "— "+s.Name+" "+s.Base64+"\n")
		}
	}
	if !logSigned {
		return cp, nil, errors.New("the checkpoint is not signed by the log key")
	}
	return cp, lines, nil
}

// Witnessed verifies a checkpoint with the log key and requires quorum of
// the witnesses to have cosigned it.
func Witnessed(signed []byte, logV note.Verifier, witnesses []note.Verifier, quorum int) (Checkpoint, error) {
	cp, lines, err := CosignatureLines(signed, logV, witnesses)
	if err != nil {
		return cp, err
	}
	if len(lines) < quorum {
		return cp, fmt.Errorf("checkpoint of size %d: %d of the witnesses cosigned it, %d required", cp.Size, len(lines), quorum)
	}
	return cp, nil
}

// cosignRecord is the data of an EventCheckpointCosigned event.
type cosignRecord struct {
	Size  int64    `json:"size"`
	Lines []string `json:"lines"`
}

// ErrNoWitnesses: the log takes no cosignatures (no witnesses, or no
// log key to check the checkpoint with).
var ErrNoWitnesses = errors.New("translog: no witnesses configured")

// ErrInvalidCosignature: what was offered is refused: not a checkpoint
// signed by the log key, or a cosignature dated too far ahead. Its text
// prefixes the reason, which the API's answer shows.
var ErrInvalidCosignature = errors.New("translog: the cosigned checkpoint is refused")

// ErrNotLatest: a cosignature was offered for a checkpoint this log has
// not taken.
var ErrNotLatest = errors.New("translog: the cosigned checkpoint is not one this log serves")

// AddCosignatures takes a witness's cosigned copy of a checkpoint this log
// has taken (the checkpoint with the witness's signature line added): the
// lines of the configured witnesses that verify and are not yet recorded
// are appended to the checkpoint stream, for every replica to serve. It
// returns how many were added.
func (l *Log) AddCosignatures(ctx context.Context, cosigned []byte) (int, error) {
	if l.verifier == nil || len(l.witnesses) == 0 {
		return 0, ErrNoWitnesses
	}
	cp, lines, err := CosignatureLines(cosigned, l.verifier, l.witnesses)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrInvalidCosignature, err)
	}
	latest := time.Now().Add(maxCosignatureSkew)
	for _, ln := range lines {
		if at, ok := cosignedAt(ln); ok && at.After(latest) {
			// Served for ever beside the checkpoint, a date in the future
			// would be one verifiers may refuse (C2SP tlog-cosignature).
			return 0, fmt.Errorf("%w: %sdates its cosignature %s, later than this server's clock allows (%v ahead at most)", ErrInvalidCosignature, strings.TrimPrefix(witnessName(ln), "— "), at.UTC().Format(time.RFC3339), maxCosignatureSkew)
		}
	}
	for attempt := 0; ; attempt++ {
		changed := l.Changed()
		var signed, have []byte
		err := l.db.View(func(tx *bbolt.Tx) error {
			signed = bytes.Clone(tx.Bucket(bucketCheckpoints).Get(u64(uint64(cp.Size))))
			have = bytes.Clone(tx.Bucket(bucketCosigs).Get(u64(uint64(cp.Size))))
			return nil
		})
		if err != nil {
			return 0, err
		}
		if signed == nil || noteText(signed) != cp.Text() {
			return 0, ErrNotLatest
		}
		var add []string
		for _, ln := range lines {
			if !bytes.Contains(have, []byte(witnessName(ln))) {
				add = append(add, ln)
			}
		}
		if len(add) == 0 {
			return 0, nil
		}
		data, _ := json.Marshal(cosignRecord{Size: cp.Size, Lines: add})
		_, err = l.store.Append(ctx, CheckpointStream, eventstore.Revision(l.Claims()-1), eventstore.NewEvent(EventCheckpointCosigned, data, eventstore.Metadata{Actor: "baton:log"}))
		if err == nil {
			return len(add), nil
		}
		if !errors.Is(err, eventstore.ErrConflict) || attempt == 5 {
			return 0, err
		}
		// Another claim or cosignature came first: wait for the follower
		// to read it (a little while at most), then look again.
		select {
		case <-changed:
		case <-time.After(time.Second):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// maxCosignatureSkew is how far ahead of this server's clock a witness's
// cosignature may be dated: clocks differ, a date beyond is a mistake.
const maxCosignatureSkew = 10 * time.Minute

// cosignedAt is the time a cosignature/v1 signature line carries (its
// first 8 bytes: seconds since the Unix epoch).
func cosignedAt(line string) (time.Time, bool) {
	i := strings.LastIndexByte(strings.TrimSpace(line), ' ')
	if i < 0 {
		return time.Time{}, false
	}
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(line)[i+1:])
	if err != nil || len(sig) < 4+8 {
		return time.Time{}, false
	}
	ts := binary.BigEndian.Uint64(sig[4:12]) // after the key hash
	if ts > 1<<62 {
		return time.Unix(1<<62, 0), true // beyond any clock
	}
	return time.Unix(int64(ts), 0), true
}

// witnessName is "— name " of a signature line.
func witnessName(line string) string {
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return line
	}
	return line[:i+1]
}

// readCosigned records the cosignature lines of a checkpoint the log has
// taken, keeping those that verify with a configured witness and are new;
// it returns the checkpoint's size and all its lines when any was added.
func (l *Log) readCosigned(ev eventstore.RecordedEvent, cb, cosb *bbolt.Bucket) (int64, []byte, error) {
	var rec cosignRecord
	if json.Unmarshal(ev.Data, &rec) != nil || rec.Size <= 0 || l.verifier == nil {
		return 0, nil, nil
	}
	signed := cb.Get(u64(uint64(rec.Size)))
	if signed == nil {
		return 0, nil, nil
	}
	have := bytes.Clone(cosb.Get(u64(uint64(rec.Size))))
	added := false
	for _, ln := range rec.Lines {
		if !strings.HasPrefix(ln, "— ") || !strings.HasSuffix(ln, "\n") || strings.Count(ln, "\n") != 1 || bytes.Contains(have, []byte(witnessName(ln))) {
			continue
		}
		// Taken only if it verifies over the checkpoint, by a witness.
		if _, lines, err := CosignatureLines(append(bytes.Clone(signed), ln...), l.verifier, l.witnesses); err == nil && len(lines) == 1 {
			have, added = append(have, ln...), true
		}
	}
	if !added {
		return 0, nil, nil
	}
	return rec.Size, have, cosb.Put(u64(uint64(rec.Size)), have)
}
