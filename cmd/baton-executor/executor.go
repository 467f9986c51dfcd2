package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain"
)

// Protocol is what the executor runs for one executorProtocol.
type Protocol struct {
	// Command is the program and its arguments. It gets the contract as
	// JSON on standard input and BATON_HANDOFF_ID, BATON_EXECUTOR_RUN_ID,
	// BATON_OBJECTIVE and BATON_EXECUTOR_PROTOCOL in its environment.
	Command []string `json:"command"`
	// ArtifactType is the type of the proof artifact that carries the
	// command's output ("log" when empty).
	ArtifactType string `json:"artifactType"`
}

// Config is the executor's configuration file.
type Config struct {
	Executor  string              `json:"executor"` // the targetExecutor it takes handoffs for
	Protocols map[string]Protocol `json:"protocols"`
	// MaxRuns bounds the commands running at once (defaultMaxRuns when
	// nil); a handoff approved beyond it waits, unclaimed, for a slot.
	MaxRuns *int `json:"maxRuns,omitempty"`
	// TimeoutSeconds bounds how long one command runs (defaultTimeout
	// when nil, none when 0): a command that hung ran for ever, holding
	// its slot, when no deadline of its contract closed the handoff.
	TimeoutSeconds *int `json:"timeoutSeconds,omitempty"`
}

// defaultTimeout is generous: a command that runs longer than this has
// hung far more often than it still works, and one that needs longer is
// given it in the configuration.
const defaultTimeout = 6 * time.Hour

func (e *Executor) timeout() time.Duration {
	if e.Config.TimeoutSeconds != nil {
		return time.Duration(*e.Config.TimeoutSeconds) * time.Second
	}
	return defaultTimeout
}

// defaultMaxRuns: a few commands per core. A catch-up of a hundred
// approvals started a hundred commands at once.
func defaultMaxRuns() int { return 4 * runtime.NumCPU() }

func (e *Executor) maxRuns() int {
	if e.Config.MaxRuns != nil {
		return *e.Config.MaxRuns
	}
	return defaultMaxRuns()
}

// Executor takes the handoffs targeted at it, and carries each approved one
// from approval to its result.
type Executor struct {
	Base   string // Baton's URL
	Key    string
	Config Config
	State  *State
	Log    zerolog.Logger
	Client *http.Client
	// Backoff is the first wait after a failed request or a dropped
	// stream; it doubles up to a minute.
	Backoff time.Duration
	// CallTimeout bounds one request (30s when zero): a server that
	// accepts and never answers is asked again, not waited on for ever.
	CallTimeout time.Duration
	// StreamIdle is how long the event stream may stay silent before it
	// is dropped and resumed (60s when zero; Baton writes a comment every
	// 15s): a cut network sends no end, only silence.
	StreamIdle time.Duration
	// StreamRetryMax bounds the wait between two attempts to resume the
	// event stream (5s when zero): doubled up to a minute, an executor
	// saw nothing for up to a minute after Baton was back, and a handoff
	// approved then, its lease counted from the approval, timed out
	// before the executor knew of it.
	StreamRetryMax time.Duration
	// StopGrace is how long a command stopped at its time limit, by
	// Baton, or by the executor stopping, has after SIGTERM before what is left of its process group
	// is killed (10s when zero).
	StopGrace time.Duration

	// keyRefused: Baton's last answer was 401. A refusal is logged when
	// it starts and again when Baton takes the key: logged at every
	// heartbeat, a revoked key filled the log for as long as a command ran.
	keyRefused atomic.Bool

	mu      sync.Mutex
	running map[string]bool                    // runs carried or waiting for a slot, by handoff
	stops   map[string]context.CancelCauseFunc // each running command's, by handoff
	slots   int                                // commands that may still start
	waiting []string                           // handoffs waiting for a slot, first come first
	// considering: a consider of the handoff under way, closed when it
	// ends. Two at once (a released run's end and the release's event)
	// each wrote a run id to the state file, the claimed one overwritten.
	considering map[string]chan struct{}
	// closed: the handoffs whose LedgerClosed came while their run was
	// claimed, before its command had a stop to call: missed, a run
	// without a lease ran its command to the end on a closed handoff.
	closed map[string]error
	// held: the runs not resumed at the start, what a previous start's
	// command left running not killed: not to run again beside it.
	held map[string]bool
	wg   sync.WaitGroup
}

// maxOutput bounds the output kept of a command: the tail, which holds the
// outcome. It stays under Baton's limit on one artifact.
const maxOutput = 60 << 10

// Run works until ctx ends: it carries on the runs a previous start left
// unfinished, then follows the event stream, taking every handoff approved
// for it. It returns when ctx ends, or with an error when Baton refuses its
// key, once every run it started has stopped.
func (e *Executor) Run(ctx context.Context) error {
	if e.Client == nil {
		e.Client = &http.Client{CheckRedirect: keepKeyHome}
	}
	if e.Backoff <= 0 {
		e.Backoff = time.Second
	}
	if e.CallTimeout <= 0 {
		e.CallTimeout = 30 * time.Second
	}
	if e.StreamIdle <= 0 {
		e.StreamIdle = time.Minute
	}
	if e.StreamRetryMax <= 0 {
		e.StreamRetryMax = 5 * time.Second
	}
	if e.StopGrace <= 0 {
		e.StopGrace = 10 * time.Second
	}
	e.running, e.stops, e.held = map[string]bool{}, map[string]context.CancelCauseFunc{}, map[string]bool{}
	e.slots, e.waiting = e.maxRuns(), nil
	defer e.wg.Wait()
	// Oldest first (a run id is a UUIDv7, in the order runs were taken):
	// the runs waiting for a slot when it stopped keep their places.
	unfinished := e.State.Unfinished()
	slices.SortFunc(unfinished, func(a, b Run) int { return strings.Compare(a.ExecutorRunID, b.ExecutorRunID) })
	for _, r := range unfinished {
		if r.Phase == phaseRunning {
			// The executor died under the command (SIGKILL, the OOM
			// killer): what the command started may still run, and would
			// run beside the command run again.
			n, err := killLeftover(r.Group, r.ExecutorRunID)
			if err != nil {
				e.Log.Error().Err(err).Str("handoffId", r.HandoffID).Str("executorRunId", r.ExecutorRunID).Msg("a previous start's command may still run; not running it again beside it")
				e.held[r.HandoffID] = true
				continue
			}
			if n > 0 {
				e.Log.Warn().Str("handoffId", r.HandoffID).Str("executorRunId", r.ExecutorRunID).Int("processes", n).Msg("killed what a previous start's command left running")
			}
		}
		e.Log.Info().Str("handoffId", r.HandoffID).Str("executorRunId", r.ExecutorRunID).Str("phase", r.Phase).Msg("resuming a run")
		e.start(ctx, r.HandoffID, nil)
	}
	wait := e.Backoff
	for ctx.Err() == nil {
		var connected bool
		err := e.follow(ctx, &connected)
		if connected {
			// A stream that was up and dropped is a new outage: the wait
			// grown by an earlier one held every later reconnection to a
			// minute.
			wait = e.Backoff
		}
		if ctx.Err() != nil {
			break
		}
		if errors.Is(err, errKeyRefused) || errors.Is(err, errNoEventStream) {
			// Said now: the runs under way are waited for, and the log
			// was silent meanwhile, for as long as a command ran.
			e.mu.Lock()
			n := len(e.running)
			e.mu.Unlock()
			if n > 0 {
				e.Log.Error().Err(err).Int("runs", n).Msg("stopping once the runs under way have stopped")
			}
			return err // no retry makes a refused key valid, or the URL Baton's
		}
		longest := max(e.StreamRetryMax, e.Backoff)
		d := jitter(wait)
		if refused := (*streamRefused)(nil); errors.As(err, &refused) && refused.after > d {
			// What Baton asks for (a tenant's streams all taken: 429
			// too_many_streams, Retry-After 5), within the longest wait:
			// asked sooner, it refused again, with a warning each time.
			d = min(refused.after, longest)
		}
		e.Log.Warn().Err(err).Dur("retryIn", d).Msg("event stream interrupted")
		if !sleep(ctx, d) {
			break
		}
		wait = min(max(wait*2, d), longest)
	}
	return nil
}

// streamRefused is Baton's answer to GET /v1/events other than 200, with
// the wait its Retry-After asks for (0 without one).
type streamRefused struct {
	status int
	body   []byte
	after  time.Duration
}

func (e *streamRefused) Error() string { return fmt.Sprintf("GET /v1/events: %d %s", e.status, e.body) }

// errKeyRefused is Baton's 401: the key is wrong or was revoked.
var errKeyRefused = errors.New("Baton refused the key (--key or BATON_API_KEY): give one this Baton made, of the tenant whose handoffs to take (POST /v1/admin/keys, or baton keys create)")

// errNoEventStream is a 404 to GET /v1/events, which every Baton serves:
// --url names another server, or a path before Baton's own.
var errNoEventStream = errors.New("no Baton event stream at --url (is it Baton's base URL, such as http://127.0.0.1:8080?)")

// keepKeyHome follows a redirect without the key when it leaves Baton's
// origin (another host, or from https to http): Go's client drops only
// Authorization and cookies on another host, and the key goes in x-api-key.
func keepKeyHome(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	first := via[0].URL
	if req.URL.Host != first.Host || req.URL.Scheme != first.Scheme && req.URL.Scheme != "https" {
		req.Header.Del("X-Api-Key")
	}
	return nil
}

// jitter draws a wait between half of d and d: executors that lost Baton
// at once (a restart) asked it again in lockstep, each at the same moment
// after it was back. Drawn at most d, a wait keeps every bound on it.
func jitter(d time.Duration) time.Duration {
	if d < 2 {
		return d
	}
	return d/2 + rand.N(d-d/2+1)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// follow reads the event stream of the handoffs targeted at this executor,
// from where the last one stopped; a first start also lists the handoffs
// approved before its stream began.
func (e *Executor) follow(ctx context.Context, connected *bool) error {
	// A handoff is free to take when it is approved, and again when a run
	// that missed its lease was released (ExecutorTimedOut, action
	// release): watching approvals alone left a released one unclaimed.
	// LedgerClosed stops a command whose handoff closed under it (a
	// deadline passed): without a lease there is no heartbeat to be
	// refused, and the command acted on after the close.
	q := url.Values{"targetExecutor": {e.Config.Executor}, "type": {domain.EventApprovalDecided + "," + domain.EventExecutorTimedOut + "," + domain.EventLedgerClosed}}
	// The stream is dropped when it goes silent: reading it blocked for
	// ever when the network was cut without a word.
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := time.AfterFunc(e.CallTimeout, cancel) // the answer's headers first
	defer idle.Stop()
	req, err := http.NewRequestWithContext(streamCtx, "GET", e.Base+"/v1/events?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("x-api-key", e.Key)
	req.Header.Set("Accept", "text/event-stream")
	last := e.State.LastEventID()
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	idle.Reset(e.StreamIdle)
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		if resp.StatusCode == http.StatusUnauthorized {
			return fmt.Errorf("%w: GET /v1/events: %d %s", errKeyRefused, resp.StatusCode, b)
		}
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("%w: GET %s/v1/events: %d %.200q", errNoEventStream, e.Base, resp.StatusCode, b)
		}
		if last != "" && (problemCode(b) == "position_ahead" || resp.StatusCode == http.StatusUnprocessableEntity) {
			// The kept position names no event of this store (one restored
			// from an older backup): asked again for ever, it took nothing.
			// It starts again as at a first start: the listing finds what
			// was approved, and the runs in the state file are not taken
			// twice.
			e.Log.Warn().Str("lastEventId", last).RawJSON("problem", b).Msg("Baton does not know the position the state file kept; following from now, after listing the approved handoffs")
			if err := e.State.SetLastEventID(""); err != nil {
				return err
			}
		}
		return &streamRefused{status: resp.StatusCode, body: b, after: retryAfter(resp)}
	}
	if last == "" {
		// The stream starts at the store's head: what was approved before
		// it is in the listing, what comes after in the stream. The
		// position is kept only once the listing is done: kept before, a
		// listing cut short (stopped, killed, refused) was never made
		// again and what it had not reached was never taken.
		if err := e.catchUp(ctx); err != nil {
			return err
		}
		if pos := resp.Header.Get("Baton-Position"); pos != "" {
			if err := e.State.SetLastEventID(pos); err != nil {
				return err
			}
		}
		idle.Reset(e.StreamIdle)
	}
	*connected = true
	e.Log.Info().Str("executor", e.Config.Executor).Msg("following the event stream")
	sse := newSSEReader(&idleReader{r: resp.Body, idle: idle, after: e.StreamIdle})
	for {
		ev, err := sse.Next()
		if err != nil {
			return err
		}
		var d struct {
			HandoffID string `json:"handoffId"`
			Type      string `json:"type"`
			Data      struct {
				Reason string `json:"reason"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(ev.Data), &d) == nil && d.HandoffID != "" {
			if d.Type == domain.EventLedgerClosed {
				e.mu.Lock()
				cause := fmt.Errorf("the handoff closed (ledger_closed: %s)", d.Data.Reason)
				if stop := e.stops[d.HandoffID]; stop != nil {
					stop(cause)
				} else if e.running[d.HandoffID] && !slices.Contains(e.waiting, d.HandoffID) {
					// Being claimed: its command is not to start.
					if e.closed == nil {
						e.closed = map[string]error{}
					}
					e.closed[d.HandoffID] = cause
				}
				if i := slices.Index(e.waiting, d.HandoffID); i >= 0 {
					// Closed before its turn came: nothing to run.
					e.waiting = slices.Delete(e.waiting, i, i+1)
					delete(e.running, d.HandoffID)
					if r, ok := e.State.Run(d.HandoffID); ok {
						e.abandon(r, "the handoff closed while it waited for a slot (ledger_closed: "+d.Data.Reason+")")
					}
				}
				e.mu.Unlock()
			} else if err := e.consider(ctx, d.HandoffID); err != nil {
				return err // the position stays before the event
			}
		}
		if ctx.Err() != nil {
			// Stopped while the event was being handled (its contract
			// still being read): the position stays before it, or the
			// next start resumed past an approval it never acted on.
			return ctx.Err()
		}
		if ev.ID != "" {
			if err := e.State.SetLastEventID(ev.ID); err != nil {
				return err
			}
		}
	}
}

// catchUp takes the approved handoffs no run has started yet.
func (e *Executor) catchUp(ctx context.Context) error {
	// Retried as a contract read is (readContract): the claims of what it
	// lists wait on it.
	lctx := e.retriedSoon(ctx)
	cursor := ""
	for {
		q := url.Values{"targetExecutor": {e.Config.Executor}, "approvalStatus": {domain.ApprovalApproved},
			"state": {string(domain.StateApprovalDecided)}, "limit": {"100"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Data []struct {
				HandoffID string `json:"handoffId"`
			} `json:"data"`
			NextCursor string `json:"nextCursor"`
		}
		status, raw, err := e.call(lctx, "GET", "/v1/handoff/contracts?"+q.Encode(), "", nil)
		if err != nil {
			return err
		}
		if status != 200 || json.Unmarshal(raw, &page) != nil {
			return fmt.Errorf("listing handoffs: %d %s", status, raw)
		}
		for _, c := range page.Data {
			if err := e.consider(ctx, c.HandoffID); err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return ctx.Err() // cut short: not complete, to be made again
		}
		if page.NextCursor == "" {
			return nil
		}
		cursor = page.NextCursor
	}
}

// contract is what the executor reads of a handoff contract.
type contract struct {
	HandoffID        string `json:"handoffId"`
	ProtocolVersion  string `json:"protocolVersion"`
	SchemaVersion    string `json:"schemaVersion"`
	Objective        string `json:"objective"`
	TargetExecutor   string `json:"targetExecutor"`
	ExecutorProtocol string `json:"executorProtocol"`
	State            string `json:"state"`
	ExecutorRunID    string `json:"executorRunId"`
	ApprovalPolicy   struct {
		Status string `json:"status"`
	} `json:"approvalPolicy"`
	Deadlines *deadlines `json:"deadlines"`
	raw       []byte
}

// deadlines is what the executor reads of a contract's deadlines.
type deadlines struct {
	HeartbeatSeconds int        `json:"heartbeatSeconds"`
	ResultDueAt      *time.Time `json:"resultDueAt"`
}

// why says why the executor will not act on c ("" when it will).
func (e *Executor) why(c contract) string {
	switch {
	case c.ProtocolVersion != domain.ProtocolVersion || c.SchemaVersion != domain.SchemaVersion:
		return fmt.Sprintf("protocolVersion %q / schemaVersion %q: this executor speaks %s / %s", c.ProtocolVersion, c.SchemaVersion, domain.ProtocolVersion, domain.SchemaVersion)
	case c.TargetExecutor != e.Config.Executor:
		return fmt.Sprintf("targeted at %q, not this executor", c.TargetExecutor)
	case c.ApprovalPolicy.Status != domain.ApprovalApproved:
		return fmt.Sprintf("approval is %s: the executor acts only on APPROVED", c.ApprovalPolicy.Status)
	case c.State != string(domain.StateApprovalDecided):
		return fmt.Sprintf("state %s: another run has it, or it is done", c.State)
	}
	if _, ok := e.Config.Protocols[c.ExecutorProtocol]; !ok {
		return fmt.Sprintf("no command is configured for executorProtocol %q", c.ExecutorProtocol)
	}
	return ""
}

func (e *Executor) readContract(ctx context.Context, id string) (contract, error) {
	// Retried at most StreamRetryMax apart, as the stream is: the lease of
	// a handoff just approved may run from the approval (onExecutorTimeout
	// close), and its claim waits on this read; a proxy's 503 asking for
	// a minute held the claim past a short lease.
	status, raw, err := e.call(e.retriedSoon(ctx), "GET", "/v1/handoff/contracts/"+url.PathEscape(id), "", nil)
	if err != nil {
		return contract{}, err
	}
	var c contract
	if status != 200 || json.Unmarshal(raw, &c) != nil {
		return contract{}, fmt.Errorf("reading handoff %s: %d %s", id, status, raw)
	}
	c.raw = raw
	return c, nil
}

// consider starts a run for handoff id when the executor should act on it.
// It returns an error only when it could not tell (Baton refused the key,
// or ctx ended): the event that named the handoff is to be read again.
func (e *Executor) consider(ctx context.Context, id string) error {
	for {
		e.mu.Lock()
		busy, ok := e.considering[id]
		if !ok {
			if e.considering == nil {
				e.considering = map[string]chan struct{}{}
			}
			e.considering[id] = make(chan struct{})
		}
		e.mu.Unlock()
		if !ok {
			break
		}
		select {
		case <-busy:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() {
		e.mu.Lock()
		close(e.considering[id])
		delete(e.considering, id)
		e.mu.Unlock()
	}()
	if r, ok := e.State.Run(id); ok && !r.released() {
		// Taken before: its run goes on or is done; or, resumed at the
		// start, it could not go on (its contract unreadable: a proxy's
		// 403, say), and goes on now. Skipped, it waited for the next
		// start, and a handoff Baton released meanwhile was taken by no one.
		e.mu.Lock()
		held := e.held[id]
		e.mu.Unlock()
		if r.Phase != phaseReported && !held {
			e.start(ctx, id, nil) // nothing when it is under way
		}
		return nil
	}
	c, err := e.readContract(ctx, id)
	if err != nil {
		if errors.Is(err, errKeyRefused) || ctx.Err() != nil {
			return err
		}
		e.Log.Error().Err(err).Str("handoffId", id).Msg("cannot read the contract")
		return nil
	}
	if why := e.why(c); why != "" {
		e.Log.Info().Str("handoffId", id).Str("reason", why).Msg("not acting")
		return nil
	}
	run := Run{HandoffID: id, ExecutorRunID: "run-" + uuid.Must(uuid.NewV7()).String(), Protocol: c.ExecutorProtocol, Phase: phaseRunning}
	// The ids are stored before the first callback: a restart goes on
	// with the same run.
	if err := e.State.Put(run); err != nil {
		e.Log.Error().Err(err).Msg("cannot write the state file")
		return nil
	}
	e.start(ctx, id, &c)
	return nil
}

// start carries handoff id's run on a goroutine of its own; c is its
// contract when the caller has just read it. A run whose command is still
// to run takes a slot first, or waits for one in line: it is claimed (its
// first heartbeat, which starts its lease) only once it has one.
func (e *Executor) start(ctx context.Context, id string, c *contract) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running[id] {
		return
	}
	e.running[id] = true
	r, _ := e.State.Run(id)
	slot := r.Phase == phaseRunning
	if slot {
		if e.slots == 0 {
			e.waiting = append(e.waiting, id)
			e.Log.Info().Str("handoffId", id).Str("executorRunId", r.ExecutorRunID).Int("waiting", len(e.waiting)).Msg("waiting for a free slot (maxRuns)")
			return
		}
		e.slots--
	}
	e.launch(ctx, id, c, slot)
}

// launch carries handoff id's run; slot says whether it holds one, to be
// handed on to the first waiting run when it is done. Called with e.mu held.
func (e *Executor) launch(ctx context.Context, id string, c *contract, slot bool) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.carry(ctx, id, c)
		e.mu.Lock()
		delete(e.running, id)
		delete(e.closed, id)
		if slot {
			if len(e.waiting) > 0 && ctx.Err() == nil {
				next := e.waiting[0]
				e.waiting = e.waiting[1:]
				// Its contract is read again: it may have changed while
				// the run waited.
				e.launch(ctx, next, nil, true)
			} else {
				e.slots++
			}
		}
		e.mu.Unlock()
		if r, ok := e.State.Run(id); ok && r.released() && ctx.Err() == nil {
			// This run missed its lease and was released: the handoff may
			// be free again, for a new run (the release's event may have
			// come while this one still held it).
			e.consider(ctx, id)
		}
	}()
}

// carry takes a run from where its state says to its reported result.
func (e *Executor) carry(ctx context.Context, id string, known *contract) {
	run, ok := e.State.Run(id)
	if !ok {
		return
	}
	log := e.Log.With().Str("handoffId", id).Str("executorRunId", run.ExecutorRunID).Logger()
	if known == nil { // a run resumed after a restart
		c, err := e.readContract(ctx, id)
		if err != nil {
			log.Error().Err(err).Msg("cannot read the contract; the run goes on at the next event for its handoff, or the next start")
			return
		}
		known = &c
	}
	c := *known
	ctx = withLease(ctx, c)
	if c.Deadlines != nil && c.Deadlines.ResultDueAt != nil {
		ctx = context.WithValue(ctx, dueKey{}, *c.Deadlines.ResultDueAt)
	}
	if run.Phase == phaseRunning {
		// The first heartbeat starts the run (ExecutorStarted) before the
		// command acts: a handoff another run took is refused here.
		status, raw, err := e.call(ctx, "POST", "/v1/executions/"+id+"/heartbeat", "", map[string]any{"executorRunId": run.ExecutorRunID, "executorType": e.Config.Executor})
		if err != nil {
			return // ctx ended, or the key was refused: the run stays as it is
		}
		if status != 200 {
			e.abandon(run, fmt.Sprintf("heartbeat refused: %d %s", status, raw))
			return
		}
		run, ok = e.execute(ctx, c, run, log)
		if !ok {
			return
		}
	}
	if run.Phase == phaseFinished {
		e.report(ctx, run, log)
	}
}

// abandon records that the run stops without a result of its own.
func (e *Executor) abandon(run Run, note string) {
	run.Phase, run.Note = phaseReported, note
	e.Log.Warn().Str("handoffId", run.HandoffID).Str("executorRunId", run.ExecutorRunID).Str("note", note).Msg("run abandoned")
	e.State.Put(run)
}

// execute runs the command, heartbeating while it runs. It returns false
// when ctx ended first: the run stays "running", and the next start runs
// the command again under the same run id; or "finished", when the
// command had ended on its own, and the next start reports it.
func (e *Executor) execute(ctx context.Context, c contract, run Run, log zerolog.Logger) (Run, bool) {
	p := e.Config.Protocols[run.Protocol]
	if len(p.Command) == 0 {
		run.Phase, run.ExitCode, run.Output = phaseFinished, -1, "no command configured for "+run.Protocol
		return run, e.State.Put(run) == nil
	}
	// The command stops when Baton releases the run (it missed its
	// lease) or closes the handoff (a deadline passed): it went on to its
	// end though refused, beside the new run or for nothing.
	cmdCtx, release := context.WithCancelCause(ctx)
	defer release(nil)
	e.mu.Lock()
	e.stops[run.HandoffID] = release
	if cause := e.closed[run.HandoffID]; cause != nil {
		release(cause) // closed as it was claimed
	}
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.stops, run.HandoffID)
		e.mu.Unlock()
	}()
	// Every stop (the executor stopping, Baton, the time limit) goes
	// through stopGroup below, with its grace.
	cmd := exec.Command(p.Command[0], p.Command[1:]...)
	cmd.Stdin = bytes.NewReader(c.raw)
	// No environment variable holds a NUL, which an objective may: the
	// command did not start at all. The contract on its input has it whole.
	objective := strings.ReplaceAll(c.Objective, "\x00", "\uFFFD")
	// The executor's key stays its own: any key may approve handoffs, and
	// the command acts on contracts others wrote.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "BATON_API_KEY=") })
	cmd.Env = append(env, "BATON_HANDOFF_ID="+run.HandoffID, "BATON_EXECUTOR_RUN_ID="+run.ExecutorRunID,
		"BATON_OBJECTIVE="+objective, "BATON_EXECUTOR_PROTOCOL="+c.ExecutorProtocol)
	if ctx.Err() != nil {
		return run, false // stopped before the command started
	}
	if cmdCtx.Err() != nil {
		e.abandon(run, "command not started: "+context.Cause(cmdCtx).Error())
		return run, false
	}
	// The output comes through a pipe of the executor's own, read until
	// its last writer closes it: os/exec closed its pipe five seconds
	// after the command exited, and a process the command left running (a
	// service started in the background) was killed by SIGPIPE at its
	// next write.
	out := &tail{max: maxOutput}
	pr, pw, err := os.Pipe()
	if err != nil {
		run.Phase, run.ExitCode, run.Output = phaseFinished, -1, "could not start the command: "+err.Error()
		return run, e.State.Put(run) == nil
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.WaitDelay = 5 * time.Second
	ownGroup(cmd)
	// What stopped the command is decided once: the first stop (its time
	// limit, Baton, the executor stopping) that comes before it is seen
	// to exit. A stop that comes after leaves its outcome as it is: one
	// that came as what it left running still held its output left the
	// run "running", to be run again, or gave it up unreported.
	var stop struct {
		sync.Mutex
		exited bool
		by     string
	}
	stopping := func(by string) bool {
		stop.Lock()
		defer stop.Unlock()
		if stop.exited || stop.by != "" {
			return false
		}
		stop.by = by
		return true
	}
	log.Info().Strs("command", p.Command).Msg("running")
	// Linux sends the parent-death signal when the thread that started
	// the command ends, not the executor: this one is kept until the
	// command has been waited for.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = cmd.Start()
	pw.Close() // the command has its own copy
	if err != nil {
		pr.Close()
		run.Phase, run.ExitCode, run.Output = phaseFinished, -1, "could not start the command: "+err.Error()
		return run, e.State.Put(run) == nil
	}
	drained := make(chan struct{})
	go func() {
		io.Copy(out, pr)
		pr.Close()
		close(drained)
	}()
	if run.Group = groupOf(cmd.Process.Pid); run.Group != nil {
		if err := e.State.Put(run); err != nil {
			log.Error().Err(err).Msg("cannot write the state file")
		}
	}
	// At its time limit the command's whole group is asked to stop
	// (SIGTERM), then killed after a grace.
	var limit *time.Timer
	var stopped chan struct{}
	if d := e.timeout(); d > 0 {
		stopped = make(chan struct{})
		limit = time.AfterFunc(d, func() {
			defer close(stopped)
			if !stopping(stoppedByLimit) {
				return
			}
			log.Warn().Str("timeout", d.String()).Str("grace", e.StopGrace.String()).Msg("the command ran past its time limit; stopping it")
			stopGroup(cmd.Process, e.StopGrace)
		})
	}
	// A command Baton stops (the handoff closed, the run released, its
	// lease lost), or the executor stopping (SIGTERM from systemd, say),
	// is asked to stop as at its time limit: SIGTERM, then SIGKILL after
	// the grace. It was killed outright, with no chance to clean up.
	exited, halted := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(halted)
		select {
		case <-exited:
		case <-cmdCtx.Done():
			by, why := stoppedByBaton, context.Cause(cmdCtx).Error()
			if ctx.Err() != nil {
				by, why = stoppedByExecutor, "the executor stops"
			}
			if stopping(by) {
				log.Warn().Str("grace", e.StopGrace.String()).Str("why", why).Msg("stopping the command")
				stopGroup(cmd.Process, e.StopGrace)
			}
		}
	}()
	stopBeats := e.heartbeats(ctx, c, run, log, release)
	err = cmd.Wait()
	stop.Lock()
	stop.exited = true
	by := stop.by
	stop.Unlock()
	close(exited)
	<-halted // what the command started is gone too
	if limit != nil && !limit.Stop() {
		<-stopped // likewise
	}
	timedOut := by == stoppedByLimit
	// What the command left running may hold its output: it is not waited
	// for past five seconds, and what it writes later is read and dropped.
	select {
	case <-drained:
	case <-ctx.Done():
	case <-cmdCtx.Done():
	case <-time.After(5 * time.Second):
	}
	held := false
	select {
	case <-drained:
	default:
		held = true // the wait cut short by a stop too
	}
	stopBeats()
	switch by {
	case stoppedByExecutor:
		log.Info().Msg("stopped mid-run; the next start runs it again under the same executorRunId")
		return run, false
	case stoppedByBaton:
		e.abandon(run, "command stopped: "+context.Cause(cmdCtx).Error())
		return run, false
	}
	run.Phase, run.ExitCode, run.Output, run.Group = phaseFinished, 0, out.String(), nil
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		run.ExitCode = exit.ExitCode()
		if run.ExitCode == -1 {
			// Killed by a signal (the OOM killer's SIGKILL): "exit status
			// -1" said nothing of it.
			run.Ended = exit.String()
		}
	} else if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		// ErrWaitDelay: it exited 0, and what it left running still held
		// its input (a large contract, unread): it succeeded.
		run.ExitCode, run.Output = -1, run.Output+"\n"+err.Error()
	}
	if held {
		// It exited, and what it left running (started in the background)
		// still holds its output: the exit status is the command's.
		run.Output += "\n(a process the command left running still holds its output; what it writes from now on is not kept)"
	}
	if timedOut {
		// FAILED, whatever status it ended with as it was stopped (0, say):
		// it did not finish its work in time.
		how := run.Ended
		if how == "" {
			how = "exit status " + strconv.Itoa(run.ExitCode)
		}
		run.Ended = fmt.Sprintf("timed out after %s; stopped (%s)", e.timeout(), how)
	}
	if err := e.State.Put(run); err != nil {
		log.Error().Err(err).Msg("cannot write the state file")
		return run, false
	}
	if ctx.Err() != nil {
		log.Info().Msg("stopped as the command ended; the next start reports its outcome")
		return run, false
	}
	return run, true
}

// What stopped a command before it exited.
const (
	stoppedByLimit    = "its time limit"
	stoppedByBaton    = "Baton"
	stoppedByExecutor = "the executor stopping"
)

// heartbeats renews the lease while the command runs, at a third of the
// contract's heartbeatSeconds; none without one.
func (e *Executor) heartbeats(ctx context.Context, c contract, run Run, log zerolog.Logger, release context.CancelCauseFunc) func() {
	if c.Deadlines == nil || c.Deadlines.HeartbeatSeconds <= 0 {
		return func() {}
	}
	every := max(time.Duration(c.Deadlines.HeartbeatSeconds)*time.Second/3, 200*time.Millisecond)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			status, raw, err := e.call(ctx, "POST", "/v1/executions/"+run.HandoffID+"/heartbeat", "", map[string]any{"executorRunId": run.ExecutorRunID})
			if err == nil && status != 200 {
				log.Warn().Int("status", status).RawJSON("problem", raw).Msg("heartbeat refused")
				// A deadline passed (lease_expired, result_timed_out: what
				// the timer will record next) stops it as the release or
				// close does: it ran on for a beat, the lapse not yet
				// recorded, until the next heartbeat was refused.
				if code := problemCode(raw); code == "executor_run_released" || code == "ledger_closed" || code == "lease_expired" || code == "result_timed_out" {
					release(fmt.Errorf("heartbeat refused: %d %s", status, raw))
					return
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// report posts the run's proof and result, each with its own idempotency
// key, so a report repeated after a restart is answered from the ledger.
func (e *Executor) report(ctx context.Context, run Run, log zerolog.Logger) {
	p := e.Config.Protocols[run.Protocol]
	typ := p.ArtifactType
	if typ == "" {
		typ = "log"
	}
	status := domain.RunSucceeded
	if run.ExitCode != 0 || run.Ended != "" {
		status = domain.RunFailed
	}
	summary := "exit status " + strconv.Itoa(run.ExitCode)
	if run.Ended != "" {
		summary = run.Ended
	}
	text := run.Output
	if domain.Blank(text) {
		// Baton refuses a blank artifact text: the proof of a command that
		// printed only a newline was refused and the run given up.
		text = "(no output)"
	}
	proofBody := func(text string) map[string]any {
		return map[string]any{"executorType": e.Config.Executor, "executorRunId": run.ExecutorRunID, "status": status,
			"proof": map[string]any{"summary": summary, "artifacts": []any{map[string]any{"type": typ, "text": text}}}}
	}
	withheld := false
	st, raw, err := e.call(ctx, "POST", "/v1/executions/"+run.HandoffID+"/proof", "proof-"+run.ExecutorRunID, proofBody(text))
	if err != nil {
		return
	}
	if st == 422 && problemCode(raw) == "secret_detected" {
		// The output holds what looks like a credential: it never goes
		// to the ledger; the proof says so instead.
		withheld = true
		log.Warn().Str("secret", secretFound(raw)).Msg("output withheld: Baton found what looks like a secret in it; the proof and result say so instead")
		st, raw, err = e.call(ctx, "POST", "/v1/executions/"+run.HandoffID+"/proof", "proof-"+run.ExecutorRunID+"-withheld",
			proofBody("(output withheld: Baton found what looks like a secret in it)"))
		if err != nil {
			return
		}
	}
	if st != 200 {
		e.abandon(run, fmt.Sprintf("proof refused: %d %s", st, raw))
		return
	}
	proofReceipt := receipt("proof", raw) // kept with the result's
	output := run.Output
	if withheld {
		output = "(withheld: it holds what looks like a secret)"
	}
	resultBody := map[string]any{"executorType": e.Config.Executor, "executorRunId": run.ExecutorRunID, "status": status,
		"result": map[string]any{"summary": summary, "output": output}}
	if !run.ProofShort {
		st, raw, err = e.call(ctx, "POST", "/v1/executions/"+run.HandoffID+"/result", "result-"+run.ExecutorRunID, resultBody)
		if err != nil {
			return
		}
		if st == 409 && (problemCode(raw) == "proof_incomplete" || problemCode(raw) == "proof_required") {
			// Remembered before the FAILED result goes: after a crash, the
			// first result again was refused (the FAILED one had closed
			// the handoff) and a recorded run was logged as abandoned.
			run.ProofShort = true
			if err := e.State.Put(run); err != nil {
				log.Error().Err(err).Msg("cannot write the state file")
				return
			}
		}
	}
	if run.ProofShort {
		// The proof policy asks for artifact types the command does not
		// produce: the run cannot be reported as a success.
		resultBody["status"] = domain.RunFailed
		resultBody["result"] = map[string]any{"summary": summary + "; the proof policy asks for more than this executor's " + typ + " artifact", "output": output}
		st, raw, err = e.call(ctx, "POST", "/v1/executions/"+run.HandoffID+"/result", "result-"+run.ExecutorRunID+"-failed", resultBody)
		if err != nil {
			return
		}
	}
	if st != 200 {
		e.abandon(run, fmt.Sprintf("result refused: %d %s", st, raw))
		return
	}
	run.Receipts = append(run.Receipts, proofReceipt, receipt("result", raw))
	// The output is in the ledger now: kept, every run's stayed in a
	// state file rewritten whole at every change.
	run.Phase, run.Output = phaseReported, ""
	if err := e.State.Put(run); err != nil {
		log.Error().Err(err).Msg("cannot write the state file")
		return
	}
	var after struct {
		State string `json:"state"`
	}
	json.Unmarshal(raw, &after)
	log.Info().Int("exitCode", run.ExitCode).Str("state", after.State).Msg("reported")
}

func receipt(kind string, raw []byte) string {
	var v struct {
		LedgerHead domain.LedgerHead `json:"ledgerHead"`
	}
	json.Unmarshal(raw, &v)
	return fmt.Sprintf("%s %d %s", kind, v.LedgerHead.Seq, v.LedgerHead.Hash)
}

// secretFound names the rule and place of the first finding of a
// secret_detected problem (its detail says both).
func secretFound(raw []byte) string {
	var p struct {
		Detail string `json:"detail"`
	}
	json.Unmarshal(raw, &p)
	return p.Detail
}

func problemCode(raw []byte) string {
	var p struct {
		Code string `json:"code"`
	}
	json.Unmarshal(raw, &p)
	return p.Code
}

// call makes one request, retrying what a retry may fix (no answer, 408,
// 429, 5xx) with the same body and idempotency key until ctx ends. It returns
// the final status and body; err only when ctx ended, or errKeyRefused
// when Baton refused the key: that is no answer to the request, and the
// run it was for stays where it is, to go on at a start with a good key
// (given up, its outcome was never reported).
func (e *Executor) call(ctx context.Context, method, path, idemKey string, body any) (int, []byte, error) {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return 0, nil, err
		}
	}
	// A callback of a leased run is retried often enough to renew the
	// lease soon after Baton answers again: doubled up to a minute, a
	// retry came after the lease had run out, and Baton, back within it,
	// closed or released the run all the same.
	limit, attempt := time.Minute, e.CallTimeout
	if l, ok := ctx.Value(leaseKey{}).(time.Duration); ok {
		limit = max(l/10, 100*time.Millisecond)
		// A request lost on the way (a network that dropped it) is
		// given up in time for its retry to renew the lease: waited on
		// for the whole CallTimeout, a blip of a second or two cost a
		// lease shorter than it.
		attempt = min(attempt, max(l/3, time.Second))
	}
	if m, ok := ctx.Value(retryMaxKey{}).(time.Duration); ok {
		limit = min(limit, m)
	}
	wait := min(e.Backoff, limit)
	for {
		var asked time.Duration // the answer's Retry-After, within the limit
		req, err := http.NewRequestWithContext(ctx, method, e.Base+path, bytes.NewReader(b))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("x-api-key", e.Key)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if idemKey != "" {
			req.Header.Set("Idempotency-Key", idemKey)
		}
		if method == http.MethodPost && strings.HasPrefix(path, "/v1/executions/") {
			// It reads only the state and the ledger head of a callback's
			// answer: not the whole contract, every proof again, each time.
			req.Header.Set("Prefer", "return=minimal")
		}
		// One attempt has its own deadline: a server that never answers
		// held the run (and its heartbeats) for ever. Before the result is
		// due, at most half the time left (a second at least): a request
		// lost on the way, waited on for the whole CallTimeout, was
		// retried after resultDueAt.
		at := attempt
		if due, ok := ctx.Value(dueKey{}).(time.Time); ok {
			if left := time.Until(due); left > 0 {
				at = min(at, max(left/2, time.Second))
			}
		}
		actx, cancel := context.WithTimeout(ctx, at)
		resp, err := e.Client.Do(req.WithContext(actx))
		if err == nil {
			raw, rerr := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
			resp.Body.Close()
			cancel()
			if rerr == nil && resp.StatusCode == http.StatusUnauthorized {
				if e.keyRefused.CompareAndSwap(false, true) {
					e.Log.Error().Str("request", method+" "+path).Msg("Baton refused the key; what it was for goes on at a start with a good key")
				}
				return 0, nil, fmt.Errorf("%w: %s %s: %d %s", errKeyRefused, method, path, resp.StatusCode, raw)
			}
			// 408: the body did not reach Baton in time (a stalled network),
			// and nothing was done; taken for a refusal, it gave up a claim
			// or a proof.
			retry := resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
			if rerr == nil && !retry {
				if e.keyRefused.CompareAndSwap(true, false) {
					e.Log.Info().Str("request", method+" "+path).Msg("Baton takes the key again")
				}
				return resp.StatusCode, raw, nil
			}
			if ra := retryAfter(resp); ra > 0 {
				// Within the limit too: a proxy's 503 asking for a minute
				// held a leased run's heartbeat past its lease.
				asked = min(ra, limit)
				wait = max(wait, asked)
			}
			if rerr != nil {
				err = rerr
			} else {
				err = fmt.Errorf("%s %s: %d", method, path, resp.StatusCode)
			}
		}
		cancel()
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		d := max(jitter(wait), asked) // not sooner than Baton asked
		if due, ok := ctx.Value(dueKey{}).(time.Time); ok {
			d = beforeDue(d, time.Until(due))
		}
		e.Log.Warn().Err(err).Dur("retryIn", d).Msg("retrying")
		if !sleep(ctx, d) {
			return 0, nil, ctx.Err()
		}
		wait = min(wait*2, limit)
	}
}

// leaseKey holds, in a run's context, the lease (heartbeatSeconds) its
// callbacks keep.
type leaseKey struct{}

// retryMaxKey holds, in a request's context, the longest wait between two
// of its attempts.
type retryMaxKey struct{}

// retriedSoon is ctx for a read retried at most StreamRetryMax apart, as
// the stream is.
func (e *Executor) retriedSoon(ctx context.Context) context.Context {
	if e.StreamRetryMax <= 0 {
		return ctx
	}
	return context.WithValue(ctx, retryMaxKey{}, e.StreamRetryMax)
}

// retryAfter is the wait a Retry-After of whole seconds asks for, at most
// a minute; 0 without one.
func retryAfter(resp *http.Response) time.Duration {
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(min(s, 60)) * time.Second
	}
	return 0
}

// dueKey holds, in a run's context, its contract's resultDueAt.
type dueKey struct{}

// beforeDue bounds a retry's wait d, with left to go before the result is
// due, to half of left (a tenth of a second at least): waits doubled to a
// minute took a proof or result past resultDueAt, and Baton, back before
// it, timed the run out. Halved so, a Baton back before the deadline is
// reached before it. Once it has passed, the wait is d.
func beforeDue(d, left time.Duration) time.Duration {
	if left <= 0 {
		return d
	}
	return min(d, max(left/2, 100*time.Millisecond))
}

func withLease(ctx context.Context, c contract) context.Context {
	if c.Deadlines == nil || c.Deadlines.HeartbeatSeconds <= 0 {
		return ctx
	}
	return context.WithValue(ctx, leaseKey{}, time.Duration(c.Deadlines.HeartbeatSeconds)*time.Second)
}

// idleReader pushes its timer back on every read that brings bytes; the
// timer, when it fires, ends the stream's request.
type idleReader struct {
	r     io.Reader
	idle  *time.Timer
	after time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.idle.Reset(r.after)
	}
	return n, err
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
	cut bool
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
		t.cut = true
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cut {
		return "(earlier output cut)\n" + string(t.buf)
	}
	return string(t.buf)
}
