package http_test

import (
	"net/http"
	"strings"
	"testing"
)

// svc goes into the stream's message_start, not into whatever else an
// upstream sends first (here a ping): that passes as sent.
func TestPassedThroughStreamSvcOnlyInMessageStart(t *testing.T) {
	pingFirst := "event: ping\ndata: {\"type\":\"ping\"}\n\n" + oneHourStream
	e, _ := goldenEnv(t, pingFirst, oneHourMessage, "anthropic")
	body := `{"model":"anthropic:claude-haiku-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/messages", strings.NewReader(body))
	req.Header.Set("x-api-key", e.tenantA)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := sseRaw(t, resp.Body)
	if len(events) < 2 {
		t.Fatalf("stream: %v", events)
	}
	if events[0][0] != "ping" || events[0][1] != `{"type":"ping"}` || !strings.Contains(events[1][1], `"svc"`) {
		t.Fatalf("svc not where it belongs: %q %s, then %s", events[0][0], events[0][1], events[1][1])
	}
}
