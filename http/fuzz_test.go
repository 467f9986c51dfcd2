package http_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/batonhq/baton/gateway"
)

// FuzzCallbackBodies sends arbitrary bodies to every decoder of untrusted
// input on the front: contract creation, preview, key creation and the four
// callbacks. Whatever arrives, the answer is a deliberate one (never a 500),
// and a refused request appends nothing.
func FuzzCallbackBodies(f *testing.F) {
	for _, seed := range []string{
		`{"objective":"x","targetExecutor":"y","executorProtocol":"y.v1","riskLevel":"low"}`,
		`{"status":"APPROVED","approvedBy":"a"}`,
		`{"status":"REJECTED","approvedBy":"a","reason":"r"}`,
		`{"executorRunId":"r","status":"RUNNING","proof":{"summary":"s","artifacts":[{"type":"log","text":"t"}]}}`,
		`{"executorRunId":"r","status":"SUCCEEDED","result":{"summary":"s","output":"o"},"proof":{"artifacts":[]}}`,
		`{"verdict":"verified","reviewer":"v"}`,
		`{"tenant":"t","admin":true}`,
		`{"proof":{"artifacts":[{"type":5}]}}`,
		`[]`, `null`, `"x"`, `{`, ``, `{"a":{"b":{"c":[1,2,{"d":null}]}}}`,
		// Unicode spaces that are not JSON whitespace around a valid body.
		`{"status":"APPROVED","approvedBy":"a"}` + "\u00a0", "\u2028" + `{"verdict":"verified","reviewer":"v"}`,
		`{"executorRunId":"r","status":"RUNNING","proof":{"summary":"s","artifacts":[{"type":"log","text":"t"}]}}` + "\v",
		`{"objective":"x","targetExecutor":"y","executorProtocol":"y.v1","riskLevel":"low"}` + "\u3000",
	} {
		for route := uint8(0); route < 7; route++ {
			f.Add(route, []byte(seed))
		}
	}
	e := newEnv(f)
	id := e.contract(e.tenantA, nil)
	e.must(e.post(id, "approval", e.tenantA, approveBody()), 200)
	h := e.srv.Config.Handler
	routes := []struct{ path, key string }{
		{"/v1/handoff/contracts", e.tenantA},
		{"/v1/handoff/preview", e.tenantA},
		{"/v1/admin/keys", e.admin},
		{"/v1/executions/" + id + "/approval", e.tenantA},
		{"/v1/executions/" + id + "/proof", e.tenantA},
		{"/v1/executions/" + id + "/result", e.tenantA},
		{"/v1/executions/" + id + "/review", e.admin},
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		e.t = t
		r := routes[int(route)%len(routes)]
		before := e.events(id)
		req := httptest.NewRequest(http.MethodPost, r.path, bytes.NewReader(body))
		req.Header.Set("x-api-key", r.key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 201:
		case 400, 409, 413, 422:
			if after := e.events(id); after != before {
				t.Fatalf("%s answered %d but appended %d events", r.path, rec.Code, after-before)
			}
		default:
			t.Fatalf("%s answered %d to %q: %s", r.path, rec.Code, body, rec.Body.String())
		}
	})
}

// FuzzGatewayBodies sends arbitrary bodies to the gateway fronts (the local
// provider answers): every answer is deliberate, never a 500.
func FuzzGatewayBodies(f *testing.F) {
	for _, seed := range []string{
		`{"model":"local:echo","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"local:echo","max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
		`{"model":"local:echo","messages":[{"role":"tool","content":null,"tool_call_id":"1"},{"role":"user","content":[{"type":"image_url"}]}]}`,
		`{"model":"x","stop":5}`, `{`, `[]`,
		`{"model":"local:echo","messages":[{"role":"user","content":"hi"}],"stop":["a",null]}`,
		`{"model":"local:echo","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"stop_sequences":["a",null,7]}`,
		`{"model":"local:echo","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false}`,
		`{"model":"local:echo","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true}}`,
		`{"model":"local:echo","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object","properties":{"x":{"type":"string"}}}}}}`,
		`{"model":"local:echo","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"},"tool_choice":"required"}`,
		`{"model":"local:echo","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}}],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"g"}}]}},"response_format":{"type":"json_schema","json_schema":{"name":"r","strict":true}}}`,
		`{"model":"local:echo","input":"hi","instructions":"s","stream":true}`,
		// Translated content: images, system messages in a messages list,
		// thinking, output_config, context editing.
		`{"model":"local:echo","messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}}]}],"reasoning_effort":"high"}`,
		`{"model":"local:echo","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]},{"role":"system","content":"s"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"a"}]}],"thinking":{"type":"enabled","budget_tokens":1024},"output_config":{"effort":"high","format":{"type":"json_schema","schema":{"type":"object"}}},"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]}}`,
		`{"model":"local:echo","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"file"}}]},{"type":"document"}]}],"container":"c","mcp_servers":[]}`,
		`{"model":"local:echo","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"r"}],"tools":[{"type":"function","name":"f"}],"text":{"format":{"type":"json_schema","name":"a","schema":{"type":"object"}}}}`,
		`{"model":"local:echo","input":"x","previous_response_id":"resp_00000000000000000000000000000000","store":false}`,
		// Mid-conversation tool changes and a system message's clear_at.
		`{"model":"local:echo","max_tokens":5,"tools":[{"name":"A","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"x"},{"role":"system","clear_at":"next_user_message","content":[{"type":"tool_removal","tool":{"type":"tool_reference","name":"A"}},{"type":"tool_addition","tool":{"type":"tool_definition","definition":{"name":"B","input_schema":{"type":"object"}}}},{"type":"text","text":"t"}]},{"role":"user","content":"y"}]}`,
		// Tool search references and a system message's own effort.
		`{"model":"local:echo","max_tokens":5,"tools":[{"name":"W","input_schema":{"type":"object"},"defer_loading":true}],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"tool_reference","tool_name":"W"},{"type":"tool_reference","tool_name":"X"}]}]},{"role":"system","content":[],"output_config":{"effort":"low"}}]}`,
	} {
		for which := range uint8(4) {
			f.Add(which, []byte(seed))
		}
	}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		f.Fatal(err)
	}
	e := newEnvWith(f, cat)
	h := e.srv.Config.Handler
	paths := []string{"/v1/chat/completions", "/v1/messages", "/v1/messages/count_tokens", "/v1/responses"}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		e.t = t
		path := paths[int(which)%len(paths)]
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.tenantA)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != 503 {
			t.Fatalf("%s answered %d to %q: %s", path, rec.Code, body, rec.Body.String())
		}
	})
}

// FuzzModelAdminBodies sends arbitrary bodies to the admin model and
// budget endpoints (the local provider is the only configured one): every
// answer is deliberate, and a refused request appends no event.
func FuzzModelAdminBodies(f *testing.F) {
	paths := []string{"/v1/models/health", "/v1/models/health/batch", "/v1/models/route/preview", "/v1/admin/budgets/a"}
	for _, seed := range []string{
		`{"provider":"local","model":"echo"}`, `{"model":"local:echo"}`, `{"configuredOnly":false,"limit":2}`,
		`{"mode":"cheap","strategy":"latency","limit":3,"needs":{"tools":true,"contextTokens":9}}`,
		`{"dailyUsd":1.5,"monthlyUsd":null}`, `{"dailyUsd":-1}`, `{"limit":1e400}`, ``, `{`, `[]`,
	} {
		for i := range paths {
			f.Add(uint8(i), []byte(seed))
		}
	}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		f.Fatal(err)
	}
	e := newEnvWith(f, cat)
	h := e.srv.Config.Handler
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		e.t = t
		path := paths[int(which)%len(paths)]
		method := http.MethodPost
		if strings.HasPrefix(path, "/v1/admin/") {
			method = http.MethodPut
		}
		before, err := e.store.Head(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(method, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.admin)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch {
		case rec.Code == 200:
		case rec.Code >= 400 && rec.Code < 500:
			if after, _ := e.store.Head(context.Background()); after != before {
				t.Fatalf("%s answered %d to %q but appended events", path, rec.Code, body)
			}
		default:
			t.Fatalf("%s answered %d to %q: %s", path, rec.Code, body, rec.Body.String())
		}
	})
}

// FuzzGenerateBodies sends arbitrary bodies to /v1/generate and
// /v1/agent-plans (the local provider answers): every answer is
// deliberate, a refusal appends nothing.
func FuzzGenerateBodies(f *testing.F) {
	for _, seed := range []string{
		`{"objective":"rotate the cert","targetExecutor":"ops-bot","riskLevel":"high"}`,
		`{"objective":"x","targetExecutor":"y","riskLevel":"low","constraints":["a",1],"options":{"maxAttempts":1}}`,
		`{"objective":"x","targetExecutor":"y","riskLevel":"low","contextPacketId":"nope"}`,
		`{"type":"summarize","input":{"text":"x"}}`,
		`{"type":"business_strategy","input":{"goal":"grow","audience":"devs"},"options":{"templateVersion":1,"maxAttempts":2,"llm":{"mode":"cheap","maxCostUsd":0.5}}}`,
		`{"type":"classify","input":{"text":"t","labels":["a","a"]}}`,
		`{"type":"extract_fields","input":{"text":"t","fields":[{"name":"9x","type":"date"}]}}`,
		`{"type":"x"}`, `{"type":"summarize","input":[]}`, `{"options":{"llm":{"maxCostUsd":1e309}}}`, `{`, `[]`, ``,
	} {
		f.Add([]byte(seed))
	}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		f.Fatal(err)
	}
	e := newEnvWith(f, cat)
	h := e.srv.Config.Handler
	f.Fuzz(func(t *testing.T, body []byte) {
		e.t = t
		before, err := e.store.Head(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		path := "/v1/generate"
		if bytes.Contains(body, []byte(`"objective"`)) {
			path = "/v1/agent-plans"
		}
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.tenantA)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch {
		case rec.Code == 200 || rec.Code == 201:
		case rec.Code >= 400 && rec.Code < 500:
			// Usage events of earlier inputs are appended in the
			// background; only this request's events count.
			evs, err := e.store.ReadAll(context.Background(), before, 10000)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if ev.Metadata.RequestID == rec.Header().Get("x-request-id") && rec.Code != 422 {
					t.Fatalf("answered %d to %q but appended %s", rec.Code, body, ev.Type)
				}
			}
		default:
			t.Fatalf("answered %d to %q: %s", rec.Code, body, rec.Body.String())
		}
	})
}
