package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A provider (a proxy, a compatible server) that quotes the request's key
// in its error: the message the caller and the log get carries no part of
// Baton's provider key, in either header it goes in, even where the
// message is cut at 500 bytes inside the key.
func TestUpstreamErrorHidesTheProviderKey(t *testing.T) {
	const key = "sk-proj-ProviderSecret0123456789abcdefXYZ"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key")
		msg := "Incorrect API key provided: " + sent
		if r.URL.Path == "/long" {
			msg = strings.Repeat("x", 470) + sent // cut at 500, inside the key
		}
		if r.URL.Path == "/plain" {
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("bad gateway; request headers: " + sent))
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": msg, "type": "invalid_request_error"}})
	}))
	defer srv.Close()
	for _, tc := range []struct{ path, header, value string }{
		{"/json", "Authorization", "Bearer " + key},
		{"/json", "X-Api-Key", key},
		{"/long", "Authorization", "Bearer " + key},
		{"/plain", "X-Api-Key", key},
	} {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+tc.path, strings.NewReader("{}"))
		req.Header.Set(tc.header, tc.value)
		_, err := Send(srv.Client(), "p", req)
		if err == nil {
			t.Fatalf("%s %s: no error", tc.path, tc.header)
		}
		if msg := err.Error(); strings.Contains(msg, key[:12]) || !strings.Contains(err.(*UpstreamError).Public(), "provider p answered") {
			t.Errorf("%s %s: the error shows the provider's key: %s", tc.path, tc.header, msg)
		}
	}
}

// An error answer with no body, or only white space, says the status's
// name: its message was empty, and
// the client read "provider p answered 500: " and nothing after.
func TestUpstreamErrorWithoutABodySaysItsStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/529":
			w.WriteHeader(529)
		case "/blank":
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(" \n"))
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	for path, want := range map[string]string{"/500": "provider p answered 500: Internal Server Error (no error message)",
		"/blank": "provider p answered 500: Internal Server Error (no error message)", "/529": "provider p answered 529: no error message"} {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+path, strings.NewReader("{}"))
		_, err := Send(srv.Client(), "p", req)
		if ue, ok := err.(*UpstreamError); !ok || ue.Public() != want {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}

// An upstream that takes the request and drops the connection (reset, or
// closed) before answering was reached: the message says the connection
// broke, not that the provider could not be reached, which sent the
// operator to look for a network fault. A port nothing listens on still
// could not be reached.
func TestUpstreamDroppingTheConnectionWasReached(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		conn, _, _ := w.(http.Hijacker).Hijack()
		if r.URL.Path == "/reset" {
			conn.(*net.TCPConn).SetLinger(0)
		}
		conn.Close()
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	for url, want := range map[string]string{srv.URL + "/reset": "provider p: the connection broke before the answer",
		srv.URL + "/close": "provider p: the connection broke before the answer", closedURL: "provider p: could not reach the provider"} {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader("{}"))
		_, err := Send(&http.Client{}, "p", req)
		if ue, ok := err.(*UpstreamError); !ok || ue.Public() != want {
			t.Errorf("%s: %v, want %q", url, err, want)
		}
	}
}

// An error answer whose error is a string (Hugging Face's TGI:
// {"error":"...","error_type":"..."}) says that string, not the whole
// body as JSON.
func TestUpstreamErrorAsAString(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		w.Write([]byte(`{"error":"Input validation error: inputs tokens + max_new_tokens must be <= 4096","error_type":"validation"}`))
	}))
	defer srv.Close()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL, strings.NewReader("{}"))
	_, err := Send(srv.Client(), "p", req)
	if ue, ok := err.(*UpstreamError); !ok || ue.Public() != "provider p answered 422: Input validation error: inputs tokens + max_new_tokens must be <= 4096" {
		t.Errorf("%v", err)
	}
}
