package gitleaks

import (
	"encoding/base64"
	"maps"
	"runtime"
	"slices"
	"testing"

	"github.com/zricethezav/gitleaks/v8/detect"
)

var ghToken = "gh" + "p_" + "R7kQ2mXv9LpT4wZc8NbY3hJs6DfG1aUe5oIq"

// corpus holds texts a rule's pattern matches; some of them an allowlist
// (a stop word, a match regex) then lets through.
var corpus = []string{
	`password = "Xq8vT2mZk9LpW4rBn7Yc"`,
	`password = "Xq8vT2mZaccountLpW4rB"`,
	`keyboard = "Xq8vT2mZk9LpW4rBn7Yc"`,
	`api_version: "Xq8vT2mZk9LpW4rBn7Yc"`,
	`token = "example_placeholder_value"`,
	// Built, so that the source holds no token-shaped literal.
	"aws_access_key_id = AKIA" + "QX7TZ4PLMN2RVB5W",
	"export GITHUB_TOKEN=" + ghToken,
	`the quick brown fox`,
}

func ruleIDs(fs []Finding) []string {
	ids := make([]string, 0, len(fs))
	for _, f := range fs {
		ids = append(ids, f.RuleID+":"+f.Secret)
	}
	slices.Sort(ids)
	return ids
}

// The slimmed allowlists decide as gitleaks' own, indexed ones do.
func TestSlimAllowlistsDecideAsGitleaks(t *testing.T) {
	ref, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	ref.IgnoreGitleaksAllow = true
	refD := &Detector{d: ref}

	base, err := baseDetector()
	if err != nil {
		t.Fatal(err)
	}
	open := base.Config
	open.Rules = maps.Clone(open.Rules)
	for id, r := range open.Rules {
		r.Allowlists = nil
		open.Rules[id] = r
	}
	openD := &Detector{d: detect.NewDetector(open)}

	d, err := New(0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := 0
	for _, text := range corpus {
		got, want := ruleIDs(d.Detect(text)), ruleIDs(refD.Detect(text))
		if !slices.Equal(got, want) {
			t.Errorf("%q: %v, gitleaks %v", text, got, want)
		}
		if len(openD.Detect(text)) > len(want) {
			allowed++
		}
	}
	if allowed < 3 {
		t.Fatalf("only %d texts of the corpus are let through by an allowlist; it must exercise them", allowed)
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A second detector shares the first one's keyword trie (2.6 MB) and
// rules rather than building its own.
func TestDetectorsShareTheRules(t *testing.T) {
	first, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	before := heapAlloc()
	second, err := New(0)
	if err != nil {
		t.Fatal(err)
	}
	grown := int64(heapAlloc()) - int64(before)
	if grown > 512<<10 {
		t.Fatalf("a second detector took %d KiB", grown>>10)
	}
	// The copies keep their own depth: only the decoding one finds a
	// token hidden in base64.
	hidden := "note: " + base64.StdEncoding.EncodeToString([]byte("token: "+ghToken))
	if len(first.Detect(hidden)) == 0 || len(second.Detect(hidden)) != 0 {
		t.Fatalf("decoding %d findings, plain %d", len(first.Detect(hidden)), len(second.Detect(hidden)))
	}
	runtime.KeepAlive(first)
	runtime.KeepAlive(second)
}
