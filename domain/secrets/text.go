package secrets

// ScanText scans one plain string that is not part of a document (a
// header's value): the first rule it breaks, if any. A canonical UUID is
// never a finding (a rule that could match one bare needs a keyword
// around it), and is answered without scanning.
func (s *Scanner) ScanText(v string) (ruleID string, found bool) {
	if isUUID(v) {
		return "", false
	}
	if f := s.ScanString("", v); len(f) > 0 {
		return f[0].RuleID, true
	}
	return "", false
}

// ScanText is Scanner.ScanText. A UUID, what tracing proxies put in
// x-request-id, is answered without building the scanner; should the rules
// fail to build, it fails closed: every other value is a finding.
func (l *Lazy) ScanText(v string) (ruleID string, found bool) {
	if isUUID(v) {
		return "", false
	}
	s, err := l.Get()
	if err != nil {
		return "scanner_unavailable", true
	}
	return s.ScanText(v)
}

// isUUID reports whether v is a UUID in its canonical form, 8-4-4-4-12
// hexadecimal digits.
func isUUID(v string) bool {
	if len(v) != 36 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}
