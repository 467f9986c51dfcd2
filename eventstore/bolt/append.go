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
	if s.readOnly {
		return eventstore.AppendResult{}, ErrReadOnly
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
// waiting in the queue (up to MaxBatch), checks and places them, writes them
// to the journal as one frame (a group commit) and hands the group to the
// syncer without waiting for the disk. docs/eventstore.md ("Group commit")
// describes the whole path.
func (s *Store) writer() {
	defer close(s.groups)
	defer close(s.syncWake)
	debug.SetPanicOnFault(true)
	placed := s.head.Load() // the last position placed
	for first := range s.reqs {
		batch := append(make([]*appendReq, 0, 8), first)
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
		placed = s.commit(batch, placed)
	}
}

// syncer makes the journal durable: one fdatasync at a time, each covering
// every frame written before it starts, so the groups written while one
// runs all wait for the next and no longer (why, measured: docs/eventstore.md,
// "Group commit"). It exits when the writer has (syncWake closed) and every
// group handed over is synced.
func (s *Store) syncer() {
	defer close(s.syncDone)
	var batch []*group
	for {
		_, more := <-s.syncWake
		s.syncMu.Lock()
		batch, s.toSync = s.toSync, batch[:0]
		s.syncMu.Unlock()
		if len(batch) > 0 {
			var err error
			if e := s.syncJournal(s.jn.syncFD); e != nil {
				err = fmt.Errorf("eventstore: journal %s: %w", s.jn.path, e)
			}
			for _, g := range batch {
				g.err = err
				close(g.synced)
			}
			clear(batch)
		}
		if !more {
			return
		}
	}
}

// maxGroupsAhead bounds the group commits written but not yet answered:
// how far the writer may run ahead of the completer while fdatasyncs run.
// Each takes a page of the journal at least.
const maxGroupsAhead = 64

// maxPendingBytes bounds the records waiting for the indexer: past it the
// writer waits for the indexer before it places more.
const maxPendingBytes = 64 << 20

// group is one group commit on its way to its callers.
type group struct {
	batch       []*appendReq
	resps       []appendResp
	first, last uint64 // positions placed; last == first-1 when none
	refused     error  // for every caller: the store had failed before
	err         error  // placing, writing or syncing failed
	synced      chan struct{}
	placedOnly  bool // err: the limit refused it before anything was written
}

// commit places a group after position placed, writes it to the journal
// and hands it to the syncer and the completer. It returns the last
// position placed.
func (s *Store) commit(batch []*appendReq, placed uint64) uint64 {
	g := &group{batch: batch, resps: make([]appendResp, len(batch)), first: placed + 1, last: placed, synced: make(chan struct{})}
	syncing := false // handed to the syncer, which closes synced
	defer func() {
		if !syncing {
			close(g.synced) // nothing to wait for
		}
		s.groupsPlaced.Add(1)
		s.groups <- g // blocks while maxGroupsAhead wait for the completer
	}()
	if p := s.failed.Load(); p != nil {
		g.refused = fmt.Errorf("%w: %v", eventstore.ErrFailed, *p)
		return placed
	}
	if s.pend.size() > maxPendingBytes {
		if err := s.waitIndexed(context.Background(), placed); err != nil {
			g.refused = fmt.Errorf("%w: %v", eventstore.ErrFailed, err)
			if full, ok := roomless(err); ok {
				g.refused = fmt.Errorf("%w: %v", eventstore.ErrFull, full)
			}
			return placed
		}
	}
	s.frames.reset()
	var used int64
	g.last, used, g.err = s.place(batch, g.resps, placed)
	if g.err == nil && g.last != placed && s.opts.MaxSize > 0 {
		// The journal must never hold what the data file cannot take: the
		// open that moves it over would fail. Twice the records is a
		// generous bound on the pages they take there.
		if need := boltGrowth(used + 2*int64(s.pend.size()) + 64<<10); need > int64(s.opts.MaxSize) {
			g.err = fmt.Errorf("eventstore: %s would pass its maximum size (%d bytes)", s.path, s.opts.MaxSize)
			g.placedOnly = true
		}
	}
	if g.err == nil && g.last != placed {
		g.err = s.journalWrite(s.frames.bytes(), placed)
		if full, ok := roomless(g.err); ok {
			// No byte of this group reached the journal (it could not
			// grow, or start over while the indexer waits for space):
			// its placements go, its callers hear that nothing was
			// recorded, and the store takes the next group as usual.
			s.pend.mu.Lock()
			s.pend.dropFrom(g.first)
			s.pend.mu.Unlock()
			g.refused = fmt.Errorf("%w: %v", eventstore.ErrFull, full)
			g.err, g.last = nil, placed
			return placed
		}
	}
	if g.err != nil {
		s.setFailed(g.err) // later groups are refused at once
		return placed
	}
	if g.last == placed {
		return placed // nothing placed: every append refused or replayed
	}
	syncing = true
	s.syncMu.Lock()
	s.toSync = append(s.toSync, g)
	s.syncMu.Unlock()
	select {
	case s.syncWake <- struct{}{}:
	default: // the syncer is already told
	}
	return g.last
}

// completer answers the group commits in the order they were placed, each
// once its fdatasync has ended (a later one's fdatasync covers an earlier
// one's writes too, but not the other way round): the head moves, the
// readers and the indexer are told, and the callers get their results.
func (s *Store) completer() {
	defer close(s.done)
	var failed error // the first group, in order, whose write failed
	for g := range s.groups {
		<-g.synced
		if g.refused != nil { // nothing placed, nothing read
			for _, r := range g.batch {
				r.done <- appendResp{err: g.refused}
			}
			continue
		}
		err := g.err
		if failed != nil {
			// Every later group was checked against the failed one's
			// events, replays and refusals included: none of its
			// answers holds.
			err = failed
		}
		if err != nil {
			// After a failed write or fsync the store stops writing, and
			// to this group's callers the outcome is unknown (the frames
			// may have reached the disk; docs/eventstore.md, "Failure
			// behaviour"). Only a group the size limit refused before any
			// byte was written, with none failed before it, wrote nothing.
			written := !(g.placedOnly && failed == nil)
			if failed == nil {
				failed = err
			}
			s.setFailed(err)
			s.pend.mu.Lock()
			s.pend.dropFrom(g.first)
			s.pend.mu.Unlock()
			answer := fmt.Errorf("%w: %v", eventstore.ErrFailed, err)
			if written {
				answer = fmt.Errorf("%w (outcome unknown: %w): %v", eventstore.ErrFailed, eventstore.ErrUnavailable, err)
			}
			for _, r := range g.batch {
				r.done <- appendResp{err: answer}
			}
			continue
		}
		if g.last >= g.first {
			s.publish(g.last)
			s.wakeIndexer(false)
		}
		for i, r := range g.batch {
			r.done <- g.resps[i]
		}
	}
}

// place checks the batch's appends against the bbolt file and the pending
// events, places the accepted ones after position head in pending (not yet
// visible: readers see events up to the store's head only) and lays out
// their journal frames. It returns the last position placed and the bytes
// the data file uses.
func (s *Store) place(batch []*appendReq, resps []appendResp, head uint64) (last uint64, used int64, err error) {
	defer recoverCorrupt(&err, s.path)
	s.pend.mu.Lock()
	defer s.pend.mu.Unlock()
	if p := s.failed.Load(); p != nil {
		return head, 0, *p // a group in flight failed: its placements are being dropped
	}
	// The read transaction starts under the lock: whatever the indexer has
	// dropped from pending is in the bbolt file it shows.
	tx, err := s.db.Begin(false)
	if err != nil {
		return head, 0, err
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
			return head, 0, err
		}
		resps[i] = appendResp{res: res, err: refused}
	}
	return w.pos, tx.Size(), nil
}

// journalWrite writes a group commit's frames (not yet fsynced), making
// room first: at the end of what is prepared, else from the start again
// once everything journaled is in the bbolt file, else in a larger file.
// placed is the last position placed before this group.
func (s *Store) journalWrite(frames []byte, placed uint64) error {
	j, n := s.jn, int64(len(frames))
	if j.off+n > j.cap {
		switch {
		case n <= j.cap && s.indexed.Load() == placed:
			j.off = 0
		case j.cap < journalWrapCap || n > j.cap:
			if err := j.extend(max(2*j.cap, j.off+n)); err != nil {
				return err
			}
		default:
			// Full: wait for the groups in flight and the indexer to move
			// everything over, then start again from the beginning.
			if err := s.waitIndexed(context.Background(), placed); err != nil {
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
		w.p.add(pendingEvent{pos: w.pos, rev: last, stream: r.stream, id: ev.ID, rec: rec, ev: asDecoded(ev)})
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

// boltGrowth is the file size bbolt asks for to hold size bytes: the next
// power of two below 16 MiB, 16 MiB more above it.
func boltGrowth(size int64) int64 {
	if size >= 16<<20 {
		return size + 16<<20
	}
	n := int64(1)
	for n < size {
		n <<= 1
	}
	return n
}
