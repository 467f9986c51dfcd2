package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/kurrent"
	"github.com/batonhq/baton/eventstore/migrate"
	"github.com/batonhq/baton/projections"
)

// migrateStore is `baton migrate`: it copies the embedded store into KurrentDB
// with package migrate, compares the copy with the source, then recomputes
// every handoff's hash chain in the target, as `baton ledger verify` does.
func migrateStore(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	from := fs.String("from", storeBolt, "source store: bolt (the embedded store in --data)")
	data := fs.String("data", dataDirDefault(), "data directory of the source store (no baton may be serving it)")
	to := fs.String("to", storeKurrent, "target store: kurrent")
	url := fs.String("kurrentdb-url", os.Getenv("BATON_KURRENTDB_URL"), "KurrentDB connection string of the target (or BATON_KURRENTDB_URL)")
	var env envVars
	maxAppend := fs.Int("kurrentdb-max-append-size", int(env.integerFrom("kurrentdb-max-append-size", "BATON_KURRENTDB_MAX_APPEND_SIZE", kurrent.DefaultMaxAppendSize, 0)), "the target server's --max-append-size in bytes")
	limit := fs.Int("limit", 0, "stop after the first this many events of the feed (copied now or confirmed from an earlier run); a run with a larger limit, or none, continues; 0 copies everything")
	if err := env.parse(fs, args); err != nil {
		return err
	}
	if *from != storeBolt || *to != storeKurrent {
		return fmt.Errorf("migrate: only --from bolt --to kurrent is supported (got --from %q --to %q)", *from, *to)
	}
	if *url == "" {
		return usageError{errors.New("migrate: --kurrentdb-url (or BATON_KURRENTDB_URL) is required")}
	}
	if *limit < 0 {
		return errors.New("migrate: --limit must not be negative")
	}
	if *maxAppend < 0 {
		return fmt.Errorf("migrate: --kurrentdb-max-append-size (BATON_KURRENTDB_MAX_APPEND_SIZE) is %d; it must be 0 (KurrentDB's default) or a number of bytes", *maxAppend)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	// A --data with no store would be made into an empty one, and "0
	// events" migrated.
	if err := boltExists(*data, setting(fs, "data", "BATON_DATA_DIR")); err != nil {
		return fmt.Errorf("migrate: source: %w", err)
	}
	// Run again after replicas served KurrentDB, it copied nothing and
	// failed its comparison: "the target does not match the source". A
	// directory this command marked, that no replica has served yet (its
	// read models still set aside), may be compared again.
	if migrated(*data) && !markedUnserved(*data) {
		return fmt.Errorf("migrate: %s was migrated already: its read models follow KurrentDB (%s), where replicas have written since, and its %s is the backup the migration left; there is nothing to copy. Serve with --store kurrent --kurrentdb-url URL", *data, readModelMarker, bolt.FileName)
	}
	src, err := bolt.Open(*data, bolt.Options{})
	if errors.Is(err, eventstore.ErrLocked) {
		// The copy must be of a store no one writes to any more.
		return fmt.Errorf("migrate: source: %w; the migration copies a stopped store: stop the server first (docs/operations.md, Migrating from the embedded store)", err)
	}
	if err != nil {
		return fmt.Errorf("migrate: source: %w", err)
	}
	defer src.Close()
	// kurrent.Open takes a size of 0 or less as its default; so does the copy.
	appendSize := *maxAppend
	if appendSize <= 0 {
		appendSize = kurrent.DefaultMaxAppendSize
	}
	dst, err := openKurrent(ctx, *url, *maxAppend, zerolog.Nop())
	if err != nil {
		return fmt.Errorf("migrate: target: %w", err)
	}
	defer dst.Close()
	head, err := src.Head(ctx)
	if err != nil {
		return err
	}
	// The embedded store numbers its events 1, 2, 3... without gaps.
	total := int(head.Commit)
	if err := migrate.SameStart(ctx, src, dst); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "migrate: %d events from %s to KurrentDB %s\n", total, src.Path(), kurrent.Redact(*url))

	start := time.Now()
	lastReport := start
	st, err := migrate.Copy(ctx, src, dst, migrate.Options{
		MaxAppendSize: appendSize,
		Limit:         *limit,
		Progress: func(st migrate.Stats) {
			if time.Since(lastReport) < time.Second {
				return // at most a line a second
			}
			lastReport = time.Now()
			fmt.Fprintf(stdout, "migrate: %d/%d events copied\n", st.Events, total)
		},
	})
	if errors.Is(err, migrate.ErrLimitReached) {
		fmt.Fprintf(stdout, "migrate: stopped after the first %d of %d events (--limit %d counts from the start of the feed); run it again with a larger --limit, or without one, to copy the rest: events already copied are confirmed, not written twice\n", st.Events, total, *limit)
		return nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("migrate: interrupted after %d of %d events; run it again to continue (events already copied are confirmed, not written twice): %w", st.Events, total, err)
		}
		return fmt.Errorf("migrate: after %d of %d events: %w", st.Events, total, err)
	}
	fmt.Fprintf(stdout, "migrate: %d events in %d streams copied in %v (%d appends; %d continued after events an earlier run had copied, %d retried after a failure)\n",
		st.Events, len(st.Streams), time.Since(start).Round(time.Millisecond), st.Appends, st.Resumed, st.Retries)

	n, err := migrate.Compare(ctx, src, dst, st.Streams)
	if err != nil {
		return fmt.Errorf("migrate: the target does not match the source: %w", err)
	}
	fmt.Fprintf(stdout, "migrate: compared %d events: the target holds each once, in the same order, with the same id, stream, revision, type, data and metadata\n", n)
	fmt.Fprintln(stdout, "migrate: verifying the hash chains in the target (baton ledger verify):")
	if err := verifyStore(ctx, dst, nil, nil, stdout); err != nil {
		return err
	}
	if err := markMigrated(ctx, *data, src); err != nil {
		return fmt.Errorf("migrate: the copy is complete, but %s could not be marked as migrated: %w", *data, err)
	}
	fmt.Fprintf(stdout, "migrate: %s now follows KurrentDB (%s): start it with --store kurrent; without it (or with keys create, console link) it is refused, its %s kept as a backup\n", *data, readModelMarker, bolt.FileName)
	return nil
}

// markedUnserved says whether a migrated directory is as markMigrated
// left it: no read models of its own, which a replica's first start on
// KurrentDB builds.
func markedUnserved(data string) bool {
	_, err := os.Stat(filepath.Join(data, "readmodel.db"))
	return errors.Is(err, os.ErrNotExist)
}

// markMigrated marks the data directory of a finished migration as its
// first start on KurrentDB would: its read models, built from the
// embedded store, set aside, and the marker naming KurrentDB. Until that
// start, a start without --store (make run) served the events.db left
// behind, and keys create made keys there, which no replica saw. A
// directory already marked (a run again, a replica serving it) is left
// alone.
func markMigrated(ctx context.Context, data string, src eventstore.Store) error {
	if migrated(data) {
		return nil
	}
	path := filepath.Join(data, "readmodel.db")
	if _, err := os.Stat(path); err == nil {
		was := storeBolt // read models from before the marker were the embedded store's
		if b, err := os.ReadFile(filepath.Join(data, readModelMarker)); err == nil {
			if k, _ := parseStoreMark(b); k != "" {
				was = k
			}
		}
		if err := os.Rename(path, projections.AsideName(path, was)); err != nil {
			return err
		}
	}
	id, err := storeIdentity(ctx, src)
	if err != nil {
		return err
	}
	return writeMarker(filepath.Join(data, readModelMarker), storeMark(storeKurrent, id))
}
