package main

import (
	"net/http"
	"time"

	batonhttp "github.com/batonhq/baton/http"
)

// Connection timeouts of `baton serve` (docs/operations.md, Limits). The
// body's own deadline is the front's (30 s, set per request and lifted once
// the body is read). There is no ReadTimeout or WriteTimeout: either would
// cut a streamed model answer that runs for minutes.
const (
	readHeaderTimeout = 10 * time.Second  // a client that stops inside its headers
	idleTimeout       = 120 * time.Second // a kept-alive connection with no next request
	// maxHeaderBytes bounds a request's line and headers (Go adds 4 KiB):
	// Go's default of 1 MiB let a client with no key hold about 1 MB of
	// memory on every connection it opened for the header timeout (400
	// connections: about 350 MB). SDKs send a few KB; a browser's cookies
	// fit too.
	maxHeaderBytes = 64 << 10
)

// newHTTPServer is the HTTP server serve runs the front on.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		// An event stream reads its socket's progress from its context.
		ConnContext: batonhttp.ConnContext,
	}
}
