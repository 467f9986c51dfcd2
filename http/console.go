package http

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gorilla/mux"
	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/domain/contextpack"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/projections"
)

// The console (docs/console.md): server-rendered pages at /console/ for
// the people who approve, review and audit, signed in by a one-time link
// (never an API key in the browser), acting through the same ledger
// services as the API with themselves as the actor.

//go:embed console/templates/*.html console/static/*
var consoleFS embed.FS

const (
	consoleCookie = "baton_console"
	// consoleCSP: no inline script or style, nothing from elsewhere, never
	// framed.
	consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	// inboxShown bounds the items of each queue on a page (the first to
	// fall due, then the oldest): 1,500 pending made a page of 800 KB that
	// every live update fetched again.
	inboxShown = 100
)

var consoleTemplates = template.Must(template.New("").Funcs(template.FuncMap{
	"ago":      ago,
	"ts":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"tsp":      func(t *time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"short":    func(h string) string { return shortHash(h) },
	"artifact": renderArtifact,
	"pretty":   prettyJSON,
	"plural":   plural,
	"fold":     fold,
	"shown":    shownText,
	"dict":     func(now time.Time, it inboxItem) map[string]any { return map[string]any{"Now": now, "Item": it} },
	"pages": func(q inboxQueue, links map[string]string, name, order string) map[string]any {
		return map[string]any{"Q": q, "Name": name, "Order": order, "Size": inboxPageSize,
			"Next": links[q.Param+"Next"], "First": links[q.Param+"First"]}
	},
}).ParseFS(consoleFS, "console/templates/*.html"))

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}

// consoleSessionKey holds the request's console session.
const consoleSessionKey ctxKey = iota + 200

type consoleSession struct {
	ledger.ConsoleSession
	Token string // the cookie's value, for the CSRF token
}

func sessionOf(ctx context.Context) consoleSession {
	s, _ := ctx.Value(consoleSessionKey).(consoleSession)
	return s
}

// CSRF is the form token of the session: derived from the cookie's
// secret, which a page of another site can neither read nor guess, so any
// replica can check it without a key of its own.
func (c consoleSession) CSRF() string {
	sum := sha256.Sum256([]byte("baton.console.csrf:" + c.Token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func (c consoleSession) CanApprove() bool { return c.Role == domain.RoleApprover }
func (c consoleSession) CanReview() bool  { return c.Role == domain.RoleVerifier }

func (s *Server) routeConsole(rt *mux.Router) {
	static, _ := fs.Sub(consoleFS, "console/static")
	fileServer := http.FileServer(http.FS(static))
	files := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") || r.URL.Path == "" {
			http.NotFound(w, r) // no listings
			return
		}
		fileServer.ServeHTTP(w, r)
	})
	rt.PathPrefix("/console/static/").Handler(consoleHeaders(false, http.StripPrefix("/console/static/", files))).Methods(http.MethodGet)
	rt.Handle("/console", http.RedirectHandler("/console/", http.StatusMovedPermanently)).Methods(http.MethodGet)
	rt.Handle("/console/signin", consoleHeaders(true, http.HandlerFunc(s.consoleSigninPage))).Methods(http.MethodGet)
	rt.Handle("/console/signin", consoleHeaders(true, http.HandlerFunc(s.consoleSignin))).Methods(http.MethodPost)
	rt.Handle("/console/signout", consoleHeaders(true, s.withSession(s.consoleSignout))).Methods(http.MethodPost)
	rt.Handle("/console/", consoleHeaders(true, s.withSession(s.consoleInbox))).Methods(http.MethodGet)
	rt.Handle("/console/events", consoleHeaders(true, s.withSession(s.consoleEvents))).Methods(http.MethodGet)
	rt.Handle("/console/handoffs/{handoffId}", consoleHeaders(true, s.withSession(s.consoleHandoff))).Methods(http.MethodGet)
	rt.Handle("/console/handoffs/{handoffId}/trail.json", consoleHeaders(true, s.withSession(s.consoleTrail))).Methods(http.MethodGet)
	rt.Handle("/console/handoffs/{handoffId}/actions", consoleHeaders(true, s.withSession(s.consoleAction))).Methods(http.MethodPost)
	// The forms' address opened as a page (a 403's address reloaded or
	// copied without JavaScript) shows the handoff, not a 405.
	rt.Handle("/console/handoffs/{handoffId}/actions", consoleHeaders(true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.TrimSuffix(r.URL.EscapedPath(), "/actions"), http.StatusSeeOther)
	}))).Methods(http.MethodGet)
	// So does sign out's: a sign-out's answer or refusal reloaded without
	// JavaScript (which replaces that address) leads to the inbox, which
	// says whether this browser is still signed in.
	rt.Handle("/console/signout", consoleHeaders(true, http.RedirectHandler("/console/", http.StatusSeeOther))).Methods(http.MethodGet)
}

// consoleHeaders sets the console's security headers; private pages are
// never cached.
func consoleHeaders(private bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setConsoleHeaders(w.Header(), private)
		h.ServeHTTP(w, r)
	})
}

// setConsoleHeaders sets them on hd; the router's own answers under
// /console/ (no such page, a wrong method) take them too.
func setConsoleHeaders(hd http.Header, private bool) {
	hd.Set("Content-Security-Policy", consoleCSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	if private {
		hd.Set("Cache-Control", "no-store")
	} else {
		hd.Set("Cache-Control", "public, max-age=300")
	}
}

// withSession admits a request carrying a live session cookie, with the
// signed-in person as its principal; anyone else gets the sign-in page
// (401), or a plain 401 on the event stream and the JSON download.
func (s *Server) withSession(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(consoleCookie)
		var sess ledger.ConsoleSession
		if err == nil {
			sess, err = s.ledger.Console.Session(r.Context(), c.Value)
		}
		if err != nil {
			if !errors.Is(err, ledger.ErrNoSession) && !errors.Is(err, http.ErrNoCookie) {
				s.consoleError(w, r, err)
				return
			}
			if c == nil && s.reloadAsThisSite(w, r, http.StatusUnauthorized) {
				return
			}
			if r.URL.Path == "/console/events" || strings.HasSuffix(r.URL.Path, "/trail.json") {
				// Read by a script or saved as a file: no page to show.
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, "Not signed in to the console: open a console sign-in link, then this again.\n")
				return
			}
			// A decision sent is told it was not recorded, not only that
			// the session ended.
			data := map[string]any{"Title": "Sign in", "Expired": c != nil, "NotRecorded": r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/actions")}
			var ended *ledger.SessionEnded
			if errors.As(err, &ended) {
				data["Ended"] = sessionEndedWords(ended)
			}
			s.renderConsole(w, r, http.StatusUnauthorized, "signin", data)
			return
		}
		if rec, ok := w.(*statusRecorder); ok {
			rec.tenant = sess.Tenant
		}
		r = withPrincipal(r, sess.Principal())
		h(w, r.WithContext(context.WithValue(r.Context(), consoleSessionKey, consoleSession{ConsoleSession: sess, Token: c.Value})))
	}
}

func (s *Server) renderConsole(w http.ResponseWriter, r *http.Request, status int, page string, data map[string]any) {
	if _, set := data["Session"]; !set {
		data["Session"] = sessionOf(r.Context())
	}
	data["Page"] = page
	var buf bytes.Buffer
	if err := consoleTemplates.ExecuteTemplate(&buf, page+".html", data); err != nil {
		s.log.Error().Str("requestId", RequestID(r.Context())).Err(err).Msg("console: template failed")
		// Still a page, in a person's words, with the request id to quote
		// (it was the plain text "The page could not be rendered.").
		what := "Nothing was changed. Reload the page."
		if r.Method == http.MethodPost {
			what = "What you sent may or may not have been recorded: open the handoff again to see."
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, consoleFailedHTML, what, template.HTMLEscapeString(RequestID(r.Context())))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// consoleFailedHTML is the page of a template that failed: fixed words,
// what may have changed, and the request id (escaped) to quote.
const consoleFailedHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Something went wrong · Baton console</title>
<link rel="stylesheet" href="/console/static/console.css">
</head>
<body data-page="error">
<header class="top"><a class="brand" href="/console/">Baton console</a></header>
<main id="main">
<h1>Something went wrong</h1>
<p class="msg error" role="alert" data-code="internal_error">This page could not be shown: the server failed while drawing it. %s If it fails again, tell whoever runs Baton for you, quoting the request id below.</p>
<p>Request id: <code id="request-id">%s</code></p>
<p><a href="/console/">Back to the inbox</a></p>
</main>
</body>
</html>
`

// consoleError renders an error as a page with its status. A 503 and a
// 500 are told in a person's words, with what to do next (a 503's
// Retry-After stays), and a 5xx page shows the request id to quote.
func (s *Server) consoleError(w http.ResponseWriter, r *http.Request, err error) {
	p := s.problemFor(w, r, err)
	data := map[string]any{}
	switch {
	case p.Status == http.StatusServiceUnavailable:
		data["Again"] = unavailableForPerson(&p, r)
	case p.Status >= 500:
		data["Again"] = failedForPerson(&p, r)
	case p.Status == http.StatusRequestEntityTooLarge:
		data["Again"] = tooLargeForPerson(&p, r)
	case p.Status == http.StatusRequestTimeout:
		data["Again"] = tooSlowForPerson(&p, r)
	case p.Status == http.StatusNotFound:
		notFoundForPerson(&p, r)
	case p.Status == http.StatusBadRequest:
		data["Again"] = badFormForPerson(&p, r)
	}
	data["Problem"] = p
	data["Title"] = p.Title
	s.renderConsole(w, r, p.Status, "error", data)
}

// consoleSigninPage shows the link's button: the exchange is a POST, so
// that a link previewer fetching the URL does not use the link up, and so
// that the session cookie (SameSite=Strict) is set by a same-site request.
func (s *Server) consoleSigninPage(w http.ResponseWriter, r *http.Request) {
	if _, err := r.Cookie(consoleCookie); err != nil && s.reloadAsThisSite(w, r, http.StatusOK) {
		return // to say who this browser is signed in as, if anyone
	}
	data := map[string]any{"Title": "Sign in", "Token": r.URL.Query().Get("token")}
	if cur, ok := s.currentSession(r); ok {
		data["Current"] = cur.Name // told that this link ends that session
	}
	s.renderConsole(w, r, http.StatusOK, "signin", data)
}

// currentSession is the live session of the request's cookie, if any: on
// the sign-in routes, which take no session of their own.
func (s *Server) currentSession(r *http.Request) (ledger.ConsoleSession, bool) {
	c, err := r.Cookie(consoleCookie)
	if err != nil || c.Value == "" {
		return ledger.ConsoleSession{}, false
	}
	sess, err := s.ledger.Console.Session(r.Context(), c.Value)
	return sess, err == nil
}

// sameOrigin refuses a form posted from another site (when the browser
// names the origin): the console's forms post to their own origin only.
func (s *Server) sameOrigin(w http.ResponseWriter, r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || ownOrigin(o, r, s.consoleURL) {
		return true
	}
	s.consoleError(w, r, domain.E("console.form", domain.KindForbidden, "cross_origin", "This form was posted from another site (%s); the console takes forms from its own pages only.", o))
	return false
}

func (s *Server) consoleSignin(w http.ResponseWriter, r *http.Request) {
	if !s.sameOrigin(w, r) {
		return
	}
	if !s.readForm(w, r, 4096) {
		return
	}
	token := r.PostForm.Get("token")
	sess, err := s.ledger.Console.Redeem(r.Context(), RequestID(r.Context()), token)
	if err != nil {
		if domain.KindOf(err) == domain.KindUnauthorized {
			var de *domain.Error
			errors.As(err, &de)
			s.renderConsole(w, r, http.StatusUnauthorized, "signin", map[string]any{"Title": "Sign in", "Refused": de.Message})
			return
		}
		s.consoleError(w, r, err)
		return
	}
	if old, ok := s.currentSession(r); ok && old.SessionID != sess.SessionID {
		// The browser held another person's (or the same person's) live
		// session: replaced by this one, it ends, not lingers usable.
		call := ledger.Call{Principal: domain.Principal{Tenant: old.Tenant, Person: old.Name}, RequestID: RequestID(r.Context())}
		if err := s.ledger.Console.EndSession(r.Context(), call, old.SessionID, "replaced by another sign-in in the same browser"); err != nil {
			s.log.Warn().Err(err).Msg("console: the replaced session was not ended")
		}
	}
	// The cookie outlives its session: a browser drops a cookie past its
	// Expires, and a request after the session expired, sent without it,
	// was told nothing of the session ("open the link again"), never "Your
	// session expired at …". Past its session it opens nothing.
	http.SetCookie(w, &http.Cookie{Name: consoleCookie, Value: sess.Token, Path: "/console/", Expires: sess.ExpiresAt.Add(consoleCookieAfterSession),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secureCookie(r)})
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

// consoleCookieAfterSession is how long the session cookie is kept past
// its session's end, to tell the person why the console no longer knows
// them (a person back after a weekend included).
const consoleCookieAfterSession = 7 * 24 * time.Hour

// reloadAsThisSite answers a page opened from a link on another site (a
// view shared in a ticket, a sign-in link in a mail), which a browser
// sends without the session's SameSite=Strict cookie, with a page that
// loads itself again as this site, which sends it; false for any other
// request, answered by the caller.
func (s *Server) reloadAsThisSite(w http.ResponseWriter, r *http.Request, status int) bool {
	if r.Method != http.MethodGet || r.Header.Get("Sec-Fetch-Site") != "cross-site" || r.Header.Get("Sec-Fetch-Mode") != "navigate" {
		return false
	}
	s.renderConsole(w, r, status, "signin", map[string]any{"Title": "Opening the console", "Reload": r.URL.RequestURI()})
	return true
}

// secureRequest: the request came over TLS, here or at a proxy in front.
func secureRequest(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// secureCookie: the session cookie is sent over TLS only when the console
// is reached over it: the request says so, or the console's public URL is
// https (its forms are taken from that origin only, so behind a proxy that
// does not say X-Forwarded-Proto the cookie was set without Secure, and a
// browser sent it over plain http to the same host).
func (s *Server) secureCookie(r *http.Request) bool {
	return secureRequest(r) || strings.HasPrefix(strings.ToLower(s.consoleURL), "https:")
}

func (s *Server) consoleSignout(w http.ResponseWriter, r *http.Request) {
	sess := sessionOf(r.Context())
	if !s.checkCSRF(w, r, sess) {
		return
	}
	if err := s.ledger.Console.EndSession(r.Context(), callOf(r), sess.SessionID, "signed out"); err != nil {
		s.consoleError(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: consoleCookie, Value: "", Path: "/console/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secureCookie(r)})
	s.renderConsole(w, r, http.StatusOK, "signin", map[string]any{"Title": "Signed out", "SignedOut": true, "Session": consoleSession{}})
}

// readForm reads a console form of at most limit bytes; when it cannot,
// it answers why (too large, too slow, not a form) and is false. Taken for
// an empty form, a sign-in was told its link was not valid.
func (s *Server) readForm(w http.ResponseWriter, r *http.Request, limit int64) bool {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := r.ParseForm(); err != nil {
		s.consoleError(w, r, readFailure(err, limit, domain.E("console.form", domain.KindBadRequest, "bad_form", "the form could not be read")))
		return false
	}
	return true
}

func (s *Server) checkCSRF(w http.ResponseWriter, r *http.Request, sess consoleSession) bool {
	if !s.sameOrigin(w, r) {
		return false
	}
	if !s.readForm(w, r, 64<<10) {
		return false
	}
	got := r.PostForm.Get("csrf")
	if got == "" || got != sess.CSRF() {
		s.consoleError(w, r, domain.E("console.action", domain.KindForbidden, "csrf_failed", "This form is not from your console session (its CSRF token does not match). Reload the page and try again."))
		return false
	}
	return true
}

// consoleSessionRecheck is how often an open console event stream checks
// that its session still holds.
var consoleSessionRecheck = 30 * time.Second

// consoleEvents is the tenant's event stream (GET /v1/events) for a
// session's pages; it ends once the session has ended or expired.
// consoleStreamsPerSession bounds one person's live streams: their pages
// share one (Web Locks), or, without them, hold one each, as many as a
// browser opens connections to one server. One session's streams must not
// take the whole tenant's bound from everyone else's pages.
const consoleStreamsPerSession = 6

func (s *Server) consoleEvents(w http.ResponseWriter, r *http.Request) {
	// The API's stream refuses a pair Go's parser drops (knownQuery), so
	// must this one: after=<position>;x=1 began at the store's head,
	// skipping what came since as if it had resumed.
	if bad := queryFaults(r.URL.RawQuery, r.URL.Query(), queryParams["GET /v1/events"]); len(bad) > 0 {
		// A misspelt after (?afetr=) began at the store's head too.
		s.writeError(w, r, domain.Invalid("query", bad[0]))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	token := sessionOf(ctx).Token
	release, err := s.acquireStreamOf("session\x00"+token, consoleStreamsPerSession, "this session already holds %d live streams open, the most one person's pages may; close a page, or reload one later")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer release()
	go func() {
		t := time.NewTicker(consoleSessionRecheck)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := s.ledger.Console.Session(ctx, token); errors.Is(err, ledger.ErrNoSession) {
					cancel()
					return
				}
			}
		}
	}()
	s.streamEvents(w, r.WithContext(ctx))
}

// inboxItem is one row of the inbox.
type inboxItem struct {
	domain.ContractView
	Queue        string // approval, review or ""
	NeedApproval int
	ApprovalDue  *time.Time
	EscalateAt   *time.Time
}

// due is when an item in the approval queue next falls due: its
// escalation or its approval's expiry, the sooner; zero for neither.
func (it inboxItem) due() time.Time {
	var t time.Time
	for _, x := range []*time.Time{it.ApprovalDue, it.EscalateAt} {
		if x != nil && (t.IsZero() || x.Before(t)) {
			t = *x
		}
	}
	return t
}

// inboxFilter is the inbox's view, kept in the URL.
type inboxFilter struct {
	State, Risk, Executor, Since string
}

func (f inboxFilter) since() time.Duration {
	switch f.Since {
	case "1h":
		return time.Hour
	case "24h":
		return 24 * time.Hour
	case "7d":
		return 7 * 24 * time.Hour
	}
	return 0
}

var (
	inboxRisks  = []string{"low", "medium", "high", "critical"}
	inboxSinces = []string{"1h", "24h", "7d"}
	inboxParams = []string{"state", "risk", "executor", "since"} // the inbox's filters, by their names in its address
	inboxPages  = []string{"approvals", "reviews", "page"}       // its queues' cursors
)

// unknown says, for each filter whose value the inbox does not know, what
// it takes instead; that filter is cleared.
func (f *inboxFilter) unknown() []string {
	var out []string
	if f.State != "" && f.State != "approval" && f.State != "review" && f.State != "all" && !contains(domain.States, domain.State(f.State)) {
		out = append(out, "Show has no choice “"+f.State+"”: choose one of the list, a queue or a state.")
		f.State = ""
	}
	if f.Risk != "" && !slices.Contains(inboxRisks, f.Risk) {
		out = append(out, "Risk has no choice “"+f.Risk+"”: it is low, medium, high or critical.")
		f.Risk = ""
	}
	if f.Since != "" && !slices.Contains(inboxSinces, f.Since) {
		out = append(out, "Created has no choice “"+f.Since+"”: it is the last hour (1h), 24 hours (24h) or 7 days (7d).")
		f.Since = ""
	}
	return out
}

func (f inboxFilter) Query() string {
	v := url.Values{}
	for k, x := range map[string]string{"state": f.State, "risk": f.Risk, "executor": f.Executor, "since": f.Since} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v.Encode()
}

// inboxKey places an item in its queue's order, which its pages follow:
// approvals falling due first, soonest first (one with no deadline after
// those with one), then the oldest (ids are time-ordered).
type inboxKey struct {
	Due time.Time
	ID  string
}

func (a inboxKey) before(b inboxKey) bool {
	if !a.Due.Equal(b.Due) {
		return !a.Due.IsZero() && (b.Due.IsZero() || a.Due.Before(b.Due))
	}
	return a.ID < b.ID
}

// String is the key as a page's cursor: the id, after its deadline's
// Unix nanoseconds and a "~" when it has one. The deadline is in the
// cursor, not read again: an item that escalated between two pages moves
// on in the order, and the next page must start where this one ended.
func (a inboxKey) String() string {
	if a.Due.IsZero() {
		return a.ID
	}
	return strconv.FormatInt(a.Due.UnixNano(), 10) + "~" + a.ID
}

func parseInboxKey(c string) (inboxKey, bool) {
	due, id, found := strings.Cut(c, "~")
	if !found {
		return inboxKey{ID: c}, c != ""
	}
	n, err := strconv.ParseInt(due, 10, 64)
	if err != nil || n <= 0 || id == "" {
		return inboxKey{}, false
	}
	return inboxKey{Due: time.Unix(0, n).UTC(), ID: id}, true
}

// deadlineOf says whether due is a deadline an approval cursor naming the
// contract (raw, its view) may have: its approval's expiry or its
// escalation, escalated since or not; or none (zero) when it had neither
// while it waited, an escalation that has since happened aside. Only the
// approvals' order has deadlines, and a cursor's is the one its handoff
// had: another (a negative one, a day or a year away, none for one that
// expires) placed the page where no page of the inbox starts, and was
// shown as one.
func deadlineOf(raw []byte, due time.Time) bool {
	var v domain.ContractView
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	expires := v.Deadlines != nil && v.Deadlines.ApprovalExpiresAt != nil
	e := v.ApprovalPolicy.EscalateAfterSeconds
	if due.IsZero() {
		return !expires && (e <= 0 || v.ApprovalPolicy.EscalatedAt != nil)
	}
	return expires && v.Deadlines.ApprovalExpiresAt.Equal(due) || e > 0 && v.CreatedAt.Add(time.Duration(e)*time.Second).Equal(due)
}

// inboxQueue is one queue's page: the items after the page's cursor, in
// the queue's order, and where they stand in all that wait.
type inboxQueue struct {
	Param string // the cursor's name in the address
	Items []inboxItem
	Total int    // how many wait in all
	From  int    // the position of the first item shown (1 for the first)
	Next  string // the cursor of the next page; "" on the last
	Paged bool   // not the first page
	Held  int    // waiting, but on someone else than the person signed in: not listed
	keys  []inboxKey
	worst *inboxKey // once a page and one are kept: the last of them
}

func (q inboxQueue) To() int { return q.From + len(q.Items) - 1 }

// inboxPageSize is how many items of a queue one page shows (a variable
// for the tests).
var inboxPageSize = inboxShown

// offer counts an item of the queue and keeps it when it may be on the
// page: after the cursor, among the first of the order. What is kept is
// bounded (twice a page, then cut back), so a queue of any length is read
// in the memory of a page.
func (q *inboxQueue) offer(after *inboxKey, k inboxKey, it func() (inboxItem, bool)) {
	if after != nil && !after.before(k) {
		q.From++
		q.Total++
		return
	}
	if q.worst != nil && !k.before(*q.worst) {
		q.Total++ // after the page: counted, not read
		return
	}
	item, ok := it()
	if !ok {
		return
	}
	q.Total++
	q.Items, q.keys = append(q.Items, item), append(q.keys, k)
	if len(q.Items) > 2*(inboxPageSize+1) {
		q.sortCut(inboxPageSize + 1)
	}
}

func (q *inboxQueue) sortCut(n int) {
	idx := make([]int, len(q.Items))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return q.keys[idx[a]].before(q.keys[idx[b]]) })
	items, keys := make([]inboxItem, 0, n), make([]inboxKey, 0, n)
	for _, i := range idx[:min(n, len(idx))] {
		items, keys = append(items, q.Items[i]), append(keys, q.keys[i])
	}
	q.Items, q.keys = items, keys
	if len(keys) == n {
		q.worst = &keys[n-1]
	}
}

// page ends the read: the page's items in order, and the next page's
// cursor when more follow.
func (q *inboxQueue) page() {
	q.sortCut(inboxPageSize + 1)
	if len(q.Items) > inboxPageSize {
		q.Next = q.keys[inboxPageSize-1].String()
		q.Items, q.keys = q.Items[:inboxPageSize], q.keys[:inboxPageSize]
	}
	q.From++ // positions count from 1
}

// Link is the address of this queue's next page, keeping the filters and
// the other queue's page.
func (q inboxQueue) link(base url.Values, cursor string) string {
	v := url.Values{}
	for k, x := range base {
		v[k] = x
	}
	v.Del(q.Param)
	if cursor != "" {
		v.Set(q.Param, cursor)
	}
	if len(v) == 0 {
		return "/console/"
	}
	return "/console/?" + v.Encode()
}

// itemOf is a contract's view as a row of the inbox.
func itemOf(v domain.ContractView) inboxItem {
	it := inboxItem{ContractView: v}
	switch {
	case v.State == domain.StateContractCreated && v.ApprovalPolicy.Status == domain.ApprovalPending:
		it.Queue = "approval"
		need := v.ApprovalPolicy.RequiredApprovals
		if need < 1 {
			need = 1
		}
		it.NeedApproval = need - len(v.ApprovalPolicy.Approvals)
		if v.Deadlines != nil {
			it.ApprovalDue = v.Deadlines.ApprovalExpiresAt
		}
		if e := v.ApprovalPolicy.EscalateAfterSeconds; e > 0 && v.ApprovalPolicy.EscalatedAt == nil {
			t := v.CreatedAt.Add(time.Duration(e) * time.Second)
			it.EscalateAt = &t
		}
	case awaitsReview(v):
		it.Queue = "review"
	}
	return it
}

func (s *Server) consoleInbox(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := inboxFilter{State: q.Get("state"), Risk: q.Get("risk"), Executor: strings.TrimSpace(q.Get("executor")), Since: q.Get("since")}
	if err := s.waitReadable(w, r); err != nil {
		s.consoleError(w, r, err)
		return
	}
	p := principalOf(r.Context())
	unknown := f.unknown()
	for _, k := range slices.Sorted(maps.Keys(q)) {
		switch {
		case !slices.Contains(inboxParams, k) && !slices.Contains(inboxPages, k):
			unknown = append(unknown, "The inbox has no filter “"+k+"”: its filters are show (state), risk, executor and created (since).")
		case len(q[k]) > 1:
			// risk=high&risk=low showed the high ones only, as if asked.
			unknown = append(unknown, "“"+k+"” is given "+strconv.Itoa(len(q[k]))+" times in this address: give each filter once.")
		}
	}
	// A pair Go's parser cannot read is dropped from q: risk=high;x=1
	// showed every risk, as if that were the view asked for.
	if len(unreadablePairs(r.URL.RawQuery)) > 0 {
		unknown = append(unknown, "This address has a part the inbox cannot read: filters are separated by “&”, not “;”, and a “%” is written %25.")
	}
	// A page's cursor names one of the tenant's handoffs: a link cut or
	// edited would otherwise show some page as if it were the one asked for.
	cursors := map[string]*inboxKey{}
	for _, k := range inboxPages {
		c, set := q[k]
		if !set {
			continue
		}
		key, ok := parseInboxKey(c[0])
		if ok {
			raw, tenant, found, err := s.proj.Contract(key.ID)
			if err != nil {
				s.consoleError(w, r, err)
				return
			}
			ok = found && tenant == p.Tenant && (k == "approvals" && deadlineOf(raw, key.Due) || k != "approvals" && key.Due.IsZero())
		}
		if !ok {
			unknown = append(unknown, "This page of the inbox is not one it made (the link was cut or changed): start again from its first page.")
			continue
		}
		cursors[k] = &key
	}
	if len(unknown) > 0 {
		// Told, not ignored: a view quietly wider or emptier than asked
		// for reads as the truth.
		s.renderConsole(w, r, http.StatusBadRequest, "inbox", map[string]any{
			"Title": "Inbox", "Filter": f, "Unknown": unknown,
			"States": domain.States, "Risks": inboxRisks,
		})
		return
	}
	after := FormatPosition(s.proj.Checkpoint()) // the page's stream follows from what it read
	now := time.Now()
	narrow := func(pf projections.ContractFilter) projections.ContractFilter {
		// Every filter narrows the read, not only what is shown of it.
		pf.TargetExecutor, pf.RiskLevel = f.Executor, f.Risk
		if d := f.since(); d > 0 {
			pf.CreatedSince = now.Add(-d)
		}
		return pf
	}
	approvals, reviews, others := inboxQueue{Param: "approvals"}, inboxQueue{Param: "reviews"}, inboxQueue{Param: "page"}
	// Each queue is read whole, by the states it holds, for its count and
	// its place, keeping no more than a page of it: its pages go on by
	// cursor, so every handoff waiting can be reached (a view read at most
	// 2,000, and showed at most 100 of each queue).
	// The waiting queues are read in one pass over the tenant's handoffs,
	// each contract offered to the queue it belongs to (four passes, one a
	// state, walked the whole index four times).
	queueParam := map[string]string{"approval": "approvals", "review": "reviews"}
	// A queue of the person's own role lists what they can act on: listed,
	// a handoff whose decision another approver gives next (theirs
	// stands), or whose proof separation of duties gives another verifier
	// (they approved it), invited a click on a page that takes nothing of
	// them. Counted apart; a view of its state still lists it.
	sess := sessionOf(r.Context())
	me := domain.Principal{Person: sess.Name}.Actor()
	heldFor := func(it inboxItem) bool {
		approved := slices.ContainsFunc(it.ApprovalPolicy.Approvals, func(a domain.ApprovalRecord) bool { return domain.SameActor(a.Approver, me) })
		switch it.Queue {
		case "approval":
			return sess.CanApprove() && approved
		case "review":
			return sess.CanReview() && approved && it.ApprovalPolicy.SeparationOfDuties
		}
		return false
	}
	read := func(pf projections.ContractFilter, queues ...*inboxQueue) error {
		for _, qu := range queues {
			qu.Paged = cursors[qu.Param] != nil
		}
		err := s.proj.ScanContracts(p.Tenant, narrow(pf), func(raw []byte) bool {
			if queues[0] == &others {
				// Any state: in the order of ids, read whole only when it
				// may be shown.
				others.offer(cursors[others.Param], inboxKey{ID: gjson.GetBytes(raw, "handoffId").String()}, func() (inboxItem, bool) {
					var v domain.ContractView
					err := json.Unmarshal(raw, &v)
					return itemOf(v), err == nil
				})
				return true
			}
			var v domain.ContractView
			if json.Unmarshal(raw, &v) != nil {
				return true
			}
			it := itemOf(v)
			for _, qu := range queues {
				if qu.Param == queueParam[it.Queue] && heldFor(it) {
					qu.Held++
				} else if qu.Param == queueParam[it.Queue] {
					qu.offer(cursors[qu.Param], inboxKey{Due: it.due(), ID: v.HandoffID}, func() (inboxItem, bool) { return it, true })
				}
			}
			return true
		})
		for _, qu := range queues {
			qu.page()
		}
		return err
	}
	var err error
	switch f.State {
	case "", "approval", "review":
		var queues []*inboxQueue
		states := []string{}
		if f.State != "review" {
			queues, states = append(queues, &approvals), append(states, string(domain.StateContractCreated))
		}
		if f.State != "approval" {
			queues = append(queues, &reviews)
			for _, st := range []domain.State{domain.StateProofReceived, domain.StateProofReviewed, domain.StateResultReceived} {
				states = append(states, string(st))
			}
		}
		err = read(projections.ContractFilter{States: states}, queues...)
	case "all":
		err = read(projections.ContractFilter{}, &others)
	default:
		err = read(projections.ContractFilter{State: f.State}, &others)
	}
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	links := map[string]string{}
	for _, qu := range []inboxQueue{approvals, reviews, others} {
		if qu.Next != "" {
			links[qu.Param+"Next"] = qu.link(q, qu.Next)
		}
		if qu.Paged {
			links[qu.Param+"First"] = qu.link(q, "")
		}
	}
	s.renderConsole(w, r, http.StatusOK, "inbox", map[string]any{
		"Title": "Inbox", "Filter": f, "Approvals": approvals, "Reviews": reviews, "Others": others, "After": after, "Links": links,
		"ShowQueues": f.State == "" || f.State == "approval" || f.State == "review", "Now": now,
		"States": domain.States, "Risks": inboxRisks,
	})
}

// timelineRow is one event as the handoff page shows it.
type timelineRow struct {
	domain.LedgerEntry
	Pretty string
}

// handoffPage is what the handoff page and its actions read.
type handoffPage struct {
	View    domain.ContractView
	Entries []domain.LedgerEntry
	Chain   map[string]any
	Plan    *domain.Plan
	Packet  *contextpack.Packet
}

func (s *Server) readHandoff(w http.ResponseWriter, r *http.Request, id string) (*handoffPage, error) {
	raw, err := s.visibleContract(w, r, id)
	if err != nil {
		return nil, err
	}
	var pg handoffPage
	if err := json.Unmarshal(raw, &pg.View); err != nil {
		return nil, err
	}
	entries, err := s.proj.Ledger(id)
	var q *projections.QuarantinedError
	if errors.As(err, &q) {
		return nil, quarantinedProblem(q)
	}
	if err != nil {
		return nil, err
	}
	pg.Entries = entries
	pg.Chain = map[string]any{"intact": true}
	if br := domain.VerifyChain(id, recordedOf(entries)); br != nil {
		pg.Chain = map[string]any{"intact": false, "seq": br.Seq, "reason": br.Reason}
	}
	p := principalOf(r.Context())
	if pg.View.PlanID != "" {
		if plan, err := s.ledger.Plans.Get(r.Context(), p, pg.View.PlanID); err == nil {
			pg.Plan = plan
			if plan.ContextPacketID != "" && s.ledger.Packets != nil {
				if pk, err := s.ledger.Packets.Get(r.Context(), p, plan.ContextPacketID); err == nil {
					pg.Packet = pk
				}
			}
		}
	}
	return &pg, nil
}

func recordedOf(entries []domain.LedgerEntry) []domain.Recorded {
	recs := make([]domain.Recorded, len(entries))
	for i, e := range entries {
		raw, _ := e.Data.(json.RawMessage)
		recs[i] = domain.Recorded{Seq: e.Seq, Type: e.Type, Data: raw, Actor: e.Actor, RecordedAt: e.RecordedAt, PrevHash: e.PrevHash, Hash: e.Hash}
	}
	return recs
}

func (s *Server) consoleHandoff(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("refused")
	if id == "" {
		s.showHandoff(w, r, http.StatusOK, nil, nil)
		return
	}
	// The page after a refused form (Post/Redirect/Get): the refusal and
	// the words written, as this replica held them for this session.
	p, form, ok := s.flashes.get(time.Now(), id, sessionOf(r.Context()).SessionID, mux.Vars(r)["handoffId"])
	if !ok {
		p = Problem{Code: "refusal_gone", Title: "Not shown",
			Detail: "This address showed a refusal that is no longer held here (one is kept for 10 minutes); the page below is the handoff as it is now."}
	}
	s.showHandoff(w, r, http.StatusOK, &p, form)
}

// showHandoff renders the handoff page, with a refusal (problem) above it
// and the refused form's text (its reason or notes) written back into the
// form, or with what an action recorded (the URL's recorded, seq, hash).
func (s *Server) showHandoff(w http.ResponseWriter, r *http.Request, status int, problem *Problem, form map[string]string) {
	id := mux.Vars(r)["handoffId"]
	// Read before the handoff: its stream follows from here, so an event
	// the page missed while it loaded still comes (the page said it was
	// live and showed a handoff as it no longer was).
	after := FormatPosition(s.proj.Checkpoint())
	pg, err := s.readHandoff(w, r, id)
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	if id := r.URL.Query().Get("refused"); problem != nil && id != "" {
		// Shown again once the handoff moved on (Back from the page of a
		// decision made since, a reload after another person's), "Not
		// recorded" read as said of the latest form, above the decision
		// it had recorded: said as an earlier answer.
		if at, ok := s.flashes.shownAt(id, pg.View.LedgerHead.Seq); ok && pg.View.LedgerHead.Seq > at {
			p := *problem
			p.Title = "Not recorded, an earlier answer"
			p.Detail = "This answered a form sent before the handoff changed; the page below is the handoff as it is now, at event " +
				strconv.FormatUint(pg.View.LedgerHead.Seq, 10) + ". " + p.Detail
			problem = &p
		}
	}
	rows := make([]timelineRow, len(pg.Entries))
	for i, e := range pg.Entries {
		raw, _ := e.Data.(json.RawMessage)
		rows[i] = timelineRow{LedgerEntry: e, Pretty: prettyJSON(string(raw))}
	}
	var earlier []timelineRow
	if len(rows) > timelineFold {
		earlier, rows = rows[:len(rows)-timelineShown], rows[len(rows)-timelineShown:]
	}
	q := r.URL.Query()
	v := pg.View
	sess := sessionOf(r.Context())
	me := domain.Principal{Person: sess.Name}.Actor()
	notice := ""
	if problem == nil && q.Get("recorded") != "" {
		// The answer to an action: the head it produced, as the trail has
		// it, told from that event, this person's own; never the URL's
		// words, which anyone can write into a link.
		seq, _ := strconv.ParseUint(q.Get("seq"), 10, 64)
		for i, e := range pg.Entries {
			if e.Seq == seq && e.Hash == q.Get("hash") && domain.SameActor(e.Actor, me) {
				what, at, closed := recordedAs(e), e, ""
				if e.Type == domain.EventLedgerClosed && i > 0 && domain.SameActor(pg.Entries[i-1].Actor, me) {
					// The decision that closed it is the event before: named
					// as itself ("rejected, as event 3" named the close).
					at = pg.Entries[i-1]
					what, closed = recordedAs(at), "; it closed the ledger, as event "+strconv.FormatUint(e.Seq, 10)
				}
				if what != "" {
					notice = "Recorded: " + what + ", as event " + strconv.FormatUint(at.Seq, 10) + " of the ledger, hash " + at.Hash + closed + "."
				}
			}
		}
	}
	// A decision or review an API key recorded carries a name the key
	// states (approvedBy, reviewer): shown alone, "APPROVED by alice" read
	// as alice's own decision, signed in, while the key's client wrote it.
	decidedVia, reviewedVia := "", ""
	for _, e := range pg.Entries {
		switch {
		case e.Type == domain.EventApprovalDecided:
			decidedVia = keyOf(e.Actor)
		case e.Type == domain.EventProofReviewed && v.Review != nil && e.Seq == v.Review.Seq:
			reviewedVia = keyOf(e.Actor)
		}
	}
	canDecide := v.State == domain.StateContractCreated && v.ApprovalPolicy.Status == domain.ApprovalPending
	canReview := len(v.Proofs) > 0 && v.State != domain.StateLedgerClosed
	// An approver whose approval stands, under a policy of several, has
	// nothing more to decide (a second approval is refused): told so,
	// not offered the form.
	approvedAlready := slices.ContainsFunc(v.ApprovalPolicy.Approvals, func(a domain.ApprovalRecord) bool { return domain.SameActor(a.Approver, me) })
	// Separation of duties refuses an approver's review: told why, not
	// offered a form the ledger would refuse.
	reviewBarred := canReview && sess.CanReview() && v.ApprovalPolicy.SeparationOfDuties && approvedAlready
	// The words of a refused form that no form on the page takes back
	// (another approver decided first, the ledger closed) are shown as
	// text: a rejection's reason, a warning, was lost with the form.
	showApprove, showReview := canDecide && sess.CanApprove() && !approvedAlready, canReview && sess.CanReview() && !reviewBarred
	unsent := ""
	switch {
	case form["action"] == "approve" || form["action"] == "reject":
		if !showApprove {
			unsent = form["reason"]
		}
	case form["action"] == "review":
		if !showReview {
			unsent = form["notes"]
		}
	}
	s.renderConsole(w, r, status, "handoff", map[string]any{
		"Unsent": unsent,
		"Title":  titleOf(v.Objective) + " · handoff " + shortHash(v.HandoffID), "H": v, "Timeline": rows, "Earlier": earlier, "Chain": pg.Chain, "Plan": pg.Plan, "Packet": pg.Packet,
		"GenesisHash": domain.GenesisHash(v.HandoffID), "Problem": problem, "Notice": notice, "After": after,
		"ShowApprove": showApprove, "ShowReview": showReview,
		"ReviewBarred":    reviewBarred,
		"ApprovedAlready": canDecide && sess.CanApprove() && approvedAlready,
		"Nonce":           newNonce(), "Verdicts": domain.ReviewVerdicts, "Closed": v.State == domain.StateLedgerClosed,
		"Form": form, "DecidedVia": decidedVia, "ReviewedVia": reviewedVia,
	})
}

// titleOf is a handoff's objective as its page's title, cut to what a
// tab shows: every handoff page was titled "Handoff <id>", and a person's
// tabs, or a screen reader's list of windows, could not tell one from
// another.
func titleOf(objective string) string {
	t := strings.Join(strings.Fields(shownText(objective)), " ")
	if n := 0; utf8.RuneCountInString(t) > 60 {
		for i := range t {
			if n++; n > 59 {
				return t[:i] + "…"
			}
		}
	}
	return t
}

// keyOf is the key id of an API key's actor ("key:<id>"); "" for a person
// or Baton itself.
func keyOf(actor string) string {
	id, ok := strings.CutPrefix(actor, "key:")
	if !ok {
		return ""
	}
	return id
}

// recordedAs says what a person's action recorded as event e: "" for an
// event no console action records.
func recordedAs(e domain.LedgerEntry) string {
	raw, _ := e.Data.(json.RawMessage)
	var d struct {
		Status   string `json:"status"`
		Verdict  string `json:"verdict"`
		Count    int    `json:"count"`
		Required int    `json:"required"`
	}
	json.Unmarshal(raw, &d)
	switch e.Type {
	case domain.EventApprovalDecided:
		if d.Status == domain.ApprovalRejected {
			return "rejected"
		}
		return "approved"
	case domain.EventApprovalGranted:
		return "your approval, " + strconv.Itoa(d.Count) + " of the " + strconv.Itoa(d.Required) + " needed"
	case domain.EventProofReviewed:
		return "review " + d.Verdict
	}
	return ""
}

func newNonce() string {
	_, secret, _ := domain.NewConsoleToken()
	return secret[:22]
}

// trailEvent is one event of the JSON download, with the canonical bytes
// its hash covers (base64) for the page's own check.
type trailEvent struct {
	domain.LedgerEntry
	Canonical string `json:"canonical"`
}

func (s *Server) consoleTrail(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["handoffId"]
	// after=N: only the events past seq N, for the page's chain check,
	// which has checked those up to N already (a handoff under a stream of
	// proofs had each live update fetch and hash the whole trail again).
	var after uint64
	if bad := queryFaults(r.URL.RawQuery, r.URL.Query(), []string{"after"}); len(bad) > 0 {
		// after=1;x=1 was dropped, and a misspelt after (?afetr=3)
		// ignored, answering the whole trail, as the API's endpoints do not.
		s.writeError(w, r, domain.Invalid("query", bad[0]))
		return
	}
	if q := r.URL.Query(); len(q["after"]) > 1 {
		// after=1&after=x was read as its first value, as the API's
		// endpoints do not.
		s.writeError(w, r, domain.Invalid("query", domain.FieldError{Pointer: "query:after", Code: "repeated", Message: "is given more than once"}))
		return
	} else if q.Has("after") {
		n, perr := strconv.ParseUint(q.Get("after"), 10, 64)
		if perr != nil {
			s.writeError(w, r, domain.Invalid("query", domain.FieldError{Pointer: "query:after", Code: "invalid_integer",
				Message: "must be a non-negative integer: the last seq the page has checked"}))
			return
		}
		after = n
	}
	pg, err := s.readHandoff(w, r, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	evs := []trailEvent{}
	for _, e := range pg.Entries {
		if e.Seq <= after {
			continue
		}
		raw, _ := e.Data.(json.RawMessage)
		c, err := domain.Canonical(id, e.Seq, e.Type, e.Actor, e.RecordedAt, raw)
		if err != nil {
			c = nil
		}
		evs = append(evs, trailEvent{LedgerEntry: e, Canonical: base64.StdEncoding.EncodeToString(c)})
	}
	w.Header().Set("Content-Disposition", `attachment; filename="`+id+`-trail.json"`)
	writeJSON(w, http.StatusOK, map[string]any{
		"handoffId": id, "contract": pg.View, "state": pg.View.State, "head": pg.View.LedgerHead, "chain": pg.Chain,
		"genesisHash": domain.GenesisHash(id), "events": evs,
		"hashRule": "hash = hex(SHA-256(prevHash || canonical)), prevHash hashed as its 64 hex characters; the first prevHash is genesisHash (docs/protocol.md)",
	})
}

// consoleAction runs one of the page's forms: approve, reject, or review,
// as the signed-in person. A role without the action gets 403; the
// ledger's refusals come back as messages on the page.
func (s *Server) consoleAction(w http.ResponseWriter, r *http.Request) {
	sess := sessionOf(r.Context())
	if !s.checkCSRF(w, r, sess) {
		return
	}
	id := mux.Vars(r)["handoffId"]
	form := r.PostForm
	for _, k := range slices.Sorted(maps.Keys(form)) {
		if len(form[k]) > 1 {
			// The page's forms give each field once: action=approve&
			// action=reject was recorded as an approval, its first value.
			s.consoleError(w, r, domain.E("console.action", domain.KindBadRequest, "repeated_field", "the form gives %q more than once", k))
			return
		}
	}
	action := form.Get("action")
	var cmd domain.Command
	ref := domain.RequestRef{IdempotencyKey: ""}
	if n := form.Get("nonce"); n != "" && len(n) <= 64 {
		ref.IdempotencyKey = "console-" + n
	}
	fields := map[string]string{"action": action}
	switch action {
	case "approve", "reject":
		if !sess.CanApprove() {
			s.consoleError(w, r, domain.E("console.action", domain.KindForbidden, "role_forbidden", "As %s you cannot approve or reject; an approver can.", sess.Role))
			return
		}
		status, reason := domain.ApprovalApproved, strings.TrimSpace(form.Get("reason"))
		if action == "reject" {
			status = domain.ApprovalRejected
		}
		fields["reason"] = reason
		ref.Kind = domain.KindApproval
		cmd = domain.ApprovalCommand{Status: status, ApprovedBy: sess.Name, Reason: reason}
	case "review":
		if !sess.CanReview() {
			s.consoleError(w, r, domain.E("console.action", domain.KindForbidden, "role_forbidden", "As %s you cannot review proof; a verifier can.", sess.Role))
			return
		}
		verdict, notes := form.Get("verdict"), strings.TrimSpace(form.Get("notes"))
		fields["verdict"], fields["notes"] = verdict, notes
		ref.Kind = domain.KindReview
		cmd = domain.ReviewCommand{Verdict: verdict, Reviewer: sess.Name, Notes: notes}
	default:
		s.consoleError(w, r, domain.E("console.action", domain.KindBadRequest, "unknown_action", "no such action"))
		return
	}
	// The head the page was drawn at: a decision on what the person saw,
	// not on proof that came while they read (handoff_changed). A form
	// without one (a page of an older console, or one made by hand) was
	// taken with the check skipped, and recorded on whatever had come.
	drawnAt, herr := strconv.ParseUint(form.Get("head"), 10, 64)
	if herr != nil || drawnAt == 0 {
		s.consoleError(w, r, domain.E("console.action", domain.KindBadRequest, "no_head", "the form does not say which event of the ledger its page was drawn at"))
		return
	}
	body, _ := json.Marshal(fields)
	ref.BodySHA256 = bodyHash(body)
	switch c := cmd.(type) {
	case domain.ApprovalCommand:
		c.Request = ref
		cmd = c
	case domain.ReviewCommand:
		c.Request = ref
		cmd = c
	}
	err := s.scan(body)
	var out ledger.Outcome
	if err == nil {
		call := callOf(r)
		call.DrawnAt = drawnAt
		out, err = s.ledger.Handoffs.Handle(r.Context(), call, id, cmd)
	}
	if err != nil {
		if k := domain.KindOf(err); k == domain.KindNotFound || k == domain.KindInternal || k == domain.KindUnavailable {
			s.consoleError(w, r, err)
			return
		}
		p := s.problemFor(w, r, err)
		kept := fields // what the person wrote, offered again (but a secret)
		if p.Code == "secret_detected" {
			kept = nil
		}
		forPerson(&p, action) // said to the person, not to an executor
		if p.Code == "approval_already_decided" && s.decidedBy(r, id, domain.Principal{Person: sess.Name}.Actor()) {
			// Their own decision, from another page: "someone decided …,
			// yours was not recorded" read as if it had not counted.
			p.Detail = "You decided this handoff already, in another page (the page below shows your decision, which stands); this second decision was not recorded."
		}
		// 303 to the handoff's page, not the page as this POST's answer:
		// a reload there would post the form again.
		flash := s.flashes.put(time.Now(), sess.SessionID, id, p, kept)
		http.Redirect(w, r, "/console/handoffs/"+url.PathEscape(id)+"?"+url.Values{"refused": {flash}}.Encode(), http.StatusSeeOther)
		return
	}
	// Read-your-writes: the page shown next includes this event.
	ctx, cancel := context.WithTimeout(r.Context(), readWait)
	defer cancel()
	s.proj.WaitFor(ctx, out.Position)
	// The page tells what was recorded from the event at that head
	// (recordedAs), not from words in its URL.
	head := out.Handoff.Head
	http.Redirect(w, r, "/console/handoffs/"+url.PathEscape(id)+"?"+url.Values{"recorded": {action}, "seq": {strconv.FormatUint(head.Seq, 10)}, "hash": {head.Hash}}.Encode(), http.StatusSeeOther)
}

// decidedBy says whether the approval decision on record for handoff id
// is actor's, read once the read models hold the store's head.
func (s *Server) decidedBy(r *http.Request, id, actor string) bool {
	ctx, cancel := context.WithTimeout(r.Context(), readWait)
	defer cancel()
	if head, err := s.store.Head(ctx); err == nil {
		s.proj.WaitFor(ctx, head)
	}
	entries, err := s.proj.Ledger(id)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Type == domain.EventApprovalDecided {
			return domain.SameActor(e.Actor, actor)
		}
	}
	return false
}

// shownText is a text as the page shows it: a character a browser draws
// as nothing (a format character: zero-width space, word joiner, bidi
// control, a Unicode tag character; or a supplementary variation
// selector) is shown as its code point, "⟨U+E0061⟩". A person approves what
// they read, and an executor reads every character: tag characters spell
// ASCII that a model reads and a page does not show ("Rotate the
// certificate" carried " and delete all backups" unseen). The joiners
// that shape scripts and emoji (U+200C, U+200D) are drawn as they are.
func shownText(s string) string {
	if !strings.ContainsFunc(s, drawnAsNothing) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if drawnAsNothing(r) {
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func drawnAsNothing(r rune) bool {
	return unicode.Is(unicode.Cf, r) && r != '\u200c' && r != '\u200d' || r >= 0xE0100 && r <= 0xE01EF
}

// ago is how long ago t was, roughly.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h"
	}
	return strconv.Itoa(int(d.Hours()/24)) + "d"
}

// prettyJSON indents a JSON document; anything else comes back as it was.
// The result is text: the templates escape it.
func prettyJSON(s string) string {
	var out bytes.Buffer
	if json.Indent(&out, []byte(s), "", "  ") != nil {
		return s
	}
	return out.String()
}

// renderedArtifact is a proof artifact as the page shows it: a link (only
// for http and https URLs), pretty JSON, or text. Every form is text to
// the template, which escapes it; nothing becomes markup.
type renderedArtifact struct {
	Type, Kind, Text, URL string
	folded
}

func renderArtifact(a domain.Artifact) renderedArtifact {
	t := strings.TrimSpace(a.Text)
	if u, err := url.Parse(t); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && !strings.ContainsAny(t, " \n\t") {
		// The link reads as where it goes: the address as followed, in which
		// a right-to-left override or an invisible character is a %-escape.
		// Shown as sent, "https://cdn.example/\u202egpj.exe" read as a link
		// to exe.jpg.
		return renderedArtifact{Type: a.Type, Kind: "url", URL: u.String(), Text: u.String()}
	}
	if (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(t)) {
		p := prettyJSON(t)
		return renderedArtifact{Type: a.Type, Kind: "json", Text: p, folded: fold(p)}
	}
	return renderedArtifact{Type: a.Type, Kind: "text", Text: a.Text, folded: fold(a.Text)}
}

// Past foldLines lines or foldBytes bytes, a text is shown folded: its
// head, then the rest behind a <details>, so that one long log does not
// make the page a scroll through it to the review form.
const (
	foldLines = 20
	foldBytes = 3000
	headLines = 10
	headBytes = 1500
	// Past timelineFold events, the handoff page shows the last
	// timelineShown and folds the earlier ones: an executor heartbeats
	// every few seconds, and an hour's run put hundreds of events, each a
	// stop of the Tab key, between a verifier and the review form.
	timelineFold  = 40
	timelineShown = 20
)

// folded is a long text cut in two: Head shown, Rest behind a summary of
// its size (RestLines is 0 for a cut within a line). Long is false for a
// text shown whole.
type folded struct {
	Long       bool
	Head, Rest string
	RestLines  int
	RestSize   string
}

func fold(text string) folded {
	if strings.Count(text, "\n") < foldLines && len(text) <= foldBytes {
		return folded{}
	}
	cut, lines := 0, 0
	for i := 0; i < headLines; i++ {
		n := strings.IndexByte(text[cut:], '\n')
		if n < 0 || cut+n+1 > headBytes {
			break
		}
		cut += n + 1
	}
	if cut == 0 { // one long first line: cut it, on a character's boundary
		cut = min(headBytes, len(text))
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
	} else {
		lines = strings.Count(text[cut:], "\n") + 1
	}
	rest := text[cut:]
	size := strconv.Itoa(len(rest)) + " bytes"
	if len(rest) >= 10<<10 {
		size = strconv.Itoa(len(rest)>>10) + " KB"
	}
	return folded{Long: true, Head: text[:cut], Rest: rest, RestLines: lines, RestSize: size}
}

// awaitsReview says whether a verifier has something to review: proof, or
// a result, newer than the last verdict, in a state that takes one (a
// needs_review verdict leaves the ledger open for the proof that follows,
// and a result waits for its review to close the ledger).
func awaitsReview(v domain.ContractView) bool {
	switch v.State {
	case domain.StateProofReceived, domain.StateProofReviewed, domain.StateResultReceived:
	default:
		return false
	}
	var reviewed uint64
	if v.Review != nil {
		reviewed = v.Review.Seq
	}
	if n := len(v.Proofs); n > 0 && v.Proofs[n-1].Seq > reviewed {
		return true
	}
	return v.Result != nil && v.Result.Seq > reviewed
}

// ownOrigin tells whether a browser's Origin is the console's own: the
// configured public URL's scheme and host when there is one (behind a TLS
// proxy the request itself cannot tell http from https), else the request's
// host over https when it came over TLS (here or at a proxy that says so),
// else over http.
func ownOrigin(origin string, r *http.Request, consoleURL string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Path != "" || u.User != nil {
		return false
	}
	if consoleURL != "" {
		c, err := url.Parse(consoleURL)
		return err == nil && strings.EqualFold(u.Scheme, c.Scheme) && strings.EqualFold(u.Host, c.Host)
	}
	want := "http"
	if secureRequest(r) {
		want = "https"
	}
	return strings.EqualFold(u.Scheme, want) && strings.EqualFold(u.Host, r.Host)
}
