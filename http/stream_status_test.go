package http_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/batonhq/baton/gateway"
)

// A passed-through stream whose upstream fails before any event was
// written (a 200 with an empty body, an error as its first event) is an
// error answer with a status in the front's own shape, which an SDK
// retries, not a 200 with only an error event in it.
func TestPassthroughStreamFailingFirstHasAStatus(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if strings.HasPrefix(r.URL.Path, "/v1/messages") {
			sse(w, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		} // chat: an empty body
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "k",
		"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "k"}))
	for _, c := range []struct {
		path, model, errType string
		status               int
	}{
		{"/v1/chat/completions", "openai:gpt-4o-mini", "upstream_error", 502},
		{"/v1/messages", "anthropic:claude-haiku-4-5", "overloaded_error", 529},
	} {
		body := `{"model":"` + c.model + `","max_tokens":20,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
		req, _ := http.NewRequest("POST", e.srv.URL+c.path, strings.NewReader(body))
		req.Header.Set("x-api-key", e.tenantA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got struct {
			Error struct {
				Type, Code string
			}
		}
		json.Unmarshal(raw, &got)
		if resp.StatusCode != c.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || got.Error.Type != c.errType && got.Error.Code != c.errType {
			t.Errorf("%s: %d %s %s; want %d with a JSON error %s", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), raw, c.status, c.errType)
		}
	}
}

// A streamed call whose upstream answers 200 with a JSON document instead
// of an event stream (an error object, as routers answer a failure; a
// whole answer, from a server that does not stream) tells what came: the
// provider's message, not that the stream ended early. Passed through and
// translated alike, on every front.
func TestStreamAnsweredWithJSONTellsWhatCame(t *testing.T) {
	whole := false
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		switch {
		case whole:
			io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
		case strings.HasPrefix(r.URL.Path, "/v1/messages"):
			io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"the router lost its upstream"}}`)
		default:
			io.WriteString(w, `{"error":{"message":"the router lost its upstream","type":"server_error","param":null,"code":null}}`)
		}
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "k",
		"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "k"}))
	for _, c := range []struct {
		path, model string
		whole       bool
		want        string
	}{
		{"/v1/chat/completions", "openai:gpt-4o-mini", false, "the router lost its upstream"},
		{"/v1/chat/completions", "anthropic:claude-haiku-4-5", false, "the router lost its upstream"},
		{"/v1/messages", "anthropic:claude-haiku-4-5", false, "the router lost its upstream"},
		{"/v1/messages", "openai:gpt-4o-mini", false, "the router lost its upstream"},
		{"/v1/responses", "openai:gpt-4o-mini", false, "the router lost its upstream"},
		{"/v1/chat/completions", "openai:gpt-4o-mini", true, "not an event stream"},
		{"/v1/messages", "openai:gpt-4o-mini", true, "not an event stream"},
	} {
		whole = c.whole
		status, msg, raw := postStreamed(t, e, c.path, c.model)
		if status != 502 || !strings.Contains(msg, c.want) {
			t.Errorf("%s %s whole=%v: %d %s; want 502 saying %q", c.path, c.model, c.whole, status, raw, c.want)
		}
	}
}

// postStreamed makes a streamed call of model on the front at path and
// answers its status, error message and body.
func postStreamed(t *testing.T, e *env, path, model string) (int, string, []byte) {
	t.Helper()
	body := `{"model":"` + model + `","max_tokens":20,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	if path == "/v1/responses" {
		body = `{"model":"` + model + `","stream":true,"input":"hi"}`
	}
	req, _ := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(body))
	req.Header.Set("x-api-key", e.tenantA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got struct{ Error struct{ Message string } }
	json.Unmarshal(raw, &got)
	return resp.StatusCode, got.Error.Message, raw
}

// An error object a provider answers with a 200 (whole, or in place of a
// stream) is told with the status its type or code stands for, as each
// front's wire has it: a rate limit 429, an overload 529 on /v1/messages
// and 503 on OpenAI's fronts, a refused request 400; 502 when it says
// nothing Baton knows.
func TestErrorObjectIn200HasItsStatus(t *testing.T) {
	var errBody string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, errBody)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "k",
		"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "k"}))
	for _, c := range []struct {
		path, model, body string
		status            int
	}{
		{"/v1/chat/completions", "openai:gpt-4o-mini", `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, 429},
		{"/v1/messages", "openai:gpt-4o-mini", `{"error":{"message":"slow down","code":429}}`, 429}, // OpenRouter's
		{"/v1/messages", "anthropic:claude-haiku-4-5", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, 529},
		{"/v1/chat/completions", "anthropic:claude-haiku-4-5", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, 503},
		{"/v1/chat/completions", "openai:gpt-4o-mini", `{"error":{"message":"bad messages","type":"invalid_request_error","param":"messages","code":null}}`, 400},
		{"/v1/messages", "anthropic:claude-haiku-4-5", `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`, 400},
		{"/v1/chat/completions", "openai:gpt-4o-mini", `{"error":{"message":"something broke","type":"server_error"}}`, 502},
	} {
		errBody = c.body
		for _, stream := range []bool{false, true} {
			body := fmt.Sprintf(`{"model":%q,"max_tokens":20,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, c.model, stream)
			req, _ := http.NewRequest("POST", e.srv.URL+c.path, strings.NewReader(body))
			req.Header.Set("x-api-key", e.tenantA)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Errorf("%s %s stream=%v, %s: %d %s; want %d", c.path, c.model, stream, c.body, resp.StatusCode, raw, c.status)
			}
		}
	}
}

// A refusal held in a 200 (whole, or in place of a stream) names the
// client's field in param when the body went upstream as the client sent
// it, as a refusal status does; translated, the provider's field names
// are not the client's, and param stays null.
func TestErrorObjectIn200KeepsItsParamPassedThrough(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(r.URL.Path, "/v1/messages") {
			io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content: bad"}}`)
			return
		}
		io.WriteString(w, `{"error":{"message":"bad content","type":"invalid_request_error","param":"messages[0].content","code":"bad_content"}}`)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "k",
		"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "k"}))
	for _, c := range []struct {
		model string
		param any
	}{
		{"openai:gpt-4o-mini", "messages[0].content"},
		{"anthropic:claude-haiku-4-5", nil},
	} {
		for _, stream := range []bool{false, true} {
			body := fmt.Sprintf(`{"model":%q,"max_tokens":20,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, c.model, stream)
			req, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("x-api-key", e.tenantA)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var got struct{ Error struct{ Param any } }
			json.Unmarshal(raw, &got)
			if resp.StatusCode != 400 || got.Error.Param != c.param {
				t.Errorf("%s stream=%v: %d %s; want 400 with param %v", c.model, stream, resp.StatusCode, raw, c.param)
			}
		}
	}
}

// A whole answer served in place of a stream did the provider's work: the
// attempt is billed its input, estimated, as a whole call's answer that
// does not read as one is, not recorded free. An error object in its
// place is not billed (no model answered).
func TestStreamAnsweredWholeBillsItsInput(t *testing.T) {
	whole := true
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if whole {
			io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1}}`)
			return
		}
		io.WriteString(w, `{"error":{"message":"busy","type":"server_error"}}`)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "k"}))
	n := 0
	for _, c := range []struct {
		path  string
		whole bool
	}{{"/v1/chat/completions", true}, {"/v1/messages", true}, {"/v1/chat/completions", false}} {
		whole = c.whole
		body := `{"model":"openai:gpt-4o-mini","max_tokens":20,"stream":true,"messages":[{"role":"user","content":"a prompt of some words"}]}`
		req, _ := http.NewRequest("POST", e.srv.URL+c.path, strings.NewReader(body))
		req.Header.Set("x-api-key", e.tenantA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		n++
		var u gateway.UsageRecord
		if err := json.Unmarshal(e.usageEvents("a", n)[n-1].Data, &u); err != nil {
			t.Fatal(err)
		}
		if billed := u.Usage.InputTokens > 0 && u.Usage.Estimated; u.Outcome != "upstream_error" || billed != c.whole || u.Usage.OutputTokens != 0 {
			t.Errorf("%s whole=%v: recorded %s %+v", c.path, c.whole, u.Outcome, u.Usage)
		}
	}
}

// A whole call answered with an event stream (a server that streams
// whatever the request says) is told as such, passed through and
// translated: not the decoder's "invalid character 'd'", nor "no
// choices".
func TestWholeCallAnsweredWithAStreamSaysSo(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if strings.HasPrefix(r.URL.Path, "/v1/messages") {
			sse(w, "message_start", `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}`)
			return
		}
		sse(w, "", `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}`)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "k",
		"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "k"}))
	for _, c := range []struct{ path, model string }{
		{"/v1/chat/completions", "openai:gpt-4o-mini"},
		{"/v1/chat/completions", "anthropic:claude-haiku-4-5"},
		{"/v1/messages", "anthropic:claude-haiku-4-5"},
		{"/v1/messages", "openai:gpt-4o-mini"},
		{"/v1/responses", "openai:gpt-4o-mini"},
	} {
		body := `{"model":"` + c.model + `","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`
		if c.path == "/v1/responses" {
			body = `{"model":"` + c.model + `","input":"hi"}`
		}
		req, _ := http.NewRequest("POST", e.srv.URL+c.path, strings.NewReader(body))
		req.Header.Set("x-api-key", e.tenantA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 502 || !strings.Contains(string(raw), "answered with an event stream") {
			t.Errorf("%s %s: %d %s; want 502 saying it answered with an event stream", c.path, c.model, resp.StatusCode, raw)
		}
	}
}

// An error that ends a chat stream already begun names what the same
// error names as an error answer: a passed-through provider's refusal
// its own code and the client's field in param (they were Baton's code
// and null).
func TestChatStreamErrorChunkKeepsParamAndCode(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "", `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`)
		sse(w, "", `{"error":{"message":"messages[0].content is too long","type":"invalid_request_error","param":"messages[0].content","code":"string_above_max_length"}}`)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "k"}))
	resp, evs := e.stream("/v1/chat/completions", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if resp.StatusCode != 200 || len(evs) == 0 {
		t.Fatalf("%d %v", resp.StatusCode, evs)
	}
	var last struct{ Error struct{ Param, Code any } }
	json.Unmarshal([]byte(evs[len(evs)-1][1]), &last)
	if last.Error.Param != "messages[0].content" || last.Error.Code != "string_above_max_length" {
		t.Fatalf("the stream ends with %s, want the provider's param and code", evs[len(evs)-1][1])
	}
}

// A passed-through stream that fails before anything was written is an
// error status however long billing the attempt takes: a whole answer in
// place of the stream is billed Baton's count of a long prompt, which
// outlasts the headers' hold, and the status must be claimed first (it
// was a 200 with an error chunk).
func TestPassthroughStreamFailingFirstKeepsItsStatusWhileBilled(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "k"}))
	prompt := strings.Repeat("the quick brown fox jumps over the lazy dog, ", 40000) // about 1.8 MB: a long count
	body, _ := json.Marshal(map[string]any{"model": "openai:gpt-4o-mini", "stream": true, "messages": []any{map[string]any{"role": "user", "content": prompt}}})
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions", strings.NewReader(string(body)))
	req.Header.Set("x-api-key", e.tenantA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || !strings.Contains(string(raw), "not an event stream") {
		t.Fatalf("%d %s; want 502 saying it is not an event stream", resp.StatusCode, raw)
	}
}

// A streamed call answered with a web page (a base URL that leads to a
// site) says so on every front, passed through or translated: it was told
// as a stream that ended before its answer did.
func TestStreamAnsweredWithAPageSaysSo(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><html><head><title>Welcome to nginx!</title></head><body>It works.</body></html>")
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "k",
		"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "k"}))
	for _, c := range []struct{ path, model string }{
		{"/v1/chat/completions", "openai:gpt-4o-mini"},
		{"/v1/chat/completions", "anthropic:claude-haiku-4-5"},
		{"/v1/messages", "anthropic:claude-haiku-4-5"},
		{"/v1/messages", "openai:gpt-4o-mini"},
		{"/v1/responses", "openai:gpt-4o-mini"},
	} {
		if status, msg, raw := postStreamed(t, e, c.path, c.model); status != 502 || !strings.Contains(msg, "an HTML page, not an event stream") {
			t.Errorf("%s %s: %d %s", c.path, c.model, status, raw)
		}
	}
}

// A Responses stream that fails after it began ends with an error event
// that keeps the field the provider's error names, passed through as the
// chat stream's error chunk does: its param was always null.
func TestResponsesStreamErrorEventKeepsParam(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-4o-mini","output":[]}}`)
		sse(w, "response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel"}`)
		sse(w, "error", `{"type":"error","sequence_number":2,"code":"invalid_request_error","message":"input[0].content is too long","param":"input[0].content"}`)
	}))
	t.Cleanup(up.Close)
	e := newEnvWith(t, catalogWith(t, map[string]string{"OPENAI_BASE_URL": up.URL + "/v1", "OPENAI_API_KEY": "k"}))
	resp, evs := e.stream("/v1/responses", e.tenantA, map[string]any{"model": "openai:gpt-4o-mini", "stream": true, "input": "hi"})
	if resp.StatusCode != 200 || len(evs) == 0 {
		t.Fatalf("%d %v", resp.StatusCode, evs)
	}
	for _, ev := range evs {
		if ev[0] != "error" {
			continue
		}
		var got struct{ Param any }
		json.Unmarshal([]byte(ev[1]), &got)
		if got.Param != "input[0].content" {
			t.Fatalf("the error event %s, want the provider's param", ev[1])
		}
		return
	}
	t.Fatalf("no error event in %v", evs)
}
