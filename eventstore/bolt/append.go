package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"runtime/debug"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/eventstore"
)

type appendReq struct {
	ctx      context.Context
	stream   string
	expected eventstore.ExpectedRevision
	events   []eventstore.EventData
	done     chan appendResp // buffered: the writer never blocks on a caller
}

type appendResp struct {
	res eventstore.AppendResult
	err error
}

// Append implements eventstore.Store. It returns once the commit holding the
// events is on disk.
func (s *Store) Append(ctx context.Context, stream string, expected eventstore.ExpectedRevision, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	if err := eventstore.ValidateAppend(stream, expected, events); err != nil {
		return eventstore.AppendResult{}, err
	}
	for i := range events {
		if n := metadataSize(&events[i].Metadata) + len(events[i].Data); n > eventstore.MaxEventSize {
			return eventstore.AppendResult{}, fmt.Errorf("%w: event %d is %d bytes with metadata, at most %d", eventstore.ErrInvalidEvent, i, n, eventstore.MaxEventSize)
		}
	}
	if err := ctx.Err(); err != nil {
		return eventstore.AppendResult{}, err
	}
	if p := s.failed.Load(); p != nil {
		return eventstore.AppendResult{}, fmt.Errorf("%w: %v", eventstore.ErrFailed, *p)
	}
	req := &appendReq{ctx: ctx, stream: stream, expected: expected, events: events, done: make(chan appendResp, 1)}

	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return eventstore.AppendResult{}, eventstore.ErrClosed
	}
	// Holding the read lock while the queue is full is fine: the writer
	// keeps draining it, and Close waits for us before closing the queue.
	select {
	case s.reqs <- req:
	case <-ctx.Done():
		s.mu.RUnlock()
		return eventstore.AppendResult{}, ctx.Err()
	}
	s.mu.RUnlock()

	select {
	case r := <-req.done:
		return r.res, r.err
	case <-ctx.Done():
		return eventstore.AppendResult{}, fmt.Errorf("eventstore: append to %q: outcome unknown, retry with the same event ids: %w", stream, ctx.Err())
	}
}

func metadataSize(m *eventstore.Metadata) int {
	return len(m.Tenant) + len(m.Actor) + len(m.RequestID) + len(m.CausationID) + len(m.PrevHash) + len(m.Hash)
}

// writer is the only goroutine that writes. It takes every append waiting in
// the queue (up to MaxBatch) and commits them in one transaction: one fsync
// for the lot. A lone append finds the queue empty and commits at once; no
// timer ever holds it back.
func (s *Store) writer() {
	defer close(s.done)
	debug.SetPanicOnFault(true)
	batch := make([]*appendReq, 0, s.opts.MaxBatch)
	for first := range s.reqs {
		batch = append(batch[:0], first)
	drain:
		for len(batch) < s.opts.MaxBatch {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		s.commit(batch)
	}
}

func (s *Store) commit(batch []*appendReq) {
	if p := s.failed.Load(); p != nil {
		for _, r := range batch {
			r.done <- appendResp{err: fmt.Errorf("%w: %v", eventstore.ErrFailed, *p)}
		}
		return
	}
	resps := make([]appendResp, len(batch))
	var head uint64
	err := func() (err error) {
		defer recoverCorrupt(&err, s.path)
		return s.db.Update(func(tx *bbolt.Tx) error {
			w := newTxWriter(tx, s.path)
			now := s.opts.Now().UTC()
			for i, r := range batch {
				if err := r.ctx.Err(); err != nil {
					resps[i].err = err // the caller has gone; write nothing for it
					continue
				}
				res, refused, err := w.append(r, now)
				if err != nil {
					return err
				}
				resps[i] = appendResp{res: res, err: refused}
			}
			head = w.pos
			return nil
		})
	}()
	if err != nil {
		// Nothing of this batch is committed. bbolt rolled back, but what the
		// OS holds for the file after a failed write or fsync is unknowable
		// until it is reopened, so the store stops writing (the lesson of
		// PostgreSQL's fsync failures).
		s.failed.Store(&err)
		for _, r := range batch {
			// bbolt may have made the batch visible (and durable) before
			// the failing fdatasync of its meta page: to this batch's
			// callers the outcome is unknown, and a retry with the same
			// event ids is the safe answer (after the store is reopened).
			r.done <- appendResp{err: fmt.Errorf("%w (outcome unknown: %w): %v", eventstore.ErrFailed, eventstore.ErrUnavailable, err)}
		}
		return
	}
	if head != s.head.Load() {
		s.publish(head)
	}
	for i, r := range batch {
		r.done <- resps[i]
	}
}

// txWriter applies appends inside one write transaction.
type txWriter struct {
	events, ids *bbolt.Bucket
	index       streamIndex
	pos         uint64 // last assigned global position
}

func newTxWriter(tx *bbolt.Tx, path string) *txWriter {
	w := &txWriter{
		events: tx.Bucket(bucketEvents),
		ids:    tx.Bucket(bucketIDs),
		index:  streamIndex{path: path, streams: tx.Bucket(bucketStreams), revs: tx.Bucket(bucketRevs)},
	}
	// Positions only ever grow at the end; full pages make the feed compact.
	w.events.FillPercent = 1.0
	if k, _ := w.events.Cursor().Last(); k != nil {
		w.pos = binary.BigEndian.Uint64(k)
	}
	return w
}

// append returns the result, or refused (the caller's error, nothing
// written), or err (storage failure: the whole transaction must roll back).
func (w *txWriter) append(r *appendReq, now time.Time) (res eventstore.AppendResult, refused, err error) {
	if pv := w.ids.Get(r.events[0].ID[:]); pv != nil {
		res, refused = w.replay(r, pv)
		return res, refused, nil
	}
	for _, ev := range r.events[1:] {
		if pv := w.ids.Get(ev.ID[:]); pv != nil {
			return res, w.duplicate(ev, pv), nil
		}
	}
	head, err := w.index.head(r.stream)
	if err != nil {
		return res, nil, err
	}
	if !r.expected.Matches(head.last, head.exists) {
		return res, &eventstore.WrongExpectedRevisionError{Stream: r.stream, Expected: r.expected, Actual: head.last, Exists: head.exists}, nil
	}
	for i := range r.events {
		w.pos++
		if err := w.index.add(r.stream, &head, w.pos); err != nil {
			return res, nil, err
		}
		ev := eventstore.RecordedEvent{StreamID: r.stream, Revision: head.last, EventData: r.events[i]}
		ev.Position = eventstore.Position{Commit: w.pos, Prepare: w.pos}
		if ev.Metadata.RecordedAt.IsZero() {
			ev.Metadata.RecordedAt = now
		}
		key := binary.BigEndian.AppendUint64(make([]byte, 0, 8), w.pos)
		if err := w.events.Put(key, encodeRecord(make([]byte, 0, 96+len(r.stream)+len(ev.Type)+len(ev.Data)+metadataSize(&ev.Metadata)), &ev)); err != nil {
			return res, nil, err
		}
		if err := w.ids.Put(append([]byte(nil), ev.ID[:]...), key); err != nil {
			return res, nil, err
		}
	}
	if err := w.index.putHead(r.stream, &head); err != nil {
		return res, nil, err
	}
	return eventstore.AppendResult{NextRevision: head.last, Position: eventstore.Position{Commit: w.pos, Prepare: w.pos}}, nil, nil
}

// replay answers an append whose first event is already stored. If the whole
// batch sits in this stream where the expectation puts it, the append is a
// retry and gets the original result; anything else is a conflict.
func (w *txWriter) replay(r *appendReq, firstPos []byte) (eventstore.AppendResult, error) {
	first, err := decodeRecord(w.events.Get(firstPos))
	if err != nil {
		return eventstore.AppendResult{}, fmt.Errorf("%w: event %s: %v", eventstore.ErrCorrupt, r.events[0].ID, err)
	}
	head, err := w.index.head(r.stream)
	if err != nil {
		return eventstore.AppendResult{}, err
	}
	conflict := &eventstore.WrongExpectedRevisionError{Stream: r.stream, Expected: r.expected, Actual: head.last, Exists: head.exists}
	if first.StreamID != r.stream {
		return eventstore.AppendResult{}, &eventstore.DuplicateEventError{ID: first.ID.String(), Stream: first.StreamID, Revision: first.Revision}
	}
	if r.expected.IsNoStream() && first.Revision != 0 {
		return eventstore.AppendResult{}, conflict
	}
	if v, ok := r.expected.Value(); ok && first.Revision != v+1 {
		return eventstore.AppendResult{}, conflict
	}
	ps, err := w.index.positions(r.stream, first.Revision, len(r.events))
	if err != nil {
		return eventstore.AppendResult{}, err
	}
	if len(ps) != len(r.events) {
		return eventstore.AppendResult{}, conflict
	}
	for i, ev := range r.events {
		rec := w.events.Get(binary.BigEndian.AppendUint64(nil, ps[i]))
		if len(rec) < 17 || !bytes.Equal(rec[1:17], ev.ID[:]) {
			return eventstore.AppendResult{}, conflict
		}
	}
	p := ps[len(ps)-1]
	return eventstore.AppendResult{
		NextRevision: first.Revision + uint64(len(r.events)) - 1,
		Position:     eventstore.Position{Commit: p, Prepare: p},
	}, nil
}

func (w *txWriter) duplicate(ev eventstore.EventData, pv []byte) error {
	rec, err := decodeRecord(w.events.Get(pv))
	if err != nil {
		return fmt.Errorf("%w: event %s: %v", eventstore.ErrCorrupt, ev.ID, err)
	}
	return &eventstore.DuplicateEventError{ID: ev.ID.String(), Stream: rec.StreamID, Revision: rec.Revision}
}
