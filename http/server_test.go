package http_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/eventstore/bolt"
	batonhttp "github.com/batonhq/baton/http"
)

func newFront(t *testing.T) *httptest.Server {
	t.Helper()
	store, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	srv := httptest.NewServer(batonhttp.NewServer(store, zerolog.Nop(), "test").Handler())
	t.Cleanup(srv.Close)
	return srv
}

func TestHealthAndRequestIDs(t *testing.T) {
	srv := newFront(t)
	tests := []struct {
		name        string
		method      string
		path        string
		sentID      string
		wantStatus  int
		wantType    string
		wantIDEqual bool
	}{
		{"health", "GET", "/healthz", "", 200, "application/json", false},
		{"caller's request id is kept", "GET", "/healthz", "trace-123", 200, "application/json", true},
		{"unknown route", "GET", "/nope", "", 404, "application/problem+json", false},
		{"wrong method", "POST", "/healthz", "", 405, "application/problem+json", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			if tc.sentID != "" {
				req.Header.Set("x-request-id", tc.sentID)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d (%s)", resp.StatusCode, tc.wantStatus, body)
			}
			if got := resp.Header.Get("Content-Type"); got != tc.wantType {
				t.Fatalf("content type = %q, want %q", got, tc.wantType)
			}
			id := resp.Header.Get("x-request-id")
			if id == "" || (tc.wantIDEqual && id != tc.sentID) {
				t.Fatalf("x-request-id = %q", id)
			}
			if tc.wantType == "application/problem+json" {
				var p batonhttp.Problem
				if err := json.Unmarshal(body, &p); err != nil || p.Status != tc.wantStatus || p.Code == "" || p.RequestID != id {
					t.Fatalf("problem = %s (%v)", body, err)
				}
			}
		})
	}
}
