// Package kurrent is the KurrentDB (formerly EventStoreDB) backend of
// eventstore.Store, on the official Go client
// (github.com/EventStore/EventStore-Client-Go/v4/esdb).
//
// Open takes a KurrentDB connection string: esdb://host:2113 for one node,
// esdb+discover://host:2113 (or several hosts) for a cluster; TLS is on
// unless it says tls=false. Revisions, ids and metadata map one to one, so
// retries are idempotent and hash chains verify as on the embedded store.
// docs/eventstore.md ("The KurrentDB backend") lists every rule of the
// mapping and the client's limitations the store works around.
package kurrent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/rs/zerolog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/batonhq/baton/eventstore"
)

// Defaults.
const (
	// DefaultPageSize is used when a read asks for limit <= 0.
	DefaultPageSize = 1000
	// DefaultMaxAppendSize is KurrentDB's default --max-append-size.
	DefaultMaxAppendSize = 1 << 20
	// headPage is how many events Head reads per step backwards; with a
	// StreamPrefix on a shared database it may have to step far.
	headPage       = 64
	headPagePrefix = 512
)

// Config configures Open.
type Config struct {
	// URL is the KurrentDB connection string (esdb:// or esdb+discover://).
	URL string
	// Log receives subscription drops and resubscriptions (warn/info) and
	// the client's own log lines (debug). The zero value logs nothing.
	Log zerolog.Logger
	// MaxAppendSize is the server's --max-append-size: appends whose events
	// add up to more (counted as the server counts) are refused with
	// ErrInvalidEvent before they are sent. Default DefaultMaxAppendSize.
	MaxAppendSize int
	// SubscriptionBuffer is how many events a subscription reads ahead of
	// its consumer. Default 256.
	SubscriptionBuffer int
	// ResubscribeMin and ResubscribeMax bound the backoff between attempts
	// to resubscribe after a drop. Defaults 100ms and 5s.
	ResubscribeMin, ResubscribeMax time.Duration
	// StreamPrefix, when set, keeps this store to the streams whose
	// KurrentDB names start with it (stored as StreamPrefix+id, read back
	// without it), so that several stores can share one database. It must
	// not start with "$" (KurrentDB's own streams).
	StreamPrefix string
}

// Store is the KurrentDB-backed eventstore.Store.
type Store struct {
	cfg  Config
	conf esdb.Configuration

	base   context.Context // cancelled by Close: ends every call and subscription
	cancel context.CancelFunc
	wg     sync.WaitGroup // calls and subscription pumps in flight

	mu      sync.RWMutex
	client  *esdb.Client
	renewed chan struct{} // closed (and replaced) when client is replaced
	closed  bool
	// given up: for each client, its calls given up (detached) that still
	// wait inside it. Close leaves a client with such calls open: closing
	// it under them races their sends on its queue.
	givenUp map[*esdb.Client]int
}

var _ eventstore.Store = (*Store)(nil)

// Open connects to KurrentDB and checks the connection with one read.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.URL == "" {
		return nil, errors.New("kurrent: no connection string")
	}
	if strings.HasPrefix(cfg.StreamPrefix, "$") {
		return nil, fmt.Errorf("kurrent: stream prefix %q starts with $, which KurrentDB reserves", cfg.StreamPrefix)
	}
	if cfg.MaxAppendSize <= 0 {
		cfg.MaxAppendSize = DefaultMaxAppendSize
	}
	if cfg.SubscriptionBuffer <= 0 {
		cfg.SubscriptionBuffer = 256
	}
	if cfg.ResubscribeMin <= 0 {
		cfg.ResubscribeMin = 100 * time.Millisecond
	}
	if cfg.ResubscribeMax < cfg.ResubscribeMin {
		cfg.ResubscribeMax = max(5*time.Second, cfg.ResubscribeMin)
	}
	conf, err := esdb.ParseConnectionString(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("kurrent: connection string %s: %s", redact(cfg.URL), hideCredentials(redactErr(err).Error(), cfg.URL))
	}
	conf.Logger = clientLogger(cfg.Log)
	client, err := esdb.NewClient(conf)
	if err != nil {
		return nil, fmt.Errorf("kurrent: %w", err)
	}
	s := &Store{cfg: cfg, conf: *conf, client: client, renewed: make(chan struct{})}
	s.base, s.cancel = context.WithCancel(context.Background())
	if err := s.ping(ctx); err != nil {
		s.Close()
		if what := diagnose(context.WithoutCancel(ctx), *conf, err); what != "" {
			return nil, &diagnosedError{msg: fmt.Sprintf("kurrent: connect to %s: %s", redact(cfg.URL), what), err: err}
		}
		return nil, fmt.Errorf("kurrent: connect to %s: %w", redact(cfg.URL), err)
	}
	return s, nil
}

// ping connects (the client connects lazily) and reads the newest event of
// $all, which any user may read.
func (s *Store) ping(ctx context.Context) error {
	return s.call(ctx, func(ctx context.Context, c *esdb.Client, _ func(func())) error {
		rs, err := c.ReadAll(ctx, esdb.ReadAllOptions{Direction: esdb.Backwards, From: esdb.End{}}, 1)
		if err != nil {
			return err
		}
		defer rs.Close()
		for {
			if _, err := rs.Recv(); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
	})
}

// Close ends every subscription, waits for calls in flight and closes the
// connection. Later calls fail with ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	waited := make(chan struct{})
	go func() { s.wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(closeWait):
		// A call stuck inside a client that gave up, never renewed: the
		// process must still be able to stop. The client stays open, as
		// closing it under that call would panic.
		return fmt.Errorf("kurrent: closed with calls still waiting inside the client after %v", closeWait)
	}
	s.mu.RLock()
	stuck := s.givenUp[s.client]
	s.mu.RUnlock()
	if stuck > 0 {
		// Calls given up wait inside it for ever (a client that gave up
		// reads its queue no more): it stays open, as after closeWait.
		return nil
	}
	// Only now: the client panics on calls that race with its Close.
	return s.client.Close()
}

// closeWait bounds how long Close waits for the calls in flight.
const closeWait = 10 * time.Second

// begin registers a call: it returns the client, a context that also ends
// when the store closes, and the function that ends the call.
func (s *Store) begin(ctx context.Context) (context.Context, *esdb.Client, func(), error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, nil, nil, eventstore.ErrClosed
	}
	s.wg.Add(1)
	c := s.client
	s.mu.RUnlock()
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.base, cancel)
	if s.conf.NodePreference == esdb.NodePreferenceLeader {
		// What the client means to send with its default node preference
		// and does not (v4.2.0 puts the header on the incoming side of the
		// context, which gRPC never sends): without it a node that lost
		// leadership keeps serving reads from its own, possibly older, log.
		ctx = metadata.AppendToOutgoingContext(ctx, "requires-leader", "true")
	}
	return ctx, c, func() { stop(); cancel(); s.wg.Done() }, nil
}

// renew replaces a client that has given up (esdb.ErrorCodeConnectionClosed
// while the store is open) and returns the client to use now. The old client
// is not closed: goroutines may be blocked inside it, and closing it would
// make them panic.
func (s *Store) renew(old *esdb.Client) (*esdb.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, eventstore.ErrClosed
	}
	if s.client != old {
		return s.client, nil
	}
	conf := s.conf
	c, err := esdb.NewClient(&conf)
	if err != nil {
		return nil, err
	}
	s.cfg.Log.Warn().Msg("kurrent: the client gave up on the server; connecting with a new one")
	s.client = c
	close(s.renewed)
	s.renewed = make(chan struct{})
	return c, nil
}

// errClientGone is a call given up because its client was replaced: it
// was queued inside a client that gave up, where nothing answers it.
var errClientGone = errors.New("kurrent: the client gave up with this call queued inside it")

// replaced returns a channel closed once c is no longer the store's client.
func (s *Store) replaced(c *esdb.Client) <-chan struct{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.client != c {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return s.renewed
}

// detached runs op, which uses client c, on a goroutine of its own, and
// waits for it, or for c to be replaced (errClientGone), or for stop to
// close (its error). esdb v4.2.0 queues calls on an unbuffered channel
// and, when its discovery fails, stops reading it and gives up: the calls
// queued then wait for ever, whatever their context says. The goroutine of
// an op given up ends whenever the client lets it (never, for a client
// given up); a panic there (the client closed under it) is its own.
// gone, when not nil, is run with what the op returns after it was given
// up (to close a subscription nobody will read).
func (s *Store) detached(c *esdb.Client, stop <-chan struct{}, op func() error, gone func()) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if recover() != nil {
				done <- errClientGone
			}
		}()
		done <- op()
	}()
	var err error
	select {
	case err := <-done:
		return err
	case <-s.replaced(c):
		err = errClientGone
	case <-stop:
		err = context.Canceled
	}
	s.mu.Lock()
	if s.givenUp == nil {
		s.givenUp = map[*esdb.Client]int{}
	}
	s.givenUp[c]++
	s.mu.Unlock()
	go func() {
		<-done
		s.mu.Lock()
		if s.givenUp[c]--; s.givenUp[c] == 0 {
			delete(s.givenUp, c)
		}
		s.mu.Unlock()
		if gone != nil {
			gone()
		}
	}()
	return err
}

// notLeaderRetries bounds how often a call refused by a node that is not
// the leader is sent again.
const notLeaderRetries = 3

// call runs fn with the current client, once more with a new client if the
// current one has given up (nothing was sent then), and again (up to
// notLeaderRetries times) when the node answered that it is not the leader:
// it did nothing, and the client is already reconnecting to the leader it
// named. fn hands its results to keep, which takes them only from a run
// call has not given up: a run given up goes on inside its client and may
// end at any time, after a later run or after call returned.
func (s *Store) call(ctx context.Context, fn func(ctx context.Context, c *esdb.Client, keep func(func())) error) error {
	cctx, c, end, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	// A call queued inside a client that gave up is given up when the
	// client is replaced (nothing was sent: it goes to the new one) or its
	// context ends; the next call then finds the client given up and
	// replaces it.
	on := func(c *esdb.Client) error {
		var mu sync.Mutex
		over := false
		keep := func(set func()) {
			mu.Lock()
			defer mu.Unlock()
			if !over {
				set()
			}
		}
		err := s.detached(c, cctx.Done(), func() error { return fn(cctx, c, keep) }, nil)
		mu.Lock()
		over = true // done or given up: nothing of this run is taken later
		mu.Unlock()
		return err
	}
	err = on(c)
	if hasCode(err, esdb.ErrorCodeConnectionClosed) || errors.Is(err, errClientGone) {
		if nc, rerr := s.renew(c); rerr == nil {
			c = nc // the leader-change retries below go to the new client too
			err = on(c)
		}
	}
	for i := 0; i < notLeaderRetries && hasCode(err, esdb.ErrorCodeNotLeader) && cctx.Err() == nil; i++ {
		s.cfg.Log.Info().Msg("kurrent: the node is not the leader; sending the call again to the leader it named")
		err = fn(cctx, c, func(set func()) { set() })
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("%w (%v)", ctx.Err(), err)
		case s.base.Err() != nil:
			return eventstore.ErrClosed
		}
	}
	return err
}

// Append implements eventstore.Store.
func (s *Store) Append(ctx context.Context, stream string, expected eventstore.ExpectedRevision, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	if err := eventstore.ValidateAppend(stream, expected, events); err != nil {
		return eventstore.AppendResult{}, err
	}
	if isSystem(stream) {
		return eventstore.AppendResult{}, fmt.Errorf("%w: stream ids starting with $ are KurrentDB's own", eventstore.ErrInvalidEvent)
	}
	exp, err := expectedRevision(expected)
	if err != nil {
		return eventstore.AppendResult{}, err
	}
	evs := make([]esdb.EventData, len(events))
	size := 0
	for i, ev := range events {
		if isSystem(ev.Type) {
			return eventstore.AppendResult{}, fmt.Errorf("%w: event %d: types starting with $ are KurrentDB's own and stay out of the feed", eventstore.ErrInvalidEvent, i)
		}
		meta, err := encodeMetadata(ev.Metadata)
		if err != nil {
			return eventstore.AppendResult{}, fmt.Errorf("%w: event %d metadata: %v", eventstore.ErrInvalidEvent, i, err)
		}
		size += eventSize(ev.Type, ev.Data, meta)
		if len(ev.Data)+len(meta) > eventstore.MaxEventSize {
			return eventstore.AppendResult{}, fmt.Errorf("%w: event %d is %d bytes with its metadata, at most %d", eventstore.ErrTooLarge, i, len(ev.Data)+len(meta), eventstore.MaxEventSize)
		}
		evs[i] = esdb.EventData{
			EventID:     ev.ID,
			EventType:   ev.Type,
			ContentType: esdb.ContentTypeJson,
			Data:        ev.Data,
			Metadata:    meta,
		}
	}
	if size > s.cfg.MaxAppendSize {
		return eventstore.AppendResult{}, fmt.Errorf("%w: append of %d bytes, the server takes at most %d (--max-append-size, Config.MaxAppendSize)", eventstore.ErrTooLarge, size, s.cfg.MaxAppendSize)
	}

	name := s.cfg.StreamPrefix + stream
	var result eventstore.AppendResult
	err = s.call(ctx, func(ctx context.Context, c *esdb.Client, keep func(func())) error {
		wr, err := c.AppendToStream(ctx, name, esdb.AppendToStreamOptions{ExpectedRevision: exp}, evs...)
		if err != nil {
			return err
		}
		res := eventstore.AppendResult{
			NextRevision: wr.NextExpectedVersion,
			Position:     eventstore.Position{Commit: wr.CommitPosition, Prepare: wr.PreparePosition},
		}
		if res.Position == eventstore.Start {
			// Older servers answer an idempotent retry without a position;
			// the last event of the append has it, if the server reports
			// positions on stream reads (else the result says Start).
			page, err := s.readStream(ctx, c, name, res.NextRevision, 1)
			if err == nil && len(page) == 1 && page[0].Position.Commit != unknownPosition {
				res.Position = page[0].Position
			}
		}
		keep(func() { result = res })
		return nil
	})
	if err == nil {
		return result, nil
	}
	var esErr *esdb.Error
	if errors.As(err, &esErr) && esErr.Code() == esdb.ErrorCodeWrongExpectedVersion {
		return eventstore.AppendResult{}, s.conflict(ctx, stream, name, expected, esErr)
	}
	if status.Code(err) == codes.InvalidArgument {
		invalid := eventstore.ErrInvalidEvent
		if strings.Contains(err.Error(), "Maximum Append Size") {
			invalid = eventstore.ErrTooLarge // the server's --max-append-size is below Config.MaxAppendSize
		}
		return eventstore.AppendResult{}, fmt.Errorf("%w: the server refused the append to %q: %v", invalid, stream, err)
	}
	if errors.Is(err, eventstore.ErrClosed) {
		return eventstore.AppendResult{}, err
	}
	if ctx.Err() != nil {
		return eventstore.AppendResult{}, fmt.Errorf("kurrent: append to %q: %w", stream, err)
	}
	// Transport failures, a node going away mid-call, no leader: the
	// outcome is unknown, and the caller may retry with the same ids.
	return eventstore.AppendResult{}, fmt.Errorf("kurrent: append to %q: %w: %w", stream, eventstore.ErrUnavailable, err)
}

// conflict builds the store's conflict error from the client's.
func (s *Store) conflict(ctx context.Context, stream, name string, expected eventstore.ExpectedRevision, esErr *esdb.Error) error {
	wrong := &eventstore.WrongExpectedRevisionError{Stream: stream, Expected: expected}
	msg := ""
	if esErr.Err() != nil {
		msg = esErr.Err().Error()
	}
	if actual, exists, ok := parseWrongVersion(msg); ok {
		wrong.Actual, wrong.Exists = actual, exists
		return wrong
	}
	// Not the client's usual text: ask the stream (the answer may be newer
	// than the conflict, but it is still a revision the stream had).
	_ = s.call(ctx, func(ctx context.Context, c *esdb.Client, keep func(func())) error {
		rs, err := c.ReadStream(ctx, name, esdb.ReadStreamOptions{Direction: esdb.Backwards, From: esdb.End{}}, 1)
		if err != nil {
			return err
		}
		defer rs.Close()
		ev, err := rs.Recv()
		if err != nil {
			return err
		}
		keep(func() { wrong.Actual, wrong.Exists = ev.OriginalEvent().EventNumber, true })
		return nil
	})
	return wrong
}

// ReadStream implements eventstore.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]eventstore.RecordedEvent, error) {
	if err := eventstore.ValidateStreamID(stream); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultPageSize
	}
	var out []eventstore.RecordedEvent
	err := s.call(ctx, func(ctx context.Context, c *esdb.Client, keep func(func())) error {
		got, err := s.readStream(ctx, c, s.cfg.StreamPrefix+stream, from, limit)
		keep(func() { out = got })
		return err
	})
	return out, readError(ctx, fmt.Sprintf("read %q", stream), err)
}

// readError wraps a failed read. A server that cannot be reached, a node
// going away, a deadline, no leader: the read may succeed later, so the
// error is ErrUnavailable (the API answers 503 with Retry-After, not 500).
func readError(ctx context.Context, what string, err error) error {
	if err == nil || errors.Is(err, eventstore.ErrClosed) || errors.Is(err, eventstore.ErrCorrupt) {
		return err
	}
	if ctx.Err() == nil && transient(err) {
		return fmt.Errorf("kurrent: %s: %w: %w", what, eventstore.ErrUnavailable, err)
	}
	return fmt.Errorf("kurrent: %s: %w", what, err)
}

// transient reports whether err is a failure of the connection or of the
// cluster rather than of the request.
func transient(err error) bool {
	if errors.Is(err, errClientGone) {
		// Queued inside a client that gave up on the server, which another
		// call replaced meanwhile: nothing was read, and the server is away.
		return true
	}
	var esErr *esdb.Error
	if errors.As(err, &esErr) {
		switch esErr.Code() {
		case esdb.ErrorCodeConnectionClosed, esdb.ErrorCodeDeadlineExceeded, esdb.ErrorCodeNotLeader, esdb.ErrorCodeInternalServer, esdb.ErrorAborted, esdb.ErrorUnavailable:
			return true
		}
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.ResourceExhausted:
		return true
	}
	return false
}

// readStream reads the KurrentDB stream name.
func (s *Store) readStream(ctx context.Context, c *esdb.Client, name string, from uint64, limit int) ([]eventstore.RecordedEvent, error) {
	rs, err := c.ReadStream(ctx, name, esdb.ReadStreamOptions{Direction: esdb.Forwards, From: esdb.Revision(from)}, uint64(limit))
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := make([]eventstore.RecordedEvent, 0, min(limit, 256))
	for {
		ev, err := rs.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if hasCode(err, esdb.ErrorCodeResourceNotFound) || hasCode(err, esdb.ErrorCodeStreamDeleted) {
			return nil, nil // a stream without events, or deleted for good (tombstoned), reads as empty
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s.toRecorded(ev.OriginalEvent()))
	}
}

// ReadAll implements eventstore.Store.
func (s *Store) ReadAll(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	if limit <= 0 {
		limit = DefaultPageSize
	}
	var out []eventstore.RecordedEvent
	err := s.call(ctx, func(ctx context.Context, c *esdb.Client, keep func(func())) error {
		got := make([]eventstore.RecordedEvent, 0, min(limit, 1024))
		defer keep(func() { out = got })
		seen := after // everything up to here is behind us
		for len(got) < limit {
			// A forward read of $all includes the event at its starting
			// position, hence one more than still wanted.
			want := uint64(limit-len(got)) + 1
			rs, err := c.ReadAll(ctx, esdb.ReadAllOptions{Direction: esdb.Forwards, From: allPosition(seen)}, want)
			if err != nil {
				return err
			}
			read, err := s.collect(rs, &seen, &got, limit)
			rs.Close()
			if err != nil {
				return err
			}
			if read < want {
				return nil // the end of $all
			}
		}
		return nil
	})
	return out, readError(ctx, "read $all", err)
}

// collect drains one page of a forward $all read: it skips what is not after
// *seen and system events, and stops at limit.
func (s *Store) collect(rs *esdb.ReadStream, seen *eventstore.Position, out *[]eventstore.RecordedEvent, limit int) (uint64, error) {
	var read uint64
	for len(*out) < limit {
		ev, err := rs.Recv()
		if errors.Is(err, io.EOF) {
			return read, nil
		}
		if err != nil {
			return read, err
		}
		read++
		r := ev.OriginalEvent()
		pos := fromPosition(r.Position)
		if !seen.Less(pos) {
			continue
		}
		*seen = pos
		if !s.own(r) {
			continue
		}
		*out = append(*out, s.toRecorded(r))
	}
	return read, nil
}

// Head implements eventstore.Store: the newest event of $all that is not a
// system event.
func (s *Store) Head(ctx context.Context) (eventstore.Position, error) {
	head := eventstore.Start
	page := uint64(headPage)
	if s.cfg.StreamPrefix != "" {
		page = headPagePrefix
	}
	err := s.call(ctx, func(ctx context.Context, c *esdb.Client, keep func(func())) error {
		var from esdb.AllPosition = esdb.End{}
		var before *eventstore.Position
		for {
			rs, err := c.ReadAll(ctx, esdb.ReadAllOptions{Direction: esdb.Backwards, From: from}, page)
			if err != nil {
				return err
			}
			var n uint64
			found := false
			for {
				ev, err := rs.Recv()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					rs.Close()
					return err
				}
				n++
				r := ev.OriginalEvent()
				pos := fromPosition(r.Position)
				if before != nil && !pos.Less(*before) {
					continue // a server that includes the starting event
				}
				before = &pos
				if s.own(r) {
					keep(func() { head = pos })
					found = true
					break
				}
			}
			rs.Close()
			if found || n < page || before == nil {
				return nil
			}
			from = esdb.Position{Commit: before.Commit, Prepare: before.Prepare}
		}
	})
	return head, readError(ctx, "head", err)
}

// own reports whether an event of $all belongs to this store's feed: not a
// system event, and in a stream with the store's prefix.
func (s *Store) own(r *esdb.RecordedEvent) bool {
	return !isSystem(r.EventType) && strings.HasPrefix(r.StreamID, s.cfg.StreamPrefix)
}

// toRecorded converts an event read from KurrentDB, without the prefix.
func (s *Store) toRecorded(r *esdb.RecordedEvent) eventstore.RecordedEvent {
	rec := toRecorded(r)
	rec.StreamID = strings.TrimPrefix(rec.StreamID, s.cfg.StreamPrefix)
	return rec
}

// hasCode reports whether err is (or wraps) a client error with code.
func hasCode(err error, code esdb.ErrorCode) bool {
	var esErr *esdb.Error
	return errors.As(err, &esErr) && esErr.Code() == code
}

// clientLogger routes the client's log lines to l at debug level: the client
// logs routine events (a subscription closed by its owner) as errors, and
// the store logs what matters itself.
func clientLogger(l zerolog.Logger) esdb.LoggingFunc {
	return func(level esdb.LogLevel, format string, args ...interface{}) {
		l.Debug().Str("component", "kurrentdb-client").Str("client_level", level).Msgf(format, args...)
	}
}

var userinfo = regexp.MustCompile(`://[^@/]*@`)

// Redact returns a connection string with its password hidden, for logs and
// messages.
func Redact(url string) string { return redact(url) }

// redact hides credentials in a connection string.
func redact(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		return u.Redacted()
	}
	return hideCredentials(userinfo.ReplaceAllString(s, "://xxxxx@"), s)
}

// hideCredentials hides in text what may be the credentials of the
// connection string raw when it is mistyped around its scheme ("u:pw@h",
// "esdb:/u:pw@h"), which neither url.Parse nor userinfo finds: what comes
// before the last '@' of its host part, and the password after its last
// ':'. The client's errors quote such strings, or their path.
func hideCredentials(text, raw string) string {
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		raw = raw[:i]
	}
	at := strings.LastIndexByte(raw, '@')
	if at < 0 {
		return text
	}
	cred := strings.TrimLeft(raw[:at], "/")
	if i := strings.Index(cred, "//"); i >= 0 {
		cred = cred[i+2:]
	}
	if cred == "" {
		return text
	}
	text = strings.ReplaceAll(text, cred, "xxxxx")
	if i := strings.LastIndexByte(cred, ':'); i >= 0 && i+1 < len(cred) {
		text = strings.ReplaceAll(text, cred[i+1:], "xxxxx")
	}
	return text
}

// redactErr keeps a password that url.Parse quoted out of an error.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %v", ue.Op, ue.Err)
	}
	return err
}
