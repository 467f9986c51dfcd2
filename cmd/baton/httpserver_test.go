package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

// The server bounds how long a client may take over its headers and how
// long an idle connection is kept, and sets no whole-request timeout, which
// would cut a streamed answer.
func TestHTTPServerTimeouts(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler())
	if srv.ReadHeaderTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Fatalf("ReadHeaderTimeout %v, IdleTimeout %v: both must be set", srv.ReadHeaderTimeout, srv.IdleTimeout)
	}
	if srv.ReadTimeout != 0 || srv.WriteTimeout != 0 {
		t.Fatalf("ReadTimeout %v, WriteTimeout %v: they would cut streamed answers", srv.ReadTimeout, srv.WriteTimeout)
	}
}

// A request's headers are bounded well below Go's default of 1 MiB, which
// let a client with no key hold about 1 MB on each connection for the
// header timeout: 100 KB of headers are 431 and the connection closed,
// while 32 KB (a browser's cookies, many times over) are served.
func TestHTTPServerHeaderBound(t *testing.T) {
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	status := func(headerBytes int) int {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var b strings.Builder
		b.WriteString("GET / HTTP/1.1\r\nHost: x\r\n")
		for i := 0; b.Len() < headerBytes; i++ {
			fmt.Fprintf(&b, "X-Pad-%d: %s\r\n", i, strings.Repeat("a", 1000))
		}
		b.WriteString("\r\n")
		go c.Write([]byte(b.String())) // the server may answer before it has read it all
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status(32 << 10); got != http.StatusNoContent {
		t.Fatalf("32 KB of headers: %d", got)
	}
	if got := status(100 << 10); got != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("100 KB of headers: %d", got)
	}
}
