package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A providers file is checked whole: a mistake stops the start with a
// message naming it, instead of a catalog that quietly differs.
func TestProvidersFileMistakes(t *testing.T) {
	model := `{"name":"m1","contextTokens":8192,"modes":["cheap"],"pricing":{"inputPerMTok":1,"outputPerMTok":2,"source":"test"}}`
	for _, c := range []struct{ name, file, want string }{
		{"trailing data", `{"providers":[]} }}} garbage`, "follows the JSON object"},
		{"unknown field", `{"providers":[],"mode":{}}`, "unknown field"},
		{"model twice", `{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[` + model + `,` + model + `]}]}`, "declared twice"},
		{"fallback typo", `{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[{"name":"m1","fallbacks":["p:m2"]}]}]}`, `fallback "p:m2" is not a declared model`},
		{"mode chain typo", `{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[` + model + `]}],"modes":{"cheap":["p:typo"]}}`, `"p:typo" is not a declared model`},
		{"mode chain untagged", `{"providers":[{"name":"p","kind":"openai-compatible","baseUrl":"http://x/v1","models":[` + model + `]}],"modes":{"premium":["p:m1"]}}`, "is not tagged premium"},
	} {
		path := filepath.Join(t.TempDir(), "providers.json")
		os.WriteFile(path, []byte(c.file), 0o644)
		_, err := NewCatalog(Config{Getenv: func(string) string { return "" }, ProvidersFile: path})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	// The default file may be absent; a file the operator named may not.
	missing := filepath.Join(t.TempDir(), "providers.json")
	if _, err := NewCatalog(Config{Getenv: func(string) string { return "" }, ProvidersFile: missing}); err != nil {
		t.Errorf("absent default file: %v", err)
	}
	if _, err := NewCatalog(Config{Getenv: func(string) string { return "" }, ProvidersFile: missing, ProvidersRequired: true}); err == nil {
		t.Error("a named providers file that does not exist was skipped")
	}
}
