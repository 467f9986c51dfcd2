package http_test

import (
	"io"
	"net/http"
	"testing"
)

// The base URL answers: Claude Code's probe (HEAD /, no key, as recorded
// in testdata/clients/claude-code-turn.json) gets 200 and no body, GET /
// says where to go; the console's routes are where they were.
func TestRootProbe(t *testing.T) {
	e := newEnv(t)
	probe := capturedRequests(t, "claude-code-turn.json", "HEAD", "/")[0]
	req, _ := http.NewRequest("HEAD", e.srv.URL+probe.path, nil)
	for k, v := range probe.header {
		if k != "Host" && k != "Connection" {
			req.Header[k] = v
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(body) != 0 || resp.Header.Get("x-request-id") == "" {
		t.Fatalf("HEAD /: %d %q %v", resp.StatusCode, body, resp.Header)
	}

	// Claude Code 2.1.332 probes HEAD /api/hello (claude-code-2.1.332-turn.json).
	probe = capturedRequests(t, "claude-code-2.1.332-turn.json", "HEAD", "/api/hello")[0]
	req, _ = http.NewRequest("HEAD", e.srv.URL+probe.path, nil)
	for k, v := range probe.header {
		if k != "Host" && k != "Connection" {
			req.Header[k] = v
		}
	}
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(body) != 0 {
		t.Fatalf("HEAD /api/hello: %d %q", resp.StatusCode, body)
	}
	if r := e.do("GET", "/api/hello", "", nil); r.status != 200 || r.str("service") != "baton" {
		t.Fatalf("GET /api/hello: %d %s", r.status, r.raw)
	}

	r := e.do("GET", "/", "", nil)
	if r.status != 200 || r.str("service") != "baton" || r.str("console") != "/console/" || r.str("openapi") != "/v1/openapi.json" {
		t.Fatalf("GET /: %d %s", r.status, r.raw)
	}
	if r := e.do("POST", "/", "", nil); r.status != 405 {
		t.Fatalf("POST /: %d %s", r.status, r.raw)
	}
	// /console goes on to /console/, which asks a person to sign in.
	if r := e.do("GET", "/console", "", nil); r.status != 401 || r.header.Get("Content-Security-Policy") == "" {
		t.Fatalf("GET /console: %d", r.status)
	}
}
