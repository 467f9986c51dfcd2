package docs

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

// TestAPITableMatchesOpenAPI: the endpoint table of api.md and openapi.yaml
// name the same operations, as api.md says ("describes every endpoint
// above"), but for the rows that say they are not in the document.
func TestAPITableMatchesOpenAPI(t *testing.T) {
	md, err := os.ReadFile("api.md")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(OpenAPIYAML, &doc); err != nil {
		t.Fatal(err)
	}
	// A path's shape: its parameters, whatever their names ({id}, <N>).
	param := regexp.MustCompile(`\{[^}]*\}|<[^>]*>`)
	shape := func(p string) string { return param.ReplaceAllString(p, "{}") }
	documented := map[string]bool{}
	for p, item := range doc.Paths {
		for m := range item {
			if m != "parameters" {
				documented[strings.ToUpper(m)+" "+shape(p)] = true
			}
		}
	}
	row := regexp.MustCompile("^\\| ([A-Z, ]+) \\| `([^`]+)` \\|")
	listed := map[string]bool{}
	for line := range strings.SplitSeq(string(md), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		outside := strings.Contains(line, "not in the OpenAPI document")
		// A row's part in brackets is optional: the path with and without it.
		paths := []string{m[2]}
		if head, opt, ok := strings.Cut(m[2], "["); ok {
			paths = []string{head, head + strings.TrimSuffix(opt, "]")}
		}
		for method := range strings.SplitSeq(m[1], ", ") {
			for _, p := range paths {
				op := method + " " + shape(p)
				listed[op] = true
				if !outside && !documented[op] && method != "HEAD" {
					t.Errorf("api.md lists %s, which openapi.yaml does not describe (nor does the row say it is not in the OpenAPI document)", op)
				}
			}
		}
	}
	for _, op := range slices.Sorted(func(yield func(string) bool) {
		for op := range documented {
			if !yield(op) {
				return
			}
		}
	}) {
		if !listed[op] {
			t.Errorf("openapi.yaml describes %s, which api.md's endpoint table does not list", op)
		}
	}
}
