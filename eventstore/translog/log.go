package translog

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	bbolt "go.etcd.io/bbolt"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

// FileName is the log's file in the data directory.
const FileName = "translog.db"

// CheckpointStream is the stream signed checkpoints are claimed in: each
// is appended with the expected revision after the last one its signer
// saw, so of two replicas signing at once one fails, and a tree size is
// signed once.
const CheckpointStream = "log-checkpoints"

// EventCheckpointSigned is the type of the checkpoint stream's events.
const EventCheckpointSigned = "LogCheckpointSigned"

// DefaultInterval is how often, at most, a checkpoint is signed while
// events arrive.
const DefaultInterval = 500 * time.Millisecond

var (
	bucketMeta        = []byte("meta")
	bucketHashes      = []byte("hashes")      // stored hash index -> 32 bytes
	bucketEntries     = []byte("entries")     // leaf index -> canonical bytes
	bucketLeaves      = []byte("leaves")      // handoff id, 0, seq -> leaf index
	bucketCheckpoints = []byte("checkpoints") // tree size -> signed note
	keySize           = []byte("size")
	keyPosition       = []byte("position")
	keyClaims         = []byte("claims") // events read from CheckpointStream
	keyClaimed        = []byte("claimed")
	keyOwnFork        = []byte("ownfork")      // the first fork of this log's own key (ownForkRecord)
	bucketCosigs      = []byte("cosignatures") // tree size -> witnesses' signature lines
	// claim's revision (or "unheld/" and a size, KeepUnheld) ->
	// ownForkRecord of a contradicting claim read without a verifier key,
	// which a later open with the key checks
	bucketKeylessForks = []byte("keylessforks")
)

// ErrNotFound: the tile, entry or checkpoint does not exist (yet).
var ErrNotFound = errors.New("translog: not found")

// Options configure a Log.
type Options struct {
	// Origin is the checkpoints' first line; the signer's key name when
	// empty. Without either, the log takes the checkpoints the store holds
	// whatever their origin (they are still checked against its tree).
	Origin string
	// SignerKey is a sumdb/note private key (PRIVATE+KEY+name+hash+key);
	// without one the log is built and served but signs nothing.
	SignerKey string
	// VerifierKey checks the signatures of the checkpoints found in the
	// store; derived from SignerKey when empty.
	VerifierKey string
	// Interval is the least time between two checkpoints (DefaultInterval
	// when 0).
	Interval time.Duration
	// OnFork is told of a checkpoint in the store whose root is not this
	// log's at its size (or that claims more entries than precede it).
	OnFork func(Fork)
	// OnHalt is told once, by RunSigner, when it stops signing because
	// the log holds a fork of its own key (Log.OwnFork).
	OnHalt func(Fork)
	// OnSignError is told of each claim RunSigner could not append (the
	// store unreachable, say); it tries again after a pause.
	OnSignError func(error)
	// OnCheckpoint is told of each checkpoint this log takes as its latest.
	OnCheckpoint func(Checkpoint)
	// OnFull is told once each time the log's file cannot grow (the disk
	// full); Run tries again every FullRetry until a commit succeeds.
	OnFull func(error)
	// Witnesses are the verifier keys (C2SP tlog-cosignature, type 0x04)
	// of the witnesses whose cosignatures the log takes and serves.
	Witnesses []string
	// SignedFile, when set, records the latest checkpoint each key signed
	// (SignedFileName beside the log's file): written before a claim is
	// appended, it outlives the log's file (UnheldSigned).
	SignedFile string
	// ReadOnly opens an existing file to read it as it is (no Run or
	// CatchUp): a tool without the key must not read the feed on into
	// the server's file, past claims it cannot check.
	ReadOnly bool
}

// Fork is a signed checkpoint that does not match the log built here.
type Fork struct {
	Checkpoint Checkpoint
	Ours       tlog.Hash // the root at its size here (zero when beyond)
	Size       int64     // this log's size when the checkpoint was read
	Reason     string
	// Own: it is of this log's origin and its signature verifies with
	// this log's key. This log signed a tree other than the one built
	// here, and signs nothing more while it holds the claim (RunSigner).
	Own bool
}

func (f Fork) String() string {
	return fmt.Sprintf("checkpoint %s/%d root %s: %s", f.Checkpoint.Origin, f.Checkpoint.Size, f.Checkpoint.Root, f.Reason)
}

// Log is one process's copy of the transparency log.
type Log struct {
	db        *bbolt.DB
	store     eventstore.Store
	origin    string
	anyOrigin bool // no origin given and no key: claims of any origin are taken
	signer    note.Signer
	verifier  note.Verifier
	vkey      string
	interval  time.Duration
	witnesses []note.Verifier
	onFork    func(Fork)
	onHalt    func(Fork)
	onSignErr func(error)
	onCP      func(Checkpoint)
	onFull    func(error)
	signedAt  string                // Options.SignedFile
	signedMu  sync.Mutex            // one writer of signedAt at a time
	signed    signedRecords         // signedAt's records, read at the first signature
	full      atomic.Pointer[error] // why the last commit failed for want of space; nil once one succeeds
	// failUpdate, set by tests, fails apply's commits while it returns
	// an error.
	failUpdate func() error

	mu        sync.RWMutex
	size      int64
	pos       eventstore.Position
	claims    uint64 // events of CheckpointStream read
	claimed   int64  // largest size claimed in CheckpointStream
	claimedAt time.Time
	latest    []byte // the signed note of the latest checkpoint matching this log
	latestCP  Checkpoint
	cosigs    []byte // witnesses' signature lines of the latest checkpoint
	forks     int    // signed checkpoints read that do not match this log
	lastFork  Fork
	ownFork   *Fork // the first fork of this log's own key: no signing
	changed   chan struct{}
}

// checkpointRecord is the data of an EventCheckpointSigned event.
type checkpointRecord struct {
	Size       int64  `json:"size"`
	Root       string `json:"root"`
	Checkpoint string `json:"checkpoint"`
}

// ownForkRecord is the fork of the log's own key kept in its file, so
// that a restart, which reads the feed on from where it was, still knows
// it: the claim's signed note, checked again at each Open.
type ownForkRecord struct {
	Checkpoint string `json:"checkpoint"`
	Ours       string `json:"ours,omitempty"`
	Size       int64  `json:"size"`
	Reason     string `json:"reason"`
}

// Open opens (or creates) the log file at path; Run or CatchUp fill it
// from store's feed.
func Open(path string, store eventstore.Store, opts Options) (*Log, error) {
	l, err := newLog(store, opts)
	if err != nil {
		return nil, err
	}
	return l.openFile(path, opts.ReadOnly)
}

// CheckOptions refuses the options Open refuses (the keys, the
// witnesses, the origin) without opening a file: a command checks its
// settings before it creates anything.
func CheckOptions(opts Options) error {
	_, err := newLog(nil, opts)
	return err
}

// newLog is the log opts describe, its file not yet open.
func newLog(store eventstore.Store, opts Options) (*Log, error) {
	l := &Log{store: store, interval: opts.Interval, onFork: opts.OnFork, onHalt: opts.OnHalt, onSignErr: opts.OnSignError, onCP: opts.OnCheckpoint, onFull: opts.OnFull, signedAt: opts.SignedFile, changed: make(chan struct{})}
	if l.interval <= 0 {
		l.interval = DefaultInterval
	}
	if opts.SignerKey != "" {
		s, err := note.NewSigner(strings.TrimSpace(opts.SignerKey))
		if err != nil {
			// The note library speaks of a "verifier id" whatever the key:
			// say which key this is, and which one is wanted.
			what := "is not"
			if _, verr := note.NewVerifier(strings.TrimSpace(opts.SignerKey)); verr == nil {
				what = "is a verifier key (name+hash+key), the one to publish, not"
			}
			return nil, fmt.Errorf("transparency log: the signing key %s a signing key as baton log keygen writes it (PRIVATE+KEY+name+hash+key): %w", what, err)
		}
		l.signer = s
		if opts.VerifierKey == "" {
			opts.VerifierKey, err = VerifierKeyOf(strings.TrimSpace(opts.SignerKey))
			if err != nil {
				return nil, err
			}
		}
	}
	if opts.VerifierKey != "" {
		v, err := note.NewVerifier(opts.VerifierKey)
		if err != nil {
			return nil, fmt.Errorf("transparency log: the verifier key: %w", err)
		}
		l.verifier, l.vkey = v, opts.VerifierKey
	}
	ws, err := NewWitnessVerifiers(opts.Witnesses)
	if err != nil {
		return nil, fmt.Errorf("transparency log: %w", err)
	}
	l.witnesses = ws
	l.origin = opts.Origin
	if l.origin == "" && l.signer != nil {
		l.origin = l.signer.Name()
	}
	if l.origin == "" {
		l.origin, l.anyOrigin = "baton", true
	}
	if err := CheckOrigin(l.origin); err != nil {
		return nil, fmt.Errorf("transparency log: %w", err)
	}
	return l, nil
}

// CheckOrigin refuses an origin no checkpoint can carry; baton log keygen
// checks a key's name with it, as the key's name is the origin by default.
func CheckOrigin(origin string) error {
	if strings.ContainsAny(origin, "\n") || strings.TrimSpace(origin) != origin {
		return fmt.Errorf("origin %q: one line without surrounding spaces", origin)
	}
	// A signed note is UTF-8 without control characters: note.Sign does not
	// check, note.Open does, and a checkpoint that does not open is a fork
	// of this log whose size is never claimed (signed again at once).
	if !utf8.ValidString(origin) || strings.ContainsFunc(origin, func(r rune) bool { return r < 0x20 }) {
		return fmt.Errorf("origin %q: a signed note's text is UTF-8 without control characters", origin)
	}
	// Every checkpoint must read back (ParseCheckpoint): one that does not
	// is a fork of this log, and its size is never claimed.
	if n := len(Checkpoint{Origin: origin, Size: 1<<63 - 1}.Text()); n > maxCheckpointText {
		return fmt.Errorf("origin of %d bytes: a checkpoint would be longer than %d bytes", len(origin), maxCheckpointText)
	}
	return nil
}

// ErrDamaged is a log file bbolt cannot read (a damaged page): derived
// data, rebuilt from the store by whoever opened it.
var ErrDamaged = errors.New("transparency log: the file is damaged")

// ErrAnotherLog is a log file whose checkpoints are another log's: signed
// with another key, or of another origin (a new key is a new log,
// operations.md). Its tree is this store's, but the checkpoints it took
// and the claims it counted are not this log's: it is rebuilt.
var ErrAnotherLog = errors.New("the checkpoints the file took are another log's")

// openFile opens the log's file; bbolt's panic on a damaged page is
// ErrDamaged.
func (l *Log) openFile(path string, readOnly bool) (_ *Log, err error) {
	// A page past the end of a file cut short (a start on a full disk) is
	// a fault, which kills the process unless it panics instead.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var db *bbolt.DB
	defer func() {
		if v := recover(); v != nil {
			if db != nil {
				db.Close()
			}
			err = fmt.Errorf("%w: %s: %s", ErrDamaged, path, panicText(v))
		}
	}()
	// bbolt rebuilds the freelist (below) on a goroutine of its own, where
	// a damaged page's panic cannot be recovered: every page is read here
	// first, on this one.
	// A file whose lock another process holds (a server on this data
	// directory) is sound: not damaged, which is moved aside and rebuilt.
	held := func() error {
		return fmt.Errorf("transparency log: %s is held by another process (is a baton serving with this data directory?)", path)
	}
	if err := readEveryPage(path); errors.Is(err, bbolt.ErrTimeout) {
		return nil, held()
	} else if errors.Is(err, fs.ErrPermission) { // this user's, not the file's
		return nil, fmt.Errorf("transparency log: %w (the data directory must be readable and writable by this user)", err)
	} else if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDamaged, path, err)
	}
	// The freelist is not written at each commit (bbolt rebuilds it when
	// the file opens): the log's commits are frequent and only append.
	db, err = bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 500 * time.Millisecond, FreelistType: bbolt.FreelistMapType, NoFreelistSync: true, ReadOnly: readOnly})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, held()
	}
	if err != nil {
		return nil, fmt.Errorf("transparency log: open %s: %w", path, err)
	}
	l.db = db
	begin := db.Update
	if readOnly {
		begin = db.View
	}
	err = begin(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketHashes, bucketEntries, bucketLeaves, bucketCheckpoints, bucketCosigs, bucketKeylessForks} {
			if readOnly && bytes.Equal(b, bucketKeylessForks) {
				continue // files from before it have none
			}
			if readOnly {
				if tx.Bucket(b) == nil {
					return fmt.Errorf("%w: no %s bucket", ErrDamaged, b)
				}
				continue
			}
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		m := tx.Bucket(bucketMeta)
		l.size = int64(getU64(m.Get(keySize)))
		l.claims = getU64(m.Get(keyClaims))
		l.claimed = int64(getU64(m.Get(keyClaimed)))
		if p := m.Get(keyPosition); len(p) == 16 {
			l.pos = eventstore.Position{Commit: binary.BigEndian.Uint64(p), Prepare: binary.BigEndian.Uint64(p[8:])}
		}
		l.ownFork = l.readOwnFork(m.Get(keyOwnFork))
		if kf := tx.Bucket(bucketKeylessForks); l.ownFork == nil && l.verifier != nil && kf != nil {
			// Forks read while the log had no key: the first of this key
			// is its own, as if read with the key.
			c := kf.Cursor()
			for k, v := c.First(); k != nil && l.ownFork == nil; k, v = c.Next() {
				if l.ownFork = l.readOwnFork(v); l.ownFork != nil && !readOnly {
					if err := m.Put(keyOwnFork, v); err != nil {
						return err
					}
				}
			}
		}
		if l.ownFork != nil {
			l.forks, l.lastFork = 1, *l.ownFork // at least that one was read
		}
		if k, v := tx.Bucket(bucketCheckpoints).Cursor().Last(); k != nil {
			l.latest = append([]byte(nil), v...)
			l.cosigs = bytes.Clone(tx.Bucket(bucketCosigs).Get(k))
			l.latestCP, err = l.openCheckpoint(l.latest)
			if err == nil && l.latestCP.Origin != l.origin && !l.anyOrigin {
				err = fmt.Errorf("its origin is %q, not %q", l.latestCP.Origin, l.origin)
			}
			if err != nil {
				return fmt.Errorf("%w (the latest: %v)", ErrAnotherLog, err)
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("transparency log: %s: %w", path, err)
	}
	return l, nil
}

// readOwnFork reads the fork of the log's own key its file kept: nil when
// there is none, or when its claim is not of this key and origin (the file
// was built under a key since replaced: that claim is another log's).
func (l *Log) readOwnFork(b []byte) *Fork {
	var rec ownForkRecord
	if b == nil || json.Unmarshal(b, &rec) != nil || l.verifier == nil {
		return nil
	}
	cp, err := l.openCheckpoint([]byte(rec.Checkpoint))
	if err != nil || cp.Origin != l.origin && !l.anyOrigin {
		return nil
	}
	f := &Fork{Checkpoint: cp, Size: rec.Size, Reason: rec.Reason, Own: true}
	if rec.Ours != "" {
		f.Ours, _ = tlog.ParseHash(rec.Ours)
	}
	return f
}

// KeepUnheld keeps signed, the latest checkpoint of the file this log was
// rebuilt from, when the rebuilt log does not hold it (a store restored
// from a backup taken before it was signed): without the key whose it is
// cannot be told, so it is kept as a fork read without the key, and an open
// with the key finds it its own (openFile) and signs nothing over it.
func (l *Log) KeepUnheld(signed []byte, reason string) error {
	cp, err := ParseCheckpoint(noteText(signed))
	if err != nil {
		return fmt.Errorf("transparency log: %w", err)
	}
	rec := ownForkRecord{Checkpoint: string(signed), Size: l.Size(), Reason: reason}
	if cp.Size <= rec.Size {
		if ours, err := l.Root(cp.Size); err == nil {
			rec.Ours = ours.String()
		}
	}
	b, _ := json.Marshal(rec)
	return l.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketKeylessForks).Put(append([]byte("unheld/"), u64(uint64(cp.Size))...), b)
	})
}

// Unheld is the first checkpoint of this log's origin that the log file at
// path (one moved aside: another key's, a damaged or a rebuilt one) keeps
// signed and this log does not hold (its tree at that size has another
// root, or it is smaller), if any: the latest the file took of this key,
// the forks of this key it kept, and the latest it took of this origin
// under another key (Own false). Whatever a key signed stays signed, so a
// checkpoint signed here would be a second tree of the log: a file moved
// aside when another key took over held the only record of what the old
// key signed past a restore; and a new key of the same origin would sign
// a second tree of the same log name. Without a verifier key nothing can
// be told (nil).
func (l *Log) Unheld(path string) (_ *Fork, err error) {
	if l.verifier == nil {
		return nil, nil
	}
	// Read-only, bbolt reads only the pages asked for, on this goroutine
	// (no freelist): a few pages of a file of any size, at every start.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // a file cut short
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %s: %s", ErrDamaged, path, panicText(v))
		}
	}()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 500 * time.Millisecond})
	if err != nil {
		return nil, fmt.Errorf("transparency log: open %s: %w", path, err)
	}
	defer db.Close()
	var signed [][]byte
	var other []byte // the latest of this origin, whoever signed it
	err = db.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(bucketCheckpoints); b != nil {
			// The latest of this key: those before it are of its tree.
			c := b.Cursor()
			for k, v := c.Last(); k != nil; k, v = c.Prev() {
				if other == nil {
					if cp, err := ParseCheckpoint(noteText(v)); err == nil && cp.Origin == l.origin {
						other = bytes.Clone(v)
					}
				}
				if cp, err := l.openCheckpoint(v); err == nil && (cp.Origin == l.origin || l.anyOrigin) {
					signed = append(signed, bytes.Clone(v))
					break
				}
			}
		}
		var recs [][]byte
		if m := tx.Bucket(bucketMeta); m != nil {
			recs = append(recs, m.Get(keyOwnFork))
		}
		if kf := tx.Bucket(bucketKeylessForks); kf != nil {
			kf.ForEach(func(_, v []byte) error { recs = append(recs, v); return nil })
		}
		for _, r := range recs {
			var rec ownForkRecord
			if r != nil && json.Unmarshal(r, &rec) == nil {
				signed = append(signed, []byte(rec.Checkpoint))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("transparency log: %s: %w", path, err)
	}
	held := l.unheld
	for _, s := range signed {
		cp, err := l.openCheckpoint(s)
		if err != nil || cp.Origin != l.origin && !l.anyOrigin {
			continue // another key's or origin's: another log
		}
		if f := held(cp); f != nil {
			f.Own = true
			return f, nil
		}
	}
	// Another key's checkpoint of this origin: the file took it from the
	// store, checked against its tree (or signed it), so it is a tree of
	// this log's name.
	if other != nil {
		if cp, err := ParseCheckpoint(noteText(other)); err == nil {
			return held(cp), nil
		}
	}
	return nil, nil
}

// unheld is the fork cp makes with this log: nil when the log holds it
// (its tree at cp's size has cp's root).
func (l *Log) unheld(cp Checkpoint) *Fork {
	if cp.Size > l.Size() {
		return &Fork{Checkpoint: cp, Size: l.Size(), Reason: fmt.Sprintf("it claims %d entries where this log has %d", cp.Size, l.Size())}
	}
	if root, err := l.Root(cp.Size); err != nil || root != cp.Root {
		return &Fork{Checkpoint: cp, Ours: root, Size: l.Size(), Reason: fmt.Sprintf("this log's root at size %d is %s", cp.Size, root)}
	}
	return nil
}

// VerifierKeyOf derives the verifier key (name+hash+key) of a sumdb/note
// Ed25519 signing key.
func VerifierKeyOf(skey string) (string, error) {
	// PRIVATE+KEY+name+hash+base64(alg || seed)
	parts := strings.SplitN(skey, "+", 5)
	if len(parts) != 5 || parts[0] != "PRIVATE" || parts[1] != "KEY" {
		return "", errors.New("transparency log: the signing key is not PRIVATE+KEY+name+hash+key")
	}
	return ed25519VerifierKey(parts[2], parts[4])
}

// Close closes the log file.
func (l *Log) Close() error { return l.db.Close() }

// Origin is the checkpoints' origin line.
func (l *Log) Origin() string { return l.origin }

// VerifierKey is the key checkpoints are checked with ("" without one).
func (l *Log) VerifierKey() string { return l.vkey }

// Signs reports whether this log holds the signing key.
func (l *Log) Signs() bool { return l.signer != nil }

// Size is the number of entries in the log.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.size
}

// Position is the last feed position the log has read.
func (l *Log) Position() eventstore.Position {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.pos
}

// Changed is closed at the next change of the size or the checkpoint.
func (l *Log) Changed() <-chan struct{} {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.changed
}

// Checkpoint is the latest signed checkpoint that matches this log (its
// signed note, with the configured witnesses' cosignatures taken for it),
// or nil before the first.
func (l *Log) Checkpoint() ([]byte, Checkpoint) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.latest == nil || len(l.cosigs) == 0 {
		return l.latest, l.latestCP
	}
	return append(append([]byte(nil), l.latest...), l.cosigs...), l.latestCP
}

// Forks is how many signed checkpoints this log read that do not match
// it, and the last of them.
func (l *Log) Forks() (int, Fork) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.forks, l.lastFork
}

// OwnFork is the first checkpoint of this log's own key (its origin, its
// signature verifying) that the tree built here contradicts, if any: the
// store no longer holds what the key signed. While there is one, no
// checkpoint is signed (RunSigner). The claim stays in the store: the
// fork goes with the store the key signed (restored, the log rebuilt), or
// with a new key and origin, which makes the claim another log's.
func (l *Log) OwnFork() (Fork, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.ownFork == nil {
		return Fork{}, false
	}
	return *l.ownFork, true
}

// Run follows the store's feed until ctx ends.
func (l *Log) Run(ctx context.Context) error {
	sub, err := l.store.SubscribeAll(ctx, l.Position())
	if err != nil {
		return err
	}
	defer sub.Close()
	feed, stop := eventstore.Batches(sub, 1000)
	defer stop()
	stopped := func(err error) error {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("transparency log: %w", err)
	}
	for {
		var b eventstore.Batch
		select {
		case b = <-feed:
		case <-ctx.Done():
			return nil
		}
		if b.Err != nil {
			return stopped(b.Err)
		}
		// What arrives within applyLinger joins this batch: one file
		// commit (and its fsync) for many events instead of one each,
		// which under load slowed the callbacks. A checkpoint is signed
		// at most every Interval anyway.
		evs := b.Events
		var failed error
		linger := time.NewTimer(applyLinger)
	collect:
		for len(evs) < maxApply {
			select {
			case b := <-feed:
				if b.Err != nil {
					failed = b.Err
					break collect
				}
				evs = append(evs, b.Events...)
			case <-linger.C:
				break collect
			case <-ctx.Done():
				break collect
			}
		}
		linger.Stop()
		if err := l.applyWhenRoom(ctx, evs); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if failed != nil {
			return stopped(failed)
		}
	}
}

// FullRetry is how long Run waits before it tries a commit again while the
// disk is full, doubling up to 30 times as long: each failed commit
// rebuilds bbolt's free page list by walking the file (it is not written
// at commits, openFile), which on a large log is not to be done every
// second.
var FullRetry = time.Second

// applyWhenRoom applies evs, trying again while the log's file cannot grow
// (the disk full): the failed commit left the file and the log as they
// were, and the log is derived data, which must not stop the server; it
// goes on once space is freed.
func (l *Log) applyWhenRoom(ctx context.Context, evs []eventstore.RecordedEvent) error {
	pause := FullRetry
	for {
		err := l.apply(evs)
		if err == nil || !(errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
			if err == nil {
				l.full.Store(nil)
			}
			return err
		}
		if l.full.Swap(&err) == nil && l.onFull != nil {
			l.onFull(err)
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return ctx.Err()
		}
		pause = min(2*pause, 30*FullRetry)
	}
}

// Full is why the log's file cannot take the feed's events for want of
// space, nil when it can.
func (l *Log) Full() error {
	if p := l.full.Load(); p != nil {
		return *p
	}
	return nil
}

// applyLinger is how long the follower gathers events into one commit of
// the log's file, and maxApply how many at most.
const (
	applyLinger = 100 * time.Millisecond
	maxApply    = 10_000
)

// CatchUp reads the feed up to its head, then returns: a rebuild from a
// new file, or the tools.
func (l *Log) CatchUp(ctx context.Context) error {
	for {
		evs, err := l.store.ReadAll(ctx, l.Position(), 5000)
		if err != nil {
			return fmt.Errorf("transparency log: %w", err)
		}
		if len(evs) == 0 {
			return nil
		}
		if err := l.apply(evs); err != nil {
			return err
		}
	}
}

// Leaf returns the log entry of a stored event: the canonical bytes of a
// handoff lifecycle event, the ones its chain hash covers. Events of
// other streams, and those whose metadata cannot be read or whose data is
// not canonical JSON, are not in the log (every replica skips the same).
func Leaf(ev eventstore.RecordedEvent) (handoffID string, entry []byte, ok bool) {
	id, isHandoff := strings.CutPrefix(ev.StreamID, domain.StreamID(""))
	if !isHandoff || id == "" || ev.Unreadable != "" {
		return "", nil, false
	}
	c, err := domain.Canonical(id, ev.Revision+1, ev.Type, ev.Metadata.Actor, ev.Metadata.RecordedAt, ev.Data)
	if err != nil {
		return "", nil, false
	}
	return id, c, true
}

func (l *Log) apply(evs []eventstore.RecordedEvent) error {
	l.mu.RLock()
	n, claims, claimed, latest, latestCP, cosigs, own := l.size, l.claims, l.claimed, l.latest, l.latestCP, l.cosigs, l.ownFork
	l.mu.RUnlock()
	var forks []Fork
	var newOwn []byte // the record of a first fork of the own key
	var seen []Checkpoint
	pos := evs[len(evs)-1].Position
	update := l.db.Update
	if l.failUpdate != nil {
		update = func(fn func(*bbolt.Tx) error) error {
			if err := l.failUpdate(); err != nil {
				return err
			}
			return l.db.Update(fn)
		}
	}
	err := update(func(tx *bbolt.Tx) error {
		hb, eb, lb, cb, cosb := tx.Bucket(bucketHashes), tx.Bucket(bucketEntries), tx.Bucket(bucketLeaves), tx.Bucket(bucketCheckpoints), tx.Bucket(bucketCosigs)
		// Hashes and entries are written in key order, only appended:
		// full pages (bbolt's default leaves half of each split page free).
		hb.FillPercent, eb.FillPercent = 0.95, 0.95
		hr := hashReader(hb)
		for _, ev := range evs {
			if ev.StreamID == CheckpointStream {
				claims = ev.Revision + 1
				if ev.Type == EventCheckpointCosigned {
					size, lines, err := l.readCosigned(ev, cb, cosb)
					if err != nil {
						return err
					}
					if size > 0 && size == latestCP.Size {
						cosigs = lines
					}
					continue
				}
				cp, signed, fork := l.readClaim(ev, n, hr)
				// A claim this key did not sign claims no size of this
				// log: counted, a forged one would keep it from signing.
				if cp.Size > claimed && (fork == nil || fork.Own) {
					claimed = cp.Size
				}
				if fork != nil {
					forks = append(forks, *fork)
					if fork.Own && own == nil {
						own = fork
						newOwn = ownRecord(ev, *fork)
					}
					if l.verifier == nil {
						// Whose it is cannot be told here: a later open
						// with the key tells (openFile).
						if err := tx.Bucket(bucketKeylessForks).Put(u64(ev.Revision), ownRecord(ev, *fork)); err != nil {
							return err
						}
					}
					continue
				}
				if signed == nil || cp.Size <= latestCP.Size && latest != nil {
					continue
				}
				if err := cb.Put(u64(uint64(cp.Size)), signed); err != nil {
					return err
				}
				latest, latestCP, cosigs = signed, cp, nil
				seen = append(seen, cp)
				continue
			}
			id, entry, ok := Leaf(ev)
			if !ok {
				continue
			}
			hs, err := tlog.StoredHashes(n, entry, hr)
			if err != nil {
				return err
			}
			at := tlog.StoredHashIndex(0, n)
			for i, h := range hs {
				if err := hb.Put(u64(uint64(at+int64(i))), append([]byte(nil), h[:]...)); err != nil {
					return err
				}
			}
			if err := eb.Put(u64(uint64(n)), entry); err != nil {
				return err
			}
			if err := lb.Put(leafKey(id, ev.Revision+1), u64(uint64(n))); err != nil {
				return err
			}
			n++
		}
		m := tx.Bucket(bucketMeta)
		p := make([]byte, 16)
		binary.BigEndian.PutUint64(p, pos.Commit)
		binary.BigEndian.PutUint64(p[8:], pos.Prepare)
		if newOwn != nil {
			if err := m.Put(keyOwnFork, newOwn); err != nil {
				return err
			}
		}
		return errors.Join(m.Put(keySize, u64(uint64(n))), m.Put(keyPosition, p), m.Put(keyClaims, u64(claims)), m.Put(keyClaimed, u64(uint64(claimed))))
	})
	if err != nil {
		return fmt.Errorf("transparency log: %w", err)
	}
	l.mu.Lock()
	grew := n != l.size || len(seen) > 0 || claims != l.claims // cosignatures come as claims too
	l.size, l.pos, l.claims, l.latest, l.latestCP, l.cosigs, l.ownFork = n, pos, claims, latest, latestCP, cosigs, own
	if claimed != l.claimed {
		l.claimed, l.claimedAt = claimed, time.Now()
	}
	if grew {
		close(l.changed)
		l.changed = make(chan struct{})
	}
	if len(forks) > 0 {
		l.forks += len(forks)
		l.lastFork = forks[len(forks)-1]
	}
	l.mu.Unlock()
	for _, f := range forks {
		if l.onFork != nil {
			l.onFork(f)
		}
	}
	for _, cp := range seen {
		if l.onCP != nil {
			l.onCP(cp)
		}
	}
	return nil
}

// ownRecord is the record kept of a fork of the own key read in ev.
func ownRecord(ev eventstore.RecordedEvent, f Fork) []byte {
	var rec checkpointRecord
	json.Unmarshal(ev.Data, &rec) // readClaim read it
	own := ownForkRecord{Checkpoint: rec.Checkpoint, Size: f.Size, Reason: f.Reason}
	if f.Ours != (tlog.Hash{}) {
		own.Ours = f.Ours.String()
	}
	b, _ := json.Marshal(own)
	return b
}

// readClaim checks a checkpoint found in the store against the log as
// built here at that point of the feed (n entries). It returns the
// checkpoint and its signed note, or the fork it shows. A claim that
// cannot be read names no size and is skipped.
func (l *Log) readClaim(ev eventstore.RecordedEvent, n int64, hr tlog.HashReader) (Checkpoint, []byte, *Fork) {
	var rec checkpointRecord
	if ev.Type != EventCheckpointSigned || json.Unmarshal(ev.Data, &rec) != nil {
		return Checkpoint{}, nil, nil
	}
	signed := []byte(rec.Checkpoint)
	if c, err := ParseCheckpoint(noteText(signed)); err == nil && c.Origin != l.origin && !l.anyOrigin {
		// Another log's checkpoint: one signed with the key this one
		// replaced (a new key is a new origin, operations.md). Not a fork
		// of this log, and no size of it is claimed.
		return Checkpoint{}, nil, nil
	}
	cp, err := l.openCheckpoint(signed)
	if err != nil {
		c, _ := ParseCheckpoint(noteText(signed))
		return c, nil, &Fork{Checkpoint: c, Size: n, Reason: err.Error()}
	}
	// From here the claim is of this log's key (when it has one): a
	// second tree under it is the key's own fork.
	own := l.verifier != nil
	if cp.Size > n {
		return cp, nil, &Fork{Checkpoint: cp, Size: n, Reason: fmt.Sprintf("it claims %d entries where %d precede it in the feed", cp.Size, n), Own: own}
	}
	ours, err := tlog.TreeHash(cp.Size, hr)
	if err != nil {
		return cp, nil, &Fork{Checkpoint: cp, Size: n, Reason: err.Error(), Own: own}
	}
	if ours != cp.Root {
		return cp, nil, &Fork{Checkpoint: cp, Ours: ours, Size: n, Reason: fmt.Sprintf("this log's root at size %d is %s", cp.Size, ours), Own: own}
	}
	return cp, signed, nil
}

// openCheckpoint verifies a signed checkpoint with the log's verifier key
// (when it has one) and parses its body.
func (l *Log) openCheckpoint(signed []byte) (Checkpoint, error) {
	text := noteText(signed)
	if l.verifier != nil {
		nt, err := note.Open(signed, note.VerifierList(l.verifier))
		if err != nil {
			return Checkpoint{}, fmt.Errorf("its signature does not verify with this log's key: %v", err)
		}
		text = nt.Text
	}
	return ParseCheckpoint(text)
}

// noteText is the text of a signed note, up to its blank line.
func noteText(signed []byte) string {
	s := string(signed)
	if i := strings.Index(s, "\n\n"); i >= 0 {
		return s[:i+1]
	}
	return s
}

// signRetryPause is the first wait after a claim the store refused,
// doubling up to maxSignRetryPause while it goes on refusing.
var signRetryPause = time.Second

const maxSignRetryPause = 30 * time.Second

// RunSigner signs a checkpoint of this log whenever it has grown past
// the largest size claimed in the store, at most once an Interval, until
// ctx ends. Without a signing key it returns at once. While the log holds
// a fork of its own key (OwnFork) it signs nothing, and tells OnHalt once.
func (l *Log) RunSigner(ctx context.Context) error {
	if l.signer == nil {
		return nil
	}
	halted := false
	pause := signRetryPause
	for {
		changed := l.Changed()
		l.mu.RLock()
		size, claimed, claims, since, own := l.size, l.claimed, l.claims, time.Since(l.claimedAt), l.ownFork
		l.mu.RUnlock()
		if own != nil {
			// This key signed a tree that is not the one built here: a
			// checkpoint of this tree would be inconsistent with it, which
			// a log must never sign (C2SP tlog-checkpoint). own is read
			// with claims, the count sign's append expects: a claim the
			// log has not read yet makes that append fail.
			if !halted && l.onHalt != nil {
				l.onHalt(*own)
			}
			halted = true
		} else if size > claimed {
			if wait := l.interval - since; wait > 0 {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return nil
				}
				continue // look again: another replica may have signed
			}
			if _, err := l.sign(ctx, size, claims); err != nil && !errors.Is(err, eventstore.ErrConflict) {
				if ctx.Err() != nil {
					return nil
				}
				// A store that does not answer for a while (a KurrentDB
				// election) must not end the server: try again later.
				if l.onSignErr != nil {
					l.onSignErr(err)
				}
				select {
				case <-time.After(pause):
				case <-ctx.Done():
					return nil
				}
				pause = min(2*pause, maxSignRetryPause)
				continue
			}
			pause = signRetryPause
			// Signed or lost the race: either way the follower reads the
			// claim and wakes this loop.
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil
		}
	}
}

// sign signs this log's checkpoint at size and claims it in the store,
// expecting the checkpoint stream to hold claims events.
func (l *Log) sign(ctx context.Context, size int64, claims uint64) ([]byte, error) {
	var root tlog.Hash
	err := l.db.View(func(tx *bbolt.Tx) error {
		var err error
		root, err = tlog.TreeHash(size, hashReader(tx.Bucket(bucketHashes)))
		return err
	})
	if err != nil {
		return nil, err
	}
	return l.SignAt(ctx, Checkpoint{Origin: l.origin, Size: size, Root: root}, claims)
}

// SignAt signs cp and appends it to the checkpoint stream, expecting
// claims events there before it. It is how RunSigner claims a size; tests
// use it to sign what the log does not hold.
func (l *Log) SignAt(ctx context.Context, cp Checkpoint, claims uint64) ([]byte, error) {
	if l.signer == nil {
		return nil, errors.New("transparency log: no signing key")
	}
	signed, err := note.Sign(&note.Note{Text: cp.Text()}, l.signer)
	if err != nil {
		return nil, err
	}
	if err := l.recordSigned(signed); err != nil {
		return nil, err
	}
	data, _ := json.Marshal(checkpointRecord{Size: cp.Size, Root: cp.Root.String(), Checkpoint: string(signed)})
	expected := eventstore.NoStream()
	if claims > 0 {
		expected = eventstore.Revision(claims - 1)
	}
	_, err = l.store.Append(ctx, CheckpointStream, expected, eventstore.NewEvent(EventCheckpointSigned, data, eventstore.Metadata{Actor: "baton:log"}))
	if err != nil {
		return nil, err
	}
	return signed, nil
}

// Claims is how many checkpoint claims this log has read from the store.
func (l *Log) Claims() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.claims
}

func hashReader(b *bbolt.Bucket) tlog.HashReaderFunc {
	return func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			v := b.Get(u64(uint64(x)))
			if len(v) != tlog.HashSize {
				return nil, fmt.Errorf("transparency log: stored hash %d is missing", x)
			}
			copy(out[i][:], v)
		}
		return out, nil
	}
}

func u64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

func getU64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func leafKey(id string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(id), 0), seq)
}

// readEveryPage reads every page of the bbolt file at path (none when it
// does not exist yet) through its buckets and keys: bbolt's panic on a
// damaged page, recovered, is the error.
func readEveryPage(path string) (err error) {
	if _, serr := os.Stat(path); errors.Is(serr, os.ErrNotExist) {
		return nil
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // a file cut short
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 500 * time.Millisecond})
	if err != nil {
		return err
	}
	defer db.Close()
	defer func() {
		if v := recover(); v != nil {
			err = errors.New(panicText(v))
		}
	}()
	var walk func(b *bbolt.Bucket) error
	walk = func(b *bbolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return walk(b.Bucket(k))
			}
			return nil
		})
	}
	return db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bbolt.Bucket) error { return walk(b) })
	})
}

// panicText says what a panic recovered while reading the file means: a
// memory fault (SetPanicOnFault) is a page read past the file's end, which
// the runtime words as a nil pointer dereference.
func panicText(v any) string {
	if _, ok := v.(interface{ Addr() uintptr }); ok {
		return "a page read past the end of the file (cut short, or its pages damaged)"
	}
	return fmt.Sprint(v)
}
