package projections

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

// Projector turns events into a read model inside the runner's transaction.
type Projector interface {
	// Buckets lists the top-level buckets the projector owns.
	Buckets() [][]byte
	// Apply folds one event into the read model. It must be deterministic:
	// the same events give the same bytes, so a rebuild is byte-identical.
	Apply(tx *bbolt.Tx, ev eventstore.RecordedEvent) error
}

// preparer is a projector that brings a file an older Baton wrote up to
// date when it opens (an index it did not keep, built from what it holds).
type preparer interface {
	Prepare(tx *bbolt.Tx) error
}

var (
	bucketCheckpoint = []byte("checkpoint")
	keyPosition      = []byte("position")
)

// batchSize caps how many events one read-model transaction applies.
const batchSize = 1024

// Runner follows the store's global feed and applies each burst of events to
// every projector in one bbolt transaction, together with the checkpoint, so
// the read models and the checkpoint never disagree.
type Runner struct {
	db         *bbolt.DB
	store      eventstore.Store
	projectors []Projector

	pos      atomic.Pointer[eventstore.Position]
	notifyMu sync.Mutex
	notify   chan struct{}
	failed   atomic.Pointer[error]
	full     atomic.Pointer[error] // why the last commit failed for want of space; nil once one succeeds
	dirty    atomic.Bool           // the position moved past the stored checkpoint

	// OnFull, if set, is told once each time the read-model file's disk
	// fills (the runner then tries again every FullRetry until a commit
	// succeeds).
	OnFull func(error)
	// watches are the reads waiting for one stream's next event, by
	// stream (StreamChanged).
	watchMu sync.Mutex
	watches map[string]*watch

	keys     keyCache // authentication's lookups, dropped whenever the keys stream moves
	heads    eventstore.SharedHead
	keyTails eventstore.SharedHead // of keyTail: authentication's reads of the keys stream's tail
}

// Open opens (or creates) the read-model file at path. The file is
// disposable: deleting it and starting again rebuilds it from position zero.
func Open(path string, store eventstore.Store, projectors ...Projector) (r *Runner, err error) {
	// bbolt panics on a damaged page; a damaged file of derived data is
	// an error here, which OpenOrRebuild answers by rebuilding it. A page
	// past the end of a file cut short (a start on a full disk) is a
	// fault, which kills the process unless it panics instead.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var db *bbolt.DB
	defer func() {
		if v := recover(); v != nil {
			if db != nil {
				db.Close()
			}
			r, err = nil, fmt.Errorf("projections: %s is damaged: %v", path, v)
		}
	}()
	db, err = bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 500 * time.Millisecond, FreelistType: bbolt.FreelistMapType, InitialMmapSize: 256 << 20})
	if err != nil {
		return nil, fmt.Errorf("projections: open %s: %w", path, err)
	}
	// A damaged page panics only where it is read: found later, it made
	// a 500 of every request that read it, for as long as the file
	// lasted, while /healthz said ok. Every page is read here, where the
	// panic (recovered above) has OpenOrRebuild rebuild the file.
	if err := db.View(readEveryPage); err != nil {
		db.Close()
		return nil, fmt.Errorf("projections: %s is damaged: %w", path, err)
	}
	r = &Runner{db: db, store: store, projectors: projectors, notify: make(chan struct{}), heads: eventstore.SharedHead{Store: store}}
	r.keyTails.Store = keyTail{store, r}
	var pos eventstore.Position
	err = db.Update(func(tx *bbolt.Tx) error {
		cp, err := tx.CreateBucketIfNotExists(bucketCheckpoint)
		if err != nil {
			return err
		}
		for _, p := range projectors {
			for _, b := range p.Buckets() {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			if pr, ok := p.(preparer); ok {
				if err := pr.Prepare(tx); err != nil {
					return err
				}
			}
		}
		if v := cp.Get(keyPosition); v != nil {
			if len(v) != 16 {
				return fmt.Errorf("projections: %s: malformed checkpoint", path)
			}
			pos = eventstore.Position{Commit: binary.BigEndian.Uint64(v), Prepare: binary.BigEndian.Uint64(v[8:])}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	r.pos.Store(&pos)
	return r, nil
}

// readEveryPage walks every bucket, nested ones too, to its last key.
func readEveryPage(tx *bbolt.Tx) error {
	var walk func(b *bbolt.Bucket) error
	walk = func(b *bbolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return walk(b.Bucket(k))
			}
			return nil
		})
	}
	return tx.ForEach(func(_ []byte, b *bbolt.Bucket) error { return walk(b) })
}

// OpenOrRebuild opens the read models, and if the file is unreadable moves
// it aside (to AsideName(path, "broken"), which it returns) and starts from
// zero: read models are derived data.
func OpenOrRebuild(path string, store eventstore.Store, projectors ...Projector) (*Runner, string, error) {
	r, err := Open(path, store, projectors...)
	if err == nil || errors.Is(err, os.ErrPermission) {
		return r, "", err
	}
	to := AsideName(path, "broken")
	if rerr := os.Rename(path, to); rerr != nil {
		return nil, "", fmt.Errorf("%w (and moving it aside failed: %v)", err, rerr)
	}
	r, err = Open(path, store, projectors...)
	return r, to, err
}

// KeepAside is how many files moved aside for one reason are kept.
const KeepAside = 3

// AsideName is the name a file at path moved aside for why takes:
// path.why, or while an earlier one holds that name (the evidence of an
// earlier fault), path.why.1 and so on, up to KeepAside files. Past that
// the last of them is replaced: the first ones and the latest are kept,
// and a fault that recurs at every start cannot fill the disk with copies.
func AsideName(path, why string) string {
	name := path + "." + why
	for i := 0; i < KeepAside; i++ {
		n := name
		if i > 0 {
			n = fmt.Sprintf("%s.%d", name, i)
		}
		if _, err := os.Lstat(n); errors.Is(err, os.ErrNotExist) || i == KeepAside-1 {
			return n
		}
	}
	return name
}

// Close writes a pending checkpoint and closes the read-model file. Stop
// Run first.
func (r *Runner) Close() error { return errors.Join(r.Flush(), r.db.Close()) }

// Checkpoint is the position of the last event applied.
func (r *Runner) Checkpoint() eventstore.Position { return *r.pos.Load() }

// Run follows the feed until ctx ends.
func (r *Runner) Run(ctx context.Context) error {
	sub, err := r.store.SubscribeAll(ctx, r.Checkpoint())
	if err != nil {
		return err
	}
	defer sub.Close()
	for {
		evs, err := sub.RecvBatch(batchSize)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.failed.Store(&err)
			r.wake()
			return err
		}
		if err := r.applyWhenRoom(ctx, evs); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.failed.Store(&err)
			r.wake()
			return err
		}
	}
}

// FullRetry is how often the runner tries a commit again while the disk
// is full.
var FullRetry = time.Second

// applyWhenRoom applies evs, trying again while the read-model file's disk
// is full: a failed commit leaves the file as it was (and the projectors
// forget what they held of it), and freeing space is the operator's fix,
// which a stopped process would not see. Meanwhile reads wait for the read
// models as for any lag (ErrBehind after their wait).
func (r *Runner) applyWhenRoom(ctx context.Context, evs []eventstore.RecordedEvent) error {
	for {
		err := r.apply(evs)
		if err == nil || !diskFull(err) {
			if err == nil {
				r.full.Store(nil)
			}
			return err
		}
		if r.full.Swap(&err) == nil && r.OnFull != nil {
			r.OnFull(err)
		}
		select {
		case <-time.After(FullRetry):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Full is why the read models cannot commit for want of space, nil when
// they can.
func (r *Runner) Full() error {
	if p := r.full.Load(); p != nil {
		return *p
	}
	return nil
}

func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// CatchUp applies everything already in the store, then returns. It is what
// a rebuild and the command-line tools use.
func (r *Runner) CatchUp(ctx context.Context) error {
	for {
		evs, err := r.store.ReadAll(ctx, r.Checkpoint(), batchSize)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return r.Flush()
		}
		if err := r.apply(evs); err != nil {
			return err
		}
	}
}

// Selector is an optional Projector method: whether an event concerns the
// read model at all. When no projector wants any event of a batch (usage,
// catalog, idempotency events...), the runner commits nothing and only moves
// its position; the checkpoint is written with the next commit (or by
// Flush), so the feed's other traffic costs the read models no fsync.
type Selector interface {
	Wants(ev eventstore.RecordedEvent) bool
}

func (r *Runner) wanted(evs []eventstore.RecordedEvent) bool {
	for _, p := range r.projectors {
		sel, ok := p.(Selector)
		if !ok {
			return true
		}
		for _, ev := range evs {
			if sel.Wants(ev) {
				return true
			}
		}
	}
	return false
}

// Flush writes the checkpoint if batches were skipped since the last
// commit. Stop Run first, or call it from the goroutine that runs it.
func (r *Runner) Flush() error {
	if !r.dirty.Load() {
		return nil
	}
	last := r.Checkpoint()
	err := r.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketCheckpoint).Put(keyPosition, encodePosition(last)) })
	if err == nil {
		r.dirty.Store(false)
	}
	return err
}

func encodePosition(p eventstore.Position) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), p.Commit)
	return binary.BigEndian.AppendUint64(v, p.Prepare)
}

func (r *Runner) apply(evs []eventstore.RecordedEvent) error {
	last := evs[len(evs)-1].Position
	if !r.wanted(evs) {
		r.dirty.Store(true)
		r.pos.Store(&last)
		r.wake()
		return nil
	}
	err := r.db.Update(func(tx *bbolt.Tx) error {
		for _, ev := range evs {
			for _, p := range r.projectors {
				if err := p.Apply(tx, ev); err != nil {
					return fmt.Errorf("projections: event %s at %+v: %w", ev.ID, ev.Position, err)
				}
			}
		}
		return tx.Bucket(bucketCheckpoint).Put(keyPosition, encodePosition(last))
	})
	if err != nil {
		for _, p := range r.projectors {
			if f, ok := p.(interface{ Forget() }); ok {
				f.Forget()
			}
		}
		return err
	}
	for _, p := range r.projectors {
		if c, ok := p.(interface{ Committed() }); ok {
			c.Committed()
		}
	}
	for _, ev := range evs {
		if ev.StreamID == domain.KeysStream {
			r.keys.invalidate()
			break
		}
	}
	r.dirty.Store(false)
	r.pos.Store(&last)
	r.wake()
	r.wakeStreams(evs)
	return nil
}

func (r *Runner) wake() {
	r.notifyMu.Lock()
	close(r.notify)
	r.notify = make(chan struct{})
	r.notifyMu.Unlock()
}

// Changed returns a channel closed when the read models next move (or the
// runner fails). Take it before reading: a commit that lands after the read
// still closes it, so a waiting reader cannot miss it.
func (r *Runner) Changed() <-chan struct{} {
	r.notifyMu.Lock()
	defer r.notifyMu.Unlock()
	return r.notify
}

// watch is the channel the reads waiting on one stream share, and how
// many they are.
type watch struct {
	ch chan struct{}
	n  int
}

// StreamChanged returns a channel closed when the read models next apply
// an event of stream (take it before reading, as Changed), and unwatch, to
// call once when done waiting. Changed wakes every reader at every event of
// any stream: many waiting reads of one tenant made every other tenant's
// writes wake and check each of them.
func (r *Runner) StreamChanged(stream string) (ch <-chan struct{}, unwatch func()) {
	r.watchMu.Lock()
	defer r.watchMu.Unlock()
	w := r.watches[stream]
	if w == nil {
		if r.watches == nil {
			r.watches = map[string]*watch{}
		}
		w = &watch{ch: make(chan struct{})}
		r.watches[stream] = w
	}
	w.n++
	return w.ch, func() {
		r.watchMu.Lock()
		defer r.watchMu.Unlock()
		if w.n--; w.n == 0 && r.watches[stream] == w {
			delete(r.watches, stream)
		}
	}
}

// wakeStreams wakes the reads waiting on the streams of evs, once applied.
func (r *Runner) wakeStreams(evs []eventstore.RecordedEvent) {
	r.watchMu.Lock()
	defer r.watchMu.Unlock()
	if len(r.watches) == 0 {
		return
	}
	for _, ev := range evs {
		if w := r.watches[ev.StreamID]; w != nil {
			close(w.ch)
			delete(r.watches, ev.StreamID)
		}
	}
}

// ErrBehind is returned by WaitFor when the read models did not reach the
// position in time.
var ErrBehind = errors.New("projections: read models are behind the store")

// WaitFor blocks until the read models include pos, ctx ends, or the runner
// has failed. It is how a reader gets to read its own writes.
func (r *Runner) WaitFor(ctx context.Context, pos eventstore.Position) error {
	for {
		r.notifyMu.Lock()
		ch := r.notify
		r.notifyMu.Unlock()
		if !r.Checkpoint().Less(pos) {
			return nil
		}
		if p := r.failed.Load(); p != nil {
			return fmt.Errorf("%w: %v", ErrBehind, *p)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: at %+v, waiting for %+v", ErrBehind, r.Checkpoint(), pos)
		}
	}
}

// WaitForHead waits until the read models include everything the store had
// committed when it was called, bounded by timeout. Callers at once share
// the store's reads of its head (eventstore.SharedHead): authentication
// waits so for every key it does not know, and a flood of made-up keys cost
// a store round trip each.
func (r *Runner) WaitForHead(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout) // the head's read too: a store that does not answer must not hold the caller
	defer cancel()
	head, err := r.heads.Head(ctx, timeout)
	if err != nil {
		return err
	}
	return r.WaitFor(ctx, head)
}

// Heads is the runner's shared reads of its store's head, for the other
// callers that read it (the health check): one read in flight for all.
func (r *Runner) Heads() *eventstore.SharedHead { return &r.heads }

// View runs fn in a read transaction over the read models.
func (r *Runner) View(fn func(tx *bbolt.Tx) error) error { return r.db.View(fn) }

// Dump writes every key and value of every bucket, sorted, for the rebuild
// test and for debugging.
func (r *Runner) Dump() ([]byte, error) {
	if err := r.Flush(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err := r.db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				fmt.Fprintf(&buf, "%s\t%x\t%x\n", name, k, v)
				return nil
			})
		})
	})
	return buf.Bytes(), err
}
