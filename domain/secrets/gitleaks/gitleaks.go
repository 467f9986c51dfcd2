// Package gitleaks binds gitleaks' default rule set and detector
// (github.com/zricethezav/gitleaks/v8) for the secret scanner: the one
// folder under domain that links gitleaks. domain/secrets' package comment
// says how the scanner uses it.
package gitleaks

import (
	"sync"

	"github.com/rs/zerolog"
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
	loadCfg  config.Config
	loadErr  error
)

// defaultConfig loads gitleaks' embedded default rules once per process.
func defaultConfig() (config.Config, error) {
	loadOnce.Do(func() {
		// gitleaks logs matches, secrets included, at debug and trace
		// level through this global; Baton never logs a secret.
		logging.Logger = zerolog.Nop()
		// NewDetectorDefaultConfig parses the embedded gitleaks.toml through
		// viper's global instance: do it once, and keep only the rules.
		d, err := detect.NewDetectorDefaultConfig()
		if err != nil {
			loadErr = err
			return
		}
		loadCfg = d.Config
	})
	return loadCfg, loadErr
}

// New is a detector with gitleaks' default rules that decodes encoded text
// (percent, \u escapes, hex, base64) decodeDepth levels deep (0: none).
// "gitleaks:allow" markers are ignored: a sender must not be able to
// switch the scan off.
func New(decodeDepth int) (*Detector, error) {
	cfg, err := defaultConfig()
	if err != nil {
		return nil, err
	}
	d := detect.NewDetector(cfg)
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
