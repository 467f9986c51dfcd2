package http_test

import (
	"context"
	"strings"
	"testing"
)

// A body that gives a name twice in one object is refused with 400 naming
// it on every endpoint that decodes a JSON body, as on the model fronts:
// encoding/json would take the last of the two without a word. Nothing is
// appended.
func TestDuplicateNamesRefused(t *testing.T) {
	e := localEnv(t)
	id := e.contract(e.tenantA, nil)
	cb := "/v1/executions/" + id + "/"
	for _, c := range []struct {
		method, path, key, body, pointer string
		openai                           bool
	}{
		{"POST", "/v1/generate", e.tenantA, `{"type":"summarize","type":"classify","input":{"text":"x"}}`, "/type", false},
		{"POST", "/v1/generate", e.tenantA, `{"type":"summarize","input":{"text":"a","text":"b"}}`, "/input/text", false},
		{"POST", "/v1/generate", e.tenantA, `{"type":"summarize","input":{"text":"a"},"options":{"llm":{"model":"local:echo","mod\u0065l":"openai:gpt-4o"}}}`, "/options/llm/model", false},
		{"POST", "/v1/generate", e.tenantA, `{"type":"extract_fields","input":{"text":"t","fields":[{"name":"a","type":"string"},{"name":"b","type":"string","name":"c"}]}}`, "/input/fields/1/name", false},
		{"POST", "/v1/generate", e.tenantA, `{"type":"summarize","input":{"text":"a","a/b~":1,"a/b~":2}}`, "/input/a~1b~0", false},
		{"POST", "/v1/handoff/contracts", e.tenantA, `{"objective":"o","targetExecutor":"ops-bot","executorProtocol":"ops_bot.v1","riskLevel":"high","riskLevel":"low","approvalMode":"manual"}`, "/riskLevel", false},
		{"POST", "/v1/handoff/preview", e.tenantA, `{"planId":"a","planId":"b"}`, "/planId", false},
		{"POST", cb + "approval", e.tenantA, `{"status":"REJECTED","approvedBy":"alice","status":"APPROVED"}`, "/status", false},
		{"POST", cb + "proof", e.tenantA, `{"executorType":"ops-bot","executorRunId":"r1","status":"RUNNING","proof":{"summary":"a","summary":"b"}}`, "/proof/summary", false},
		{"POST", cb + "heartbeat", e.tenantA, `{"executorType":"ops-bot","executorRunId":"r1","executorRunId":"r2"}`, "/executorRunId", false},
		{"POST", cb + "result", e.tenantA, `{"executorType":"ops-bot","executorRunId":"r1","status":"FAILED","status":"SUCCEEDED","result":{"summary":"s"}}`, "/status", false},
		{"POST", cb + "review", e.admin, `{"verdict":"rejected","reviewer":"v","verdict":"verified"}`, "/verdict", false},
		{"POST", "/v1/agent-plans", e.tenantA, `{"objective":"o","targetExecutor":"ops-bot","riskLevel":"high","riskLevel":"low"}`, "/riskLevel", false},
		{"POST", "/v1/context/preview", e.tenantA, `{"threadId":"a","threadId":"b","policyHints":["p"]}`, "/threadId", false},
		{"POST", "/v1/webhooks", e.tenantA, `{"url":"https://hooks.example.com/a","eventTypes":["*"],"url":"https://hooks.example.com/b"}`, "/url", false},
		{"POST", "/v1/admin/keys", e.admin, `{"tenant":"a","tenant":"b"}`, "/tenant", false},
		{"POST", "/v1/admin/console-links", e.admin, `{"tenant":"a","name":"x","role":"auditor","role":"reviewer"}`, "/role", false},
		{"PUT", "/v1/admin/budgets/a", e.admin, `{"dailyUsd":100,"dailyUsd":0.01}`, "/dailyUsd", false},
		{"POST", "/v1/models/health", e.admin, `{"model":"local:echo","model":"local:other"}`, "/model", true},
		{"POST", "/v1/models/health/batch", e.admin, `{"limit":1,"limit":50}`, "/limit", true},
		{"POST", "/v1/models/route/preview", e.admin, `{"mode":"auto","mode":"fast"}`, "/mode", true},
	} {
		before, err := e.store.Head(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		r := e.do(c.method, c.path, c.key, c.body)
		ok := r.status == 400 && strings.Contains(string(r.raw), `the field \"`+c.pointer+`\" twice`)
		if c.openai {
			ok = ok && r.str("error.param") == oaPath(c.pointer)
		} else {
			fields, _ := r.body["fields"].([]any)
			f, _ := append(fields, nil)[0].(map[string]any)
			ok = ok && r.str("code") == "duplicate_field" && len(fields) == 1 && f["pointer"] == c.pointer && f["code"] == "duplicate_field"
		}
		if !ok {
			t.Errorf("%s %s %s: %d %s", c.method, c.path, c.body, r.status, r.raw)
		}
		if after, err := e.store.Head(context.Background()); err != nil || after != before {
			t.Errorf("%s %s: the store's head moved from %d to %d (%v)", c.method, c.path, before, after, err)
		}
	}
}

// The model fronts give a name sent twice the same code, in OpenAI's shape
// (it was validation_failed), with the field as its param.
func TestDuplicateNamesOnModelFronts(t *testing.T) {
	e := localEnv(t)
	for _, c := range []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"model":"local:echo","model":"local:other","messages":[{"role":"user","content":"hi"}]}`, "model"},
		{"/v1/chat/completions", `{"model":"local:echo","Model":"local:other","messages":[{"role":"user","content":"hi"}]}`, "Model"},
		{"/v1/responses", `{"model":"local:echo","input":"hi","input":"ho"}`, "input"},
	} {
		r := e.do("POST", c.path, e.tenantA, c.body)
		if r.status != 400 || r.str("error.code") != "duplicate_field" || r.str("error.param") != c.param {
			t.Errorf("%s %s: %d %s", c.path, c.body, r.status, r.raw)
		}
	}
}

// So is a cosignature that gives its checkpoint twice: the witness's line
// would be read from the last only.
func TestCosignatureDuplicateRefused(t *testing.T) {
	e, _ := newLogEnv(t)
	r := e.must(e.do("POST", "/v1/log/cosignature", "", `{"checkpoint":"a","checkpoint":"b"}`), 400)
	if r.str("code") != "duplicate_field" || !strings.Contains(r.str("detail"), `"/checkpoint" twice`) {
		t.Fatalf("%s", r.raw)
	}
}
