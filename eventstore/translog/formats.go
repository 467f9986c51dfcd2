// Package translog is Baton's transparency log: one RFC 6962 Merkle tree
// over every handoff lifecycle event, in the global feed's order, each
// leaf the event's canonical bytes (the bytes its chain hash covers). A
// follower of the feed builds it into a bbolt file of its own; signed
// checkpoints (C2SP tlog-checkpoint) are claimed through the store, one
// per tree size, so replicas sharing a store never sign two roots for one
// size; the tree is served as C2SP tlog-tiles.
//
// This file holds the text formats: checkpoints, tile paths and
// tlog-proofs. Each parser takes untrusted input and is fuzzed.
package translog

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// TileHeight is the C2SP tlog-tiles height: 256 hashes a tile.
const TileHeight = 8

// TileWidth is the number of hashes (or entries) in a full tile.
const TileWidth = 1 << TileHeight

// Checkpoint is the body of a C2SP tlog-checkpoint: origin, tree size and
// root hash.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
}

// Text renders the checkpoint body: three lines, each ending in a newline.
func (c Checkpoint) Text() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, c.Root)
}

// maxCheckpointText bounds a checkpoint body, extension lines included.
const maxCheckpointText = 1 << 12

// ParseCheckpoint reads a checkpoint body (the text of a note, without
// its signatures). Extension lines after the root are allowed and ignored.
func ParseCheckpoint(text string) (Checkpoint, error) {
	if len(text) > maxCheckpointText {
		return Checkpoint{}, errors.New("checkpoint: too long")
	}
	if !strings.HasSuffix(text, "\n") {
		return Checkpoint{}, errors.New("checkpoint: does not end in a newline")
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 3 {
		return Checkpoint{}, errors.New("checkpoint: fewer than three lines")
	}
	if lines[0] == "" {
		return Checkpoint{}, errors.New("checkpoint: empty origin")
	}
	for _, l := range lines[3:] {
		if l == "" {
			return Checkpoint{}, errors.New("checkpoint: empty extension line")
		}
	}
	n, err := parseDecimal(lines[1])
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: tree size: %w", err)
	}
	root, err := parseHash(lines[2])
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: root hash: %w", err)
	}
	return Checkpoint{Origin: lines[0], Size: n, Root: root}, nil
}

// parseDecimal reads a non-negative decimal with no leading zeroes.
func parseDecimal(s string) (int64, error) {
	if s == "" || len(s) > 1 && s[0] == '0' || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a decimal without leading zeroes", s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	return n, nil
}

// parseHash reads a standard base64 SHA-256 hash.
func parseHash(s string) (tlog.Hash, error) {
	var h tlog.Hash
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != tlog.HashSize {
		return h, fmt.Errorf("%q is not a base64 SHA-256 hash", s)
	}
	copy(h[:], b)
	return h, nil
}

// TilePath is a parsed C2SP tile path: tile/<L>/<N>[.p/<W>] or, for
// entry bundles, tile/entries/<N>[.p/<W>] (Entries set, L 0).
type TilePath struct {
	Entries bool
	L       int
	N       int64
	W       int // 1..256; 256 is a full tile (no .p/ suffix)
}

// Full reports whether the path names a full tile.
func (p TilePath) Full() bool { return p.W == TileWidth }

// String renders the path, starting with "tile/".
func (p TilePath) String() string {
	var b strings.Builder
	b.WriteString("tile/")
	if p.Entries {
		b.WriteString("entries")
	} else {
		b.WriteString(strconv.Itoa(p.L))
	}
	b.WriteString("/")
	b.WriteString(encodeIndex(p.N))
	if !p.Full() {
		fmt.Fprintf(&b, ".p/%d", p.W)
	}
	return b.String()
}

// encodeIndex writes n as zero-padded 3-digit elements, all but the last
// starting with x: 1234067 is x001/x234/067.
func encodeIndex(n int64) string {
	s := fmt.Sprintf("%03d", n%1000)
	for n >= 1000 {
		n /= 1000
		s = fmt.Sprintf("x%03d/%s", n%1000, s)
	}
	return s
}

// ParseTilePath reads a tile path as requested ("tile/..." without the
// log's prefix). It accepts only the canonical spelling, so each tile has
// one path.
func ParseTilePath(path string) (TilePath, error) {
	bad := func(why string) (TilePath, error) {
		return TilePath{}, fmt.Errorf("tile path %q: %s", path, why)
	}
	if len(path) > 200 {
		return bad("too long")
	}
	rest, ok := strings.CutPrefix(path, "tile/")
	if !ok {
		return bad(`does not start with "tile/"`)
	}
	level, rest, ok := strings.Cut(rest, "/")
	if !ok {
		return bad("no index")
	}
	var p TilePath
	if level == "entries" {
		p.Entries = true
	} else {
		l, err := parseDecimal(level)
		if err != nil || l > 63 {
			return bad("the level is not a decimal from 0 to 63")
		}
		p.L = int(l)
	}
	p.W = TileWidth
	if idx, w, partial := strings.Cut(rest, ".p/"); partial {
		n, err := parseDecimal(w)
		if err != nil || n < 1 || n > TileWidth-1 {
			return bad("the partial width is not a decimal from 1 to 255")
		}
		p.W, rest = int(n), idx
	}
	elems := strings.Split(rest, "/")
	for i, e := range elems {
		last := i == len(elems)-1
		if !last {
			var ok bool
			if e, ok = strings.CutPrefix(e, "x"); !ok {
				return bad("an index element other than the last does not start with x")
			}
		}
		if len(e) != 3 || strings.TrimLeft(e, "0123456789") != "" {
			return bad("an index element is not three digits")
		}
		if p.N > (1<<62)/1000 {
			return bad("the index is too large")
		}
		d, _ := strconv.Atoi(e)
		p.N = p.N*1000 + int64(d)
	}
	if p.String() != path {
		return bad("not the canonical spelling") // e.g. x000/001
	}
	return p, nil
}

// ProofHeader is the first line of a C2SP tlog-proof.
const ProofHeader = "c2sp.org/tlog-proof@v1"

// Proof is a C2SP tlog-proof: the index of an entry, its inclusion proof
// and the signed checkpoint (a signed note) the proof is against.
type Proof struct {
	Extra      []byte
	Index      int64
	Hashes     tlog.RecordProof
	Checkpoint []byte // the signed note, verbatim
}

// Text renders the proof.
func (p Proof) Text() string {
	var b strings.Builder
	b.WriteString(ProofHeader + "\n")
	if p.Extra != nil {
		b.WriteString("extra " + base64.StdEncoding.EncodeToString(p.Extra) + "\n")
	}
	fmt.Fprintf(&b, "index %d\n", p.Index)
	for _, h := range p.Hashes {
		b.WriteString(h.String() + "\n")
	}
	b.WriteString("\n")
	b.Write(p.Checkpoint)
	return b.String()
}

// maxProofText bounds a proof: 64 hashes and a checkpoint with many
// signatures.
const maxProofText = 1 << 16

// ParseProof reads a tlog-proof. The checkpoint is returned verbatim, not
// verified.
func ParseProof(text []byte) (Proof, error) {
	var p Proof
	if len(text) > maxProofText {
		return p, errors.New("tlog-proof: too long")
	}
	head, cp, ok := bytes.Cut(text, []byte("\n\n"))
	if !ok {
		return p, errors.New("tlog-proof: no empty line before the checkpoint")
	}
	lines := strings.Split(string(head), "\n")
	if lines[0] != ProofHeader {
		return p, fmt.Errorf("tlog-proof: the first line is not %s", ProofHeader)
	}
	lines = lines[1:]
	if len(lines) > 0 {
		if e, ok := strings.CutPrefix(lines[0], "extra "); ok {
			b, err := base64.StdEncoding.Strict().DecodeString(e)
			if err != nil {
				return p, errors.New("tlog-proof: the extra line is not base64")
			}
			p.Extra, lines = b, lines[1:]
		}
	}
	if len(lines) == 0 {
		return p, errors.New("tlog-proof: no index line")
	}
	idx, ok := strings.CutPrefix(lines[0], "index ")
	if !ok {
		return p, errors.New("tlog-proof: no index line")
	}
	n, err := parseDecimal(idx)
	if err != nil {
		return p, fmt.Errorf("tlog-proof: index: %w", err)
	}
	p.Index = n
	if len(lines)-1 > 64 {
		return p, errors.New("tlog-proof: more than 64 hashes")
	}
	for _, l := range lines[1:] {
		h, err := parseHash(l)
		if err != nil {
			return p, fmt.Errorf("tlog-proof: %w", err)
		}
		p.Hashes = append(p.Hashes, h)
	}
	if len(cp) == 0 {
		return p, errors.New("tlog-proof: no checkpoint")
	}
	p.Checkpoint = cp
	return p, nil
}
