package http_test

// POST /v1/responses translated to Anthropic, against a fake that keeps
// each body it took and answers as it is told: what real clients send
// (testdata/clients) and exactly what Anthropic gets and they get back.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/batonhq/baton/gateway"
)

// anRecorder is an Anthropic upstream that keeps the bodies it takes and
// answers with the content blocks of reply (a JSON array), whole or as
// the event stream Anthropic sends for them.
type anRecorder struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
	reply  string
	stop   string
}

func newAnRecorder(t *testing.T, reply, stop string) *anRecorder {
	a := &anRecorder{reply: reply, stop: stop}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *anRecorder) last(t *testing.T) map[string]any {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.bodies) == 0 {
		t.Fatal("no request reached Anthropic")
	}
	return a.bodies[len(a.bodies)-1]
}

func (a *anRecorder) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	json.Unmarshal(raw, &body)
	a.mu.Lock()
	a.bodies = append(a.bodies, body)
	a.mu.Unlock()
	usage := `{"input_tokens":10,"output_tokens":5}`
	if body["stream"] != true {
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":`+a.reply+`,"stop_reason":"`+a.stop+`","usage":`+usage+`}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sse(w, "message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":`+usage+`}}`)
	var blocks []map[string]any
	json.Unmarshal([]byte(a.reply), &blocks)
	for i, b := range blocks {
		start := map[string]any{"type": b["type"]}
		var deltas []map[string]any
		switch b["type"] {
		case "text":
			start["text"] = ""
			deltas = append(deltas, map[string]any{"type": "text_delta", "text": b["text"]})
		case "thinking":
			start["thinking"], start["signature"] = "", ""
			deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": b["thinking"]}, map[string]any{"type": "signature_delta", "signature": b["signature"]})
		case "tool_use":
			start["id"], start["name"], start["input"] = b["id"], b["name"], map[string]any{}
			deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": jsonOf(b["input"])})
		}
		sse(w, "content_block_start", jsonOf(map[string]any{"type": "content_block_start", "index": i, "content_block": start}))
		for _, d := range deltas {
			sse(w, "content_block_delta", jsonOf(map[string]any{"type": "content_block_delta", "index": i, "delta": d}))
		}
		sse(w, "content_block_stop", jsonOf(map[string]any{"type": "content_block_stop", "index": i}))
	}
	sse(w, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+a.stop+`"},"usage":{"output_tokens":5}}`)
	sse(w, "message_stop", `{"type":"message_stop"}`)
}

// anEnv is a Baton whose anthropic provider is a.
func anEnv(t *testing.T, a *anRecorder) *env {
	vars := map[string]string{"ANTHROPIC_BASE_URL": a.srv.URL, "ANTHROPIC_API_KEY": "k"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, cat)
}

// clientBodies are the request bodies of a capture in testdata/clients.
func clientBodies(t *testing.T, name string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile("../testdata/clients/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Exchanges []struct {
			Body map[string]any `json:"body"`
		} `json:"exchanges"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, x := range c.Exchanges {
		if x.Body != nil {
			out = append(out, x.Body)
		}
	}
	return out
}

// The AI SDK's image request (openai(model), the Responses API): a data:
// URL becomes a base64 image, an https URL a url image.
func TestResponsesImageToAnthropic(t *testing.T) {
	a := newAnRecorder(t, `[{"type":"text","text":"A pixel and a cat."}]`, "end_turn")
	e := anEnv(t, a)
	body := clientBodies(t, "ai-sdk-openai-image.json")[0]
	body["model"] = "anthropic:claude-sonnet-5-5"
	r := e.must(e.do("POST", "/v1/responses", e.tenantA, body), 200)
	want := `[{"content":[{"text":"What is in these images?","type":"text"},` +
		`{"source":{"data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==","media_type":"image/png","type":"base64"},"type":"image"},` +
		`{"source":{"type":"url","url":"https://example.com/cat.png"},"type":"image"}],"role":"user"}]`
	if got := jsonOf(a.last(t)["messages"]); got != want {
		t.Fatalf("Anthropic got %s", got)
	}
	if !strings.Contains(string(r.raw), `"text":"A pixel and a cat."`) {
		t.Fatalf("answer %s", r.raw)
	}
	// An uploaded file stays OpenAI's.
	body["input"] = []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_image", "file_id": "file_1"}}}}
	if r := e.do("POST", "/v1/responses", e.tenantA, body); r.status != 400 || r.str("error.param") != "input/0/content/0/file_id" {
		t.Fatalf("file_id: %d %s", r.status, r.raw)
	}
}
