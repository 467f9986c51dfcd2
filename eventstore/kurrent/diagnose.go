package kurrent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
)

// diagnosedError is a failed connection told by what answers there; it
// wraps the client's error.
type diagnosedError struct {
	msg string
	err error
}

func (e *diagnosedError) Error() string { return e.msg }
func (e *diagnosedError) Unwrap() error { return e.err }

// mismatch is what the client says when what answers is not a KurrentDB
// node of the TLS setting given, or nothing answers: the failures diagnose
// looks into. Others (a certificate, a password) say enough themselves.
var mismatch = []string{
	"connection refused",
	"first record does not look like a TLS handshake", // TLS on, a plain server
	"error reading server preface",                    // tls=false, an HTTP/1 or TLS server
	"http2: frame too large",
}

// diagnose says what answers at the endpoints of conf when the first
// connection failed with err: the client says only that discovery gave
// up, in gRPC's words ("tls: first record does not look like a TLS
// handshake", "http2: frame too large"), which name neither the address
// nor what is there. It returns "" when it finds nothing to say.
func diagnose(ctx context.Context, conf esdb.Configuration, err error) string {
	if !slices.ContainsFunc(mismatch, func(m string) bool { return strings.Contains(err.Error(), m) }) {
		return ""
	}
	var addrs []string
	switch {
	case conf.DnsDiscover:
		return ""
	case conf.Address != "" && len(conf.GossipSeeds) == 0:
		addrs = []string{conf.Address}
	default:
		for _, ep := range conf.GossipSeeds {
			addrs = append(addrs, net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))))
		}
	}
	for _, addr := range addrs {
		if what := probe(ctx, addr, !conf.DisableTLS); what != "" {
			return what
		}
	}
	return ""
}

// probe connects to addr without TLS, sends an HTTP/1.1 request and reads
// the start of the answer: an HTTP/1 status line (a web server, or a
// KurrentDB node run insecure, which serves its UI on the same port), an
// HTTP/2 frame (a server of gRPC without TLS) or a TLS alert.
func probe(ctx context.Context, addr string, wantTLS bool) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Sprintf("nothing listens at %s (connection refused): start KurrentDB there, or check the host and port (KurrentDB's is 2113 unless set)", addr)
	}
	if err != nil {
		return ""
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr)
	r := bufio.NewReader(conn)
	head, _ := r.Peek(5)
	switch {
	case bytes.HasPrefix(head, []byte("HTTP/")):
		found := "a plain HTTP server"
		if resp, err := http.ReadResponse(r, nil); err == nil {
			body := make([]byte, 256)
			n, _ := io.ReadFull(resp.Body, body)
			resp.Body.Close()
			if bytes.Contains(body[:n], []byte("HTTP request to an HTTPS server")) {
				// Go's TLS servers answer a plain request so.
				if wantTLS {
					return ""
				}
				return fmt.Sprintf("a server that speaks TLS answers at %s: drop tls=false from the connection string (KurrentDB runs with TLS unless started insecure)", addr)
			}
			found += " (" + resp.Proto + " " + resp.Status
			if s := resp.Header.Get("Server"); s != "" {
				found += ", Server: " + s
			}
			found += ")"
		}
		if wantTLS {
			return fmt.Sprintf("%s answers at %s, without TLS: if it is a KurrentDB node run insecure, add tls=false to the connection string (esdb://%s?tls=false for this one node); if not, no KurrentDB listens there: check the host and port", found, addr, addr)
		}
		return fmt.Sprintf("%s answers at %s, not KurrentDB's gRPC (HTTP/2): no KurrentDB listens there; check the host and port (KurrentDB's is 2113 unless set)", found, addr)
	case len(head) >= 3 && head[0] == 0x15 && head[1] == 0x03:
		if !wantTLS {
			return fmt.Sprintf("a server that speaks TLS answers at %s: drop tls=false from the connection string (KurrentDB runs with TLS unless started insecure)", addr)
		}
	case len(head) >= 4 && head[3] == 0x04 && !wantTLS:
		// An HTTP/2 SETTINGS frame, the first a server sends: the TLS
		// setting is right and the failure lies elsewhere.
	case len(head) >= 4 && head[3] == 0x04:
		return fmt.Sprintf("a server of HTTP/2 without TLS (gRPC) answers at %s: if it is a KurrentDB node run insecure, add tls=false to the connection string (esdb://%s?tls=false for this one node)", addr, addr)
	case len(head) > 0:
		return fmt.Sprintf("something that is not KurrentDB answers at %s (its first bytes are %q): check the host and port", addr, strings.ToValidUTF8(string(head), "?"))
	}
	return ""
}
