package translog

import (
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

func TestTilePaths(t *testing.T) {
	for path, want := range map[string]TilePath{
		"tile/0/000":                 {L: 0, N: 0, W: 256},
		"tile/1/x001/x234/067":       {L: 1, N: 1234067, W: 256},
		"tile/0/x001/x234/067.p/112": {L: 0, N: 1234067, W: 112},
		"tile/entries/005.p/1":       {Entries: true, N: 5, W: 1},
		"tile/entries/x001/000":      {Entries: true, N: 1000, W: 256},
	} {
		got, err := ParseTilePath(path)
		if err != nil || got != want || got.String() != path {
			t.Errorf("%s: %+v %v", path, got, err)
		}
	}
	for _, path := range []string{"tile/0/0", "tile/0/x000/001", "tile/64/000", "tile/01/000", "tile/0/000.p/0", "tile/0/000.p/256",
		"tile/0/000.p/01", "tile/0/001/002", "tile/entries/000.p/", "tiles/0/000", "tile/0/x1000/000", "tile/0/-01", "tile/0/000/"} {
		if p, err := ParseTilePath(path); err == nil {
			t.Errorf("%s accepted as %+v", path, p)
		}
	}
}

func TestCheckpointAndProofText(t *testing.T) {
	cp := Checkpoint{Origin: "example.test/log", Size: 73894, Root: tlog.RecordHash([]byte("x"))}
	got, err := ParseCheckpoint(cp.Text())
	if err != nil || got != cp {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []string{"o\n01\n" + cp.Root.String() + "\n", "o\n1\nAAAA\n", "\n1\n" + cp.Root.String() + "\n", "o\n1\n" + cp.Root.String(), "o\n1\n" + cp.Root.String() + "\n\n"} {
		if _, err := ParseCheckpoint(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	p := Proof{Index: 7, Hashes: tlog.RecordProof{tlog.RecordHash([]byte("a")), tlog.RecordHash([]byte("b"))}, Checkpoint: []byte(cp.Text() + "\n— example.test/log AAAA\n")}
	back, err := ParseProof([]byte(p.Text()))
	if err != nil || back.Index != 7 || len(back.Hashes) != 2 || string(back.Checkpoint) != string(p.Checkpoint) {
		t.Fatalf("%+v %v", back, err)
	}
	if !strings.HasPrefix(p.Text(), "c2sp.org/tlog-proof@v1\nindex 7\n") {
		t.Fatalf("%q", p.Text())
	}
	p.Extra = []byte("hi")
	if back, err := ParseProof([]byte(p.Text())); err != nil || string(back.Extra) != "hi" {
		t.Fatalf("%+v %v", back, err)
	}
}

func FuzzParseTilePath(f *testing.F) {
	for _, s := range []string{"tile/0/000", "tile/1/x001/x234/067.p/112", "tile/entries/005.p/1", "tile/0/x000/001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseTilePath(s)
		if err != nil {
			return
		}
		if p.String() != s || p.W < 1 || p.W > TileWidth || p.N < 0 || p.L < 0 || p.L > 63 {
			t.Fatalf("%q parsed as %+v", s, p)
		}
	})
}

func FuzzParseProof(f *testing.F) {
	cp := Checkpoint{Origin: "o", Size: 3, Root: tlog.RecordHash(nil)}
	f.Add([]byte(Proof{Index: 2, Hashes: tlog.RecordProof{cp.Root}, Checkpoint: []byte(cp.Text() + "\n— o AAAA\n")}.Text()))
	f.Add([]byte("c2sp.org/tlog-proof@v1\nextra aGk=\nindex 0\n\nx"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProof(b)
		if err != nil {
			return
		}
		again, err := ParseProof([]byte(p.Text()))
		if err != nil || again.Index != p.Index || len(again.Hashes) != len(p.Hashes) || string(again.Checkpoint) != string(p.Checkpoint) {
			t.Fatalf("round trip of %q: %v", b, err)
		}
	})
}

func FuzzParseCheckpoint(f *testing.F) {
	f.Add(Checkpoint{Origin: "o", Size: 3, Root: tlog.RecordHash(nil)}.Text())
	f.Add("o\n3\nAAAA\next\n")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCheckpoint(s)
		if err != nil {
			return
		}
		if c.Size < 0 || c.Origin == "" || !strings.HasPrefix(s, c.Text()[:len(c.Text())-1]) {
			t.Fatalf("%q parsed as %+v", s, c)
		}
	})
}
