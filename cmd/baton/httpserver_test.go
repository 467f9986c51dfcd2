package main

import (
	"net/http"
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
