package domain

import (
	"errors"
	"fmt"
	"strings"
)

// Kind classifies an error; http maps each kind to one status code in one
// place.
type Kind uint8

const (
	KindOther          Kind = iota
	KindInvalid             // a well-formed request that breaks a rule (422)
	KindNotFound            // unknown id, or another tenant's (404)
	KindConflict            // refused by the lifecycle (409)
	KindForbidden           // authenticated, not allowed (403)
	KindUnauthorized        // no valid credential (401)
	KindUnavailable         // a dependency is not answering (503)
	KindBadRequest          // the request cannot be carried out as sent: not JSON, refused upstream (400)
	KindTooLarge            // the request is larger than allowed (413)
	KindRateLimited         // too many requests, or a budget spent (429)
	KindUpstream            // a model provider failed (502)
	KindTimeout             // a model provider did not answer in time (504)
	KindCanceled            // the client went away (499)
	KindInternal            // Baton failed; the detail is logged (500)
	KindNotAllowed          // no such operation on this resource (405)
	KindNoUpgrade           // a protocol switch Baton does not offer, such as WebSocket (426)
	KindRequestTimeout      // the request's body did not arrive in time (408)
)

func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindNotFound:
		return "not found"
	case KindConflict:
		return "conflict"
	case KindForbidden:
		return "forbidden"
	case KindUnauthorized:
		return "unauthorized"
	case KindUnavailable:
		return "unavailable"
	case KindBadRequest:
		return "bad request"
	case KindTooLarge:
		return "too large"
	case KindRateLimited:
		return "rate limited"
	case KindUpstream:
		return "upstream"
	case KindTimeout:
		return "timeout"
	case KindCanceled:
		return "canceled"
	case KindInternal:
		return "internal"
	case KindNotAllowed:
		return "not allowed"
	case KindNoUpgrade:
		return "no upgrade"
	case KindRequestTimeout:
		return "request timeout"
	}
	return "error"
}

// Error is a domain error: where it happened, what class it is, a stable
// machine code, a message for people, and the offending fields.
type Error struct {
	Op      string // the operation, e.g. "handoff.proof"
	Kind    Kind
	Code    string // stable, snake_case, e.g. "approval_pending"
	Message string
	Fields  []FieldError // for KindInvalid: each failing field
	// Findings name secrets found in a callback: rule and place, never
	// the secret.
	Findings []SecretFinding
	// RetryAfter, when above 0, is how many seconds to wait before a retry.
	RetryAfter int
	// NoRetry: a retry cannot succeed until someone acts (a 503 that lasts
	// until the operator configures the server), whatever the status says.
	NoRetry bool
	Err     error // the cause, if any
}

// PointerToken encodes a key as a JSON pointer's reference token (RFC
// 6901: "~" as "~0", "/" as "~1").
func PointerToken(key string) string {
	if !strings.ContainsAny(key, "~/") {
		return key
	}
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// FieldError names one failing field by JSON pointer.
type FieldError struct {
	Pointer string `json:"pointer"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	msg := e.Message
	if e.Op != "" {
		msg = e.Op + ": " + msg
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// E builds an error.
func E(op string, kind Kind, code, format string, args ...any) *Error {
	return &Error{Op: op, Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid builds a KindInvalid error from field errors.
func Invalid(op string, fields ...FieldError) *Error {
	msg := "the request breaks a rule"
	if len(fields) == 1 {
		msg = fields[0].Message
		if fields[0].Pointer != "" { // "" is the whole body
			msg = fields[0].Pointer + ": " + msg
		}
	} else if len(fields) > 1 {
		msg = fmt.Sprintf("%d fields are invalid; see fields", len(fields))
	}
	return &Error{Op: op, Kind: KindInvalid, Code: "validation_failed", Message: msg, Fields: fields}
}

// KindOf returns the kind of the first *Error in err's chain.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindOther
}

// SecretFinding is a secret found in a request: which rule matched where.
type SecretFinding struct {
	RuleID  string `json:"ruleId"`
	Pointer string `json:"pointer"`
}
