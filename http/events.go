package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/records"
)

// GET /v1/events: the caller's tenant's handoff lifecycle events as they
// commit, as a server-sent event stream (docs/api.md, Event stream).

const (
	// DefaultEventsPing is how often an event stream with nothing to send
	// sends a heartbeat comment (": ping").
	DefaultEventsPing = 15 * time.Second
	// DefaultEventStreams is how many event streams one tenant may hold
	// open on one server at once.
	DefaultEventStreams = 16
	// LastEventIDHeader is where an event stream's client names the last
	// event it has, to resume after it.
	LastEventIDHeader = "Last-Event-ID"
	// maxFilterValues bounds the values of one filter of the stream.
	maxFilterValues = 100
	// eventsRetryAfter is the Retry-After of a stream refused for the
	// tenant's bound: streams end when their clients leave, at no set time.
	eventsRetryAfter = 5
	// contractCacheSize bounds the handoffs whose tenant and target
	// executor the streams keep in memory.
	contractCacheSize = 1 << 16
)

// eventsWriteStall ends a stream whose client has taken nothing of what
// was written for this long: its slot and connection go to others.
var eventsWriteStall = time.Minute

// eventTypeRE is the form of an event type in the type filter: a
// PascalCase name, as domain's event types are. The filter is checked
// against the form, not a list, so that event types added to the lifecycle
// can be filtered on without a change here.
var eventTypeRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,63}$`)

// eventsQuery is what a stream asked for: where to start and which events.
type eventsQuery struct {
	after  eventstore.Position
	resume bool // after was given (Last-Event-ID or ?after=)
	// Each filter is nil when absent (any value); an event passes when it
	// passes every filter.
	handoffs, executors, types map[string]bool
}

// parseEventsQuery reads a stream's query and Last-Event-ID (lastID; has
// says whether the header was sent). Last-Event-ID wins over ?after=: a
// client reconnecting sends the URL it first used, with the header naming
// where it got to.
func parseEventsQuery(q url.Values, lastID string, has bool) (eventsQuery, error) {
	var out eventsQuery
	var bad []domain.FieldError
	add := func(ptr, code, msg string) {
		bad = append(bad, domain.FieldError{Pointer: ptr, Code: code, Message: msg})
	}
	const posMsg = "must be an event id this stream sent (a position, as in Baton-Position: <commit>/<prepare>)"
	switch {
	case has && strings.TrimSpace(lastID) != "":
		p, err := ParsePosition(lastID)
		if err != nil {
			add("header:"+LastEventIDHeader, "invalid_position", posMsg+": "+err.Error())
		}
		out.after, out.resume = p, true
	case len(q["after"]) > 1:
		add("query:after", "repeated", "is given more than once")
	case q.Has("after") && q.Get("after") == "":
		// A script's unset position: starting at the head would skip what
		// came since its last event as if it had resumed.
		add("query:after", "empty", "is empty; leave the parameter out to start at the store's head")
	case q.Get("after") != "":
		p, err := ParsePosition(q.Get("after"))
		if err != nil {
			add("query:after", "invalid_position", posMsg+": "+err.Error())
		}
		out.after, out.resume = p, true
	}
	list := func(name string, split bool, check func(string) string) map[string]bool {
		vals, ok := q[name]
		if !ok {
			return nil
		}
		set := map[string]bool{}
		for _, v := range vals {
			parts := []string{v}
			if split {
				parts = strings.Split(v, ",")
			}
			for _, p := range parts {
				if msg := check(p); msg != "" {
					add("query:"+name, "invalid_format", msg)
					return nil
				}
				set[p] = true
			}
		}
		if len(set) > maxFilterValues {
			add("query:"+name, "too_many", "lists more than 100 values")
			return nil
		}
		return set
	}
	out.handoffs = list("handoffId", true, func(v string) string {
		if v == "" || len(v) > eventstore.MaxStreamIDLen-len("handoff-") || !printable(v) {
			return "handoff ids are 1 to 247 printable ASCII characters, comma-separated or in repeated parameters"
		}
		return ""
	})
	out.executors = list("targetExecutor", false, func(v string) string {
		// Characters, as a contract's targetExecutor is measured: every
		// name a contract takes can be followed.
		if v == "" || utf8.RuneCountInString(v) > 200 || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return "a target executor is 1 to 200 characters without control characters, one per parameter (repeat the parameter for more)"
		}
		return ""
	})
	out.types = list("type", true, func(v string) string {
		if !eventTypeRE.MatchString(v) {
			return "event types are PascalCase names such as ApprovalDecided, comma-separated or in repeated parameters"
		}
		return ""
	})
	if len(bad) > 0 {
		// 422 validation_failed, as the ledger's query parameters answer.
		return eventsQuery{}, domain.Invalid("events.stream", bad...)
	}
	return out, nil
}

// streamEntry is one event of the stream: a ledger entry with the
// handoff, its tenant and its target executor.
type streamEntry struct {
	HandoffID      string          `json:"handoffId"`
	Seq            uint64          `json:"seq"`
	Type           string          `json:"type"`
	Data           json.RawMessage `json:"data"`
	Actor          string          `json:"actor"`
	RecordedAt     time.Time       `json:"recordedAt"`
	PrevHash       string          `json:"prevHash"`
	Hash           string          `json:"hash"`
	Tenant         string          `json:"tenant"`
	TargetExecutor string          `json:"targetExecutor"`
}

// streamContract is what the streams need of a handoff's contract; both
// are fixed when the contract is created.
type streamContract struct {
	tenant, target string
}

// contractCache keeps the contracts the streams have met, bounded: two
// generations, the older dropped whole when the newer fills.
type contractCache struct {
	mu       sync.Mutex
	cur, old map[string]streamContract
}

func (c *contractCache) get(id string) (streamContract, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.cur[id]; ok {
		return v, true
	}
	v, ok := c.old[id]
	if ok {
		c.putLocked(id, v)
	}
	return v, ok
}

func (c *contractCache) put(id string, v streamContract) {
	c.mu.Lock()
	c.putLocked(id, v)
	c.mu.Unlock()
}

func (c *contractCache) putLocked(id string, v streamContract) {
	if c.cur == nil {
		c.cur = map[string]streamContract{}
	}
	if len(c.cur) >= contractCacheSize/2 {
		c.old, c.cur = c.cur, map[string]streamContract{}
	}
	c.cur[id] = v
}

// contractOf is the contract of handoff id: from the cache, the read
// models (a handoff created before the stream started), or the first event
// of its stream (one the read models have not reached).
func (s *Server) contractOf(ctx context.Context, id string) (streamContract, bool) {
	if c, ok := s.contracts.get(id); ok {
		return c, true
	}
	if s.proj != nil {
		// A quarantined handoff still has its contract's owner.
		if view, tenant, found, _ := s.proj.Contract(id); found && tenant != "" {
			var v struct {
				TargetExecutor string `json:"targetExecutor"`
			}
			if json.Unmarshal(view, &v) == nil {
				c := streamContract{tenant: tenant, target: v.TargetExecutor}
				s.contracts.put(id, c)
				return c, true
			}
		}
	}
	evs, err := s.store.ReadStream(ctx, domain.StreamID(id), 0, 1)
	if err != nil || len(evs) == 0 {
		return streamContract{}, false
	}
	return s.learnContract(id, evs[0])
}

// learnContract keeps the contract a handoff stream's first event holds.
func (s *Server) learnContract(id string, ev eventstore.RecordedEvent) (streamContract, bool) {
	if ev.Revision != 0 || ev.Type != domain.EventContractCreated || ev.Unreadable != "" {
		return streamContract{}, false
	}
	var d struct {
		HandoffID      string `json:"handoffId"`
		Tenant         string `json:"tenant"`
		TargetExecutor string `json:"targetExecutor"`
	}
	if json.Unmarshal(ev.Data, &d) != nil || d.HandoffID != id || d.Tenant == "" {
		return streamContract{}, false // the read models refuse it too
	}
	c := streamContract{tenant: d.Tenant, target: d.TargetExecutor}
	s.contracts.put(id, c)
	return c, true
}

// entryFor is ev as the stream sends it to p under q, or false when it is
// not for p or q filters it out. An event's tenant is its contract's, as
// the read models decide it; the event's own metadata must name the same
// tenant, or no one is sent it.
func (s *Server) entryFor(ctx context.Context, p domain.Principal, q *eventsQuery, ev eventstore.RecordedEvent) (streamEntry, bool) {
	id, ok := strings.CutPrefix(ev.StreamID, "handoff-")
	if !ok || id == "" || ev.Unreadable != "" || strings.ContainsAny(ev.Type, "\r\n") {
		return streamEntry{}, false
	}
	var c streamContract
	if ev.Revision == 0 {
		c, ok = s.learnContract(id, ev) // kept even when filtered out: later events need it
		if !ok {
			return streamEntry{}, false
		}
	}
	if q.handoffs != nil && !q.handoffs[id] || q.types != nil && !q.types[ev.Type] {
		return streamEntry{}, false
	}
	if ev.Revision != 0 {
		if c, ok = s.contractOf(ctx, id); !ok {
			return streamEntry{}, false // no owner known: shown to no one
		}
	}
	if ev.Metadata.Tenant != c.tenant || !p.CanSee(c.tenant) {
		return streamEntry{}, false
	}
	if q.executors != nil && !q.executors[c.target] {
		return streamEntry{}, false
	}
	r := records.Recorded(ev)
	return streamEntry{HandoffID: id, Seq: r.Seq, Type: r.Type, Data: r.Data, Actor: r.Actor, RecordedAt: r.RecordedAt,
		PrevHash: r.PrevHash, Hash: r.Hash, Tenant: c.tenant, TargetExecutor: c.target}, true
}

// acquireStream takes one of tenant's stream slots; release gives it back.
func (s *Server) acquireStream(tenant string) (release func(), err error) {
	return s.acquireStreamOf(tenant, s.eventStreams, "this tenant already holds %d event streams open on this server, the most it may; close one, or retry later")
}

// acquireStreamOf takes one of limit slots of bucket; why is the refusal,
// with the limit for its %d.
func (s *Server) acquireStreamOf(tenant string, limit int, why string) (release func(), err error) {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	if s.streams[tenant] >= limit {
		e := domain.E("events.stream", domain.KindRateLimited, "too_many_streams", why, limit)
		e.RetryAfter = eventsRetryAfter
		return nil, e
	}
	s.streams[tenant]++
	return func() {
		s.streamsMu.Lock()
		defer s.streamsMu.Unlock()
		if s.streams[tenant]--; s.streams[tenant] <= 0 {
			delete(s.streams, tenant)
		}
	}, nil
}

func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	ids := r.Header.Values(LastEventIDHeader)
	for _, v := range ids {
		if v != ids[0] {
			// Two places to resume from: the first was taken, and the
			// stream resumed wherever it happened to name.
			s.writeError(w, r, domain.Invalid("events.stream", domain.FieldError{Pointer: "header:" + LastEventIDHeader, Code: "repeated",
				Message: "is given more than once, with different ids; send the last event id the client has, once"}))
			return
		}
	}
	q, err := parseEventsQuery(r.URL.Query(), r.Header.Get(LastEventIDHeader), len(ids) > 0)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p := principalOf(r.Context())
	bucket := p.Tenant
	if p.Person != "" {
		// The console's pages hold streams of their own bound, so that
		// people's open tabs never take the executors' streams.
		bucket = "console\x00" + p.Tenant
	}
	release, err := s.acquireStream(bucket)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer release()
	// The stream ends with the request or at server shutdown.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.stopCtx, cancel)()
	from := q.after
	head, err := s.store.Head(ctx)
	if err != nil {
		s.storeDown(w, r, err)
		return
	}
	if !q.resume {
		// Without a place to resume from, only events committed from now.
		from = head
	} else if from.Compare(head) > 0 {
		// No event of this store has that id: waiting for it would send
		// nothing until the store happened to pass it, and then resume
		// in the middle of events the client never had.
		where := "Last-Event-ID"
		if r.Header.Get(LastEventIDHeader) == "" {
			where = "after"
		}
		s.writeError(w, r, domain.E("events", domain.KindConflict, "position_ahead",
			"%s %s is past this store's newest event (%s): no stream of this store sent it (a store restored from an older backup, or another deployment's id). Reconnect without it to follow from now, or from an id this stream sent.", where, FormatPosition(from), FormatPosition(head)))
		return
	}
	sub, err := s.store.SubscribeAll(ctx, from)
	if err != nil {
		s.storeDown(w, r, err)
		return
	}
	if p.KeyID != "" && s.keyRevokedBy(ctx, p.KeyID, head) {
		// Revoked between the request's authentication and the head the
		// feed follows from: its revocation is not in what follows.
		sub.Close()
		s.refuseRevoked(w, r)
		return
	}
	if q.resume && from == eventstore.Start {
		// Resumed from the store's start: the header names it, as the
		// first id does (setPosition leaves a start it was not told out).
		w.Header().Set(PositionHeader, FormatPosition(from))
	} else {
		setPosition(w, from)
	}
	sse, err := startSSE(w)
	if err != nil {
		sub.Close()
		s.writeError(w, r, err)
		return
	}
	// Where it starts, as an id without an event: an EventSource keeps it
	// as its last event id, so one that reconnects before any event came
	// resumes from here, not from the head it reconnects at, which would
	// skip what committed in between. It cannot read Baton-Position.
	if sse.lastID(FormatPosition(from)) != nil {
		sub.Close()
		return
	}
	sse.flush() // the headers: the stream is following the feed

	// Recv blocks, so one goroutine pulls while this one also sends the
	// heartbeats. It hands over one event at a time: a slow client slows
	// its own subscription, and nothing piles up in between.
	evs := make(chan eventstore.RecordedEvent)
	failed := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			ev, err := sub.Recv()
			if err != nil {
				failed <- err
				return
			}
			select {
			case evs <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	rc := http.NewResponseController(w)
	stalled := false
	defer func() {
		cancel()
		sub.Close()
		wg.Wait()
		if stalled {
			// The response's end then fails to write and the connection
			// closes: kept alive, it would sit with its unread bytes until
			// the idle timeout.
			rc.SetWriteDeadline(time.Now())
			return
		}
		rc.SetWriteDeadline(time.Time{})
	}()
	ping := time.NewTicker(s.eventsPing)
	defer ping.Stop()
	// read is the position of the last event read, told the last id sent:
	// a quiet interval after events the filters left out tells the client
	// how far the stream has read (an id alone), so that its reconnect
	// does not read them all again.
	read, told := from, from
	var stall stallWatch
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for {
		var ev eventstore.RecordedEvent
		select {
		case ev = <-evs:
		case <-ping.C:
			// A client that stopped reading blocks no write of a quiet
			// stream: the socket's buffers take its pings for days.
			if stall.stalled(r.Context(), time.Now(), eventsWriteStall) {
				stalled = true
				return
			}
			rc.SetWriteDeadline(time.Now().Add(eventsWriteStall))
			if read != told {
				if sse.lastID(FormatPosition(read)) != nil {
					return
				}
				told = read
			} else if sse.comment("ping") != nil {
				return
			}
			sse.flush()
			continue
		case err := <-failed:
			if ctx.Err() == nil && !errors.Is(err, eventstore.ErrSubscriptionClosed) {
				s.log.Warn().Str("requestId", RequestID(r.Context())).Err(err).Msg("event stream: the feed failed")
			}
			return // the client reconnects with Last-Event-ID
		case <-ctx.Done():
			return
		}
		read = ev.Position
		if p.KeyID != "" && revokes(ev, p.KeyID) {
			// The key is refused from its revocation on: a stream opened
			// before it does not go on carrying the tenant's events.
			return
		}
		if e, ok := s.entryFor(ctx, p, &q, ev); ok {
			// As the ledger read writes it: <, > and & as they are.
			buf.Reset()
			err := enc.Encode(e)
			b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
			if err != nil {
				// Data that is not JSON: an event written around Baton.
				s.log.Warn().Str("requestId", RequestID(r.Context())).Str("stream", ev.StreamID).Uint64("revision", ev.Revision).Err(err).Msg("event stream: event skipped")
			} else {
				rc.SetWriteDeadline(time.Now().Add(eventsWriteStall))
				if sse.send(FormatPosition(ev.Position), e.Type, b) != nil {
					return
				}
				told = ev.Position
				sse.flush()
				ping.Reset(s.eventsPing) // a ping only after a quiet interval
			}
		}
	}
}

// keyRevokedBy says whether keyID was revoked at or before head, as the
// read models tell once they have reached it (at most readWait).
func (s *Server) keyRevokedBy(ctx context.Context, keyID string, head eventstore.Position) bool {
	wctx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	s.proj.WaitFor(wctx, head)
	rec, err := s.proj.KeyByID(keyID)
	return err == nil && rec.RevokedAt != nil
}

// revokes says whether ev is the revocation of keyID.
func revokes(ev eventstore.RecordedEvent, keyID string) bool {
	if ev.StreamID != domain.KeysStream || ev.Type != domain.EventKeyRevoked {
		return false
	}
	var d domain.KeyRevoked
	return json.Unmarshal(ev.Data, &d) == nil && d.KeyID == keyID
}

// storeDown answers a stream the store could not start.
func (s *Server) storeDown(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.Warn().Str("requestId", RequestID(r.Context())).Err(err).Msg("event stream: the store did not answer")
	e := domain.E("events.stream", domain.KindUnavailable, "store_unavailable", "The event store did not answer; the stream did not start. Retry.")
	e.RetryAfter = 1
	s.writeError(w, r, e)
}
