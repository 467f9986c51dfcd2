package openai

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// A base URL's user and password (a keyless compatible server behind basic
// auth) go as Authorization: Basic, as Client.Do sends them; the
// transport alone, which model calls otherwise go through, does not.
func TestBaseURLUserInfoIsSentAsBasicAuth(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":[{"id":"m"}]}`))
	}))
	defer srv.Close()
	base := strings.Replace(srv.URL, "http://", "http://alice:s3cret@", 1) + "/v1"
	if _, err := New("compat", "openai-compatible", base, "", nil).ListModels(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "Basic ") {
		t.Fatalf("Authorization %q, want basic credentials from the base URL", got)
	}
	// Without user info, a transport failure still names the call, as
	// Do's *url.Error did, for the log.
	srv.Close()
	_, err := New("compat", "openai-compatible", srv.URL+"/v1", "", nil).ListModels(t.Context())
	var ue *url.Error
	if !errors.As(err, &ue) || ue.Op != "Get" || !strings.Contains(ue.URL, "/v1/models") {
		t.Fatalf("err %v, want a *url.Error naming the GET", err)
	}
}
