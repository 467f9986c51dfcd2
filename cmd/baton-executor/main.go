// Command baton-executor is Baton's reference executor: it takes the
// handoffs targeted at it from Baton's event stream, acts only on approved
// ones, runs the command its configuration maps the handoff's
// executorProtocol to, heartbeats while it runs, and reports the command's
// output as proof and its exit status as the result. docs/executor.md
// describes it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain"
)

const usage = `baton-executor: Baton's reference executor.

Usage:
  baton-executor --config executor.json [--url http://127.0.0.1:8080] [--key btn_sk_...] [--state ./baton-executor-state.json] [--max-runs N] [--timeout-seconds N]

The key may come from BATON_API_KEY and the URL from BATON_URL. The configuration
names the targetExecutor this executor takes handoffs for, and the command each
executorProtocol runs:

  {"executor": "ops-bot",
   "protocols": {"ops_bot.v1": {"command": ["sh", "-c", "certbot renew"], "artifactType": "log"}}}

At most maxRuns commands run at once (--max-runs, or "maxRuns" in the
configuration; four per core by default): a handoff approved beyond them
waits, unclaimed, for one to end.

A command runs for at most timeoutSeconds (--timeout-seconds, or "timeoutSeconds"
in the configuration; six hours by default, 0 for no limit): then its process
group gets SIGTERM, and SIGKILL ten seconds later, and its run is reported FAILED.
`

func main() {
	// SIGHUP too (the terminal it ran in closed), as baton serve has it:
	// it killed the process at once, and its commands' children ran on.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) { // asked for: on stdout, exit 0
			fmt.Fprint(os.Stdout, usage)
			return
		}
		fmt.Fprintln(os.Stderr, "baton-executor:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("baton-executor", flag.ContinueOnError)
	// The flag package prints nothing: the usage goes to stdout when asked
	// for (main), to stderr before a flag's error, which main says once.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	base := fs.String("url", envOr("BATON_URL", "http://127.0.0.1:8080"), "Baton's URL")
	key := fs.String("key", os.Getenv("BATON_API_KEY"), "an API key of the tenant whose handoffs it takes")
	configPath := fs.String("config", "", "the configuration file (JSON)")
	statePath := fs.String("state", "baton-executor-state.json", "where the executor remembers its runs across restarts")
	maxRuns := fs.Int("max-runs", 0, "how many commands run at once (the configuration's maxRuns, or four per core)")
	timeout := fs.Int("timeout-seconds", 0, "how long one command may run, 0 for no limit (the configuration's timeoutSeconds, or six hours)")
	if err := fs.Parse(args); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, usage)
		}
		return err
	}
	// The flag package stops at the first word that is not a flag: the
	// flags after it (--url, --state) would be dropped without a word.
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: baton-executor takes flags only (put each value after its flag, as --config executor.json)", fs.Arg(0))
	}
	maxRunsSet, timeoutSet := false, false
	fs.Visit(func(f *flag.Flag) {
		maxRunsSet = maxRunsSet || f.Name == "max-runs"
		timeoutSet = timeoutSet || f.Name == "timeout-seconds"
	})
	if maxRunsSet && *maxRuns < 1 {
		return fmt.Errorf("--max-runs %d: at least one command must be able to run", *maxRuns)
	}
	if timeoutSet {
		if msg := badTimeout(*timeout); msg != "" {
			return fmt.Errorf("--timeout-seconds %d: %s", *timeout, msg)
		}
	}
	// A key read with its line's end (CRLF) goes in no header: every
	// request failed, and was retried for ever as if Baton were down.
	*key = strings.TrimSpace(*key)
	if *key == "" {
		return errors.New("no key: pass --key or set BATON_API_KEY")
	}
	if strings.ContainsFunc(*key, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return errors.New("--key (or BATON_API_KEY) holds a space or a control character: no key does")
	}
	baseURL, err := checkURL(*base)
	if err != nil {
		return err
	}
	if *configPath == "" {
		return errors.New("no configuration: pass --config executor.json")
	}
	if *statePath == "" { // the temporary file and the lock went to ./.state-N and ./.lock
		return errors.New("--state is empty; give the state file (default ./baton-executor-state.json)")
	}
	// Told by the flag: a directory was "read DIR: is a directory", and a
	// missing one "open FILE.lock: no such file or directory".
	if fi, err := os.Stat(*statePath); err == nil && fi.IsDir() {
		return fmt.Errorf("--state %s is a directory; give the state file, such as %s", *statePath, filepath.Join(*statePath, "baton-executor-state.json"))
	}
	if dir := filepath.Dir(*statePath); !isDir(dir) {
		return fmt.Errorf("--state %s: the state file's directory %s does not exist; create it, or give a state file elsewhere", *statePath, dir)
	}
	cfg, err := readConfig(*configPath)
	if err != nil {
		return err
	}
	if maxRunsSet {
		cfg.MaxRuns = maxRuns
	}
	if timeoutSet {
		cfg.TimeoutSeconds = timeout
	}
	release, err := lockState(*statePath)
	if err != nil {
		return err
	}
	defer release()
	state, err := openState(*statePath)
	if err != nil {
		return err
	}
	log := zerolog.New(zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.TimeOnly, NoColor: !isTerminal(stderr)}).With().Timestamp().Logger()
	e := &Executor{Base: baseURL, Key: *key, Config: cfg, State: state, Log: log}
	log.Info().Str("url", baseURL).Str("executor", cfg.Executor).Int("protocols", len(cfg.Protocols)).Int("maxRuns", e.maxRuns()).Str("timeout", e.timeout().String()).Msg("baton-executor started")
	err = e.Run(ctx)
	if err == nil && ctx.Err() != nil {
		// Said whether or not a run was under way: an operator reading the
		// log sees that it stopped because it was told to.
		log.Info().Msg("baton-executor stopped (a signal); its runs resume at the next start")
	}
	return err
}

func readConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		// Named by its flag: "open executor.json: no such file or
		// directory" said neither which file it was nor what goes in it.
		return Config{}, fmt.Errorf("--config %s: %w (the configuration names the targetExecutor and the command of each executorProtocol: docs/executor.md)", path, err)
	}
	var c Config
	// A misspelt field ("protocol") is an error: ignored, it left an
	// executor that started and refused every handoff.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	// Two configurations in one file, or a name given twice, were read
	// without a word as the first object and the last of the two values.
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return Config{}, fmt.Errorf("%s: data after the configuration's JSON object, which ends at byte %d", path, end)
	}
	if name, err := givenTwice(json.NewDecoder(bytes.NewReader(b)), nil); err != nil || name != "" {
		if err == nil {
			err = fmt.Errorf("%s is given twice; a name must be given once", name)
		}
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	if c.Executor == "" {
		return Config{}, fmt.Errorf("%s: \"executor\" (the targetExecutor to take handoffs for) is required", path)
	}
	if len(c.Protocols) == 0 {
		return Config{}, fmt.Errorf("%s: \"protocols\" (the command of each executorProtocol) names none: nothing would ever run", path)
	}
	if c.MaxRuns != nil && *c.MaxRuns < 1 {
		return Config{}, fmt.Errorf("%s: \"maxRuns\" %d: at least one command must be able to run", path, *c.MaxRuns)
	}
	if c.TimeoutSeconds != nil {
		if msg := badTimeout(*c.TimeoutSeconds); msg != "" {
			return Config{}, fmt.Errorf("%s: \"timeoutSeconds\" %d: %s", path, *c.TimeoutSeconds, msg)
		}
	}
	for name, p := range c.Protocols {
		if len(p.Command) == 0 {
			return Config{}, fmt.Errorf("%s: protocol %q has no command", path, name)
		}
		// A program that is not there (a typo) failed every run given it:
		// each approved handoff was taken and closed FAILED.
		if _, err := exec.LookPath(p.Command[0]); err != nil {
			return Config{}, fmt.Errorf("%s: protocol %q: the command's program %q cannot be run: %w", path, name, p.Command[0], err)
		}
	}
	// A name Baton refuses in a contract is one no handoff can carry: the
	// executor waited for ever (a blank name), or retried its event stream
	// for ever on a 422 (a control character). Baton's own rules decide.
	check := func(target, protocol string) string {
		cc := domain.CreateContract{Objective: "-", TargetExecutor: target, ExecutorProtocol: protocol, RiskLevel: domain.RiskLevels[0]}
		var de *domain.Error
		if err := cc.Validate(); errors.As(err, &de) {
			for _, f := range de.Fields {
				if f.Pointer == "/targetExecutor" || f.Pointer == "/executorProtocol" {
					return f.Message
				}
			}
		}
		return ""
	}
	if msg := check(c.Executor, "p.v1"); msg != "" {
		return Config{}, fmt.Errorf("%s: \"executor\" %q: Baton refuses it as a contract's targetExecutor (%s), so no handoff can be targeted at it", path, c.Executor, msg)
	}
	for name, p := range c.Protocols {
		if msg := check(c.Executor, name); msg != "" {
			return Config{}, fmt.Errorf("%s: protocol %q: Baton refuses it as a contract's executorProtocol (%s), so no handoff can name it", path, name, msg)
		}
		// An artifact type as Baton takes it in a proof: every proof of
		// another was refused, and every run given up once it had run.
		if t := p.ArtifactType; t != "" {
			if _, bad := domain.NotPlain(t); bad || domain.Blank(t) || utf8.RuneCountInString(t) > 64 {
				return Config{}, fmt.Errorf("%s: protocol %q: \"artifactType\" %q: Baton takes 1 to 64 characters, not blank, without control characters", path, name, t)
			}
		}
	}
	return c, nil
}

// badTimeout says what is wrong with a command's time limit in seconds ("" when
// nothing is).
func badTimeout(n int) string {
	switch {
	case n < 0:
		return "0 (no limit) or more seconds"
	case int64(n) > int64(math.MaxInt64/time.Second):
		return "more seconds than a time limit can hold"
	}
	return ""
}

// givenTwice reads one JSON value and returns the first name given twice in
// one of its objects, as a path ("protocols"/"p.v1"/"command"). Names of the
// configuration's own fields are compared as encoding/json matches them,
// ignoring case; protocol names, the keys of "protocols", exactly.
func givenTwice(dec *json.Decoder, at []string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	switch tok {
	case json.Delim('{'):
		exact := len(at) == 1 && strings.EqualFold(at[0], "protocols")
		var seen []string
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return "", err
			}
			k, _ := kt.(string)
			for _, s := range seen {
				if s == k || !exact && strings.EqualFold(s, k) {
					return pathOf(append(at, k)), nil
				}
			}
			seen = append(seen, k)
			if name, err := givenTwice(dec, append(slices.Clip(at), k)); err != nil || name != "" {
				return name, err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		for dec.More() {
			if name, err := givenTwice(dec, at); err != nil || name != "" {
				return name, err
			}
		}
		_, err = dec.Token()
	}
	return "", err
}

func pathOf(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, "/")
}

// checkURL: Baton's URL as requests are made from it. A URL without a
// scheme was retried for ever as an unparsable request, and one with a
// trailing slash asked for //v1/... and got 404 for ever.
func checkURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("--url %q: want Baton's base URL, such as http://127.0.0.1:8080", raw)
	}
	return strings.TrimRight(raw, "/"), nil
}

// isTerminal: colours only for a person watching, not in a log file.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
