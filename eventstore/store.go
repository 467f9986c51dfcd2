// Package eventstore defines the append-only event store every part of Baton
// stands on: streams of immutable events guarded by explicit expected
// revisions, and one global feed in commit order that projections follow.
//
// Backends live in subpackages named after what they adapt to (bolt, kurrent);
// storetest holds the conformance suite every backend must pass; migrate
// copies one store into another.
package eventstore

import (
	"context"
	"encoding/json"
	"iter"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Store is the contract the rest of Baton uses. All methods are safe for
// concurrent use.
type Store interface {
	// Append writes events to the end of stream atomically, provided the
	// stream matches expected. The expected revision is mandatory: the zero
	// ExpectedRevision is refused with ErrNoExpectedRevision.
	//
	// Appending events whose ids are already in that stream at the position
	// the expectation names is idempotent: the original result is returned
	// and nothing is written twice.
	//
	// A mismatch returns a *WrongExpectedRevisionError (errors.Is ErrConflict).
	// If ctx ends after the append was handed to the store the outcome is
	// unknown; retrying with the same event ids is safe.
	Append(ctx context.Context, stream string, expected ExpectedRevision, events ...EventData) (AppendResult, error)

	// ReadStream returns up to limit events of stream with revision >= from,
	// in revision order. A stream that does not exist reads as empty.
	ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]RecordedEvent, error)

	// ReadAll returns up to limit events of the global feed strictly after
	// position after, in commit order. Start reads from the beginning.
	ReadAll(ctx context.Context, after Position, limit int) ([]RecordedEvent, error)

	// SubscribeAll follows the global feed strictly after position after:
	// first the events already stored (catch-up), then new ones as they
	// commit. The subscriber pulls; a slow subscriber slows only itself.
	// The subscription ends when ctx ends or Close is called.
	SubscribeAll(ctx context.Context, after Position) (Subscription, error)

	// Head returns the position of the last committed event (Start when the
	// store is empty).
	Head(ctx context.Context) (Position, error)

	Close() error
}

// Subscription is a pull-based follower of the global feed.
type Subscription interface {
	// Recv blocks until the next event is available, the subscription's
	// context ends (its error is returned) or Close is called
	// (ErrSubscriptionClosed).
	Recv() (RecordedEvent, error)
	// RecvBatch blocks like Recv for the first event, then adds up to max-1
	// events that are already available without waiting, so a follower can
	// apply a burst in one transaction.
	RecvBatch(max int) ([]RecordedEvent, error)
	Close() error
}

// EventData is an event proposed for appending.
type EventData struct {
	// ID identifies the event; it is also the idempotency key of the append.
	// Time-ordered ids (uuid.NewV7) keep the store's id index compact.
	ID       uuid.UUID
	Type     string
	Data     json.RawMessage
	Metadata Metadata
}

// SchemaVersion is the metadata schema every event is written with.
const SchemaVersion = 1

// NewEvent is an event to append with a fresh time-ordered id and the
// current schema version in its metadata.
func NewEvent(typ string, data json.RawMessage, meta Metadata) EventData {
	meta.SchemaVersion = SchemaVersion
	return EventData{ID: uuid.Must(uuid.NewV7()), Type: typ, Data: data, Metadata: meta}
}

// Metadata travels with every event.
type Metadata struct {
	Tenant        string `json:"tenant,omitempty"`
	Actor         string `json:"actor,omitempty"`
	RequestID     string `json:"requestId,omitempty"`
	CausationID   string `json:"causationId,omitempty"`
	SchemaVersion uint32 `json:"schemaVersion,omitempty"`
	// RecordedAt is set by the store at commit when the caller leaves it
	// zero. Callers that hash events (the handoff ledger) set it themselves.
	RecordedAt time.Time `json:"recordedAt"`
	// PrevHash and Hash chain the events of a ledger stream; the store keeps
	// them verbatim.
	PrevHash string `json:"prevHash,omitempty"`
	Hash     string `json:"hash,omitempty"`
}

// RecordedEvent is an event as stored. Readers must not change the bytes
// of a read event's Data: a store may hand the same bytes to every reader
// of an event (the embedded store does so for events it has just written).
type RecordedEvent struct {
	StreamID string
	Revision uint64 // 0 for the first event of a stream
	Position Position
	EventData
	// Unreadable, when set, says why the store could not decode the event's
	// metadata (an event written around Baton on a shared store); Metadata
	// is then empty. Readers refuse such an event where they need its
	// metadata (a handoff is quarantined, the keys stop the read models);
	// the feed goes on past it.
	Unreadable string
}

// AppendResult tells where the last event of an append landed.
type AppendResult struct {
	NextRevision uint64   // revision of the last event written
	Position     Position // global position of the last event written
}

// Position is a point in the global feed. It is opaque to callers but totally
// ordered: the embedded store uses a gapless sequence number (Commit ==
// Prepare), KurrentDB its commit/prepare log positions.
type Position struct {
	Commit  uint64 `json:"commit"`
	Prepare uint64 `json:"prepare"`
}

// Start is the position before the first event.
var Start = Position{}

// Less reports whether p comes before q in the global feed.
func (p Position) Less(q Position) bool {
	if p.Commit != q.Commit {
		return p.Commit < q.Commit
	}
	return p.Prepare < q.Prepare
}

// Compare returns -1, 0 or +1 as p is before, equal to or after q.
func (p Position) Compare(q Position) int {
	switch {
	case p.Less(q):
		return -1
	case q.Less(p):
		return 1
	}
	return 0
}

// Limits shared by every backend so that behaviour does not depend on the
// store in use.
const (
	MaxStreamIDLen   = 255
	MaxEventTypeLen  = 255
	MaxEventSize     = 4 << 20 // data plus metadata, per event
	MaxEventsPerCall = 10_000
)

// Exclusive is implemented by a store that only this process writes (the
// embedded store holds its file's lock). Coordination among this process's
// requests can then stay in memory; on a shared store (several replicas
// on one KurrentDB) it must go through appends.
type Exclusive interface {
	Exclusive() bool
}

// ReadWholeStream reads every event of stream, page by page, in revision
// order; a stream that does not exist reads as empty.
func ReadWholeStream(ctx context.Context, s Store, stream string) ([]RecordedEvent, error) {
	return ReadStreamFrom(ctx, s, stream, 0)
}

// ReadStreamFrom reads stream's events from revision from on, in pages;
// none when it has no such revision.
func ReadStreamFrom(ctx context.Context, s Store, stream string, from uint64) ([]RecordedEvent, error) {
	const page = 1000
	var out []RecordedEvent
	for {
		evs, err := s.ReadStream(ctx, stream, from, page)
		if err != nil {
			return nil, err
		}
		out = append(out, evs...)
		if len(evs) < page {
			return out, nil
		}
		from = evs[len(evs)-1].Revision + 1
	}
}

// FeedPages yields s's global feed from the start in pages of up to page
// events; a failed read is yielded as the last error.
func FeedPages(ctx context.Context, s Store, page int) iter.Seq2[[]RecordedEvent, error] {
	return func(yield func([]RecordedEvent, error) bool) {
		for after := Start; ; {
			evs, err := s.ReadAll(ctx, after, page)
			if err != nil {
				yield(nil, err)
				return
			}
			if len(evs) == 0 || !yield(evs, nil) {
				return
			}
			after = evs[len(evs)-1].Position
		}
	}
}

// Batch is what one Subscription.RecvBatch returned.
type Batch struct {
	Events []RecordedEvent
	Err    error
}

// Batches pulls sub's batches on a goroutine of its own and hands them
// over one at a time, so that a follower can wait on the feed and on
// timers at once. The first error is the last batch. stop ends the
// goroutine once sub's RecvBatch returns (close sub after calling it).
func Batches(sub Subscription, max int) (feed <-chan Batch, stop func()) {
	out := make(chan Batch)
	done := make(chan struct{})
	go func() {
		for {
			evs, err := sub.RecvBatch(max)
			select {
			case out <- Batch{evs, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var once sync.Once
	return out, func() { once.Do(func() { close(done) }) }
}
