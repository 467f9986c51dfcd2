package http_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/batonhq/baton/domain"
)

const ctxAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// ctxFakeGitHub is a GitHub token, built at run time like the others.
var ctxFakeGitHub = "gh" + "p_" + ctxRandom(ctxAlnum, 36)

// TestCredentialAsRequestIDIsNotKept: a caller's x-request-id that looks
// like a credential is replaced by a generated id: it reaches neither the
// answer, nor the access log, nor the metadata of the event the request
// appends. An ordinary id is kept.
func TestCredentialAsRequestIDIsNotKept(t *testing.T) {
	var logs syncBuffer
	envLog = &logs
	t.Cleanup(func() { envLog = nil })
	e := newEnv(t)
	for _, tc := range []struct {
		name, id string
		kept     bool
	}{
		{"github token", ctxFakeGitHub, false},
		{"baton key", ctxFakeBtn, false},
		{"aws key id", ctxFakeAWS, false},
		{"assignment", "api_key=" + ctxRandom(ctxAlnum, 32), false},
		{"trace id", "checkout-7f3a9c-2", true},
		{"uuid", "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			r := e.must(e.do("POST", "/v1/handoff/contracts", e.tenantA, map[string]any{
				"objective": "Rotate the staging TLS certificate", "targetExecutor": "ops-bot",
				"executorProtocol": "ops_bot.v1", "riskLevel": "medium", "approvalMode": "manual", "proofRequired": []string{"log"},
			}, "x-request-id", tc.id), 201)
			got := r.header.Get("x-request-id")
			evs, err := e.store.ReadStream(context.Background(), "handoff-"+r.str("handoffId"), 0, 10)
			if err != nil || len(evs) != 1 {
				t.Fatalf("events %v, %v", evs, err)
			}
			if evs[0].Metadata.RequestID != got || r.header.Get("request-id") != got {
				t.Fatalf("event metadata %q, request-id %q, x-request-id %q", evs[0].Metadata.RequestID, r.header.Get("request-id"), got)
			}
			if tc.kept {
				if got != tc.id {
					t.Fatalf("x-request-id %q, want the caller's %q", got, tc.id)
				}
				return
			}
			if !strings.HasPrefix(got, "req_") {
				t.Fatalf("x-request-id %q, want a generated one", got)
			}
			if strings.Contains(string(r.raw), tc.id) || strings.Contains(logs.String(), tc.id) {
				t.Fatal("the caller's id is in the answer or the log")
			}
			if !strings.Contains(logs.String(), got) {
				t.Fatalf("the access log does not name the generated id %q", got)
			}
		})
	}
}

// TestIdempotencyKeyOneRule: callbacks, generate and agent plans apply the
// same Idempotency-Key rule, with the same answers: 1 to 255 characters of
// UTF-8, no control characters, 422 invalid_idempotency_key naming the
// header; a key that looks like a credential is 422 secret_detected, the
// header named, the key never quoted. A refused key appends nothing.
func TestIdempotencyKeyOneRule(t *testing.T) {
	e := localEnv(t)
	id := e.contract(e.tenantA, nil)
	e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
	routes := []struct {
		name, path string
		body       func() any
	}{
		{"proof callback", "/v1/executions/" + id + "/proof", func() any { return proofBody("run-1") }},
		{"generate", "/v1/generate", func() any {
			return map[string]any{"type": "summarize", "input": map[string]any{"text": "Baton records every step."}}
		}},
		{"agent plans", "/v1/agent-plans", func() any {
			return map[string]any{"objective": "rotate the staging TLS certificate", "targetExecutor": "ops-bot", "riskLevel": "high"}
		}},
	}
	tests := []struct {
		name, key string
		code      string // "" when accepted
		detail    string // the field's code, or the finding's rule
	}{
		{"256 characters", strings.Repeat("k", 256), "invalid_idempotency_key", "too_long"},
		{"255 characters, not ASCII", strings.Repeat("é", 255), "", ""},
		{"not ASCII", "café-1", "", ""},
		{"tab", "a\tb", "invalid_idempotency_key", "control_character"},
		{"C1 control", "a\u0085b", "invalid_idempotency_key", "control_character"},
		{"right-to-left override", "a\u202eb", "invalid_idempotency_key", "control_character"},
		{"not UTF-8", "caf\xe9", "invalid_idempotency_key", "invalid_utf8"},
		{"github token", ctxFakeGitHub, "secret_detected", "github-pat"},
		{"baton key", ctxFakeBtn, "secret_detected", "baton-api-key"},
	}
	for _, rt := range routes {
		for i, tc := range tests {
			t.Run(rt.name+"/"+tc.name, func(t *testing.T) {
				e.t = t
				key := tc.key
				if tc.code == "" {
					key += "-" + strings.Repeat("x", i) + rt.name[:1] // a new key per route
					if len([]rune(key)) > 255 {
						key = string([]rune(key)[len([]rune(key))-255:])
					}
				}
				before, err := e.store.Head(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				r := e.do("POST", rt.path, e.tenantA, rt.body(), "Idempotency-Key", key)
				if tc.code == "" {
					if r.status/100 != 2 {
						t.Fatalf("status %d: %s", r.status, r.raw)
					}
					return
				}
				if r.status != 422 || r.str("code") != tc.code || r.header.Get("Content-Type") != "application/problem+json" {
					t.Fatalf("status %d %s, want 422 %s: %s", r.status, r.str("code"), tc.code, r.raw)
				}
				var p struct {
					Fields   []domain.FieldError    `json:"fields"`
					Findings []domain.SecretFinding `json:"findings"`
				}
				json.Unmarshal(r.raw, &p)
				switch {
				case tc.code == "secret_detected":
					if len(p.Findings) != 1 || p.Findings[0] != (domain.SecretFinding{RuleID: tc.detail, Pointer: "header:Idempotency-Key"}) {
						t.Fatalf("findings %+v", p.Findings)
					}
					if strings.Contains(string(r.raw), tc.key) {
						t.Fatal("the answer quotes the key")
					}
				case len(p.Fields) != 1 || p.Fields[0].Pointer != "header:Idempotency-Key" || p.Fields[0].Code != tc.detail:
					t.Fatalf("fields %+v, want %s on header:Idempotency-Key", p.Fields, tc.detail)
				}
				evs, err := e.store.ReadAll(context.Background(), before, 1000)
				if err != nil {
					t.Fatal(err)
				}
				for _, ev := range evs {
					if ev.StreamID != "usage-a" { // earlier calls' usage, written in the background
						t.Fatalf("a refused key appended %s to %s", ev.Type, ev.StreamID)
					}
				}
			})
		}
	}
}
