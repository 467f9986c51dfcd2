package kurrent_test

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/eventstore/kurrent"
	"github.com/batonhq/baton/eventstore/kurrent/kurrenttest"
)

// A connection string that leads to something other than KurrentDB (a web
// server, nothing, a node whose TLS setting is the other one) fails with a
// message naming the connection string and what answers there: the
// client's own words were a gRPC error ("tls: first record does not look
// like a TLS handshake", "http2: frame too large") naming neither.
func TestOpenSaysWhatAnswersWhereKurrentDBWasExpected(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "a-web-server/1.0")
		w.Write([]byte("<html>hello</html>"))
	}))
	defer web.Close()
	webTLS := httptest.NewUnstartedServer(http.NotFoundHandler())
	webTLS.Config.ErrorLog = log.New(io.Discard, "", 0) // the client's plain requests
	webTLS.EnableHTTP2 = true                           // offers h2, as a node does
	webTLS.StartTLS()
	defer webTLS.Close()
	double := startDouble(t, kurrenttest.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	none := ln.Addr().String()
	ln.Close()
	host := func(u string) string { return strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://") }
	for _, tt := range []struct {
		url  string
		want []string
	}{
		{"esdb://" + host(web.URL) + "?tls=false", []string{"a plain HTTP server (HTTP/1.1 200 OK, Server: a-web-server/1.0) answers at " + host(web.URL), "not KurrentDB's gRPC"}},
		{"esdb://" + host(web.URL), []string{"a plain HTTP server", "without TLS", "tls=false"}},
		{"esdb://" + host(webTLS.URL) + "?tls=false", []string{"speaks TLS answers at " + host(webTLS.URL), "drop tls=false"}},
		{"esdb://" + none + "?tls=false", []string{"nothing listens at " + none}},
		{"esdb://" + double.Addr(), []string{"HTTP/2 without TLS", "add tls=false"}},
		// A TLS server whose certificate is not trusted: the client's
		// words say it, and no probe (whose plain request a TLS server
		// may answer in plain HTTP) speaks over them.
		{"esdb://" + host(webTLS.URL), []string{"certificate"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		s, err := kurrent.Open(ctx, kurrent.Config{URL: tt.url})
		cancel()
		if err == nil {
			s.Close()
			t.Fatalf("%s: opened", tt.url)
		}
		msg := err.Error()
		if !strings.Contains(msg, "connect to "+tt.url+": ") || strings.Contains(msg, "rpc error") != (tt.want[0] == "certificate") {
			t.Errorf("%s: %v", tt.url, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q does not say %q", tt.url, msg, w)
			}
		}
	}
}
