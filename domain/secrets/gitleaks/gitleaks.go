// Package gitleaks binds gitleaks' default rule set and detector
// (github.com/zricethezav/gitleaks/v8) for the secret scanner: the one
// folder under domain that links gitleaks. domain/secrets' package comment
// says how the scanner uses it.
package gitleaks

import (
	"reflect"
	"strings"
	"sync"

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
)

// baseDetector loads gitleaks' embedded default rules once per process
// into a detector that New copies. It parses them as detect.NewDetectorDefaultConfig does, but on a viper
// instance of its own (the global one would keep the parsed tree alive)
// and without building a detector only to drop it.
func baseDetector() (*detect.Detector, error) {
	loadOnce.Do(func() {
		// gitleaks logs matches, secrets included, at debug and trace
		// level through this global; Baton never logs a secret.
		logging.Logger = zerolog.Nop()
		v := viper.New()
		v.SetConfigType("toml")
		if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
			loadErr = err
			return
		}
		var vc config.ViperConfig
		if err := v.Unmarshal(&vc); err != nil {
			loadErr = err
			return
		}
		cfg, err := vc.Translate()
		if err != nil {
			loadErr = err
			return
		}
		for id, r := range cfg.Rules {
			r.Allowlists = slim(r.Allowlists)
			cfg.Rules[id] = r
		}
		cfg.Allowlists = slim(cfg.Allowlists)
		loadBase = detect.NewDetector(cfg)
	})
	return loadBase, loadErr
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
// switch the scan off.
func New(decodeDepth int) (*Detector, error) {
	base, err := baseDetector()
	if err != nil {
		return nil, err
	}
	// A shallow copy shares the base's rules and keyword trie (2.6 MB, a
	// detector's largest part) rather than building its own. Sharing is
	// safe because a detector is safe for concurrent use: what two copies
	// share, one detector shares between its callers.
	d := new(detect.Detector)
	reflect.ValueOf(d).Elem().Set(reflect.ValueOf(base).Elem())
	d.IgnoreGitleaksAllow = true
	d.MaxDecodeDepth = decodeDepth
	return &Detector{d: d}, nil
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
