package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/eventstore"
)

// CheckReport summarises a full check of the data file.
type CheckReport struct {
	Events  uint64
	Streams uint64
	// Bytes is the part of the file in use: the high-water mark of pages.
	// The file itself is longer; it grows ahead in 16 MiB steps.
	Bytes int64
	// Journaled counts, for CheckDir, the events in the journal that the
	// file lacks (acknowledged before a crash, or in a snapshot taken while
	// a server ran): their frames' checksums and positions are checked,
	// and Open moves them into the file. Events does not count them.
	Journaled uint64
}

// CheckDir runs Check on the store in dir without writing to it: the file
// is opened read-only (OpenReadOnly), so that a backup on a read-only file
// system, or in files this user may only read, can be checked, and so that
// a check leaves the files it checks as they were (Open moves the journal
// into the file and zeroes it). The journal is read, not moved: its events
// the file lacks must be a run of sound frames that continues the file's
// positions, and are counted in Journaled.
func CheckDir(ctx context.Context, dir string, opts Options) (rep CheckReport, err error) {
	s, empty, err := openReadOnly(dir, opts)
	if err != nil || s == nil {
		return rep, err // nil, nil: a creation that failed, no event
	}
	defer s.Close()
	if !empty {
		if rep, err = s.Check(ctx); err != nil {
			return rep, err
		}
	}
	rep.Journaled = uint64(s.pend.count())
	return rep, nil
}

// ErrReadOnly is an append to a store opened with OpenReadOnly.
var ErrReadOnly = errors.New("eventstore: the store was opened read-only")

// OpenReadOnly opens the store in dir to read it, writing nothing to it:
// the file is opened read-only, with a shared lock (a server that holds it
// makes this ErrLocked), and the journal's events the file lacks are read
// and served from memory, as the writer's pending events are, not moved
// into the file. Appends fail with ErrReadOnly.
func OpenReadOnly(dir string, opts Options) (*Store, error) {
	s, empty, err := openReadOnly(dir, opts)
	if err == nil && (s == nil || empty) {
		if s != nil {
			s.Close()
		}
		return nil, fmt.Errorf("eventstore: %s holds no store yet: its creation did not finish (baton serve or keys create makes it)", filepath.Join(dir, FileName))
	}
	return s, err
}

// openReadOnly is OpenReadOnly; empty: the file has no buckets yet (bbolt
// made it, Open never committed to it); a nil store and no error: a file
// a failed creation left (checkFile's unbornError), no journal beside it.
func openReadOnly(dir string, opts Options) (s *Store, empty bool, err error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 500 * time.Millisecond
	}
	path := filepath.Join(dir, FileName)
	if err := checkFile(path); errors.As(err, new(unbornError)) && !exists(filepath.Join(dir, JournalFileName)) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var db *bbolt.DB
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", eventstore.ErrCorrupt, path, r)
		}
		if err != nil && db != nil {
			db.Close()
			s = nil
		}
	}()
	db, err = bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: opts.LockTimeout})
	if err != nil {
		return nil, false, openError(path, err)
	}
	s = &Store{db: db, path: path, opts: opts, readOnly: true, pend: newPending(),
		notify: make(chan struct{}), stop: make(chan struct{}), progress: make(chan struct{})}
	err = db.View(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			if tx.Bucket(bucketEvents) != nil {
				return fmt.Errorf("%w: %s has events but no meta bucket", eventstore.ErrCorrupt, path)
			}
			empty = true // created, never opened by Open to the end
			return nil
		}
		if got := string(meta.Get(keyFormat)); got != formatTag {
			return fmt.Errorf("%w: %s has format %q, this build reads %q", eventstore.ErrCorrupt, path, got, formatTag)
		}
		for _, name := range [][]byte{bucketEvents, bucketStreams, bucketRevs, bucketIDs} {
			if tx.Bucket(name) == nil {
				return fmt.Errorf("%w: %s lacks its %s bucket", eventstore.ErrCorrupt, path, name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if !empty {
		if err := s.readEveryPage(); err != nil {
			return nil, false, err
		}
		if err := s.readHead(); err != nil {
			return nil, false, err
		}
	}
	jpath := filepath.Join(dir, JournalFileName)
	data, err := os.ReadFile(jpath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("eventstore: journal %s: %w", jpath, err)
	}
	evs, err := journalEvents(data, s.indexed.Load())
	if err != nil {
		return nil, false, fmt.Errorf("%w: %s: %v", eventstore.ErrCorrupt, jpath, err)
	}
	if len(evs) > 0 && empty {
		return nil, false, fmt.Errorf("%w: %s: the journal holds events, the file no store", eventstore.ErrCorrupt, path)
	}
	for _, e := range evs {
		s.pend.add(e)
	}
	if len(evs) > 0 {
		s.head.Store(evs[len(evs)-1].pos)
	}
	return s, empty, nil
}

// Check reads the whole file in one read transaction and verifies bbolt's
// page structure and Baton's invariants: gapless positions, every record
// readable and where it claims to be, and the stream, revision and id indexes
// agreeing with the records. It is what `baton store check` runs.
func (s *Store) Check(ctx context.Context) (rep CheckReport, err error) {
	// Everything acknowledged is checked: the journaled events go into the
	// file first (read-only, they stay in the journal; CheckDir counts them).
	if !s.readOnly {
		if err := s.waitIndexed(ctx, s.head.Load()); err != nil {
			return rep, err
		}
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(&err, s.path)
	err = s.view(ctx, func(tx *bbolt.Tx) error {
		corrupt := func(format string, args ...any) error {
			return fmt.Errorf("%w: %s: %s", eventstore.ErrCorrupt, s.path, fmt.Sprintf(format, args...))
		}
		events, revs, ids, streams := tx.Bucket(bucketEvents), tx.Bucket(bucketRevs), tx.Bucket(bucketIDs), tx.Bucket(bucketStreams)

		perStream := map[string]uint64{} // events seen per stream
		want := uint64(1)
		c := events.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if want%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			pos, err := positionKey(k)
			if err != nil {
				return err
			}
			if pos != want {
				return corrupt("global feed jumps from %d to %d", want-1, pos)
			}
			ev, err := decodeRecord(v)
			if err != nil || ev.Position.Commit != pos {
				return corrupt("event at position %d: %v", pos, err)
			}
			if pv := ids.Get(ev.ID[:]); !bytes.Equal(pv, k) {
				return corrupt("id index for %s does not point at position %d", ev.ID, pos)
			}
			perStream[ev.StreamID]++
			want++
		}
		rep.Events = want - 1
		rep.Bytes = tx.Size()
		if n := uint64(ids.Stats().KeyN); n != rep.Events {
			return corrupt("id index holds %d entries for %d events", n, rep.Events)
		}
		// Every stream's index names, revision by revision, events that
		// say they are that revision of that stream; with the per-stream
		// counts above this shows each stream is gapless and complete.
		index := streamIndex{path: s.path, streams: streams, revs: revs}
		var chunks uint64
		sc := streams.Cursor()
		for k, _ := sc.First(); k != nil; k, _ = sc.Next() {
			stream := string(k)
			h, err := index.head(stream)
			if err != nil {
				return err
			}
			if perStream[stream] != h.last+1 {
				return corrupt("stream %q head is revision %d but it holds %d events", stream, h.last, perStream[stream])
			}
			for rev := uint64(0); rev <= h.last; {
				ps, err := index.positions(stream, rev, 1024)
				if err != nil {
					return err
				}
				if len(ps) == 0 {
					return corrupt("stream %q index ends at revision %d of %d", stream, rev, h.last)
				}
				for _, p := range ps {
					ev, err := s.load(events, binary.BigEndian.AppendUint64(nil, p))
					if err != nil {
						return err
					}
					if ev.StreamID != stream || ev.Revision != rev {
						return corrupt("stream %q revision %d points at %q revision %d", stream, rev, ev.StreamID, ev.Revision)
					}
					rev++
				}
			}
			chunks += (h.last + 1) / chunkSize
			delete(perStream, stream)
			rep.Streams++
		}
		if n := uint64(revs.Stats().KeyN); n != chunks {
			return corrupt("stream index holds %d sealed chunks, the heads account for %d", n, chunks)
		}
		for st := range perStream {
			return corrupt("stream %q has events but no head", st)
		}
		// bbolt's own page accounting last: it walks the pages on a goroutine
		// of its own, where a fault could not be recovered, so it runs only
		// once the walk above has read every page safely.
		var errs []error
		for e := range tx.Check() {
			errs = append(errs, e)
		}
		if len(errs) > 0 {
			return corrupt("page structure: %v", errors.Join(errs[:min(len(errs), 10)]...))
		}
		return nil
	})
	return rep, err
}
