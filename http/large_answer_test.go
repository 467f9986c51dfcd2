package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore/ledger"
	batonhttp "github.com/batonhq/baton/http"
)

// A client that asks for a large ledger or contract (many proofs of up to
// a MiB each) and stops reading does not hold the connection, and the
// answer's buffer, for ever: the answer is written under the same write
// deadline as a large model answer. Both were held until the client read
// again, so a few such clients held gigabytes.
func TestLargeLedgerAnswerEndsWhenClientStopsReading(t *testing.T) {
	t.Cleanup(batonhttp.SetModelWriteStall(200 * time.Millisecond))
	e := newEnv(t)
	id := e.contract(e.tenantA, nil)
	e.must(e.do("POST", "/v1/executions/"+id+"/approval", e.tenantA, approveBody()), 200)
	// Recorded through the ledger itself: the test front's body limit is
	// 64 KiB, a server's 1 MiB by default.
	svc := ledger.New(e.store, ledger.Options{})
	text := strings.Repeat("certbot renew: ok\n", 60_000/18)
	var arts []domain.Artifact
	for range 15 {
		arts = append(arts, domain.Artifact{Type: "log", Text: text})
	}
	call := ledger.Call{Principal: domain.Principal{KeyID: "key_test", Tenant: "a"}}
	for i := range 12 { // about 11 MB, far beyond the sockets' buffers
		_, err := svc.Handoffs.Handle(context.Background(), call, id, domain.ProofCommand{ExecutorRunID: "run-1", Status: "RUNNING",
			Proof: &domain.Proof{Summary: fmt.Sprintf("step %d", i), Artifacts: arts}, Request: domain.RequestRef{Kind: domain.KindProof, BodySHA256: fmt.Sprint(i)}})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The read models take a while over 11 MB (a 503 read_model_behind
	// meanwhile, under the race detector on two busy cores).
	for deadline := time.Now().Add(60 * time.Second); ; {
		r := e.do("GET", "/v1/executions/"+id+"/ledger", e.tenantA, nil)
		if r.status == 200 && len(r.raw) >= 10<<20 {
			break
		}
		if r.status != 503 || time.Now().After(deadline) {
			t.Fatalf("the ledger: %d, %d bytes", r.status, len(r.raw))
		}
	}
	for _, path := range []string{"/v1/executions/" + id + "/ledger", "/v1/handoff/contracts/" + id} {
		t.Run(path, func(t *testing.T) {
			d := net.Dialer{Control: smallReceiveBuffer}
			conn, err := d.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nx-api-key: %s\r\n\r\n", path, e.tenantA)
			conn.SetReadDeadline(time.Now().Add(60 * time.Second))
			first := make([]byte, 64<<10)
			if !readFirst(t, conn, first) {
				return
			}
			// Read nothing for well over the deadline: 11 started MiB of 200 ms.
			time.Sleep(4 * time.Second)
			conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			n, err := io.Copy(io.Discard, conn)
			n += int64(len(first))
			if err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("after %d bytes: %v (the connection was not closed)", n, err)
			}
			if n >= 10<<20 {
				t.Fatalf("the whole answer (%d bytes) waited for a client that stopped reading", n)
			}
		})
	}
}

// A generation whose answer is large (an upstream that ignored its token
// cap), asked with an Idempotency-Key, is written to a client that stops
// reading under the same deadline as without the key: the key's answer
// was written without one, and held the connection and the answer's
// buffer until the client read again.
func TestLargeIdempotentGenerationEndsWhenClientStopsReading(t *testing.T) {
	t.Cleanup(batonhttp.SetModelWriteStall(200 * time.Millisecond))
	big := `{"summary": "` + strings.Repeat("word ", 11<<20/5) + `", "keyPoints": ["a"]}`
	e := scriptedEnv(t, newScripted(t, big))
	body, _ := json.Marshal(genBody(map[string]any{"options": map[string]any{"maxAttempts": 1, "llm": map[string]any{"model": "openai:gpt-4o-mini"}}}))
	d := net.Dialer{Control: smallReceiveBuffer}
	conn, err := d.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/generate HTTP/1.1\r\nHost: x\r\nx-api-key: %s\r\nIdempotency-Key: big-1\r\nContent-Length: %d\r\n\r\n%s", e.tenantA, len(body), body)
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	first := make([]byte, 64<<10)
	if !readFirst(t, conn, first) {
		return
	}
	if !strings.HasPrefix(string(first), "HTTP/1.1 200") {
		t.Fatalf("%.200s", first)
	}
	time.Sleep(4 * time.Second) // well over 12 started MiB of 200 ms
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	n, err := io.Copy(io.Discard, conn)
	n += int64(len(first))
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("after %d bytes: %v (the connection was not closed)", n, err)
	}
	if n >= 11<<20 {
		t.Fatalf("the whole answer (%d bytes) waited for a client that stopped reading", n)
	}
}

// readFirst reads the answer's first bytes. On a machine so loaded that
// the write deadline passed before the server's first write, the server
// closes the connection having sent nothing (io.EOF): the deadline did
// its work, and there is nothing further to check.
func readFirst(t *testing.T, conn net.Conn, first []byte) bool {
	t.Helper()
	n, err := io.ReadFull(conn, first)
	if n == 0 && errors.Is(err, io.EOF) {
		t.Logf("the connection was closed before the first byte: the write deadline passed first")
		return false
	}
	if err != nil {
		t.Fatalf("after %d bytes: %v", n, err)
	}
	return true
}
