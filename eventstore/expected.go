package eventstore

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"
)

type expectKind uint8

const (
	expectUnset expectKind = iota
	expectNoStream
	expectRevision
	expectExists
)

// ExpectedRevision is the optimistic-concurrency condition of an append.
// Its zero value is deliberately invalid: every append states what it
// expects, and "any" does not exist.
type ExpectedRevision struct {
	kind expectKind
	rev  uint64
}

// NoStream expects the stream not to exist yet.
func NoStream() ExpectedRevision { return ExpectedRevision{kind: expectNoStream} }

// Revision expects the stream's last event to be at revision rev.
func Revision(rev uint64) ExpectedRevision { return ExpectedRevision{kind: expectRevision, rev: rev} }

// StreamExists expects the stream to have at least one event.
func StreamExists() ExpectedRevision { return ExpectedRevision{kind: expectExists} }

// IsNoStream, IsStreamExists and Value let backends map the condition.
func (e ExpectedRevision) IsNoStream() bool     { return e.kind == expectNoStream }
func (e ExpectedRevision) IsStreamExists() bool { return e.kind == expectExists }

// Value returns the revision and true when e is Revision(n).
func (e ExpectedRevision) Value() (uint64, bool) { return e.rev, e.kind == expectRevision }

// IsSet reports whether e states a condition.
func (e ExpectedRevision) IsSet() bool { return e.kind != expectUnset }

// Matches reports whether a stream whose last revision is last (exists false
// when the stream has no events) satisfies e.
func (e ExpectedRevision) Matches(last uint64, exists bool) bool {
	switch e.kind {
	case expectNoStream:
		return !exists
	case expectExists:
		return exists
	case expectRevision:
		return exists && last == e.rev
	}
	return false
}

func (e ExpectedRevision) String() string {
	switch e.kind {
	case expectNoStream:
		return "no stream"
	case expectExists:
		return "stream exists"
	case expectRevision:
		return fmt.Sprintf("revision %d", e.rev)
	}
	return "unset"
}

// Errors callers test with errors.Is.
var (
	// ErrConflict is the class of every optimistic-concurrency failure.
	ErrConflict = errors.New("eventstore: conflict")
	// ErrNoExpectedRevision means an append did not state its expectation:
	// a programming error, never a user error.
	ErrNoExpectedRevision = errors.New("eventstore: append without an expected revision")
	// ErrInvalidEvent covers malformed appends: empty or oversized stream ids,
	// types or payloads, nil ids, data that is not JSON.
	ErrInvalidEvent = errors.New("eventstore: invalid event")
	// ErrTooLarge is an ErrInvalidEvent for size: an event over
	// MaxEventSize, or an append over a KurrentDB server's
	// --max-append-size. Nothing was written, and the same events never
	// will be: the request that made them was too large.
	ErrTooLarge = fmt.Errorf("%w: too large for the store", ErrInvalidEvent)
	// ErrCorrupt means stored bytes failed validation. The store never
	// returns a partial or guessed value in its place.
	ErrCorrupt = errors.New("eventstore: data file is corrupt")
	// ErrClosed is returned by a store after Close.
	ErrClosed = errors.New("eventstore: store is closed")
	// ErrFailed means an earlier write failed at the storage layer (disk
	// full, I/O error). The store refuses further appends until it is
	// reopened, because what the disk holds is then known only after a
	// fresh open.
	ErrFailed = errors.New("eventstore: store failed and refuses writes until reopened")
	// ErrFull means the disk the store writes to is full: the append was
	// refused before any of it was written, so nothing was recorded. Unlike
	// ErrFailed it passes: the store takes appends again once space is
	// freed, without a reopen.
	ErrFull = errors.New("eventstore: the disk is full; nothing was recorded")
	// ErrUnavailable means the store could not be reached or did not
	// answer (a server store: connection lost, no leader). For an append
	// the outcome is unknown: it may have committed. Retrying with the same
	// event ids is safe.
	ErrUnavailable = errors.New("eventstore: store unavailable (a write in flight may or may not have committed)")
	// ErrSubscriptionClosed is returned by Recv after Close.
	ErrSubscriptionClosed = errors.New("eventstore: subscription closed")
	// ErrLocked means another process holds the data file.
	ErrLocked = errors.New("eventstore: data file is locked by another process")
)

// WrongExpectedRevisionError reports an append whose expectation did not hold.
// It names the stream's actual revision.
type WrongExpectedRevisionError struct {
	Stream   string
	Expected ExpectedRevision
	// Actual is the stream's last revision; meaningful when Exists.
	Actual uint64
	Exists bool
}

func (e *WrongExpectedRevisionError) Error() string {
	actual := "stream does not exist"
	if e.Exists {
		actual = fmt.Sprintf("stream is at revision %d", e.Actual)
	}
	return fmt.Sprintf("eventstore: wrong expected revision on %q: expected %s, %s", e.Stream, e.Expected, actual)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *WrongExpectedRevisionError) Is(target error) bool { return target == ErrConflict }

// DuplicateEventError reports an event id that is already stored somewhere
// other than where an idempotent retry would have put it.
type DuplicateEventError struct {
	ID       string
	Stream   string
	Revision uint64
}

func (e *DuplicateEventError) Error() string {
	return fmt.Sprintf("eventstore: event %s already stored in %q at revision %d", e.ID, e.Stream, e.Revision)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *DuplicateEventError) Is(target error) bool { return target == ErrConflict }

// ValidateAppend checks the parts of an append every backend refuses alike.
func ValidateAppend(stream string, expected ExpectedRevision, events []EventData) error {
	if !expected.IsSet() {
		return ErrNoExpectedRevision
	}
	if err := ValidateStreamID(stream); err != nil {
		return err
	}
	if len(events) == 0 {
		return fmt.Errorf("%w: no events", ErrInvalidEvent)
	}
	if len(events) > MaxEventsPerCall {
		return fmt.Errorf("%w: %d events in one append, at most %d", ErrInvalidEvent, len(events), MaxEventsPerCall)
	}
	seen := make(map[[16]byte]struct{}, len(events))
	for i, ev := range events {
		if ev.ID == [16]byte{} {
			return fmt.Errorf("%w: event %d has a nil id", ErrInvalidEvent, i)
		}
		if _, dup := seen[ev.ID]; dup {
			return fmt.Errorf("%w: event id %s appears twice in one append", ErrInvalidEvent, ev.ID)
		}
		seen[ev.ID] = struct{}{}
		if ev.Type == "" || len(ev.Type) > MaxEventTypeLen || !utf8.ValidString(ev.Type) {
			return fmt.Errorf("%w: event %d type must be 1..%d bytes of UTF-8", ErrInvalidEvent, i, MaxEventTypeLen)
		}
		if len(ev.Data) > MaxEventSize {
			return fmt.Errorf("%w: event %d data is %d bytes, at most %d", ErrTooLarge, i, len(ev.Data), MaxEventSize)
		}
		if len(ev.Data) > 0 && !validJSON(ev.Data) {
			return fmt.Errorf("%w: event %d data is not valid JSON", ErrInvalidEvent, i)
		}
	}
	return nil
}

// ValidateStreamID checks a stream id: 1..MaxStreamIDLen bytes of UTF-8
// without control characters.
func ValidateStreamID(stream string) error {
	if stream == "" || len(stream) > MaxStreamIDLen || !utf8.ValidString(stream) {
		return fmt.Errorf("%w: stream id must be 1..%d bytes of UTF-8", ErrInvalidEvent, MaxStreamIDLen)
	}
	for _, r := range stream {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: stream id contains a control character", ErrInvalidEvent)
		}
	}
	return nil
}

// MayHaveCommitted reports whether an append that returned err may still
// have committed: the store was unavailable mid-write (ErrUnavailable), or
// the caller's context ended while the append waited for its commit. Any
// other error means nothing was written.
func MayHaveCommitted(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}
