package bolt

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"syscall"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/eventstore"
)

// fullRetry is how often the indexer tries again while the disk is full.
var fullRetry = time.Second

// noRoom marks a group commit refused for want of space before any of it
// was written: nothing recorded, and the store goes on.
type noRoom struct{ err error }

func (e noRoom) Error() string { return e.err.Error() }
func (e noRoom) Unwrap() error { return e.err }

// roomless returns the disk-full error err carries, if it is a noRoom.
func roomless(err error) (error, bool) {
	var nr noRoom
	if errors.As(err, &nr) {
		return nr.err, true
	}
	return nil, false
}

// diskFull says whether a write failed for want of space, which freeing
// space mends, unlike an I/O error.
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// DefaultIndexDelay is how long the indexer lets journaled events gather
// before it commits them to the bbolt file: one commit (two fdatasyncs and
// the pages it changes) for everything appended meanwhile.
const DefaultIndexDelay = 10 * time.Millisecond

// indexBatch is how many events the indexer waits for past its delay, up
// to ten delays: a commit costs about the same for one event as for dozens
// (measured: docs/eventstore.md).
const indexBatch = 32

// indexer moves journaled events into the bbolt file, in position order,
// and drops them from pending once committed. It ends when the writer has
// ended and everything is moved, or when a commit fails (the store then
// refuses writes; pending keeps serving reads until it is closed).
func (s *Store) indexer() {
	defer close(s.indexDone)
	debug.SetPanicOnFault(true)
	stopping := false
	for {
		urgent := false
		select {
		case <-s.indexWake:
		case <-s.indexNow:
			urgent = true // someone waits: no delay
		case <-s.indexStop:
			stopping = true
		}
		if !stopping && !urgent && s.opts.IndexDelay > 0 {
			stopping = s.gather()
		}
		for {
			target := s.head.Load()
			if target <= s.indexed.Load() {
				break
			}
			err := s.index(target)
			if err == nil {
				continue
			}
			if !diskFull(err) || stopping {
				s.indexErr = err // read by Close after indexDone
				s.setFailed(err)
				return
			}
			// The disk is full: the events are safe in the journal, and
			// the failed commit left the bbolt file as it was. Try again
			// until space is freed, rather than refuse writes until a
			// restart, which a full disk would refuse too.
			s.full.Store(&err)
			s.progressed() // the writer, if it waits for us, refuses instead
			select {
			case <-time.After(fullRetry):
			case <-s.indexStop:
				stopping = true // one more try, then Close says what waits
			}
		}
		if stopping {
			return
		}
	}
}

// gather waits while journaled events gather for the next commit: at
// least IndexDelay, then until indexBatch events wait or ten delays have
// passed, or someone waits for the indexer (indexNow). It reports whether
// the store is closing.
func (s *Store) gather() (stopping bool) {
	t := time.NewTimer(s.opts.IndexDelay)
	defer t.Stop()
	for waited := 1; ; waited++ {
		select {
		case <-t.C:
		case <-s.indexNow:
			return false
		case <-s.indexStop:
			return true
		}
		if s.pend.count() >= indexBatch || waited >= 10 {
			return false
		}
		t.Reset(s.opts.IndexDelay)
	}
}

// wakeIndexer tells the indexer there is work: now skips its delay.
func (s *Store) wakeIndexer(now bool) {
	ch := s.indexWake
	if now {
		ch = s.indexNow
	}
	select {
	case ch <- struct{}{}:
	default:
	}
}

// index commits the pending events up to position target (all in the
// journal) to the bbolt file and drops them from pending.
func (s *Store) index(target uint64) (err error) {
	from := s.indexed.Load()
	s.pend.mu.RLock()
	evs := s.pend.feedAfter(from, target, int(target-from))
	s.pend.mu.RUnlock()
	if len(evs) == 0 || evs[0].pos != from+1 || evs[len(evs)-1].pos != target {
		return fmt.Errorf("%w: %s: pending events do not cover positions %d to %d", eventstore.ErrCorrupt, s.path, from+1, target)
	}
	err = func() (err error) {
		defer recoverCorrupt(&err, s.path)
		return s.db.Update(func(tx *bbolt.Tx) error { return s.indexCommit(tx, evs) })
	}()
	if err != nil {
		return err
	}
	s.pend.mu.Lock()
	s.pend.dropThrough(target)
	s.pend.mu.Unlock()
	s.indexed.Store(target)
	s.full.Store(nil) // before the waiters wake: there is room again
	s.progressed()
	return nil
}

// indexTx writes evs, the events following the file's newest, into the
// buckets. Each must continue the global feed and its stream.
func (s *Store) indexTx(tx *bbolt.Tx, evs []pendingEvent) error {
	events, ids := tx.Bucket(bucketEvents), tx.Bucket(bucketIDs)
	index := streamIndex{path: s.path, streams: tx.Bucket(bucketStreams), revs: tx.Bucket(bucketRevs)}
	// Positions only ever grow at the end; full pages make the feed compact.
	events.FillPercent = 1.0
	var pos uint64
	if k, _ := events.Cursor().Last(); k != nil {
		var err error
		if pos, err = positionKey(k); err != nil {
			return err
		}
	}
	heads := map[string]*streamHead{}
	for _, e := range evs {
		if e.pos != pos+1 {
			return fmt.Errorf("%w: %s: event at position %d would follow %d", eventstore.ErrCorrupt, s.path, e.pos, pos)
		}
		pos = e.pos
		h := heads[e.stream]
		if h == nil {
			v, err := index.head(e.stream)
			if err != nil {
				return err
			}
			h = &v
			heads[e.stream] = h
		}
		if want := h.last + 1; (h.exists && e.rev != want) || (!h.exists && e.rev != 0) {
			return fmt.Errorf("%w: %s: stream %q revision %d would follow %d", eventstore.ErrCorrupt, s.path, e.stream, e.rev, h.last)
		}
		if err := index.add(e.stream, h, e.pos); err != nil {
			return err
		}
		key := posKey(e.pos)
		if err := events.Put(key, e.rec); err != nil {
			return err
		}
		if err := ids.Put(append([]byte(nil), e.id[:]...), key); err != nil {
			return err
		}
	}
	for stream, h := range heads {
		if err := index.putHead(stream, h); err != nil {
			return err
		}
	}
	return nil
}

// progressed wakes whoever waits for the indexer (waitIndexed).
func (s *Store) progressed() {
	s.progressMu.Lock()
	close(s.progress)
	s.progress = make(chan struct{})
	s.progressMu.Unlock()
}

func (s *Store) progressCh() <-chan struct{} {
	s.progressMu.Lock()
	defer s.progressMu.Unlock()
	return s.progress
}

// waitIndexed waits until the bbolt file holds every event up to target.
func (s *Store) waitIndexed(ctx context.Context, target uint64) error {
	for {
		ch := s.progressCh()
		moved := s.changed() // a group answered: the indexer has more to do
		if s.indexed.Load() >= target {
			return nil
		}
		if p := s.failed.Load(); p != nil {
			return *p
		}
		if p := s.full.Load(); p != nil {
			return noRoom{*p}
		}
		s.wakeIndexer(true)
		select {
		case <-ch:
		case <-moved:
		case <-s.indexDone:
			if s.indexed.Load() >= target {
				return nil
			}
			if p := s.failed.Load(); p != nil {
				return *p
			}
			return eventstore.ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// setFailed records the first failure; the store refuses writes from then
// on, and whoever waits for the indexer is woken.
func (s *Store) setFailed(err error) {
	s.failed.CompareAndSwap(nil, &err)
	s.progressed()
}
