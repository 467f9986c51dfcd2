package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/eventstore"
)

// DefaultPageSize is used when a read asks for limit <= 0.
const DefaultPageSize = 1000

// ReadStream implements eventstore.Store with one short read transaction,
// and the stream's events not yet in the bbolt file from pending.
func (s *Store) ReadStream(ctx context.Context, stream string, from uint64, limit int) (out []eventstore.RecordedEvent, err error) {
	if err := eventstore.ValidateStreamID(stream); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultPageSize
	}
	// pending first, then the file: an event dropped from pending before
	// this look is in the file the transaction below shows.
	head := s.head.Load()
	s.pend.mu.RLock()
	pend := s.pend.streamAfter(stream, from, head, limit)
	s.pend.mu.RUnlock()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(&err, s.path)
	err = s.view(ctx, func(tx *bbolt.Tx) error {
		events := tx.Bucket(bucketEvents)
		index := streamIndex{path: s.path, streams: tx.Bucket(bucketStreams), revs: tx.Bucket(bucketRevs)}
		ps, err := index.positions(stream, from, limit)
		if err != nil {
			return err
		}
		out = make([]eventstore.RecordedEvent, 0, len(ps)+len(pend))
		for i, p := range ps {
			ev, err := s.load(events, binary.BigEndian.AppendUint64(nil, p))
			if err != nil {
				return err
			}
			if want := from + uint64(i); ev.StreamID != stream || ev.Revision != want {
				return fmt.Errorf("%w: %s: stream %q revision %d points at %q revision %d", eventstore.ErrCorrupt, s.path, stream, want, ev.StreamID, ev.Revision)
			}
			out = append(out, ev)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.continuePending(out, pend, from+uint64(len(out)), limit,
		func(e *pendingEvent) uint64 { return e.rev }, stream)
}

// continuePending continues out, read from the file, with the pending
// events that follow it, up to limit events in all. seq numbers them (by
// revision or by position) and next is the number out's successor must
// have: events the file also held are skipped, a jump is corruption.
// stream names the stream read ("" for the feed). A pending event is
// decoded once, when placed, and shared by its readers (Store's doc).
func (s *Store) continuePending(out []eventstore.RecordedEvent, pend []pendingEvent, next uint64, limit int, seq func(*pendingEvent) uint64, stream string) ([]eventstore.RecordedEvent, error) {
	for i := range pend {
		if len(out) >= limit {
			break
		}
		switch n := seq(&pend[i]); {
		case n < next:
			continue // in the file too
		case n > next:
			what := "the global feed's positions"
			if stream != "" {
				what = fmt.Sprintf("stream %q's revisions", stream)
			}
			return nil, fmt.Errorf("%w: %s: %s jump from %d to %d", eventstore.ErrCorrupt, s.path, what, next-1, n)
		}
		out = append(out, *pend[i].ev)
		next++
	}
	return out, nil
}

// ReadAll implements eventstore.Store. Positions are gapless, so a gap or a
// record that names another position is corruption, never something to skip.
func (s *Store) ReadAll(ctx context.Context, after eventstore.Position, limit int) (out []eventstore.RecordedEvent, err error) {
	if limit <= 0 {
		limit = DefaultPageSize
	}
	head := s.head.Load()
	var pend []pendingEvent
	if after.Commit < head {
		// Positions are gapless: what there is to read is known, and out
		// is made once at that size (at most limit).
		out = make([]eventstore.RecordedEvent, 0, min(uint64(limit), head-after.Commit))
		s.pend.mu.RLock()
		pend = s.pend.feedAfter(after.Commit, head, limit)
		s.pend.mu.RUnlock()
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(&err, s.path)
	err = s.view(ctx, func(tx *bbolt.Tx) error {
		want := after.Commit + 1
		c := tx.Bucket(bucketEvents).Cursor()
		// out was made for what there is (above), not for a page: a
		// follower woken by each commit reads one or two events, or none,
		// and a slice sized for a page (tens of KB, zeroed) per read was
		// most of the garbage a server made between requests.
		for k, v := c.Seek(binary.BigEndian.AppendUint64(nil, want)); k != nil && len(out) < limit; k, v = c.Next() {
			pos, err := positionKey(k)
			if err != nil {
				return err
			}
			if pos != want {
				return fmt.Errorf("%w: %s: global feed jumps from %d to %d", eventstore.ErrCorrupt, s.path, want-1, pos)
			}
			ev, err := decodeRecord(v)
			if err != nil || ev.Position.Commit != pos {
				return fmt.Errorf("%w: %s: event at position %d: %v", eventstore.ErrCorrupt, s.path, pos, err)
			}
			out = append(out, ev)
			want++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.continuePending(out, pend, after.Commit+1+uint64(len(out)), limit,
		func(e *pendingEvent) uint64 { return e.pos }, "")
}

func (s *Store) view(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return eventstore.ErrClosed
	}
	return s.db.View(fn)
}

func (s *Store) load(events *bbolt.Bucket, pv []byte) (eventstore.RecordedEvent, error) {
	pos, err := positionKey(pv)
	if err != nil {
		return eventstore.RecordedEvent{}, err
	}
	v := events.Get(pv)
	if v == nil {
		return eventstore.RecordedEvent{}, fmt.Errorf("%w: %s: index names position %d, which is missing", eventstore.ErrCorrupt, s.path, pos)
	}
	ev, err := decodeRecord(v)
	if err != nil || ev.Position.Commit != pos {
		return eventstore.RecordedEvent{}, fmt.Errorf("%w: %s: event at position %d: %v", eventstore.ErrCorrupt, s.path, pos, err)
	}
	return ev, nil
}

func positionKey(k []byte) (uint64, error) {
	if len(k) != 8 {
		return 0, fmt.Errorf("%w: position key of %d bytes", eventstore.ErrCorrupt, len(k))
	}
	return binary.BigEndian.Uint64(k), nil
}

// SubscribeAll implements eventstore.Store. The subscription holds no
// goroutine: Recv reads a page when its buffer is empty and waits for the
// next commit when it has caught up, so a slow reader holds back only itself.
func (s *Store) SubscribeAll(ctx context.Context, after eventstore.Position) (eventstore.Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	return &subscription{s: s, ctx: ctx, cancel: cancel, after: after}, nil
}

// subscriptionPage is how many events a subscription reads per transaction.
const subscriptionPage = 512

type subscription struct {
	s      *Store
	ctx    context.Context
	cancel context.CancelFunc
	after  eventstore.Position

	closed atomic.Bool
	mu     sync.Mutex // one Recv at a time
	buf    []eventstore.RecordedEvent
}

func (sub *subscription) Recv() (eventstore.RecordedEvent, error) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	for {
		if sub.closed.Load() {
			return eventstore.RecordedEvent{}, eventstore.ErrSubscriptionClosed
		}
		if len(sub.buf) > 0 {
			ev := sub.buf[0]
			sub.buf = sub.buf[1:]
			sub.after = ev.Position
			return ev, nil
		}
		if err := sub.ctx.Err(); err != nil {
			if sub.closed.Load() {
				return eventstore.RecordedEvent{}, eventstore.ErrSubscriptionClosed
			}
			return eventstore.RecordedEvent{}, err
		}
		// Take the wake-up channel before reading, so a commit that lands
		// between the read and the wait still wakes us.
		changed := sub.s.changed()
		evs, err := sub.s.ReadAll(sub.ctx, sub.after, subscriptionPage)
		if err != nil {
			if sub.closed.Load() {
				return eventstore.RecordedEvent{}, eventstore.ErrSubscriptionClosed
			}
			return eventstore.RecordedEvent{}, err
		}
		if len(evs) > 0 {
			sub.buf = evs
			continue
		}
		sub.mu.Unlock()
		select {
		case <-changed:
		case <-sub.ctx.Done():
		case <-sub.s.stop:
			sub.mu.Lock()
			return eventstore.RecordedEvent{}, eventstore.ErrClosed
		}
		sub.mu.Lock()
	}
}

func (sub *subscription) RecvBatch(max int) ([]eventstore.RecordedEvent, error) {
	first, err := sub.Recv()
	if err != nil {
		return nil, err
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	n := min(max-1, len(sub.buf))
	if n < 0 {
		n = 0
	}
	out := make([]eventstore.RecordedEvent, 0, n+1)
	out = append(out, first)
	out = append(out, sub.buf[:n]...)
	sub.buf = sub.buf[n:]
	if n > 0 {
		sub.after = out[len(out)-1].Position
	}
	return out, nil
}

func (sub *subscription) Close() error {
	sub.closed.Store(true)
	sub.cancel()
	return nil
}
