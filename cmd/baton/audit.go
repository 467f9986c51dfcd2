package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/records"
	"github.com/batonhq/baton/eventstore/translog"
)

// errLogBroken makes `baton log verify` exit 1 after naming the problem.
var errLogBroken = errors.New("transparency log verification failed")

// ledgerExport writes a handoff's audit bundle: through a running server
// (--url), or from the data directory while the server is stopped.
func ledgerExport(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ledger export", flag.ContinueOnError)
	data := fs.String("data", dataDirDefault(), "data directory (the server stopped)")
	var env envVars
	storeOpts := addStoreFlags(fs, &env)
	base := fs.String("url", "", "export through a running server at this base URL")
	key := fs.String("key", os.Getenv("BATON_API_KEY"), "API key for --url (or BATON_API_KEY)")
	wait := fs.Duration("wait", 5*time.Second, "with --url, how long to wait for every event to be covered by a signed checkpoint")
	if err := env.parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || !printableID(fs.Arg(0)) {
		return usageError{errors.New("usage: baton ledger export [--url URL --key KEY | --data DIR] HANDOFF_ID")}
	}
	if err := serverOrStore(fs, "ledger export"); err != nil {
		return err
	}
	if *wait < 0 {
		return fmt.Errorf("--wait %v: a duration of 0 (no wait) or more", *wait)
	}
	if *base != "" {
		if err := checkBaseURL("--url", *base); err != nil {
			return err
		}
	}
	id := fs.Arg(0)
	*key = strings.TrimSpace(*key) // a key read with its line's end goes in no header
	b := translog.Bundle{Format: translog.BundleFormat, HandoffID: id}
	if *base != "" {
		client := keyClient()
		deadline := time.Now().Add(*wait)
		for first := true; ; {
			var l struct {
				Events []domain.Recorded `json:"events"`
			}
			if err := getJSON(ctx, client, *base, "/v1/executions/"+url.PathEscape(id)+"/ledger", *key, &l); err != nil {
				return err
			}
			var rs struct {
				Receipts []translog.Receipt `json:"receipts"`
			}
			err := getJSON(ctx, client, *base, "/v1/executions/"+url.PathEscape(id)+"/receipts", *key, &rs)
			if ae := (*answerError)(nil); errors.As(err, &ae) && ae.status == http.StatusNotFound && ae.code == "not_found" {
				// No such route: the ledger read, the log is off.
				return fmt.Errorf("the server at %s keeps no transparency log (started with --log=false or BATON_LOG=false: it serves no receipts and no /v1/log/ routes), so there is no bundle to export; baton ledger verify --url %s checks the hash chain", *base, *base)
			}
			if err != nil {
				return err
			}
			b.Events, b.Receipts = l.Events, receiptsOf(rs.Receipts, len(l.Events))
			if allProved(b) {
				break
			}
			if first {
				// A server that signs nothing would be waited on the whole
				// --wait, for a bundle with no proof that no key verifies
				// (with --wait 0, written at once).
				if err := noLogKey(ctx, client, *base, id); err != nil {
					return err
				}
				first = false
			}
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	} else {
		if err := storeOpts.notBackupByDefault(fs, *data); err != nil {
			return err
		}
		store, err := storeOpts.openToRead(ctx, *data, zerolog.Nop())
		if errors.Is(err, eventstore.ErrLocked) {
			return fmt.Errorf("%w; while it serves, export through it: --url http://HOST:PORT --key KEY", err)
		}
		if err != nil {
			return err
		}
		defer store.Close()
		if b.Events, err = records.ReadHandoff(ctx, store, id); err != nil {
			return err
		}
		// The log as the server left it: read on from the feed without the
		// key, a claim of the key over another tree (a fork, which stops
		// its signing) would be passed as any other, and the next serve
		// would not read it again.
		path := filepath.Join(*data, translog.FileName)
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s holds no transparency log (%s): baton serve builds it, unless started with --log=false (BATON_LOG=false); export with --url once it runs with the log", *data, translog.FileName)
		}
		tl, err := translog.Open(path, store, translog.Options{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tl.Close()
		if b.Receipts, err = tl.Receipts(id); err != nil {
			return err
		}
		b.Receipts = receiptsOf(b.Receipts, len(b.Events))
		if signed, _ := tl.Checkpoint(); signed == nil && len(b.Events) > 0 {
			// As from a server without a key: "export again later" would
			// never come true, and the bundle holds no proof.
			return fmt.Errorf("no checkpoint of the transparency log in %s (%s) was ever signed, so no event of %s is in one, and a bundle would hold no proof. A server signs only with a log key: make one with baton log keygen --data %s, if it has none, and start the server (docs/audit.md); meanwhile baton ledger verify --data %s %s checks the hash chain", *data, translog.FileName, id, *data, *data, id)
		}
	}
	if len(b.Events) == 0 {
		return fmt.Errorf("handoff %s: not found", id)
	}
	if !allProved(b) {
		fmt.Fprintf(os.Stderr, "warning: not every event of %s is covered by a signed checkpoint yet; export again later for a complete bundle\n", id)
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	return enc.Encode(b)
}

// noLogKey says so when the server at base has no transparency log
// key and no checkpoint was ever signed (GET /v1/log/key and GET
// /v1/log/checkpoint both 404, no_log_key and no_checkpoint): no proof
// will come. A replica without the key whose peers sign serves their
// checkpoints, and is waited on.
func noLogKey(ctx context.Context, client *http.Client, base, id string) error {
	var ae *answerError
	if _, err := get(ctx, client, base, "/v1/log/checkpoint", ""); !errors.As(err, &ae) || ae.code != "no_checkpoint" {
		return nil
	}
	if _, err := get(ctx, client, base, "/v1/log/key", ""); !errors.As(err, &ae) || ae.code != "no_log_key" {
		return nil
	}
	return fmt.Errorf("the server at %s keeps no signed transparency log (GET /v1/log/key: no_log_key; GET /v1/log/checkpoint: no_checkpoint): no event of %s is in a signed checkpoint, and a bundle would hold no proof. Its operator makes a key with baton log keygen and restarts it (docs/audit.md); meanwhile baton ledger verify --url %s checks the hash chain", base, id, base)
}

// receiptsOf keeps the receipts of the first n events: the log and the
// ledger's read follow the feed apart, and the log may hold an event the
// ledger read did not show yet. Its receipt comes with it, in a later
// export; a bundle with a receipt beyond its events does not read.
func receiptsOf(rs []translog.Receipt, n int) []translog.Receipt {
	return slices.DeleteFunc(rs, func(r translog.Receipt) bool { return r.Seq > uint64(n) })
}

func allProved(b translog.Bundle) bool {
	n := 0
	for _, r := range b.Receipts {
		if r.Proof != "" {
			n++
		}
	}
	return len(b.Events) > 0 && n == len(b.Events)
}

func getJSON(ctx context.Context, client *http.Client, base, path, key string, v any) error {
	body, err := get(ctx, client, base, path, key)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

// keyClient is the HTTP client of the commands that read a server with
// --key. A redirect to another origin does not take the key along (Go's
// client drops only Authorization and cookies there, and the key goes in
// x-api-key): a proxy's redirect, or a mistyped --url, must not hand the
// key to whatever host it names. Same origin, or an upgrade of the same
// host to https, keeps it.
func keyClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		first := via[0].URL
		if req.URL.Host != first.Host || req.URL.Scheme != first.Scheme && req.URL.Scheme != "https" {
			req.Header.Del("X-Api-Key")
			req.Header.Del("Authorization")
		}
		return nil
	}}
}

// get fetches base+path; an answer other than 200 is an error quoting the
// server's text.
func get(ctx context.Context, client *http.Client, base, path, key string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+path, nil)
	if err != nil {
		return nil, err
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, unreachable(err, base)
	}
	defer resp.Body.Close()
	// As large as a bundle may be: a ledger of many large proofs is read
	// whole, and one beyond is named, not cut short into invalid JSON.
	body, err := io.ReadAll(io.LimitReader(resp.Body, translog.MaxBundleSize+1))
	if err != nil {
		return nil, err
	}
	if len(body) > translog.MaxBundleSize {
		return nil, fmt.Errorf("GET %s: the answer is larger than %d MiB, the most an audit bundle holds", path, translog.MaxBundleSize>>20)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, newAnswerError(path, resp.StatusCode, resp.Status, body)
	}
	return body, nil
}

// unreachable adds to a request's error, when nothing listens at base
// (connection refused), what the user checks: Go's "dial tcp ...:
// connect: connection refused" said neither.
func unreachable(err error, base string) error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%w: nothing listens at %s; is baton serve running there? (check --url: make run serves http://%s unless given ADDR=)", err, base, defaultAddr)
	}
	return err
}

// verifyBundle is `baton ledger verify --bundle`: offline, no server, no
// data files.
// keySetting names where vkey came from (--log-key or BATON_LOG_KEY).
func verifyBundle(path, oldPath, keySetting, vkey string, witnesses []string, quorum int, stdout io.Writer) error {
	if vkey == "" {
		return usageError{errors.New("--bundle needs --log-key (the verifier key the operator published, name+hash+key)")}
	}
	if _, err := checkLogKey(keySetting, vkey); err != nil {
		return err
	}
	read := func(p string) (translog.Bundle, error) {
		f, err := os.Open(p)
		if err != nil {
			return translog.Bundle{}, err
		}
		defer f.Close()
		b, err := translog.ReadBundle(f)
		if errors.Is(err, io.EOF) {
			return b, fmt.Errorf("%s is empty (a ledger export that failed leaves its file so: export it again)", p)
		}
		if err != nil {
			return b, fmt.Errorf("%s: %w", p, err)
		}
		return b, nil
	}
	b, err := read(path)
	if err != nil {
		return err
	}
	var old *translog.Bundle
	if oldPath != "" {
		o, err := read(oldPath)
		if err != nil {
			return err
		}
		old = &o
	}
	rep, err := translog.VerifyBundle(b, vkey, old, witnesses, quorum)
	if err != nil {
		return err
	}
	for _, p := range rep.Problems {
		switch {
		case p.Seq == 0:
			fmt.Fprintf(stdout, "BROKEN handoff %s: %s\n", b.HandoffID, p.Detail)
		case p.LeafIndex >= 0:
			fmt.Fprintf(stdout, "BROKEN handoff %s: event %d, leaf %d: %s\n", b.HandoffID, p.Seq, p.LeafIndex, p.Detail)
		default:
			fmt.Fprintf(stdout, "BROKEN handoff %s: event %d: %s\n", b.HandoffID, p.Seq, p.Detail)
		}
	}
	if len(rep.Problems) > 0 {
		fmt.Fprintf(stdout, "handoff %s: %d events, %d proved, %d problems\n", b.HandoffID, rep.Events, rep.Proved, len(rep.Problems))
		return errChainBroken
	}
	for _, cp := range rep.Checkpoints {
		fmt.Fprintf(stdout, "checkpoint %s size %d root %s\n", cp.Origin, cp.Size, cp.Root)
	}
	fmt.Fprintf(stdout, "ok %s: %d events, chain intact, every event in the log\n", b.HandoffID, rep.Events)
	return nil
}

// checkLogKey reads --log-key, a verifier key (name+hash+key), given as
// setting (the flag or BATON_LOG_KEY). What is
// not one is told for what it is, as the note library calls every such
// value a "malformed verifier id": the signing key (a secret, never
// echoed), or an error answer of GET /v1/log/key passed on by $(curl ...).
func checkLogKey(setting, vkey string) (note.Verifier, error) {
	v, err := note.NewVerifier(vkey)
	switch {
	case err == nil:
		return v, nil
	case strings.HasPrefix(vkey, "PRIVATE+KEY+"):
		return nil, errors.New(setting + ": that is the log's signing key, a secret for the server alone: give its verifier key (name+hash+key), which baton log keygen printed and GET /v1/log/key serves")
	case strings.HasPrefix(vkey, "{"):
		var p struct{ Code, Detail string }
		json.Unmarshal([]byte(vkey), &p)
		return nil, fmt.Errorf("%s: not a key but an error answer (%s: %q): GET /v1/log/key serves the verifier key once the server has a signing key (baton log keygen, then a restart)", setting, p.Code, p.Detail)
	}
	return nil, fmt.Errorf("%s: %w (want the log's verifier key, name+hash+key)", setting, err)
}

// logVerify is `baton log verify`: today's log, read as tiles from a
// server, must extend the checkpoint kept earlier (an RFC 6962
// consistency proof). With --mirror, the level-0 tiles and entries of
// each log verified are kept there, so that a later failure names the
// first entry that differs.
func logVerify(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("log verify", flag.ContinueOnError)
	vkey := fs.String("log-key", os.Getenv("BATON_LOG_KEY"), "the log's verifier key, name+hash+key (or BATON_LOG_KEY)")
	oldPath := fs.String("old", "", "a signed checkpoint kept earlier (GET /v1/log/checkpoint saved to a file)")
	base := fs.String("url", "http://127.0.0.1:8080", "the server's base URL")
	key := fs.String("key", os.Getenv("BATON_API_KEY"), "an admin API key, to read entries (naming a divergence; --mirror); or BATON_API_KEY (--key '' for none)")
	mirror := fs.String("mirror", "", "a directory keeping the verified log's level-0 tiles and entries")
	var witnesses stringsFlag
	fs.Var(&witnesses, "witness", "a witness's verifier key (C2SP tlog-cosignature); give it once per witness")
	quorum := fs.Int("witness-quorum", 0, "how many of the --witness keys must have cosigned today's checkpoint")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *quorum < 0 || *quorum > len(witnesses) {
		return fmt.Errorf("--witness-quorum %d: from 0 to the %d --witness keys given", *quorum, len(witnesses))
	}
	if err := checkBaseURL("--url", *base); err != nil {
		return err
	}
	if *vkey == "" || *oldPath == "" {
		return usageError{errors.New("usage: baton log verify --log-key KEY --old CHECKPOINT [--url URL] [--key KEY] [--mirror DIR]")}
	}
	v, err := checkLogKey(setting(fs, "log-key", "BATON_LOG_KEY"), strings.TrimSpace(*vkey))
	if err != nil {
		return err
	}
	oldSigned, err := os.ReadFile(*oldPath)
	if err != nil {
		return fmt.Errorf("--old: %w", err)
	}
	if len(bytes.TrimSpace(oldSigned)) == 0 {
		return fmt.Errorf("--old %s is empty (a curl of GET /v1/log/checkpoint that failed leaves its file so): it holds no checkpoint to check today's log against", *oldPath)
	}
	if err := keptIsNoCheckpoint(*oldPath, oldSigned); err != nil {
		return err
	}
	old, err := translog.OpenCheckpoint(oldSigned, v)
	if err != nil {
		return fmt.Errorf("%s: %w", *oldPath, err)
	}
	client := keyClient()
	newSigned, err := get(ctx, client, *base, "/v1/log/checkpoint", "")
	if ae, ok := errors.AsType[*answerError](err); ok && ae.code == "no_checkpoint" {
		return &notCheckedError{fmt.Sprintf("%s has no signed checkpoint yet (no replica holding the log's signing key has signed one), so nothing was checked. The checkpoint kept (%s, %d entries) was signed with this key: if this server showed it before, its signed log is no longer there (a data directory restored from before its first checkpoint, or started anew) or no replica serving it holds the key; ask again once a checkpoint is signed",
			*base, old.Origin, old.Size)}
	}
	if ae, ok := errors.AsType[*answerError](err); ok && ae.code == "log_forked" {
		// The server's own finding that its store's events changed after
		// they were signed: a fork, not a failure to ask again about.
		fmt.Fprintf(stdout, "BROKEN: the server serves no checkpoint, as its log forked: %s\n", ae.detail)
		return errLogBroken
	}
	if err != nil {
		return err
	}
	cur, err := translog.OpenCheckpoint(newSigned, v)
	if err != nil {
		return fmt.Errorf("today's checkpoint: %w", err)
	}
	if *quorum > 0 {
		ws, err := translog.NewWitnessVerifiers(witnesses)
		if err != nil {
			return fmt.Errorf("--witness: %w", err)
		}
		if _, err := translog.Witnessed(newSigned, v, ws, *quorum); err != nil {
			fmt.Fprintf(stdout, "BROKEN: today's %v\n", err)
			return errLogBroken
		}
	}
	if cur.Origin != old.Origin {
		fmt.Fprintf(stdout, "BROKEN: today's checkpoint is of log %q, the one kept of %q\n", cur.Origin, old.Origin)
		return errLogBroken
	}
	tr := &httpTiles{ctx: ctx, client: client, base: *base, key: strings.TrimSpace(*key)}
	if cur.Size < old.Size {
		return olderCheckpoint(stdout, old, cur, tr)
	}
	hr := tlog.TileHashReader(tlog.Tree{N: cur.Size, Hash: cur.Root}, tr)
	var checkErr error
	if cur.Size == old.Size {
		if cur.Root != old.Root {
			checkErr = fmt.Errorf("FORK: both checkpoints are of size %d, with roots %s (kept) and %s (today)", old.Size, old.Root, cur.Root)
		}
	} else {
		p, err := tlog.ProveTree(cur.Size, old.Size, hr)
		if err != nil {
			return fmt.Errorf("reading today's tiles: %w", err)
		}
		if err := tlog.CheckTree(p, cur.Size, cur.Root, old.Size, old.Root); err != nil {
			checkErr = fmt.Errorf("FORK: today's log (%d entries, root %s) does not extend the checkpoint kept (%d entries, root %s): the first %d entries were changed", cur.Size, cur.Root, old.Size, old.Root, old.Size)
		}
	}
	if checkErr != nil {
		fmt.Fprintf(stdout, "BROKEN: %s\n", checkErr)
		if *mirror != "" {
			nameDivergence(stdout, *mirror, old.Size, hr, tr)
		} else {
			fmt.Fprintln(stdout, "(a checkpoint alone cannot name the entry; keep a --mirror to have it named)")
		}
		return errLogBroken
	}
	fmt.Fprintf(stdout, "ok: today's log (%s, %d entries, root %s) extends the checkpoint kept (%d entries, root %s)\n", cur.Origin, cur.Size, cur.Root, old.Size, old.Root)
	if *mirror != "" {
		var kept mirrorKept
		if err := saveMirror(*mirror, cur.Size, newSigned, hr, tr, &kept); errors.Is(err, errBundleBroken) {
			fmt.Fprintf(stdout, "BROKEN: %v\n", err)
			return errLogBroken
		} else if err != nil {
			return fmt.Errorf("--mirror: %w", err)
		}
		fmt.Fprintf(stdout, "kept the level-0 tiles of %d entries in %s", cur.Size, *mirror)
		if tr.key != "" {
			fmt.Fprintf(stdout, ", and %d of the entries, each checked against its tile", kept.entries)
		}
		fmt.Fprintln(stdout)
		for _, s := range kept.skipped {
			fmt.Fprintf(stdout, "NOT KEPT: %s\n", s)
		}
	}
	return nil
}

// keptIsNoCheckpoint says what a kept checkpoint's file holds when it is
// the error answer a server with none yet gave to the curl that saved it
// (an empty file is told before): it was told as a text that is no signed
// checkpoint, its code and detail unsaid.
func keptIsNoCheckpoint(path string, b []byte) error {
	b = bytes.TrimSpace(b)
	var p struct{ Code, Detail string }
	if len(b) > 0 && b[0] == '{' && json.Unmarshal(b, &p) == nil && p.Code != "" {
		return fmt.Errorf("%s is not a signed checkpoint but an error answer (%s: %q), saved from a server that had none to give: keep a checkpoint once GET /v1/log/checkpoint serves one", path, p.Code, p.Detail)
	}
	return nil
}

// notCheckedError is log verify finding no checkpoint to check the one
// kept against: exit 2, apart from a log proved broken or a failure (1).
type notCheckedError struct{ msg string }

func (e *notCheckedError) Error() string { return e.msg }
func (e *notCheckedError) ExitCode() int { return 2 }

// olderCheckpoint is log verify when the server's checkpoint is older
// than the one kept. Replicas follow the store apart, so one may serve a
// checkpoint older than another served a moment before: that removes
// nothing if the kept checkpoint extends today's, which the server's tiles
// at the kept size prove. Tiles that do not hash to the kept root are a
// fork; a log that does not reach the kept size has lost entries, or is
// behind.
func olderCheckpoint(stdout io.Writer, old, cur translog.Checkpoint, tr *httpTiles) error {
	hr := tlog.TileHashReader(tlog.Tree{N: old.Size, Hash: old.Root}, tr)
	p, err := tlog.ProveTree(old.Size, cur.Size, hr)
	var ae *answerError
	switch {
	case errors.As(err, &ae) && ae.status == http.StatusNotFound:
		fmt.Fprintf(stdout, "BROKEN: today's log has %d entries, fewer than the %d of the checkpoint kept, and the server has no tiles of them: entries were removed (or this replica is behind: ask again)\n", cur.Size, old.Size)
		return errLogBroken
	case err == nil:
		err = tlog.CheckTree(p, old.Size, old.Root, cur.Size, cur.Root)
	}
	if err != nil {
		fmt.Fprintf(stdout, "BROKEN: FORK: the checkpoint kept (%d entries, root %s) does not extend today's (%d entries, root %s): %v\n", old.Size, old.Root, cur.Size, cur.Root, err)
		return errLogBroken
	}
	fmt.Fprintf(stdout, "ok: today's checkpoint (%s, %d entries, root %s) is older than the one kept (%d entries, root %s), which extends it: this replica has not read the newer one yet\n", cur.Origin, cur.Size, cur.Root, old.Size, old.Root)
	return nil
}

// httpTiles reads a log's tiles from a server (tlog.TileReader).
type httpTiles struct {
	ctx    context.Context
	client *http.Client
	base   string
	key    string
}

func (h *httpTiles) Height() int { return translog.TileHeight }

func (h *httpTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := get(h.ctx, h.client, h.base, "/v1/log/"+tilePath(t, false), "")
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (h *httpTiles) SaveTiles([]tlog.Tile, [][]byte) {}

func tilePath(t tlog.Tile, entries bool) string {
	return translog.TilePath{Entries: entries, L: t.L, N: t.N, W: t.W}.String()
}

// entries reads the entries of the level-0 tile t.
func (h *httpTiles) entries(t tlog.Tile) ([][]byte, error) {
	b, err := get(h.ctx, h.client, h.base, "/v1/log/"+tilePath(t, true), h.key)
	if err != nil {
		return nil, err
	}
	return splitBundle(b, t.W)
}

// splitBundle reads an entry bundle of w entries.
func splitBundle(b []byte, w int) ([][]byte, error) {
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 2 || len(b) < 2+int(binary.BigEndian.Uint16(b)) {
			return nil, errors.New("entry bundle: truncated")
		}
		n := int(binary.BigEndian.Uint16(b))
		out = append(out, b[2:2+n])
		b = b[2+n:]
	}
	if len(out) != w {
		return nil, fmt.Errorf("entry bundle: %d entries, want %d", len(out), w)
	}
	return out, nil
}

// saveMirror keeps the checkpoint, the level-0 tiles covering size
// entries and, with a key, their entries.
func saveMirror(dir string, size int64, signed []byte, hr tlog.HashReader, tr *httpTiles, m *mirrorKept) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "checkpoint"), signed, 0o600); err != nil {
		return err
	}
	for n := int64(0); n*translog.TileWidth < size; n++ {
		w := min(size-n*translog.TileWidth, translog.TileWidth)
		t := tlog.Tile{H: translog.TileHeight, L: 0, N: n, W: int(w)}
		data, err := tlog.ReadTileData(t, hr)
		if err != nil {
			return err
		}
		if err := writeMirrorFile(dir, tilePath(t, false), data); err != nil {
			return err
		}
		if tr.key == "" {
			continue
		}
		first := n * translog.TileWidth
		b, err := get(tr.ctx, tr.client, tr.base, "/v1/log/"+tilePath(t, true), tr.key)
		if ae := (*answerError)(nil); errors.As(err, &ae) && ae.status == http.StatusUnprocessableEntity {
			// A bundle the server cannot serve (an entry over 65,535
			// bytes): its tile is kept and checked; its events are in
			// their handoffs' ledgers.
			m.skipped = append(m.skipped, fmt.Sprintf("the entries %d to %d were not kept: %v", first, first+w-1, err))
			continue
		}
		if err != nil {
			// A key refused, or a server failing: no entry would be kept.
			return fmt.Errorf("the entries %d to %d: %w", first, first+w-1, err)
		}
		es, err := splitBundle(b, int(w))
		if err != nil {
			return fmt.Errorf("%w: the entries %d to %d: %v", errBundleBroken, first, first+w-1, err)
		}
		for i, e := range es {
			if h := tlog.RecordHash(e); !bytes.Equal(h[:], data[32*i:32*i+32]) {
				return fmt.Errorf("%w: entry %d does not hash to its leaf in the tile", errBundleBroken, first+int64(i))
			}
		}
		if err := writeMirrorFile(dir, tilePath(t, true), b); err != nil {
			return err
		}
		m.entries += w
	}
	return nil
}

// errBundleBroken: an entry bundle does not match the tile the
// checkpoint proves.
var errBundleBroken = errors.New("an entry bundle does not match the log")

// mirrorKept is what saveMirror kept of the entries.
type mirrorKept struct {
	entries int64
	skipped []string
}

func writeMirrorFile(dir, path string, data []byte) error {
	p := filepath.Join(dir, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o600)
}

// nameDivergence compares the mirror's leaf hashes with today's, up to
// size, and names the first entry that differs: as the mirror kept it
// and as the log holds it today.
func nameDivergence(w io.Writer, dir string, size int64, hr tlog.HashReader, tr *httpTiles) {
	for n := int64(0); n*translog.TileWidth < size; n++ {
		width := min(size-n*translog.TileWidth, translog.TileWidth)
		t := tlog.Tile{H: translog.TileHeight, L: 0, N: n, W: int(width)}
		kept := readMirrorTile(dir, n, int(width))
		if kept == nil {
			fmt.Fprintf(w, "the mirror in %s has no tile for entries %d to %d\n", dir, n*translog.TileWidth, n*translog.TileWidth+width-1)
			return
		}
		today, err := tlog.ReadTileData(t, hr)
		if err != nil {
			fmt.Fprintf(w, "reading today's tile %s: %v\n", tilePath(t, false), err)
			return
		}
		for i := 0; i < int(width); i++ {
			if bytes.Equal(kept[32*i:32*i+32], today[32*i:32*i+32]) {
				continue
			}
			idx := n*translog.TileWidth + int64(i)
			fmt.Fprintf(w, "first divergence: entry %d, leaf hash %s kept, %s today\n", idx,
				base64.StdEncoding.EncodeToString(kept[32*i:32*i+32]), base64.StdEncoding.EncodeToString(today[32*i:32*i+32]))
			if e := readMirrorEntry(dir, n, int(width), i); e != nil {
				fmt.Fprintf(w, "  kept:  %s\n", describeEntry(e))
			}
			if es, err := tr.entries(t); err == nil {
				fmt.Fprintf(w, "  today: %s\n", describeEntry(es[i]))
			}
			return
		}
	}
	fmt.Fprintln(w, "the mirror's leaf hashes match today's: the kept checkpoint is not the mirror's")
}

// readMirrorTile reads the mirror's level-0 tile n, full or as wide as
// needed (its first width hashes).
func readMirrorTile(dir string, n int64, width int) []byte {
	for _, w := range []int{translog.TileWidth, width} {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(translog.TilePath{N: n, W: w}.String())))
		if err == nil && len(b) == 32*w && w >= width {
			return b[:32*width]
		}
	}
	for w := translog.TileWidth - 1; w >= width; w-- {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(translog.TilePath{N: n, W: w}.String())))
		if err == nil && len(b) == 32*w {
			return b[:32*width]
		}
	}
	return nil
}

func readMirrorEntry(dir string, n int64, width, i int) []byte {
	for w := translog.TileWidth; w >= width; w-- {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(translog.TilePath{Entries: true, N: n, W: w}.String())))
		if err != nil {
			continue
		}
		if es, err := splitBundle(b, w); err == nil {
			return es[i]
		}
	}
	return nil
}

// describeEntry names an entry (canonical event bytes) by handoff, seq
// and type; quoted, as the text is the server's.
func describeEntry(e []byte) string {
	var ev struct {
		HandoffID string `json:"handoffId"`
		Seq       uint64 `json:"seq"`
		Type      string `json:"type"`
	}
	if json.Unmarshal(e, &ev) != nil {
		return fmt.Sprintf("%q", e)
	}
	return fmt.Sprintf("handoff %q event %d (%q), %d bytes", ev.HandoffID, ev.Seq, ev.Type, len(e))
}
