package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// TestMakeConsoleLinkQuotes: make console-link (README) sends the name,
// role and tenant it is given as JSON strings, whatever they hold: an
// e-mail address with an apostrophe (o'brien@...) or a name with quotes
// reaches the server as written.
func TestMakeConsoleLinkQuotes(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	var (
		mu  sync.Mutex // the handler's goroutine writes, the test reads
		got []map[string]string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]string
		if err := json.Unmarshal(b, &body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"code":"malformed_json"}`)
			return
		}
		mu.Lock()
		got = append(got, body)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"url":"http://127.0.0.1/console/signin?token=t"}`)
	}))
	defer srv.Close()
	for _, name := range []string{"dan.o'brien@example.com", `Ann "the approver" Lee`, `back\slash`, "Zoë Ng"} {
		cmd := exec.Command("make", "-s", "-C", "../..", "console-link", "NAME="+name, "ROLE=approver", "TENANT=acme", "ADDR="+strings.TrimPrefix(srv.URL, "http://"))
		cmd.Env = append(cmd.Environ(), "BATON_API_KEY=btn_sk_test")
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "http://127.0.0.1/console/signin?token=t" {
			t.Fatalf("make console-link NAME=%q: %v\n%s", name, err, out)
		}
		mu.Lock()
		b := got[len(got)-1]
		mu.Unlock()
		if b["name"] != name || b["role"] != "approver" || b["tenant"] != "acme" {
			t.Fatalf("NAME=%q sent %v", name, b)
		}
	}
}
