package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/eventstore/bolt"
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
	k, err := batonhttp.CreateKey(context.Background(), store, "t", true, "", "test")
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
}
