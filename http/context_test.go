package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/domain/contextpack"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/ledger"
)

// Fake secrets are built at run time so that no file holds a literal a
// scanner would flag.
var (
	ctxRNG     = rand.New(rand.NewPCG(5, 8))
	ctxFakeAWS = "AK" + "IA" + ctxRandom("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
	ctxFakeBtn = "btn" + "_sk_" + ctxRandom("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 40)
)

func ctxRandom(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[ctxRNG.IntN(len(alphabet))]
	}
	return string(b)
}

// head is the store's last position: unchanged means nothing was appended.
func (e *env) head() eventstore.Position {
	e.t.Helper()
	h, err := e.store.Head(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

func (e *env) preview(key string, body any) response {
	e.t.Helper()
	return e.do("POST", "/v1/context/preview", key, body)
}

func previewBody() map[string]any {
	return map[string]any{
		"threadId":   "thr_42",
		"customerId": "cus_7",
		"policyHints": []string{
			"Never promise a refund date.",
			"Never   promise a refund date.", // a duplicate once normalised
		},
		"memoryHints": []string{"Prefers e\u0301mail over phone.", "Pasted key " + ctxFakeAWS + " last week."},
		"retrievalContext": []map[string]any{
			{"title": "Refund policy", "text": "Refunds are issued within 5 business days.\r\n\r\n\r\nExceptions need approval."},
			{"title": "Runbook", "text": "Call the API with " + ctxFakeBtn + " as the bearer key."},
		},
	}
}

func TestContextPreviewBuildsAndStoresAPacket(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/v1/context/preview", e.tenantA, previewBody(), "x-request-id", "req-ctx-1")
	e.must(r, 201)
	var p contextpack.Packet
	if err := json.Unmarshal(r.raw, &p); err != nil {
		t.Fatal(err)
	}
	id, err := uuid.Parse(p.PacketID)
	if err != nil || id.Version() != 7 {
		t.Fatalf("packetId %q is not a UUIDv7", p.PacketID)
	}
	if loc := r.header.Get("Location"); loc != "/v1/context/packets/"+p.PacketID {
		t.Fatalf("Location %q", loc)
	}
	if p.Object != "context.packet" || p.Encoding != "o200k_base" || p.TokenBudget != 4000 || p.ThreadID != "thr_42" || p.CustomerID != "cus_7" {
		t.Fatalf("packet %s", r.raw)
	}
	texts := []string{}
	for _, it := range p.Items {
		texts = append(texts, it.Section+": "+it.Title+"|"+it.Text)
	}
	want := []string{
		"policyHints: |Never promise a refund date.",
		"memoryHints: |Prefers \u00e9mail over phone.",
		"memoryHints: |Pasted key [REDACTED:aws-access-token] last week.",
		"retrievalContext: Refund policy|Refunds are issued within 5 business days.\n\nExceptions need approval.",
		"retrievalContext: Runbook|Call the API with [REDACTED:baton-api-key] as the bearer key.",
	}
	if strings.Join(texts, "\n") != strings.Join(want, "\n") {
		t.Fatalf("items:\n%s\nwant:\n%s", strings.Join(texts, "\n"), strings.Join(want, "\n"))
	}
	if len(p.Dropped) != 1 || p.Dropped[0].Reason != "duplicate" || *p.Dropped[0].DuplicateOf != (contextpack.Ref{Section: "policyHints", Index: 0}) {
		t.Fatalf("dropped %+v", p.Dropped)
	}
	if len(p.Redactions) != 2 || p.Redactions[0].RuleID != "aws-access-token" || p.Redactions[1].RuleID != "baton-api-key" ||
		p.Redactions[1].Section != "retrievalContext" || p.Redactions[1].Index != 1 {
		t.Fatalf("redactions %+v", p.Redactions)
	}
	if !strings.HasPrefix(p.ContentHash, "sha256:") || len(p.ContentHash) != 7+64 {
		t.Fatalf("contentHash %q", p.ContentHash)
	}

	// One event, in context-<id>, with the tenant, actor and request id.
	evs, err := e.store.ReadStream(context.Background(), "context-"+p.PacketID, 0, 10)
	if err != nil || len(evs) != 1 {
		t.Fatalf("events %v %v", evs, err)
	}
	ev := evs[0]
	if ev.Type != "ContextPacketCreated" || ev.Revision != 0 || ev.Metadata.Tenant != "a" || !strings.HasPrefix(ev.Metadata.Actor, "key:") ||
		ev.Metadata.RequestID != "req-ctx-1" || ev.Metadata.SchemaVersion != 1 {
		t.Fatalf("event %+v", ev)
	}
	for _, secret := range []string{ctxFakeAWS, ctxFakeBtn, ctxFakeAWS[4:], ctxFakeBtn[7:]} {
		if bytes.Contains(ev.Data, []byte(secret)) || bytes.Contains(r.raw, []byte(secret)) {
			t.Fatal("a secret was stored or answered")
		}
	}

	// GET answers the stored packet, byte for byte the same JSON.
	g := e.must(e.do("GET", "/v1/context/packets/"+p.PacketID, e.tenantA, nil), 200)
	if !bytes.Equal(bytes.TrimSpace(g.raw), bytes.TrimSpace(r.raw)) {
		t.Fatalf("GET differs from POST:\n%s\n%s", g.raw, r.raw)
	}
}

func TestContextPacketsAreTenantIsolated(t *testing.T) {
	e := newEnv(t)
	id := e.must(e.preview(e.tenantA, previewBody()), 201).str("packetId")
	e.must(e.do("GET", "/v1/context/packets/"+id, e.tenantA2, nil), 200) // another key of the same tenant
	e.must(e.do("GET", "/v1/context/packets/"+id, e.admin, nil), 200)    // admin keys read every tenant's
	for name, path := range map[string]string{
		"another tenant's": "/v1/context/packets/" + id,
		"unknown":          "/v1/context/packets/" + uuid.Must(uuid.NewV7()).String(),
		"not a uuid":       "/v1/context/packets/nope",
		"upper case":       "/v1/context/packets/" + strings.ToUpper(id),
	} {
		r := e.must(e.do("GET", path, e.tenantB, nil), 404)
		if name != "not a uuid" && r.str("code") != "context_packet_not_found" {
			t.Errorf("%s: %s", name, r.raw)
		}
	}
	e.must(e.do("GET", "/v1/context/packets/"+id, "", nil), 401)

	// The Go entry point for generate and agent-plans.
	ctx := context.Background()
	p, err := ledger.NewPackets(e.store, nil, nil).Load(ctx, "a", id)
	if err != nil || p.PacketID != id || !strings.Contains(p.PromptText(), "# Policies\n- Never promise a refund date.\n") {
		t.Fatalf("load: %v %+v", err, p)
	}
	if _, err := ledger.NewPackets(e.store, nil, nil).Load(ctx, "b", id); domain.KindOf(err) != domain.KindNotFound {
		t.Fatalf("another tenant loaded it: %v", err)
	}
}

func TestContextPreviewRefusals(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name    string
		body    any
		status  int
		code    string
		pointer string
	}{
		{"malformed json", `{"memoryHints": [`, 400, "malformed_json", ""},
		{"empty body", ``, 400, "malformed_json", ""},
		{"not an object", `[]`, 422, "validation_failed", ""},
		{"budget zero", `{"options":{"tokenBudget":0}}`, 422, "validation_failed", "/options/tokenBudget"},
		{"budget negative", `{"options":{"tokenBudget":-1}}`, 422, "validation_failed", "/options/tokenBudget"},
		{"budget too large", `{"options":{"tokenBudget":200001}}`, 422, "validation_failed", "/options/tokenBudget"},
		{"budget huge", `{"options":{"tokenBudget":1e300}}`, 422, "validation_failed", "/options/tokenBudget"},
		{"budget fraction", `{"options":{"tokenBudget":1.5}}`, 422, "validation_failed", "/options/tokenBudget"},
		{"budget string", `{"options":{"tokenBudget":"100"}}`, 422, "validation_failed", "/options/tokenBudget"},
		{"budget boolean", `{"options":{"tokenBudget":true}}`, 422, "validation_failed", "/options/tokenBudget"},
		{"unknown encoding", `{"options":{"encoding":"p50k_base"}}`, 422, "validation_failed", "/options/encoding"},
		{"encoding not a string", `{"options":{"encoding":5}}`, 422, "validation_failed", "/options/encoding"},
		{"options not an object", `{"options":"x"}`, 422, "validation_failed", "/options"},
		{"hints not an array", `{"memoryHints":"x"}`, 422, "validation_failed", "/memoryHints"},
		{"hint not a string", `{"policyHints":["ok",5]}`, 422, "validation_failed", "/policyHints/1"},
		{"hint null", `{"memoryHints":[null]}`, 422, "validation_failed", "/memoryHints/0"},
		{"document not an object", `{"retrievalContext":["text"]}`, 422, "validation_failed", "/retrievalContext/0"},
		{"document text not a string", `{"retrievalContext":[{"text":"a"},{"title":"t","text":5}]}`, 422, "validation_failed", "/retrievalContext/1/text"},
		// A name it does not read, which was ignored: a budget misplaced
		// at the top stored a packet of the default 4000 tokens, a
		// document's misnamed text left it out.
		{"budget at the top", `{"tokenBudget":50,"memoryHints":["a"]}`, 422, "validation_failed", "/tokenBudget"},
		{"unknown option", `{"options":{"tokenBudget":50,"maxTokens":10}}`, 422, "validation_failed", "/options/maxTokens"},
		{"unknown document field", `{"retrievalContext":[{"text":"a"},{"title":"t","content":"b"}]}`, 422, "validation_failed", "/retrievalContext/1/content"},
		{"thread id too long", map[string]any{"threadId": strings.Repeat("t", 257)}, 422, "validation_failed", "/threadId"},
		{"customer id with a control character", map[string]any{"customerId": "cus\u00007"}, 422, "validation_failed", "/customerId"},
		{"too many hints", map[string]any{"memoryHints": make([]string, 1001)}, 422, "validation_failed", "/memoryHints"},
		{"secret in an id", map[string]any{"customerId": ctxFakeBtn}, 422, "secret_detected", ""},
		{"body over the limit", map[string]any{"retrievalContext": []map[string]any{{"text": strings.Repeat("lorem ipsum ", 6000)}}}, 413, "body_too_large", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.head()
			r := e.preview(e.tenantA, tc.body)
			if r.status != tc.status || r.str("code") != tc.code {
				t.Fatalf("status %d code %q, want %d %q: %s", r.status, r.str("code"), tc.status, tc.code, r.raw)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("content type %q", ct)
			}
			if tc.pointer != "" && !strings.Contains(r.str("fields"), `"pointer":"`+tc.pointer+`"`) {
				t.Fatalf("fields %s do not name %s", r.str("fields"), tc.pointer)
			}
			if bytes.Contains(r.raw, []byte(ctxFakeBtn)) {
				t.Fatal("the answer quotes the secret")
			}
			if after := e.head(); after != before {
				t.Fatalf("a refused request appended events (%v -> %v)", before, after)
			}
		})
	}
	if r := e.preview(e.tenantA, map[string]any{"customerId": ctxFakeBtn}); !strings.Contains(r.str("findings"), `"pointer":"/customerId"`) ||
		!strings.Contains(r.str("findings"), "baton-api-key") {
		t.Fatalf("findings %s", r.str("findings"))
	}
}

func TestContextPreviewBudgetAndTokenCounts(t *testing.T) {
	e := newEnv(t)
	// Known counts: "tiktoken is great!" is 6 tokens in both encodings; the
	// Japanese greeting 8 in o200k_base and 9 in cl100k_base.
	for _, tc := range []struct {
		encoding string
		greeting int
	}{{"", 8}, {"o200k_base", 8}, {"cl100k_base", 9}} {
		body := map[string]any{"memoryHints": []string{"tiktoken is great!", "お誕生日おめでとう"}}
		if tc.encoding != "" {
			body["options"] = map[string]any{"encoding": tc.encoding}
		}
		var p contextpack.Packet
		json.Unmarshal(e.must(e.preview(e.tenantA, body), 201).raw, &p)
		if p.Items[0].Tokens != 6 || p.Items[1].Tokens != tc.greeting || p.Tokens != 6+tc.greeting {
			t.Fatalf("%q: %+v", tc.encoding, p.Items)
		}
	}

	// A budget of 10 keeps the policy (6 tokens), drops the greeting (8)
	// and keeps a later hint that still fits.
	var p contextpack.Packet
	json.Unmarshal(e.must(e.preview(e.tenantA, map[string]any{
		"policyHints": []string{"tiktoken is great!"}, "memoryHints": []string{"お誕生日おめでとう", "hello world"},
		"retrievalContext": []map[string]any{{"title": "Doc", "text": strings.Repeat("Some retrieved words. ", 50)}},
		"options":          map[string]any{"tokenBudget": 10},
	}), 201).raw, &p)
	if len(p.Items) != 2 || p.Items[1].Text != "hello world" || p.Tokens != 8 || p.TokenBudget != 10 {
		t.Fatalf("items %+v", p.Items)
	}
	if len(p.Dropped) != 2 || p.Dropped[0].Reason != "over_budget" || p.Dropped[0].Tokens != 8 ||
		p.Dropped[1].Section != "retrievalContext" || p.Dropped[1].Title != "Doc" {
		t.Fatalf("dropped %+v", p.Dropped)
	}

	// A larger budget cuts the document at a token boundary.
	json.Unmarshal(e.must(e.preview(e.tenantA, map[string]any{
		"retrievalContext": []map[string]any{{"title": "Doc", "text": strings.Repeat("Some retrieved words. ", 50)}},
		"options":          map[string]any{"tokenBudget": 60},
	}), 201).raw, &p)
	if len(p.Items) != 1 || !p.Items[0].Truncated || p.Items[0].Tokens > 60 || p.Items[0].OriginalTokens <= 60 {
		t.Fatalf("items %+v", p.Items)
	}
}

func TestContextPreviewHash(t *testing.T) {
	e := newEnv(t)
	body := previewBody()
	a := e.must(e.preview(e.tenantA, body), 201)
	body["options"] = map[string]any{"tokenBudget": 4000}
	b := e.must(e.preview(e.tenantA, body), 201)
	if a.str("contentHash") != b.str("contentHash") || a.str("packetId") == b.str("packetId") {
		t.Fatalf("same content: hashes %s %s, ids %s %s", a.str("contentHash"), b.str("contentHash"), a.str("packetId"), b.str("packetId"))
	}
	body["policyHints"] = []string{"Cite the policy.", "Never promise a refund date."}
	if c := e.must(e.preview(e.tenantA, body), 201); c.str("contentHash") == a.str("contentHash") {
		t.Fatal("different content, same hash")
	}
}

func TestGenerateAttachesAContextPacket(t *testing.T) {
	e := localEnv(t)
	id := e.must(e.preview(e.tenantA, previewBody()), 201).str("packetId")
	gen := func(key, packet string) response {
		return e.do("POST", "/v1/generate", key, map[string]any{"type": "summarize", "input": sampleInputs["summarize"], "contextPacketId": packet})
	}
	e.must(gen(e.tenantA, id), 200)
	r := e.must(gen(e.tenantB, id), 422)
	if !strings.Contains(r.str("fields"), `"pointer":"/contextPacketId"`) {
		t.Fatalf("fields %s", r.str("fields"))
	}
	e.must(gen(e.tenantA, "nope"), 422)
}

// Concurrent previews share the tokenizer and the scanner: each gets its
// own packet and stream (run with -race).
func TestContextPreviewConcurrently(t *testing.T) {
	e := newEnv(t)
	const n = 16
	ids := make(chan string, n)
	errs := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := map[string]any{"memoryHints": []string{fmt.Sprintf("hint %d", i)}, "options": map[string]any{"encoding": []string{"o200k_base", "cl100k_base"}[i%2]}}
			j, _ := json.Marshal(body)
			req, _ := http.NewRequest("POST", e.srv.URL+"/v1/context/preview", bytes.NewReader(j))
			req.Header.Set("x-api-key", e.tenantA)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err.Error()
				return
			}
			defer resp.Body.Close()
			var p contextpack.Packet
			json.NewDecoder(resp.Body).Decode(&p)
			if resp.StatusCode != 201 || p.Tokens == 0 || len(p.Items) != 1 {
				errs <- fmt.Sprintf("status %d, tokens %d", resp.StatusCode, p.Tokens)
				return
			}
			ids <- p.PacketID
		}()
	}
	wg.Wait()
	close(ids)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("packet id %s twice", id)
		}
		seen[id] = true
	}
}

// FuzzContextPreview sends arbitrary bodies: every answer is deliberate
// (never a 500), and a refused request appends nothing.
func FuzzContextPreview(f *testing.F) {
	for _, seed := range []string{
		`{"threadId":"t","customerId":"c","memoryHints":["a","a"],"policyHints":["p"],"retrievalContext":[{"title":"x","text":"y"}],"options":{"tokenBudget":5}}`,
		`{"retrievalContext":[{"title":null,"text":null},{},null,5]}`,
		`{"options":{"tokenBudget":1e3,"encoding":"cl100k_base"}}`,
		`{"options":{"tokenBudget":-0.0}}`, `{"options":null}`, `{"memoryHints":null}`,
		`{"memoryHints":["\u0000\u202e\r\n"]}`, `[]`, `{`, ``, `null`, `{"threadId":5}`,
	} {
		f.Add([]byte(seed))
	}
	e := newEnv(f)
	h := e.srv.Config.Handler
	f.Fuzz(func(t *testing.T, body []byte) {
		e.t = t
		before := e.head()
		req := httptest.NewRequest(http.MethodPost, "/v1/context/preview", bytes.NewReader(body))
		req.Header.Set("x-api-key", e.tenantA)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 201:
			var p contextpack.Packet
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Tokens > p.TokenBudget {
				t.Fatalf("packet %s: %v", rec.Body.String(), err)
			}
		case 400, 413, 422:
			if after := e.head(); after != before {
				t.Fatalf("answered %d but appended events", rec.Code)
			}
		default:
			t.Fatalf("answered %d to %q: %s", rec.Code, body, rec.Body.String())
		}
	})
}

// A context packet is a create, as a contract is: retried with its
// Idempotency-Key it is answered the first packet, and no second is
// stored. The header was ignored, though a 503 told the client to retry
// with it, and each retry stored another packet.
func TestContextPreviewIdempotencyKey(t *testing.T) {
	e := newEnv(t)
	first := e.do("POST", "/v1/context/preview", e.tenantA, previewBody(), "Idempotency-Key", "ctx-1")
	if first.status != 201 {
		t.Fatalf("first: %d %s", first.status, first.raw)
	}
	head := e.head()
	again := e.do("POST", "/v1/context/preview", e.tenantA, previewBody(), "Idempotency-Key", "ctx-1")
	if again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" || string(again.raw) != string(first.raw) ||
		again.header.Get("Location") != first.header.Get("Location") {
		t.Fatalf("retry: %d %v %s", again.status, again.header, again.raw)
	}
	other := previewBody()
	other["threadId"] = "thr_43"
	if r := e.do("POST", "/v1/context/preview", e.tenantA, other, "Idempotency-Key", "ctx-1"); r.status != 422 || r.str("code") != "idempotency_key_reused" {
		t.Fatalf("another body: %d %s", r.status, r.raw)
	}
	if after := e.head(); after != head {
		t.Fatalf("a retry stored another packet (%v -> %v)", head, after)
	}
	// A refusal is not kept: corrected, the request runs under the key.
	bad := previewBody()
	bad["options"] = map[string]any{"tokenBudget": 0}
	if r := e.do("POST", "/v1/context/preview", e.tenantA, bad, "Idempotency-Key", "ctx-2"); r.status != 422 {
		t.Fatalf("refused: %d %s", r.status, r.raw)
	}
	e.must(e.do("POST", "/v1/context/preview", e.tenantA, previewBody(), "Idempotency-Key", "ctx-2"), 201)
}
