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

// writer is the only goroutine that places events. It takes every append
// waiting in the queue (up to MaxBatch), checks and places them, and writes
// them to the journal with one fdatasync for the lot: a group commit. A
// lone append finds the queue empty and commits at once; no timer ever
// holds it back.
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

// maxPendingBytes bounds the records waiting for the indexer: past it the
// writer waits for the indexer before it places more.
const maxPendingBytes = 64 << 20

func (s *Store) commit(batch []*appendReq) {
	fail := func(err error) {
		for _, r := range batch {
			r.done <- appendResp{err: err}
		}
	}
	if p := s.failed.Load(); p != nil {
		fail(fmt.Errorf("%w: %v", eventstore.ErrFailed, *p))
		return
	}
	if s.pend.size() > maxPendingBytes {
		if err := s.waitIndexed(context.Background(), s.head.Load()); err != nil {
			fail(fmt.Errorf("%w: %v", eventstore.ErrFailed, err))
			return
		}
	}
	head := s.head.Load()
	resps := make([]appendResp, len(batch))
	s.frames.reset()
	last, err := s.place(batch, resps, head)
	if err == nil && last != head {
		err = s.journalWrite(s.frames.bytes())
	}
	if err != nil {
		s.pend.mu.Lock()
		s.pend.dropFrom(head + 1)
		s.pend.mu.Unlock()
		// What the OS holds for the journal after a failed write or fsync
		// is unknowable until the store is reopened, so the store stops
		// writing (the lesson of PostgreSQL's fsync failures). The frames
		// may have reached the disk all the same: to this batch's callers
		// the outcome is unknown, and a retry with the same event ids is
		// the safe answer (after the store is reopened).
		s.setFailed(err)
		fail(fmt.Errorf("%w (outcome unknown: %w): %v", eventstore.ErrFailed, eventstore.ErrUnavailable, err))
		return
	}
	if last != head {
		s.publish(last)
		s.wakeIndexer(false)
	}
	for i, r := range batch {
		r.done <- resps[i]
	}
}

// place checks the batch's appends against the bbolt file and the pending
// events, places the accepted ones after position head in pending (not yet
// visible: readers see events up to the store's head only) and lays out
// their journal frames. It returns the last position placed.
func (s *Store) place(batch []*appendReq, resps []appendResp, head uint64) (last uint64, err error) {
	defer recoverCorrupt(&err, s.path)
	s.pend.mu.Lock()
	defer s.pend.mu.Unlock()
	// The read transaction starts under the lock: whatever the indexer has
	// dropped from pending is in the bbolt file it shows.
	tx, err := s.db.Begin(false)
	if err != nil {
		return head, err
	}
	defer tx.Rollback()
	w := &placer{
		p:      s.pend,
		frames: &s.frames,
		events: tx.Bucket(bucketEvents),
		ids:    tx.Bucket(bucketIDs),
		index:  streamIndex{path: s.path, streams: tx.Bucket(bucketStreams), revs: tx.Bucket(bucketRevs)},
		pos:    head,
		path:   s.path,
	}
	now := s.opts.Now().UTC()
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			resps[i].err = err // the caller has gone; write nothing for it
			continue
		}
		res, refused, err := w.append(r, now)
		if err != nil {
			return head, err
		}
		resps[i] = appendResp{res: res, err: refused}
	}
	return w.pos, nil
}

// journalWrite writes a group commit's frames, making room first: at the
// end of what is prepared, else from the start again once everything
// journaled is in the bbolt file, else in a larger file.
func (s *Store) journalWrite(frames []byte) error {
	j, n := s.jn, int64(len(frames))
	if j.off+n > j.cap {
		switch {
		case n <= j.cap && s.indexed.Load() == s.head.Load():
			j.off = 0
		case j.cap < journalWrapCap || n > j.cap:
			if err := j.extend(max(2*j.cap, j.off+n)); err != nil {
				return err
			}
		default:
			// Full: wait for the indexer to move everything over, then
			// start again from the beginning.
			if err := s.waitIndexed(context.Background(), s.head.Load()); err != nil {
				return err
			}
			j.off = 0
		}
	}
	return j.write(frames)
}

// placer checks and places appends for one group commit. It reads the
// bbolt file through a read transaction and the pending events (the caller
// holds pending's lock for writing).
type placer struct {
	p           *pending
	frames      *frameBuilder
	events, ids *bbolt.Bucket
	index       streamIndex
	pos         uint64 // last assigned global position
	path        string
}

func posKey(pos uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), pos) }

// idPos finds an event id among the pending events, then in the file.
func (w *placer) idPos(id [16]byte) (uint64, bool, error) {
	if pos, ok := w.p.ids[id]; ok {
		return pos, true, nil
	}
	pv := w.ids.Get(id[:])
	if pv == nil {
		return 0, false, nil
	}
	pos, err := positionKey(pv)
	return pos, err == nil, err
}

// record returns the stored record at pos.
func (w *placer) record(pos uint64) ([]byte, error) {
	if e := w.p.at(pos); e != nil {
		return e.rec, nil
	}
	if v := w.events.Get(posKey(pos)); v != nil {
		return v, nil
	}
	return nil, fmt.Errorf("%w: %s: index names position %d, which is missing", eventstore.ErrCorrupt, w.path, pos)
}

// head returns the stream's last revision, pending events included.
func (w *placer) head(stream string) (last uint64, exists bool, err error) {
	if rev, ok := w.p.last(stream); ok {
		return rev, true, nil
	}
	h, err := w.index.head(stream)
	return h.last, h.exists, err
}

// positions returns the positions of up to n revisions of the stream from
// revision from: the file's first, then the pending ones that follow.
func (w *placer) positions(stream string, from uint64, n int) ([]uint64, error) {
	ps, err := w.index.positions(stream, from, n)
	if err != nil {
		return nil, err
	}
	next := from + uint64(len(ps))
	for _, pos := range w.p.streams[stream] {
		if len(ps) >= n {
			break
		}
		switch e := w.p.at(pos); {
		case e.rev < next: // also in the file, not yet dropped from pending
		case e.rev == next:
			ps = append(ps, pos)
			next++
		default:
			return nil, fmt.Errorf("%w: %s: stream %q continues at revision %d after %d", eventstore.ErrCorrupt, w.path, stream, e.rev, next-1)
		}
	}
	return ps, nil
}

// append returns the result, or refused (the caller's error, nothing
// placed), or err (the file could not be read: the group commit fails).
func (w *placer) append(r *appendReq, now time.Time) (res eventstore.AppendResult, refused, err error) {
	if pos, ok, err := w.idPos(r.events[0].ID); err != nil || ok {
		if err != nil {
			return res, nil, err
		}
		res, refused = w.replay(r, pos)
		return res, refused, nil
	}
	for _, ev := range r.events[1:] {
		if pos, ok, err := w.idPos(ev.ID); err != nil || ok {
			if err != nil {
				return res, nil, err
			}
			return res, w.duplicate(ev, pos), nil
		}
	}
	last, exists, err := w.head(r.stream)
	if err != nil {
		return res, nil, err
	}
	if !r.expected.Matches(last, exists) {
		return res, &eventstore.WrongExpectedRevisionError{Stream: r.stream, Expected: r.expected, Actual: last, Exists: exists}, nil
	}
	for i := range r.events {
		w.pos++
		if exists {
			last++
		} else {
			exists, last = true, 0
		}
		ev := eventstore.RecordedEvent{StreamID: r.stream, Revision: last, EventData: r.events[i]}
		ev.Position = eventstore.Position{Commit: w.pos, Prepare: w.pos}
		if ev.Metadata.RecordedAt.IsZero() {
			ev.Metadata.RecordedAt = now
		}
		rec := encodeRecord(make([]byte, 0, 96+len(r.stream)+len(ev.Type)+len(ev.Data)+metadataSize(&ev.Metadata)), &ev)
		w.p.add(pendingEvent{pos: w.pos, rev: last, stream: r.stream, id: ev.ID, rec: rec})
		w.frames.add(rec)
	}
	return eventstore.AppendResult{NextRevision: last, Position: eventstore.Position{Commit: w.pos, Prepare: w.pos}}, nil, nil
}

// replay answers an append whose first event is already stored. If the whole
// batch sits in this stream where the expectation puts it, the append is a
// retry and gets the original result; anything else is a conflict.
func (w *placer) replay(r *appendReq, firstPos uint64) (eventstore.AppendResult, error) {
	b, err := w.record(firstPos)
	if err != nil {
		return eventstore.AppendResult{}, err
	}
	first, err := decodeRecord(b)
	if err != nil {
		return eventstore.AppendResult{}, fmt.Errorf("%w: event %s: %v", eventstore.ErrCorrupt, r.events[0].ID, err)
	}
	last, exists, err := w.head(r.stream)
	if err != nil {
		return eventstore.AppendResult{}, err
	}
	conflict := &eventstore.WrongExpectedRevisionError{Stream: r.stream, Expected: r.expected, Actual: last, Exists: exists}
	if first.StreamID != r.stream {
		return eventstore.AppendResult{}, &eventstore.DuplicateEventError{ID: first.ID.String(), Stream: first.StreamID, Revision: first.Revision}
	}
	if r.expected.IsNoStream() && first.Revision != 0 {
		return eventstore.AppendResult{}, conflict
	}
	if v, ok := r.expected.Value(); ok && first.Revision != v+1 {
		return eventstore.AppendResult{}, conflict
	}
	ps, err := w.positions(r.stream, first.Revision, len(r.events))
	if err != nil {
		return eventstore.AppendResult{}, err
	}
	if len(ps) != len(r.events) {
		return eventstore.AppendResult{}, conflict
	}
	for i, ev := range r.events {
		rec, err := w.record(ps[i])
		if err != nil {
			return eventstore.AppendResult{}, err
		}
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

func (w *placer) duplicate(ev eventstore.EventData, pos uint64) error {
	b, err := w.record(pos)
	if err != nil {
		return err
	}
	rec, err := decodeRecord(b)
	if err != nil {
		return fmt.Errorf("%w: event %s: %v", eventstore.ErrCorrupt, ev.ID, err)
	}
	return &eventstore.DuplicateEventError{ID: ev.ID.String(), Stream: rec.StreamID, Revision: rec.Revision}
}
