package main

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/ledger"
)

// baton console link prints a link under --url whose token the console
// redeems once.
func TestConsoleLinkCommand(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--data", dir, "--tenant", "acme"}, &out, &errOut); err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	// A tenant no key was made for is refused, by name.
	err := run(context.Background(), []string{"console", "link", "--data", dir, "--tenant", "default", "--name", "x", "--role", "auditor"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), `"default" names no tenant`) {
		t.Fatalf("a link for a tenant without keys: %v", err)
	}
	if err := run(context.Background(), []string{"keys", "create", "--data", dir, "--tenant", "default"}, &out, &errOut); err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	// A base URL that is not one makes no link (it would lead nowhere).
	for _, bad := range []string{"notaurl", "ftp://host", "http://"} {
		err = run(context.Background(), []string{"console", "link", "--data", dir, "--tenant", "default", "--name", "x", "--role", "auditor", "--url", bad}, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), "--url (BATON_CONSOLE_URL)") {
			t.Fatalf("--url %q: %v", bad, err)
		}
	}
	out.Reset()
	err = run(context.Background(), []string{"console", "link", "--data", dir, "--tenant", "default", "--name", "alice@example.com",
		"--role", "approver", "--ttl", "5m", "--url", "http://127.0.0.1:9999"}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	link := strings.TrimSpace(out.String())
	if !strings.HasPrefix(link, "http://127.0.0.1:9999/console/signin?token=") {
		t.Fatalf("printed %q", link)
	}
	u, _ := url.Parse(link)
	st, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := ledger.NewConsole(st, nil)
	s, err := c.Redeem(context.Background(), "", u.Query().Get("token"))
	if err != nil || s.Name != "alice@example.com" || s.Role != "approver" || s.Tenant != "default" {
		t.Fatalf("redeemed %+v, %v", s, err)
	}
	if err := run(context.Background(), []string{"console", "link", "--data", dir, "--tenant", "default", "--name", "x", "--role", "admin"}, &out, &errOut); err == nil {
		t.Fatal("role admin accepted")
	}
}

// A role or a duration the link cannot have is refused by its flag,
// before the store is opened: it was told as the API's JSON pointer
// ("console.link: /ttlSeconds: must be from 1 second to 7 days"), after
// the store's own errors (held, no tenant).
func TestConsoleLinkNamesTheFlag(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--data", dir, "--tenant", "default"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--role", "admin"}, `--role "admin": must be approver, verifier or auditor`},
		{[]string{"--role", "approver", "--ttl", "1000h"}, `--ttl 1000h0m0s: must be from 1 second to 7 days`},
		{[]string{"--role", "approver", "--name", " x"}, `--name " x": is required`},
	} {
		args := append([]string{"console", "link", "--data", dir, "--tenant", "default", "--name", "x"}, tc.flags...)
		err := run(context.Background(), args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "/") {
			t.Errorf("%v: %v; want %q", tc.flags, err, tc.want)
		}
	}
	// Checked before the store: a held one is not what is told first.
	st, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = run(context.Background(), []string{"console", "link", "--data", dir, "--tenant", "default", "--name", "x", "--role", "admin"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "--role") {
		t.Fatalf("a bad role on a held store: %v", err)
	}
}

// Without --url the link is made for the address of BATON_ADDR; a wildcard
// one (a server listening on every interface) is reached on the loopback,
// as serve's own hint asks it: the link was http://:8080/... or
// http://0.0.0.0:8080/..., which no browser opens.
func TestConsoleLinkOnAWildcardAddress(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--data", dir, "--tenant", "acme"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]string{
		":8080":         "http://127.0.0.1:8080/console/signin?token=",
		"0.0.0.0:9090":  "http://127.0.0.1:9090/console/signin?token=",
		"[::]:8080":     "http://127.0.0.1:8080/console/signin?token=",
		"10.0.0.5:8080": "http://10.0.0.5:8080/console/signin?token=",
	} {
		t.Setenv("BATON_ADDR", addr)
		out.Reset()
		if err := run(context.Background(), []string{"console", "link", "--data", dir, "--tenant", "acme", "--name", "x", "--role", "auditor"}, &out, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), want) {
			t.Errorf("BATON_ADDR=%s: %q, want %s...", addr, out.String(), want)
		}
	}
}

// After baton migrate, events.db stays in the data directory as a backup,
// unlocked, while a replica serves the directory on KurrentDB. The
// commands that write to the store refuse it there without --store
// kurrent: the key (or link) was made in the backup, printed, and refused
// by every server.
func TestWritingCommandsRefuseAStoreMigratedFrom(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--data", dir, "--tenant", "acme"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, readModelMarker), []byte("kurrent\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"keys", "create", "--data", dir, "--tenant", "acme"},
		{"console", "link", "--data", dir, "--tenant", "acme", "--name", "a", "--role", "approver"},
	} {
		out.Reset()
		err := run(context.Background(), args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), "--store kurrent") {
			t.Errorf("%v: %v; want the store migrated from refused, naming --store kurrent\n%s", args, err, out.String())
		}
	}
	st, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if head, _ := st.Head(context.Background()); head.Commit != 1 {
		t.Fatalf("the store migrated from holds %d events, want the first key's alone", head.Commit)
	}
}

// A --url with a trailing slash (a URL copied from the browser) makes the
// link the server makes from the same --console-url: it was
// http://host//console/signin?..., which the console answers 404.
func TestConsoleLinkURLWithATrailingSlash(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--data", dir, "--tenant", "acme"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"console", "link", "--data", dir, "--tenant", "acme", "--name", "x", "--role", "auditor", "--url", "http://127.0.0.1:9999/"}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "http://127.0.0.1:9999/console/signin?token=") {
		t.Fatalf("printed %q", out.String())
	}
}

// With the store held by a running server, the commands that write to it
// say how to do the same through that server, and those that read it how
// to read it through the server (ledger verify, ledger export: the
// protocol's guide shows the export without --url), or that it waits for
// the stop (store check).
func TestCommandsOnAHeldStoreSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"keys", "create", "--data", dir, "--tenant", "acme"}, "POST /v1/admin/keys"},
		{[]string{"console", "link", "--data", dir, "--tenant", "acme", "--name", "a", "--role", "approver"}, "make console-link"},
		{[]string{"ledger", "verify", "--data", dir}, "--url"},
		{[]string{"ledger", "export", "--data", dir, "0190a1b2-0000-7000-8000-000000000000"}, "--url"},
		{[]string{"store", "check", "--data", dir}, "stop"},
		{[]string{"migrate", "--data", dir, "--kurrentdb-url", "esdb://127.0.0.1:1?tls=false"}, "stop the server"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), tc.args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), "held by another process") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want the lock named and %q", tc.args, err, tc.want)
		}
	}
}
