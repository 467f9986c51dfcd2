package http_test

import (
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	batonhttp "github.com/batonhq/baton/http"
)

// TestEventsClientStoppedReading: a client that stops reading, its
// connection open, loses its stream once it has taken nothing for the
// stall bound, though its socket's buffers still take every ping (on a
// quiet stream no write ever blocks).
func TestEventsClientStoppedReading(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the socket's progress is read on Linux")
	}
	envEventsPing = 20 * time.Millisecond
	t.Cleanup(func() { envEventsPing = 0 })
	defer batonhttp.SetEventsWriteStall(300 * time.Millisecond)()
	e := newEnv(t)
	front := batonhttp.NewServer(batonhttp.Config{Store: e.store, Projections: e.proj, Log: zerolog.New(testLogWriter(t)).Level(zerolog.ErrorLevel), Version: "test",
		EventsPing: envEventsPing, EventStreams: envEventStreams, MaxBody: 64 << 10})
	srv := httptest.NewUnstartedServer(front.Handler())
	srv.Config.ConnContext = batonhttp.ConnContext
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		front.Close()
	})

	// A client that reads, beside it, keeps its stream.
	reader := mustOpen(t, srv.URL, e.tenantA, "")
	defer reader.close()

	// A client with a small receive buffer that sends its request and
	// reads nothing.
	d := net.Dialer{Control: smallReceiveBuffer}
	conn, err := d.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/events HTTP/1.1\r\nHost: baton\r\nx-api-key: %s\r\n\r\n", e.tenantA)
	waitStreams := func(n int) {
		t.Helper()
		deadline := time.Now().Add(guard)
		for batonhttp.OpenEventStreams(front, "a") != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d streams open, want %d", batonhttp.OpenEventStreams(front, "a"), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitStreams(2)
	// More than its buffer can hold, then a quiet stream.
	id := e.contract(e.tenantA, nil)
	e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
	for range 3 {
		body := proofBody("run-1")
		body["proof"].(map[string]any)["artifacts"] = []any{map[string]any{"type": "log", "text": strings.Repeat("certbot renew: ok\n", 2000)}}
		e.must(e.post(id, "proof", e.tenantA, body), 200)
	}
	// It ends within the bound and a ping or two, and its connection
	// closes: what it had not read ends in EOF, not a kept-alive socket.
	waitStreams(1)
	conn.SetReadDeadline(time.Now().Add(guard))
	if n, err := io.Copy(io.Discard, conn); err != nil {
		t.Fatalf("the stalled client read %d bytes, then %v; want the connection closed", n, err)
	}
	// The reader's goes on.
	time.Sleep(400 * time.Millisecond)
	for range 6 { // the contract, its approval, the start and three proofs
		reader.next(t)
	}
	e.must(e.post(id, "result", e.tenantA, resultBody("run-1")), 200)
	reader.next(t)
	if n := batonhttp.OpenEventStreams(front, "a"); n != 1 {
		t.Fatalf("%d streams open, want the reader's", n)
	}
}
