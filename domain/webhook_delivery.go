package domain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"
)

// WebhookDeliveryID is the delivery of one event to one endpoint: the
// same on every replica and every retry, so it is also the webhook-id
// header receivers deduplicate on.
func WebhookDeliveryID(webhookID, eventID string) string {
	sum := sha256.Sum256([]byte(webhookID + "\x00" + eventID))
	return "msg_" + hex.EncodeToString(sum[:16])
}

var deliveryIDRE = regexp.MustCompile(`^msg_[0-9a-f]{32}$`)

// ValidWebhookDeliveryID reports whether id has the delivery id format.
func ValidWebhookDeliveryID(id string) bool { return deliveryIDRE.MatchString(id) }

// WebhookDeliveryScheduled opens a delivery: which event (EventID, the
// event at Seq of the handoff's stream), to which endpoint, and when
// first. The body is not copied: every attempt builds the same bytes from
// the stored event.
type WebhookDeliveryScheduled struct {
	DeliveryID string    `json:"deliveryId"`
	WebhookID  string    `json:"webhookId"`
	Tenant     string    `json:"tenant"`
	EventID    string    `json:"eventId"`
	EventType  string    `json:"eventType"`
	HandoffID  string    `json:"handoffId"`
	Seq        uint64    `json:"seq"`
	DueAt      time.Time `json:"dueAt"`
}

// WebhookAttemptClaimed says which replica makes attempt Attempt. Its
// append with the stream's expected revision is the claim: of several
// replicas, only the one whose append lands sends. A claim with no
// outcome by LeaseUntil may be claimed again.
type WebhookAttemptClaimed struct {
	DeliveryID string    `json:"deliveryId"`
	Attempt    int       `json:"attempt"`
	Claimant   string    `json:"claimant"`
	ClaimedAt  time.Time `json:"claimedAt"`
	LeaseUntil time.Time `json:"leaseUntil"`
}

// Attempt outcomes.
const (
	WebhookSucceeded = "succeeded" // 2xx
	WebhookRetrying  = "retrying"  // failed; another attempt at NextAttemptAt
	WebhookFailed    = "failed"    // failed, and the schedule is spent
	WebhookGone      = "gone"      // 410: the endpoint is disabled
	WebhookCanceled  = "canceled"  // not sent: the endpoint is disabled or deleted
)

// WebhookAttemptRecorded is an attempt's outcome. ResponseBody is the
// start of the receiver's answer (WebhookAnswer).
type WebhookAttemptRecorded struct {
	DeliveryID    string     `json:"deliveryId"`
	Attempt       int        `json:"attempt"`
	Outcome       string     `json:"outcome"`
	StatusCode    int        `json:"statusCode,omitempty"`
	Error         string     `json:"error,omitempty"`
	DurationMs    int64      `json:"durationMs"`
	At            time.Time  `json:"at"`
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
	WebhookAnswer
}

// MaxWebhookAnswer is how much of a receiver's answer body an attempt
// records: enough to read its error, and bounded, so that a receiver
// cannot fill the store (each attempt is kept, and every read model
// rewrites its delivery whole at each event).
const MaxWebhookAnswer = 1024

// KeptWebhookAnswers is how many of a delivery's latest attempts show
// their answer body in its listing.
const KeptWebhookAnswers = 10

// WebhookAnswer is what an attempt keeps of the receiver's answer body:
// as much of its start as takes at most MaxWebhookAnswer bytes in JSON
// (cut at a character's end), whether more followed, or only that it was
// not text (not UTF-8, or with control characters other than tab, CR and
// LF).
type WebhookAnswer struct {
	ResponseBody          string `json:"responseBody,omitempty"`
	ResponseBodyTruncated bool   `json:"responseBodyTruncated,omitempty"`
	ResponseBodyBinary    bool   `json:"responseBodyBinary,omitempty"`
}

// NewWebhookAnswer is what an attempt keeps of an answer body that
// starts with b, more saying whether more bytes followed b.
func NewWebhookAnswer(b []byte, more bool) WebhookAnswer {
	if len(b) > MaxWebhookAnswer {
		b, more = b[:MaxWebhookAnswer], true
	}
	if more {
		// The cut may split a character: its first bytes are dropped.
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	if !utf8.Valid(b) || bytes.ContainsFunc(b, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f }) {
		return WebhookAnswer{ResponseBodyBinary: true, ResponseBodyTruncated: more}
	}
	// The bound holds for the text as stored, in JSON, where a character
	// JSON escapes takes more than its bytes (< is \u003c): 1024 of them
	// took 6 KiB in each attempt's event and in the delivery's listing,
	// rewritten whole at every event of it.
	cost := 0
	for i, r := range string(b) {
		if cost += jsonCost(r); cost > MaxWebhookAnswer {
			b, more = b[:i], true
			break
		}
	}
	return WebhookAnswer{ResponseBody: string(b), ResponseBodyTruncated: more}
}

// jsonCost is how many bytes encoding/json writes for r in a string.
func jsonCost(r rune) int {
	switch r {
	case '<', '>', '&', '\u2028', '\u2029':
		return 6
	case '"', '\\', '\n', '\r', '\t':
		return 2
	}
	return utf8.RuneLen(r)
}

// WebhookRedeliveryRequested starts a new round of attempts, due at At.
type WebhookRedeliveryRequested struct {
	DeliveryID  string    `json:"deliveryId"`
	WebhookID   string    `json:"webhookId,omitempty"` // absent from those recorded before 2026-11-28
	RequestedBy string    `json:"requestedBy"`
	At          time.Time `json:"at"`
}

// Delivery statuses.
const (
	DeliveryPending   = "pending"   // waiting for NextAttemptAt
	DeliverySending   = "sending"   // claimed; the lease runs
	DeliverySucceeded = "succeeded" // final
	DeliveryFailed    = "failed"    // final: spent, gone or canceled
)

// WebhookAttempt is one attempt as listed.
type WebhookAttempt struct {
	Attempt       int        `json:"attempt"`
	ClaimedAt     time.Time  `json:"claimedAt"`
	Outcome       string     `json:"outcome,omitempty"` // empty: no outcome recorded (yet)
	StatusCode    int        `json:"statusCode,omitempty"`
	Error         string     `json:"error,omitempty"`
	DurationMs    int64      `json:"durationMs"`
	At            *time.Time `json:"at,omitempty"`
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
	WebhookAnswer
}

// WebhookDelivery is a delivery folded from its stream.
type WebhookDelivery struct {
	DeliveryID    string           `json:"deliveryId"`
	WebhookID     string           `json:"webhookId"`
	EventID       string           `json:"eventId"`
	EventType     string           `json:"eventType"`
	HandoffID     string           `json:"handoffId"`
	Seq           uint64           `json:"seq"`
	Status        string           `json:"status"`
	CreatedAt     time.Time        `json:"createdAt"`
	NextAttemptAt *time.Time       `json:"nextAttemptAt,omitempty"`
	Attempts      []WebhookAttempt `json:"attempts"`

	Tenant     string    `json:"-"`
	LeaseUntil time.Time `json:"-"`
	// RoundStart is the number of attempts made before the current round
	// (the last redelivery): the retry schedule counts from it.
	RoundStart int `json:"-"`
}

// RoundAttempts is how many attempts the current round has made.
func (d *WebhookDelivery) RoundAttempts() int { return len(d.Attempts) - d.RoundStart }

// Due reports whether an attempt may be claimed at now: pending and due,
// or claimed by a replica whose lease ran out with no outcome.
func (d *WebhookDelivery) Due(now time.Time) bool {
	switch d.Status {
	case DeliveryPending:
		return d.NextAttemptAt == nil || !now.Before(*d.NextAttemptAt)
	case DeliverySending:
		return !now.Before(d.LeaseUntil)
	}
	return false
}

// Final reports whether no attempt will follow without a redelivery.
func (d *WebhookDelivery) Final() bool {
	return d.Status == DeliverySucceeded || d.Status == DeliveryFailed
}

// Apply folds one event of the delivery's stream.
func (d *WebhookDelivery) Apply(typ string, data []byte) error {
	switch typ {
	case EventWebhookDeliveryScheduled:
		var e WebhookDeliveryScheduled
		if err := json.Unmarshal(data, &e); err != nil {
			return err
		}
		due := e.DueAt
		*d = WebhookDelivery{DeliveryID: e.DeliveryID, WebhookID: e.WebhookID, Tenant: e.Tenant, EventID: e.EventID, EventType: e.EventType,
			HandoffID: e.HandoffID, Seq: e.Seq, Status: DeliveryPending, CreatedAt: e.DueAt, NextAttemptAt: &due, Attempts: []WebhookAttempt{}}
	case EventWebhookAttemptClaimed:
		var e WebhookAttemptClaimed
		if err := json.Unmarshal(data, &e); err != nil {
			return err
		}
		if d.DeliveryID == "" {
			return fmt.Errorf("delivery claimed before it was scheduled")
		}
		d.Attempts = append(d.Attempts, WebhookAttempt{Attempt: e.Attempt, ClaimedAt: e.ClaimedAt})
		d.Status, d.LeaseUntil, d.NextAttemptAt = DeliverySending, e.LeaseUntil, nil
	case EventWebhookAttemptRecorded:
		var e WebhookAttemptRecorded
		if err := json.Unmarshal(data, &e); err != nil {
			return err
		}
		i := len(d.Attempts) - 1
		for i >= 0 && d.Attempts[i].Attempt != e.Attempt {
			i--
		}
		if i < 0 {
			return fmt.Errorf("outcome of attempt %d, which was never claimed", e.Attempt)
		}
		at := e.At
		a := &d.Attempts[i]
		a.Outcome, a.StatusCode, a.Error, a.DurationMs, a.At, a.NextAttemptAt = e.Outcome, e.StatusCode, e.Error, e.DurationMs, &at, e.NextAttemptAt
		a.WebhookAnswer = e.WebhookAnswer
		// Older attempts' answers leave the fold (their events keep them):
		// a delivery redelivered to its 500 attempts would otherwise carry
		// half a megabyte of answers, rewritten whole at each event.
		for j := range max(len(d.Attempts)-KeptWebhookAnswers, 0) {
			d.Attempts[j].WebhookAnswer = WebhookAnswer{}
		}
		if i != len(d.Attempts)-1 || d.Status != DeliverySending {
			return nil // a late outcome: a later claim (or a redelivery) decides the state
		}
		switch e.Outcome {
		case WebhookSucceeded:
			d.Status = DeliverySucceeded
		case WebhookRetrying:
			d.Status, d.NextAttemptAt = DeliveryPending, e.NextAttemptAt
		default:
			d.Status = DeliveryFailed
		}
	case EventWebhookRedeliveryRequested:
		var e WebhookRedeliveryRequested
		if err := json.Unmarshal(data, &e); err != nil {
			return err
		}
		at := e.At
		d.Status, d.NextAttemptAt, d.RoundStart = DeliveryPending, &at, len(d.Attempts)
	}
	return nil
}
