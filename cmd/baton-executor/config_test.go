package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A configuration that could take no handoff is refused at the start: a
// misspelt field was ignored, and the executor ran, refusing every handoff
// ("no command is configured").
func TestConfigRefusesWhatRunsNothing(t *testing.T) {
	for body, want := range map[string]string{
		`{"executor":"ops-bot","protocol":{"p.v1":{"command":["true"]}}}`: `unknown field "protocol"`,
		`{"executor":"ops-bot"}`: `"protocols"`,
		`{"executor":"ops-bot","protocols":{"p.v1":{"command":["true"],"artifact":"log"}}}`: `unknown field "artifact"`,
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
