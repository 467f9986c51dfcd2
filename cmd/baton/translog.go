package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/translog"
)

// KeyFileName is the signing key's file in the data directory, used when
// no --log-key-file is given.
const KeyFileName = "log.key"

// logFlags are serve's transparency log flags.
type logFlags struct {
	fs        *flag.FlagSet // to tell a flag given from a variable set
	witnesses *string
	on        *bool
	keyFile   *string
	origin    *string
	interval  *time.Duration
}

func addLogFlags(fs *flag.FlagSet, env *envVars) logFlags {
	return logFlags{
		fs:        fs,
		on:        fs.Bool("log", env.boolean("log", "BATON_LOG", true), "keep the transparency log (docs/audit.md): its file in --data, its routes under /v1/log/ and the receipts"),
		keyFile:   fs.String("log-key-file", env.str("log-key-file", "BATON_LOG_KEY_FILE", ""), "the log's signing key (baton log keygen); default DATA/log.key when that file exists. Without a key the log is built and served but this replica signs no checkpoint"),
		origin:    fs.String("log-origin", env.str("log-origin", "BATON_LOG_ORIGIN", ""), "the checkpoints' origin line (default: the signing key's name, \"baton\" without a key)"),
		witnesses: fs.String("log-witnesses", env.str("log-witnesses", "BATON_LOG_WITNESSES", ""), "comma-separated verifier keys of the witnesses whose cosignatures (C2SP tlog-cosignature, POST /v1/log/cosignature) the log takes and serves"),
		interval:  fs.Duration("log-interval", env.duration("log-interval", "BATON_LOG_INTERVAL", translog.DefaultInterval), "the least time between two signed checkpoints while events arrive (at most 1s)"),
	}
}

// signingKey reads the signing key: the file named, or DATA/log.key when
// it exists; "" when there is none.
func (f logFlags) signingKey(data string) (string, string, error) {
	path := *f.keyFile
	if path == "" {
		path = filepath.Join(data, KeyFileName)
		// A data directory that cannot hold the key (not one, or not
		// there) is the store's to name: serve reads the key first.
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return "", "", nil
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if *f.keyFile != "" {
			// Named by the setting that gave it, flag or variable.
			return "", "", fmt.Errorf("the signing key %s (%s): %w", path, setting(f.fs, "log-key-file", "BATON_LOG_KEY_FILE"), err)
		}
		return "", "", fmt.Errorf("the signing key %s: %w", path, err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		// Read as no key, it served a log that signed nothing, said only
		// as "signing":false, to an operator who had given one.
		return "", "", fmt.Errorf("the signing key %s is empty: give the file baton log keygen wrote, or remove it to serve the log unsigned", path)
	}
	return strings.TrimSpace(string(b)), path, nil
}

// check refuses the settings open would refuse, and opens nothing:
// serve checks them before it creates the data directory's files, which
// a start stopped by one of them left behind.
func (f logFlags) check(data string) error {
	if !*f.on {
		// A setting only the log reads, given with the log off, was
		// ignored without a word: a key file then signed nothing.
		given := map[string]bool{}
		if f.fs != nil {
			f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
		}
		for _, s := range []struct{ name, variable, value string }{
			{"log-key-file", "BATON_LOG_KEY_FILE", *f.keyFile},
			{"log-origin", "BATON_LOG_ORIGIN", *f.origin},
			{"log-witnesses", "BATON_LOG_WITNESSES", *f.witnesses},
			{"log-interval", "BATON_LOG_INTERVAL", os.Getenv("BATON_LOG_INTERVAL")},
		} {
			if s.value != "" || given[s.name] {
				off := "--log=false"
				if setting(f.fs, "log", "BATON_LOG") == "BATON_LOG" {
					off = "BATON_LOG=" + os.Getenv("BATON_LOG")
				}
				return fmt.Errorf("transparency log: %s turns the log off, and %s is for the log: give one of them, not both", off, setting(f.fs, s.name, s.variable))
			}
		}
		return nil
	}
	if *f.interval < 10*time.Millisecond || *f.interval > time.Second {
		return fmt.Errorf("transparency log: --log-interval (BATON_LOG_INTERVAL) is %v; it must be from 10ms to 1s", *f.interval)
	}
	skey, keyPath, err := f.signingKey(data)
	if err != nil {
		return fmt.Errorf("transparency log: %w", err)
	}
	if *f.origin != "" {
		if err := translog.CheckOrigin(*f.origin); err != nil {
			return fmt.Errorf("transparency log: %s: %w", setting(f.fs, "log-origin", "BATON_LOG_ORIGIN"), err)
		}
	}
	if _, err := translog.NewWitnessVerifiers(splitList(*f.witnesses)); err != nil {
		return fmt.Errorf("transparency log: %s: %w", setting(f.fs, "log-witnesses", "BATON_LOG_WITNESSES"), err)
	}
	if err := translog.CheckOptions(translog.Options{Origin: *f.origin, SignerKey: skey}); err != nil {
		from := keyPath
		if *f.keyFile != "" {
			from = setting(f.fs, "log-key-file", "BATON_LOG_KEY_FILE") + " " + keyPath
		}
		return fmt.Errorf("%w (the key read from %s)", err, from)
	}
	return nil
}

// logMarker names the kind of store translog.db was built from.
const logMarker = "translog.store"

// openLog opens the transparency log of serve and catches it up. A log
// built from another kind of store, or ahead of this store's head (another
// database, a restored backup), is moved aside and rebuilt from zero.
func (f logFlags) open(ctx context.Context, data, kind string, store eventstore.Store, log zerolog.Logger) (*translog.Log, error) {
	if !*f.on {
		return nil, nil
	}
	// Its own failures say "transparency log:" as the package's do.
	fail := func(err error) (*translog.Log, error) { return nil, fmt.Errorf("transparency log: %w", err) }
	if err := f.check(data); err != nil {
		return nil, err
	}
	skey, keyPath, err := f.signingKey(data)
	if err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return fail(err)
	}
	opts := translog.Options{
		Origin: *f.origin, SignerKey: skey, Interval: *f.interval, Witnesses: splitList(*f.witnesses),
		SignedFile: filepath.Join(data, translog.SignedFileName),
		OnFork: func(fk translog.Fork) {
			log.Error().Str("checkpoint", fk.String()).Int64("logSize", fk.Size).
				Msg("transparency log: a signed checkpoint in the store does not match the log built from the feed (docs/audit.md, Forks)")
		},
		OnFull: func(err error) {
			log.Error().Err(err).Msg("transparency log: the disk is full; the log goes on by itself once space is freed")
		},
		OnSignError: func(err error) {
			log.Warn().Err(err).Msg("transparency log: a checkpoint could not be claimed in the store; trying again")
		},
		OnHalt: func(fk translog.Fork) {
			log.Error().Str("checkpoint", fk.String()).Int64("logSize", fk.Size).
				Msg("transparency log: signing stopped: the store holds a checkpoint this key signed that the log built from the store contradicts (checkpoint), so any checkpoint signed now would fork the log. A store whose events were rewritten after they were signed looks like this. Restore the store the checkpoints were signed over (and delete translog.db), or start a new log with a new key and origin (baton log keygen --origin NAME, --log-key-file; docs/operations.md, Backups). docs/audit.md, Forks")
		},
	}
	path := filepath.Join(data, translog.FileName)
	// moveAside moves the log's file to path.suffix, saying why: the log
	// is then built again from zero. A file moved aside before under that
	// name is kept (its checkpoints are signed evidence): the new one
	// takes path.suffix.1, .2 and so on.
	moveAside := func(suffix, why string, cause error) error {
		to := unusedName(path + "." + suffix)
		ev := log.Warn()
		if cause != nil {
			ev = ev.Err(cause)
		}
		ev.Str("file", to).Msg("transparency log: " + why + "; moved aside and rebuilt from zero")
		return os.Rename(path, to)
	}
	tl, err := translog.Open(path, store, opts)
	if errors.Is(err, translog.ErrDamaged) {
		if rerr := moveAside("broken", "the file is damaged", err); rerr != nil {
			return fail(rerr)
		}
		tl, err = translog.Open(path, store, opts)
	}
	if errors.Is(err, translog.ErrAnotherLog) {
		// A new key (or origin) is a new log: its checkpoints are signed
		// from the store's claims of its own origin, from zero.
		if rerr := moveAside("another-key", "the file's checkpoints are another key's", err); rerr != nil {
			return fail(rerr)
		}
		tl, err = translog.Open(path, store, opts)
	}
	if err != nil {
		return nil, err
	}
	id, err := storeIdentity(ctx, store)
	if err != nil {
		tl.Close()
		return fail(err)
	}
	prev, merr := os.ReadFile(filepath.Join(data, logMarker))
	reason, err := notContinuable(ctx, store, kind, id, prev, merr, tl.Position())
	if err == nil && reason == "" {
		reason, err = lastEntryGone(ctx, store, tl)
	}
	if err != nil {
		tl.Close()
		return fail(err)
	}
	if reason != "" {
		// The file's latest checkpoint, which the rebuilt log must still
		// hold, or signing with its key would fork: this key's when this
		// start signs (Open checked it); when it does not, the rebuilt file
		// keeps it for a start with the key to check.
		signed, aside := tl.Checkpoint()
		tl.Close()
		if signed != nil {
			if err := rebuildHolding(ctx, path, reason, signed, aside, opts.SignerKey != "", store, opts, log); err != nil {
				return nil, err // it says "transparency log:"
			}
		} else if err := moveAside(reason, "built from another store, or ahead of this one", nil); err != nil {
			return fail(err)
		}
		if tl, err = translog.Open(path, store, opts); err != nil {
			return nil, err
		}
	}
	if err := writeMarker(filepath.Join(data, logMarker), storeMark(kind, id)); err != nil {
		tl.Close()
		return fail(err)
	}
	if err := tl.CatchUp(ctx); err != nil {
		tl.Close()
		return nil, err
	}
	if err := checkAside(tl, path, log); err != nil {
		tl.Close()
		return nil, err
	}
	if err := checkSigned(tl, filepath.Join(data, translog.SignedFileName)); err != nil {
		tl.Close()
		return nil, err
	}
	ev := log.Info().Str("origin", tl.Origin()).Int64("entries", tl.Size())
	if tl.Signs() {
		ev = ev.Str("keyFile", keyPath).Str("verifierKey", tl.VerifierKey())
	} else {
		ev = ev.Bool("signing", false)
	}
	ev.Msg("transparency log")
	if name, _, _ := strings.Cut(tl.VerifierKey(), "+"); tl.Signs() && name != tl.Origin() {
		// C2SP tlog-checkpoint: the key's name SHOULD be the origin, and
		// verifiers' policies (Go's sumdb, Tessera, torchwood) look the
		// key up by it: they refuse these checkpoints.
		log.Warn().Str("origin", tl.Origin()).Str("keyName", name).
			Msg("transparency log: the origin is not the signing key's name; common verifiers refuse such checkpoints (operations.md, Origin)")
	}
	return tl, nil
}

// lastEntryGone is "ahead" when the store no longer holds the log's last
// entry as the log has it: a store restored from a backup that has since
// grown past the log's position (a start with --log=false, or another
// replica, wrote to it), whose head alone no longer tells. The log would
// go on from its position over other events, under checkpoints of entries
// the store lost, and a rebuild would sign another tree.
func lastEntryGone(ctx context.Context, store eventstore.Store, tl *translog.Log) (string, error) {
	n := tl.Size()
	if n == 0 {
		return "", nil
	}
	entry, err := tl.Entry(n - 1)
	if err != nil {
		return "", err
	}
	var e struct {
		HandoffID string `json:"handoffId"`
		Seq       uint64 `json:"seq"`
	}
	if json.Unmarshal(entry, &e) != nil || e.Seq == 0 {
		return "ahead", nil
	}
	evs, err := store.ReadStream(ctx, domain.StreamID(e.HandoffID), e.Seq-1, 1)
	if err != nil {
		return "", err
	}
	if len(evs) == 0 {
		return "ahead", nil
	}
	if _, got, ok := translog.Leaf(evs[0]); !ok || !bytes.Equal(got, entry) {
		return "ahead", nil
	}
	return "", nil
}

// checkAside refuses a start that would sign with a key whose checkpoint,
// kept in a file moved aside beside path (path.another-key, path.ahead and
// so on), the log does not hold: a restore, then a start with a new key
// (which moved the old key's file aside), then one with the old key again
// signed the restored log under the old key, a second tree of one log.
// A new key of the old key's origin is refused the same way. A log that
// signs nothing already (its own fork) is not refused.
func checkAside(tl *translog.Log, path string, log zerolog.Logger) error {
	if _, own := tl.OwnFork(); !tl.Signs() || own {
		return nil
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("transparency log: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, filepath.Base(path)+".") || name == filepath.Base(path)+".rebuild" {
			continue // .rebuild: a start's unfinished rebuild, removed by the next
		}
		f := filepath.Join(filepath.Dir(path), name)
		fk, err := tl.Unheld(f)
		if err != nil {
			// A damaged file keeps what it holds unread: said, not fatal,
			// or one bad page would stop every start.
			log.Warn().Err(err).Str("file", f).Msg("transparency log: a file moved aside could not be read for the checkpoints this key signed")
			continue
		}
		if fk != nil {
			return forkRefusal(tl, f+", moved aside, holds", fk)
		}
	}
	return nil
}

// forkRefusal is the refusal of a start whose key would sign a second tree:
// where says which file holds fk, a checkpoint the log does not hold.
func forkRefusal(tl *translog.Log, where string, fk *translog.Fork) error {
	if fk.Own {
		return fmt.Errorf("transparency log: %s a checkpoint this key signed, %d entries with root %s, which the log of this store (%d entries) does not hold: signing with this key again would fork the log. After a restore, start with a new log key (baton log keygen --origin NAME, --log-key-file; operations.md, Backups)",
			where, fk.Checkpoint.Size, fk.Checkpoint.Root, tl.Size())
	}
	return fmt.Errorf("transparency log: %s a checkpoint of origin %s signed with another key, %d entries with root %s, which the log of this store (%d entries) does not hold: this key would sign a second tree of that log. A new log key needs a new origin too (baton log keygen --origin NAME, --log-key-file; operations.md, Backups)",
		where, tl.Origin(), fk.Checkpoint.Size, fk.Checkpoint.Root, tl.Size())
}

// checkSigned refuses a start that would sign with a key whose latest
// checkpoint, recorded in the file at path, the log does not hold: a
// restore, then translog.db deleted (or lost), rebuilt the log from a
// store that no longer has what the key signed past the backup, and no
// other file tells. A new key of the same origin is refused the same way.
func checkSigned(tl *translog.Log, path string) error {
	if _, own := tl.OwnFork(); !tl.Signs() || own {
		return nil
	}
	fk, err := tl.UnheldSigned(path)
	switch {
	case err != nil:
		return fmt.Errorf("%w (it records what this log's keys signed; a file that cannot be read is not taken as none)", err)
	case fk != nil:
		return forkRefusal(tl, path+" records", fk)
	}
	return nil
}

// rebuildHolding builds the log of store from zero beside the file at path
// (path.rebuild), and puts it in the file's place, the file kept as
// path.reason, only if it holds aside, the file's latest checkpoint (signed
// its note), when signs: the checkpoint this key signed. Without the key
// the rebuilt log keeps a checkpoint it does not hold (KeepUnheld), and a
// start with the key signs nothing over it. A
// restored backup (or another store) with the key that signed past it: the
// store's log no longer holds the entries this key signed, and its next
// checkpoints would be a second tree of the same log, which no log may sign
// (C2SP tlog-checkpoint). Until the rebuilt log is checked the file stays
// where it was, so a start that ends meanwhile (killed, a signal, the store
// not answering) leaves it for the next start to check again: moved aside
// first, the next start found the rebuilt file in its place and signed it.
func rebuildHolding(ctx context.Context, path, reason string, signed []byte, aside translog.Checkpoint, signs bool, store eventstore.Store, opts translog.Options, log zerolog.Logger) error {
	tmp := path + ".rebuild"
	os.Remove(tmp) // one a start left unfinished
	nl, err := translog.Open(tmp, store, opts)
	if err != nil {
		return err
	}
	err = nl.CatchUp(ctx)
	if err == nil {
		root, rerr := nl.Root(aside.Size)
		switch held := nl.Size() >= aside.Size && rerr == nil && root == aside.Root; {
		case !held && !signs:
			err = nl.KeepUnheld(signed, fmt.Sprintf("%s held it, signed, and the log of this store (%d entries) does not", path, nl.Size()))
		case !held:
			err = fmt.Errorf("transparency log: %s, built from another store or ahead of this one, holds a checkpoint this key signed, %d entries with root %s, which the log of this store (%d entries) does not hold: signing with this key again would fork the log. After a restore, start with a new log key (baton log keygen --origin NAME, --log-key-file; operations.md, Backups)",
				path, aside.Size, aside.Root, nl.Size())
		}
	}
	if cerr := nl.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	// A second name for the file, then the rebuilt one in its place: at
	// no moment is there no file at path.
	to := unusedName(path + "." + reason)
	if err := os.Link(path, to); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("transparency log: %w", err)
	}
	log.Warn().Str("file", to).Msg("transparency log: built from another store, or ahead of this one; moved aside and rebuilt from zero")
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("transparency log: %w", err)
	}
	return nil
}

// logKeygen makes a signing key: the private key into a file (never
// overwritten), the verifier key on stdout.
func logKeygen(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("log keygen", flag.ContinueOnError)
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	origin := fs.String("origin", "baton."+host, "the log's name: the key's name and the checkpoints' origin line (e.g. the server's host and path, baton.example.com/log)")
	// --data as every other command takes it: the key goes where serve
	// --data DIR looks for it, DIR/log.key.
	data := fs.String("data", dataDirDefault(), "data directory: the key is written to DATA/"+KeyFileName+", where baton serve --data DATA finds it")
	out := fs.String("out", "", "where to write the signing key instead of DATA/"+KeyFileName+" (serve it with --log-key-file FILE); mode 0600, an existing file is left alone")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	outGiven, dataGiven := false, false
	fs.Visit(func(f *flag.Flag) {
		outGiven = outGiven || f.Name == "out"
		dataGiven = dataGiven || f.Name == "data"
	})
	switch {
	case outGiven && dataGiven:
		return usageError{fmt.Errorf("--out and --data: give --data DIR (the key goes to DIR/%s, which serve reads) or --out FILE (then serve with --log-key-file FILE), not both", KeyFileName)}
	case outGiven && *out == "":
		return fmt.Errorf("--out is empty; give the file to write the signing key to (default %s)", filepath.Join(*data, KeyFileName))
	case !outGiven:
		*out = filepath.Join(*data, KeyFileName)
	}
	if strings.ContainsAny(*origin, "+ \t\n") || *origin == "" {
		return fmt.Errorf("--origin %q: a name without spaces or +", *origin)
	}
	// The key's name is the log's origin: one serve refuses made a key,
	// never overwritten, for a log that could not start.
	if err := translog.CheckOrigin(*origin); err != nil {
		return fmt.Errorf("--origin: %w", err)
	}
	skey, vkey, err := translog.GenerateKey(*origin, nil)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		// Named as it was reached: "--out:" was said of a key written to
		// --data's default, with no word of what to do.
		return fmt.Errorf("%s exists, and a key is never overwritten: a server with it signs already (GET /v1/log/key names it). A new key is a new log identity for auditors: keep this one, or write the new key elsewhere (--out FILE, with a new --origin) and serve with --log-key-file FILE (docs/operations.md, Backups)", *out)
	}
	if err != nil {
		return fmt.Errorf("writing the key to %s: %w", *out, err)
	}
	_, werr := fmt.Fprintln(f, skey)
	if werr == nil {
		werr = f.Sync() // the verifier key is published: its key must outlast a crash
	}
	if err := errors.Join(werr, f.Close()); err != nil {
		// Made here (O_EXCL): a key cut short (a full disk) is no key, and
		// left behind it was refused by serve and taken by a new keygen
		// for a key in use.
		os.Remove(*out)
		return fmt.Errorf("writing the key to %s: %w (nothing was kept)", *out, err)
	}
	fmt.Fprintln(stdout, vkey)
	use := fmt.Sprintf("baton serve --data %s signs with it from its next start", *data)
	if outGiven {
		use = fmt.Sprintf("serve with --log-key-file %s to sign with it", *out)
	}
	fmt.Fprintf(os.Stderr, "wrote the signing key to %s (%s); the line above is its verifier key: publish it (GET /v1/log/key serves it too)\n", *out, use)
	return nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// stringsFlag is a flag given once per value (witness keys): a value
// given twice counts once, as one witness's key is one witness.
type stringsFlag []string

func (s *stringsFlag) String() string { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error {
	if !slices.Contains(*s, v) {
		*s = append(*s, v)
	}
	return nil
}

// unusedName is name, or name.1, name.2 and so on: the first no file has.
func unusedName(name string) string {
	for i := 0; ; i++ {
		n := name
		if i > 0 {
			n = fmt.Sprintf("%s.%d", name, i)
		}
		if _, err := os.Lstat(n); errors.Is(err, os.ErrNotExist) {
			return n
		}
	}
}
