package gateway

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A streamed call's JSON answer reads as the failure it is, an error
// object as that error; an event stream a server labels JSON reads as
// the stream it is.
func TestStreamBodyOfAJSONAnswer(t *testing.T) {
	read := func(ct, body string) (string, error) {
		resp := &http.Response{Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(strings.NewReader(body))}
		b, err := io.ReadAll(StreamBody("p", resp))
		return string(b), err
	}
	sse := "data: {\"choices\":[]}\n\ndata: [DONE]\n\n"
	for _, ct := range []string{"text/event-stream", "application/json", "application/json; charset=utf-8"} {
		if got, err := read(ct, sse); got != sse || err != nil {
			t.Errorf("%s: %q %v, want the stream as sent", ct, got, err)
		}
	}
	_, err := read("application/json", ` {"error":{"message":"the router lost its upstream","type":"server_error"}}`)
	if ue, ok := errors.AsType[*UpstreamError](err); !ok || !strings.Contains(ue.Message, "the router lost its upstream") {
		t.Errorf("an error object: %v", err)
	}
	_, err = read("application/json", `{"id":"x","choices":[{"message":{"content":"hi"}}]}`)
	if ue, ok := errors.AsType[*UpstreamError](err); !ok || !strings.Contains(ue.Message, "not an event stream") || !ue.Served {
		t.Errorf("a whole answer: %v", err)
	}
	if got, err := read("application/json", ""); got != "" || err != nil {
		t.Errorf("an empty body: %q %v, want an empty stream", got, err)
	}
	// A web page is told as one (it read as a stream cut short), and not
	// billed: no model served it.
	_, err = read("text/html; charset=utf-8", "<!doctype html><title>Welcome</title>")
	if ue, ok := errors.AsType[*UpstreamError](err); !ok || !strings.Contains(ue.Message, "an HTML page, not an event stream") || ue.Served {
		t.Errorf("a web page: %v", err)
	}
}
