package anthropic

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/gateway"
	"github.com/batonhq/baton/gateway/internal/upstreamtest"
)

// FuzzAnthropicCountTokens: whatever the upstream answers to a count, the
// adapter returns a count of zero or more, or an *UpstreamError with the
// upstream's status (502 for a 2xx that is not a count, but for an error
// of the API in it: the status its type stands for).
func FuzzAnthropicCountTokens(f *testing.F) {
	for _, s := range []struct {
		status uint16
		body   string
	}{
		{200, `{"input_tokens":42}`}, {200, `{"input_tokens":-1}`}, {200, `{}`}, {200, `[]`}, {200, ``},
		{200, `{"input_tokens":1e3}`}, {200, `{"input_tokens":"7"}`}, {200, `{"input_tokens":42}{"x":1}`},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`}, {529, `overloaded`}, {301, ``},
		{200, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
	} {
		f.Add(s.status, []byte(s.body))
	}
	up := &upstreamtest.Upstream{}
	srv := httptest.NewServer(up)
	f.Cleanup(srv.Close)
	an := New("anthropic", srv.URL, "k", srv.Client())
	body := []byte(`{"model":"anthropic:m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	f.Fuzz(func(t *testing.T, status uint16, answer []byte) {
		code := int(status)
		if code < 200 || code > 999 {
			code = 200 + code%800
		}
		up.Reset(code, answer)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var n int
		var err error
		upstreamtest.Within(t, 15*time.Second, func() {
			n, err = an.CountTokens(ctx, &gateway.Native{Format: gateway.FormatAnthropic, Body: body}, "m")
		})
		if err == nil {
			if n < 0 || code >= 300 {
				t.Fatalf("count %d from a %d answer %q", n, code, answer)
			}
			return
		}
		var ue *gateway.UpstreamError
		if !errors.As(err, &ue) {
			t.Fatalf("error %v (%T) is not an *UpstreamError", err, err)
		}
		want := code
		if code < 300 {
			want = http.StatusBadGateway
			if ue.OfAPI {
				// An error of the API in its place: the status its type
				// or code stands for.
				want = gateway.ErrorStatus(gjson.GetBytes(answer, "error.type").Str, gjson.GetBytes(answer, "error.code"))
			}
		}
		if ue.Status != want {
			t.Fatalf("status %d, want %d: %v", ue.Status, want, err)
		}
	})
}
