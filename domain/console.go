package domain

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Console roles: the people who work in the console. An approver approves
// or rejects, a verifier reviews proof, an auditor reads.
const (
	RoleApprover = "approver"
	RoleVerifier = "verifier"
	RoleAuditor  = "auditor"
)

// ConsoleRoles lists the roles a console link may carry.
var ConsoleRoles = []string{RoleApprover, RoleVerifier, RoleAuditor}

// Console event types. A link's stream holds its issue, its one use and
// its revocation; a session's stream its start and its end.
const (
	EventConsoleLinkIssued     = "ConsoleLinkIssued"
	EventConsoleLinkUsed       = "ConsoleLinkUsed"
	EventConsoleLinkRevoked    = "ConsoleLinkRevoked"
	EventConsoleSessionStarted = "ConsoleSessionStarted"
	EventConsoleSessionEnded   = "ConsoleSessionEnded"
)

// Console link and session lifetimes.
const (
	DefaultConsoleLinkTTL = 15 * time.Minute
	MaxConsoleLinkTTL     = 7 * 24 * time.Hour
	ConsoleSessionTTL     = 12 * time.Hour
	maxConsoleName        = 200
)

// ConsoleLinkStream is where link id lives; ConsoleSessionStream where
// session id does.
func ConsoleLinkStream(id string) string    { return "console-link-" + id }
func ConsoleSessionStream(id string) string { return "console-session-" + id }

// ConsoleLinkIssued records a one-time sign-in link: who it signs in, as
// what, until when. Only the SHA-256 of its secret is stored.
type ConsoleLinkIssued struct {
	LinkID     string    `json:"linkId"`
	Tenant     string    `json:"tenant"`
	Name       string    `json:"name"`
	Role       string    `json:"role"`
	SecretHash string    `json:"secretHash"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// ConsoleLinkUsed records the link's one use and the session it started.
// It is appended at the link's first revision, so only one use commits.
type ConsoleLinkUsed struct {
	LinkID    string `json:"linkId"`
	SessionID string `json:"sessionId"`
}

// ConsoleLinkRevoked ends a link, and the session it started if any.
type ConsoleLinkRevoked struct {
	LinkID string `json:"linkId"`
}

// ConsoleSessionStarted records a signed-in person. Only the SHA-256 of the
// cookie's secret is stored.
type ConsoleSessionStarted struct {
	SessionID  string    `json:"sessionId"`
	LinkID     string    `json:"linkId"`
	Tenant     string    `json:"tenant"`
	Name       string    `json:"name"`
	Role       string    `json:"role"`
	SecretHash string    `json:"secretHash"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// ConsoleSessionEnded records a sign-out or a revocation.
type ConsoleSessionEnded struct {
	SessionID string `json:"sessionId"`
	Reason    string `json:"reason"`
}

// ValidateConsoleLink checks a link request.
func ValidateConsoleLink(tenant, name, role string, ttl time.Duration) error {
	var bad []FieldError
	if !ValidTenant(tenant) {
		bad = append(bad, FieldError{Pointer: "/tenant", Code: "invalid_format", Message: "tenant names are 1-63 lowercase letters, digits, '_' or '-', starting with a letter or digit"})
	}
	if n := strings.TrimSpace(name); n == "" || n != name || len(name) > maxConsoleName || !utf8.ValidString(name) || strings.ContainsAny(name, "\x00\r\n\t") {
		bad = append(bad, FieldError{Pointer: "/name", Code: "invalid_format", Message: "is required: the person's name or e-mail address, up to 200 characters, one line, no surrounding spaces"})
	} else if r, ok := NotPlain(name); ok {
		// The name is recorded as the approver or reviewer of what the
		// person decides, which refuses it: told now, not at each decision.
		bad = append(bad, FieldError{Pointer: "/name", Code: "control_character", Message: fmt.Sprintf("holds the control character %U; a person's name is plain text", r)})
	}
	if !contains(ConsoleRoles, role) {
		bad = append(bad, FieldError{Pointer: "/role", Code: "invalid_enum", Message: "must be approver, verifier or auditor"})
	}
	if ttl <= 0 || ttl > MaxConsoleLinkTTL {
		bad = append(bad, FieldError{Pointer: "/ttlSeconds", Code: "out_of_range", Message: "must be from 1 second to 7 days"})
	}
	if len(bad) > 0 {
		return Invalid("console.link", bad...)
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// NewConsoleToken makes an id (16 hex digits) and a secret (256 bits,
// base64url); the token handed out is "id.secret".
func NewConsoleToken() (id, secret string, err error) {
	var b [40]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	return hex.EncodeToString(b[:8]), base64.RawURLEncoding.EncodeToString(b[8:]), nil
}

// SplitConsoleToken parses "id.secret"; ok is false for anything else.
func SplitConsoleToken(token string) (id, secret string, ok bool) {
	id, secret, ok = strings.Cut(token, ".")
	if !ok || len(id) != 16 || len(secret) != 43 {
		return "", "", false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", "", false
		}
	}
	if _, err := base64.RawURLEncoding.DecodeString(secret); err != nil {
		return "", "", false
	}
	return id, secret, true
}

// HashConsoleSecret is how link and session secrets are stored.
func HashConsoleSecret(secret string) string {
	sum := sha256.Sum256([]byte("baton.console.v1:" + secret))
	return hex.EncodeToString(sum[:])
}

// ConsoleSecretMatches compares a presented secret with a stored hash in
// constant time.
func ConsoleSecretMatches(secret, hash string) bool {
	return subtle.ConstantTimeCompare([]byte(HashConsoleSecret(secret)), []byte(hash)) == 1
}
