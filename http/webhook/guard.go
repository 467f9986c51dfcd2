package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/batonhq/baton/domain"
)

// ErrBlockedAddress is the refusal of a connection to an internal
// address (see domain.BlockedWebhookAddr).
var ErrBlockedAddress = errors.New("webhook: refusing to connect to a private, loopback, link-local or otherwise internal address")

// guardControl refuses, at connect time, every address deliveries may not
// go to. It runs on the address the socket is about to connect to, after
// name resolution, so a name that resolves to an internal address (DNS
// rebinding included) is refused like the literal address.
func guardControl(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q", ErrBlockedAddress, address)
	}
	a, err := netip.ParseAddr(host)
	if err != nil || domain.BlockedWebhookAddr(a) {
		return fmt.Errorf("%w: %s", ErrBlockedAddress, host)
	}
	return nil
}

// NewClient is the HTTP client deliveries are sent with: no proxy (a
// proxy would connect on Baton's behalf where the guard cannot see), no
// redirects followed (a 3xx is a failed attempt), answers' headers read
// up to 64 KiB, and unless
// allowPrivate, connections to internal addresses refused at connect
// time.
func NewClient(allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = guardControl
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 0, // the attempt's own timeout bounds it
		// An answer's headers are read up to 64 KiB, as its body is: the
		// default, 10 MB, let each receiver make each attempt hold tens
		// of megabytes.
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
