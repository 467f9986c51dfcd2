package http_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore/translog"
	"github.com/batonhq/baton/eventstore/translog/translogtest"
)

// newLogEnv is an env whose front serves a transparency log signed with a
// fresh key; it returns the verifier key.
func newLogEnv(t *testing.T) (*env, string) {
	t.Helper()
	skey, vkey, err := translog.GenerateKey("baton.example/test", nil)
	if err != nil {
		t.Fatal(err)
	}
	envLogKey = skey
	defer func() { envLogKey = "" }()
	return newEnv(t), vkey
}

// waitLogged waits until a signed checkpoint covers n entries.
func (e *env) waitLogged(n int64) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, cp := e.tlog.Checkpoint(); cp.Size >= n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no checkpoint covers %d entries", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLogRoutes(t *testing.T) {
	e, vkey := newLogEnv(t)
	id := e.contract(e.tenantA, nil)
	e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
	n := int64(e.events(id))
	e.waitLogged(n)

	r := e.must(e.do("GET", "/v1/log/key", "", nil), 200)
	if strings.TrimSpace(string(r.raw)) != vkey {
		t.Fatalf("key %q, want %q", r.raw, vkey)
	}
	r = e.must(e.do("GET", "/v1/log/checkpoint", "", nil), 200)
	if !strings.HasPrefix(string(r.raw), "baton.example/test\n") || !strings.Contains(string(r.raw), "\n— baton.example/test ") {
		t.Fatalf("checkpoint %q", r.raw)
	}
	cpText, _, _ := strings.Cut(string(r.raw), "\n\n")
	cp, err := translog.ParseCheckpoint(cpText + "\n")
	if err != nil {
		t.Fatal(err)
	}
	path := translog.TilePath{L: 0, N: 0, W: int(cp.Size)}.String()
	r = e.must(e.do("GET", "/v1/log/"+path, "", nil), 200)
	if len(r.raw) != int(cp.Size)*32 || r.header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("%s: %d bytes", path, len(r.raw))
	}
	tile := r.raw
	entries := translog.TilePath{Entries: true, N: 0, W: int(cp.Size)}.String()
	e.must(e.do("GET", "/v1/log/"+entries, "", nil), 401)
	e.must(e.do("GET", "/v1/log/"+entries, e.tenantA, nil), 403)
	r = e.must(e.do("GET", "/v1/log/"+entries, e.admin, nil), 200)
	// Every tenant's events, read with an admin key: no shared cache
	// keeps them (hash tiles, public, may be).
	if cc := r.header.Get("Cache-Control"); !strings.HasPrefix(cc, "private,") || r.header.Get("Vary") != "Authorization, X-Api-Key, Accept-Encoding" {
		t.Fatalf("entry bundle Cache-Control %q, Vary %q", cc, r.header.Get("Vary"))
	}
	if cc := e.must(e.do("GET", "/v1/log/"+path, "", nil), 200).header.Get("Cache-Control"); !strings.HasPrefix(cc, "public,") {
		t.Fatalf("hash tile Cache-Control %q", cc)
	}
	// Compressed for a client that asks (tlog-tiles: entry bundles SHOULD
	// be); the bytes themselves for one that does not.
	z := e.must(e.do("GET", "/v1/log/"+entries, e.admin, nil, "Accept-Encoding", "br, gzip;q=0.5"), 200)
	if z.header.Get("Content-Encoding") != "gzip" || z.header.Get("Content-Length") != strconv.Itoa(len(z.raw)) {
		t.Fatalf("asked for gzip: Content-Encoding %q, Content-Length %q of %d bytes", z.header.Get("Content-Encoding"), z.header.Get("Content-Length"), len(z.raw))
	}
	zr, err := gzip.NewReader(bytes.NewReader(z.raw))
	if err != nil {
		t.Fatal(err)
	}
	if unz, err := io.ReadAll(zr); err != nil || !bytes.Equal(unz, r.raw) {
		t.Fatalf("the gzipped bundle (%v) is not the bundle", err)
	}
	for _, ae := range []string{"identity", "gzip;q=0, *", "*;q=0"} {
		p := e.must(e.do("GET", "/v1/log/"+entries, e.admin, nil, "Accept-Encoding", ae), 200)
		if p.header.Get("Content-Encoding") != "" || !bytes.Equal(p.raw, r.raw) {
			t.Fatalf("Accept-Encoding %q: Content-Encoding %q", ae, p.header.Get("Content-Encoding"))
		}
	}
	b := r.raw
	for i := 0; i < int(cp.Size); i++ {
		l := int(binary.BigEndian.Uint16(b))
		if h := tlog.RecordHash(b[2 : 2+l]); string(h[:]) != string(tile[32*i:32*i+32]) {
			t.Fatalf("entry %d does not hash to its tile hash", i)
		}
		b = b[2+l:]
	}
	for _, p := range []string{"tile/0/000", "tile/0/000.p/255", "tile/1/000.p/1", "tile/0/0"} {
		e.must(e.do("GET", "/v1/log/"+p, "", nil), 404)
	}

	// Receipts: the tenant's own, each proof against the checkpoint.
	e.must(e.do("GET", "/v1/executions/"+id+"/receipts", e.tenantB, nil), 404)
	r = e.must(e.do("GET", "/v1/executions/"+id+"/receipts", e.tenantA, nil), 200)
	var ans struct {
		Receipts []translog.Receipt `json:"receipts"`
	}
	if err := json.Unmarshal(r.raw, &ans); err != nil || len(ans.Receipts) != int(n) {
		t.Fatalf("%d receipts (%v): %s", len(ans.Receipts), err, r.raw)
	}
	led := e.ledger(id, e.tenantA)
	var trail struct {
		Events []domain.Recorded `json:"events"`
	}
	json.Unmarshal(led.raw, &trail)
	for i, rc := range ans.Receipts {
		ev := trail.Events[i]
		c, err := domain.Canonical(id, ev.Seq, ev.Type, ev.Actor, ev.RecordedAt, ev.Data)
		if err != nil {
			t.Fatal(err)
		}
		p, err := translog.ParseProof([]byte(rc.Proof))
		if err != nil {
			t.Fatal(err)
		}
		pt, _, _ := strings.Cut(string(p.Checkpoint), "\n\n")
		pcp, _ := translog.ParseCheckpoint(pt + "\n")
		if rc.Seq != ev.Seq || tlog.CheckRecord(p.Hashes, pcp.Size, pcp.Root, rc.LeafIndex, tlog.RecordHash(c)) != nil {
			t.Fatalf("receipt %+v does not prove event %d", rc, ev.Seq)
		}
	}
}

// A checkpoint of the log's own key that its tree contradicts (the
// store's events changed after it was signed) stops the signing, and
// /healthz says so; the latest matching checkpoint is still served.
func TestLogForkOfItsOwnKeyIsInHealth(t *testing.T) {
	e, _ := newLogEnv(t)
	id := e.contract(e.tenantA, nil)
	n := int64(e.events(id))
	e.waitLogged(n)
	if r := e.must(e.do("GET", "/healthz", "", nil), 200); r.body["status"] != "ok" || r.body["logForked"] != nil {
		t.Fatalf("healthz %s", r.raw)
	}
	root, _ := e.tlog.Root(n)
	other := root
	other[0] ^= 1
	if _, err := e.tlog.SignAt(context.Background(), translog.Checkpoint{Origin: e.tlog.Origin(), Size: n, Root: other}, e.tlog.Claims()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, ok := e.tlog.OwnFork(); !ok; _, ok = e.tlog.OwnFork() {
		if time.Now().After(deadline) {
			t.Fatal("the log did not read its own fork")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r := e.must(e.do("GET", "/healthz", "", nil), 200)
	if f, _ := r.body["logForked"].(string); r.body["status"] != "degraded" || !strings.Contains(f, other.String()) || !strings.Contains(f, root.String()) {
		t.Fatalf("healthz %s", r.raw)
	}
	e.must(e.do("GET", "/v1/log/checkpoint", "", nil), 200)
}

// Without the log the routes are not served.
func TestLogRoutesOff(t *testing.T) {
	e := newEnv(t)
	e.must(e.do("GET", "/v1/log/checkpoint", "", nil), 404)
}

// A witness's cosignature posted to the log is served on the checkpoint
// and in the receipts' proofs; a stranger's is ignored.
func TestLogTakesWitnessCosignatures(t *testing.T) {
	w, stranger := newWitness(t, "w1.example"), newWitness(t, "w9.example")
	envLogWitnesses = []string{w.VKey}
	defer func() { envLogWitnesses = nil }()
	e, _ := newLogEnv(t)
	id := e.contract(e.tenantA, nil)
	e.waitLogged(int64(e.events(id)))
	signed := e.must(e.do("GET", "/v1/log/checkpoint", "", nil), 200).raw
	// Further checkpoints may come; the cosignature is of this one.
	r := e.must(e.do("POST", "/v1/log/cosignature", "", map[string]string{"checkpoint": string(stranger.Cosign(signed))}), 200)
	if r.str("added") != "0" {
		t.Fatalf("a stranger's cosignature: %s", r.raw)
	}
	// Dated a day ahead: refused, never served.
	if r := e.must(e.do("POST", "/v1/log/cosignature", "", map[string]string{"checkpoint": string(w.CosignAt(signed, time.Now().Add(24*time.Hour)))}), 422); !strings.Contains(r.str("detail"), "later than this server's clock allows") ||
		strings.Contains(r.str("detail"), "not a checkpoint signed by the log") { // it is one; its date is refused

		t.Fatalf("a cosignature from tomorrow: %s", r.raw)
	}
	r = e.must(e.do("POST", "/v1/log/cosignature", "", map[string]string{"checkpoint": string(w.Cosign(signed))}), 200)
	if r.str("added") != "1" {
		t.Fatalf("the witness's cosignature: %s", r.raw)
	}
	e.must(e.do("POST", "/v1/log/cosignature", "", map[string]string{"checkpoint": "not a checkpoint"}), 422)
	// As every body: not JSON 400, the wrong shape 422 naming the field,
	// unknown fields ignored.
	e.must(e.do("POST", "/v1/log/cosignature", "", "{"), 400)
	for _, body := range []string{"[]", `{}`, `{"checkpoint":123}`, `{"checkpoint":""}`} {
		if r := e.must(e.do("POST", "/v1/log/cosignature", "", body), 422); r.str("code") != "validation_failed" {
			t.Fatalf("%s: %s", body, r.raw)
		}
	}
	if r := e.must(e.do("POST", "/v1/log/cosignature", "", `{"checkpoint":"not a checkpoint","later":1}`), 422); r.str("code") != "invalid_cosignature" {
		t.Fatalf("an unknown field: %s", r.raw)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		rs := e.must(e.do("GET", "/v1/executions/"+id+"/receipts", e.tenantA, nil), 200)
		if strings.Contains(rs.str("receipts"), "— w1.example ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no receipt proves against the cosigned checkpoint: %s", rs.raw)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newWitness(t *testing.T, name string) *translogtest.Witness {
	w, err := translogtest.NewWitness(name)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
