package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/ledger"
)

// errChainBroken makes `baton ledger verify` exit 1 after printing the break.
var errChainBroken = errors.New("ledger verification failed")

// ledgerVerify recomputes hash chains, from the data directory (the server
// must be stopped: the file is locked), from KurrentDB (--store kurrent,
// while servers run), or through the API (--url), where an auditor checks
// what the server shows against its own arithmetic.
func ledgerVerify(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ledger verify", flag.ContinueOnError)
	data := fs.String("data", dataDirDefault(), "data directory")
	var env envVars
	storeOpts := addStoreFlags(fs, &env)
	base := fs.String("url", "", "verify through a running server at this base URL instead of the store")
	key := fs.String("key", os.Getenv("BATON_API_KEY"), "API key for --url (or BATON_API_KEY)")
	bundle := fs.String("bundle", "", "check this audit bundle (baton ledger export) offline instead: no server, no data files")
	logKey := fs.String("log-key", os.Getenv("BATON_LOG_KEY"), "with --bundle: the transparency log's verifier key, name+hash+key (or BATON_LOG_KEY)")
	oldBundle := fs.String("old", "", "with --bundle: a bundle of the same handoff kept earlier, whose receipts must still hold")
	var witnesses stringsFlag
	fs.Var(&witnesses, "witness", "with --bundle: a witness's verifier key (C2SP tlog-cosignature); give it once per witness")
	quorum := fs.Int("witness-quorum", 0, "with --bundle: how many of the --witness keys must have cosigned each proof's checkpoint")
	if err := env.parse(fs, args); err != nil {
		return err
	}
	// The two forms do not mix: what one form does not read was ignored
	// without a word, and the check that ran said "ok" of something else.
	var offline, online []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "log-key", "old", "witness", "witness-quorum":
			offline = append(offline, "--"+f.Name)
		case "data", "url", "key", "store", "kurrentdb-url", "kurrentdb-max-append-size":
			online = append(online, "--"+f.Name)
		}
	})
	switch {
	case *bundle != "" && fs.NArg() > 0:
		return fmt.Errorf("%q: ledger verify --bundle checks the handoff its bundle holds, and takes no handoff ids", fs.Arg(0))
	case *bundle != "" && len(online) > 0:
		return fmt.Errorf("%s: ledger verify --bundle reads no server and no data files", online[0])
	case *bundle == "" && len(offline) > 0:
		return fmt.Errorf("%s goes with --bundle (an audit bundle checked offline)", offline[0])
	}
	if *bundle == "" {
		if err := serverOrStore(fs, "ledger verify"); err != nil {
			return err
		}
	}
	if *base == "" {
		if err := storeOpts.dataNotRead(); err != nil {
			return err
		}
	}
	if *quorum < 0 || *quorum > len(witnesses) { // as log verify has it
		return fmt.Errorf("--witness-quorum %d: from 0 to the %d --witness keys given", *quorum, len(witnesses))
	}
	if *base != "" {
		if err := checkBaseURL("--url", *base); err != nil {
			return err
		}
	}
	if *bundle != "" {
		return verifyBundle(*bundle, *oldBundle, setting(fs, "log-key", "BATON_LOG_KEY"), strings.TrimSpace(*logKey), witnesses, *quorum, stdout)
	}
	// Each handoff is verified once, against every receipt given for it.
	var ids []string
	receipts := map[string][]domain.LedgerHead{}
	for _, arg := range fs.Args() {
		id, receipt, err := parseLedgerArg(arg)
		if err != nil {
			return err
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
		if receipt != nil {
			receipts[id] = append(receipts[id], *receipt)
		}
	}
	if *base != "" {
		// A key read with its line's end (CRLF) goes in no header.
		return verifyOverHTTP(ctx, *base, strings.TrimSpace(*key), ids, receipts, stdout)
	}
	if err := storeOpts.notBackupByDefault(fs, *data); err != nil {
		return err
	}
	store, err := storeOpts.openToRead(ctx, *data, zerolog.Nop())
	if errors.Is(err, eventstore.ErrLocked) {
		return fmt.Errorf("%w; while it serves, verify through it: --url http://HOST:PORT --key KEY", err)
	}
	if err != nil {
		return err
	}
	defer store.Close()
	return verifyStore(ctx, store, ids, receipts, stdout)
}

// serverOrStore refuses the flags of a store beside --url, and --key
// without it: the form not taken was ignored without a word, and "ok" said
// of the server to a user who had named a data directory, or of the data
// directory to one who had given a server's key.
func serverOrStore(fs *flag.FlagSet, cmd string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["url"] {
		for _, f := range []string{"data", "store", "kurrentdb-url", "kurrentdb-max-append-size"} {
			if given[f] {
				return usageError{fmt.Errorf("--%s: %s --url reads the server, not a store or data directory: give --url or --%s, not both", f, cmd, f)}
			}
		}
		return nil
	}
	for _, f := range []string{"key", "wait"} {
		if given[f] {
			return usageError{fmt.Errorf("--%s goes with --url (a server's API); %s without --url reads the store in --data", f, cmd)}
		}
	}
	return nil
}

// parseLedgerArg reads a ledger to verify: a handoff id, optionally with
// the receipt an executor kept, ID@SEQ:HASH (the ledgerHead {seq, hash} a
// callback answered; the hash is 64 hex digits, either case).
func parseLedgerArg(arg string) (id string, receipt *domain.LedgerHead, err error) {
	id, rc, hasReceipt := strings.Cut(arg, "@")
	if !printableID(id) {
		return "", nil, fmt.Errorf("%q: want a handoff id, optionally as ID@SEQ:HASH", arg)
	}
	if !hasReceipt {
		return id, nil, nil
	}
	seq, hash, ok := strings.Cut(rc, ":")
	n, perr := strconv.ParseUint(seq, 10, 64)
	if _, herr := hex.DecodeString(hash); !ok || perr != nil || n == 0 || len(hash) != 64 || herr != nil {
		return "", nil, fmt.Errorf("%q: a receipt is ID@SEQ:HASH, the ledgerHead {seq, hash} a callback answered (SEQ from 1, HASH 64 hex digits)", arg)
	}
	return id, &domain.LedgerHead{Seq: n, Hash: strings.ToLower(hash)}, nil
}

// printableID reports whether a handoff id can be printed in a report
// line as it is: not empty, no control characters.
func printableID(id string) bool {
	return id != "" && !strings.ContainsFunc(id, unicode.IsControl)
}

// answerError is a server's answer other than 200 to ledger verify --url.
type answerError struct {
	status       int
	code, detail string
	msg          string
}

func (e *answerError) Error() string { return e.msg }

// newAnswerError is the server's answer other than 200 to GET path, its
// text quoted (it is the server's); a key refused is told with the flag
// that gives it, as the server's own text speaks of headers.
func newAnswerError(path string, status int, statusText string, body []byte) *answerError {
	var p struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
	}
	json.Unmarshal(body, &p)
	msg := fmt.Sprintf("GET %s: %s: %q", path, statusText, quotedBody(body))
	switch {
	case status == http.StatusUnauthorized && p.Code == "missing_api_key":
		msg += "; give an API key with --key KEY (or BATON_API_KEY)"
	case status == http.StatusUnauthorized:
		msg += "; the server does not take the key given (--key, or BATON_API_KEY): give one it made"
	}
	return &answerError{status: status, code: p.Code, detail: p.Detail, msg: msg}
}

// maxQuotedBody is how much of an answer's body an error quotes: a
// proxy's error page in front of the server is kilobytes of HTML.
const maxQuotedBody = 300

// quotedBody is the body an error quotes, cut at maxQuotedBody bytes with
// how long it was.
func quotedBody(body []byte) string {
	b := strings.TrimSpace(string(body))
	if len(b) <= maxQuotedBody {
		return b
	}
	return fmt.Sprintf("%s… (%d bytes in all)", strings.ToValidUTF8(b[:maxQuotedBody], ""), len(b))
}

// verifyStore verifies the ledgers of the handoffs ids (every handoff in
// the store when ids is nil), printing one line per handoff and a tally.
// It returns errChainBroken when any ledger is broken or missing.
func verifyStore(ctx context.Context, store eventstore.Store, ids []string, receipts map[string][]domain.LedgerHead, stdout io.Writer) error {
	var t tally
	if err := ledger.VerifyHandoffs(ctx, store, ids, receipts, func(r ledger.ChainReport) { t.print(stdout, r) }); err != nil {
		return err
	}
	return t.close(stdout)
}

// tally prints the report of each handoff and counts them.
type tally struct{ handoffs, events, broken int }

func (t *tally) print(w io.Writer, r ledger.ChainReport) {
	t.handoffs++
	t.events += r.Events
	switch r.Status {
	case ledger.ChainIntact:
		fmt.Fprintf(w, "ok %s: %d events, head %d %s\n", r.HandoffID, r.Events, r.Head.Seq, r.Head.Hash)
		return
	case ledger.ChainMissing:
		fmt.Fprintf(w, "handoff %s: not found\n", r.HandoffID)
	default:
		fmt.Fprintf(w, "BROKEN %s\n", r.Break)
	}
	t.broken++
}

// close prints the closing line; errChainBroken when a ledger was not ok.
func (t *tally) close(w io.Writer) error {
	fmt.Fprintf(w, "%d handoffs, %d events, %d broken\n", t.handoffs, t.events, t.broken)
	if t.broken > 0 {
		return errChainBroken
	}
	return nil
}

func verifyOverHTTP(ctx context.Context, base, key string, ids []string, receipts map[string][]domain.LedgerHead, stdout io.Writer) error {
	client := keyClient()
	get := func(path string, v any) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("x-api-key", key)
		resp, err := client.Do(req)
		if err != nil {
			return unreachable(err, base)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return newAnswerError(path, resp.StatusCode, resp.Status, body)
		}
		return json.Unmarshal(body, v)
	}
	if ids == nil {
		seen := map[string]bool{}
		for cursor := ""; ; {
			var page struct {
				Data []struct {
					HandoffID string `json:"handoffId"`
				} `json:"data"`
				NextCursor string `json:"nextCursor"`
			}
			if err := get("/v1/handoff/contracts?limit=100&cursor="+url.QueryEscape(cursor), &page); err != nil {
				return err
			}
			for _, c := range page.Data {
				if !printableID(c.HandoffID) {
					// Printed as is, such an id could forge an "ok" line
					// in this report.
					return fmt.Errorf("GET /v1/handoff/contracts: the server listed the handoff id %q, which is empty or holds control characters", c.HandoffID)
				}
				ids = append(ids, c.HandoffID)
			}
			if page.NextCursor == "" {
				break
			}
			if seen[page.NextCursor] {
				return fmt.Errorf("GET /v1/handoff/contracts: the server gave cursor %q twice; the listing would never end", page.NextCursor)
			}
			seen[page.NextCursor] = true
			cursor = page.NextCursor
		}
	}
	var t tally
	for _, id := range ids {
		var l struct {
			Events []domain.Recorded `json:"events"`
		}
		err := get("/v1/executions/"+url.PathEscape(id)+"/ledger", &l)
		if ae := (*answerError)(nil); errors.As(err, &ae) && ae.code == "handoff_quarantined" {
			// The server holds an event of it that it cannot apply: report
			// it (quoted: the text is the server's) and go on with the rest.
			t.print(stdout, ledger.ChainReport{HandoffID: id, Status: ledger.ChainBroken,
				Break: fmt.Sprintf("handoff %s: quarantined by the server: %q", id, ae.detail)})
			continue
		}
		if ae := (*answerError)(nil); errors.As(err, &ae) && ae.code == "handoff_not_found" {
			// As the store reports it: named, counted, and the rest go on.
			t.print(stdout, ledger.ChainReport{HandoffID: id, Status: ledger.ChainMissing})
			continue
		}
		if err != nil {
			return err
		}
		r := ledger.CheckChain(id, l.Events, receipts[id])
		if r.Status == ledger.ChainMissing { // every ledger starts with contract_created
			r.Status, r.Break = ledger.ChainBroken, fmt.Sprintf("handoff %s: the server shows a ledger without events", id)
		}
		t.print(stdout, r)
	}
	return t.close(stdout)
}

// keysCreate prints a new key once on stdout. On the embedded store it
// opens the data directory, so it runs while the server is stopped; on
// KurrentDB it runs at any time. POST /v1/admin/keys does the same through
// a running server.
func keysCreate(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
	data := fs.String("data", dataDirDefault(), "data directory")
	var env envVars
	storeOpts := addStoreFlags(fs, &env)
	tenant := fs.String("tenant", "", "tenant the key belongs to (required)")
	admin := fs.Bool("admin", false, "an admin key: may review proof, create keys, and read every tenant")
	label := fs.String("label", "", "a note to recognise the key by")
	if err := env.parse(fs, args); err != nil {
		return err
	}
	if *tenant == "" {
		return usageError{errors.New("--tenant is required")}
	}
	// Before the store is opened, which makes one at a new --data.
	if !domain.ValidTenant(*tenant) {
		return fmt.Errorf("--tenant %q: tenant names are 1-63 lowercase letters, digits, '_' or '-', starting with a letter or digit", *tenant)
	}
	if fe := ledger.CheckKeyLabel(*label); fe != nil {
		return fmt.Errorf("--label %s", fe.Message)
	}
	// As POST /v1/admin/keys: a label is kept in the key's event for good
	// and shown in every listing, which never shows a key.
	if *label != "" {
		scan, _ := newScanner()
		if rule, found := scan.ScanText(*label); found {
			return fmt.Errorf("--label looks like it holds a secret (%s); a label names the key's holder or use, and is kept for good", rule)
		}
	}
	if err := storeOpts.dataNotRead(); err != nil {
		return err
	}
	if err := storeOpts.notMigratedFrom(*data); err != nil {
		return err
	}
	store, err := storeOpts.open(ctx, *data, zerolog.Nop())
	if errors.Is(err, eventstore.ErrLocked) {
		return fmt.Errorf("%w; while it serves, create keys with POST /v1/admin/keys and an admin key", err)
	}
	if err != nil {
		return err
	}
	defer store.Close()
	k, err := ledger.NewKeys(store).Create(ctx, "cli:keys-create", "", *tenant, *admin, *label)
	if err != nil {
		return err
	}
	kind := "tenant"
	if k.Admin {
		kind = "admin"
	}
	if _, err := fmt.Fprintln(stdout, k.Key); err != nil {
		// Said "created ... shown once" and exited 0, the key nowhere.
		return fmt.Errorf("%s key %s for tenant %q was created, but writing it out failed (%w): nobody has it; revoke it (DELETE /v1/admin/keys/%s, while a server runs) and create another", kind, k.KeyID, k.Tenant, err, k.KeyID)
	}
	fmt.Fprintf(os.Stderr, "created %s key %s for tenant %q (%s). It is shown once; Baton stores only its hash.\n", kind, k.KeyID, k.Tenant, k.Display)
	return nil
}
