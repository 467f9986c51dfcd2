package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/eventstore/bolt"
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

// TestMakeRunStopsOnSIGTERM: a SIGTERM to make run (README) stops the
// server gracefully. Under go run the signal went to go run alone, which
// died and left the server running, holding the port and the data
// directory.
func TestMakeRunStopsOnSIGTERM(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	data := t.TempDir()
	// A file, not a pipe: Wait must not wait for a server left running
	// to close its end.
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	output := func() string { b, _ := os.ReadFile(out.Name()); return string(b) }
	cmd := exec.Command("make", "-s", "-C", "../..", "run", "DATA="+data, "ADDR=127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(output(), "baton serving"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("make run did not start serving: %s", output())
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	// The server is gone once it has closed its store: the data
	// directory is free again.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		s, err := bolt.Open(data, bolt.Options{})
		if err == nil {
			s.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server still holds its data directory after make run got SIGTERM: %v\n%s", err, output())
		}
	}
	if !strings.Contains(output(), "shutting down") {
		t.Fatalf("the server did not stop gracefully: %s", output())
	}
}

// TestMakeCleanKeepsTheData: make clean removes what a build made, never
// the data directory, which is the ledger (DATA may be an operator's
// BATON_DATA_DIR). A dry run, so that the test removes nothing.
func TestMakeCleanKeepsTheData(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	data := filepath.Join(t.TempDir(), "ledger-data")
	cmd := exec.Command("make", "-n", "-C", "../..", "clean", "DATA="+data)
	cmd.Env = append(cmd.Environ(), "BATON_DATA_DIR="+data)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "rm ") {
		t.Fatalf("make -n clean: %v\n%s", err, out)
	}
	if strings.Contains(string(out), data) {
		t.Fatalf("make clean would remove the data directory:\n%s", out)
	}
}

// TestMakeConsoleLinkOnAWildcardAddress: a listen address of every
// interface (BATON_ADDR=":8080", which make run serves on) is asked on
// the loopback: curl refused http://:8080/ as a bad URL.
func TestMakeConsoleLinkOnAWildcardAddress(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"url":"http://127.0.0.1/console/signin?token=t"}`)
	}))
	defer srv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	// A URL, pasted from a browser, was made http://http://...
	for _, env := range []string{"BATON_ADDR=:" + port, "BATON_ADDR=0.0.0.0:" + port, "BATON_ADDR=[::]:" + port,
		"BATON_ADDR=http://127.0.0.1:" + port, "BATON_ADDR=http://127.0.0.1:" + port + "/"} {
		cmd := exec.Command("make", "-s", "-C", "../..", "console-link")
		cmd.Env = []string{"BATON_API_KEY=btn_sk_test", env}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "ADDR=") && !strings.HasPrefix(kv, "BATON_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "http://127.0.0.1/console/signin?token=t" {
			t.Errorf("%s make console-link: %v\n%s", env, err, out)
		}
	}
}

// TestMakeRunTakesADataDirectoryWithASpace: make run DATA="... Support"
// serves that directory: the path was split into two arguments in the
// recipe, and serve refused the second ("unexpected argument").
func TestMakeRunTakesADataDirectoryWithASpace(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	data := filepath.Join(t.TempDir(), "Application Support", "baton")
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	output := func() string { b, _ := os.ReadFile(out.Name()); return string(b) }
	cmd := exec.Command("make", "-s", "-C", "../..", "run", "DATA="+data, "ADDR=127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(output(), "baton serving"); time.Sleep(50 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("make run DATA=%q stopped: %s", data, output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("make run did not start serving: %s", output())
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	<-exited
	if _, err := os.Stat(filepath.Join(data, bolt.FileName)); err != nil {
		t.Fatalf("no store in %s: %v\n%s", data, err, output())
	}
}

// TestMakeConsoleLinkWithNoServer: with no server at ADDR, make
// console-link says what to check: it said only curl's "Failed to
// connect".
func TestMakeConsoleLinkWithNoServer(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(srv.URL, "http://")
	srv.Close() // nothing listens there now
	cmd := exec.Command("make", "-s", "-C", "../..", "console-link", "ADDR="+addr)
	cmd.Env = append(cmd.Environ(), "BATON_API_KEY=btn_sk_test")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is make run going") || !strings.Contains(string(out), "ADDR=") {
		t.Fatalf("make console-link with no server: %v\n%s", err, out)
	}
}

// make run passes --addr, --data and --providers only when they are given
// to make: the variables (BATON_ADDR...) reach baton as they are, and a
// value it refuses is named by the variable the operator set. Passed as
// flags, BATON_ADDR=nonsense was told as `--addr "nonsense"`. A dry run.
func TestMakeRunLeavesTheVariablesToBaton(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	dry := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command("make", append([]string{"-n", "-C", "../..", "run"}, args...)...)
		cmd.Env = append(cmd.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n run: %v\n%s", err, out)
		}
		_, serve, _ := strings.Cut(string(out), "./baton serve")
		return serve
	}
	if got := dry([]string{"BATON_ADDR=127.0.0.1:9999", "BATON_DATA_DIR=/srv/baton", "BATON_PROVIDERS_FILE=/etc/p.json"}); strings.Contains(got, "--") {
		t.Fatalf("with the variables set, make run passes flags: %q", got)
	}
	if got := dry([]string{"BATON_ADDR=127.0.0.1:9999"}, "ADDR=127.0.0.1:9090", "DATA=/tmp/d", "PROVIDERS=p.json"); !strings.Contains(got, `--addr "$RUN_ADDR"`) || !strings.Contains(got, `--data "$RUN_DATA"`) || !strings.Contains(got, `--providers "$RUN_PROVIDERS"`) {
		t.Fatalf("given to make, they are not passed: %q", got)
	}
}
