package http

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// A decision the server could not answer (503) says whether it was
// recorded and leads back to the handoff, whose page shows it if it was.
func TestUnavailableActionForPerson(t *testing.T) {
	for code, recorded := range map[string]string{"busy": "Your decision was not recorded.", "store_unavailable": "Your decision may or may not have been recorded."} {
		p := Problem{Status: 503, Code: code, Title: "Service Unavailable", Detail: "retry with the same Idempotency-Key"}
		again := unavailableForPerson(&p, httptest.NewRequest("POST", "/console/handoffs/h-1/actions", nil))
		if again.URL != "/console/handoffs/h-1" || !strings.Contains(p.Detail, recorded) || strings.Contains(p.Detail, "Idempotency") || p.Code != code {
			t.Fatalf("%s: %+v %+v", code, again, p)
		}
	}
	p := Problem{Status: 503, Code: "store_unavailable"}
	if unavailableForPerson(&p, httptest.NewRequest("POST", "/console/signin", nil)); !strings.Contains(p.Detail, "Open your sign-in link again in a moment") {
		t.Fatalf("sign-in: %+v", p)
	}
}

// A 500 (a fault on the server's side) is told to a person in their words,
// with what may have changed, what to do, and the request id to quote; it
// said "Internal Server Error" and "The server failed on this request; it
// has been logged.". A template that fails gives such a page too, not the
// plain text "The page could not be rendered.".
func TestConsoleFailureInAPersonsWords(t *testing.T) {
	s := &Server{log: zerolog.Nop()}
	req := func(method, path string) *http.Request {
		r := httptest.NewRequest(method, path, nil)
		return r.WithContext(context.WithValue(r.Context(), requestKey, &requestState{id: "req_<b>1</b>"}))
	}
	for _, c := range []struct{ method, path, said, link string }{
		{"GET", "/console/handoffs/h-1?x=1", "Nothing was changed. Reload the page.", `<a href="/console/handoffs/h-1?x=1">Reload this page</a>`},
		{"POST", "/console/handoffs/h-1/actions", "Your decision may or may not have been recorded.", `<a href="/console/handoffs/h-1">Open the handoff again</a>`},
		{"POST", "/console/signin", "Open your sign-in link again", ""},
	} {
		w := httptest.NewRecorder()
		s.consoleError(w, req(c.method, c.path), errors.New("boom"))
		page := w.Body.String()
		for _, want := range []string{"<h1>Something went wrong</h1>", c.said, c.link, `data-code="internal_error"`,
			`Request id: <code id="request-id">req_&lt;b&gt;1&lt;/b&gt;</code>`, "quoting the request id below"} {
			if w.Code != 500 || !strings.Contains(page, want) {
				t.Fatalf("%s %s: %d, the page lacks %q: %s", c.method, c.path, w.Code, want, page)
			}
		}
		for _, api := range []string{"Internal Server Error", "has been logged", "boom"} {
			if strings.Contains(page, api) {
				t.Fatalf("%s %s: the page says %q: %s", c.method, c.path, api, page)
			}
		}
	}
	w := httptest.NewRecorder()
	s.renderConsole(w, req("GET", "/console/"), http.StatusOK, "no-such-page", map[string]any{})
	page := w.Body.String()
	if w.Code != 500 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") || !strings.Contains(page, "<h1>Something went wrong</h1>") ||
		!strings.Contains(page, "Nothing was changed. Reload the page.") || !strings.Contains(page, `<code id="request-id">req_&lt;b&gt;1&lt;/b&gt;</code>`) {
		t.Fatalf("a template that failed: %d %q %s", w.Code, w.Header().Get("Content-Type"), page)
	}
}
