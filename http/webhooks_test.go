package http_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/rs/zerolog"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/http/webhook"
)

// fakeClock is the ledger's and the dispatcher's clock in the webhook
// tests: it starts at the real time (receivers check webhook-timestamp)
// and moves only when the test moves it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// received is one request a receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is a loopback webhook endpoint whose answer the test chooses
// per request (n counts from 1).
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []received
	answer  func(n int, w http.ResponseWriter)
	release chan struct{} // closed at cleanup: frees answers that hang
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{release: make(chan struct{})}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{header: r.Header.Clone(), body: body})
		n, answer := len(rc.got), rc.answer
		rc.mu.Unlock()
		if answer == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		answer(n, w)
	}))
	t.Cleanup(func() { close(rc.release); rc.srv.Close() })
	return rc
}

func (rc *receiver) setAnswer(f func(n int, w http.ResponseWriter)) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.answer = f
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// await waits until the receiver has n requests and returns them.
func (rc *receiver) await(t *testing.T, n int) []received {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := rc.requests()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver got %d requests, want %d", len(got), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// quiet checks that the receiver still has n requests after a few of the
// dispatchers' polls.
func (rc *receiver) quiet(t *testing.T, n int) {
	t.Helper()
	time.Sleep(150 * time.Millisecond)
	if got := rc.requests(); len(got) != n {
		t.Fatalf("the receiver got %d requests, want %d", len(got), n)
	}
}

// webhookEnv is an env whose command side runs on a fake clock and lets
// endpoints be loopback addresses (allowPrivate), with no dispatcher yet.
func webhookEnv(t *testing.T, allowPrivate bool) (*env, *fakeClock) {
	t.Helper()
	clock := &fakeClock{t: time.Now().UTC().Truncate(time.Second)}
	envLedgerOptions = &ledger.Options{Now: clock.Now, WebhookAllowPrivate: allowPrivate}
	defer func() { envLedgerOptions = nil }()
	return newEnv(t), clock
}

// dispatch starts a dispatcher on e's store until the returned stop (or
// the test's end).
func dispatch(t *testing.T, e *env, clock *fakeClock, tune func(*webhook.Config)) (stop func()) {
	t.Helper()
	cfg := webhook.Config{Store: e.store, Webhooks: e.services.Webhooks, Now: clock.Now, Schedule: []time.Duration{time.Minute, 2 * time.Minute},
		Poll: 5 * time.Millisecond, Timeout: 2 * time.Second, AllowPrivate: true}
	if tune != nil {
		tune(&cfg)
	}
	d := webhook.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("dispatcher: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func (e *env) registerWebhook(key, url string, eventTypes []string, targets ...string) response {
	e.t.Helper()
	body := map[string]any{"url": url, "eventTypes": eventTypes}
	if targets != nil {
		body["targetExecutors"] = targets
	}
	return e.must(e.do("POST", "/v1/webhooks", key, body), 201)
}

// deliveries lists a webhook's deliveries (one page of up to 100).
func (e *env) deliveries(key, id string) []map[string]any {
	e.t.Helper()
	r := e.must(e.do("GET", "/v1/webhooks/"+id+"/deliveries?limit=100", key, nil), 200)
	var out []map[string]any
	for _, d := range r.body["data"].([]any) {
		out = append(out, d.(map[string]any))
	}
	return out
}

// awaitDelivery waits until the listing shows delivery i of webhook id
// with the status and number of attempts wanted, and returns it.
func (e *env) awaitDelivery(key, id string, i int, status string, attempts int) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ds := e.deliveries(key, id)
		if len(ds) > i {
			d := ds[i]
			if d["status"] == status && len(d["attempts"].([]any)) == attempts {
				return d
			}
			if time.Now().After(deadline) {
				e.t.Fatalf("delivery %d: %v, want %s after %d attempts", i, d, status, attempts)
			}
		} else if time.Now().After(deadline) {
			e.t.Fatalf("%d deliveries, want delivery %d", len(ds), i)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func attempt(d map[string]any, i int) map[string]any {
	return d["attempts"].([]any)[i].(map[string]any)
}

func verifier(t *testing.T, secret string) *standardwebhooks.Webhook {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	return wh
}

func TestWebhookRegistration(t *testing.T) {
	e, clock := webhookEnv(t, false)
	r := e.registerWebhook(e.tenantA, "https://hooks.example.com/baton", []string{"ContractCreated", "ApprovalExpired", "ContractCreated"}, "ops-bot")
	id, secret := r.str("webhookId"), r.str("secret")
	if r.header.Get("Location") != "/v1/webhooks/"+id || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("headers %v", r.header)
	}
	raw, ok := strings.CutPrefix(secret, "whsec_")
	if b, err := base64.StdEncoding.DecodeString(raw); !ok || err != nil || len(b) < 24 || len(b) > 32 {
		t.Fatalf("secret %q", secret)
	}
	if r.str("eventTypes") != `["ContractCreated","ApprovalExpired"]` || r.str("targetExecutors") != `["ops-bot"]` || r.str("tenant") != "a" || r.str("status") != "active" {
		t.Fatalf("registration: %s", r.raw)
	}
	// The secret is never shown again.
	got := e.must(e.do("GET", "/v1/webhooks/"+id, e.tenantA2, nil), 200)
	list := e.must(e.do("GET", "/v1/webhooks", e.tenantA, nil), 200)
	for _, a := range []response{got, list} {
		if strings.Contains(string(a.raw), secret) || strings.Contains(string(a.raw), `"secret"`) {
			t.Fatalf("a read shows the secret: %s", a.raw)
		}
	}
	if n := len(list.body["data"].([]any)); n != 1 {
		t.Fatalf("tenant a lists %d webhooks", n)
	}
	// Another tenant's webhook does not exist for tenant b.
	if n := len(e.must(e.do("GET", "/v1/webhooks", e.tenantB, nil), 200).body["data"].([]any)); n != 0 {
		t.Fatalf("tenant b lists %d webhooks", n)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/webhooks/" + id}, {"DELETE", "/v1/webhooks/" + id}, {"POST", "/v1/webhooks/" + id + "/rotate"},
		{"GET", "/v1/webhooks/" + id + "/deliveries"}, {"POST", "/v1/webhooks/" + id + "/deliveries/msg_0123456789abcdef0123456789abcdef/redeliver"},
	} {
		a := e.do(c.method, c.path, e.tenantB, nil)
		if a.status != 404 || a.str("code") != "webhook_not_found" {
			t.Fatalf("tenant b: %s %s: %d %s", c.method, c.path, a.status, a.raw)
		}
	}
	// Rotation: a new secret, the old one signs for 24 more hours.
	rot := e.must(e.do("POST", "/v1/webhooks/"+id+"/rotate", e.tenantA, nil), 200)
	if s := rot.str("secret"); !strings.HasPrefix(s, "whsec_") || s == secret {
		t.Fatalf("rotation: %s", rot.raw)
	}
	if exp, _ := time.Parse(time.RFC3339Nano, rot.str("previousSecretExpiresAt")); !exp.Equal(clock.Now().Add(24 * time.Hour)) {
		t.Fatalf("previous secret expires at %v, want %v", exp, clock.Now().Add(24*time.Hour))
	}
	e.must(e.do("DELETE", "/v1/webhooks/"+id, e.tenantA, nil), 204)
	e.must(e.do("GET", "/v1/webhooks/"+id, e.tenantA, nil), 404)
	e.must(e.do("DELETE", "/v1/webhooks/"+id, e.tenantA, nil), 404)
	if n := len(e.must(e.do("GET", "/v1/webhooks", e.tenantA, nil), 200).body["data"].([]any)); n != 0 {
		t.Fatalf("a deleted webhook is listed")
	}
	e.must(e.do("GET", "/v1/webhooks/wh_nothex", e.tenantA, nil), 404)
}

// TestWebhookRegistrationIdempotencyKey: a registration retried with its
// Idempotency-Key is answered the first one's 201, secret included and not
// to be cached, and makes no second endpoint (which would receive every
// event again under other webhook-ids).
func TestWebhookRegistrationIdempotencyKey(t *testing.T) {
	e, _ := webhookEnv(t, false)
	body := `{"url":"https://hooks.example.com/baton","eventTypes":["*"]}`
	first := e.must(e.do("POST", "/v1/webhooks", e.tenantA, body, "Idempotency-Key", "hook-1"), 201)
	again := e.must(e.do("POST", "/v1/webhooks", e.tenantA, body, "Idempotency-Key", "hook-1"), 201)
	if again.str("webhookId") != first.str("webhookId") || again.str("secret") != first.str("secret") ||
		again.header.Get("Idempotent-Replayed") != "true" || again.header.Get("Cache-Control") != "no-store" ||
		again.header.Get("Location") != "/v1/webhooks/"+first.str("webhookId") {
		t.Fatalf("retry: %s %v, want the replay of %s", again.raw, again.header, first.raw)
	}
	if n := len(e.must(e.do("GET", "/v1/webhooks", e.tenantA, nil), 200).body["data"].([]any)); n != 1 {
		t.Fatalf("%d endpoints after a retried registration, want 1", n)
	}
	r := e.must(e.do("POST", "/v1/webhooks", e.tenantA, `{"url":"https://hooks.example.com/other","eventTypes":["*"]}`, "Idempotency-Key", "hook-1"), 422)
	if r.str("code") != "idempotency_key_reused" {
		t.Fatalf("another body: %s", r.raw)
	}
	// A refused registration leaves the key free for the corrected one.
	e.must(e.do("POST", "/v1/webhooks", e.tenantA, `{"url":"https://hooks.example.com/x"}`, "Idempotency-Key", "hook-2"), 422)
	e.must(e.do("POST", "/v1/webhooks", e.tenantA, `{"url":"https://hooks.example.com/x","eventTypes":["*"]}`, "Idempotency-Key", "hook-2"), 201)
}

// TestWebhookRotationIdempotencyKey: a rotation retried with its
// Idempotency-Key is answered the first rotation, and does not rotate
// again (which would drop the secret the receiver still holds from the
// signatures at once); the key is the endpoint's.
func TestWebhookRotationIdempotencyKey(t *testing.T) {
	e, _ := webhookEnv(t, false)
	id := e.registerWebhook(e.tenantA, "https://hooks.example.com/baton", []string{"*"}).str("webhookId")
	other := e.registerWebhook(e.tenantA, "https://hooks.example.com/other", []string{"*"}).str("webhookId")
	first := e.must(e.do("POST", "/v1/webhooks/"+id+"/rotate", e.tenantA, nil, "Idempotency-Key", "rot-1"), 200)
	again := e.must(e.do("POST", "/v1/webhooks/"+id+"/rotate", e.tenantA, nil, "Idempotency-Key", "rot-1"), 200)
	if again.str("secret") != first.str("secret") || again.header.Get("Idempotent-Replayed") != "true" || again.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("retried rotation: %s %v, want the replay of %s", again.raw, again.header, first.raw)
	}
	// The key names one rotation of one endpoint.
	if r := e.do("POST", "/v1/webhooks/"+other+"/rotate", e.tenantA, nil, "Idempotency-Key", "rot-1"); r.status != 422 || r.str("code") != "idempotency_key_reused" {
		t.Fatalf("the key on another endpoint's rotation: %d %s", r.status, r.raw)
	}
	if next := e.must(e.do("POST", "/v1/webhooks/"+id+"/rotate", e.tenantA, nil, "Idempotency-Key", "rot-2"), 200); next.str("secret") == first.str("secret") {
		t.Fatalf("a new key did not rotate: %s", next.raw)
	}
	// Another tenant's endpoint is not found, and its key stays free.
	e.must(e.do("POST", "/v1/webhooks/"+id+"/rotate", e.tenantB, nil, "Idempotency-Key", "rot-3"), 404)
}

func TestWebhookRegistrationRefusesBadInput(t *testing.T) {
	e, _ := webhookEnv(t, false)
	for _, c := range []struct {
		body     string
		pointers []string
		code     string
	}{
		{`{}`, []string{"/url", "/eventTypes"}, "required"},
		{`{"url":"ftp://hooks.example.com/x","eventTypes":["*"]}`, []string{"/url"}, "invalid_scheme"},
		{`{"url":"/relative","eventTypes":["*"]}`, []string{"/url"}, "invalid_url"},
		{`{"url":"https://user:pw@hooks.example.com/","eventTypes":["*"]}`, []string{"/url"}, "credentials_in_url"},
		{`{"url":"http://127.0.0.1:9000/hook","eventTypes":["*"]}`, []string{"/url"}, "private_address"},
		{`{"url":"http://[::ffff:10.1.2.3]/hook","eventTypes":["*"]}`, []string{"/url"}, "private_address"},
		{`{"url":"https://100.64.0.7/hook","eventTypes":["*"]}`, []string{"/url"}, "private_address"},
		{`{"url":"https://[fd00::1]/hook","eventTypes":["*"]}`, []string{"/url"}, "private_address"},
		{`{"url":"https://[64:ff9b:1::a00:1]/hook","eventTypes":["*"]}`, []string{"/url"}, "private_address"}, // local-use NAT64 (RFC 8215)
		{`{"url":"https://[::127.0.0.1]/hook","eventTypes":["*"]}`, []string{"/url"}, "private_address"},      // IPv4-compatible
		{`{"url":"https://[::ffff:0:7f00:1]/hook","eventTypes":["*"]}`, []string{"/url"}, "private_address"},  // SIIT
		{`{"url":"https://[fec0::1]/hook","eventTypes":["*"]}`, []string{"/url"}, "private_address"},          // site-local
		{`{"url":"http://169.254.169.254/latest/meta-data","eventTypes":["*"]}`, []string{"/url"}, "private_address"},
		{`{"url":"http://localhost:8080/","eventTypes":["*"]}`, []string{"/url"}, "private_address"},
		{`{"url":"http://localhost./","eventTypes":["*"]}`, []string{"/url"}, "private_address"},
		{`{"url":"http://hooks.localhost./","eventTypes":["*"]}`, []string{"/url"}, "private_address"},
		// Names as the HTTP client maps them (IDNA): full-width letters and
		// the ideographic full stop. They were taken, and refused at connect.
		{`{"url":"http://ｌｏｃａｌｈｏｓｔ:8080/","eventTypes":["*"]}`, []string{"/url"}, "private_address"},
		{`{"url":"http://127。0。0。1/","eventTypes":["*"]}`, []string{"/url"}, "private_address"},
		{`{"url":"http://１６９.２５４.１６９.２５４/","eventTypes":["*"]}`, []string{"/url"}, "private_address"},
		// IPv4 addresses in the forms a C resolver and WHATWG URLs read too.
		{`{"url":"http://127.1/","eventTypes":["*"]}`, []string{"/url"}, "invalid_url"},
		{`{"url":"http://0x7f000001/","eventTypes":["*"]}`, []string{"/url"}, "invalid_url"},
		{`{"url":"http://2130706433/","eventTypes":["*"]}`, []string{"/url"}, "invalid_url"},
		{`{"url":"http://017700000001/","eventTypes":["*"]}`, []string{"/url"}, "invalid_url"},
		{`{"url":"http://hooks.example.com.8/","eventTypes":["*"]}`, []string{"/url"}, "invalid_url"},
		{`{"url":"https://hooks.example.com:99999/","eventTypes":["*"]}`, []string{"/url"}, "invalid_url"},
		{`{"url":"https://hooks.example.com:0/","eventTypes":["*"]}`, []string{"/url"}, "invalid_url"},
		{`{"url":"https://hooks.example.com/","eventTypes":[]}`, []string{"/eventTypes"}, "empty"},
		{`{"url":"https://hooks.example.com/","eventTypes":["contract created"]}`, []string{"/eventTypes/0"}, "invalid_format"},
		{`{"url":"https://hooks.example.com/","eventTypes":["*"],"targetExecutors":["ok", ""]}`, []string{"/targetExecutors/1"}, "invalid_format"},
		// What a contract's targetExecutor refuses too: a C1 control (U+009B,
		// a terminal's CSI) and a bidirectional override. Both were kept.
		{`{"url":"https://hooks.example.com/","eventTypes":["*"],"targetExecutors":["ops\u009b31mbot"]}`, []string{"/targetExecutors/0"}, "invalid_format"},
		{`{"url":"https://hooks.example.com/","eventTypes":["*"],"targetExecutors":["ok", "\u202etob-spo"]}`, []string{"/targetExecutors/1"}, "invalid_format"},
		{`{"url":"https://hooks.example.com/","eventTypes":"ContractCreated"}`, []string{"/eventTypes"}, "invalid_type"},
	} {
		r := e.do("POST", "/v1/webhooks", e.tenantA, c.body)
		if r.status != 422 || r.str("code") != "validation_failed" {
			t.Fatalf("%s: %d %s", c.body, r.status, r.raw)
		}
		fields, _ := r.body["fields"].([]any)
		var ptrs []string
		for _, f := range fields {
			ptrs = append(ptrs, f.(map[string]any)["pointer"].(string))
		}
		if strings.Join(ptrs, " ") != strings.Join(c.pointers, " ") || fields[0].(map[string]any)["code"] != c.code {
			t.Fatalf("%s: fields %v, want pointers %v and code %s", c.body, fields, c.pointers, c.code)
		}
	}
	e.must(e.do("POST", "/v1/webhooks", e.tenantA, `{"url":`), 400)
	e.must(e.do("POST", "/v1/webhooks", "", `{}`), 401)
	// A public address in dotted decimal, a port in range, a name with a
	// number in it: taken.
	for _, u := range []string{"https://93.184.215.14:8443/hook", "https://hooks.example.com:443/", "https://v2.hooks.example.com/a", "https://hooks.example.com./", "https://bücher.example/hook"} {
		e.must(e.do("POST", "/v1/webhooks", e.tenantA, `{"url":"`+u+`","eventTypes":["*"]}`), 201)
	}
}

func TestWebhookDeliverySignedAndFiltered(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	var outcomes []string
	var mu sync.Mutex
	dispatch(t, e, clock, func(c *webhook.Config) {
		c.OnAttempt = func(o string) { mu.Lock(); outcomes = append(outcomes, o); mu.Unlock() }
	})
	w := e.registerWebhook(e.tenantA, rc.srv.URL+"/hook", []string{"ContractCreated"}, "ops-bot")
	id, secret := w.str("webhookId"), w.str("secret")

	handoff := e.contract(e.tenantA, nil)                                       // delivered
	e.contract(e.tenantA, map[string]any{"targetExecutor": "another-executor"}) // not this webhook's executor
	e.contract(e.tenantB, nil)                                                  // another tenant's
	e.must(e.post(handoff, "approval", e.tenantA, approveBody()), 200)          // not a type it wants
	got := rc.await(t, 1)
	rc.quiet(t, 1)

	req := got[0]
	wh := verifier(t, secret)
	if err := wh.Verify(req.body, req.header); err != nil {
		t.Fatalf("the reference library refuses the signature: %v (headers %v)", err, req.header)
	}
	var body struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
		Data      struct {
			HandoffID string          `json:"handoffId"`
			Seq       uint64          `json:"seq"`
			Type      string          `json:"type"`
			Actor     string          `json:"actor"`
			Hash      string          `json:"hash"`
			PrevHash  string          `json:"prevHash"`
			Data      json.RawMessage `json:"data"`
		} `json:"data"`
	}
	if err := json.Unmarshal(req.body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Type != "ContractCreated" || body.Data.HandoffID != handoff || body.Data.Seq != 1 || body.Data.Type != "ContractCreated" ||
		body.Data.Hash == "" || body.Data.PrevHash == "" || !strings.HasPrefix(body.Data.Actor, "key:") || body.Timestamp.IsZero() ||
		!strings.Contains(string(body.Data.Data), `"targetExecutor":"ops-bot"`) {
		t.Fatalf("body %s", req.body)
	}
	// The ledger shows the same event.
	l := e.ledger(handoff, e.tenantA)
	if first := l.body["events"].([]any)[0].(map[string]any); first["hash"] != body.Data.Hash {
		t.Fatalf("the ledger's first event %v, the delivery's hash %s", first, body.Data.Hash)
	}
	d := e.awaitDelivery(e.tenantA, id, 0, "succeeded", 1)
	if req.header.Get("webhook-id") != d["deliveryId"] || attempt(d, 0)["statusCode"] != float64(204) || attempt(d, 0)["outcome"] != "succeeded" {
		t.Fatalf("delivery %v, webhook-id %s", d, req.header.Get("webhook-id"))
	}
	// A forged signature, a changed body or another secret is refused.
	forged := req.header.Clone()
	forged.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32)))
	if err := wh.Verify(req.body, forged); err == nil {
		t.Fatal("a forged signature was accepted")
	}
	if err := wh.Verify(append([]byte(" "), req.body...), req.header); err == nil {
		t.Fatal("a changed body was accepted")
	}
	if err := verifier(t, "whsec_"+base64.StdEncoding.EncodeToString(make([]byte, 32))).Verify(req.body, req.header); err == nil {
		t.Fatal("another secret verified the signature")
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(outcomes, ",") != "succeeded" {
		t.Fatalf("OnAttempt saw %v", outcomes)
	}
}

func TestWebhookRotationSignsWithBothSecrets(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	dispatch(t, e, clock, nil)
	w := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"*"})
	id, old := w.str("webhookId"), w.str("secret")
	rot := e.must(e.do("POST", "/v1/webhooks/"+id+"/rotate", e.tenantA, nil), 200)
	fresh := rot.str("secret")

	e.contract(e.tenantA, nil)
	req := rc.await(t, 1)[0]
	if sigs := strings.Fields(req.header.Get("webhook-signature")); len(sigs) != 2 {
		t.Fatalf("during the grace period: signatures %q, want the new and the old", req.header.Get("webhook-signature"))
	}
	for name, s := range map[string]string{"new": fresh, "old": old} {
		if err := verifier(t, s).Verify(req.body, req.header); err != nil {
			t.Fatalf("the %s secret does not verify a delivery during the grace period: %v", name, err)
		}
	}
	// After the grace period only the new secret signs.
	clock.Advance(24*time.Hour + time.Second)
	e.contract(e.tenantA, nil)
	req = rc.await(t, 2)[1]
	if sigs := strings.Fields(req.header.Get("webhook-signature")); len(sigs) != 1 {
		t.Fatalf("after the grace period: signatures %q", req.header.Get("webhook-signature"))
	}
	if err := verifier(t, fresh).VerifyIgnoringTimestamp(req.body, req.header); err != nil {
		t.Fatalf("the new secret: %v", err)
	}
	if err := verifier(t, old).VerifyIgnoringTimestamp(req.body, req.header); err == nil {
		t.Fatal("the old secret still verifies after its grace period")
	}
}

func TestWebhookRetriesOnScheduleAcrossRestartAndRedelivery(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	failing := true
	var mu sync.Mutex
	rc.setAnswer(func(n int, w http.ResponseWriter) {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	stop := dispatch(t, e, clock, nil) // schedule: 1m, 2m (3 attempts a round)
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"ContractCreated"}).str("webhookId")
	t0 := clock.Now()
	e.contract(e.tenantA, nil)
	rc.await(t, 1)
	d := e.awaitDelivery(e.tenantA, id, 0, "pending", 1)
	if a := attempt(d, 0); a["outcome"] != "retrying" || a["statusCode"] != float64(500) || a["nextAttemptAt"] != t0.Add(time.Minute).Format(time.RFC3339) {
		t.Fatalf("first attempt %v, want retrying at %v", a, t0.Add(time.Minute))
	}
	// A restart loses nothing: the next dispatcher finds the due time in
	// the recorded events.
	stop()
	dispatch(t, e, clock, nil)
	clock.Advance(59 * time.Second)
	rc.quiet(t, 1)
	clock.Advance(time.Second)
	rc.await(t, 2)
	e.awaitDelivery(e.tenantA, id, 0, "pending", 2)
	clock.Advance(2 * time.Minute)
	rc.await(t, 3)
	d = e.awaitDelivery(e.tenantA, id, 0, "failed", 3)
	if a := attempt(d, 2); a["outcome"] != "failed" || a["nextAttemptAt"] != nil {
		t.Fatalf("last attempt %v", a)
	}
	clock.Advance(10 * time.Hour)
	rc.quiet(t, 3)

	// Redelivery: the same webhook-id, a new round.
	mu.Lock()
	failing = false
	mu.Unlock()
	r := e.must(e.do("POST", "/v1/webhooks/"+id+"/deliveries/"+d["deliveryId"].(string)+"/redeliver", e.tenantA, nil), 202)
	if r.str("status") != "pending" {
		t.Fatalf("redeliver: %s", r.raw)
	}
	got := rc.await(t, 4)
	e.awaitDelivery(e.tenantA, id, 0, "succeeded", 4)
	for i, g := range got {
		if g.header.Get("webhook-id") != d["deliveryId"] {
			t.Fatalf("attempt %d has webhook-id %q, want %v", i+1, g.header.Get("webhook-id"), d["deliveryId"])
		}
	}
	e.must(e.do("POST", "/v1/webhooks/"+id+"/deliveries/msg_0123456789abcdef0123456789abcdef/redeliver", e.tenantA, nil), 404)
}

func TestWebhookHonoursRetryAfter(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	rc.setAnswer(func(n int, w http.ResponseWriter) {
		switch n {
		case 1:
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			w.Header().Set("Retry-After", "100000") // bounded to MaxRetryAfter
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	dispatch(t, e, clock, func(c *webhook.Config) {
		// A short schedule: Retry-After lengthens a wait, never shortens it.
		c.Schedule = []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second}
		c.MaxRetryAfter = 30 * time.Second
	})
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"*"}).str("webhookId")
	t0 := clock.Now()
	e.contract(e.tenantA, nil)
	rc.await(t, 1)
	d := e.awaitDelivery(e.tenantA, id, 0, "pending", 1)
	if got := d["nextAttemptAt"]; got != t0.Add(7*time.Second).Format(time.RFC3339) {
		t.Fatalf("after a 429 with Retry-After: 7 the next attempt is at %v, want %v", got, t0.Add(7*time.Second))
	}
	clock.Advance(6 * time.Second)
	rc.quiet(t, 1)
	clock.Advance(time.Second)
	rc.await(t, 2)
	d = e.awaitDelivery(e.tenantA, id, 0, "pending", 2)
	if got := d["nextAttemptAt"]; got != t0.Add(37*time.Second).Format(time.RFC3339) {
		t.Fatalf("after a 503 with Retry-After: 100000 the next attempt is at %v, want %v (bounded to 30s)", got, t0.Add(37*time.Second))
	}
	clock.Advance(30 * time.Second)
	rc.await(t, 3)
	e.awaitDelivery(e.tenantA, id, 0, "succeeded", 3)
}

func TestWebhookGoneDisablesTheEndpoint(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	rc.setAnswer(func(n int, w http.ResponseWriter) { w.WriteHeader(http.StatusGone) })
	dispatch(t, e, clock, nil)
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"*"}).str("webhookId")
	e.contract(e.tenantA, nil)
	rc.await(t, 1)
	d := e.awaitDelivery(e.tenantA, id, 0, "failed", 1)
	if a := attempt(d, 0); a["outcome"] != "gone" || a["statusCode"] != float64(410) {
		t.Fatalf("attempt %v", a)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		w := e.must(e.do("GET", "/v1/webhooks/"+id, e.tenantA, nil), 200)
		if w.str("status") == "disabled" && w.str("disabledReason") != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a 410: %s", w.raw)
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.contract(e.tenantA, nil)
	clock.Advance(time.Hour)
	rc.quiet(t, 1)
	if n := len(e.deliveries(e.tenantA, id)); n != 1 {
		t.Fatalf("%d deliveries to a disabled endpoint", n)
	}
	r := e.do("POST", "/v1/webhooks/"+id+"/deliveries/"+d["deliveryId"].(string)+"/redeliver", e.tenantA, nil)
	if r.status != 409 || r.str("code") != "webhook_not_active" {
		t.Fatalf("redeliver to a disabled endpoint: %d %s", r.status, r.raw)
	}
}

func TestWebhookTimeout(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	rc.setAnswer(func(n int, w http.ResponseWriter) {
		select {
		case <-time.After(5 * time.Second):
		case <-rc.release:
		}
	})
	dispatch(t, e, clock, func(c *webhook.Config) { c.Timeout = 100 * time.Millisecond })
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"*"}).str("webhookId")
	e.contract(e.tenantA, nil)
	d := e.awaitDelivery(e.tenantA, id, 0, "pending", 1)
	a := attempt(d, 0)
	if a["outcome"] != "retrying" || !strings.Contains(fmt.Sprint(a["error"]), "no answer within 100ms") || a["statusCode"] != nil {
		t.Fatalf("attempt %v", a)
	}
	if ms := a["durationMs"].(float64); ms < 100 || ms > 2000 {
		t.Fatalf("the attempt took %vms", ms)
	}
}

// A receiver that answers 101 Switching Protocols, unasked, and then holds
// the connection open: the client hands such an answer's connection over
// as its body, which the request's timeout no longer bounds, so the
// attempt never ended. Its worker was held for good, the delivery stayed
// "sending" on its replica, and each such delivery took one more of the
// endpoint's and tenant's slots until none were left.
func TestWebhookSwitchingProtocolsIsBounded(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	free := make(chan struct{})
	rc.setAnswer(func(n int, w http.ResponseWriter) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		buf.Flush()
		<-free
	})
	dispatch(t, e, clock, func(c *webhook.Config) { c.Timeout = 100 * time.Millisecond })
	t.Cleanup(func() { close(free) }) // before the dispatcher's stop, which waits for its attempts
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"*"}).str("webhookId")
	e.contract(e.tenantA, nil)
	d := e.awaitDelivery(e.tenantA, id, 0, "pending", 1)
	if a := attempt(d, 0); a["outcome"] != "retrying" || a["statusCode"] != float64(101) {
		t.Fatalf("attempt %v", a)
	}
}

// An answer's headers are read up to 64 KiB, as its body is: the client's
// default let a receiver send 10 MB of them to every attempt, and a
// tenant's few receivers doing so took the server from 70 to 220 MB.
// Such an answer fails the attempt.
func TestWebhookHugeAnswerHeadersFailTheAttempt(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	rc.setAnswer(func(n int, w http.ResponseWriter) {
		for i := range 1000 {
			w.Header().Set(fmt.Sprintf("X-Filler-%d", i), strings.Repeat("y", 100))
		}
		w.WriteHeader(http.StatusOK)
	})
	dispatch(t, e, clock, nil)
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"*"}).str("webhookId")
	e.contract(e.tenantA, nil)
	d := e.awaitDelivery(e.tenantA, id, 0, "pending", 1)
	if a := attempt(d, 0); a["outcome"] != "retrying" || a["statusCode"] != nil || !strings.Contains(fmt.Sprint(a["error"]), "header") {
		t.Fatalf("attempt %v", a)
	}
}

func TestWebhookRefusesPrivateAddressesAtConnect(t *testing.T) {
	// Registration lets the loopback endpoint in; the sender does not.
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	dispatch(t, e, clock, func(c *webhook.Config) { c.AllowPrivate = false })
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"*"}).str("webhookId")
	e.contract(e.tenantA, nil)
	d := e.awaitDelivery(e.tenantA, id, 0, "pending", 1)
	if a := attempt(d, 0); !strings.Contains(fmt.Sprint(a["error"]), "refusing to connect") {
		t.Fatalf("attempt %v", a)
	}
	rc.quiet(t, 0)
	// A host name that resolves to loopback is refused the same way, and
	// the tenant is not told the address it resolved to: names would map
	// the operator's network.
	id = e.registerWebhook(e.tenantA, strings.Replace(rc.srv.URL, "127.0.0.1", "localhost", 1), []string{"*"}).str("webhookId")
	e.contract(e.tenantA, nil)
	d = e.awaitDelivery(e.tenantA, id, 0, "pending", 1)
	if a := attempt(d, 0); !strings.Contains(fmt.Sprint(a["error"]), "refusing to connect") ||
		strings.Contains(fmt.Sprint(a["error"]), "127.0.0.1") || strings.Contains(fmt.Sprint(a["error"]), "::1") {
		t.Fatalf("attempt %v", a)
	}
	rc.quiet(t, 0)
}

// The operator is told once an hour that an endpoint's address is
// internal, not at every attempt of every delivery to it.
func TestWebhookRefusedAddressLoggedOnceAnHour(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	var logs syncBuffer
	dispatch(t, e, clock, func(c *webhook.Config) { c.AllowPrivate, c.Log = false, zerolog.New(&logs) })
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"ContractCreated"}).str("webhookId")
	said := func() int { return strings.Count(logs.String(), "address is internal") }
	e.contract(e.tenantA, nil)
	e.awaitDelivery(e.tenantA, id, 0, "pending", 1)
	e.contract(e.tenantA, nil)
	e.awaitDelivery(e.tenantA, id, 0, "pending", 1)
	e.awaitDelivery(e.tenantA, id, 1, "pending", 1)
	clock.Advance(time.Minute)
	e.awaitDelivery(e.tenantA, id, 0, "pending", 2)
	e.awaitDelivery(e.tenantA, id, 1, "pending", 2)
	if n := said(); n != 1 {
		t.Fatalf("said %d times in four attempts within the hour, want once:\n%s", n, logs.String())
	}
	clock.Advance(time.Hour)
	e.contract(e.tenantA, nil)
	e.awaitDelivery(e.tenantA, id, 2, "pending", 1)
	if n := said(); n != 2 {
		t.Fatalf("said %d times, want again after an hour:\n%s", n, logs.String())
	}
	rc.quiet(t, 0)
}

// deliveryRefusingStore refuses the appends that open deliveries while
// refuse is set, as a full disk does.
type deliveryRefusingStore struct {
	eventstore.Store
	refuse *atomic.Bool
}

func (s deliveryRefusingStore) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if s.refuse.Load() && strings.HasPrefix(stream, domain.WebhookDeliveryStream("")) {
		return eventstore.AppendResult{}, eventstore.ErrFull
	}
	return s.Store.Append(ctx, stream, exp, evs...)
}

// While the store refuses to open deliveries, the log says so once a
// minute, not once a delivery at every pass (every poll): a full disk
// filled the log further.
func TestWebhookSchedulingFailuresLoggedOnceAMinute(t *testing.T) {
	clock := &fakeClock{t: time.Now().UTC().Truncate(time.Second)}
	envLedgerOptions = &ledger.Options{Now: clock.Now, WebhookAllowPrivate: true}
	var refuse atomic.Bool
	e := newEnvStore(t, nil, func(s eventstore.Store) eventstore.Store { return deliveryRefusingStore{s, &refuse} })
	envLedgerOptions = nil
	rc := newReceiver(t)
	var logs syncBuffer
	dispatch(t, e, clock, func(c *webhook.Config) { c.Log = zerolog.New(&logs) })
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"ContractCreated"}).str("webhookId")
	refuse.Store(true)
	for range 3 {
		e.contract(e.tenantA, nil)
	}
	said := func() int { return strings.Count(logs.String(), "scheduling deliveries failed") }
	deadline := time.Now().Add(10 * time.Second)
	for said() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // some 60 passes at a 5 ms poll
	if n := strings.Count(logs.String(), "\n"); said() != 1 || n != 1 {
		t.Fatalf("said %d times in %d lines, want once:\n%.2000s", said(), n, logs.String())
	}
	refuse.Store(false)
	for i := range 3 {
		e.awaitDelivery(e.tenantA, id, i, "succeeded", 1)
	}
}

// Deliveries due at once are attempted oldest first: taken in the order of
// a map, a busy dispatcher delivered an endpoint's events in no order, and
// one could wait behind later ones round after round.
func TestWebhookDueDeliveriesOldestFirst(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	hold := make(chan struct{})
	rc.setAnswer(func(n int, w http.ResponseWriter) {
		if n == 1 {
			<-hold // the one worker is busy while the others come due
		}
		w.WriteHeader(http.StatusNoContent)
	})
	dispatch(t, e, clock, func(c *webhook.Config) { c.Workers, c.PerEndpoint, c.PerTenant = 1, 1, 1 })
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"ContractCreated"}).str("webhookId")
	var want []string
	for i := range 8 {
		want = append(want, e.contract(e.tenantA, nil))
		if i == 0 {
			rc.await(t, 1)
		} else {
			e.awaitDelivery(e.tenantA, id, i, "pending", 0)
		}
	}
	close(hold)
	got := rc.await(t, 8)
	var order []string
	for _, g := range got {
		var b struct {
			Data struct {
				HandoffID string `json:"handoffId"`
			} `json:"data"`
		}
		if err := json.Unmarshal(g.body, &b); err != nil {
			t.Fatal(err)
		}
		order = append(order, b.Data.HandoffID)
	}
	if !slices.Equal(order, want) {
		t.Fatalf("delivered in the order %v, want the events' %v", order, want)
	}
}

func TestWebhookRedirectIsNotFollowed(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	target := newReceiver(t)
	rc.setAnswer(func(n int, w http.ResponseWriter) {
		w.Header().Set("Location", target.srv.URL)
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	dispatch(t, e, clock, nil)
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"*"}).str("webhookId")
	e.contract(e.tenantA, nil)
	d := e.awaitDelivery(e.tenantA, id, 0, "pending", 1)
	if a := attempt(d, 0); a["statusCode"] != float64(307) || a["outcome"] != "retrying" {
		t.Fatalf("attempt %v", a)
	}
	target.quiet(t, 0)
}

func TestWebhookDeliveriesPaged(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	dispatch(t, e, clock, nil)
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"ContractCreated"}).str("webhookId")
	var handoffs []string
	for range 3 {
		handoffs = append(handoffs, e.contract(e.tenantA, nil))
	}
	rc.await(t, 3)
	e.awaitDelivery(e.tenantA, id, 2, "succeeded", 1)
	var seen []string
	cursor := ""
	for page := 0; ; page++ {
		r := e.must(e.do("GET", "/v1/webhooks/"+id+"/deliveries?limit=2&cursor="+cursor, e.tenantA, nil), 200)
		for _, d := range r.body["data"].([]any) {
			seen = append(seen, d.(map[string]any)["handoffId"].(string))
		}
		if r.body["hasMore"] != true {
			break
		}
		cursor = r.str("nextCursor")
	}
	// Deliveries of events that arrive together are scheduled at once, in
	// no fixed order among themselves: the pages hold each once.
	slices.Sort(seen)
	slices.Sort(handoffs)
	if strings.Join(seen, ",") != strings.Join(handoffs, ",") {
		t.Fatalf("pages list %v, want %v", seen, handoffs)
	}
	// A repeated limit or cursor is refused, not read as its first value.
	for _, q := range []string{"?limit=0", "?limit=101", "?cursor=msg_0123456789abcdef0123456789abcdef", "?limit=1&limit=100", "?cursor=" + cursor + "&cursor=" + cursor} {
		if r := e.do("GET", "/v1/webhooks/"+id+"/deliveries"+q, e.tenantA, nil); r.status != 422 {
			t.Fatalf("%s: %d %s", q, r.status, r.raw)
		}
	}
}

// Several dispatchers on one store (replicas) make each attempt once.
func TestWebhookDispatchersDeliverOnce(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	var attempts atomic.Int64
	for i := range 3 {
		dispatch(t, e, clock, func(c *webhook.Config) {
			c.Claimant = fmt.Sprintf("replica-%d", i)
			c.OnAttempt = func(string) { attempts.Add(1) }
		})
	}
	e.registerWebhook(e.tenantA, rc.srv.URL, []string{"*"})
	const n = 10
	for range n {
		e.contract(e.tenantA, nil)
	}
	got := rc.await(t, n)
	rc.quiet(t, n)
	ids := map[string]bool{}
	for _, g := range got {
		ids[g.header.Get("webhook-id")] = true
	}
	if len(ids) != n {
		t.Fatalf("%d requests carry %d distinct webhook-ids", len(got), len(ids))
	}
	if a := attempts.Load(); a != n {
		t.Fatalf("the dispatchers made %d attempts, want %d", a, n)
	}
}

// A replica that stops in the middle of an attempt leaves a claim with no
// outcome: another replica makes the attempt again once the claim's lease
// (the request timeout and its margin) has run out, and not before.
func TestWebhookAbandonedClaimIsTakenOver(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	rc.setAnswer(func(n int, w http.ResponseWriter) {
		if n == 1 {
			select { // the first attempt hangs until its sender is gone
			case <-rc.release:
			case <-time.After(5 * time.Second):
			}
		}
	})
	lease := func(c *webhook.Config) { c.Timeout, c.LeaseMargin = 2*time.Second, 3*time.Second }
	stopA := dispatch(t, e, clock, lease)
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"*"}).str("webhookId")
	e.contract(e.tenantA, nil)
	rc.await(t, 1)
	stopA()
	d := e.awaitDelivery(e.tenantA, id, 0, "sending", 1)
	if a := attempt(d, 0); a["outcome"] != nil {
		t.Fatalf("the abandoned attempt has an outcome: %v", a)
	}
	dispatch(t, e, clock, lease)
	clock.Advance(4 * time.Second)
	rc.quiet(t, 1)
	clock.Advance(time.Second)
	got := rc.await(t, 2)
	d = e.awaitDelivery(e.tenantA, id, 0, "succeeded", 2)
	if attempt(d, 0)["outcome"] != nil || attempt(d, 1)["outcome"] != "succeeded" || got[0].header.Get("webhook-id") != got[1].header.Get("webhook-id") {
		t.Fatalf("delivery %v", d)
	}
}

// A receiver that hangs does not hold every worker: another endpoint's
// delivery, of the same tenant or another, goes out as its event comes,
// not once the hanging attempts have timed out. Eight hanging attempts of
// one endpoint held all eight workers, and every other endpoint waited.
func TestWebhookHangingReceiverDoesNotHoldOthers(t *testing.T) {
	e, clock := webhookEnv(t, true)
	hung := newReceiver(t)
	hung.setAnswer(func(n int, w http.ResponseWriter) { <-hung.release })
	mine, theirs := newReceiver(t), newReceiver(t)
	dispatch(t, e, clock, func(c *webhook.Config) { c.Timeout = 20 * time.Second })
	e.registerWebhook(e.tenantA, hung.srv.URL, []string{"ContractCreated"})
	e.registerWebhook(e.tenantA, mine.srv.URL, []string{"ApprovalDecided"})
	e.registerWebhook(e.tenantB, theirs.srv.URL, []string{"*"})
	for range 12 {
		e.contract(e.tenantA, nil)
	}
	hung.await(t, 2) // the hanging attempts are being made
	start := time.Now()
	id := e.contract(e.tenantA, nil)
	e.must(e.do("POST", "/v1/executions/"+id+"/approval", e.tenantA, approveBody()), 200)
	e.contract(e.tenantB, nil)
	mine.await(t, 1)
	theirs.await(t, 1)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the other endpoints' deliveries waited %v for a hanging receiver", d)
	}
}

// A backlog to a tenant's receivers that hang does not hold its healthy
// endpoint behind it: once an endpoint's attempt has failed, it gets one
// attempt in flight, and the failing ones half of the tenant's share. The
// tenant's share (4 of 8 workers) went to the two hanging endpoints'
// backlog, a timeout at a time, and the healthy endpoint's delivery waited
// behind all of it (about 15 s here).
func TestWebhookFailingEndpointsLeaveTheTenantRoom(t *testing.T) {
	e, clock := webhookEnv(t, true)
	hung1, hung2 := newReceiver(t), newReceiver(t)
	for _, h := range []*receiver{hung1, hung2} {
		h.setAnswer(func(n int, w http.ResponseWriter) { <-h.release })
	}
	mine := newReceiver(t)
	dispatch(t, e, clock, func(c *webhook.Config) { c.Timeout = time.Second })
	e.registerWebhook(e.tenantA, hung1.srv.URL, []string{"ContractCreated"})
	e.registerWebhook(e.tenantA, hung2.srv.URL, []string{"ContractCreated"})
	e.registerWebhook(e.tenantA, mine.srv.URL, []string{"ApprovalDecided"})
	for range 30 {
		e.contract(e.tenantA, nil)
	}
	hung1.await(t, 2) // the first attempts hang
	hung2.await(t, 2)
	start := time.Now()
	id := e.contract(e.tenantA, nil)
	e.must(e.do("POST", "/v1/executions/"+id+"/approval", e.tenantA, approveBody()), 200)
	mine.await(t, 1)
	if d := time.Since(start); d > 8*time.Second {
		t.Fatalf("the healthy endpoint's delivery waited %v behind the failing endpoints' backlog", d)
	}
}

// A tenant has at most ledger.MaxWebhooksPerTenant active endpoints: each
// is another delivery of every event it wants, so without a bound one
// callback went out as many times as the tenant had registered endpoints.
func TestWebhookEndpointsPerTenantAreBounded(t *testing.T) {
	e, _ := webhookEnv(t, false)
	var first string
	for i := range ledger.MaxWebhooksPerTenant {
		id := e.registerWebhook(e.tenantA, fmt.Sprintf("https://hooks.example.com/%d", i), []string{"*"}).str("webhookId")
		if first == "" {
			first = id
		}
	}
	r := e.must(e.do("POST", "/v1/webhooks", e.tenantA, `{"url":"https://hooks.example.com/more","eventTypes":["*"]}`), 409)
	if r.str("code") != "too_many_webhooks" {
		t.Fatalf("code %q: %s", r.str("code"), r.raw)
	}
	if n := len(e.must(e.do("GET", "/v1/webhooks", e.tenantA, nil), 200).body["data"].([]any)); n != ledger.MaxWebhooksPerTenant {
		t.Fatalf("%d endpoints listed after a refused registration", n)
	}
	// A disabled endpoint counts: it may be enabled again at any time.
	e.must(e.do("PATCH", "/v1/webhooks/"+first, e.tenantA, `{"disabled":true}`), 200)
	if r := e.must(e.do("POST", "/v1/webhooks", e.tenantA, `{"url":"https://hooks.example.com/more","eventTypes":["*"]}`), 409); r.str("code") != "too_many_webhooks" {
		t.Fatalf("with one endpoint disabled: %s", r.raw)
	}
	// Another tenant's bound is its own, and a deleted endpoint frees a place.
	e.registerWebhook(e.tenantB, "https://hooks.example.com/b", []string{"*"})
	e.must(e.do("DELETE", "/v1/webhooks/"+first, e.tenantA, nil), 204)
	e.registerWebhook(e.tenantA, "https://hooks.example.com/again", []string{"*"})
}

// Changes of endpoints racing in one process take turns: 200 rotations of
// one endpoint at once all answer 200. They raced at the webhooks stream's
// revision, ran out of retries, and about half answered 500 internal_error.
func TestWebhookChangesAtOnceAllAnswer(t *testing.T) {
	e, _ := webhookEnv(t, false)
	id := e.registerWebhook(e.tenantA, "https://hooks.example.com/a", []string{"*"}).str("webhookId")
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int]int{}
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", e.srv.URL+"/v1/webhooks/"+id+"/rotate", nil)
			req.Header.Set("x-api-key", e.tenantA)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			got[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if got[200] != 200 {
		t.Fatalf("answers %v, want 200 of 200", got)
	}
}

// Redeliveries of one delivery at once all answer 202, as rotations do:
// they raced at the delivery stream's revision, and about half of 200
// answered 500 internal_error.
func TestWebhookRedeliveriesAtOnceAllAnswer(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	stop := dispatch(t, e, clock, nil)
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"ContractCreated"}).str("webhookId")
	e.contract(e.tenantA, nil)
	d := e.awaitDelivery(e.tenantA, id, 0, "succeeded", 1)
	stop() // no attempt claims the delivery meanwhile
	path := "/v1/webhooks/" + id + "/deliveries/" + d["deliveryId"].(string) + "/redeliver"
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int]int{}
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", e.srv.URL+path, nil)
			req.Header.Set("x-api-key", e.tenantA)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			got[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if got[202] != 200 {
		t.Fatalf("answers %v, want 202 to all 200", got)
	}
}

// claimRefusingStore refuses the appends of webhook attempt claims while
// refuse is set, as a full or failed store refuses them, and counts them.
type claimRefusingStore struct {
	eventstore.Store
	refuse atomic.Bool
	claims atomic.Int64
}

func (s *claimRefusingStore) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	if len(evs) > 0 && evs[0].Type == domain.EventWebhookAttemptClaimed && s.refuse.Load() {
		s.claims.Add(1)
		return eventstore.AppendResult{}, fmt.Errorf("%w: no space left on device", eventstore.ErrFull)
	}
	return s.Store.Append(ctx, stream, exp, evs...)
}

// A claim the store refuses holds its delivery back (1 s, doubling): due
// again at once, it was claimed again on every pass of the dispatcher,
// thousands of times a second, each logged, for as long as the store
// refused. Once the store takes it, the delivery goes out.
func TestWebhookClaimRefusedIsHeldBack(t *testing.T) {
	clock := &fakeClock{t: time.Now().UTC().Truncate(time.Second)}
	envLedgerOptions = &ledger.Options{Now: clock.Now, WebhookAllowPrivate: true}
	var store *claimRefusingStore
	e := newEnvStore(t, nil, func(s eventstore.Store) eventstore.Store {
		store = &claimRefusingStore{Store: s}
		return store
	})
	envLedgerOptions = nil
	rc := newReceiver(t)
	dispatch(t, e, clock, nil)
	e.registerWebhook(e.tenantA, rc.srv.URL+"/hook", []string{"ContractCreated"})
	store.refuse.Store(true)
	e.contract(e.tenantA, nil)
	deadline := time.Now().Add(10 * time.Second)
	for store.claims.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no claim tried")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // 40 of the dispatcher's polls
	if n := store.claims.Load(); n != 1 {
		t.Fatalf("%d claims refused before the clock moved, want 1", n)
	}
	clock.Advance(time.Second)
	for store.claims.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no claim tried again after the pause")
		}
		time.Sleep(5 * time.Millisecond)
	}
	clock.Advance(time.Second) // the second pause is 2 s: not yet
	time.Sleep(100 * time.Millisecond)
	if n := store.claims.Load(); n != 2 {
		t.Fatalf("%d claims refused, want 2 (the second pause doubled)", n)
	}
	store.refuse.Store(false)
	clock.Advance(time.Second)
	rc.await(t, 1)
	rc.quiet(t, 1)
}

// A draining dispatcher (the server stopping) starts no attempt: one begun
// in the stop's grace was cut off with the process, unrecorded, and the
// receiver got it again after the restart. The delivery stays due, for
// the next start or another replica.
func TestDrainingDispatcherStartsNoAttempt(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	d := webhook.New(webhook.Config{Store: e.store, Webhooks: e.services.Webhooks, Now: clock.Now, Schedule: []time.Duration{time.Minute},
		Poll: 5 * time.Millisecond, Timeout: 2 * time.Second, AllowPrivate: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	w := e.registerWebhook(e.tenantA, rc.srv.URL+"/hook", []string{"ContractCreated"})
	e.contract(e.tenantA, nil)
	rc.await(t, 1)
	d.Drain()
	e.contract(e.tenantA, nil)
	e.awaitDelivery(e.tenantA, w.str("webhookId"), 1, "pending", 0)
	rc.quiet(t, 1)
}

// PATCH /v1/webhooks/{id} changes the fields named and leaves the others;
// each change is one WebhookUpdated event, one that changes nothing is
// none, and a refused one is none.
func TestWebhookUpdate(t *testing.T) {
	e, clock := webhookEnv(t, false)
	id := e.registerWebhook(e.tenantA, "https://hooks.example.com/a", []string{"ContractCreated"}, "ops-bot").str("webhookId")
	path := "/v1/webhooks/" + id
	clock.Advance(time.Minute)
	r := e.must(e.do("PATCH", path, e.tenantA, `{"url":"https://hooks.example.com/b","eventTypes":["ApprovalDecided","ApprovalDecided","*"]}`), 200)
	if r.str("url") != "https://hooks.example.com/b" || r.str("eventTypes") != `["ApprovalDecided","*"]` || r.str("targetExecutors") != `["ops-bot"]` ||
		r.str("status") != "active" || r.str("updatedAt") != clock.Now().Format(time.RFC3339) || strings.Contains(string(r.raw), "secret\"") {
		t.Fatalf("update: %s", r.raw)
	}
	if g := e.must(e.do("GET", path, e.tenantA, nil), 200); g.str("url") != "https://hooks.example.com/b" {
		t.Fatalf("get after the update: %s", g.raw)
	}
	// null targetExecutors is every handoff, as at registration.
	if r := e.must(e.do("PATCH", path, e.tenantA, `{"targetExecutors":null}`), 200); r.str("targetExecutors") != `[]` {
		t.Fatalf("targetExecutors null: %s", r.raw)
	}
	n := e.countType("WebhookUpdated")
	if n != 2 {
		t.Fatalf("%d WebhookUpdated events, want 2", n)
	}
	// The same values again, or nothing, change nothing and record nothing.
	e.must(e.do("PATCH", path, e.tenantA, `{"url":"https://hooks.example.com/b","targetExecutors":[]}`), 200)
	e.must(e.do("PATCH", path, e.tenantA, `{}`), 200)
	for _, c := range []struct{ body, pointer, code string }{
		{`{"disable":true}`, "/disable", "unknown_field"},
		{`{"URL":"https://hooks.example.com/c"}`, "/URL", "unknown_field"},
		{`{"url":null}`, "/url", "invalid_type"},
		{`{"eventTypes":null}`, "/eventTypes", "invalid_type"},
		{`{"disabled":null}`, "/disabled", "invalid_type"},
		{`{"disabled":"true"}`, "/disabled", "invalid_type"},
		{`{"url":"https://127.0.0.1/x"}`, "/url", "private_address"},
		{`{"url":"hooks.example.com"}`, "/url", "invalid_url"},
		{`{"eventTypes":[]}`, "/eventTypes", "empty"},
		{`{"eventTypes":["contract-created"]}`, "/eventTypes/0", "invalid_format"},
		{`{"targetExecutors":[""]}`, "/targetExecutors/0", "invalid_format"},
		{`{"disabled":true,"url":"ftp://x.example.com"}`, "/url", "invalid_scheme"},
	} {
		r := e.do("PATCH", path, e.tenantA, c.body)
		if r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"`+c.pointer+`","code":"`+c.code+`"`) {
			t.Fatalf("%s: %d %s", c.body, r.status, r.raw)
		}
	}
	for _, c := range []struct {
		body   string
		status int
	}{{``, 400}, {`{"url":`, 400}, {`[]`, 422}, {`{"disabled":true,"disabled":false}`, 400}} {
		if r := e.do("PATCH", path, e.tenantA, c.body); r.status != c.status {
			t.Fatalf("%q: %d %s", c.body, r.status, r.raw)
		}
	}
	e.must(e.do("PATCH", path, e.tenantB, `{"disabled":true}`), 404)
	e.must(e.do("PATCH", "/v1/webhooks/wh_nothex", e.tenantA, `{"disabled":true}`), 404)
	if got := e.countType("WebhookUpdated"); got != n {
		t.Fatalf("%d WebhookUpdated events after updates that changed nothing or were refused, want %d", got, n)
	}
	e.must(e.do("DELETE", path, e.tenantA, nil), 204)
	e.must(e.do("PATCH", path, e.tenantA, `{"disabled":false}`), 404)
}

// A disabled endpoint gets nothing: no delivery of the events recorded
// while it is, and a retry that comes due while it is is canceled, as
// Stripe does; enabled again before a retry comes due, the retry is
// made, and the events recorded after are delivered.
func TestWebhookDisabledAndEnabled(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	fail := atomic.Bool{}
	rc.setAnswer(func(n int, w http.ResponseWriter) {
		if fail.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	dispatch(t, e, clock, nil)
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"ContractCreated"}).str("webhookId")
	path := "/v1/webhooks/" + id
	fail.Store(true)
	e.contract(e.tenantA, nil)
	rc.await(t, 1)
	e.awaitDelivery(e.tenantA, id, 0, "pending", 1) // its retry is due in a minute
	r := e.must(e.do("PATCH", path, e.tenantA, `{"disabled":true}`), 200)
	if r.str("status") != "disabled" || r.str("disabledReason") != "disabled by its owner" {
		t.Fatalf("disable: %s", r.raw)
	}
	e.contract(e.tenantA, nil) // recorded while disabled: never delivered
	clock.Advance(time.Minute)
	d := e.awaitDelivery(e.tenantA, id, 0, "failed", 2)
	if a := attempt(d, 1); a["outcome"] != "canceled" {
		t.Fatalf("a retry due while disabled: %v", a)
	}
	rc.quiet(t, 1)
	if r := e.do("POST", path+"/deliveries/"+d["deliveryId"].(string)+"/redeliver", e.tenantA, nil); r.status != 409 || r.str("code") != "webhook_not_active" {
		t.Fatalf("redeliver while disabled: %d %s", r.status, r.raw)
	}
	// Enabled: a redelivery is taken, and new events are delivered.
	if r := e.must(e.do("PATCH", path, e.tenantA, `{"disabled":false}`), 200); r.str("status") != "active" || r.str("disabledReason") != "" {
		t.Fatalf("enable: %s", r.raw)
	}
	fail.Store(false)
	e.must(e.do("POST", path+"/deliveries/"+d["deliveryId"].(string)+"/redeliver", e.tenantA, nil), 202)
	e.awaitDelivery(e.tenantA, id, 0, "succeeded", 3)
	h := e.contract(e.tenantA, nil)
	e.awaitDelivery(e.tenantA, id, 1, "succeeded", 1)
	if ds := e.deliveries(e.tenantA, id); len(ds) != 2 || ds[1]["handoffId"] != h {
		t.Fatalf("deliveries %v: want the first event's and the one after the endpoint was enabled", ds)
	}
	// A retry pending across a disable and an enable before it is due is
	// made.
	fail.Store(true)
	e.contract(e.tenantA, nil)
	e.awaitDelivery(e.tenantA, id, 2, "pending", 1)
	e.must(e.do("PATCH", path, e.tenantA, `{"disabled":true}`), 200)
	e.must(e.do("PATCH", path, e.tenantA, `{"disabled":false}`), 200)
	fail.Store(false)
	clock.Advance(time.Minute)
	e.awaitDelivery(e.tenantA, id, 2, "succeeded", 2)
	// An endpoint disabled by a 410 is enabled the same way.
	rc.setAnswer(func(n int, w http.ResponseWriter) { w.WriteHeader(http.StatusGone) })
	e.contract(e.tenantA, nil)
	e.awaitDelivery(e.tenantA, id, 3, "failed", 1)
	deadline := time.Now().Add(10 * time.Second)
	for e.must(e.do("GET", path, e.tenantA, nil), 200).str("status") != "disabled" {
		if time.Now().After(deadline) {
			t.Fatal("a 410 did not disable the endpoint")
		}
		time.Sleep(5 * time.Millisecond)
	}
	rc.setAnswer(nil)
	e.must(e.do("PATCH", path, e.tenantA, `{"disabled":false}`), 200)
	e.contract(e.tenantA, nil)
	e.awaitDelivery(e.tenantA, id, 4, "succeeded", 1)
}

// GET /v1/webhooks pages as the contracts do: limit, and cursor the last
// webhookId of the page before; a cursor deleted since still names its
// place, so a script deleting what it lists walks every endpoint.
func TestWebhooksListPaged(t *testing.T) {
	e, _ := webhookEnv(t, false)
	var ids []string
	for i := range 5 {
		ids = append(ids, e.registerWebhook(e.tenantA, fmt.Sprintf("https://hooks.example.com/%d", i), []string{"*"}).str("webhookId"))
	}
	other := e.registerWebhook(e.tenantB, "https://hooks.example.com/b", []string{"*"}).str("webhookId")
	page := func(key, q string) (got []string, next string) {
		t.Helper()
		r := e.must(e.do("GET", "/v1/webhooks"+q, key, nil), 200)
		for _, w := range r.body["data"].([]any) {
			got = append(got, w.(map[string]any)["webhookId"].(string))
		}
		if (r.body["hasMore"] == true) != (r.str("nextCursor") != "") {
			t.Fatalf("hasMore and nextCursor disagree: %s", r.raw)
		}
		return got, r.str("nextCursor")
	}
	// A tenant's endpoints (at most 50) are one page unless it asks for
	// less; an empty cursor is the first page.
	if got, next := page(e.tenantA, "?cursor="); !slices.Equal(got, ids) || next != "" {
		t.Fatalf("one page: %v %q", got, next)
	}
	got, next := page(e.tenantA, "?limit=2")
	if !slices.Equal(got, ids[:2]) || next != ids[1] {
		t.Fatalf("first page: %v %q", got, next)
	}
	// Both endpoints of the page deleted, the walk goes on after them.
	e.must(e.do("DELETE", "/v1/webhooks/"+ids[0], e.tenantA, nil), 204)
	e.must(e.do("DELETE", "/v1/webhooks/"+ids[1], e.tenantA, nil), 204)
	if got, next = page(e.tenantA, "?limit=2&cursor="+next); !slices.Equal(got, ids[2:4]) || next != ids[3] {
		t.Fatalf("second page: %v %q", got, next)
	}
	if got, next = page(e.tenantA, "?limit=2&cursor="+next); !slices.Equal(got, ids[4:]) || next != "" {
		t.Fatalf("last page: %v %q", got, next)
	}
	// An admin key pages through every tenant's.
	if got, _ := page(e.admin, "?cursor="+ids[4]); !slices.Equal(got, []string{other}) {
		t.Fatalf("admin after the last of a: %v", got)
	}
	for _, c := range []struct{ q, pointer, code string }{
		{"?cursor=" + other, "query:cursor", "unknown_cursor"}, // another tenant's
		{"?cursor=wh_0123456789abcdef", "query:cursor", "unknown_cursor"},
		{"?limit=0", "query:limit", "out_of_range"},
		{"?limit=101", "query:limit", "out_of_range"},
		{"?limit=", "query:limit", "out_of_range"},
		{"?limit=1&limit=2", "query:limit", "repeated"},
		{"?cursor=" + ids[2] + "&cursor=" + ids[3], "query:cursor", "repeated"},
		{"?limits=2", "query:limits", ""},
	} {
		r := e.do("GET", "/v1/webhooks"+c.q, e.tenantA, nil)
		if r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"`+c.pointer+`","code":"`+c.code) {
			t.Fatalf("%s: %d %s", c.q, r.status, r.raw)
		}
	}
}

// An attempt records the start of the receiver's answer body, as Stripe
// shows it: up to 1 KiB of text, cut at a character's end and marked
// truncated when more followed, only a mark when it was not text, and
// without a credential the answer showed.
func TestWebhookAttemptRecordsTheAnswer(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	long := strings.Repeat("x", 1023) + "é" + strings.Repeat("y", 100<<10)
	answers := []string{
		`{"error":"signature mismatch"}`,
		long,
		"\x89PNG\r\n\x1a\n\x00\x00",
		"upstream said: key=btn_sk_0123456789abcdefghijABCDEFGHIJ0123456789",
		"",
	}
	rc.setAnswer(func(n int, w http.ResponseWriter) {
		w.WriteHeader(http.StatusBadRequest)
		if n <= len(answers) {
			io.WriteString(w, answers[n-1])
		}
	})
	dispatch(t, e, clock, func(c *webhook.Config) { c.Schedule = []time.Duration{} }) // one attempt each
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"ContractCreated"}).str("webhookId")
	for i := range answers {
		e.contract(e.tenantA, nil)
		rc.await(t, i+1)
		e.awaitDelivery(e.tenantA, id, i, "failed", 1)
	}
	ds := e.deliveries(e.tenantA, id)
	got := func(i int) (string, any, any) {
		a := attempt(ds[i], 0)
		body, _ := a["responseBody"].(string)
		return body, a["responseBodyTruncated"], a["responseBodyBinary"]
	}
	if b, tr, bin := got(0); b != answers[0] || tr != nil || bin != nil {
		t.Fatalf("a short answer: %q %v %v", b, tr, bin)
	}
	if b, tr, bin := got(1); b != strings.Repeat("x", 1023) || tr != true || bin != nil {
		t.Fatalf("a long answer: %d bytes %v %v", len(b), tr, bin)
	}
	if b, tr, bin := got(2); b != "" || tr != nil || bin != true {
		t.Fatalf("a binary answer: %q %v %v", b, tr, bin)
	}
	if b, _, _ := got(3); strings.Contains(b, "btn_sk_") || !strings.Contains(b, "[REDACTED:") {
		t.Fatalf("an answer with a token: %q", b)
	}
	if a := attempt(ds[4], 0); a["responseBody"] != nil || a["responseBodyTruncated"] != nil || a["responseBodyBinary"] != nil {
		t.Fatalf("no answer body: %v", a)
	}
}

// An endpoint none of whose attempts succeeded for DisableAfter is
// disabled by the attempt that fails after it, once, whatever the number
// of replicas: recorded as a WebhookDisabled event saying why. A success
// starts the count again, and so does enabling it.
func TestWebhookFailingTooLongIsDisabled(t *testing.T) {
	e, clock := webhookEnv(t, true)
	rc := newReceiver(t)
	var fail atomic.Bool
	rc.setAnswer(func(n int, w http.ResponseWriter) {
		if fail.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	for i := range 2 {
		dispatch(t, e, clock, func(c *webhook.Config) {
			c.Claimant = fmt.Sprintf("replica-%d", i)
			c.DisableAfter = time.Hour
		})
	}
	id := e.registerWebhook(e.tenantA, rc.srv.URL, []string{"ContractCreated"}).str("webhookId")
	status := func() response { return e.must(e.do("GET", "/v1/webhooks/"+id, e.tenantA, nil), 200) }
	fail.Store(true)
	e.contract(e.tenantA, nil)
	e.awaitDelivery(e.tenantA, id, 0, "pending", 1) // failing since now
	fail.Store(false)
	e.contract(e.tenantA, nil)
	e.awaitDelivery(e.tenantA, id, 1, "succeeded", 1) // and not any more
	rc.quiet(t, 2)                                    // the dispatchers' feeds have the success too
	fail.Store(true)
	clock.Advance(time.Hour)
	e.awaitDelivery(e.tenantA, id, 0, "pending", 2) // failing since now
	if s := status(); s.str("status") != "active" {
		t.Fatalf("failing for less than an hour since the last success: %s", s.raw)
	}
	clock.Advance(time.Hour + 2*time.Minute)
	e.awaitDelivery(e.tenantA, id, 0, "failed", 3)
	deadline := time.Now().Add(10 * time.Second)
	for status().str("status") != "disabled" {
		if time.Now().After(deadline) {
			t.Fatalf("failing for an hour: %s", status().raw)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r := status().str("disabledReason"); !strings.Contains(r, "no attempt succeeded for 1h0m0s") {
		t.Fatalf("reason %q", r)
	}
	time.Sleep(100 * time.Millisecond)
	if n := e.countType("WebhookDisabled"); n != 1 {
		t.Fatalf("%d WebhookDisabled events, want 1", n)
	}
	// Enabled, it is given the hour again.
	e.must(e.do("PATCH", "/v1/webhooks/"+id, e.tenantA, `{"disabled":false}`), 200)
	e.contract(e.tenantA, nil)
	e.awaitDelivery(e.tenantA, id, 2, "pending", 1)
	if s := status(); s.str("status") != "active" {
		t.Fatalf("a failure after it was enabled: %s", s.raw)
	}
}

// A 410 from the URL an endpoint had when the attempt was sent does not
// disable it once its owner gave it another URL meanwhile (the old
// server's retirement is why the URL changed).
func TestWebhookGoneFromAnOldURLDoesNotDisable(t *testing.T) {
	e, clock := webhookEnv(t, true)
	old, next := newReceiver(t), newReceiver(t)
	sent, answer := make(chan struct{}), make(chan struct{})
	old.setAnswer(func(n int, w http.ResponseWriter) {
		close(sent)
		<-answer
		w.WriteHeader(http.StatusGone)
	})
	dispatch(t, e, clock, nil)
	id := e.registerWebhook(e.tenantA, old.srv.URL, []string{"ContractCreated"}).str("webhookId")
	e.contract(e.tenantA, nil)
	<-sent
	e.must(e.do("PATCH", "/v1/webhooks/"+id, e.tenantA, map[string]any{"url": next.srv.URL}), 200)
	close(answer)
	e.awaitDelivery(e.tenantA, id, 0, "failed", 1)
	time.Sleep(100 * time.Millisecond)
	if w := e.must(e.do("GET", "/v1/webhooks/"+id, e.tenantA, nil), 200); w.str("status") != "active" || e.countType("WebhookDisabled") != 0 {
		t.Fatalf("a 410 from the URL before the update: %s", w.raw)
	}
	e.contract(e.tenantA, nil)
	next.await(t, 1)
}

// A registration refuses a field it does not read, as an update does:
// ignored, a misspelt "targetExecutor" registered an endpoint for every
// handoff's events, other executors' included, and a misspelt filter of
// any kind would widen what the endpoint is sent.
func TestWebhookRegistrationRefusesUnknownFields(t *testing.T) {
	e, _ := webhookEnv(t, false)
	for _, c := range []struct{ body, pointer string }{
		{`{"url":"https://hooks.example.com/","eventTypes":["*"],"targetExecutor":["ops-bot"]}`, "/targetExecutor"},
		{`{"url":"https://hooks.example.com/","eventTypes":["*"],"TargetExecutors":["ops-bot"]}`, "/TargetExecutors"},
		{`{"url":"https://hooks.example.com/","eventTypes":["*"],"disabled":true}`, "/disabled"},
	} {
		r := e.do("POST", "/v1/webhooks", e.tenantA, c.body)
		if r.status != 422 || !strings.Contains(string(r.raw), `"pointer":"`+c.pointer+`","code":"unknown_field"`) {
			t.Fatalf("%s: %d %s", c.body, r.status, r.raw)
		}
	}
	if n := e.countType("WebhookRegistered"); n != 0 {
		t.Fatalf("%d WebhookRegistered events after refused registrations", n)
	}
}

// A rotation takes no fields: one asking for a shorter overlap, as after
// a secret leaked ({"expiresInSeconds":0}), was ignored, and the old
// secret signed on for 24 hours. It is refused and nothing rotated; an
// empty body or {} rotates.
func TestWebhookRotationRefusesFields(t *testing.T) {
	e, _ := webhookEnv(t, false)
	id := e.registerWebhook(e.tenantA, "https://hooks.example.com/baton", []string{"*"}).str("webhookId")
	for _, body := range []string{`{"expiresInSeconds":0}`, `{"previousSecretExpiresAt":"2026-01-01T00:00:00Z"}`} {
		r := e.do("POST", "/v1/webhooks/"+id+"/rotate", e.tenantA, body)
		if r.status != 422 || !strings.Contains(string(r.raw), `"code":"unknown_field"`) {
			t.Fatalf("%s: %d %s", body, r.status, r.raw)
		}
	}
	if n := e.countType("WebhookSecretRotated"); n != 0 {
		t.Fatalf("%d rotations after refused ones", n)
	}
	e.must(e.do("POST", "/v1/webhooks/"+id+"/rotate", e.tenantA, `{}`), 200)
	e.must(e.do("POST", "/v1/webhooks/"+id+"/rotate", e.tenantA, nil), 200)
	e.must(e.do("POST", "/v1/webhooks/"+id+"/rotate", e.tenantA, `{"a":`), 400)
}
