// Package gitleaks binds gitleaks' default rule set and detector
// (github.com/zricethezav/gitleaks/v8) for the secret scanner: the one
// folder under domain that links gitleaks. domain/secrets' package comment
// says how the scanner uses it.
package gitleaks

import (
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
)

// Finding is one match of a gitleaks rule in a string: lines 0-based,
// columns 1-based, as gitleaks reports them.
type Finding struct {
	RuleID, Description, Secret string
	StartLine, StartColumn      int
	EndLine, EndColumn          int
}

// Detector runs gitleaks' default rules over strings; safe for concurrent
// use.
type Detector struct{ d *detect.Detector }

var (
	loadOnce sync.Once
	loadBase *detect.Detector
	loadErr  error
	loaded   atomic.Bool

	quietOnce sync.Once
)

// baseDetector loads gitleaks' embedded default rules once per process
// into a detector that New copies.
func baseDetector() (*detect.Detector, error) {
	loadOnce.Do(func() {
		loadBase, loadErr = parseBase()
		loaded.Store(loadErr == nil)
	})
	return loadBase, loadErr
}

// Loaded reports whether the process-wide rules New shares are loaded:
// then New costs a few allocations, not a parse.
func Loaded() bool { return loaded.Load() }

// parseBase parses the embedded default rules as
// detect.NewDetectorDefaultConfig does, but on a viper instance of its own
// (the global one would keep the parsed tree alive) and without building a
// detector only to drop it.
func parseBase() (*detect.Detector, error) {
	// gitleaks logs matches, secrets included, at debug and trace level
	// through this global; Baton never logs a secret.
	quietOnce.Do(func() { logging.Logger = zerolog.Nop() })
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
		return nil, err
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return nil, err
	}
	cfg, err := vc.Translate()
	if err != nil {
		return nil, err
	}
	for id, r := range cfg.Rules {
		r.Allowlists = slim(r.Allowlists)
		cfg.Rules[id] = r
	}
	cfg.Allowlists = slim(cfg.Allowlists)
	return detect.NewDetector(cfg), nil
}

// slim copies validated allowlists without the indexes Validate built. The
// stop-word index is a byte-wise Aho-Corasick trie of 2 KiB a state, about
// 12 MB for generic-api-key's stop words alone; without it gitleaks checks
// the (already lower-cased, de-duplicated) words one by one, the same
// answer, and only for a match a rule's pattern has found.
func slim(as []*config.Allowlist) []*config.Allowlist {
	out := make([]*config.Allowlist, len(as))
	for i, a := range as {
		if a == nil {
			continue
		}
		out[i] = &config.Allowlist{
			Description:    a.Description,
			MatchCondition: a.MatchCondition,
			Commits:        a.Commits,
			Paths:          a.Paths,
			RegexTarget:    a.RegexTarget,
			Regexes:        a.Regexes,
			StopWords:      a.StopWords,
		}
	}
	return out
}

// New is a detector with gitleaks' default rules that decodes encoded text
// (percent, \u escapes, hex, base64) decodeDepth levels deep (0: none).
// "gitleaks:allow" markers are ignored: a sender must not be able to
// switch the scan off. Its rules are the process-wide ones, loaded once
// and kept.
func New(decodeDepth int) (*Detector, error) {
	base, err := baseDetector()
	if err != nil {
		return nil, err
	}
	return copyOf(base, decodeDepth), nil
}

// NewOwn is New for each of decodeDepths, on rules parsed for them alone
// and shared among them, not the process-wide ones: when the last of them
// is dropped, so are the rules (about 5 MB).
func NewOwn(decodeDepths ...int) ([]*Detector, error) {
	base, err := parseBase()
	if err != nil {
		return nil, err
	}
	out := make([]*Detector, len(decodeDepths))
	for i, depth := range decodeDepths {
		out[i] = copyOf(base, depth)
	}
	return out, nil
}

// copyOf is a shallow copy of base: it shares base's rules and keyword
// trie (2.6 MB, a detector's largest part) rather than building its own.
// Sharing is safe because a detector is safe for concurrent use: what two
// copies share, one detector shares between its callers.
func copyOf(base *detect.Detector, decodeDepth int) *Detector {
	d := new(detect.Detector)
	reflect.ValueOf(d).Elem().Set(reflect.ValueOf(base).Elem())
	d.IgnoreGitleaksAllow = true
	d.MaxDecodeDepth = decodeDepth
	return &Detector{d: d}
}

// Detect finds every match of the rules in value.
func (d *Detector) Detect(value string) []Finding {
	fs := d.d.DetectString(value)
	out := make([]Finding, len(fs))
	for i, f := range fs {
		out[i] = Finding{RuleID: f.RuleID, Description: f.Description, Secret: f.Secret,
			StartLine: f.StartLine, StartColumn: f.StartColumn, EndLine: f.EndLine, EndColumn: f.EndColumn}
	}
	return out
}
