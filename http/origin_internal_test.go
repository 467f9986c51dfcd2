package http

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A console form's Origin must be the console's own, scheme included: with
// a public URL configured, plain http on the same host is another site.
func TestOwnOriginComparesTheScheme(t *testing.T) {
	plain := httptest.NewRequest("POST", "http://baton.example/console/signin", nil)
	served := httptest.NewRequest("POST", "https://baton.example/console/signin", nil)
	served.TLS = &tls.ConnectionState{}
	proxied := httptest.NewRequest("POST", "http://baton.example/console/signin", nil)
	proxied.Header.Set("X-Forwarded-Proto", "https")
	for _, c := range []struct {
		origin, consoleURL, came string
		want                     bool
	}{
		{"http://baton.example", "", "plain", true},
		{"HTTP://Baton.Example", "", "plain", true},
		{"https://baton.example", "", "plain", false},
		{"https://baton.example", "", "tls", true},
		{"http://baton.example", "", "tls", false},
		{"https://baton.example", "", "proxied", true},
		{"http://baton.example", "", "proxied", false},
		{"http://baton.example:8080", "", "plain", false},
		{"null", "", "plain", false},
		{"http://evil.example", "", "plain", false},
		{"http://user@baton.example", "", "plain", false},
		{"https://baton.example", "https://baton.example", "plain", true},
		{"http://baton.example", "https://baton.example", "plain", false},
		{"https://baton.example:8443", "https://baton.example", "plain", false},
		{"https://console.example", "https://console.example/", "plain", true},
	} {
		req := map[string]*http.Request{"plain": plain, "tls": served, "proxied": proxied}[c.came]
		if got := ownOrigin(c.origin, req, c.consoleURL); got != c.want {
			t.Errorf("origin %q, console URL %q, came %s: own %v, want %v", c.origin, c.consoleURL, c.came, got, c.want)
		}
	}
}
