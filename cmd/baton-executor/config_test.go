package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A configuration that could take no handoff is refused at the start: a
// misspelt field was ignored, and the executor ran, refusing every handoff
// ("no command is configured").
func TestConfigRefusesWhatRunsNothing(t *testing.T) {
	for body, want := range map[string]string{
		`{"executor":"ops-bot","protocol":{"p.v1":{"command":["true"]}}}`: `unknown field "protocol"`,
		`{"executor":"ops-bot"}`: `"protocols"`,
		`{"executor":"ops-bot","protocols":{"p.v1":{"command":["no-such-program-here","renew"]}}}`:     `"no-such-program-here" cannot be run`,
		`{"executor":"ops-bot","protocols":{"p.v1":{"command":[""]}}}`:                                 `program "" cannot be run`,
		`{"executor":"ops-bot","maxRuns":0,"protocols":{"p.v1":{"command":["true"]}}}`:                 `"maxRuns" 0`,
		`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"],"artifact":"log"}}}`:            `unknown field "artifact"`,
		`{"executor":"ops-bot","timeoutSeconds":-1,"protocols":{"p.v1":{"command":["true"]}}}`:         `"timeoutSeconds" -1`,
		`{"executor":"ops-bot","timeoutSeconds":9223372037,"protocols":{"p.v1":{"command":["true"]}}}`: `"timeoutSeconds" 9223372037`,
	} {
		path := filepath.Join(t.TempDir(), "executor.json")
		os.WriteFile(path, []byte(body), 0o644)
		if _, err := readConfig(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", body, err, want)
		}
	}
	path := filepath.Join(t.TempDir(), "executor.json")
	os.WriteFile(path, []byte(`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"],"artifactType":"log"}}}`), 0o644)
	if _, err := readConfig(path); err != nil {
		t.Fatal(err)
	}
}

// A name given twice, or data after the configuration's object, is refused
// at the start: they were read without a word, the last value of a name
// and the first of two objects.
func TestConfigRefusesTwiceAndTrailing(t *testing.T) {
	const p = `"protocols":{"p.v1":{"command":["true"]}}`
	for body, want := range map[string]string{
		`{"executor":"ops-bot",` + p + `,"executor":"other"}`:                                        `"executor" is given twice`,
		`{"executor":"ops-bot","Executor":"other",` + p + `}`:                                        `"Executor" is given twice`,
		`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"],"command":["rm"]}}}`:          `"protocols"/"p.v1"/"command" is given twice`,
		`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"]},"p.v1":{"command":["rm"]}}}`: `"protocols"/"p.v1" is given twice`,
		`{"executor":"ops-bot",` + p + `} {"executor":"other",` + p + `}`:                            `data after the configuration's JSON object`,
		`{"executor":"ops-bot",` + p + `}]`:                                                          `data after the configuration's JSON object`,
		`{"executor":"ops-bot","protocols":{"p.v1":{"comand":["true"]}}}`:                            `unknown field "comand"`,
		`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"],"artifactTpye":"log"}}}`:      `unknown field "artifactTpye"`,
	} {
		path := filepath.Join(t.TempDir(), "executor.json")
		os.WriteFile(path, []byte(body), 0o644)
		if _, err := readConfig(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %s", body, err, want)
		}
	}
	// White space after the object is no data.
	path := filepath.Join(t.TempDir(), "executor.json")
	os.WriteFile(path, []byte(`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"]},"q.v1":{"command":["true"]}}}`+"\n\n"), 0o644)
	if _, err := readConfig(path); err != nil {
		t.Fatal(err)
	}
}

// Baton's URL is checked at the start, and a trailing slash is dropped:
// "http://host:8080/" asked for //v1/events and got 404 for ever, and a
// URL without a scheme failed every request, for ever.
func TestCheckURL(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:8080":       "http://127.0.0.1:8080",
		"http://127.0.0.1:8080/":      "http://127.0.0.1:8080",
		"https://baton.example/base/": "https://baton.example/base",
		"127.0.0.1:8080":              "",
		"baton.example":               "",
		"ftp://baton.example":         "",
		"http://":                     "",
		"http://baton.example/?x=1":   "",
	} {
		got, err := checkURL(raw)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("checkURL(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
}

// A URL without a scheme stops the executor at its start (exit status 2).
func TestExecutorStopsOnABadURL(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "executor.json")
	os.WriteFile(cfg, []byte(`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"]}}}`), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // were it to start, it would stop at once
	var out bytes.Buffer
	err := run(ctx, []string{"--key", "k", "--url", "127.0.0.1:8080", "--config", cfg, "--state", filepath.Join(dir, "state.json")}, &out)
	if err == nil || !strings.Contains(err.Error(), "--url") {
		t.Fatalf("run: %v, want an error about --url", err)
	}
}

// A word among the flags stops the executor at its start: the flag
// package stops at it, and the flags after it (--url, --state) were
// dropped without a word, the executor following the default URL.
func TestExecutorRefusesAStrayArgument(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "executor.json")
	os.WriteFile(cfg, []byte(`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"]}}}`), 0o644)
	t.Chdir(dir) // where the default state file would go
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // were it to start, it would stop at once
	state := filepath.Join(dir, "state.json")
	var out bytes.Buffer
	err := run(ctx, []string{"--key", "k", "--config", cfg, "extra", "--url", "http://127.0.0.1:1", "--state", state}, &out)
	if err == nil || !strings.Contains(err.Error(), `"extra"`) {
		t.Fatalf("run: %v, want the stray argument named; log:\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "baton-executor-state.json")); err == nil {
		t.Fatal("the default state file was written")
	}
}

// A command's time limit below 0 is refused at the start.
func TestExecutorRefusesANegativeTimeout(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "executor.json")
	os.WriteFile(cfg, []byte(`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"]}}}`), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	err := run(ctx, []string{"--key", "k", "--config", cfg, "--timeout-seconds", "-5", "--state", filepath.Join(dir, "state.json")}, &out)
	if err == nil || !strings.Contains(err.Error(), "--timeout-seconds -5") {
		t.Fatalf("run: %v, want an error about --timeout-seconds", err)
	}
}

// --help is the usage, for stdout (main prints it there, exit 0); a flag
// it does not have is the usage on stderr and the error, said once: the
// flag package said it, then main again.
func TestExecutorHelpAndBadFlag(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) || out.Len() != 0 {
		t.Fatalf("--help: %v, stderr %q; want flag.ErrHelp and nothing on stderr", err, out.String())
	}
	err := run(context.Background(), []string{"--bogus"}, &out)
	if err == nil || !strings.Contains(err.Error(), "-bogus") {
		t.Fatalf("--bogus: %v", err)
	}
	if !strings.Contains(out.String(), "Usage:") || strings.Contains(out.String(), "-bogus") {
		t.Fatalf("--bogus wrote %q; want the usage, the error left to main", out.String())
	}
}

// A key read with its line's end (an environment file written on Windows,
// $(cat key) of a file with CRLF) is sent without it: no request could
// carry it, and the executor retried for ever, "invalid header field
// value", as if Baton were down.
func TestExecutorTrimsItsKey(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("x-api-key"):
		default:
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"code":"invalid_api_key","status":401}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "executor.json")
	os.WriteFile(cfg, []byte(`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"]}}}`), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, []string{"--key", "btn_sk_k\r\n", "--url", srv.URL, "--config", cfg, "--state", filepath.Join(dir, "state.json")}, &out)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("run: %v (context %v), want the refused key; log:\n%s", err, ctx.Err(), out.String())
	}
	// Said with what to do: "Baton refused the key" named neither the
	// flag nor where a key comes from.
	if !strings.Contains(err.Error(), "--key or BATON_API_KEY") || !strings.Contains(err.Error(), "baton keys create") {
		t.Fatalf("run: %v, want the flag and the way to a key named", err)
	}
	if k := <-got; k != "btn_sk_k" {
		t.Fatalf("sent key %q", k)
	}
}

// An empty --state (a script's unset variable) is refused by name, with
// nothing written: it left ".lock" and a ".state-N" temporary file behind
// and said "state file : rename ./.state-N : no such file or directory".
func TestExecutorRefusesAnEmptyState(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "executor.json")
	os.WriteFile(cfg, []byte(`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"]}}}`), 0o644)
	t.Chdir(dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	err := run(ctx, []string{"--key", "k", "--url", "http://127.0.0.1:1", "--config", cfg, "--state", ""}, &out)
	if err == nil || !strings.Contains(err.Error(), "--state is empty") {
		t.Fatalf("run: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
}

// A stop by a signal is said in the log even when no run was under way:
// it said nothing, and its log read as if it had died.
func TestExecutorSaysItStopped(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "executor.json")
	os.WriteFile(cfg, []byte(`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"]}}}`), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, []string{"--key", "k", "--url", "http://127.0.0.1:1", "--config", cfg, "--state", filepath.Join(dir, "state.json")}, &out)
	if err != nil || !strings.Contains(out.String(), "baton-executor stopped") {
		t.Fatalf("run: %v; log:\n%s", err, out.String())
	}
}

// An executor name or protocol that no contract can carry (Baton refuses it
// at create) is refused at the start: the executor started and waited for
// ever, or retried its event stream for ever on a 422.
func TestConfigRefusesNamesNoContractCarries(t *testing.T) {
	long := strings.Repeat("x", 201)
	for body, want := range map[string]string{
		`{"executor":" ","protocols":{"p.v1":{"command":["true"]}}}`:              `"executor"`,
		`{"executor":"ops-bot\n","protocols":{"p.v1":{"command":["true"]}}}`:      `"executor"`,
		`{"executor":"ops\u202ebot","protocols":{"p.v1":{"command":["true"]}}}`:   `"executor"`,
		`{"executor":"` + long + `","protocols":{"p.v1":{"command":["true"]}}}`:   `"executor"`,
		`{"executor":"ops-bot","protocols":{"ops_bot.V1":{"command":["true"]}}}`:  `"ops_bot.V1"`,
		`{"executor":"ops-bot","protocols":{"ops_bot":{"command":["true"]}}}`:     `"ops_bot"`,
		`{"executor":"ops-bot","protocols":{" ops_bot.v1":{"command":["true"]}}}`: `" ops_bot.v1"`,
	} {
		path := filepath.Join(t.TempDir(), "executor.json")
		os.WriteFile(path, []byte(body), 0o644)
		if _, err := readConfig(path); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "no handoff") {
			t.Errorf("%s: %v, want an error naming %s", body, err, want)
		}
	}
	for _, name := range []string{strings.Repeat("é", 200), "Ops Bot", "browser-agent"} {
		path := filepath.Join(t.TempDir(), "executor.json")
		os.WriteFile(path, []byte(`{"executor":"`+name+`","protocols":{"browser_agent.v12":{"command":["true"]}}}`), 0o644)
		if _, err := readConfig(path); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// An artifactType Baton refuses in a proof is refused at the start: every
// proof was refused (422), every run given up after its command had run,
// its handoff left started.
func TestConfigRefusesAnArtifactTypeNoProofCarries(t *testing.T) {
	for _, typ := range []string{" ", "log\n", strings.Repeat("l", 65)} {
		b, _ := json.Marshal(map[string]any{"executor": "ops-bot", "protocols": map[string]any{"p.v1": map[string]any{"command": []string{"true"}, "artifactType": typ}}})
		path := filepath.Join(t.TempDir(), "executor.json")
		os.WriteFile(path, b, 0o644)
		if _, err := readConfig(path); err == nil || !strings.Contains(err.Error(), "artifactType") {
			t.Errorf("artifactType %q: %v, want an error naming it", typ, err)
		}
	}
	path := filepath.Join(t.TempDir(), "executor.json")
	os.WriteFile(path, []byte(`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"],"artifactType":"screenshot"},"q.v1":{"command":["true"]}}}`), 0o644)
	if _, err := readConfig(path); err != nil {
		t.Fatal(err)
	}
}

// A configuration it cannot read, and a state file that is a directory or
// lies in one that does not exist, are named by their flags: it said
// "open executor.json: no such file or directory", "read DIR: is a
// directory" and "open FILE.lock: no such file or directory".
func TestExecutorNamesTheFileItCannotUse(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "executor.json")
	os.WriteFile(cfg, []byte(`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"]}}}`), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", filepath.Join(dir, "missing.json"), "--state", filepath.Join(dir, "s.json")}, "--config " + filepath.Join(dir, "missing.json")},
		{[]string{"--config", cfg, "--state", dir}, "--state " + dir + " is a directory"},
		{[]string{"--config", cfg, "--state", filepath.Join(dir, "no", "s.json")}, "directory " + filepath.Join(dir, "no") + " does not exist"},
	} {
		var out bytes.Buffer
		err := run(ctx, append([]string{"--key", "k", "--url", "http://127.0.0.1:1"}, tt.args...), &out)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.args, err, tt.want)
		}
	}
}
