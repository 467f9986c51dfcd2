package translog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/batonhq/baton/domain"
)

// BundleFormat names the audit bundle's format, its first field.
const BundleFormat = "baton.audit-bundle/v1"

// Bundle is what an auditor keeps of one handoff: its events as the
// ledger shows them and each one's receipt, whose tlog-proof carries the
// signed checkpoint it is proved against. It is checked with no server
// and no data files.
type Bundle struct {
	Format    string            `json:"format"`
	HandoffID string            `json:"handoffId"`
	Events    []domain.Recorded `json:"events"`
	Receipts  []Receipt         `json:"receipts"`
}

// MaxBundleSize bounds a bundle read.
const MaxBundleSize = 256 << 20

// ReadBundle decodes an audit bundle, refusing anything it does not
// describe: unknown fields, another format, an id that does not print as
// it is, receipts out of order or for events it does not hold.
func ReadBundle(r io.Reader) (Bundle, error) {
	var b Bundle
	data, err := io.ReadAll(io.LimitReader(r, MaxBundleSize+1))
	if err != nil {
		return b, err
	}
	if len(data) > MaxBundleSize {
		return b, errors.New("bundle: larger than 256 MiB")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return Bundle{}, fmt.Errorf("bundle: %w", err)
	}
	if dec.More() {
		return Bundle{}, errors.New("bundle: data after the document")
	}
	switch {
	case b.Format != BundleFormat:
		return Bundle{}, fmt.Errorf("bundle: format %q, want %s", b.Format, BundleFormat)
	case b.HandoffID == "" || strings.ContainsFunc(b.HandoffID, unicode.IsControl) || len(b.HandoffID) > 255:
		return Bundle{}, fmt.Errorf("bundle: handoff id %q is empty, too long or holds control characters", b.HandoffID)
	}
	var last uint64
	for _, r := range b.Receipts {
		if r.Seq <= last || r.Seq > uint64(len(b.Events)) || r.LeafIndex < 0 {
			return Bundle{}, fmt.Errorf("bundle: receipt for seq %d out of order, beyond the events or at a negative index", r.Seq)
		}
		last = r.Seq
	}
	return b, nil
}

// Problem is one finding of VerifyBundle, naming the event and entry.
type Problem struct {
	Seq       uint64 // 0: the bundle as a whole
	LeafIndex int64
	Detail    string
}

// BundleReport is what VerifyBundle found.
type BundleReport struct {
	Events, Proved int
	Checkpoints    []Checkpoint // distinct, as the proofs carry them
	Problems       []Problem
}

// VerifyBundle checks a bundle against the log's verifier key: the
// handoff's hash chain, then each receipt's tlog-proof (the signature of
// its checkpoint, the event's canonical bytes as the entry at its index).
// With old, a bundle of the same handoff kept earlier, each of old's
// proved receipts must still hold for the event now at its seq, and no two
// checkpoints of one size may have different roots (a fork).
//
// With quorum > 0, each proof's checkpoint must also carry the
// cosignatures of at least quorum of the witnesses (verifier keys,
// C2SP tlog-cosignature).
func VerifyBundle(b Bundle, vkey string, old *Bundle, witnesses []string, quorum int) (BundleReport, error) {
	rep := BundleReport{Events: len(b.Events)}
	lv, err := note.NewVerifier(vkey)
	if err != nil {
		return rep, fmt.Errorf("--log-key: %w", err)
	}
	v := checkpointPolicy{log: lv, quorum: quorum}
	if v.witnesses, err = NewWitnessVerifiers(witnesses); err != nil {
		return rep, err
	}
	if quorum > len(v.witnesses) {
		return rep, fmt.Errorf("a quorum of %d witnesses, with %d witness keys given", quorum, len(v.witnesses))
	}
	add := func(seq uint64, idx int64, format string, args ...any) {
		rep.Problems = append(rep.Problems, Problem{Seq: seq, LeafIndex: idx, Detail: fmt.Sprintf(format, args...)})
	}
	if len(b.Events) == 0 {
		// A handoff's ledger begins with its contract: a bundle of none
		// proves nothing, and must not read as a trail verified.
		add(0, -1, "the bundle holds no events: it proves nothing of the handoff")
	}
	if br := domain.VerifyChain(b.HandoffID, b.Events); br != nil {
		add(br.Seq, -1, "%s", br)
	}
	roots := map[int64]tlog.Hash{}
	seen := func(cp Checkpoint, where string) {
		if r, ok := roots[cp.Size]; ok && r != cp.Root {
			add(0, -1, "FORK: two checkpoints of size %d signed with different roots (%s and %s, the latter in %s)", cp.Size, r, cp.Root, where)
			return
		}
		if _, ok := roots[cp.Size]; !ok {
			roots[cp.Size] = cp.Root
			rep.Checkpoints = append(rep.Checkpoints, cp)
		}
	}
	proved := map[uint64]bool{}
	for _, r := range b.Receipts {
		ev := b.Events[r.Seq-1]
		if r.Proof == "" {
			continue
		}
		cp, err := proveEvent(b.HandoffID, ev, r, v)
		if err != nil {
			add(r.Seq, r.LeafIndex, "%s", err)
			continue
		}
		seen(cp, "this bundle")
		proved[r.Seq] = true
		rep.Proved++
	}
	for _, ev := range b.Events {
		if !proved[ev.Seq] && !slicesHasProblem(rep.Problems, ev.Seq) {
			add(ev.Seq, -1, "no receipt with a proof: not yet covered by a signed checkpoint when the bundle was made")
		}
	}
	if old != nil {
		if old.HandoffID != b.HandoffID {
			return rep, fmt.Errorf("the old bundle is of handoff %q, this one of %q", old.HandoffID, b.HandoffID)
		}
		compared := map[uint64]bool{} // by a kept receipt's proof
		for _, r := range old.Receipts {
			if r.Proof == "" {
				continue
			}
			if r.Seq > uint64(len(b.Events)) {
				add(r.Seq, r.LeafIndex, "the old bundle has event %d, proved at leaf %d; the ledger now ends at %d: events were removed", r.Seq, r.LeafIndex, len(b.Events))
				compared[r.Seq] = true
				continue
			}
			cp, err := proveEvent(b.HandoffID, b.Events[r.Seq-1], r, v)
			if u := (unprovenError{}); errors.As(err, &u) {
				// It proves nothing of the ledger either way: a receipt
				// kept under another key, or altered since.
				add(r.Seq, r.LeafIndex, "the old bundle's receipt proves nothing: %s", err)
				continue
			}
			compared[r.Seq] = true
			if err != nil {
				add(r.Seq, r.LeafIndex, "the event now at this seq is not the entry the old receipt proves: the ledger was rewritten (%s)", err)
				continue
			}
			seen(cp, "the old bundle")
		}
		// The events kept without a proof (no checkpoint covered them yet
		// when the old bundle was made) are the ledger as it was all the
		// same: each must still be, byte for byte, the event at its seq.
		// Its own chain intact, or they say nothing.
		if br := domain.VerifyChain(old.HandoffID, old.Events); br != nil {
			add(0, -1, "the old bundle's own chain is broken (%s): the events it kept prove nothing", br)
		} else {
			for _, oe := range old.Events {
				switch {
				case compared[oe.Seq]:
				case oe.Seq > uint64(len(b.Events)):
					add(oe.Seq, -1, "the old bundle has event %d; the ledger now ends at %d: events were removed", oe.Seq, len(b.Events))
				case !sameEvent(b.HandoffID, oe, b.Events[oe.Seq-1]):
					add(oe.Seq, -1, "the event now at this seq is not the one the old bundle kept (%s, hash %s then, %s now): the ledger was rewritten", oe.Type, oe.Hash, b.Events[oe.Seq-1].Hash)
				}
			}
		}
	}
	return rep, nil
}

// sameEvent reports whether a and b are one event of handoff id: the same
// canonical bytes, the bytes the chain and the log cover.
func sameEvent(id string, a, b domain.Recorded) bool {
	ca, err1 := domain.Canonical(id, a.Seq, a.Type, a.Actor, a.RecordedAt, a.Data)
	cb, err2 := domain.Canonical(id, b.Seq, b.Type, b.Actor, b.RecordedAt, b.Data)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

func slicesHasProblem(ps []Problem, seq uint64) bool {
	for _, p := range ps {
		if p.Seq == seq {
			return true
		}
	}
	return false
}

// unprovenError is a receipt that proves nothing, whatever the event: its
// proof does not read, or its checkpoint does not verify.
type unprovenError struct{ error }

// proveEvent checks one receipt's proof for ev: the checkpoint's
// signature, the index, and the inclusion of ev's canonical bytes.
func proveEvent(id string, ev domain.Recorded, r Receipt, v checkpointPolicy) (Checkpoint, error) {
	p, err := ParseProof([]byte(r.Proof))
	if err != nil {
		return Checkpoint{}, unprovenError{err}
	}
	if p.Index != r.LeafIndex {
		return Checkpoint{}, unprovenError{fmt.Errorf("the proof is for leaf %d, the receipt says %d", p.Index, r.LeafIndex)}
	}
	cp, err := v.open(p.Checkpoint)
	if err != nil {
		return Checkpoint{}, unprovenError{err}
	}
	c, err := domain.Canonical(id, ev.Seq, ev.Type, ev.Actor, ev.RecordedAt, ev.Data)
	if err != nil {
		return cp, err
	}
	if err := tlog.CheckRecord(p.Hashes, cp.Size, cp.Root, p.Index, tlog.RecordHash(c)); err != nil {
		return cp, fmt.Errorf("event %d (%s) is not entry %d of checkpoint %d (root %s): %v", ev.Seq, ev.Type, p.Index, cp.Size, cp.Root, err)
	}
	return cp, nil
}

// OpenCheckpoint verifies a signed checkpoint with v and parses it.
func OpenCheckpoint(signed []byte, v note.Verifier) (Checkpoint, error) {
	n, err := note.Open(signed, note.VerifierList(v))
	var unverified *note.UnverifiedNoteError
	var invalid *note.InvalidSignatureError
	switch {
	case err != nil && !errors.As(err, &unverified) && !errors.As(err, &invalid):
		// Not a signed note at all (an error page, a bundle, a file cut
		// short): told as a forged signature, it read as an attack.
		return Checkpoint{}, fmt.Errorf("not a signed checkpoint (its text, a blank line, then signature lines, as GET /v1/log/checkpoint serves it): %v", err)
	case err != nil:
		return Checkpoint{}, fmt.Errorf("the checkpoint's signature does not verify with the log key: %v", err)
	}
	return ParseCheckpoint(n.Text)
}

// checkpointPolicy is what a checkpoint must carry: the log's signature
// and, with a quorum, that many witnesses' cosignatures.
type checkpointPolicy struct {
	log       note.Verifier
	witnesses []note.Verifier
	quorum    int
}

func (p checkpointPolicy) open(signed []byte) (Checkpoint, error) {
	if p.quorum == 0 {
		return OpenCheckpoint(signed, p.log)
	}
	return Witnessed(signed, p.log, p.witnesses, p.quorum)
}
