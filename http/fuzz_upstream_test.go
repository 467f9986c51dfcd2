package http_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/gateway"
)

// fuzzUpstream is an OpenAI and an Anthropic upstream in one: it answers
// each call whose body docs/openapi.yaml takes with a well-formed answer
// of the format its path asks for,
// streamed when the body asks for a stream, and keeps the bodies it was
// sent. Its variant picks a text answer, a tool call, or an answer cut
// halfway.
type fuzzUpstream struct {
	mu      sync.Mutex
	variant uint8
	got     [][]byte
}

// The fuzzUpstream's variants.
const (
	answerText = iota
	answerToolCall
	answerCut
	answerVariants
)

func (u *fuzzUpstream) reset(variant uint8) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.variant, u.got = variant%answerVariants, nil
}

func (u *fuzzUpstream) sent() [][]byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.got
}

func (u *fuzzUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.got = append(u.got, body)
	variant := u.variant
	u.mu.Unlock()
	tools := variant == answerToolCall
	// Like the provider, it refuses what its format's document refuses: a
	// body passed through is the provider's to judge, not Baton's.
	spec, err := loadOpenAPISpec()
	if err == nil {
		err = spec.checkRequestBody("/paths/"+pointerToken(r.URL.Path)+"/post", body)
	}
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		msg, _ := json.Marshal(err.Error())
		if strings.HasPrefix(r.URL.Path, "/v1/messages") {
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%s}}`, msg)
		} else {
			fmt.Fprintf(w, `{"error":{"message":%s,"type":"invalid_request_error","param":null,"code":null}}`, msg)
		}
		return
	}
	stream := gjson.GetBytes(body, "stream").Bool()
	var answer string
	switch r.URL.Path {
	case "/v1/chat/completions":
		answer = pick(stream, tools, oaChat, oaChatTools, oaChatStream)
	case "/v1/messages":
		answer = pick(stream, tools, anMessage, anTools, anStream)
	case "/v1/messages/count_tokens":
		answer = anCount
	case "/v1/responses":
		answer = pick(stream, false, oaResponse, oaResponse, oaRespSSE)
	default:
		http.NotFound(w, r)
		return
	}
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	if variant == answerCut {
		answer = answer[:len(answer)/2]
	}
	io.WriteString(w, answer)
}

func pick(stream, tools bool, whole, toolCall, streamed string) string {
	switch {
	case stream:
		return streamed
	case tools:
		return toolCall
	}
	return whole
}

// The fuzzUpstream's answers.
const (
	oaChat       = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
	oaChatTools  = `{"id":"chatcmpl-2","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"structured_output","arguments":"{\"x\":\"y\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
	oaChatStream = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"}}]}\n\n" +
		"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\ndata: [DONE]\n\n"
	anMessage = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`
	anTools   = `{"id":"msg_2","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"tool_use","id":"toolu_1","name":"structured_output","input":{"x":"y"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`
	anStream  = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-haiku-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":1}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	anCount    = `{"input_tokens":5}`
	oaResponse = `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-4o-mini","output":[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"e"},{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}]}],"usage":{"input_tokens":3,"output_tokens":1,"total_tokens":4}}`
	oaRespSSE  = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1,\"status\":\"in_progress\",\"model\":\"gpt-4o-mini\",\"output\":[]}}\n\n" +
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"hi\"}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":" + oaResponse + "}\n\n"
)

// FuzzUpstreamBodies sends arbitrary bodies to the gateway fronts for
// models of an OpenAI and an Anthropic provider (FuzzGatewayBodies' local
// provider takes the gateway's request as it is): what a front translates
// for another format's provider, or passes through to its own, and the
// answer it makes of the upstream's. Every answer is deliberate (never a
// 500) and as docs/openapi.yaml says (the env checks it); what the
// upstream is sent is one JSON object; a whole answer is valid JSON, and
// so is every event of a streamed one.
func FuzzUpstreamBodies(f *testing.F) {
	const chatFront, messagesFront, countFront, responsesFront = 0, 1, 2, 3
	// Each front's bodies, passed through to a provider of its format and
	// translated for the other's: tool references, tool changes, a system
	// message's effort and clear_at, images, structured output.
	tools := `"tools":[{"name":"W","description":"<w> & co","input_schema":{"type":"object","properties":{"q":{"type":"integer"}}},"defer_loading":true},{"name":"A","input_schema":{"type":"object"}}]`
	messagesBodies := []string{
		`{"model":"anthropic:claude-haiku-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"anthropic:claude-haiku-4-5","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"hi"}],"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`,
		// Tool search references expanded as definitions, a system
		// message's own effort, clear_at and mid-conversation tool changes.
		`{"model":"openai:gpt-4o-mini","max_tokens":16,` + tools + `,"messages":[{"role":"user","content":"find"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"ToolSearch","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"tool_reference","tool_name":"W"},{"type":"text","text":"x"}]}]},{"role":"system","content":[],"output_config":{"effort":"low"}}]}`,
		`{"model":"openai:gpt-4o-mini","max_tokens":16,"stream":true,` + tools + `,"messages":[{"role":"user","content":"x"},{"role":"system","clear_at":"next_user_message","content":[{"type":"tool_removal","tool":{"type":"tool_reference","name":"A"}},{"type":"tool_addition","tool":{"type":"tool_definition","definition":{"name":"B","input_schema":{"type":"object"}}}},{"type":"text","text":"t"}]},{"role":"user","content":"y"}],"tool_choice":{"type":"tool","name":"B"}}`,
		`{"model":"openai:gpt-4o-mini","max_tokens":16,"system":"s","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},{"type":"image","source":{"type":"url","url":"https://x/y.png"}},{"type":"text","text":"what?"}]},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"a"}]},{"role":"user","content":"b"}],"thinking":{"type":"enabled","budget_tokens":1024},"output_config":{"effort":"high","format":{"type":"json_schema","schema":{"type":"object","properties":{"x":{"type":"string"}}}}}}`,
	}
	chatBodies := []string{
		`{"model":"openai:gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true},"stream":true}`,
		`{"model":"openai:gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"n":2,"max_tokens":5}`,
		`{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}}]}],"reasoning_effort":"high","max_completion_tokens":2048}`,
		`{"model":"anthropic:claude-haiku-4-5","stream":true,"messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_0","type":"function","function":{"name":"W","arguments":"{\"q\":1}"}}]},{"role":"tool","tool_call_id":"call_0","content":"18C"}],"tools":[{"type":"function","function":{"name":"W","parameters":{"type":"object"}}}],"tool_choice":"required"}`,
		`{"model":"anthropic:claude-haiku-4-5","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"r","strict":true,"schema":{"type":"object","$schema":"x","properties":{"x":{"type":"string"}}}}}}`,
	}
	responsesBodies := []string{
		`{"model":"openai:gpt-4o-mini","input":"hi","instructions":"s"}`,
		`{"model":"openai:gpt-4o-mini","input":"hi","stream":true,"store":true}`,
		`{"model":"anthropic:claude-haiku-4-5","input":[{"role":"user","content":[{"type":"input_text","text":"x"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"r"}],"tools":[{"type":"function","name":"f"}],"reasoning":{"effort":"low"}}`,
		`{"model":"anthropic:claude-haiku-4-5","input":"x","stream":true,"text":{"format":{"type":"json_schema","name":"a","schema":{"type":"object"}}}}`,
		`{"model":"anthropic:claude-haiku-4-5","input":"and?","previous_response_id":"resp_1"}`,
		`{"model":"openai:gpt-4o-mini","input":"and?","previous_response_id":"resp_1","stream":true}`,
	}
	for variant := range uint8(answerVariants) {
		for _, b := range messagesBodies {
			f.Add(uint8(messagesFront), variant, []byte(b))
			f.Add(uint8(countFront), variant, []byte(b))
		}
		for _, b := range chatBodies {
			f.Add(uint8(chatFront), variant, []byte(b))
		}
		for _, b := range responsesBodies {
			f.Add(uint8(responsesFront), variant, []byte(b))
		}
	}

	up := &fuzzUpstream{}
	srv := httptest.NewServer(up)
	f.Cleanup(srv.Close)
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": "k", "ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "k"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		f.Fatal(err)
	}
	e := newEnvWith(f, cat)
	h := e.srv.Config.Handler
	paths := []string{"/v1/chat/completions", "/v1/messages", "/v1/messages/count_tokens", "/v1/responses"}
	// A response of the upstream's, kept: a continuation of it goes
	// through the tenant's store (its reasoning left out elsewhere).
	e.must(e.do(http.MethodPost, "/v1/responses", e.tenantA, `{"model":"openai:gpt-4o-mini","input":"hi"}`), 200)
	f.Fuzz(func(t *testing.T, which, variant uint8, body []byte) {
		e.t = t
		path := paths[int(which)%len(paths)]
		up.reset(variant)
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.tenantA)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusBadGateway && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s answered %d to %q: %s", path, rec.Code, body, rec.Body.String())
		}
		for _, sent := range up.sent() {
			if !json.Valid(sent) || !bytes.HasPrefix(bytes.TrimLeft(sent, " \t\r\n"), []byte("{")) {
				t.Fatalf("%s sent the upstream %q for %q", path, sent, body)
			}
		}
		if !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("%s answered %d with %q, not JSON, to %q", path, rec.Code, rec.Body.String(), body)
			}
			return
		}
		sc := bufio.NewScanner(bytes.NewReader(rec.Body.Bytes()))
		sc.Buffer(nil, len(rec.Body.Bytes())+1)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if ok && data != "[DONE]" && !json.Valid([]byte(data)) {
				t.Fatalf("%s streamed the event data %q, not JSON, to %q", path, data, body)
			}
		}
	})
}
