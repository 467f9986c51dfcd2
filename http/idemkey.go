package http

import (
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/batonhq/baton/domain"
)

// maxIdemKey is the longest Idempotency-Key, in characters.
const maxIdemKey = 255

// idempotencyKey reads a request's Idempotency-Key and checks it
// (checkIdempotencyKey). A header sent but blank, or sent twice, is refused:
// taken for no key, the retry it was meant for would run again.
func (s *Server) idempotencyKey(op string, r *http.Request) (string, error) {
	vs, sent := r.Header["Idempotency-Key"]
	if !sent {
		return "", nil
	}
	bad := func(code, msg string) error { return badIdemKey(op, code, msg) }
	switch {
	case len(vs) > 1:
		return "", bad("sent_twice", "is sent more than once")
	case vs[0] == "":
		return "", bad("empty", "is empty")
	}
	return vs[0], s.checkIdempotencyKey(op, vs[0])
}

// badIdemKey is the refusal of a key: msg says what is wrong with it.
func badIdemKey(op, code, msg string) error {
	e := domain.E(op, domain.KindInvalid, "invalid_idempotency_key", "Idempotency-Key %s; it must be 1 to %d characters of UTF-8 with no control characters.", msg, maxIdemKey)
	e.Fields = []domain.FieldError{{Pointer: "header:Idempotency-Key", Code: code, Message: msg}}
	return e
}

// checkIdempotencyKey is the one rule for Idempotency-Key, on the callbacks
// as on generate and agent plans (docs/api.md): 1 to 255 characters of
// valid UTF-8, no control characters, and nothing that looks like a
// credential. A callback's key is stored in its hash-chained event and an
// Idempotency-Key is logged and traced by proxies: a token sent there could
// never be taken out again. "" is no key: the header is optional.
func (s *Server) checkIdempotencyKey(op, key string) error {
	if key == "" {
		return nil
	}
	bad := func(code, msg string) error { return badIdemKey(op, code, msg) }
	if !utf8.ValidString(key) {
		// Stored as JSON text, invalid UTF-8 would become U+FFFD: a retry
		// with the same bytes would no longer match it.
		return bad("invalid_utf8", "is not valid UTF-8")
	}
	if utf8.RuneCountInString(key) > maxIdemKey {
		return bad("too_long", "is longer than 255 characters")
	}
	if r, ok := domain.NotPlain(key); ok {
		// As names and ids: stored in the ledger, an override (U+202E)
		// would make the key read as another where it is shown.
		return bad("control_character", fmt.Sprintf("holds the control character %U", r))
	}
	if s.scanner == nil {
		return nil
	}
	if rule, found := s.scanner.ScanText(key); found {
		e := domain.E(op, domain.KindInvalid, "secret_detected",
			"the Idempotency-Key header looks like a secret (%s); send a key of your own making (a UUID, say). Nothing was recorded.", rule)
		e.Findings = []domain.SecretFinding{{RuleID: rule, Pointer: "header:Idempotency-Key"}}
		return e
	}
	return nil
}
