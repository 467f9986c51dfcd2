package http_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzConsoleRequests sends arbitrary queries, forms and Origin headers to
// the console's pages and forms, signed in (as an approver of tenant a)
// or not. "$CSRF" in a form is the session's CSRF token, which the fuzzer
// could not guess. Every answer is deliberate (never a 500); a private
// page is the sign-in page's 401 without a session; a form posted from
// another origin is a 403; a refused form (an error, or 303 to its
// refusal's page) appends nothing.
func FuzzConsoleRequests(f *testing.F) {
	const (
		signinPage, signin, inbox, handoff, trail, action = 0, 1, 2, 3, 4, 5
	)
	for _, s := range []struct {
		route               uint8
		signedIn            bool
		query, form, origin string
	}{
		{signinPage, false, "token=abc", "", ""},
		{signinPage, false, "token=%3Cscript%3E", "", ""},
		{signin, false, "", "token=nope", ""},
		{signin, false, "", "token=nope", "https://evil.example.net"},
		{signin, false, "", "token=%zz", "null"},
		{inbox, true, "state=approval&risk=high&executor=+ops-bot+&since=24h", "", ""},
		{inbox, true, "state=bogus&since=1y", "", ""},
		{inbox, false, "", "", ""},
		{handoff, true, "recorded=approved&seq=2&hash=x", "", ""},
		{handoff, true, "seq=%ff", "", ""},
		{trail, true, "", "", ""},
		{trail, false, "", "", ""},
		{action, true, "", "csrf=$CSRF&action=reject&reason=no&nonce=n1", "http://example.com"},
		{action, true, "", "csrf=$CSRF&action=review&verdict=verified", ""},
		{action, true, "", "csrf=$CSRF&action=launch", ""},
		{action, true, "", "csrf=wrong&action=approve", ""},
		{action, true, "", "csrf=$CSRF&action=approve&nonce=" + strings.Repeat("n", 65), "http://evil.example.com:80"},
		{action, false, "", "csrf=x&action=approve", ""},
	} {
		f.Add(s.route, s.signedIn, s.query, s.form, s.origin)
	}
	e := newEnv(f)
	id := e.contract(e.tenantA, nil)
	u := e.signIn("a", "alice", "approver")
	csrf := u.csrf()
	h := e.srv.Config.Handler
	routes := []struct{ method, path string }{
		{http.MethodGet, "/console/signin"},
		{http.MethodPost, "/console/signin"},
		{http.MethodGet, "/console/"},
		{http.MethodGet, "/console/handoffs/" + id},
		{http.MethodGet, "/console/handoffs/" + id + "/trail.json"},
		{http.MethodPost, "/console/handoffs/" + id + "/actions"},
	}
	f.Fuzz(func(t *testing.T, route uint8, signedIn bool, query, form, origin string) {
		e.t = t
		if !headerValue(origin) {
			t.Skip("not a header value a server would pass on")
		}
		which := int(route) % len(routes)
		r := routes[which]
		before, err := e.store.Head(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(r.method, r.path, strings.NewReader(strings.ReplaceAll(form, "$CSRF", csrf)))
		req.URL.RawQuery = query
		req.RequestURI = req.URL.RequestURI()
		if r.method == http.MethodPost {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if signedIn {
			req.AddCookie(&http.Cookie{Name: "baton_console", Value: u.cookie})
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != 503 {
			t.Fatalf("%s %s?%s with form %q answered %d: %s", r.method, r.path, query, form, rec.Code, rec.Body.String())
		}
		private := which != signinPage && which != signin
		if private && !signedIn && rec.Code != http.StatusUnauthorized {
			t.Fatalf("%s %s without a session answered %d", r.method, r.path, rec.Code)
		}
		// The test server's host is example.com: an origin that does not
		// name it is another site's.
		crossSite := origin != "" && !strings.Contains(origin, "example.com")
		if r.method == http.MethodPost && (signedIn || !private) && crossSite && rec.Code != http.StatusForbidden {
			t.Fatalf("%s %s from origin %q answered %d", r.method, r.path, origin, rec.Code)
		}
		// A refused form answers 303 to its page with the refusal held
		// (refused=), as a failure of another kind answers its status.
		refused := rec.Code == http.StatusSeeOther && strings.Contains(rec.Header().Get("Location"), "refused=")
		if rec.Code >= 400 || refused {
			evs, err := e.store.ReadAll(context.Background(), before, 10000)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if ev.Metadata.RequestID == rec.Header().Get("x-request-id") {
					t.Fatalf("%s %s answered %d but appended %s", r.method, r.path, rec.Code, ev.Type)
				}
			}
		}
	})
}
