package http_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/gateway"
	batonhttp "github.com/batonhq/baton/http"
)

// testBodyTimeout is the body read timeout of the tests below, far
// shorter than the default so that they run in a few seconds.
const testBodyTimeout = time.Second

// TestStalledBodyReleasesTheConnection: a client that sends its headers and
// part of its body and then nothing, on a keep-alive connection, gets its
// connection closed (with an answer, or without one) within the body read
// timeout, whatever the route does with the body: one that refuses before
// reading it (401, 403, 404, 405) as well as one that reads it. Over real
// TCP, as a stalled client would come.
func TestStalledBodyReleasesTheConnection(t *testing.T) {
	restore := batonhttp.SetBodyReadTimeout(testBodyTimeout)
	t.Cleanup(restore)   // after the env's cleanup, which stops the front
	e, _ := newLogEnv(t) // with the transparency log: its cosignature route needs no key
	addr := e.srv.Listener.Addr().String()
	tests := []struct {
		name, method, path, key string
		chunked                 bool
		status                  int // the answer, if the server sends one
	}{
		{"401 without a key", "POST", "/v1/handoff/contracts", "", false, 401},
		{"403 tenant key on an admin route", "POST", "/v1/admin/keys", e.tenantA, false, 403},
		{"404 no such route", "POST", "/v1/nowhere", e.tenantA, false, 404},
		{"405 wrong method", "POST", "/v1/admin/keys/k1", e.admin, false, 405},
		{"authenticated route reading the body", "POST", "/v1/handoff/contracts", e.tenantA, false, 408},
		{"authenticated callback reading the body", "POST", "/v1/executions/x/proof", e.tenantA, false, 408},
		{"chunked body", "POST", "/v1/handoff/contracts", e.tenantA, true, 408},
		{"keyless route reading the body", "POST", "/v1/log/cosignature", "", false, 408}, // was 413, whatever the size
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var req strings.Builder
			fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: baton\r\nContent-Type: application/json\r\n", tc.method, tc.path)
			if tc.key != "" {
				fmt.Fprintf(&req, "x-api-key: %s\r\n", tc.key)
			}
			if tc.chunked {
				req.WriteString("Transfer-Encoding: chunked\r\n\r\na\r\n{\"objectiv\r\n")
			} else {
				req.WriteString("Content-Length: 100\r\n\r\n{\"objectiv") // 10 of 100 bytes
			}
			start := time.Now()
			if _, err := io.WriteString(conn, req.String()); err != nil {
				t.Fatal(err)
			}
			// Then silence. The server must let go of the connection within
			// the timeout (and a margin for a loaded machine).
			conn.SetReadDeadline(start.Add(testBodyTimeout + 5*time.Second))
			got, err := io.ReadAll(conn)
			elapsed := time.Since(start)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the connection was still open after %v (read %q)", elapsed.Round(time.Millisecond), got)
			}
			if len(got) > 0 {
				resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil)
				if err != nil {
					t.Fatalf("answer %q: %v", got, err)
				}
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d: %q", resp.StatusCode, tc.status, got)
				}
			}
			t.Logf("released after %v with %d bytes of answer", elapsed.Round(time.Millisecond), len(got))
		})
	}
}

// TestBodyDeadlineSparesMovingUploadsAndStreams: the body deadline bounds
// the body only. An upload that keeps moving and ends within the timeout
// is served, the kept-alive connection serves a later request, and a
// streamed answer that runs for longer than the timeout after its body
// was read is not cut.
func TestBodyDeadlineSparesMovingUploadsAndStreams(t *testing.T) {
	restore := batonhttp.SetBodyReadTimeout(testBodyTimeout)
	t.Cleanup(restore)
	pause := 2 * testBodyTimeout
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "", `{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`)
		select { // a model thinking for longer than the body timeout
		case <-time.After(pause):
		case <-r.Context().Done():
			return
		}
		sse(w, "", `{"choices":[{"index":0,"delta":{"content":"lo"}}]}`)
		sse(w, "", `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		sse(w, "", `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}`)
		sse(w, "", "[DONE]")
	}))
	t.Cleanup(func() { upstream.CloseClientConnections(); upstream.Close() })
	vars := map[string]string{"OPENAI_BASE_URL": upstream.URL + "/v1", "OPENAI_API_KEY": "k"}
	cat, err := gateway.NewCatalog(gateway.Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, cat)

	t.Run("moving upload, then the kept-alive connection again", func(t *testing.T) {
		conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		body, _ := json.Marshal(map[string]any{
			"objective": "Rotate the staging TLS certificate", "targetExecutor": "ops-bot",
			"executorProtocol": "ops_bot.v1", "riskLevel": "medium", "approvalMode": "manual", "proofRequired": []string{"log"},
		})
		fmt.Fprintf(conn, "POST /v1/handoff/contracts HTTP/1.1\r\nHost: baton\r\nx-api-key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", e.tenantA, len(body))
		pieces := 5
		step := (len(body) + pieces - 1) / pieces
		for i := 0; i < len(body); i += step {
			time.Sleep(testBodyTimeout / 10) // a slow client's pace: half the timeout in all
			conn.Write(body[i:min(i+step, len(body))])
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		// Idle for longer than the body timeout, then the same connection.
		time.Sleep(testBodyTimeout + testBodyTimeout/2)
		fmt.Fprintf(conn, "GET /v1/handoff/contracts HTTP/1.1\r\nHost: baton\r\nx-api-key: %s\r\n\r\n", e.tenantA)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("the kept-alive connection: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d on the kept-alive connection", resp.StatusCode)
		}
	})

	t.Run("stream longer than the timeout", func(t *testing.T) {
		e.t = t
		start := time.Now()
		_, evs := e.stream("/v1/chat/completions", e.tenantA, map[string]any{
			"model": "openai:gpt-4o-mini", "stream": true, "stream_options": map[string]any{"include_usage": true},
			"messages": []any{map[string]any{"role": "user", "content": "hi"}},
		})
		if time.Since(start) < pause {
			t.Fatalf("the stream ended after %v, before the upstream's pause of %v", time.Since(start), pause)
		}
		if len(evs) == 0 || evs[len(evs)-1][1] != "[DONE]" {
			t.Fatalf("the stream was cut: %v", evs)
		}
	})
}

// A model call whose body stalls is told so in its front's own shape,
// with a status the SDKs retry.
func TestStalledModelBodyIs408(t *testing.T) {
	restore := batonhttp.SetBodyReadTimeout(testBodyTimeout)
	t.Cleanup(restore)
	e, _ := newGatewayEnv(t)
	for _, c := range []struct{ path, errType string }{{"/v1/chat/completions", "invalid_request_error"}, {"/v1/messages", "invalid_request_error"}} {
		conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: baton\r\nx-api-key: %s\r\nanthropic-version: 2023-06-01\r\nContent-Length: 100\r\n\r\n{\"model\"", c.path, e.tenantA)
		conn.SetReadDeadline(time.Now().Add(testBodyTimeout + 5*time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Error struct{ Type, Code, Message string }
		}
		json.NewDecoder(resp.Body).Decode(&got)
		conn.Close()
		if resp.StatusCode != http.StatusRequestTimeout || got.Error.Type != c.errType || !strings.Contains(got.Error.Message, "did not arrive within") {
			t.Errorf("%s: %d %+v", c.path, resp.StatusCode, got)
		}
	}
}
