// Package connlimit caps the connections one client holds open at once.
//
// Without a cap, one client that opens connections and leaves them idle
// holds a goroutine, buffers and a file descriptor for each until the
// idle limit ends it: enough of them take the process's descriptors (the
// store's files then fail) or its memory, for every other client.
package connlimit

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Listener is a net.Listener that refuses a connection from a client that
// holds Max open already: it is answered 429 and closed, and Accept goes
// on to the next. A client is an IPv4 address, or an IPv6 /64 (what one
// subscriber is given).
type Listener struct {
	net.Listener
	Max int
	// OnRefused, when set, hears each refused client (for a log line).
	OnRefused func(client netip.Prefix)

	mu   sync.Mutex
	open map[netip.Prefix]int
}

// New caps ln's connections at max a client (0: no cap, ln itself).
func New(ln net.Listener, max int) net.Listener {
	if max <= 0 {
		return ln
	}
	return &Listener{Listener: ln, Max: max, open: map[netip.Prefix]int{}}
}

// Client is the client a remote address counts under; ok is false for an
// address that is not IP (a Unix socket), which is not counted.
func Client(addr net.Addr) (netip.Prefix, bool) {
	var a netip.Addr
	if ta, ok := addr.(*net.TCPAddr); ok {
		a = ta.AddrPort().Addr() // what a TCP listener gives: no string made and read back
	} else {
		ap, err := netip.ParseAddrPort(addr.String())
		if err != nil {
			return netip.Prefix{}, false
		}
		a = ap.Addr()
	}
	if !a.IsValid() {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	if a.Is4() {
		return netip.PrefixFrom(a, 32), true
	}
	p, _ := a.WithZone("").Prefix(64)
	return p, true
}

func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client, ok := Client(c.RemoteAddr())
		if !ok {
			return c, nil
		}
		l.mu.Lock()
		n := l.open[client]
		if n >= l.Max {
			l.mu.Unlock()
			if l.OnRefused != nil {
				l.OnRefused(client)
			}
			go refuse(c, l.Max)
			continue
		}
		l.open[client] = n + 1
		l.mu.Unlock()
		return &conn{Conn: c, l: l, client: client}, nil
	}
}

func (l *Listener) release(client netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[client] <= 1 {
		delete(l.open, client)
		return
	}
	l.open[client]--
}

// Open is how many connections client holds (for tests and metrics).
func (l *Listener) Open(client netip.Prefix) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[client]
}

// refuse answers a connection over the cap before reading it: HTTP/1.1
// lets a server answer early, and a client reads a 429 it can act on
// rather than a reset.
func refuse(c net.Conn, max int) {
	defer c.Close()
	body := fmt.Sprintf(`{"type":"urn:baton:problem:too_many_connections","title":"Too Many Requests","status":429,"code":"too_many_connections","detail":"this client holds %d connections open to the server, the most one client may; reuse them (keep-alive) or close some"}`, max)
	c.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/problem+json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

type conn struct {
	net.Conn
	l      *Listener
	client netip.Prefix
	once   sync.Once
}

// CloseWrite half-closes a TCP connection, as net/http does after an
// answer it sends before the request's body (a 413): the client reads the
// answer before the connection closes. Without it the wrapper hid it.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// NetConn is the connection it wraps: what the front asks of the socket
// (how much of an event stream its client has taken) is the socket's.
func (c *conn) NetConn() net.Conn { return c.Conn }

func (c *conn) Close() error {
	c.once.Do(func() { c.l.release(c.client) })
	return c.Conn.Close()
}
