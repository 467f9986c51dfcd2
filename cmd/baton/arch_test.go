package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/batonhq/baton"

// allowed lists, per package folder, which of our packages its non-test code
// may import. Dependencies point inward: http -> gateway, projections, domain;
// projections -> eventstore, domain; backends -> eventstore only; domain and
// eventstore import nothing of ours.
var allowed = map[string][]string{
	"domain":                {},
	"domain/secrets":        {"domain"},
	"domain/contextpack":    {"domain", "domain/secrets"},
	"eventstore":            {},
	"eventstore/bolt":       {"eventstore"},
	"eventstore/kurrent":    {"eventstore"},
	"eventstore/storetest":  {"eventstore"},
	"eventstore/storebench": {"eventstore"},
	"projections":           {"eventstore", "domain"},
	"gateway":               {"eventstore", "domain", "domain/contextpack"},
	"http":                  {"eventstore", "domain", "projections", "gateway", "gateway/tasks", "domain/contextpack"},
}

func TestDependenciesPointInward(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "cmd/") {
			return nil // the binary wires everything
		}
		rule, ok := ruleFor(rel)
		if !ok {
			t.Errorf("%s: package folder %q has no dependency rule; add one to allowed", path, rel)
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(p, module+"/")
			if !permitted(rel, dep, rule) {
				t.Errorf("%s imports %s: %s may import only %v", path, dep, rel, rule)
			}
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no Go files checked")
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("%s is not the module root", root)
	}
}

// ruleFor finds the rule of a folder or of its nearest listed parent.
func ruleFor(dir string) ([]string, bool) {
	for d := dir; d != "." && d != ""; d = filepath.ToSlash(filepath.Dir(d)) {
		if r, ok := allowed[d]; ok {
			return r, true
		}
	}
	return nil, false
}

func permitted(from, dep string, rule []string) bool {
	if dep == from || strings.HasPrefix(dep, from+"/") {
		return true // its own subpackages
	}
	for _, a := range rule {
		if dep == a {
			return true
		}
	}
	return false
}
