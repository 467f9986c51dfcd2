package http_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/batonhq/baton/gateway"
)

// listHasToken is RFC 9110's reading of a list header (section 5.6.1):
// elements split at commas, optional whitespace (space and tab) around
// them, and RFC 6455's comparison of its tokens (section 4.2.1): ASCII
// case-insensitive.
func listHasToken(values []string, token string) bool {
	for _, v := range values {
		for _, el := range strings.Split(v, ",") {
			el = strings.Trim(el, " \t")
			if len(el) != len(token) {
				continue
			}
			same := true
			for i := range len(el) {
				if lowerASCII(el[i]) != lowerASCII(token[i]) {
					same = false
					break
				}
			}
			if same {
				return true
			}
		}
	}
	return false
}

func lowerASCII(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + ('a' - 'A')
	}
	return b
}

// FuzzWebSocketHandshake sends arbitrary Upgrade and Connection headers
// with a method a POST-only path does not take: a GET is a 426 exactly
// when it is a WebSocket handshake (Upgrade holds the token websocket and
// Connection the token upgrade, read as RFC 9110 and RFC 6455 read them),
// and anything else a 405; never anything else.
func FuzzWebSocketHandshake(f *testing.F) {
	for _, s := range []struct {
		which               uint8
		upgrade, connection string
	}{
		{0, "websocket", "Upgrade"},
		{0, "websocket", "keep-alive, Upgrade"},
		{1, "WebSocket", "upgrade"},
		{2, "h2c, websocket", " UPGRADE ,close"},
		{3, "websocket", ""},
		{0, "", "Upgrade"},
		{0, "websocket/13", "Upgrade"},
		{1, "web socket", "Up grade"},
		{2, "websocket,", ",upgrade,"},
		{0, "\twebsocket\t", "upgrade"},
		{4, "websocket", "Upgrade"},
		{5, "websocket", "Upgrade"},
	} {
		f.Add(s.which, s.upgrade, s.connection)
	}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		f.Fatal(err)
	}
	e := newEnvWith(f, cat)
	h := e.srv.Config.Handler
	// POST-only paths, and a method each: GET (a handshake's) on the
	// first four.
	routes := []struct{ method, path string }{
		{http.MethodGet, "/v1/responses"},
		{http.MethodGet, "/v1/messages"},
		{http.MethodGet, "/v1/chat/completions"},
		{http.MethodGet, "/v1/models/sync"},
		{http.MethodPut, "/v1/responses"},
		{http.MethodDelete, "/v1/messages"},
	}
	f.Fuzz(func(t *testing.T, which uint8, upgrade, connection string) {
		e.t = t
		if !headerValue(upgrade) || !headerValue(connection) {
			t.Skip("not a header value a server would pass on")
		}
		r := routes[int(which)%len(routes)]
		req := httptest.NewRequest(r.method, r.path, nil)
		req.Header.Set("x-api-key", e.tenantA)
		// A comma-separated list may come as several lines, too.
		for _, v := range strings.Split(upgrade, "\t\t") {
			req.Header.Add("Upgrade", v)
		}
		req.Header.Add("Connection", connection)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		want := http.StatusMethodNotAllowed
		if r.method == http.MethodGet && listHasToken(req.Header.Values("Upgrade"), "websocket") && listHasToken(req.Header.Values("Connection"), "upgrade") {
			want = http.StatusUpgradeRequired
		}
		if rec.Code != want {
			t.Fatalf("%s %s with Upgrade %q, Connection %q answered %d, want %d: %s", r.method, r.path, req.Header.Values("Upgrade"), connection, rec.Code, want, rec.Body.String())
		}
	})
}
