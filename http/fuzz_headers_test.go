package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/gateway"
	batonhttp "github.com/batonhq/baton/http"
)

// headerValue reports whether v could reach a handler through a real HTTP
// server, which refuses control characters in header values.
func headerValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// FuzzRequestHeaders sends arbitrary values in the headers Baton reads
// (x-api-key, Authorization, Idempotency-Key, Baton-Read-After,
// x-request-id, anthropic-version) to the routes that read them. Every
// answer is deliberate (never a 500); nothing is served unless one of the
// headers carries a real key; a refused Idempotency-Key or read position is
// a 422; the request id echoed is always printable and never one the
// secret scanner takes for a credential; a refused request appends
// nothing.
func FuzzRequestHeaders(f *testing.F) {
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		f.Fatal(err)
	}
	e := newEnvWith(f, cat)
	id := e.contract(e.tenantA, nil)
	e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
	for _, s := range []struct {
		route                             uint8
		xKey, auth, idem, after, reqID, v string
	}{
		{0, e.tenantA, "", "", "", "", ""},
		{0, "", "Bearer " + e.tenantA, "", "", "req-1", ""},
		{0, "", "bearer  " + e.tenantA + " ", "", "1/x", "", ""},
		{1, e.tenantA, "Bearer sk-provider", "gen-1", "", "", ""},
		{1, e.tenantA, "", strings.Repeat("k", 256), "", "", ""},
		{1, e.tenantA, "", "caf\u00e9", "", "", ""},
		{3, e.tenantA, "", "caf\u00e9", "", "", ""},
		{3, e.tenantA, "", "caf\xe9", "", "", ""},
		{3, e.tenantA, "", "a\tb", "", "", ""},
		{2, "", "Bearer " + e.tenantA, "", "", "x\u00ff", "2023-06-01"},
		{2, e.tenantA, "Bearer " + e.admin, "", "", "", "bogus"},
		{3, e.tenantA, "", "proof-1", "", "", ""},
		{3, e.tenantA, "", " ", "", "", ""},
		{4, "btn_sk_0000", "", "", "", strings.Repeat("r", 129), "2023-06-01"},
		{4, "", "Basic abc", "", "", "", ""},
		{1, e.tenantA, "", ctxFakeGitHub, "", ctxFakeBtn, ""},
		{3, e.tenantA, "", "a\u0085b", "", "api_key=" + ctxRandom(ctxAlnum, 32), ""},
		{3, e.tenantA, "", ctxFakeAWS, "", ctxFakeGitHub, ""},
	} {
		f.Add(s.route, s.xKey, s.auth, s.idem, s.after, s.reqID, s.v)
	}
	h := e.srv.Config.Handler
	known := map[string]bool{e.tenantA: true, e.tenantA2: true, e.tenantB: true, e.admin: true}
	proof := `{"executorRunId":"run-1","status":"RUNNING","proof":{"summary":"s","artifacts":[{"type":"log","text":"t"}]}}`
	scanner, err := newTestScanner()
	if err != nil {
		f.Fatal(err)
	}
	// idem: whether the route reads Idempotency-Key (one rule for all of
	// them, api.md).
	routes := []struct {
		method, path, body string
		idem               bool
		reads              bool
	}{
		{http.MethodGet, "/v1/handoff/contracts/" + id, "", false, true},
		{http.MethodPost, "/v1/generate", `{"type":"summarize","input":{"text":"Baton records every step."}}`, true, false},
		{http.MethodPost, "/v1/messages", `{"model":"local:echo","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, false, false},
		{http.MethodPost, "/v1/executions/" + id + "/proof", proof, true, false},
		{http.MethodGet, "/v1/models/local:echo", "", false, false},
	}
	f.Fuzz(func(t *testing.T, route uint8, xKey, auth, idem, after, reqID, version string) {
		e.t = t
		for _, v := range []string{xKey, auth, idem, after, reqID, version} {
			if !headerValue(v) {
				t.Skip("not a header value a server would pass on")
			}
		}
		if _, err := batonhttp.ParsePosition(after); after != "" && err == nil {
			// A position that parses waits up to 2 s for the read models
			// to reach it; positions are fuzzed on their own below.
			t.Skip("a well-formed position")
		}
		r := routes[int(route)%len(routes)]
		before, err := e.store.Head(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
		for name, v := range map[string]string{"x-api-key": xKey, "Authorization": auth, "Idempotency-Key": idem,
			batonhttp.ReadAfterHeader: after, "x-request-id": reqID, "anthropic-version": version} {
			if v != "" {
				req.Header.Set(name, v)
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		if rec.Code >= 500 && rec.Code != 503 {
			t.Fatalf("%s %s answered %d: %s", r.method, r.path, rec.Code, rec.Body.String())
		}
		bearer := ""
		if len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
			bearer = strings.TrimSpace(auth[7:])
		}
		if rec.Code < 300 && !known[strings.TrimSpace(xKey)] && !known[bearer] {
			t.Fatalf("served %d without a real key (x-api-key %q, Authorization %q)", rec.Code, xKey, auth)
		}
		got := rec.Header().Get("x-request-id")
		if got == "" || len(got) > 128 || !headerValue(got) || strings.ContainsAny(got, " \t") {
			t.Fatalf("x-request-id %q", got)
		}
		if rule, found := scanner.ScanText(got); found {
			t.Fatalf("x-request-id %q looks like a credential (%s)", got, rule)
		}
		if rec.Code < 300 && idem != "" && r.idem && !validIdem(scanner, idem) {
			t.Fatalf("served %d with Idempotency-Key %q", rec.Code, idem)
		}
		if rec.Code < 300 && r.reads && after != "" {
			t.Fatalf("served %d with a malformed %s %q", rec.Code, batonhttp.ReadAfterHeader, after)
		}
		if rec.Code >= 400 {
			evs, err := e.store.ReadAll(context.Background(), before, 10000)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if ev.Metadata.RequestID == got && ev.StreamID != "usage-"+ev.Metadata.Tenant {
					t.Fatalf("answered %d but appended %s to %s", rec.Code, ev.Type, ev.StreamID)
				}
			}
		}
	})
}

// validIdem is the documented rule for Idempotency-Key: 1 to 255
// characters of UTF-8, no control characters, not a credential.
func validIdem(scanner batonhttp.SecretScanner, k string) bool {
	if k == "" || !utf8.ValidString(k) || utf8.RuneCountInString(k) > 255 {
		return false
	}
	for _, r := range k {
		if unicode.IsControl(r) {
			return false
		}
	}
	_, secret := scanner.ScanText(k)
	return !secret
}

// FuzzParsePosition: a token that parses formats back to itself (up to
// surrounding space and leading zeros), and every formatted position
// parses back to the same position.
func FuzzParsePosition(f *testing.F) {
	for _, s := range []string{"0/0", "12/34", " 5/6 ", "18446744073709551615/0", "1/", "/1", "a/b", "1/2/3", "-1/2", "+1/2", ""} {
		f.Add(s, uint64(7), uint64(9))
	}
	f.Fuzz(func(t *testing.T, s string, commit, prepare uint64) {
		p := eventstore.Position{Commit: commit, Prepare: prepare}
		if back, err := batonhttp.ParsePosition(batonhttp.FormatPosition(p)); err != nil || back != p {
			t.Fatalf("%v formats to %q, parses back to %v, %v", p, batonhttp.FormatPosition(p), back, err)
		}
		got, err := batonhttp.ParsePosition(s)
		if err != nil {
			return
		}
		again, err := batonhttp.ParsePosition(batonhttp.FormatPosition(got))
		if err != nil || again != got {
			t.Fatalf("%q parses to %v, which formats to %q and parses to %v, %v", s, got, batonhttp.FormatPosition(got), again, err)
		}
	})
}

// FuzzPathsAndQueries sends arbitrary path segments and query strings to
// the routes that parse them: contract listing (limit, state,
// approvalStatus, cursor), a model, a context packet, a plan, a contract
// and its ledger by id, key revocation, and a webhook and its deliveries
// (limit, cursor), and the model list in Anthropic's shape (limit,
// after_id, before_id). Every answer is deliberate;
// nothing is appended except by the one revocation of the key made for it.
func FuzzPathsAndQueries(f *testing.F) {
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		f.Fatal(err)
	}
	e := newEnvWith(f, cat)
	id := e.contract(e.tenantA, nil)
	e.contract(e.tenantA, nil)
	spare := e.must(e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "spare"}), 201).str("keyId")
	hook := e.must(e.do("POST", "/v1/webhooks", e.tenantA, map[string]any{"url": "https://hooks.example.com/baton", "eventTypes": []string{"*"}}), 201).str("webhookId")
	for _, s := range []struct {
		route      uint8
		seg, query string
	}{
		{0, "", "limit=1"}, {0, "", "limit="}, {0, "", "limit=0"}, {0, "", "limit=-5&state=PENDING_APPROVAL"}, {0, "", "cursor=%ff%00&limit=99999999999999999999"},
		{0, "", "approvalStatus=pending&state=bogus"}, {0, "", "cursor=" + url.QueryEscape(id)},
		{1, "local:echo", ""}, {1, "openai:gpt-4o/..", ""}, {1, ":", ""}, {1, "a%2Fb", ""},
		{2, "00000000-0000-0000-0000-000000000000", ""}, {2, "../keys", ""},
		{3, "not-a-uuid", ""}, {4, id, ""}, {4, "h_" + strings.Repeat("9", 300), ""},
		{5, id, "from=3"}, {6, "key_0000000000000000", ""}, {6, spare, ""}, {6, "", ""},
		{7, hook, "limit=1"}, {7, hook, "cursor=msg_0123456789abcdef0123456789abcdef"}, {7, hook, "limit=abc&cursor=%00"},
		{8, hook, ""}, {8, "wh_../keys", ""}, {8, strings.ToUpper(hook), ""},
		{9, "", "limit=1"}, {9, "", "limit=1000&after_id=local:echo"}, {9, "", "before_id=local:echo&limit=0"},
		{9, "", "after_id=nope"}, {9, "", "after_id=local:echo&before_id=local:echo"}, {9, "", "limit=%2B1&limit=2"},
	} {
		f.Add(s.route, s.seg, s.query)
	}
	h := e.srv.Config.Handler
	routes := []struct {
		method, prefix, suffix, key string
		anthropic                   bool // sends anthropic-version
	}{
		{http.MethodGet, "/v1/handoff/contracts", "", e.tenantA, false},
		{http.MethodGet, "/v1/models/", "", e.tenantA, false},
		{http.MethodGet, "/v1/context/packets/", "", e.tenantA, false},
		{http.MethodGet, "/v1/agent-plans/", "", e.tenantA, false},
		{http.MethodGet, "/v1/handoff/contracts/", "", e.tenantA, false},
		{http.MethodGet, "/v1/executions/", "/ledger", e.tenantA, false},
		{http.MethodDelete, "/v1/admin/keys/", "", e.admin, false},
		{http.MethodGet, "/v1/webhooks/", "/deliveries", e.tenantA, false},
		{http.MethodGet, "/v1/webhooks/", "", e.tenantA, false},
		{http.MethodGet, "/v1/models", "", e.tenantA, true},
	}
	f.Fuzz(func(t *testing.T, route uint8, seg, query string) {
		e.t = t
		r := routes[int(route)%len(routes)]
		if r.prefix == "/v1/handoff/contracts" || r.prefix == "/v1/models" {
			seg = "" // the listings take only a query
		}
		before, err := e.store.Head(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(r.method, "/", nil)
		req.URL.Path = r.prefix + seg + r.suffix
		req.URL.RawPath = ""
		req.URL.RawQuery = query
		req.RequestURI = req.URL.RequestURI()
		req.Header.Set("x-api-key", r.key)
		if r.anthropic {
			req.Header.Set("anthropic-version", "2023-06-01")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != 503 {
			t.Fatalf("%s %q?%q answered %d: %s", r.method, req.URL.Path, query, rec.Code, rec.Body.String())
		}
		if r.anthropic && rec.Code == 200 {
			checkModelPage(t, query, rec.Body.Bytes())
		}
		after, err := e.store.Head(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if after != before && !(r.method == http.MethodDelete && seg == spare && rec.Code == 200) {
			evs, _ := e.store.ReadAll(context.Background(), before, 100)
			for _, ev := range evs {
				if ev.Metadata.RequestID == rec.Header().Get("x-request-id") {
					t.Fatalf("%s %q answered %d and appended %s", r.method, req.URL.Path, rec.Code, ev.Type)
				}
			}
		}
		if rec.Code == 200 && r.method == http.MethodGet && r.prefix == "/v1/handoff/contracts" && !bytes.Contains(rec.Body.Bytes(), []byte(`"data"`)) {
			t.Fatalf("listing answered 200 without data: %s", rec.Body.String())
		}
	})
}

// checkModelPage fails the test when a page of the Anthropic-shaped model
// list is not the page query asks for: at most limit models (20 unless
// given), first_id and last_id naming its ends (null on an empty page),
// and none of them the after_id or before_id it starts or ends beyond.
func checkModelPage(t *testing.T, query string, body []byte) {
	t.Helper()
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		HasMore *bool   `json:"has_more"`
		FirstID *string `json:"first_id"`
		LastID  *string `json:"last_id"`
	}
	if err := json.Unmarshal(body, &page); err != nil || page.Data == nil || page.HasMore == nil {
		t.Fatalf("?%s: a page %s that is not one (%v)", query, body, err)
	}
	q, _ := url.ParseQuery(query)
	limit := 20
	if n, err := strconv.Atoi(q.Get("limit")); err == nil {
		limit = n
	}
	if len(page.Data) > limit {
		t.Fatalf("?%s: %d models on a page of %d", query, len(page.Data), limit)
	}
	if len(page.Data) == 0 {
		if page.FirstID != nil || page.LastID != nil {
			t.Fatalf("?%s: an empty page names first %v, last %v", query, page.FirstID, page.LastID)
		}
		return
	}
	if page.FirstID == nil || page.LastID == nil || *page.FirstID != page.Data[0].ID || *page.LastID != page.Data[len(page.Data)-1].ID {
		t.Fatalf("?%s: first_id and last_id do not name the ends of %s", query, body)
	}
	for _, m := range page.Data {
		if after, before := q.Get("after_id"), q.Get("before_id"); (after != "" && m.ID == after) || (before != "" && m.ID == before) {
			t.Fatalf("?%s: the page holds %s, which it starts or ends beyond", query, m.ID)
		}
	}
}
