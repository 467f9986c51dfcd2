package connlimit

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// A client holds at most Max connections: the next is answered 429 and
// closed, and closing one lets the next in. Served by net/http, as serve
// does.
func TestListenerCapsAClientsConnections(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := New(raw, 3).(*Listener)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	dial := func() net.Conn {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	get := func(c net.Conn) *http.Response {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var held []net.Conn
	for range 3 {
		c := dial()
		if r := get(c); r.StatusCode != 200 {
			t.Fatalf("within the cap: %d", r.StatusCode)
		}
		held = append(held, c) // kept open, idle
	}
	over := dial()
	r := get(over)
	body, _ := io.ReadAll(r.Body)
	if r.StatusCode != 429 || r.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), `"code":"too_many_connections"`) {
		t.Fatalf("over the cap: %d %v %s", r.StatusCode, r.Header, body)
	}
	if _, err := over.Read(make([]byte, 1)); err == nil {
		t.Fatal("the refused connection stays open")
	}
	client := netip.MustParsePrefix("127.0.0.1/32")
	held[0].Close()
	deadline := time.Now().Add(30 * time.Second)
	for ln.Open(client) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d open after one closed, want 2", ln.Open(client))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r := get(dial()); r.StatusCode != 200 {
		t.Fatalf("after one closed: %d", r.StatusCode)
	}
}

// A client is an IPv4 address or an IPv6 /64.
func TestClient(t *testing.T) {
	for addr, want := range map[string]string{
		"192.0.2.7:443":                 "192.0.2.7/32",
		"[::ffff:192.0.2.7]:443":        "192.0.2.7/32",
		"[2001:db8:1:2:3:4:5:6]:80":     "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1%eth0]:1": "2001:db8:1:2::/64",
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := Client(a); !ok || got.String() != want {
			t.Errorf("%s: %v %v, want %s", addr, got, ok, want)
		}
	}
	if _, ok := Client(&net.UnixAddr{Name: "/tmp/s", Net: "unix"}); ok {
		t.Error("a Unix socket counted")
	}
}

// Without a cap the listener is the one given.
func TestNoCap(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if New(raw, 0) != raw {
		t.Fatal("wrapped without a cap")
	}
}

// A counted connection still half-closes, as net/http does after an
// answer it sends before reading a body.
func TestConnCloseWrite(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := New(raw, 2)
	defer ln.Close()
	go func() {
		c, _ := net.Dial("tcp", raw.Addr().String())
		if c != nil {
			defer c.Close()
			io.ReadAll(c)
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		t.Fatal("no half-close")
	}
}
