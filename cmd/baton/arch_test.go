package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/batonhq/baton"

// rule is what a package folder's non-test code may import: our packages
// (by folder) and third-party modules (by path prefix). The standard
// library is always allowed. A folder without a rule takes its nearest
// listed parent's.
type rule struct {
	ours       []string
	thirdParty []string
	noAppend   bool // may not call Append: it never writes to the store
	closed     bool // its own subfolders too only as listed in ours
}

// Dependencies point inward: domain knows nothing of Baton's I/O; the
// command side (eventstore/ledger) and the read side (projections) meet
// only in the store and the domain; http and the binaries sit outside.
var rules = map[string]rule{
	// idna: the host mapping a webhook URL gets from the HTTP client that
	// delivers, a pure function (no I/O), so a URL is judged as reached.
	"domain":             {thirdParty: []string{"github.com/looplab/fsm", "golang.org/x/net/idna"}},
	"domain/contextpack": {ours: []string{"domain", "domain/secrets"}, thirdParty: []string{"github.com/pkoukk/tiktoken-go", "github.com/pkoukk/tiktoken-go-loader", "golang.org/x/text"}},
	"domain/secrets":     {ours: []string{"domain"}, thirdParty: []string{"golang.org/x/text", "github.com/mtibben/confusables"}},
	// The gitleaks binding: the only domain folder that links gitleaks,
	// and viper, with which it parses gitleaks' rules as gitleaks does.
	"domain/secrets/gitleaks": {ours: []string{"domain", "domain/secrets"}, thirdParty: []string{"github.com/zricethezav/gitleaks/v8", "github.com/spf13/viper", "github.com/rs/zerolog", "golang.org/x/text"}},

	"eventstore":                     {thirdParty: []string{"github.com/google/uuid"}},
	"eventstore/bolt":                {ours: []string{"eventstore"}, thirdParty: []string{"github.com/google/uuid", "go.etcd.io/bbolt"}},
	"eventstore/kurrent":             {ours: []string{"eventstore"}, thirdParty: []string{"github.com/EventStore/EventStore-Client-Go/v4", "google.golang.org/grpc", "github.com/rs/zerolog"}},
	"eventstore/kurrent/kurrenttest": {ours: []string{"eventstore"}, thirdParty: []string{"github.com/EventStore/EventStore-Client-Go/v4", "google.golang.org/grpc", "github.com/google/uuid"}},
	"eventstore/storetest":           {ours: []string{"eventstore"}, thirdParty: []string{"github.com/google/uuid"}},
	"eventstore/storebench":          {ours: []string{"eventstore"}, thirdParty: []string{"github.com/google/uuid"}},
	"eventstore/records":             {ours: []string{"eventstore", "domain"}},
	"eventstore/migrate":             {ours: []string{"eventstore"}},
	"eventstore/timed":               {ours: []string{"eventstore"}}, // times the appends of the store it wraps, for the metrics
	// The transparency log: a follower of the feed into a bbolt file of
	// its own, and the claims of its signed checkpoints.
	"eventstore/translog": {ours: []string{"eventstore", "domain"}, thirdParty: []string{"go.etcd.io/bbolt", "golang.org/x/mod/sumdb"}},
	"eventstore/ledger":   {ours: []string{"eventstore", "eventstore/records", "domain", "domain/contextpack"}, thirdParty: []string{"github.com/google/uuid"}},

	"projections": {ours: []string{"eventstore", "eventstore/records", "domain"}, thirdParty: []string{"go.etcd.io/bbolt", "github.com/tidwall/gjson"}},
	// The gateway knows no provider kind: the kinds' folders register with it.
	"gateway": {ours: []string{"eventstore", "domain", "domain/contextpack"}, thirdParty: []string{"github.com/google/uuid", "github.com/tidwall/gjson", "github.com/tidwall/sjson", "github.com/santhosh-tekuri/jsonschema/v6"},
		closed: true},
	// gateway/kinds and each provider kind's folder: kindRules, from the
	// folders that register a kind.
	"gateway/internal/sse": {},
	// The fuzz tests' upstream (imported by tests only).
	"gateway/internal/upstreamtest": {ours: []string{"gateway"}},
	// http takes the kinds' folders for their fronts' wire (decoders,
	// answer types, stream grammar), never gateway/kinds: the binaries
	// choose which kinds are linked.
	"http": {ours: []string{"eventstore", "eventstore/ledger", "eventstore/records", "eventstore/translog", "domain", "domain/contextpack", "projections", "gateway", "gateway/openai", "gateway/anthropic", "gateway/tasks", "docs"},
		thirdParty: []string{"github.com/google/uuid", "github.com/gorilla/mux", "github.com/rs/zerolog", "github.com/tidwall/gjson", "github.com/tidwall/sjson", "go.yaml.in/yaml/v4", "golang.org/x/sys"},
		noAppend:   true},
	// The Prometheus registry: the front's request metrics and the
	// counters other parts call. It reads the store and the read models,
	// never writes.
	"http/metrics": {ours: []string{"eventstore", "projections"}, thirdParty: []string{"github.com/prometheus/client_golang"}, noAppend: true},
	// The webhook dispatcher and sender: it records through the ledger's
	// webhook service, never by appending itself.
	"http/webhook": {ours: []string{"domain", "eventstore", "eventstore/ledger"}, thirdParty: []string{"github.com/rs/zerolog"}, noAppend: true},
	"docs":         {},

	// The binaries wire; none links a test double.
	"cmd/baton": {ours: []string{"domain", "domain/secrets", "domain/secrets/gitleaks", "eventstore", "eventstore/bolt", "eventstore/kurrent", "eventstore/ledger", "eventstore/migrate",
		"eventstore/records", "eventstore/timed", "eventstore/translog", "projections", "gateway", "gateway/kinds", "http", "http/metrics", "http/webhook", "http/connlimit", "cmd/internal/profile"}, thirdParty: []string{"github.com/google/uuid", "github.com/rs/zerolog", "go.etcd.io/bbolt", "golang.org/x/mod/sumdb"}},
	"cmd/baton-bench": {ours: []string{"domain", "domain/secrets", "domain/secrets/gitleaks", "eventstore", "eventstore/bolt", "eventstore/kurrent", "eventstore/kurrent/kurrenttest",
		"eventstore/ledger", "eventstore/storebench", "eventstore/translog", "projections", "gateway", "http", "http/webhook", "cmd/internal/profile"}, thirdParty: []string{"github.com/rs/zerolog", "golang.org/x/sys"}},
	"cmd/baton-kurrent-double": {ours: []string{"eventstore/kurrent/kurrenttest"}},
	// The reference executor is a client of the HTTP API only.
	"cmd/baton-executor": {ours: []string{"domain"}, thirdParty: []string{"github.com/google/uuid", "github.com/rs/zerolog"}},
	"cmd/internal":       {},
}

func TestDependenciesPointInward(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("%s is not the module root", root)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		r, ok := ruleFor(rel)
		if !ok {
			t.Errorf("%s: package folder %q has no dependency rule; add one to rules", path, rel)
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !permitted(rel, p, r) {
				t.Errorf("%s imports %s: %s may import only the standard library, %v and %v", path, p, rel, r.ours, r.thirdParty)
			}
		}
		if r.noAppend {
			ast.Inspect(f, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Append" {
					t.Errorf("%s calls %s.Append: %s never writes to the store; call a service of eventstore/ledger", path, exprName(sel.X), rel)
				}
				return true
			})
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d Go files checked", checked)
	}
}

// The rules themselves: a forbidden import or an Append in http is caught.
func TestDependencyRulesBite(t *testing.T) {
	for _, c := range []struct {
		from, imp string
		want      bool
	}{
		{"domain", "github.com/looplab/fsm", true},
		{"domain", "encoding/json", true},
		{"domain", module + "/eventstore", false},
		{"domain", "github.com/zricethezav/gitleaks/v8/detect", false},
		{"domain/secrets", "github.com/zricethezav/gitleaks/v8/detect", false},
		{"domain/secrets/gitleaks", "github.com/zricethezav/gitleaks/v8/detect", true},
		{"http", module + "/eventstore/ledger", true},
		{"http", module + "/eventstore/bolt", false},
		{"http", module + "/http/metrics", true},
		{"http/metrics", "github.com/prometheus/client_golang/prometheus", true},
		{"http/metrics", module + "/eventstore/ledger", false},
		{"http", "github.com/prometheus/client_golang/prometheus", false},
		{"http/webhook", module + "/eventstore/ledger", true},
		{"http/webhook", module + "/projections", false},
		{"cmd/baton", module + "/http/webhook", true},
		{"eventstore/ledger", module + "/projections", false},
		{"projections", module + "/eventstore/ledger", false},
		{"eventstore/migrate", module + "/eventstore", true},
		{"eventstore/migrate", module + "/eventstore/kurrent", false},
		{"cmd/baton", module + "/eventstore/kurrent/kurrenttest", false},
		{"cmd/baton", module + "/eventstore/storetest", false},
		{"cmd/baton", "github.com/gorilla/mux", false},
		{"cmd/baton", module + "/gateway/kinds", true},
		{"http", module + "/gateway/anthropic", true},
		{"http", module + "/gateway/local", false},
		{"http", module + "/gateway/kinds", false},
		{"gateway", module + "/gateway/openai", false},
		{"gateway/anthropic", module + "/gateway/openai", false},
		{"gateway/openai", module + "/gateway/local", false},
		{"gateway/local", module + "/gateway", true},
		{"gateway/kinds", module + "/gateway/local", true},
		{"gateway/kinds", module + "/gateway/tasks", false},
	} {
		r, ok := ruleFor(c.from)
		if !ok {
			t.Fatalf("no rule for %s", c.from)
		}
		if got := permitted(c.from, c.imp, r); got != c.want {
			t.Errorf("%s importing %s: permitted %v, want %v", c.from, c.imp, got, c.want)
		}
	}
}

// Every kind is linked: gateway/kinds imports each folder that registers
// one, and nothing else.
func TestEveryKindIsLinked(t *testing.T) {
	kinds, err := kindFolders()
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) < 3 {
		t.Fatalf("kind folders found: %v; want openai, anthropic and local at least", kinds)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "../../gateway/kinds/kinds.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var linked []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		linked = append(linked, strings.TrimPrefix(p, module+"/"))
	}
	slices.Sort(linked)
	if !slices.Equal(linked, kinds) {
		t.Errorf("gateway/kinds imports %v; the folders that register a kind are %v", linked, kinds)
	}
}

func exprName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprName(e.X) + "." + e.Sel.Name
	}
	return "…"
}

// kindRule is every provider kind's folder: its adapter, passthrough and
// wire formats, on gateway and its shared helpers; none knows another.
var kindRule = rule{ours: []string{"gateway", "gateway/internal/sse", "eventstore", "domain"},
	thirdParty: []string{"github.com/google/uuid", "github.com/tidwall/gjson", "github.com/tidwall/sjson"}}

// kindFolders are the folders under gateway whose code calls
// gateway.RegisterKind: a new kind is such a folder and its line in
// gateway/kinds, with no rule to add here.
var kindFolders = sync.OnceValues(func() ([]string, error) {
	dirs, err := filepath.Glob("../../gateway/*/*.go")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, path := range dirs {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return nil, err
		}
		registers := false
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "RegisterKind" && exprName(sel.X) == "gateway" {
				registers = true
			}
			return !registers
		})
		if dir := "gateway/" + filepath.Base(filepath.Dir(path)); registers && !slices.Contains(out, dir) {
			out = append(out, dir)
		}
	}
	slices.Sort(out)
	return out, nil
})

// ruleFor finds the rule of a folder or of its nearest listed parent.
func ruleFor(dir string) (rule, bool) {
	kinds, err := kindFolders()
	if err != nil {
		panic(err)
	}
	for d := dir; d != "." && d != ""; d = filepath.ToSlash(filepath.Dir(d)) {
		if slices.Contains(kinds, d) {
			return kindRule, true
		}
		if d == "gateway/kinds" {
			return rule{ours: kinds}, true
		}
		if r, ok := rules[d]; ok {
			return r, true
		}
	}
	return rule{}, false
}

func permitted(from, imp string, r rule) bool {
	if dep, ours := strings.CutPrefix(imp, module+"/"); ours {
		if dep == from || !r.closed && strings.HasPrefix(dep, from+"/") && !strings.HasSuffix(dep, "test") {
			return true // its own subpackages, test doubles aside
		}
		for _, a := range r.ours {
			if dep == a {
				return true
			}
		}
		return false
	}
	first, _, _ := strings.Cut(imp, "/")
	if !strings.Contains(first, ".") {
		return true // the standard library
	}
	for _, p := range r.thirdParty {
		if imp == p || strings.HasPrefix(imp, p+"/") {
			return true
		}
	}
	return false
}
