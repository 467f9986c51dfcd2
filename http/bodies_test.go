package http_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// The bytes of model-call bodies held at once are bounded: while one call
// holds most of the bound, another tenant's large body is 503 in its
// front's shape with Retry-After (the SDKs retry it), declared or chunked,
// and nothing reaches the upstream; a small one still fits; once the call
// ends, the large one passes.
func TestModelBodiesBounded(t *testing.T) {
	envModelBodies = 1 << 20
	t.Cleanup(func() { envModelBodies = 0 })
	e, f := newGatewayEnv(t)
	pad := strings.Repeat("x", 700<<10)
	chat := func(model string, stream bool, text string) string {
		return fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":%q}]}`, model, stream, text)
	}
	// One call holds its body for its whole life: a stream whose
	// upstream hangs after its first words.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/v1/chat/completions", strings.NewReader(chat("openai:hang", true, pad)))
	req.Header.Set("Authorization", "Bearer "+e.tenantA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	calls := f.calls.Load()
	r := e.do("POST", "/v1/chat/completions", e.tenantB, chat("openai:gpt-4o-mini", false, pad))
	if r.status != 503 || r.str("error.code") != "overloaded" || r.header.Get("Retry-After") != "1" {
		t.Fatalf("a second large body: %d %v %s", r.status, r.header, r.raw)
	}
	r = e.do("POST", "/v1/messages", e.tenantB, `{"model":"anthropic:claude-haiku-4-5","max_tokens":5,"messages":[{"role":"user","content":"`+pad+`"}]}`)
	if r.status != 529 || r.str("error.type") != "overloaded_error" {
		t.Fatalf("on the messages front: %d %s", r.status, r.raw)
	}
	// Chunked, its length unknown until it passes what is free.
	creq, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions", io.MultiReader(strings.NewReader(chat("openai:gpt-4o-mini", false, pad))))
	creq.Header.Set("Authorization", "Bearer "+e.tenantB)
	creq.ContentLength = -1
	if cr, err := http.DefaultClient.Do(creq); err != nil || cr.StatusCode != 503 {
		t.Fatalf("a chunked large body: %v %v", cr, err)
	} else {
		cr.Body.Close()
	}
	if got := f.calls.Load(); got != calls {
		t.Fatalf("the refused calls reached the upstream: %d calls, want %d", got, calls)
	}
	e.must(e.do("POST", "/v1/chat/completions", e.tenantB, chat("openai:gpt-4o-mini", false, "small")), 200)
	cancel()
	resp.Body.Close()
	// The call ends once Baton has counted the 700 KiB prompt it bills
	// the client's leaving on: seconds under the race detector on two
	// busy cores.
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := e.do("POST", "/v1/chat/completions", e.tenantB, chat("openai:gpt-4o-mini", false, pad))
		if r.status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bound was not given back when the call ended: %d %s", r.status, r.raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// One tenant holds at most its share of the bound (half of it by default):
// while its calls hold their bodies, its next one is 429 in its front's
// shape with Retry-After, declared or chunked, and nothing reaches the
// upstream, while another tenant's call of the same size still goes. Without
// the share, a tenant's few large bodies (sent slowly, or in long calls)
// kept every other tenant's calls out with 503s.
func TestModelBodiesTenantShare(t *testing.T) {
	envModelBodies = 1 << 20
	t.Cleanup(func() { envModelBodies = 0 })
	e, f := newGatewayEnv(t)
	pad := strings.Repeat("x", 400<<10)
	chat := func(model string, stream bool, text string) string {
		return fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":%q}]}`, model, stream, text)
	}
	// Tenant a holds one body for the call's whole life: a stream whose
	// upstream hangs after its first words.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/v1/chat/completions", strings.NewReader(chat("openai:hang", true, pad)))
	req.Header.Set("Authorization", "Bearer "+e.tenantA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	calls := f.calls.Load()
	// Its second, by another of its keys, passes its share though the
	// server's bound has room.
	r := e.do("POST", "/v1/chat/completions", e.tenantA2, chat("openai:gpt-4o-mini", false, pad))
	if r.status != 429 || r.str("error.code") != "too_many_model_bodies" || r.header.Get("Retry-After") != "1" {
		t.Fatalf("the tenant's second large body: %d %v %s", r.status, r.header, r.raw)
	}
	r = e.do("POST", "/v1/messages", e.tenantA, `{"model":"anthropic:claude-haiku-4-5","max_tokens":5,"messages":[{"role":"user","content":"`+pad+`"}]}`)
	if r.status != 429 || r.str("error.type") != "rate_limit_error" || r.header.Get("Retry-After") != "1" {
		t.Fatalf("on the messages front: %d %s", r.status, r.raw)
	}
	creq, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions", io.MultiReader(strings.NewReader(chat("openai:gpt-4o-mini", false, pad))))
	creq.Header.Set("Authorization", "Bearer "+e.tenantA)
	creq.ContentLength = -1
	if cr, err := http.DefaultClient.Do(creq); err != nil || cr.StatusCode != 429 {
		t.Fatalf("a chunked large body: %v %v", cr, err)
	} else {
		cr.Body.Close()
	}
	if got := f.calls.Load(); got != calls {
		t.Fatalf("the refused calls reached the upstream: %d calls, want %d", got, calls)
	}
	// Another tenant's calls go meanwhile, several at once.
	var wg sync.WaitGroup
	statuses := make([]int, 2)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = e.do("POST", "/v1/chat/completions", e.tenantB, chat("openai:gpt-4o-mini", false, pad[:200<<10])).status
		}()
	}
	wg.Wait()
	if statuses[0] != 200 || statuses[1] != 200 {
		t.Fatalf("another tenant's calls while the first holds its share: %v", statuses)
	}
}
