package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/eventstore/records"
	batonhttp "github.com/batonhq/baton/http"
	"github.com/batonhq/baton/projections"
)

// runHandoffs drives two handoffs through the API on a store in dir.
func runHandoffs(t *testing.T, dir string) (ids []string) {
	t.Helper()
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	proj, err := projections.Open(filepath.Join(dir, "readmodel.db"), store, projections.NewHandoffs(), projections.Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { proj.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	srv := httptest.NewServer(batonhttp.NewServer(batonhttp.Config{Store: store, Projections: proj, Log: zerolog.Nop()}).Handler())
	defer srv.Close()
	k, err := ledger.NewKeys(store).Create(context.Background(), "test", "", "t", true, "")
	if err != nil {
		t.Fatal(err)
	}
	post := func(path, body string) string {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("x-api-key", k.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, buf.String())
		}
		s := buf.String()
		i := strings.Index(s, `"handoffId":"`)
		return s[i+13 : i+13+36]
	}
	for i := 0; i < 2; i++ {
		id := post("/v1/handoff/contracts", fmt.Sprintf(`{"objective":"Rotate certificate %d","targetExecutor":"ops","executorProtocol":"ops.v1","riskLevel":"low"}`, i))
		post("/v1/executions/"+id+"/approval", `{"status":"APPROVED","approvedBy":"alice"}`)
		post("/v1/executions/"+id+"/result", `{"executorRunId":"r1","status":"SUCCEEDED","result":{"summary":"done","output":"ok"}}`)
		ids = append(ids, id)
	}
	return ids
}

func TestLedgerVerifyCatchesAlteredEvent(t *testing.T) {
	dir := t.TempDir()
	ids := runHandoffs(t, dir)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"ledger", "verify", "--data", dir}, &out, &out); err != nil {
		t.Fatalf("intact ledger: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "2 handoffs, 10 events, 0 broken") {
		t.Fatalf("intact ledger said:\n%s", out.String())
	}

	// Someone with access to the file rewrites the second handoff's objective
	// and fixes the record checksum, so the store itself sees nothing wrong.
	db, err := bbolt.Open(filepath.Join(dir, bolt.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("events"))
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if i := bytes.Index(v, []byte("Rotate certificate 1")); i >= 0 {
				rec := bytes.Clone(v)
				copy(rec[i:], "Rotate certificate 9")
				body := rec[:len(rec)-4]
				binary.BigEndian.PutUint32(rec[len(rec)-4:], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
				return b.Put(bytes.Clone(k), rec)
			}
		}
		return errors.New("event to alter not found")
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"store", "check", "--data", dir}, &out, &out); err != nil {
		t.Fatalf("store check should pass on a well-formed forgery: %v", err)
	}
	out.Reset()
	err = run(context.Background(), []string{"ledger", "verify", "--data", dir}, &out, &out)
	if !errors.Is(err, errChainBroken) {
		t.Fatalf("verify of an altered ledger = %v\n%s", err, out.String())
	}
	want := fmt.Sprintf("BROKEN handoff %s: event 1 (ContractCreated): hash does not match", ids[1])
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "ok "+ids[0]) {
		t.Fatalf("verify said:\n%s\nwant a line with %q", out.String(), want)
	}
	// One handoff by id.
	out.Reset()
	if err := run(context.Background(), []string{"ledger", "verify", "--data", dir, ids[0]}, &out, &out); err != nil {
		t.Fatalf("verify of the intact handoff: %v", err)
	}
	// With a receipt kept from a callback (ID@SEQ:HASH): it holds for the
	// intact ledger; a receipt the ledger no longer matches, or one beyond
	// its head, breaks it.
	var n int
	var head string
	if _, err := fmt.Sscanf(out.String(), "ok "+ids[0]+": %d events, head %d %s", &n, &n, &head); err != nil {
		t.Fatalf("reading the head from %q: %v", out.String(), err)
	}
	for _, c := range []struct {
		receipt string
		broken  string
	}{
		{fmt.Sprintf("%d:%s", n, head), ""},
		{fmt.Sprintf("%d:%s", n, strings.Repeat("0", 64)), "the ledger was rewritten"},
		{fmt.Sprintf("%d:%s", n+3, head), "beyond the ledger's head"},
	} {
		out.Reset()
		err := run(context.Background(), []string{"ledger", "verify", "--data", dir, ids[0] + "@" + c.receipt}, &out, &out)
		if c.broken == "" && err != nil || c.broken != "" && (!errors.Is(err, errChainBroken) || !strings.Contains(out.String(), c.broken)) {
			t.Fatalf("receipt %s: %v\n%s", c.receipt, err, out.String())
		}
	}
	if err := run(context.Background(), []string{"ledger", "verify", "--data", dir, ids[0] + "@x"}, &out, &out); err == nil || errors.Is(err, errChainBroken) {
		t.Fatalf("a malformed receipt: %v", err)
	}
}

// A retention under a day is refused before anything opens: a client may
// retry a day later and must still get its answer.
func TestServeRefusesShortIdempotencyRetention(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--idempotency-retention", "1h"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "at least 24h") {
		t.Fatalf("err = %v", err)
	}
}

// A port already in use fails the start before the first key is made: the
// key is printed once, and a start that fails on the address must not use
// it up.
func TestServeOnABusyPortMakesNoKey(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	var out bytes.Buffer
	err = run(context.Background(), []string{"serve", "--data", dir, "--addr", ln.Addr().String()}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("err = %v; output %s", err, out.String())
	}
	// It says what to do: the bare error named neither.
	if !strings.Contains(err.Error(), "--addr") || !strings.Contains(err.Error(), "make run ADDR=") {
		t.Fatalf("err = %v; want --addr and make run ADDR= named", err)
	}
	if strings.Contains(out.String(), "BATON_API_KEY") {
		t.Fatalf("a key was printed by a start that failed: %s", out.String())
	}
	// The next start on a free port makes and prints the first key.
	ctx, cancel := context.WithCancel(context.Background())
	var out2 syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--data", dir, "--addr", "127.0.0.1:0"}, &out2, &out2) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out2.String(), "baton serving") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("second start: %v", err)
	}
	if !strings.Contains(out2.String(), "export BATON_API_KEY=btn_sk_") {
		t.Fatalf("second start printed no key: %s", out2.String())
	}
	// Off the default address, the console hint asks this server.
	hint := regexp.MustCompile(`make console-link NAME=you@example.com ADDR=127\.0\.0\.1:([0-9]+)\n`).FindStringSubmatch(out2.String())
	if hint == nil || hint[1] == "0" {
		t.Fatalf("the console hint does not name the address it listens on: %s", out2.String())
	}
}

// dirState describes the files of dir (their names, sizes, times and
// contents), "absent" when there is no dir: what a start that failed must
// leave as it found.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return "absent"
	}
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		body, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %d %s %x\n", e.Name(), info.Size(), info.ModTime().Format(time.RFC3339Nano), crc32.ChecksumIEEE(body))
	}
	return b.String()
}

// A start that fails on its address creates nothing in the data
// directory and changes nothing in one that exists: the store, the read
// models and the log were opened (and created) before the address was
// taken, and a newcomer's retry on another port found a store made by the
// start that failed.
func TestServeOnABusyPortLeavesTheDataAlone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fresh := filepath.Join(t.TempDir(), "data")
	prof := filepath.Join(t.TempDir(), "mem.prof")
	var out bytes.Buffer
	err = run(context.Background(), []string{"serve", "--data", fresh, "--addr", ln.Addr().String(), "--memprofile", prof}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("err = %v; output %s", err, out.String())
	}
	if got := dirState(t, fresh); got != "absent" {
		t.Fatalf("a start that failed on its address left in its data directory:\n%s", got)
	}
	if _, err := os.Stat(prof); !os.IsNotExist(err) {
		t.Fatalf("a start that failed on its address left its profile: %v", err)
	}

	// A directory an ordinary start and stop left, with a log key.
	dir := t.TempDir()
	if err := run(context.Background(), []string{"log", "keygen", "--out", filepath.Join(dir, KeyFileName)}, &out, &out); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out2 syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--data", dir, "--addr", "127.0.0.1:0"}, &out2, &out2) }()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out2.String(), "baton serving") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("first start: %v\n%s", err, out2.String())
	}
	before := dirState(t, dir)
	time.Sleep(20 * time.Millisecond) // a file written again would have another time
	out.Reset()
	err = run(context.Background(), []string{"serve", "--data", dir, "--addr", ln.Addr().String()}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("err = %v; output %s", err, out.String())
	}
	if after := dirState(t, dir); after != before {
		t.Fatalf("a start that failed on its address changed the data directory:\nbefore:\n%safter:\n%s", before, after)
	}
}

// A start stopped by a setting that is only read once the store is open
// (the log's interval, key file, origin and witnesses, the providers
// file) creates nothing in a new data directory: it made the store, the
// read models and their markers first.
func TestServeStoppedByASettingCreatesNothing(t *testing.T) {
	providers := filepath.Join(t.TempDir(), "providers.json")
	os.WriteFile(providers, []byte(`{"providers":[{"name":"p","kind":"nope","baseUrl":"http://x"}]}`), 0o600)
	for _, c := range []struct{ flags []string }{
		{[]string{"--log-interval", "5ms"}},
		{[]string{"--log-key-file", filepath.Join(t.TempDir(), "none.key")}},
		{[]string{"--log-origin", " spaced"}},
		{[]string{"--log-witnesses", "garbage"}},
		{[]string{"--providers", providers}},
	} {
		data := filepath.Join(t.TempDir(), "data")
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"serve", "--data", data, "--addr", "127.0.0.1:0"}, c.flags...), &out, &out)
		if err == nil {
			t.Fatalf("%v: it started", c.flags)
		}
		if got := dirState(t, data); got != "absent" {
			t.Errorf("%v: %v; the start left in its data directory:\n%s", c.flags, err, got)
		}
	}
}

// A store whose keys are all a tenant's (the first made without --admin)
// gets no bootstrap key, and nothing could make an admin key while it
// served: the start says so, and how to make one. A store with an admin
// key hears nothing of it.
func TestServeSaysWhenNoAdminKeyWorks(t *testing.T) {
	serveOnce := func(dir string) string {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		var out syncBuffer
		done := make(chan error, 1)
		go func() { done <- run(ctx, []string{"serve", "--data", dir, "--addr", "127.0.0.1:0"}, &out, &out) }()
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out.String(), "baton serving") && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("serve: %v", err)
		}
		return out.String()
	}
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--tenant", "acme", "--data", dir}, &out, &out); err != nil {
		t.Fatal(err)
	}
	got := serveOnce(dir)
	if strings.Contains(got, "BATON_API_KEY") || !strings.Contains(got, "no admin key") || !strings.Contains(got, "baton keys create --tenant default --admin") {
		t.Fatalf("a start with tenant keys only: %s", got)
	}
	if got := serveOnce(t.TempDir()); strings.Contains(got, "no admin key") {
		t.Fatalf("a start that made the bootstrap key: %s", got)
	}
}

// FuzzParseLedgerArg: what parses is a non-empty id and, with a receipt, a
// sequence from 1 and 64 lowercase hex digits; written back as
// ID@SEQ:HASH it parses to the same.
func FuzzParseLedgerArg(f *testing.F) {
	h := strings.Repeat("ab", 32)
	for _, s := range []string{"h_1", "h_1@1:" + h, "h_1@0:" + h, "@1:" + h, "h_1@1:" + strings.ToUpper(h), "h_1@1:" + strings.Repeat("zz", 32),
		"h_1@", "h_1@1", "h_1@-1:" + h, "h_1@18446744073709551616:" + h, "a@b@1:" + h, ""} {
		f.Add(s)
	}
	hexDigits := regexp.MustCompile(`^[0-9a-f]{64}$`)
	f.Fuzz(func(t *testing.T, arg string) {
		id, rc, err := parseLedgerArg(arg)
		if err != nil {
			return
		}
		if id == "" || strings.Contains(id, "@") {
			t.Fatalf("%q: id %q", arg, id)
		}
		if rc == nil {
			if id != arg {
				t.Fatalf("%q: id %q without a receipt", arg, id)
			}
			return
		}
		if rc.Seq == 0 || !hexDigits.MatchString(rc.Hash) {
			t.Fatalf("%q: receipt %+v", arg, *rc)
		}
		id2, rc2, err := parseLedgerArg(fmt.Sprintf("%s@%d:%s", id, rc.Seq, rc.Hash))
		if err != nil || id2 != id || rc2 == nil || *rc2 != *rc {
			t.Fatalf("%q: written back, parses to %q %+v, %v", arg, id2, rc2, err)
		}
	})
}

// FuzzVerifyOverHTTP serves arbitrary answers to `baton ledger verify
// --url`: the contract listing and one ledger. It never panics or loops,
// and it says "ok" only for a ledger that has events and whose chain
// verifies.
func FuzzVerifyOverHTTP(f *testing.F) {
	const id = "h_fuzz"
	good, _ := json.Marshal(map[string]any{"events": []domain.Recorded{chainedEvent(f, id)}})
	listing := []byte(`{"object":"list","data":[{"handoffId":"` + id + `"}],"hasMore":false}`)
	for _, s := range [][2][]byte{
		{listing, good},
		{listing, []byte(`{"events":[]}`)},
		{listing, []byte(`{}`)},
		{[]byte(`{"data":[{"handoffId":"` + id + `"}],"nextCursor":"c1"}`), good},
		{[]byte(`{"data":[]}`), good},
		{listing, bytes.Replace(good, []byte(`"seq":1`), []byte(`"seq":2`), 1)},
		{listing, []byte(`{"events":[{"seq":1,"recordedAt":"x"}]}`)},
		{[]byte(`[`), good},
		{[]byte(`{"data":[{"handoffId":"x\nok y"}]}`), []byte(`{"events":[]}`)},
		{[]byte(`{"data":[{"handoffId":"a\nok b\nc"}]}`), good},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, list, ledger []byte) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/handoff/contracts" {
				w.Write(list)
				return
			}
			w.Write(ledger)
		}))
		defer srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var out bytes.Buffer
		err := verifyOverHTTP(ctx, srv.URL, "btn_sk_x", nil, nil, &out)
		if ctx.Err() != nil {
			t.Fatalf("verification did not end: %v", err)
		}
		var l struct {
			Events []domain.Recorded `json:"events"`
		}
		decoded := json.Unmarshal(ledger, &l) == nil
		for _, line := range strings.Split(out.String(), "\n") {
			okID, found := strings.CutPrefix(line, "ok ")
			if !found {
				continue
			}
			cut := strings.LastIndex(okID, ": ")
			if cut < 0 {
				t.Fatalf("an ok line without its figures: %q in %s", line, out.String())
			}
			okID = okID[:cut]
			if !decoded || len(l.Events) == 0 || domain.VerifyChain(okID, l.Events) != nil {
				t.Fatalf("said ok for %q, ledger %q: %s", okID, ledger, out.String())
			}
		}
		if err == nil && strings.Contains(out.String(), "BROKEN") {
			t.Fatalf("reported a break but succeeded: %s", out.String())
		}
	})
}

// chainedEvent is the first event of handoff id's ledger, correctly
// chained, as a server shows it.
func chainedEvent(t testing.TB, id string) domain.Recorded {
	t.Helper()
	at := time.Date(2026, 11, 23, 10, 0, 0, 123456000, time.UTC)
	data := json.RawMessage(`{"objective":"x"}`)
	c, err := domain.Canonical(id, 1, "contract_created", "tenant:a", at, data)
	if err != nil {
		t.Fatal(err)
	}
	ev := domain.Recorded{Seq: 1, Type: "contract_created", Data: data, Actor: "tenant:a", RecordedAt: at, PrevHash: domain.GenesisHash(id)}
	ev.Hash = domain.ChainHash(ev.PrevHash, c)
	return ev
}

// Every receipt given for a handoff is checked, not only the last one: a
// receipt the ledger does not match fails the verification wherever it
// stands among the others, on the store and through the API alike. A
// handoff named twice is verified (and counted) once.
func TestLedgerVerifyChecksEveryReceipt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ids := runHandoffs(t, dir)
	var out bytes.Buffer
	if err := run(ctx, []string{"ledger", "verify", "--data", dir, ids[0]}, &out, &out); err != nil {
		t.Fatalf("verify of an intact handoff: %v\n%s", err, out.String())
	}
	var n int
	var head string
	if _, err := fmt.Sscanf(out.String(), "ok "+ids[0]+": %d events, head %d %s", &n, &n, &head); err != nil {
		t.Fatalf("reading the head from %q: %v", out.String(), err)
	}
	good := fmt.Sprintf("%s@%d:%s", ids[0], n, head)
	wrong := fmt.Sprintf("%s@%d:%s", ids[0], n, strings.Repeat("0", 64))

	const id = "h_receipts"
	ev := chainedEvent(t, id)
	ledger, _ := json.Marshal(map[string]any{"events": []domain.Recorded{ev}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(ledger) }))
	defer srv.Close()
	goodURL := fmt.Sprintf("%s@1:%s", id, ev.Hash)
	wrongURL := fmt.Sprintf("%s@1:%s", id, strings.Repeat("0", 64))

	store := []string{"ledger", "verify", "--data", dir}
	api := []string{"ledger", "verify", "--url", srv.URL, "--key", "btn_sk_x"}
	tests := []struct {
		name   string
		args   []string
		broken bool
	}{
		{"store, wrong then right", append(store[:4:4], wrong, good), true},
		{"store, right then wrong", append(store[:4:4], good, wrong), true},
		{"store, both right", append(store[:4:4], good, good), false},
		{"api, wrong then right", append(api[:6:6], wrongURL, goodURL), true},
		{"api, right then wrong", append(api[:6:6], goodURL, wrongURL), true},
		{"api, both right", append(api[:6:6], goodURL, goodURL), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(ctx, tt.args, &out, &out)
			if !tt.broken {
				if err != nil || !strings.Contains(out.String(), "1 handoffs, ") {
					t.Fatalf("verify = %v, said:\n%s", err, out.String())
				}
				return
			}
			if !errors.Is(err, errChainBroken) || !strings.Contains(out.String(), "the ledger was rewritten") || strings.Contains(out.String(), "\nok ") || strings.HasPrefix(out.String(), "ok ") {
				t.Fatalf("verify = %v, said:\n%s", err, out.String())
			}
		})
	}
}

// A handoff named that the server does not have is reported, as the store
// reports it, and the others named are still verified: it ended the run
// with the server's 404 quoted, verifying none after it.
func TestLedgerVerifyOverHTTPReportsAMissingHandoff(t *testing.T) {
	const id = "h_there"
	ledger, _ := json.Marshal(map[string]any{"events": []domain.Recorded{chainedEvent(t, id)}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/executions/"+id+"/ledger" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"type":"urn:baton:problem:handoff_not_found","title":"Not Found","status":404,"code":"handoff_not_found","detail":"no handoff"}`))
			return
		}
		w.Write(ledger)
	}))
	defer srv.Close()
	var out bytes.Buffer
	err := run(context.Background(), []string{"ledger", "verify", "--url", srv.URL, "--key", "btn_sk_x", "h_typo", id}, &out, &out)
	if !errors.Is(err, errChainBroken) {
		t.Fatalf("verify = %v, want the chain-broken exit; said:\n%s", err, out.String())
	}
	for _, want := range []string{"handoff h_typo: not found\n", "ok " + id + ": 1 events", "2 handoffs, 1 events, 1 broken"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("said:\n%s\nwant %q", out.String(), want)
		}
	}
}

// A server that refuses the key (none given, or one it does not know)
// is told with the flag that gives it: the commands quoted the server's
// answer alone, which speaks of headers a command-line user does not set.
func TestCommandsOverHTTPSayHowToGiveTheKey(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		code := "invalid_api_key"
		if r.Header.Get("x-api-key") == "" {
			code = "missing_api_key"
		}
		fmt.Fprintf(w, `{"type":"urn:baton:problem:%s","title":"Unauthorized","status":401,"code":%q,"detail":"send your API key in the x-api-key header"}`, code, code)
	}))
	defer srv.Close()
	t.Setenv("BATON_API_KEY", "")
	for _, args := range [][]string{
		{"ledger", "verify", "--url", srv.URL},
		{"ledger", "verify", "--url", srv.URL, "--key", "btn_sk_wrong", "h1"},
		{"ledger", "export", "--url", srv.URL, "h1"},
		{"ledger", "export", "--url", srv.URL, "--key", "btn_sk_wrong", "h1"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "--key") || !strings.Contains(err.Error(), "BATON_API_KEY") {
			t.Errorf("%v: %v; want the 401 and how to give the key", args, err)
		}
	}
}

// A --url without its scheme (as the server's log prints its address) is
// refused naming the flag: it failed with the URL parser's words about a
// path segment, or "unsupported protocol scheme \"localhost\"".
func TestCommandsRefuseAURLWithoutScheme(t *testing.T) {
	cp := filepath.Join(t.TempDir(), "kept.checkpoint")
	os.WriteFile(cp, []byte("x\n"), 0o600)
	for _, u := range []string{"127.0.0.1:8080", "localhost:8080"} {
		for _, args := range [][]string{
			{"ledger", "verify", "--url", u, "--key", "k"},
			{"ledger", "export", "--url", u, "--key", "k", "h1"},
			{"log", "verify", "--url", u, "--log-key", "baton.test/log+00000000+AQ", "--old", cp},
		} {
			var out bytes.Buffer
			err := run(context.Background(), args, &out, &out)
			if err == nil || !strings.Contains(err.Error(), "--url") || !strings.Contains(err.Error(), "http or https") {
				t.Errorf("%v: %v; want --url refused as no http(s) URL", args, err)
			}
		}
	}
}

// ledger verify's two forms do not mix: a handoff id or a server given
// with --bundle, or a bundle's flag without it, was ignored without a
// word, and the check that ran said "ok" of something else than was asked.
func TestLedgerVerifyRefusesFlagsOfTheOtherForm(t *testing.T) {
	b := filepath.Join(t.TempDir(), "trail.bundle")
	for _, args := range [][]string{
		{"--bundle", b, "--log-key", "baton.test/log+00000000+AQ", "0190a1b2-0000-7000-8000-000000000000"},
		{"--bundle", b, "--log-key", "baton.test/log+00000000+AQ", "--url", "http://127.0.0.1:1"},
		{"--bundle", b, "--log-key", "baton.test/log+00000000+AQ", "--data", t.TempDir()},
		{"--data", t.TempDir(), "--old", b},
		{"--data", t.TempDir(), "--log-key", "baton.test/log+00000000+AQ"},
		{"--data", t.TempDir(), "--witness-quorum", "1"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"ledger", "verify"}, args...), &out, &out)
		if err == nil || !strings.Contains(err.Error(), "--bundle") || errors.Is(err, errChainBroken) {
			t.Errorf("%v: %v; want the mix refused, naming --bundle\n%s", args, err, out.String())
		}
	}
}

// A witness quorum below 0 is refused, as log verify refuses it: ledger
// verify --bundle took --witness-quorum -1 for none and said ok.
func TestLedgerVerifyRefusesANegativeQuorum(t *testing.T) {
	b := filepath.Join(t.TempDir(), "trail.bundle")
	os.WriteFile(b, []byte("{}"), 0o600)
	var out bytes.Buffer
	err := run(context.Background(), []string{"ledger", "verify", "--bundle", b, "--log-key", "baton.test/log+00000000+AQ", "--witness-quorum", "-1"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "--witness-quorum -1") {
		t.Fatalf("err = %v\n%s", err, out.String())
	}
}

// A negative --wait is refused: it was taken as no wait, without a word.
func TestLedgerExportRefusesANegativeWait(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"ledger", "export", "--url", "http://127.0.0.1:1", "--key", "k", "--wait", "-5s", "h1"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "--wait") {
		t.Fatalf("err = %v", err)
	}
}

// A key read with its line's end (CRLF) is sent without it: the commands
// failed with "net/http: invalid header field value for \"X-Api-Key\"".
func TestCommandsOverHTTPTrimTheKey(t *testing.T) {
	var got sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("x-api-key"), true)
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"code":"invalid_api_key"}`))
	}))
	defer srv.Close()
	cp := filepath.Join(t.TempDir(), "kept.checkpoint")
	os.WriteFile(cp, []byte("x\n"), 0o600)
	for _, args := range [][]string{
		{"ledger", "verify", "--url", srv.URL, "--key", "btn_sk_k\r\n", "h1"},
		{"ledger", "export", "--url", srv.URL, "--key", "btn_sk_k\r\n", "h1"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("%v: %v; want the server's 401", args, err)
		}
	}
	if _, ok := got.Load("btn_sk_k"); !ok {
		t.Fatal("the key was not sent trimmed")
	}
}

// A stream-idle under a second is refused before anything opens.
func TestServeRefusesTinyStreamIdle(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--stream-idle", "10ms"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "at least 1s") {
		t.Fatalf("err = %v", err)
	}
}

// An event-streams bound outside 1 to maxEventStreams is refused before
// anything opens.
func TestServeRefusesEventStreamsOutOfRange(t *testing.T) {
	for _, v := range []string{"0", "10001"} {
		var out bytes.Buffer
		err := run(context.Background(), []string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--event-streams", v}, &out, &out)
		if err == nil || !strings.Contains(err.Error(), "--event-streams") {
			t.Fatalf("--event-streams %s: err = %v", v, err)
		}
	}
}

// serve runs the collector at DefaultServeGOGC unless GOGC says otherwise.
func TestServeGCPercent(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if pct, ok := serveGCPercent(getenv); !ok || pct != DefaultServeGOGC {
		t.Fatalf("no GOGC: %d %v", pct, ok)
	}
	for _, v := range []string{"100", "off", "50"} {
		env["GOGC"] = v
		if _, ok := serveGCPercent(getenv); ok {
			t.Fatalf("GOGC=%s overridden", v)
		}
	}
}

// A BATON_ variable whose value cannot be used is refused, named, before
// anything opens, rather than quietly replaced by the default.
func TestCommandsRefuseUnusableEnvironment(t *testing.T) {
	cases := []struct {
		name, value string
		args        []string
	}{
		{"BATON_USAGE_LINGER", "50", []string{"serve", "--addr", "127.0.0.1:0"}},
		{"BATON_STREAM_IDLE", "0s", []string{"serve", "--addr", "127.0.0.1:0"}},
		{"BATON_MAX_BODY_BYTES", "1MB", []string{"serve", "--addr", "127.0.0.1:0"}},
		{"BATON_GC_HEAP_FLOOR_MB", "-1", []string{"serve", "--addr", "127.0.0.1:0"}},
		{"BATON_GC_HEAP_FLOOR_MB", "64MB", []string{"serve", "--addr", "127.0.0.1:0"}},
		{"BATON_METRICS_PUBLIC", "yes", []string{"serve", "--addr", "127.0.0.1:0"}},
		{"BATON_WEBHOOK_ALLOW_PRIVATE", "yes", []string{"serve", "--addr", "127.0.0.1:0"}},
		{"BATON_KURRENTDB_MAX_APPEND_SIZE", "-1", []string{"keys", "create", "--tenant", "t"}},
		{"BATON_KURRENTDB_MAX_APPEND_SIZE", "big", []string{"ledger", "verify"}},
	}
	for _, c := range cases {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			t.Setenv(c.name, c.value)
			var out bytes.Buffer
			err := run(context.Background(), append(c.args, "--data", t.TempDir()), &out, &out)
			if err == nil || !strings.Contains(err.Error(), c.name) {
				t.Fatalf("%v: err = %v", c.args, err)
			}
		})
	}
}

// A flag given on the command line wins over its unusable variable: the
// command runs (here, keys create on a fresh store) instead of stopping.
func TestFlagWinsOverUnusableEnvironment(t *testing.T) {
	t.Setenv("BATON_KURRENTDB_MAX_APPEND_SIZE", "big")
	var out bytes.Buffer
	err := run(context.Background(), []string{"keys", "create", "--tenant", "t", "--kurrentdb-max-append-size", "1000", "--data", t.TempDir()}, &out, &out)
	if err != nil {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(out.String(), "btn_sk_") {
		t.Fatalf("no key printed: %s", out.String())
	}
}

// BATON_KURRENTDB_MAX_APPEND_SIZE=0 means KurrentDB's default, as the flag's
// 0 does (docs/operations.md); it was refused as not positive. A negative
// size is refused, given either way.
func TestMaxAppendSizeZeroIsTheDefault(t *testing.T) {
	t.Setenv("BATON_KURRENTDB_MAX_APPEND_SIZE", "0")
	var out bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--tenant", "t", "--data", t.TempDir()}, &out, &out); err != nil || !strings.Contains(out.String(), "btn_sk_") {
		t.Fatalf("with the variable at 0: err = %v, %s", err, out.String())
	}
	for _, args := range [][]string{
		{"keys", "create", "--tenant", "t", "--kurrentdb-max-append-size", "-1"},
		{"migrate", "--kurrentdb-url", "esdb://127.0.0.1:1?tls=false", "--kurrentdb-max-append-size", "-1"},
	} {
		err := run(context.Background(), append(args, "--data", t.TempDir()), &out, &out)
		if err == nil || !strings.Contains(err.Error(), "--kurrentdb-max-append-size (BATON_KURRENTDB_MAX_APPEND_SIZE) is -1") {
			t.Fatalf("%v: err = %v", args, err)
		}
	}
}

// A negative heap floor, or one too large to count in bytes, is refused
// before anything opens.
func TestServeRefusesHeapFloorOutOfRange(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--gc-heap-floor-mb", "-1"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "--gc-heap-floor-mb is -1") {
		t.Fatalf("err = %v", err)
	}
	// A floor whose bytes would overflow is refused, not wrapped to 0.
	err = run(context.Background(), []string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--gc-heap-floor-mb", "17592186044416"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "it must be from 0 to 1048576") {
		t.Fatalf("err = %v", err)
	}
}

// A usage window outside 1ms..1s is refused before anything opens.
func TestServeRefusesUsageLingerOutOfRange(t *testing.T) {
	for _, v := range []string{"0s", "500us", "2s"} {
		var out bytes.Buffer
		err := run(context.Background(), []string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--usage-linger", v}, &out, &out)
		if err == nil || !strings.Contains(err.Error(), "from 1ms to 1s") {
			t.Fatalf("--usage-linger %s: err = %v", v, err)
		}
	}
}

// --usage-events takes batched or per-call only.
func TestServeRefusesAnUnknownUsageEventsValue(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--usage-events", "percall"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "it must be batched or per-call") {
		t.Fatalf("err = %v", err)
	}
}

// A correctly chained event that Baton's state machine does not allow (a
// writer around Baton can recompute the chain) is reported, not "ok".
func TestLedgerVerifyReportsAnEventTheStateMachineRefuses(t *testing.T) {
	dir := t.TempDir()
	ids := runHandoffs(t, dir)
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	recs, err := records.ReadHandoff(ctx, store, ids[1])
	if err != nil || len(recs) != 5 {
		t.Fatal(err, len(recs))
	}
	last := recs[len(recs)-1]
	at := time.Now().UTC().Truncate(time.Microsecond)
	data := []byte(`{"verdict":"verified","reviewer":"mallory"}`)
	c, err := domain.Canonical(ids[1], last.Seq+1, domain.EventProofReviewed, "elsewhere", at, data)
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Append(ctx, domain.StreamID(ids[1]), eventstore.Revision(last.Seq-1), eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: domain.EventProofReviewed, Data: data,
		Metadata: eventstore.Metadata{Tenant: "t", Actor: "elsewhere", RecordedAt: at, PrevHash: last.Hash, Hash: domain.ChainHash(last.Hash, c), SchemaVersion: 1}})
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = run(ctx, []string{"ledger", "verify", "--data", dir}, &out, &out)
	want := fmt.Sprintf("BROKEN handoff %s: event 6 (%s) is not a step Baton allows", ids[1], domain.EventProofReviewed)
	if !errors.Is(err, errChainBroken) || !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "ok "+ids[0]) {
		t.Fatalf("verify = %v, said:\n%s\nwant a line with %q", err, out.String(), want)
	}
}

// The console hint asks the server where a client on this machine reaches
// it: a wildcard address (--addr :8080) is reached on the loopback, and
// written so that a shell takes it as it is.
func TestConsoleHintAddress(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080":  "make console-link NAME=you@example.com",
		"[::]:8080":       "make console-link NAME=you@example.com",
		"0.0.0.0:8080":    "make console-link NAME=you@example.com",
		"[::]:9090":       "make console-link NAME=you@example.com ADDR=127.0.0.1:9090",
		"10.0.0.5:8080":   "make console-link NAME=you@example.com ADDR=10.0.0.5:8080",
		"127.0.0.1:34567": "make console-link NAME=you@example.com ADDR=127.0.0.1:34567",
	} {
		if got := consoleHint(addr); got != want {
			t.Errorf("%s: %q, want %q", addr, got, want)
		}
	}
}

// The commands that read a server with --key follow a redirect to another
// host without the key: Go's client keeps x-api-key across hosts, so a
// proxy's redirect (or a mistyped --url) handed the key to the host it
// named. A redirect within the server keeps it.
func TestKeyIsNotSentToAnotherHostOnRedirect(t *testing.T) {
	ctx := context.Background()
	const key = "btn_sk_RedirectedKey000000000000000000000000"
	const id = "h_redirect"
	ev := chainedEvent(t, id)
	ledger, _ := json.Marshal(map[string]any{"events": []domain.Recorded{ev}})
	var mu sync.Mutex
	var seen []string // the key each server got, by its name
	answer := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, name+"="+r.Header.Get("x-api-key"))
			mu.Unlock()
			w.Write(ledger)
		}
	}
	other := httptest.NewServer(answer("other"))
	defer other.Close()
	// The other server by another name of the same machine: another host.
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/moved/"):
			answer("same")(w, r)
		case strings.HasPrefix(r.URL.Path, "/same/"):
			http.Redirect(w, r, "/moved/"+strings.TrimPrefix(r.URL.Path, "/same/"), http.StatusFound)
		default:
			http.Redirect(w, r, otherURL+r.URL.Path, http.StatusFound)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ledger", "verify", "--url", srv.URL, "--key", key, id}, "other="},
		{[]string{"ledger", "export", "--url", srv.URL, "--key", key, "--wait", "0s", id}, "other="},
		{[]string{"ledger", "verify", "--url", srv.URL + "/same", "--key", key, id}, "same=" + key},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		var out bytes.Buffer
		run(ctx, tc.args, &out, &out)
		mu.Lock()
		got := append([]string(nil), seen...)
		mu.Unlock()
		if len(got) == 0 || got[0] != tc.want {
			t.Errorf("%v: the servers got %q, want %q first\n%s", tc.args[:2], got, tc.want, out.String())
		}
	}
}

// TestServeRefusesADamagedStore: a damaged page of events.db that the
// start's reads did not reach (here the id index) stops the start, naming
// what to run and do, instead of serving 500s where requests reach it.
func TestServeRefusesADamagedStore(t *testing.T) {
	dir := t.TempDir()
	fillStore(t, dir)
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 300 { // an id index of more than one page
		if _, err := store.Append(context.Background(), "x-"+uuid.NewString(), eventstore.NoStream(), eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "X", Data: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()
	db, err := bbolt.Open(filepath.Join(dir, bolt.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var root int64
	db.View(func(tx *bbolt.Tx) error { root = int64(tx.Bucket([]byte("ids")).Root()); return nil })
	db.Close()
	if root == 0 {
		t.Fatal("the id index is inline: nothing to damage")
	}
	f, err := os.OpenFile(filepath.Join(dir, bolt.FileName), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(bytes.Repeat([]byte{0xA5}, os.Getpagesize()), root*int64(os.Getpagesize()))
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out syncBuffer
	err = run(ctx, []string{"serve", "--data", dir, "--addr", "127.0.0.1:0"}, &out, &out)
	if !errors.Is(err, eventstore.ErrCorrupt) || !strings.Contains(err.Error(), "baton store check --data "+dir) || !strings.Contains(err.Error(), "Backups") {
		t.Fatalf("serve on a damaged store = %v\n%s", err, out.String())
	}
	var buf bytes.Buffer
	err = run(context.Background(), []string{"store", "check", "--data", dir}, &buf, &buf)
	if !errors.Is(err, eventstore.ErrCorrupt) || !strings.Contains(err.Error(), "Backups") {
		t.Fatalf("store check of a damaged store = %v", err)
	}
}

// A --url where nothing listens says so and what to check: it said only
// "dial tcp ...: connect: connection refused".
func TestURLWhereNothingListens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String()
	ln.Close()
	for _, args := range [][]string{
		{"ledger", "verify", "--url", u, "--key", "k"},
		{"ledger", "export", "--url", u, "--key", "k", "h1"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), "nothing listens at "+u) || !strings.Contains(err.Error(), "baton serve") {
			t.Errorf("%v = %v", args, err)
		}
	}
}

// --url and a store's flags do not mix, nor --key (or --wait) without
// --url: the form not taken was ignored without a word, and "ok" said of
// the server to a user who had named a data directory.
func TestServerAndStoreFlagsDoNotMix(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"ledger", "verify", "--url", "http://127.0.0.1:1", "--data", dir}, "--data: ledger verify --url reads the server"},
		{[]string{"ledger", "verify", "--url", "http://127.0.0.1:1", "--store", "kurrent"}, "--store: ledger verify --url reads the server"},
		{[]string{"ledger", "export", "--url", "http://127.0.0.1:1", "--data", dir, "h1"}, "--data: ledger export --url reads the server"},
		{[]string{"ledger", "verify", "--data", dir, "--key", "k"}, "--key goes with --url"},
		{[]string{"ledger", "export", "--data", dir, "--wait", "1s", "h1"}, "--wait goes with --url"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), tt.args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v = %v, want %q", tt.args, err, tt.want)
		}
	}
}

// keys create refuses a label that holds a credential, as POST
// /v1/admin/keys does, before the store is opened: the label would be kept
// in the key's event for good and shown in every listing of the keys.
func TestKeysCreateRefusesASecretLabel(t *testing.T) {
	dir := t.TempDir()
	secret := "btn" + "_sk_" + "Q7vR2mX9kL4pT8wZ3nB6cY1dF5gH0jK2sA9eU4iO"
	var out bytes.Buffer
	err := run(context.Background(), []string{"keys", "create", "--tenant", "acme", "--data", dir, "--label", "ci " + secret}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "--label") || strings.Contains(err.Error()+out.String(), secret) {
		t.Fatalf("%v; %s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "events.db")); err == nil {
		t.Fatal("the store was opened")
	}
}

// A --data that is a file is told as the data directory's fault, with no
// key file given: the log's settings, checked before the store opens,
// read DATA/log.key and said "--log-key-file: open DATA/log.key: not a
// directory".
func TestServeOnADataThatIsAFile(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	os.WriteFile(data, []byte("x"), 0o600)
	var out bytes.Buffer
	err := run(context.Background(), []string{"serve", "--data", data, "--addr", "127.0.0.1:0"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "not a directory") || strings.Contains(err.Error(), "log-key-file") {
		t.Fatalf("err = %v", err)
	}
}

// A --data given to a command that does not read it (the store is
// KurrentDB, from --store or BATON_STORE; ledger verify reads a server)
// is refused: with BATON_STORE=kurrent exported, `ledger verify --data
// DIR` verified KurrentDB and said ok of it, and `keys create --data DIR`
// made the key there, DIR never read.
func TestDataNotReadIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		env  string
		args []string
		want string
	}{
		{"kurrent", []string{"ledger", "verify", "--data", dir}, "BATON_STORE=kurrent"},
		{"kurrent", []string{"keys", "create", "--tenant", "acme", "--data", dir}, "BATON_STORE=kurrent"},
		{"kurrent", []string{"console", "link", "--tenant", "acme", "--name", "a", "--role", "auditor", "--data", dir}, "BATON_STORE=kurrent"},
		{"", []string{"ledger", "verify", "--store", "kurrent", "--data", dir}, "--store kurrent"},
		{"", []string{"ledger", "verify", "--url", "http://127.0.0.1:1", "--key", "k", "--data", dir}, "--url"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Setenv("BATON_STORE", c.env)
			t.Setenv("BATON_KURRENTDB_URL", "esdb://127.0.0.1:1?tls=false")
			var out bytes.Buffer
			err := run(context.Background(), c.args, &out, &out)
			if err == nil || !strings.Contains(err.Error(), "--data") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want --data refused, naming %s\n%s", err, c.want, out.String())
			}
		})
	}
	// With the embedded store chosen on the command line, the flag wins
	// over the variable, and --data is read.
	t.Setenv("BATON_STORE", "kurrent")
	var out bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--store", "bolt", "--tenant", "acme", "--data", dir}, &out, &out); err != nil {
		t.Fatalf("--store bolt --data: %v", err)
	}
}

// While the start-up runs (here, a KurrentDB that never answers), the
// address refuses connections, so that a load balancer sends them to
// another replica: they are not accepted and left unanswered.
func TestServeRefusesConnectionsWhileStarting(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	free.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--data", t.TempDir(), "--addr", addr, "--store", "kurrent",
			"--kurrentdb-url", "esdb://" + silent.Addr().String() + "?tls=false"}, &out, &out)
	}()
	time.Sleep(time.Second)
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		conn.Close()
	}
	cancel()
	<-done
	if err == nil {
		t.Fatalf("a connection was accepted while the server was starting\n%s", out.String())
	}
}

// store check reads a backup it may not write (files and directory
// read-only, as a snapshot mounted read-only is) and leaves every file as
// it was: it opened the store to write, moving the journal into the file,
// so a read-only backup could not be checked ("permission denied", "the
// file system is read-only"), and a writable one was changed by its check.
func TestStoreCheckWritesNothing(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--tenant", "acme", "--data", dir}, &out, &out); err != nil {
		t.Fatal(err)
	}
	names := []string{bolt.FileName, bolt.JournalFileName}
	before := map[string][]byte{}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		before[name] = b
		os.Chmod(filepath.Join(dir, name), 0o444)
	}
	os.Chmod(dir, 0o555)
	defer os.Chmod(dir, 0o700)
	out.Reset()
	if err := run(context.Background(), []string{"store", "check", "--data", dir}, &out, &out); err != nil || !strings.Contains(out.String(), ": ok, 1 events in 1 streams") {
		t.Fatalf("store check of a read-only backup: %v\n%s", err, out.String())
	}
	for _, name := range names {
		if now, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(now, before[name]) {
			t.Errorf("store check changed %s", name)
		}
	}
}

// ledger verify --data reads a backup it may not write, and leaves it as
// it was: it opened the store to write, as serve does, so a read-only
// backup was refused and a writable one changed (its journal moved into
// events.db and zeroed) by a command that only reads.
func TestLedgerVerifyDataWritesNothing(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--tenant", "acme", "--data", dir}, &out, &out); err != nil {
		t.Fatal(err)
	}
	names := []string{bolt.FileName, bolt.JournalFileName}
	before := map[string][]byte{}
	for _, name := range names {
		before[name], _ = os.ReadFile(filepath.Join(dir, name))
		os.Chmod(filepath.Join(dir, name), 0o444)
	}
	os.Chmod(dir, 0o555)
	defer os.Chmod(dir, 0o700)
	out.Reset()
	if err := run(context.Background(), []string{"ledger", "verify", "--data", dir}, &out, &out); err != nil || !strings.Contains(out.String(), "0 handoffs, 0 events, 0 broken") {
		t.Fatalf("ledger verify of a read-only backup: %v\n%s", err, out.String())
	}
	for _, name := range names {
		if now, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(now, before[name]) {
			t.Errorf("ledger verify changed %s", name)
		}
	}
}

// A failure answered with a long body (a proxy's HTML error page in front
// of the server) is quoted cut short, with its length: the whole page was
// quoted in the error.
func TestLedgerVerifyOverHTTPQuotesALongBodyShort(t *testing.T) {
	page := "<html><body>" + strings.Repeat("<p>Bad Gateway: the upstream did not answer.</p>", 200) + "</body></html>"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte(page))
	}))
	defer srv.Close()
	var out bytes.Buffer
	err := run(context.Background(), []string{"ledger", "verify", "--url", srv.URL, "--key", "btn_sk_x", "h_x"}, &out, &out)
	if err == nil {
		t.Fatalf("verify against a 502 page: no error; said:\n%s", out.String())
	}
	msg := err.Error()
	if len(msg) > 600 || !strings.Contains(msg, fmt.Sprintf("(%d bytes in all)", len(page))) || !strings.Contains(msg, "502 Bad Gateway") {
		t.Fatalf("error of %d bytes: %s", len(msg), msg)
	}
}
