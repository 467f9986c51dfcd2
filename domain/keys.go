package domain

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"time"
)

// KeyPrefix starts every Baton API key. The secret scanner knows the format.
const KeyPrefix = "btn_sk_"

// KeysStream holds every key event.
const KeysStream = "keys"

// Key event types.
const (
	EventKeyCreated = "KeyCreated"
	EventKeyRevoked = "KeyRevoked"
)

const keyAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

var (
	keyRE    = regexp.MustCompile(`^btn_sk_[A-Za-z0-9]{40}$`)
	tenantRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
)

// KeyCreated records a key. Only the SHA-256 of the key is stored.
type KeyCreated struct {
	KeyID   string `json:"keyId"`
	Tenant  string `json:"tenant"`
	Admin   bool   `json:"admin"`
	Hash    string `json:"hash"`
	Display string `json:"display"` // btn_sk_ABCD…wxyz, for listings
	Label   string `json:"label,omitempty"`
}

// KeyRevoked records that a key no longer works.
type KeyRevoked struct {
	KeyID string `json:"keyId"`
}

// KeyRecord is a key as the auth read model holds it.
type KeyRecord struct {
	KeyID     string     `json:"keyId"`
	Tenant    string     `json:"tenant"`
	Admin     bool       `json:"admin"`
	Display   string     `json:"display"`
	Label     string     `json:"label,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

// ValidTenant reports whether name is a well-formed tenant name.
func ValidTenant(name string) bool { return tenantRE.MatchString(name) }

// NewKey makes a random key (238 bits from crypto/rand) and its record.
func NewKey(tenant string, admin bool, label string) (secret string, ev KeyCreated, err error) {
	if !tenantRE.MatchString(tenant) {
		return "", ev, Invalid("keys.create", FieldError{Pointer: "/tenant", Code: "invalid_format", Message: "tenant names are 1-63 lowercase letters, digits, '_' or '-', starting with a letter or digit"})
	}
	buf := make([]byte, 40)
	if _, err := rand.Read(buf); err != nil {
		return "", ev, err
	}
	var b strings.Builder
	b.WriteString(KeyPrefix)
	for _, c := range buf {
		// 256 is not a multiple of 62: reject the top values to stay uniform.
		for c >= 248 {
			var one [1]byte
			if _, err := rand.Read(one[:]); err != nil {
				return "", ev, err
			}
			c = one[0]
		}
		b.WriteByte(keyAlphabet[int(c)%62])
	}
	secret = b.String()
	idBytes := make([]byte, 8)
	if _, err := rand.Read(idBytes); err != nil {
		return "", ev, err
	}
	return secret, KeyCreated{
		KeyID: "key_" + hex.EncodeToString(idBytes), Tenant: tenant, Admin: admin,
		Hash: HashKey(secret), Display: secret[:11] + "…" + secret[len(secret)-4:], Label: label,
	}, nil
}

// HashKey is how keys are stored and looked up.
func HashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// LooksLikeKey reports whether s has the key format (keyRE), without the
// regular expression: it runs on every request.
func LooksLikeKey(s string) bool {
	const prefix = "btn_sk_"
	if len(s) != len(prefix)+40 || s[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
