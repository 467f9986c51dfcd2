package http_test

// A verifier of Baton's transparency log written only from the C2SP
// documents (c2sp.org/tlog-checkpoint, tlog-tiles, tlog-proof,
// signed-note) with golang.org/x/mod/sumdb/tlog and sumdb/note: this file
// imports none of Baton's packages, so it checks the formats Baton serves,
// not Baton's reading of them. (The server it checks is the package's
// test env, built in env_test.go.)

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type c2spClient struct {
	prefix string // the log's URL prefix, without a trailing slash
	key    string // an API key for the entry bundles
}

func (c c2spClient) get(path string) ([]byte, error) {
	req, _ := http.NewRequest("GET", c.prefix+"/"+path, nil)
	if c.key != "" {
		req.Header.Set("x-api-key", c.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %d", path, resp.StatusCode)
	}
	return b, nil
}

// c2spCheckpoint opens a signed note with the log's key and reads the
// tlog-checkpoint body: origin, decimal size, base64 root.
func c2spCheckpoint(signed []byte, vkey string) (string, tlog.Tree, error) {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return "", tlog.Tree{}, err
	}
	n, err := note.Open(signed, note.VerifierList(v))
	if err != nil {
		return "", tlog.Tree{}, err
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 || lines[len(lines)-1] != "" {
		return "", tlog.Tree{}, errors.New("checkpoint: not three lines ending in newlines")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || strconv.FormatInt(size, 10) != lines[1] {
		return "", tlog.Tree{}, errors.New("checkpoint: size")
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != 32 {
		return "", tlog.Tree{}, errors.New("checkpoint: root")
	}
	var t tlog.Tree
	t.N = size
	copy(t.Hash[:], root)
	return lines[0], t, nil
}

// c2spTilePath spells tile/<L>/<N>[.p/<W>] (L "entries" for bundles).
func c2spTilePath(level string, n int64, w int) string {
	s := fmt.Sprintf("%03d", n%1000)
	for n >= 1000 {
		n /= 1000
		s = fmt.Sprintf("x%03d/%s", n%1000, s)
	}
	p := "tile/" + level + "/" + s
	if w < 256 {
		p += fmt.Sprintf(".p/%d", w)
	}
	return p
}

// c2spTiles reads hash tiles for tlog.TileHashReader, which checks each
// against the tree it was given.
type c2spTiles struct{ c c2spClient }

func (c2spTiles) Height() int { return 8 }
func (r c2spTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := r.c.get(c2spTilePath(strconv.Itoa(t.L), t.N, t.W))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}
func (c2spTiles) SaveTiles([]tlog.Tile, [][]byte) {}

// c2spEntries reads an entry bundle: big-endian uint16 length-prefixed
// entries.
func c2spEntries(b []byte) ([][]byte, error) {
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 2 {
			return nil, errors.New("bundle: truncated length")
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n {
			return nil, errors.New("bundle: truncated entry")
		}
		out = append(out, b[2:2+n])
		b = b[2+n:]
	}
	return out, nil
}

// c2spProof reads a tlog-proof: the header line, an optional extra line,
// the index line, the hashes, an empty line, the checkpoint verbatim.
func c2spProof(text string) (int64, tlog.RecordProof, []byte, error) {
	head, cp, ok := strings.Cut(text, "\n\n")
	if !ok {
		return 0, nil, nil, errors.New("proof: no empty line")
	}
	lines := strings.Split(head, "\n")
	if lines[0] != "c2sp.org/tlog-proof@v1" {
		return 0, nil, nil, errors.New("proof: header")
	}
	lines = lines[1:]
	if len(lines) > 0 && strings.HasPrefix(lines[0], "extra ") {
		lines = lines[1:]
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "index ") {
		return 0, nil, nil, errors.New("proof: index")
	}
	idx, err := strconv.ParseInt(strings.TrimPrefix(lines[0], "index "), 10, 64)
	if err != nil {
		return 0, nil, nil, err
	}
	var p tlog.RecordProof
	for _, l := range lines[1:] {
		h, err := base64.StdEncoding.DecodeString(l)
		if err != nil || len(h) != 32 {
			return 0, nil, nil, errors.New("proof: hash")
		}
		p = append(p, tlog.Hash(h))
	}
	return idx, p, []byte(cp), nil
}

func TestC2SPVerifierChecksBatonsLog(t *testing.T) {
	e, _ := newLogEnv(t)
	id := e.contract(e.tenantA, nil)
	e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
	for i := 0; i < 3; i++ {
		e.contract(e.tenantB, nil)
	}
	n := int64(e.events(id)) + 3
	e.waitLogged(n)

	c := c2spClient{prefix: e.srv.URL + "/v1/log", key: e.admin}
	vk, err := c.get("key")
	if err != nil {
		t.Fatal(err)
	}
	vkey := strings.TrimSpace(string(vk))
	signed, err := c.get("checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	origin, tree, err := c2spCheckpoint(signed, vkey)
	if err != nil || origin != "baton.example/test" || tree.N < n {
		t.Fatalf("checkpoint %q: %v", signed, err)
	}
	// The tiles: the root recomputed from them, each read tile checked
	// against the signed tree.
	hr := tlog.TileHashReader(tree, c2spTiles{c})
	if root, err := tlog.TreeHash(tree.N, hr); err != nil || root != tree.Hash {
		t.Fatalf("root from the tiles %v: %v", root, err)
	}
	// The entries hash to the level-0 hashes.
	bundle, err := c.get(c2spTilePath("entries", 0, int(tree.N)))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := c2spEntries(bundle)
	if err != nil || int64(len(entries)) != tree.N {
		t.Fatalf("%d entries: %v", len(entries), err)
	}
	for i, en := range entries {
		h, err := hr.ReadHashes([]int64{tlog.StoredHashIndex(0, int64(i))})
		if err != nil || h[0] != tlog.RecordHash(en) {
			t.Fatalf("entry %d does not hash to its leaf: %v", i, err)
		}
	}
	// A receipt: its proof, against its own checkpoint, includes the entry
	// at its index, and that entry is the event (handoff id and seq).
	r := e.must(e.do("GET", "/v1/executions/"+id+"/receipts", e.tenantA, nil), 200)
	var ans struct {
		Receipts []struct {
			Seq       uint64 `json:"seq"`
			LeafIndex int64  `json:"leafIndex"`
			Proof     string `json:"proof"`
		} `json:"receipts"`
	}
	json.Unmarshal(r.raw, &ans)
	if len(ans.Receipts) == 0 {
		t.Fatal("no receipts")
	}
	for _, rc := range ans.Receipts {
		idx, proof, cp, err := c2spProof(rc.Proof)
		if err != nil || idx != rc.LeafIndex {
			t.Fatalf("receipt %+v: %v", rc, err)
		}
		_, pt, err := c2spCheckpoint(cp, vkey)
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.CheckRecord(proof, pt.N, pt.Hash, idx, tlog.RecordHash(entries[idx])); err != nil {
			t.Fatalf("receipt %d: %v", rc.Seq, err)
		}
		var ev struct {
			HandoffID string `json:"handoffId"`
			Seq       uint64 `json:"seq"`
		}
		if json.Unmarshal(entries[idx], &ev); ev.HandoffID != id || ev.Seq != rc.Seq {
			t.Fatalf("entry %d is %+v, not event %d of %s", idx, ev, rc.Seq, id)
		}
		if !bytes.Equal(cp, signed) && pt.N == tree.N {
			t.Fatal("two checkpoints of one size differ")
		}
	}
}
