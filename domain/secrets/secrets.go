// Package secrets finds secrets in untrusted JSON (executor callbacks) so
// Baton can refuse them, naming the rule and the JSON pointer, never the
// secret.
//
// The rule set is gitleaks' default configuration (github.com/zricethezav/
// gitleaks/v8, used as a library: its detector with keyword prefiltering and
// entropy checks), plus rules of Baton's own: its API key format, credentials
// in URL userinfo or query strings, and PEM private key blocks.
package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/rs/zerolog"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"

	"github.com/batonhq/baton/domain"
)

// Finding is one secret found. It never holds the secret itself.
type Finding struct {
	RuleID      string `json:"ruleId"`
	Pointer     string `json:"pointer"` // RFC 6901 pointer of the string value
	Description string `json:"description,omitempty"`
}

// Scanner is safe for concurrent use; build it once.
type Scanner struct {
	gitleaks *detect.Detector
}

var (
	batonKeyRE   = regexp.MustCompile(`btn_sk_[A-Za-z0-9]{40}`)
	userinfoRE   = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@[^\s/]+`)
	urlRE        = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)
	privateKeyRE = regexp.MustCompile(`-----BEGIN[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----`)
)

// credentialParams are query parameters whose values are credentials.
var credentialParams = map[string]bool{
	"token": true, "access_token": true, "refresh_token": true, "id_token": true, "api_key": true, "apikey": true,
	"api-key": true, "key": true, "secret": true, "client_secret": true, "password": true, "passwd": true,
	"pwd": true, "auth": true, "signature": true, "sig": true, "x-amz-signature": true, "x-amz-credential": true,
	"x-goog-signature": true, "private_token": true, "session": true, "sessionid": true,
}

// New builds a scanner with gitleaks' default rules and Baton's own.
func New() (*Scanner, error) {
	// gitleaks logs matches (secrets included) at debug level through a
	// global logger; Baton never logs a secret.
	logging.Logger = zerolog.Nop()
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		return nil, fmt.Errorf("secrets: gitleaks default rules: %w", err)
	}
	return &Scanner{gitleaks: d}, nil
}

// ScanString scans one string value; pointer names it in the findings.
func (s *Scanner) ScanString(pointer, value string) []Finding {
	var out []Finding
	add := func(rule, desc string) {
		for _, f := range out {
			if f.RuleID == rule {
				return
			}
		}
		out = append(out, Finding{RuleID: rule, Pointer: pointer, Description: desc})
	}
	// Literal prefilters keep the regular expressions off ordinary text.
	if strings.Contains(value, "PRIVATE KEY") && privateKeyRE.MatchString(value) {
		add("private-key", "PEM private key block")
	}
	if strings.Contains(value, "btn_sk_") && batonKeyRE.MatchString(value) {
		add("baton-api-key", "Baton API key")
	}
	hasURL := strings.Contains(value, "://")
	if hasURL && strings.Contains(value, "@") && userinfoRE.MatchString(value) {
		add("url-credentials", "credentials in a URL's userinfo")
	}
	if hasURL && strings.Contains(value, "?") {
		if param := queryCredential(value); param != "" {
			add("url-query-credential", "credential in a URL query parameter ("+param+")")
		}
	}
	for _, f := range s.gitleaks.DetectString(value) {
		add(f.RuleID, f.Description)
	}
	return out
}

// Scan is ScanJSON in the domain's terms: rule and pointer of each finding.
func (s *Scanner) Scan(doc []byte, roots ...string) ([]domain.SecretFinding, error) {
	found, err := s.ScanJSON(doc, roots...)
	out := make([]domain.SecretFinding, len(found))
	for i, f := range found {
		out[i] = domain.SecretFinding{RuleID: f.RuleID, Pointer: f.Pointer}
	}
	return out, err
}

// queryCredential returns the first credential-named query parameter with a
// value of meaningful length in any URL of value.
func queryCredential(value string) string {
	for _, raw := range urlRE.FindAllString(value, -1) {
		u, err := url.Parse(strings.TrimRight(raw, ".,;:)]}"))
		if err != nil {
			continue
		}
		for k, vs := range u.Query() {
			if !credentialParams[strings.ToLower(k)] {
				continue
			}
			for _, v := range vs {
				if len(v) >= 8 {
					return k
				}
			}
		}
	}
	return ""
}

// ScanJSON walks every string value of a JSON document, in document order,
// and reports findings. With roots, only values under those pointer
// prefixes are scanned (e.g. "/proof", "/result").
func (s *Scanner) ScanJSON(doc []byte, roots ...string) ([]Finding, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out []Finding
	err := walk(dec, "", func(ptr, v string) {
		if !under(ptr, roots) {
			return
		}
		out = append(out, s.ScanString(ptr, v)...)
	})
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("secrets: trailing data after the JSON document")
	}
	return out, nil
}

func under(ptr string, roots []string) bool {
	if len(roots) == 0 {
		return true
	}
	for _, r := range roots {
		if ptr == r || strings.HasPrefix(ptr, r+"/") {
			return true
		}
	}
	return false
}

// escape encodes a key as an RFC 6901 reference token.
func escape(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// walk visits the next JSON value, calling visit for every string in it.
func walk(dec *json.Decoder, ptr string, visit func(ptr, v string)) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				key, ok := kt.(string)
				if !ok {
					return errors.New("object key is not a string")
				}
				if err := walk(dec, ptr+"/"+escape(key), visit); err != nil {
					return err
				}
			}
			_, err := dec.Token() // '}'
			return err
		case '[':
			for i := 0; dec.More(); i++ {
				if err := walk(dec, ptr+"/"+strconv.Itoa(i), visit); err != nil {
					return err
				}
			}
			_, err := dec.Token() // ']'
			return err
		}
		return fmt.Errorf("unexpected %v", t)
	case string:
		visit(ptr, t)
	}
	return nil
}
