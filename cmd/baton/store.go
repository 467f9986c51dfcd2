package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/kurrent"
	"github.com/batonhq/baton/projections"
)

// Store backends `serve` and the tools can run on.
const (
	storeBolt    = "bolt"
	storeKurrent = "kurrent"
)

// storeFlags are the flags that choose and reach the event store.
type storeFlags struct {
	fs        *flag.FlagSet // to tell a flag given from a variable set
	kind      *string
	url       *string
	maxAppend *int
}

// addStoreFlags registers --store, --kurrentdb-url and
// --kurrentdb-max-append-size (and their BATON_ variables, read through
// env) on fs.
func addStoreFlags(fs *flag.FlagSet, env *envVars) storeFlags {
	return storeFlags{
		fs:   fs,
		kind: fs.String("store", env.str("store", "BATON_STORE", storeBolt), "event store: bolt (embedded, in --data) or kurrent (KurrentDB at --kurrentdb-url)"),
		url:  fs.String("kurrentdb-url", os.Getenv("BATON_KURRENTDB_URL"), "KurrentDB connection string for --store kurrent, e.g. esdb://host:2113 or esdb+discover://h1:2113,h2:2113,h3:2113 (or BATON_KURRENTDB_URL)"),
		maxAppend: fs.Int("kurrentdb-max-append-size", int(env.integerFrom("kurrentdb-max-append-size", "BATON_KURRENTDB_MAX_APPEND_SIZE", kurrent.DefaultMaxAppendSize, 0)),
			"the KurrentDB server's --max-append-size in bytes; set both together (or BATON_KURRENTDB_MAX_APPEND_SIZE)"),
	}
}

func (f storeFlags) check() error {
	if *f.maxAppend < 0 {
		return fmt.Errorf("--kurrentdb-max-append-size (BATON_KURRENTDB_MAX_APPEND_SIZE) is %d; it must be 0 (KurrentDB's default) or a number of bytes", *f.maxAppend)
	}
	switch *f.kind {
	case storeBolt:
		return nil
	case storeKurrent:
		if *f.url == "" {
			return fmt.Errorf("%s needs --kurrentdb-url (or BATON_KURRENTDB_URL), e.g. esdb://127.0.0.1:2113?tls=false", f.chosenAs())
		}
		return nil
	}
	return fmt.Errorf("%s: want bolt or kurrent", settingIs(f.fs, "store", "BATON_STORE", *f.kind))
}

// open opens the chosen store. The embedded one lives in data; KurrentDB is
// reached at the URL, and data then holds only this process's read models.
func (f storeFlags) open(ctx context.Context, data string, log zerolog.Logger) (eventstore.Store, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	if *f.kind == storeBolt {
		return bolt.Open(data, bolt.Options{})
	}
	s, err := openKurrent(ctx, *f.url, *f.maxAppend, log)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", setting(f.fs, "kurrentdb-url", "BATON_KURRENTDB_URL"), err)
	}
	return s, nil
}

// openExisting is open for a command that reads a store a
// server made: an embedded store that is not there is an error, not a new
// empty one (a mistyped --data was created and reported intact).
func (f storeFlags) openExisting(ctx context.Context, data string, log zerolog.Logger) (eventstore.Store, error) {
	if *f.kind == storeBolt {
		if err := boltExists(data, setting(f.fs, "data", "BATON_DATA_DIR")); err != nil {
			return nil, err
		}
	}
	return f.open(ctx, data, log)
}

// openToRead is openExisting for a command that only reads the store
// (ledger verify, ledger export): the embedded store is opened read-only
// and left as it was, its journal not moved into the file, so that a
// backup on a read-only file system, or in files this user may only read,
// can be read too.
func (f storeFlags) openToRead(ctx context.Context, data string, log zerolog.Logger) (eventstore.Store, error) {
	if *f.kind != storeBolt {
		return f.openExisting(ctx, data, log)
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	if err := boltExists(data, setting(f.fs, "data", "BATON_DATA_DIR")); err != nil {
		return nil, err
	}
	return bolt.OpenReadOnly(data, bolt.Options{})
}

// boltExists says whether data, given as setting (--data or
// BATON_DATA_DIR), holds an embedded store.
func boltExists(data, setting string) error {
	if _, err := os.Stat(filepath.Join(data, bolt.FileName)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no store in %s (no %s there): check %s", data, bolt.FileName, setting)
	}
	return nil
}

// openKurrent connects to KurrentDB, giving up after 30 s.
func openKurrent(ctx context.Context, url string, maxAppend int, log zerolog.Logger) (*kurrent.Store, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// The store logs drops and resubscriptions at warn and info; the
	// client's own chatter (debug) stays out of the log.
	return kurrent.Open(ctx, kurrent.Config{URL: url, Log: log.Level(zerolog.InfoLevel), MaxAppendSize: maxAppend})
}

// describe names the store for logs and messages, without credentials.
func (f storeFlags) describe(data string) string {
	if *f.kind == storeKurrent {
		return "KurrentDB " + kurrent.Redact(*f.url)
	}
	return filepath.Join(data, bolt.FileName)
}

// dataNotRead refuses a --data given on the command line to a command
// that reads the store alone, when the store is KurrentDB: with
// BATON_STORE=kurrent exported, `ledger verify --data DIR` verified
// KurrentDB and said ok of it, DIR never read.
func (f storeFlags) dataNotRead() error {
	given := false
	if f.fs != nil {
		f.fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == "data" })
	}
	if !given || *f.kind != storeKurrent {
		return nil
	}
	return fmt.Errorf("%s chooses KurrentDB, where --data is not read: give --store bolt to use the embedded store in %s, or leave --data out", f.chosenAs(), f.fs.Lookup("data").Value)
}

// chosenAs is the store's kind as its operator chose it: "--store kurrent"
// or "BATON_STORE=kurrent".
func (f storeFlags) chosenAs() string {
	if setting(f.fs, "store", "BATON_STORE") == "BATON_STORE" {
		return "BATON_STORE=" + *f.kind
	}
	return "--store " + *f.kind
}

// notMigratedFrom refuses the embedded store in data to a command that
// writes to it (keys create, console link) when the directory's read
// models follow KurrentDB: baton migrate leaves events.db there as a
// backup, unlocked while a replica serves the directory, and a key made in
// it was printed and refused by every server.
func (f storeFlags) notMigratedFrom(data string) error {
	if *f.kind == storeBolt && migrated(data) {
		if replicaDir(data) {
			return replicaError(data, "Give --store kurrent --kurrentdb-url URL (or BATON_STORE, BATON_KURRENTDB_URL)")
		}
		return fmt.Errorf("the read models in %s follow KurrentDB (%s): its %s is the store migrated from, which no server reads; give --store kurrent --kurrentdb-url URL (or BATON_STORE, BATON_KURRENTDB_URL), or, back on the embedded store, start baton serve on it first", data, readModelMarker, bolt.FileName)
	}
	return nil
}

// chosen reports whether the store was chosen for this run (--store
// given, or BATON_STORE set) rather than left to the default, the
// embedded store.
func (f storeFlags) chosen(fs *flag.FlagSet) bool {
	set := os.Getenv("BATON_STORE") != ""
	fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == "store" })
	return set
}

// notBackupByDefault refuses to a command that reads the store (ledger
// verify, ledger export) the embedded store in data when the directory was
// migrated and no store was chosen: it read events.db, the backup the
// migration left, and reported on it as on the ledger. --store bolt reads
// the backup on purpose.
func (f storeFlags) notBackupByDefault(fs *flag.FlagSet, data string) error {
	if !f.chosen(fs) && migrated(data) {
		return backupError(data)
	}
	return nil
}

func backupError(data string) error {
	if replicaDir(data) {
		return replicaError(data, "Read the store with --store kurrent --kurrentdb-url URL (or BATON_STORE, BATON_KURRENTDB_URL)")
	}
	return fmt.Errorf("the read models in %s follow KurrentDB (%s): the directory was migrated, and its %s is the store migrated from, a backup no server has read since. Read the store with --store kurrent --kurrentdb-url URL (or BATON_STORE, BATON_KURRENTDB_URL); to read the backup on purpose (the events written to KurrentDB since the migration are not in it), give --store bolt",
		data, readModelMarker, bolt.FileName)
}

// replicaDir reports whether data holds no embedded store: with read
// models that follow KurrentDB, the directory of a replica started on
// KurrentDB, never migrated, which the messages of a migrated one (its
// events.db a backup, --store bolt to read it) would send astray.
func replicaDir(data string) bool {
	_, err := os.Stat(filepath.Join(data, bolt.FileName))
	return errors.Is(err, fs.ErrNotExist)
}

// replicaError refuses a replica's directory on KurrentDB to a command
// run without --store kurrent; then says what to do.
func replicaError(data, then string) error {
	return fmt.Errorf("the read models in %s follow KurrentDB (%s), and it holds no embedded store (no %s): it is the data directory of a replica on KurrentDB. %s", data, readModelMarker, bolt.FileName, then)
}

// migrated reports whether the read models in data follow KurrentDB: the
// directory was migrated, and its events.db is the store migrated from.
func migrated(data string) bool {
	b, err := os.ReadFile(filepath.Join(data, readModelMarker))
	if err != nil {
		return false
	}
	kind, _ := parseStoreMark(b)
	return kind == storeKurrent
}

// readModelMarker records, next to readmodel.db, which kind of store the read
// models were built from. Positions of the embedded store and of KurrentDB
// mean different things, so a read-model file built from one must never be
// continued from the other (as after `baton migrate` on the same --data).
const readModelMarker = "readmodel.store"

// openReadModels opens (or rebuilds) data/readmodel.db for store. The file
// is derived data: when it was built from another kind of store, or its
// checkpoint lies beyond the store's head (another database, or a store
// restored from an older backup), it is moved aside and rebuilt from the
// beginning of the feed. A file another process holds is an error: with
// KurrentDB nothing else keeps two replicas from sharing a --data.
func openReadModels(ctx context.Context, data, kind string, store eventstore.Store, log zerolog.Logger, projectors ...projections.Projector) (*projections.Runner, error) {
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(data, "readmodel.db")
	proj, err := projections.Open(path, store, projectors...)
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("read models %s are held by another process (is another baton serving with this --data? each replica needs its own)", path)
	}
	if err != nil {
		// Unreadable: moved aside to readmodel.db.broken (or .broken.1 ...)
		// and rebuilt.
		cause := err
		var to string
		if proj, to, err = projections.OpenOrRebuild(path, store, projectors...); err != nil {
			return nil, err
		}
		log.Warn().Err(cause).Str("file", to).Msg("read models: the file is unreadable; moved aside and rebuilt from the store")
	}
	// The file is ours now (bbolt holds a lock on it): decide whether it
	// can be continued.
	marker := filepath.Join(data, readModelMarker)
	id, err := storeIdentity(ctx, store)
	if err != nil {
		proj.Close()
		return nil, err
	}
	prev, merr := os.ReadFile(marker)
	if merr != nil && !errors.Is(merr, os.ErrNotExist) {
		proj.Close()
		return nil, merr
	}
	reason, err := notContinuable(ctx, store, kind, id, prev, merr, proj.Checkpoint())
	if err != nil {
		proj.Close()
		return nil, err
	}
	if reason != "" {
		if err := proj.Close(); err != nil {
			return nil, err
		}
		to := projections.AsideName(path, reason)
		log.Warn().Str("reason", reason).Str("file", to).
			Msg("read models were built from another store (another kind, another first event) or are ahead of this one; rebuilding them")
		if err := os.Rename(path, to); err != nil {
			return nil, err
		}
		if proj, _, err = projections.OpenOrRebuild(path, store, projectors...); err != nil {
			return nil, err
		}
	}
	if err := writeMarker(marker, storeMark(kind, id)); err != nil {
		proj.Close()
		return nil, err
	}
	return proj, nil
}

// markStore writes the markers of the read models (and of the log, when
// it runs) with the store's identity, where they lack it.
func markStore(ctx context.Context, data, kind string, store eventstore.Store, withLog bool) error {
	id, err := storeIdentity(ctx, store)
	if err != nil || id == "" {
		return err
	}
	markers := []string{readModelMarker}
	if withLog {
		markers = append(markers, logMarker)
	}
	for _, m := range markers {
		path := filepath.Join(data, m)
		if prev, err := os.ReadFile(path); err == nil {
			if was, wasID := parseStoreMark(prev); was == kind && wasID == "" {
				if err := writeMarker(path, storeMark(kind, id)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// notContinuable says why a file derived from a store, built up to pos,
// whose marker reads prev (merr: its read's error), cannot go on with
// store, of kind and identity id: the store's kind it was built from,
// "another-store", or "ahead"; "" when it can.
func notContinuable(ctx context.Context, store eventstore.Store, kind, id string, prev []byte, merr error, pos eventstore.Position) (string, error) {
	was, wasID := parseStoreMark(prev)
	switch {
	case merr == nil && was != kind:
		return was, nil
	case merr == nil && wasID != "" && id != "" && wasID != id:
		return "another-store", nil // its first event is another: another store under the same name
	case errors.Is(merr, os.ErrNotExist) && kind != storeBolt && pos != eventstore.Start:
		return storeBolt, nil // files from before the marker were built from the embedded store
	}
	head, err := store.Head(ctx)
	if err != nil {
		return "", fmt.Errorf("store head: %w", err)
	}
	if head.Less(pos) {
		return "ahead", nil // another database, or a restored backup
	}
	return "", nil
}

// storeIdentity names the store a data directory's derived files are
// built from: the id of its first event, "" while it has none. Another
// store copied in under the same name has another (a random UUID), though
// its head may be further on, which alone would let the files go on.
func storeIdentity(ctx context.Context, store eventstore.Store) (string, error) {
	evs, err := store.ReadAll(ctx, eventstore.Start, 1)
	if err != nil || len(evs) == 0 {
		return "", err
	}
	return evs[0].ID.String(), nil
}

// storeMark is a marker file's text: the store's kind, then its identity
// once it has one. Markers written before the identity hold the kind alone.
func storeMark(kind, id string) []byte {
	if id == "" {
		return []byte(kind + "\n")
	}
	return []byte(kind + "\n" + id + "\n")
}

func parseStoreMark(b []byte) (kind, id string) {
	f := strings.Fields(string(b))
	if len(f) > 0 {
		kind = f[0]
	}
	if len(f) > 1 {
		id = f[1]
	}
	return kind, id
}

// writeMarker replaces the marker file at path with b whole or not at all:
// written beside it, synced, then renamed over it. Written in place, a
// full disk or a kill between the truncation and the write left it empty,
// and a migrated directory with an empty marker no longer read as
// migrated (a start without --store served the events.db it left behind).
func writeMarker(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	// The rename lasts through a power cut once the directory is on disk.
	// Best effort: the marker is replaced already, and some systems
	// cannot sync a directory.
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
