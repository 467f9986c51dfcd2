package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a goroutine-safe strings.Builder.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The KurrentDB test double is not a database: it is a command of its own
// (cmd/baton-kurrent-double), never linked into the baton binary.
func TestBinaryLeavesOutTheTestDouble(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command in PATH: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasSuffix(pkg, "/kurrenttest") {
			t.Fatalf("the baton binary links %s", pkg)
		}
	}
}

// `baton COMMAND -h` and `--help` print that command's usage on stdout and
// succeed, for every command and subcommand, without running it.
func TestEveryCommandPrintsItsHelp(t *testing.T) {
	tests := []struct {
		args  []string
		usage string // a line the help must hold
		flag  string // a flag it must list ("" for none)
	}{
		{[]string{"serve"}, "  baton serve [--addr", "-addr"},
		{[]string{"keys", "create"}, "  baton keys create --tenant NAME", "-tenant"},
		{[]string{"console", "link"}, "  baton console link --tenant NAME", "-role"},
		{[]string{"console"}, "  baton console link --tenant NAME", ""},
		{[]string{"ledger", "verify"}, "  baton ledger verify [--data DIR", "-url"},
		{[]string{"store", "check"}, "  baton store check [--data ./data]", "-data"},
		{[]string{"migrate"}, "  baton migrate --from bolt", "-kurrentdb-url"},
		{[]string{"version"}, "  baton version ", ""},
		{[]string{"help"}, "  baton serve [--addr", ""},
		{[]string{"keys"}, "  baton keys create --tenant NAME", ""},
		{[]string{"ledger"}, "  baton ledger verify [--data DIR", ""},
		{[]string{"store"}, "  baton store check [--data ./data]", ""},
		{[]string{"ledger", "export"}, "  baton ledger export [--url URL", "-url"},
		{[]string{"log", "keygen"}, "  baton log keygen [--origin NAME]", "-origin"},
		{[]string{"log", "verify"}, "  baton log verify --log-key KEY --old CHECKPOINT", "-mirror"},
		{[]string{"log"}, "  baton log keygen [--origin NAME]", ""},
	}
	for _, tt := range tests {
		for _, h := range []string{"-h", "--help"} {
			args := append(append([]string{}, tt.args...), h)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				// A data directory that cannot be opened: a command that
				// ran instead of printing its help would fail.
				t.Setenv("BATON_DATA_DIR", "/nonexistent/baton-help-test")
				if err := run(context.Background(), args, &stdout, &stderr); err != nil {
					t.Fatalf("exit status 1: %v\nstderr: %s", err, stderr.String())
				}
				out := stdout.String()
				if !strings.Contains(out, tt.usage) {
					t.Fatalf("no usage line %q in:\n%s", tt.usage, out)
				}
				if tt.flag != "" && !strings.Contains(out, "  "+tt.flag+" ") {
					t.Fatalf("flag %s not listed in:\n%s", tt.flag, out)
				}
				if stderr.Len() > 0 {
					t.Fatalf("help wrote to stderr: %s", stderr.String())
				}
			})
		}
	}
}

// A command group's help lists each of its subcommands, and each one's
// --help, as does the error of the group called without one: `baton ledger
// --help` left out export and `baton log --help` verify.
func TestGroupHelpListsEverySubcommand(t *testing.T) {
	t.Setenv("BATON_DATA_DIR", "/nonexistent/baton-help-test")
	for group, subs := range map[string][]string{
		"ledger": {"verify", "export"}, "log": {"keygen", "verify"}, "keys": {"create"}, "console": {"link"}, "store": {"check"},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{group, "--help"}, &stdout, &stderr); err != nil {
			t.Fatalf("%s --help: %v", group, err)
		}
		err := run(context.Background(), []string{group}, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil {
			t.Fatalf("baton %s without a subcommand succeeded", group)
		}
		for _, sub := range subs {
			name := "baton " + group + " " + sub
			if !strings.Contains(stdout.String(), "  "+name+" ") || !strings.Contains(stdout.String(), "`"+name+" --help`") {
				t.Errorf("%s --help does not list %s and its --help:\n%s", group, name, stdout.String())
			}
			if !strings.Contains(err.Error(), name) {
				t.Errorf("baton %s: %v; want %s named", group, err, name)
			}
		}
	}
}

// A flag whose default is read from a variable says which in its help:
// log verify's --key took BATON_API_KEY without a word, so an auditor's
// other key in it was sent, or a tenant's key made the mirror fail 403.
func TestHelpNamesTheVariablesFlagsRead(t *testing.T) {
	t.Setenv("BATON_DATA_DIR", "/nonexistent/baton-help-test")
	for _, tc := range []struct {
		cmd       []string
		flag, env string
	}{
		{[]string{"log", "verify"}, "-key", "BATON_API_KEY"},
		{[]string{"log", "verify"}, "-log-key", "BATON_LOG_KEY"},
		{[]string{"ledger", "verify"}, "-key", "BATON_API_KEY"},
		{[]string{"ledger", "export"}, "-key", "BATON_API_KEY"},
	} {
		var stdout bytes.Buffer
		if err := run(context.Background(), append(append([]string{}, tc.cmd...), "--help"), &stdout, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		_, help, _ := strings.Cut(stdout.String(), "\n  "+tc.flag+" ")
		help, _, _ = strings.Cut(help, "\n  -")
		if !strings.Contains(help, tc.env) {
			t.Errorf("baton %s --help: %s does not name %s: %q", strings.Join(tc.cmd, " "), tc.flag, tc.env, help)
		}
	}
}

// A flag a command does not have fails it, with the command's usage on
// stderr and nothing on stdout.
func TestUnknownFlagPrintsUsageAndFails(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"store", "check", "--bogus"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "-bogus") {
		t.Fatalf("err = %v", err)
	}
	if stdout.Len() > 0 || !strings.Contains(stderr.String(), "  baton store check") {
		t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}

// The flag package stops at the first argument that is not a flag: a word
// where none is taken, or a flag after the arguments, fails the command
// (it ran, with every flag after the word dropped: --data lost for
// ./data), and nothing is written.
func TestStrayArgumentsFail(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, args := range [][]string{
		{"keys", "create", "--tenant", "x", "extra", "--data", "other"},
		{"store", "check", "extra", "--data", "other"},
		{"log", "keygen", "extra", "--out", "k"},
		{"serve", "extra", "--data", "other"},
		{"ledger", "verify", "0190a1b2-0000-7000-8000-000000000000", "--data", "other"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "extra") && !strings.Contains(err.Error(), "--data comes after") {
			t.Fatalf("%v: err = %v", args, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the refused commands left %v", ents)
	}
}

// A command that reads a store a server made says so when there is none
// at --data, rather than making an empty one and calling it intact.
func TestCheckingCommandsNeedAStore(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "typo")
	for _, args := range [][]string{
		{"store", "check", "--data", missing},
		{"ledger", "verify", "--data", missing},
		{"ledger", "export", "--data", missing, "0190a1b2-0000-7000-8000-000000000000"},
		{"console", "link", "--data", missing, "--tenant", "default", "--name", "x", "--role", "approver"},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out, &out); err == nil || !strings.Contains(err.Error(), "no store in") {
			t.Fatalf("%v: err = %v", args, err)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("a store was made at %s: %v", missing, err)
	}
}

// A tenant name Baton refuses is told by its flag before the store is
// opened: keys create made an empty store at --data (a first start then
// found it), then failed with the service's "keys.create: /tenant: ...".
func TestKeysCreateRefusesABadTenantFirst(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "data")
	var out bytes.Buffer
	err := run(context.Background(), []string{"keys", "create", "--data", missing, "--tenant", "Acme"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), `--tenant "Acme"`) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("a store was made at %s: %v", missing, err)
	}
}

// A --memprofile file that cannot be written stops the start: it was
// found out at the stop, when the profile of the whole run was lost
// ("memprofile: open ...: no such file or directory", exit 0).
func TestServeRefusesAnUnwritableMemprofile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out syncBuffer
	err := run(ctx, []string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--memprofile", filepath.Join(t.TempDir(), "no", "such", "mem.prof")}, &out, &out)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "--memprofile") {
		t.Fatalf("err = %v (context %v); want the start refused naming --memprofile\n%s", err, ctx.Err(), out.String())
	}
	if strings.Contains(out.String(), "baton serving") {
		t.Fatalf("it served:\n%s", out.String())
	}
}

// So does a --cpuprofile file, naming its flag as --memprofile does: it
// said only "open FILE: no such file or directory".
func TestServeRefusesAnUnwritableCPUProfileByName(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out syncBuffer
	err := run(ctx, []string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--cpuprofile", filepath.Join(t.TempDir(), "no", "such", "cpu.prof")}, &out, &out)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "--cpuprofile") {
		t.Fatalf("err = %v (context %v); want the start refused naming --cpuprofile\n%s", err, ctx.Err(), out.String())
	}
}

// An empty --addr (a script's unset variable: --addr "$ADDR") is refused:
// it listened on every interface, at a port the system chose, where the
// default is the loopback's 8080.
func TestServeRefusesAnEmptyAddr(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out syncBuffer
	err := run(ctx, []string{"serve", "--data", t.TempDir(), "--addr", ""}, &out, &out)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "--addr") {
		t.Fatalf("err = %v (context %v); want the empty --addr refused\n%s", err, ctx.Err(), out.String())
	}
}

// An empty --data (a script's unset variable) is refused by name, by
// every command that takes it: serve said "mkdir : no such file or
// directory", store check "no store in  (no events.db there)".
func TestAnEmptyDataIsRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, args := range [][]string{
		{"serve", "--data", "", "--addr", "127.0.0.1:0"},
		{"store", "check", "--data", ""},
		{"keys", "create", "--data", "", "--tenant", "acme"},
		{"ledger", "verify", "--data", ""},
	} {
		var out bytes.Buffer
		err := run(context.Background(), args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), "--data is empty") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// A base URL with a query or a fragment is refused: the paths are put
// after it, so the links (https://host/?a=1/console/signin?token=...) and
// the commands' requests went into the query, to the wrong page.
func TestBaseURLWithAQueryIsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--console-url", "https://baton.example.com/?a=1"},
		{"console", "link", "--data", t.TempDir(), "--tenant", "acme", "--name", "x", "--role", "auditor", "--url", "http://127.0.0.1:8080/#top"},
		{"ledger", "verify", "--url", "http://127.0.0.1:1?x=1", "--key", "k"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // were serve to start
		var out syncBuffer
		err := run(ctx, args, &out, &out)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "no query or fragment") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// Body limits and the console's URL are refused when they cannot be used,
// as their variables are (0 was taken as the default without a word).
func TestServeRefusesBadLimits(t *testing.T) {
	for _, args := range [][]string{{"--max-body", "0"}, {"--max-body", "-5"}, {"--max-model-body", "-1"}, {"--console-url", "notaurl"}} {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, args...), &out, &out)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Fatalf("%v: err = %v", args, err)
		}
	}
}

// A first start that stops on a setting checked late (a providers file's
// mistake, a default tier Baton does not know) has created no key: the
// key is printed once, and a start that ends in an error is where nobody
// looks for it.
func TestStartStoppedByASettingCreatesNoKey(t *testing.T) {
	data := t.TempDir()
	providers := filepath.Join(t.TempDir(), "providers.json")
	os.WriteFile(providers, []byte(`{"providers":[{"name":"p","kind":"nope","baseUrl":"http://x"}]}`), 0o600)
	var out bytes.Buffer
	err := run(context.Background(), []string{"serve", "--data", data, "--addr", "127.0.0.1:0", "--providers", providers}, &out, &out)
	if err == nil || strings.Contains(out.String(), "BATON_API_KEY=") {
		t.Fatalf("err %v; printed:\n%s", err, out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"keys", "list", "--data", data}, &out, &out); err == nil && strings.Contains(out.String(), "btn_") {
		t.Fatalf("a key was created: %s", out.String())
	}
}

// Every flag `baton serve --help` lists is in README's commands table and
// in operations.md's table of settings, with the variable its help names:
// --max-connections-per-client was missing from both, and the address,
// data directory, providers file, store and console URL from the table.
func TestServeFlagsAreDocumented(t *testing.T) {
	var stdout, stderr bytes.Buffer
	t.Setenv("BATON_DATA_DIR", "/nonexistent/baton-help-test")
	if err := run(context.Background(), []string{"serve", "--help"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ops, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(ops), "## Limits and settings")
	table, _, _ = strings.Cut(table, "\n### ")
	var commands string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "| `baton serve ") || strings.HasPrefix(l, "| `--store kurrent") {
			commands += l
		}
	}
	flags := regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(stdout.String(), -1)
	if len(flags) < 20 {
		t.Fatalf("only %d flags in:\n%s", len(flags), stdout.String())
	}
	for _, f := range flags {
		name := f[1]
		if !regexp.MustCompile(`--` + name + `\b[^-]`).MatchString(commands) {
			t.Errorf("--%s is not in README's commands table", name)
		}
		if !regexp.MustCompile("`--" + name + "[` ]").MatchString(table) {
			t.Errorf("--%s is not in operations.md's Limits and settings", name)
		}
	}
	for _, v := range regexp.MustCompile(`BATON_[A-Z_]+`).FindAllString(stdout.String(), -1) {
		if !strings.Contains(commands, v) || !strings.Contains(table, v) {
			t.Errorf("%s is not in both tables", v)
		}
	}
}

// Every flag of the other commands is in README's row for that command
// (the store's flags in the --store row): keys create's --label and --data,
// console link's --data, ledger export's --wait and migrate's --limit were
// missing.
func TestCommandFlagsAreInTheReadme(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(string(readme), "\n")
	store := map[string]bool{"store": true, "kurrentdb-url": true, "kurrentdb-max-append-size": true}
	for _, cmd := range [][]string{{"keys", "create"}, {"console", "link"}, {"ledger", "verify"}, {"ledger", "export"},
		{"log", "keygen"}, {"log", "verify"}, {"store", "check"}, {"migrate"}} {
		var stdout, stderr bytes.Buffer
		t.Setenv("BATON_DATA_DIR", "/nonexistent/baton-help-test")
		if err := run(context.Background(), append(append([]string{}, cmd...), "--help"), &stdout, &stderr); err != nil {
			t.Fatal(err)
		}
		var doc string // every row of the command (ledger verify has two)
		for _, l := range rows {
			if strings.HasPrefix(l, "| `baton "+strings.Join(cmd, " ")+" ") {
				doc += l
			}
		}
		if doc == "" {
			t.Errorf("no README row for baton %s", strings.Join(cmd, " "))
		}
		for _, f := range regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(stdout.String(), -1) {
			if !store[f[1]] && !regexp.MustCompile(`--`+f[1]+`\b[^-]`).MatchString(doc) {
				t.Errorf("baton %s --%s is not in README's commands table", strings.Join(cmd, " "), f[1])
			}
		}
	}
}

// --idempotency-retention keeps the keys of every endpoint that takes one
// past its request (one store of them): its help said generate's alone.
func TestIdempotencyRetentionHelpNamesItsEndpoints(t *testing.T) {
	var stdout, stderr bytes.Buffer
	t.Setenv("BATON_DATA_DIR", "/nonexistent/baton-help-test")
	if err := run(context.Background(), []string{"serve", "--help"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	_, help, _ := strings.Cut(stdout.String(), "  -idempotency-retention")
	help, _, _ = strings.Cut(help, "\n  -")
	for _, want := range []string{"generate", "agent plans", "contract", "webhook"} {
		if !strings.Contains(help, want) {
			t.Errorf("--idempotency-retention's help does not name %s: %s", want, help)
		}
	}
}

// A subcommand a group does not have is named, with those it has: `baton
// keys list` answered with the usage of keys create alone.
func TestUnknownSubcommandIsNamed(t *testing.T) {
	for _, args := range [][]string{{"keys", "list"}, {"ledger", "check"}, {"log", "show"}, {"store", "verify"}, {"console", "open"}} {
		err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("no subcommand %q", args[1])) || !strings.Contains(err.Error(), "usage: baton "+args[0]) {
			t.Errorf("baton %s: %v", strings.Join(args, " "), err)
		}
	}
}

// --version prints the version, as `baton version` does: it was an unknown
// command.
func TestVersionFlag(t *testing.T) {
	for _, a := range []string{"version", "--version", "-version"} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{a}, &stdout, &stderr); err != nil || stdout.String() != "baton "+version+"\n" {
			t.Errorf("baton %s = %v, %q (stderr %q)", a, err, stdout.String(), stderr.String())
		}
	}
}

// A setting refused names what the operator set: the variable when it came
// from the environment (BATON_STORE=postgres was told as `--store
// "postgres"`, a flag nobody gave), the flag when it was given, which
// wins over the variable.
func TestRefusedSettingsNameTheVariableTheyCameFrom(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, c := range []struct {
		env       []string // name, value
		args      []string
		want, not string
	}{
		{[]string{"BATON_STORE", "postgres"}, []string{"serve", "--addr", "127.0.0.1:0"}, `BATON_STORE="postgres"`, "--store"},
		{[]string{"BATON_STORE", "postgres"}, []string{"serve", "--addr", "127.0.0.1:0", "--store", "mysql"}, `--store "mysql"`, "BATON_STORE="},
		{[]string{"BATON_STORE", "kurrent"}, []string{"keys", "create", "--tenant", "acme"}, "BATON_STORE=kurrent needs", "--store kurrent"},
		{[]string{"BATON_STORE", "kurrent"}, []string{"ledger", "verify"}, "BATON_STORE=kurrent needs", "--store kurrent"},
		{[]string{"BATON_STORE", "kurrent"}, []string{"store", "check"}, `BATON_STORE="kurrent"`, `--store "kurrent"`},
		{[]string{"BATON_STORE", "postgres"}, []string{"store", "check"}, `BATON_STORE="postgres"`, "--store"},
		{[]string{"BATON_KURRENTDB_URL", "db.example.com:2113"}, []string{"ledger", "verify", "--store", "kurrent"}, "BATON_KURRENTDB_URL", ""},
		{[]string{"BATON_ADDR", "nonsense"}, []string{"serve"}, "BATON_ADDR", ""},
		{[]string{"BATON_ADDR", "nonsense"}, []string{"serve", "--addr", "bad"}, "--addr", "BATON_ADDR"},
		{[]string{"BATON_GC_HEAP_FLOOR_MB", "99999999"}, []string{"serve", "--addr", "127.0.0.1:0"}, "BATON_GC_HEAP_FLOOR_MB", ""},
		{[]string{"BATON_LOG_KEY_FILE", "/nonexistent/log.key"}, []string{"serve", "--addr", "127.0.0.1:0"}, "BATON_LOG_KEY_FILE", "--log-key-file"},
		{[]string{"BATON_LOG_ORIGIN", " spaced"}, []string{"serve", "--addr", "127.0.0.1:0"}, "BATON_LOG_ORIGIN", ""},
		{[]string{"BATON_LOG_WITNESSES", "garbage"}, []string{"serve", "--addr", "127.0.0.1:0"}, "BATON_LOG_WITNESSES", ""},
		{[]string{"BATON_LOG_KEY", "garbage"}, []string{"log", "verify", "--old", "x"}, "BATON_LOG_KEY", "--log-key"},
		{[]string{"BATON_LOG_KEY", "garbage"}, []string{"ledger", "verify", "--bundle", "x"}, "BATON_LOG_KEY", "--log-key"},
		{[]string{"BATON_DATA_DIR", "/nonexistent/baton-data"}, []string{"store", "check"}, "check BATON_DATA_DIR", "--data"},
		{[]string{"BATON_DATA_DIR", "/nonexistent/baton-data"}, []string{"ledger", "verify"}, "check BATON_DATA_DIR", "--data"},
		{[]string{"BATON_DATA_DIR", "/nonexistent/baton-data"}, []string{"migrate", "--kurrentdb-url", "esdb://127.0.0.1:1"}, "check BATON_DATA_DIR", "--data"},
		{[]string{"BATON_DATA_DIR", "/nonexistent/baton-data"}, []string{"store", "check", "--data", "/nonexistent/x"}, "check --data", "BATON_DATA_DIR"},
	} {
		t.Run(strings.Join(c.env, "=")+" "+strings.Join(c.args, " "), func(t *testing.T) {
			t.Setenv(c.env[0], c.env[1])
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // were serve to start
			defer cancel()
			var out syncBuffer
			err := run(ctx, c.args, &out, &out)
			if err == nil || !strings.Contains(err.Error(), c.want) || c.not != "" && strings.Contains(err.Error(), c.not) {
				t.Fatalf("err = %v; want %q named (not %q)", err, c.want, c.not)
			}
		})
	}
}

// Every flag whose default a variable gives names that variable in its
// help, as operations.md's table pairs them: serve's --help named two of
// its twenty-odd variables, and no command's --data named BATON_DATA_DIR,
// nor --store BATON_STORE.
func TestHelpNamesEveryVariableTheTableGives(t *testing.T) {
	t.Setenv("BATON_DATA_DIR", "/nonexistent/baton-help-test")
	ops, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(ops), "## Limits and settings")
	table, _, _ = strings.Cut(table, "\n### ")
	pairs := regexp.MustCompile("`--([a-z-]+)`, `(BATON_[A-Z_]+)`").FindAllStringSubmatch(table, -1)
	if len(pairs) < 20 {
		t.Fatalf("only %d flag and variable pairs in the table", len(pairs))
	}
	for _, cmd := range [][]string{{"serve"}, {"keys", "create"}, {"console", "link"}, {"ledger", "verify"}, {"ledger", "export"},
		{"store", "check"}, {"migrate"}} {
		var stdout bytes.Buffer
		if err := run(context.Background(), append(append([]string{}, cmd...), "--help"), &stdout, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		for _, p := range pairs {
			_, help, found := strings.Cut(stdout.String(), "\n  -"+p[1]+" ")
			if !found {
				continue // a flag of another command
			}
			help, _, _ = strings.Cut(help, "\n  -")
			if !strings.Contains(help, p[2]) {
				t.Errorf("baton %s --help: -%s does not name %s: %q", strings.Join(cmd, " "), p[1], p[2], help)
			}
		}
	}
}

// A --label keys create refuses is refused by its flag, before the store
// is opened: it was "keys.create: /label: ...", the service's words, and
// a new --data had its store made first.
func TestKeysCreateRefusesABadLabelFirst(t *testing.T) {
	for _, label := range []string{"a\x07b", strings.Repeat("x", 201)} {
		missing := filepath.Join(t.TempDir(), "data")
		var out bytes.Buffer
		err := run(context.Background(), []string{"keys", "create", "--data", missing, "--tenant", "acme", "--label", label}, &out, &out)
		if err == nil || !strings.HasPrefix(err.Error(), "--label") || strings.Contains(err.Error(), "keys.create") {
			t.Fatalf("label %.20q: err = %v", label, err)
		}
		if _, err := os.Stat(missing); !os.IsNotExist(err) {
			t.Fatalf("label %.20q: a store was made at %s: %v", label, missing, err)
		}
	}
}

// A command line that cannot be read (an unknown command, subcommand or
// flag, a flag's value not of its type, a stray word, a required flag or
// argument missing, flags that exclude each other) exits 2, as Go's flag
// package and POSIX tools do; a command that ran and failed, 1.
func TestUsageErrorsExit2(t *testing.T) {
	exit := func(err error) int {
		if err == nil {
			return 0
		}
		var ec interface{ ExitCode() int }
		if errors.As(err, &ec) {
			return ec.ExitCode()
		}
		return 1
	}
	missing := filepath.Join(t.TempDir(), "none")
	for _, tt := range []struct {
		args []string
		want int
	}{
		{[]string{}, 2},
		{[]string{"bogus"}, 2},
		{[]string{"keys", "list"}, 2},
		{[]string{"keys"}, 2},
		{[]string{"serve", "--bogus"}, 2},
		{[]string{"serve", "--max-body", "x"}, 2},
		{[]string{"store", "check", "extra"}, 2},
		{[]string{"version", "--bogus"}, 2},
		{[]string{"ledger", "verify", "--data", missing, "--wat"}, 2},
		{[]string{"keys", "create", "--data", missing}, 2},
		{[]string{"console", "link", "--tenant", "default", "--data", missing}, 2},
		{[]string{"ledger", "export", "--data", missing}, 2},
		{[]string{"ledger", "verify", "--url", "http://127.0.0.1:1", "--data", missing}, 2},
		{[]string{"ledger", "verify", "--bundle", filepath.Join(missing, "b")}, 2},
		{[]string{"log", "verify", "--old", filepath.Join(missing, "c")}, 2},
		{[]string{"log", "keygen", "--out", filepath.Join(missing, "k"), "--data", missing}, 2},
		{[]string{"migrate", "--data", missing}, 2},
		{[]string{"store", "check", "--data", missing}, 1},
		{[]string{"keys", "create", "--tenant", "Not A Tenant", "--data", missing}, 1},
		{[]string{"store", "check", "--help"}, 0},
	} {
		var stdout, stderr bytes.Buffer
		if got := exit(run(context.Background(), tt.args, &stdout, &stderr)); got != tt.want {
			t.Errorf("baton %v: exit %d, want %d", tt.args, got, tt.want)
		}
	}
}

// failingWriter fails every write, as stdout redirected to a full disk.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// A command whose output cannot be written fails, exit 1: it exited 0,
// and keys create said "created ... It is shown once" of a key that went
// nowhere; it now names the key to revoke.
func TestOutputThatCannotBeWrittenFails(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	if code := runMain(context.Background(), []string{"version"}, failingWriter{}, &stderr); code != 1 || !strings.Contains(stderr.String(), "writing the output") {
		t.Fatalf("version: exit %d, %s", code, stderr.String())
	}
	stderr.Reset()
	if code := runMain(context.Background(), []string{"keys", "create", "--tenant", "acme", "--data", dir}, failingWriter{}, &stderr); code != 1 || !regexp.MustCompile(`key key_\w+ for tenant "acme" was created, but writing it out failed .*revoke it`).MatchString(stderr.String()) {
		t.Fatalf("keys create: exit %d, %s", code, stderr.String())
	}
	var stdout bytes.Buffer
	if code := runMain(context.Background(), []string{"version"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "baton ") {
		t.Fatalf("version: exit %d, %q", code, stdout.String())
	}
}
