package http_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/ledger"
	batonhttp "github.com/batonhq/baton/http"
)

// microTime matches the API's timestamps: RFC 3339, UTC, at most
// microseconds (docs/api.md).
var microTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$`)

func (e *env) keyEvents() int {
	e.t.Helper()
	evs, err := e.store.ReadStream(context.Background(), domain.KeysStream, 0, 10_000)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(evs)
}

// A revoked key is refused from the revocation's answer on, even though
// authentication had cached it; revoking is admin-only, idempotent and
// appends one event.
func TestRevokeKey(t *testing.T) {
	e := newEnv(t)
	k := e.must(e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "c", "label": "ci"}), 201)
	key, id := k.str("key"), k.str("keyId")
	for range 3 { // looked up, then served from the cache
		e.must(e.do("GET", "/v1/executor-protocol", key, nil), 200)
	}
	if r := e.do("DELETE", "/v1/admin/keys/"+id, e.tenantA, nil); r.status != 403 {
		t.Fatalf("tenant key revoking: %d %s", r.status, r.raw)
	}
	if r := e.do("DELETE", "/v1/admin/keys/key_nope", e.admin, nil); r.status != 404 || r.str("code") != "key_not_found" {
		t.Fatalf("unknown key: %d %s", r.status, r.raw)
	}
	before := e.keyEvents()
	r := e.must(e.do("DELETE", "/v1/admin/keys/"+id, e.admin, nil), 200)
	if r.str("revoked") != "true" || !microTime.MatchString(r.str("revokedAt")) || !microTime.MatchString(r.str("createdAt")) || r.str("tenant") != "c" || r.str("key") != "" {
		t.Fatalf("revocation answer: %s", r.raw)
	}
	if r := e.do("GET", "/v1/executor-protocol", key, nil); r.status != 401 || r.str("code") != "invalid_api_key" {
		t.Fatalf("revoked key still works: %d %s", r.status, r.raw)
	}
	again := e.must(e.do("DELETE", "/v1/admin/keys/"+id, e.admin, nil), 200)
	if again.str("revokedAt") != r.str("revokedAt") || e.keyEvents() != before+1 {
		t.Fatalf("second revocation: %s; %d events appended", again.raw, e.keyEvents()-before)
	}
	// Other keys are untouched, whether or not they were cached.
	e.must(e.do("GET", "/v1/executor-protocol", e.tenantA, nil), 200)
}

// Lookups racing with a revocation never bring the revoked key back.
func TestRevokeKeyRacingLookups(t *testing.T) {
	e := newEnv(t)
	k := e.must(e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "c"}), 201)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					req, _ := http.NewRequest("GET", e.srv.URL+"/v1/executor-protocol", nil)
					req.Header.Set("x-api-key", k.str("key"))
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Errorf("racing lookup: %v", err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	e.must(e.do("DELETE", "/v1/admin/keys/"+k.str("keyId"), e.admin, nil), 200)
	close(stop)
	wg.Wait()
	for range 5 {
		if r := e.do("GET", "/v1/executor-protocol", k.str("key"), nil); r.status != 401 {
			t.Fatalf("revoked key answered %d after racing lookups", r.status)
		}
	}
}

// An operator finds every key's id (the bootstrap key's among them) to
// revoke it: records only, never a secret or its hash.
func TestListKeys(t *testing.T) {
	e := newEnv(t)
	k := e.must(e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "c", "label": "ci"}), 201)
	e.must(e.do("DELETE", "/v1/admin/keys/"+k.str("keyId"), e.admin, nil), 200)
	if r := e.do("GET", "/v1/admin/keys", e.tenantA, nil); r.status != 403 {
		t.Fatalf("a tenant key listing: %d %s", r.status, r.raw)
	}
	all := e.must(e.do("GET", "/v1/admin/keys", e.admin, nil), 200)
	if n := len(gjson.GetBytes(all.raw, "data").Array()); n != 5 || strings.Contains(string(all.raw), k.str("key")) || strings.Contains(string(all.raw), "hash") {
		t.Fatalf("%d keys: %s", n, all.raw)
	}
	c := e.must(e.do("GET", "/v1/admin/keys?tenant=c", e.admin, nil), 200)
	if gjson.GetBytes(c.raw, "data.#").Int() != 1 || gjson.GetBytes(c.raw, "data.0.keyId").Str != k.str("keyId") ||
		!gjson.GetBytes(c.raw, "data.0.revoked").Bool() || gjson.GetBytes(c.raw, "data.0.label").Str != "ci" {
		t.Fatalf("tenant c: %s", c.raw)
	}
	if r := e.do("GET", "/v1/admin/keys?tenant=a%20b", e.admin, nil); r.status != 422 {
		t.Fatalf("a bad tenant: %d %s", r.status, r.raw)
	}
	// An empty tenant= (a script's unset variable) is a wrong name, not
	// every tenant's keys.
	for _, q := range []string{"?tenant=", "?tenant=c&tenant=a"} {
		if r := e.do("GET", "/v1/admin/keys"+q, e.admin, nil); r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"query:tenant"`) {
			t.Fatalf("%s: %d %s", q, r.status, r.raw)
		}
	}
}

// A key's label is plain text, as other names are: an escape or a bidi
// override is refused, nothing recorded (it was stored and listed, and the
// banner of serve prints labels to a terminal).
func TestKeyLabelIsPlainText(t *testing.T) {
	e := newEnv(t)
	before := e.keyEvents()
	for _, label := range []string{"a\u001b[31mred", "ci\n", "\u202eic"} {
		r := e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "c", "label": label})
		if r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"/label","code":"control_character"`) {
			t.Fatalf("label %q: %d %s", label, r.status, r.raw)
		}
	}
	if n := e.keyEvents(); n != before {
		t.Fatalf("%d key events appended for refused labels", n-before)
	}
	e.must(e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "c", "label": "ci – nightly ✓"}), 201)
}

// A label's bound is in bytes, and the refusal says so: 101 accented
// letters (202 bytes) were refused as "longer than 200 characters".
func TestKeyLabelBoundSaysBytes(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "c", "label": strings.Repeat("é", 101)})
	if r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"/label","code":"too_long"`) ||
		strings.Contains(string(r.raw), "characters") || !strings.Contains(string(r.raw), "202 bytes") {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	e.must(e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "c", "label": strings.Repeat("é", 100)}), 201)
}

// The key list reads its writes, as the other reads of the read models do:
// a key created a moment ago (through this replica, another one or the
// CLI) is listed once the read models include it, not left out of a list
// read at once (a script creating a key and then listing its tenant's got
// an empty list about half the time).
func TestListKeysIncludesAKeyJustCreated(t *testing.T) {
	f := newHeldFront(t)
	k, err := f.keys.Create(context.Background(), "test", "", "fresh", false, "")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte)
	go func() {
		req, _ := http.NewRequest("GET", f.srv.URL+"/v1/admin/keys?tenant=fresh", nil)
		req.Header.Set("x-api-key", f.admin.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- nil
			return
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		got <- raw
	}()
	time.Sleep(200 * time.Millisecond)
	defer f.run()()
	if raw := <-got; gjson.GetBytes(raw, "data.0.keyId").Str != k.KeyID {
		t.Fatalf("the list: %s", raw)
	}
}

// A key request is tenant, admin and label: a field asking for a narrower
// key (scopes, an expiry) is refused and no key is made, since Baton keys
// have no such limits and the caller would hold a key of the tenant's
// whole access, believing it restricted. So is a misspelt field.
func TestCreateKeyRefusesUnknownFields(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ body, pointer string }{
		{`{"tenant":"c","scopes":["read"]}`, "/scopes"},
		{`{"tenant":"c","expiresAt":"2027-01-01T00:00:00Z"}`, "/expiresAt"},
		{`{"tenant":"c","Admin":true}`, "/Admin"},
		{`{"tenant":"c","admin":false,"permissions":null}`, "/permissions"},
	} {
		before := e.keyEvents()
		r := e.do("POST", "/v1/admin/keys", e.admin, c.body)
		if r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"`+c.pointer+`","code":"unknown_field"`) || r.str("key") != "" {
			t.Fatalf("%s: %d %s", c.body, r.status, r.raw)
		}
		if n := e.keyEvents() - before; n != 0 {
			t.Fatalf("%s: %d key events appended", c.body, n)
		}
	}
	e.must(e.do("POST", "/v1/admin/keys", e.admin, `{"tenant":"c","admin":null,"label":null}`), 201)
}

// downKeysStore answers every append to the keys stream as a store that
// went away mid-write does: whether the key was made is not known.
type downKeysStore struct{ eventstore.Store }

func (s downKeysStore) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if stream == domain.KeysStream {
		return eventstore.AppendResult{}, fmt.Errorf("kurrent: append: %w: connection refused", eventstore.ErrUnavailable)
	}
	return s.Store.Append(ctx, stream, exp, evs...)
}

// A key create the store did not answer is a 503 whose advice holds for
// this route, which takes no Idempotency-Key (its replay would keep the
// key's secret): list the tenant's keys, not "retry with the same
// Idempotency-Key", which would make a second key.
func TestCreateKeyStoreUnavailableAdvice(t *testing.T) {
	e := newEnvStore(t, nil, func(s eventstore.Store) eventstore.Store { return downKeysStore{s} })
	r := e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "c", "label": "ci"}, "Idempotency-Key", "k-1")
	msg := r.str("detail")
	if r.status != 503 || r.str("code") != "store_unavailable" || r.header.Get("Retry-After") == "" ||
		strings.Contains(msg, "Idempotency-Key:") || strings.Contains(msg, "same Idempotency-Key") || !strings.Contains(msg, "GET /v1/admin/keys?tenant=c") {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}

// A label that holds a credential (a key pasted in the wrong field) is
// refused, 422 secret_detected on /label, never quoted, and no key made:
// the label would be kept in the key's event for good and shown in every
// listing of the keys, which promise never to show a key.
func TestCreateKeyRefusesASecretLabel(t *testing.T) {
	e := newEnv(t)
	before := e.keyEvents()
	r := e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "c", "label": "ci " + ctxFakeBtn})
	if r.status != 422 || r.str("code") != "secret_detected" || !strings.Contains(string(r.raw), `"pointer":"/label"`) || strings.Contains(string(r.raw), ctxFakeBtn) {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if n := e.keyEvents() - before; n != 0 {
		t.Fatalf("%d key events appended", n)
	}
	e.must(e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "c", "label": "ci for btn_sk keys"}), 201)
}

// rareScanner counts the checks made with ScanTextRare.
type rareScanner struct {
	batonhttp.SecretScanner
	rare atomic.Int32
}

func (s *rareScanner) ScanTextRare(v string) (string, bool) {
	s.rare.Add(1)
	return s.ScanText(v)
}

// A key's label is checked with a scanner's rare check where it has one,
// which keeps no rules for a server that only proxies model calls
// (domain/secrets, TestScanTextRareKeepsNoRules).
func TestCreateKeyChecksItsLabelAsARareCheck(t *testing.T) {
	base, err := newTestScanner()
	if err != nil {
		t.Fatal(err)
	}
	rs := &rareScanner{SecretScanner: base}
	envScanner = rs
	defer func() { envScanner = nil }()
	e := newEnv(t)
	r := e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "c", "label": "ci " + ctxFakeBtn})
	if r.status != 422 || r.str("code") != "secret_detected" {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	e.must(e.do("POST", "/v1/admin/keys", e.admin, map[string]any{"tenant": "c", "label": "nightly"}), 201)
	if n := rs.rare.Load(); n != 2 {
		t.Fatalf("%d rare checks, want 2", n)
	}
}

// A revocation the store did not answer is a 503 saying to retry, which
// is safe (revoking again answers the same), not to retry "with the same
// Idempotency-Key", which this route does not take.
func TestRevokeKeyStoreUnavailableAdvice(t *testing.T) {
	e := newEnvStore(t, nil, func(s eventstore.Store) eventstore.Store { return downKeysStore{s} })
	k, err := ledger.NewKeys(e.store).Create(context.Background(), "test", "", "c", false, "")
	if err != nil {
		t.Fatal(err)
	}
	r := e.do("DELETE", "/v1/admin/keys/"+k.KeyID, e.admin, nil)
	msg := r.str("detail")
	if r.status != 503 || r.str("code") != "store_unavailable" || r.header.Get("Retry-After") == "" ||
		strings.Contains(msg, "Idempotency-Key") || !strings.Contains(msg, "revoking again") {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}
