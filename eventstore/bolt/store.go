// Package bolt is Baton's embedded event store: one bbolt file and its
// journal under the data directory, no server. Appends are durable (in the
// journal, fdatasynced) before they are acknowledged; concurrent appends
// share one journal write (group commit) through a single writer goroutine,
// and an indexer moves them into the bbolt file in the background. See
// docs/eventstore.md for the file layout.
package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/batonhq/baton/eventstore"
)

// FileName is the data file inside the data directory.
const FileName = "events.db"

// formatTag identifies a Baton event file and its layout version.
const formatTag = "baton-eventstore/1"

var (
	bucketMeta    = []byte("meta")
	bucketEvents  = []byte("events")
	bucketStreams = []byte("streams")
	bucketRevs    = []byte("revs")
	bucketIDs     = []byte("ids")
	keyFormat     = []byte("format")
)

// Options tune a Store. The zero value is what `baton serve` uses.
type Options struct {
	// LockTimeout is how long Open waits for another process to release the
	// data file before failing with ErrLocked. Default 500ms.
	LockTimeout time.Duration
	// MaxBatch caps how many appends share one commit. Default 1024.
	MaxBatch int
	// Now stamps RecordedAt on events that arrive without one. Default
	// time.Now; tests pass a fake clock.
	Now func() time.Time
	// MaxSize caps the data file in bytes (0: no cap). A write that would
	// grow the file past it fails like a full disk.
	MaxSize int
	// IndexDelay is how long journaled events gather before the indexer
	// commits them to the bbolt file; with fewer than 32 waiting it lets
	// them gather longer, up to ten times as long. Default
	// DefaultIndexDelay; negative: no delay.
	IndexDelay time.Duration
}

// Store is the bbolt-backed eventstore.Store.
type Store struct {
	db       *bbolt.DB
	path     string
	opts     Options
	readOnly bool // OpenReadOnly: no writer, syncer, completer or indexer

	mu     sync.RWMutex // guards closed against concurrent Append/Close
	closed bool
	reqs   chan *appendReq
	groups chan *group   // from the writer to the completer
	done   chan struct{} // closed when the writer and the completer have exited

	syncMu   sync.Mutex
	toSync   []*group      // written by the writer, for the syncer's next fdatasync
	syncWake chan struct{} // buffered 1: toSync has groups; closed when the writer exits
	syncDone chan struct{} // closed when the syncer has exited
	stop     chan struct{} // closed by Close: wakes subscriptions

	failed atomic.Pointer[error]
	// full is why the indexer cannot move events into the bbolt file for
	// now (the disk full), nil once it can: it tries again every
	// fullRetry, and meanwhile appends that need it or more journal are
	// refused with nothing written (eventstore.ErrFull).
	full atomic.Pointer[error]

	notifyMu sync.Mutex
	notify   chan struct{} // closed and replaced after every commit
	head     atomic.Uint64 // newest position in the journal: what readers see

	jn      *journal
	frames  frameBuilder // the writer's
	pend    *pending
	indexed atomic.Uint64 // newest position in the bbolt file

	indexWake, indexNow chan struct{}                         // buffered 1: work for the indexer
	indexStop           chan struct{}                         // closed by Close once the writer is done
	indexDone           chan struct{}                         // closed when the indexer has exited
	indexErr            error                                 // why the indexer stopped, if it failed (set before indexDone)
	syncJournal         func(*os.File) error                  // fdatasync; tests make it fail
	indexCommit         func(*bbolt.Tx, []pendingEvent) error // indexTx; tests make it fail
	groupsPlaced        atomic.Int64                          // group commits handed to the completer (tests wait on it)
	progressMu          sync.Mutex
	progress            chan struct{} // closed and replaced when the indexer advances or fails
}

var _ eventstore.Store = (*Store)(nil)

// Open opens or creates the store in dir. A second process (or a second Open
// in this one) on the same dir fails with eventstore.ErrLocked.
func Open(dir string, opts Options) (s *Store, err error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 500 * time.Millisecond
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 1024
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.IndexDelay == 0 {
		opts.IndexDelay = DefaultIndexDelay
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("eventstore: data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	if err := checkFile(path); errors.As(err, new(unbornError)) && repairUnborn(path, filepath.Join(dir, JournalFileName)) {
		// A start on a full disk that failed while it created the store:
		// no event was ever in it, so it is made again (bbolt makes an
		// empty file a new store) rather than refused as damaged.
	} else if err != nil {
		return nil, err
	}

	// A truncated or mangled file can fault or panic inside bbolt while it
	// maps the file; both become ErrCorrupt instead of a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(&err, path)

	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout: opts.LockTimeout,
		// The freelist is written at every commit: rebuilding it at open
		// (NoFreelistSync) walks every page on a goroutine of bbolt's own,
		// where a damaged page would crash the process, not return an error.
		NoFreelistSync:  false,
		FreelistType:    bbolt.FreelistMapType,
		InitialMmapSize: 1 << 30, // readers never wait for a remap below 1 GiB
		MaxSize:         opts.MaxSize,
	})
	if err != nil {
		return nil, openError(path, err)
	}
	s = &Store{
		db:        db,
		path:      path,
		opts:      opts,
		reqs:      make(chan *appendReq, 4*opts.MaxBatch),
		groups:    make(chan *group, maxGroupsAhead),
		syncWake:  make(chan struct{}, 1),
		syncDone:  make(chan struct{}),
		done:      make(chan struct{}),
		stop:      make(chan struct{}),
		notify:    make(chan struct{}),
		pend:      newPending(),
		indexWake: make(chan struct{}, 1),
		indexNow:  make(chan struct{}, 1),
		indexStop: make(chan struct{}),
		indexDone: make(chan struct{}),
		progress:  make(chan struct{}),
	}
	s.frames.reset()
	s.syncJournal = fdatasync
	s.indexCommit = s.indexTx
	if err := s.init(); err != nil {
		db.Close()
		return nil, err
	}
	if s.jn, err = openJournal(dir); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.recoverJournal(); err != nil {
		s.jn.close()
		db.Close()
		return nil, err
	}
	go s.writer()
	go s.syncer()
	go s.completer()
	go s.indexer()
	return s, nil
}

// repairUnborn empties the data file at path when it is what a failed
// creation left (an unbornError) and no journal is beside it (the journal
// is created after the file, so a store that ever took an event has one),
// and says whether it did. It holds the file's lock meanwhile, as bbolt
// does, so that a process opening the store at the same time is not undone.
func repairUnborn(path, journal string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	unlock, ok := lockFile(f)
	if !ok {
		return false
	}
	defer unlock()
	if exists(journal) || !errors.As(checkFile(path), new(unbornError)) {
		return false
	}
	return f.Truncate(0) == nil && f.Sync() == nil
}

// exists reports whether something is at path (or Lstat cannot tell).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

func openError(path string, err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%w: %s is held by another process (is another baton serving this data directory?)", eventstore.ErrLocked, path)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping):
		return fmt.Errorf("%w: %s: %v", eventstore.ErrCorrupt, path, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("eventstore: cannot open %s: permission denied (the data directory must be readable and writable by this user)", path)
	case errors.Is(err, syscall.EROFS):
		// A backup's snapshot mounted to be read: Open writes, as the
		// journal goes into the file first; OpenReadOnly does not.
		return fmt.Errorf("eventstore: cannot open %s: the file system is read-only (this command writes to the store, which must be writable for it; baton store check, ledger verify --data and ledger export --data read it where it is)", path)
	}
	return fmt.Errorf("eventstore: open %s: %w", path, err)
}

// init creates the buckets on a new file, checks the format tag on an old one,
// reads every page of its trees, and checks that the newest record is
// readable and where it claims to be.
func (s *Store) init() error {
	err := s.db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			if tx.Bucket(bucketEvents) != nil {
				return fmt.Errorf("%w: %s has events but no meta bucket", eventstore.ErrCorrupt, s.path)
			}
			var err error
			if meta, err = tx.CreateBucket(bucketMeta); err != nil {
				return err
			}
			if err := meta.Put(keyFormat, []byte(formatTag)); err != nil {
				return err
			}
		}
		if got := string(meta.Get(keyFormat)); got != formatTag {
			return fmt.Errorf("%w: %s has format %q, this build reads %q", eventstore.ErrCorrupt, s.path, got, formatTag)
		}
		for _, name := range [][]byte{bucketEvents, bucketStreams, bucketRevs, bucketIDs} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// A damaged page is found where it is read: found only there, it
	// made an error of every append or read that reached it, for as long
	// as the server ran, while it said it was well. Every page of the
	// trees is read here, so that such a file is refused at the start:
	// about 0.2 s a million events once cached, and `baton serve` reads
	// the whole feed at its start anyway. A damaged record is still found
	// by its checksum, by the read that meets it or `baton store check`.
	if err := s.readEveryPage(); err != nil {
		return err
	}
	return s.readHead()
}

// readHead sets head and indexed to the file's newest event, checking that
// it is readable and where it claims to be.
func (s *Store) readHead() error {
	return s.db.View(func(tx *bbolt.Tx) error {
		k, v := tx.Bucket(bucketEvents).Cursor().Last()
		if k == nil {
			return nil
		}
		pos, err := positionKey(k)
		if err != nil {
			return err
		}
		ev, err := decodeRecord(v)
		if err != nil || ev.Position.Commit != pos {
			return fmt.Errorf("%w: %s: newest event at position %d is unreadable", eventstore.ErrCorrupt, s.path, pos)
		}
		s.head.Store(pos)
		s.indexed.Store(pos)
		return nil
	})
}

// readEveryPage walks every bucket to its last key: every branch and leaf
// page of the file's trees is read. bbolt's panic on a damaged page is
// ErrCorrupt here, so that Open closes the file.
func (s *Store) readEveryPage() (err error) {
	defer recoverCorrupt(&err, s.path)
	return s.db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bbolt.Bucket) error {
			c := b.Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
			}
			return nil
		})
	})
}

// recoverJournal moves into the bbolt file the journaled events it lacks:
// appends acknowledged before a crash that the indexer had not committed.
// The journal is then zeroed and starts again at offset 0, so that no frame
// of this run of the store can be taken for the continuation of the next.
func (s *Store) recoverJournal() (err error) {
	defer recoverCorrupt(&err, s.path)
	data, err := s.jn.readAll()
	if err != nil {
		return err
	}
	evs, err := journalEvents(data, s.indexed.Load())
	if err != nil {
		return fmt.Errorf("%w: %s: %v", eventstore.ErrCorrupt, s.jn.path, err)
	}
	if len(evs) > 0 {
		if err := s.db.Update(func(tx *bbolt.Tx) error { return s.indexTx(tx, evs) }); err != nil {
			return fmt.Errorf("eventstore: moving %d journaled events into %s: %w", len(evs), s.path, err)
		}
		last := evs[len(evs)-1].pos
		s.head.Store(last)
		s.indexed.Store(last)
	}
	// Only the part that holds anything is zeroed: after a clean stop that
	// is the frames written since the journal last started again, not the
	// whole file, and a new journal has none.
	if end := int64(len(bytes.TrimRight(data, "\x00"))); end > 0 {
		if err := s.jn.zero(0, min(int64(alignUp(int(end))), s.jn.cap)); err != nil {
			return err
		}
	}
	s.jn.off = 0
	return nil
}

// journalEvents reads the run of frames at the start of data and returns
// the events after position after. The run ends at the first frame that
// fails its checksum or does not continue the positions (left from before
// the journal last started again at 0); its events must then continue the
// file's, else events are missing.
func journalEvents(data []byte, after uint64) ([]pendingEvent, error) {
	var out []pendingEvent
	var next uint64 // position the run continues at; 0: not started
	for len(data) > 0 {
		recs, n, ok := nextFrame(data)
		if !ok {
			break
		}
		frame := make([]pendingEvent, 0, len(recs))
		for _, rec := range recs {
			ev, err := decodeRecord(rec)
			if err != nil {
				return nil, err
			}
			e := pendingEvent{pos: ev.Position.Commit, rev: ev.Revision, stream: ev.StreamID, id: ev.ID, rec: rec, ev: &ev}
			if len(frame) > 0 && e.pos != frame[len(frame)-1].pos+1 {
				return nil, fmt.Errorf("frame jumps from position %d to %d", frame[len(frame)-1].pos, e.pos)
			}
			frame = append(frame, e)
		}
		if next != 0 && frame[0].pos != next {
			break // a frame from before the journal started again
		}
		next = frame[len(frame)-1].pos + 1
		for _, e := range frame {
			if e.pos > after {
				out = append(out, e)
			}
		}
		data = data[n:]
	}
	if len(out) > 0 && out[0].pos != after+1 {
		// The run starts with the first frame written after the journal
		// last started again, when everything before it was in the file.
		return nil, fmt.Errorf("journal continues at position %d, but the data file ends at %d", out[0].pos, after)
	}
	return out, nil
}

// Path is the data file.
func (s *Store) Path() string { return s.path }

// Exclusive implements eventstore.Exclusive: the file lock keeps other
// processes out.
func (s *Store) Exclusive() bool { return true }

// Close commits what is already queued, stops the writer, ends subscriptions
// and closes the file.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.readOnly {
		s.mu.Unlock()
		close(s.stop)
		return s.db.Close()
	}
	close(s.reqs)
	s.mu.Unlock()
	<-s.done
	<-s.syncDone
	close(s.indexStop)
	<-s.indexDone
	close(s.stop)
	var lag error
	if h, x, p := s.head.Load(), s.indexed.Load(), s.failed.Load(); h > x && p != nil {
		// The indexer failed, or stopped at an earlier failure: what it
		// could not move is safe in the journal, and the next open moves
		// it (or says why it cannot). Both causes are named when they
		// differ.
		why := *p
		if s.indexErr != nil && s.indexErr != why {
			why = fmt.Errorf("%v; the indexer: %w", why, s.indexErr)
		}
		lag = fmt.Errorf("eventstore: %s: events %d to %d are in the journal only (moved into the data file at the next open): %w", s.path, x+1, h, why)
	}
	return errors.Join(lag, s.db.Close(), s.jn.close())
}

// Head returns the position of the newest committed (journaled) event.
func (s *Store) Head(ctx context.Context) (eventstore.Position, error) {
	if err := ctx.Err(); err != nil {
		return eventstore.Position{}, err
	}
	h := s.head.Load()
	return eventstore.Position{Commit: h, Prepare: h}, nil
}

// changed returns a channel that is closed at the next commit.
func (s *Store) changed() <-chan struct{} {
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	return s.notify
}

func (s *Store) publish(head uint64) {
	s.notifyMu.Lock()
	s.head.Store(head)
	close(s.notify)
	s.notify = make(chan struct{})
	s.notifyMu.Unlock()
}

// recoverCorrupt converts a panic or memory fault raised while reading the
// mapped file into ErrCorrupt. Baton's own invariants never panic on a read
// path, so what lands here is bbolt meeting bytes it cannot make sense of.
func recoverCorrupt(err *error, path string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %s: %v", eventstore.ErrCorrupt, path, r)
	}
}

// Full is why the store refuses the appends that need more space (the
// disk full), nil when it is not: unlike Failed it passes by itself once
// space is freed.
func (s *Store) Full() error {
	if p := s.full.Load(); p != nil && s.failed.Load() == nil {
		return *p
	}
	return nil
}

// Failed is why the store refuses writes until it is reopened (a failed
// fdatasync or index commit, the disk full, MaxSize), nil while it takes
// them: /healthz says so, for whatever drains or restarts the process.
func (s *Store) Failed() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}
