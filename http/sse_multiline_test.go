package http_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// sseDataOf reads a stream as an SSE client does: an event's data lines
// joined with newlines, a line of any other field (or of none) ignored.
func sseDataOf(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out, data []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != nil {
				out = append(out, strings.Join(data, "\n"))
			}
			data = nil
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	return out
}

// An upstream may send one event's data on several data lines (the SSE
// grammar joins them with newlines): passed through, each line must stay
// a data line, or the client reads half an event's JSON.
func TestPassedThroughEventOnSeveralDataLines(t *testing.T) {
	split := func(stream, at string) string {
		if !strings.Contains(stream, at) {
			t.Fatalf("%q is not in the stream", at)
		}
		return strings.Replace(stream, at, at+"\ndata: ", 1)
	}
	for _, c := range []struct {
		name, stream, kinds, path, body string
	}{
		{"chat", split(openaiChunkStream, `"system_fingerprint":"fp_1",`), "openai", "/v1/chat/completions",
			`{"model":"openai:gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"messages", split(oneHourStream, `"type":"content_block_delta","index":0,`), "anthropic", "/v1/messages",
			`{"model":"anthropic:claude-haiku-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, _ := goldenEnv(t, c.stream, "{}", c.kinds)
			req, _ := http.NewRequest("POST", e.srv.URL+c.path, strings.NewReader(c.body))
			req.Header.Set("Authorization", "Bearer "+e.tenantA)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			events := sseDataOf(t, resp.Body)
			if len(events) < 4 {
				t.Fatalf("stream: %q", events)
			}
			for i, d := range events {
				if d != "[DONE]" && !json.Valid([]byte(d)) {
					t.Errorf("event %d is not JSON to a client: %q", i, d)
				}
			}
		})
	}
}
