package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// serve caps the connections one client holds open
// (--max-connections-per-client): idle connections kept past the cap are
// refused with 429, where one client's idle connections were held for the
// idle limit, however many it opened.
func TestServeCapsAClientsConnections(t *testing.T) {
	addr, _ := serveFor(t, "--max-connections-per-client", "2")
	get := func() (int, net.Conn) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, c
	}
	for range 2 {
		if status, _ := get(); status != 200 {
			t.Fatalf("within the cap: %d", status)
		}
	}
	if status, _ := get(); status != 429 {
		t.Fatalf("past the cap: %d, want 429", status)
	}
	if err := run(t.Context(), []string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--max-connections-per-client", "-1"}, io.Discard, io.Discard); err == nil {
		t.Fatal("a negative cap was taken")
	}
}
