package kurrenttest

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
	"github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// defaultSearchWindow is the server's DefaultReadBatchSize, the filter window
// when a request leaves it unbounded.
const defaultSearchWindow = 32

// subscriptionBatch is how many records a subscription takes per look at
// the log.
const subscriptionBatch = 512

func (a *streamsService) Read(req *streams.ReadReq, out streams.Streams_ReadServer) error {
	s := a.s
	if s.refuseAsFollower(out.Context(), out.SetTrailer) {
		return notLeader()
	}
	o := req.GetOptions()
	if o == nil {
		return status.Error(codes.InvalidArgument, "'options' is a required argument")
	}
	if o.GetUuidOption() == nil {
		return status.Error(codes.InvalidArgument, "'uuidOption' is a required argument")
	}
	r := reader{s: s, out: out, stringIDs: o.GetUuidOption().GetString_() != nil}
	flt, err := parseFilter(o)
	if err != nil {
		return err
	}
	backwards := o.GetReadDirection() == streams.ReadReq_Options_Backwards
	switch count := o.GetCountOption().(type) {
	case *streams.ReadReq_Options_Count:
		switch so := o.GetStreamOption().(type) {
		case *streams.ReadReq_Options_Stream:
			if flt != nil {
				return invalidCombination("stream read with a filter")
			}
			return r.readStream(so.Stream, backwards, count.Count)
		case *streams.ReadReq_Options_All:
			return r.readAll(so.All, backwards, count.Count, flt)
		}
	case *streams.ReadReq_Options_Subscription:
		if backwards {
			return invalidCombination("backward subscription")
		}
		switch so := o.GetStreamOption().(type) {
		case *streams.ReadReq_Options_Stream:
			if flt != nil {
				return invalidCombination("stream subscription with a filter")
			}
			return r.subscribeStream(so.Stream)
		case *streams.ReadReq_Options_All:
			return r.subscribeAll(so.All, flt)
		}
	}
	return invalidCombination("missing stream or count option")
}

func invalidCombination(what string) error {
	return status.Errorf(codes.InvalidArgument, "The combination of options is invalid (%s).", what)
}

type reader struct {
	s         *Server
	out       streams.Streams_ReadServer
	stringIDs bool
}

func (r *reader) readStream(o *streams.ReadReq_Options_StreamOptions, backwards bool, count uint64) error {
	name := string(o.GetStreamIdentifier().GetStreamName())
	s := r.s
	s.mu.Lock()
	recs := s.streams[name]
	var page []*record
	if len(recs) > 0 {
		n := uint64(len(recs))
		var from uint64
		switch v := o.GetRevisionOption().(type) {
		case *streams.ReadReq_Options_StreamOptions_Revision:
			from = v.Revision
		case *streams.ReadReq_Options_StreamOptions_End:
			from = n // forwards: nothing; backwards: the last event
		}
		if !backwards {
			for i := from; i < n && uint64(len(page)) < count; i++ {
				page = append(page, recs[i])
			}
		} else {
			for i := int64(min(from, n-1)); i >= 0 && uint64(len(page)) < count; i-- {
				page = append(page, recs[i])
			}
		}
	}
	s.mu.Unlock()
	if len(recs) == 0 {
		return r.out.Send(&streams.ReadResp{Content: &streams.ReadResp_StreamNotFound_{StreamNotFound: &streams.ReadResp_StreamNotFound{
			StreamIdentifier: &shared.StreamIdentifier{StreamName: []byte(name)},
		}}})
	}
	return r.send(page)
}

// before reports whether a record at log position pos comes before the $all
// position (commit, prepare); every record is self-committed, so its own
// position is (pos, pos).
func before(pos, commit, prepare uint64) bool {
	return pos < commit || (pos == commit && pos < prepare)
}

func (r *reader) readAll(o *streams.ReadReq_Options_AllOptions, backwards bool, count uint64, flt *filter) error {
	s := r.s
	s.mu.Lock()
	log := s.log
	s.mu.Unlock()
	var page []*record
	take := func(rec *record) bool {
		if flt == nil || flt.match(rec) {
			page = append(page, rec)
		}
		return uint64(len(page)) < count
	}
	if count == 0 {
		return nil
	}
	if !backwards {
		from := 0
		switch v := o.GetAllOption().(type) {
		case *streams.ReadReq_Options_AllOptions_Position:
			// Forward reads include the event at the position.
			c, p := v.Position.GetCommitPosition(), v.Position.GetPreparePosition()
			from = sort.Search(len(log), func(i int) bool { return !before(log[i].pos, c, p) })
		case *streams.ReadReq_Options_AllOptions_End:
			from = len(log)
		}
		for i := from; i < len(log) && take(log[i]); i++ {
		}
	} else {
		to := len(log) // exclusive
		switch v := o.GetAllOption().(type) {
		case *streams.ReadReq_Options_AllOptions_Position:
			// Backward reads start strictly before the position.
			c, p := v.Position.GetCommitPosition(), v.Position.GetPreparePosition()
			to = sort.Search(len(log), func(i int) bool { return !before(log[i].pos, c, p) })
		case *streams.ReadReq_Options_AllOptions_Start:
			to = 0
		}
		for i := to - 1; i >= 0 && take(log[i]); i-- {
		}
	}
	return r.send(page)
}

func (r *reader) send(page []*record) error {
	for _, rec := range page {
		if err := r.out.Send(r.event(rec)); err != nil {
			return err
		}
	}
	return nil
}

func (r *reader) event(rec *record) *streams.ReadResp {
	id := uuidDTO(rec.id)
	if r.stringIDs {
		id = &shared.UUID{Value: &shared.UUID_String_{String_: rec.id.String()}}
	}
	return &streams.ReadResp{Content: &streams.ReadResp_Event{Event: &streams.ReadResp_ReadEvent{
		Event: &streams.ReadResp_ReadEvent_RecordedEvent{
			Id:               id,
			StreamIdentifier: &shared.StreamIdentifier{StreamName: []byte(rec.stream)},
			StreamRevision:   rec.number,
			PreparePosition:  rec.pos,
			CommitPosition:   rec.pos,
			Metadata: map[string]string{
				"type":         rec.typ,
				"content-type": rec.ctype,
				"created":      strconv.FormatInt(rec.created, 10),
			},
			CustomMetadata: rec.meta,
			Data:           rec.data,
		},
		Position: &streams.ReadResp_ReadEvent_CommitPosition{CommitPosition: rec.pos},
	}}}
}

// filter is a server-side $all filter.
type filter struct {
	eventType bool // match the event type, else the stream name
	re        *regexp.Regexp
	prefixes  []string
	interval  int // checkpoint every this many considered events
}

func (f *filter) match(r *record) bool {
	s := r.stream
	if f.eventType {
		s = r.typ
	}
	if f.re != nil {
		return f.re.MatchString(s)
	}
	for _, p := range f.prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func (f *filter) String() string {
	on := "stream"
	if f.eventType {
		on = "event type"
	}
	if f.re != nil {
		return fmt.Sprintf("%s =~ %s", on, f.re)
	}
	return fmt.Sprintf("%s has prefix %q", on, f.prefixes)
}

func parseFilter(o *streams.ReadReq_Options) (*filter, error) {
	fo, ok := o.GetFilterOption().(*streams.ReadReq_Options_Filter)
	if !ok || fo.Filter == nil {
		return nil, nil // no_filter, or a client that left the option out
	}
	f := &filter{}
	var expr *streams.ReadReq_Options_FilterOptions_Expression
	switch v := fo.Filter.GetFilter().(type) {
	case *streams.ReadReq_Options_FilterOptions_EventType:
		f.eventType, expr = true, v.EventType
	case *streams.ReadReq_Options_FilterOptions_StreamIdentifier:
		expr = v.StreamIdentifier
	default:
		return nil, status.Error(codes.InvalidArgument, "a filter names an event type or a stream expression")
	}
	if rx := expr.GetRegex(); rx != "" {
		re, err := regexp.Compile(rx)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "filter regex: %v", err)
		}
		f.re = re
	} else {
		f.prefixes = expr.GetPrefix()
	}
	window := defaultSearchWindow
	if m, ok := fo.Filter.GetWindow().(*streams.ReadReq_Options_FilterOptions_Max); ok && m.Max > 0 {
		window = int(m.Max)
	}
	mult := fo.Filter.GetCheckpointIntervalMultiplier()
	if mult == 0 && o.GetSubscription() != nil {
		return nil, status.Error(codes.InvalidArgument, "checkpointIntervalMultiplier must be positive")
	}
	f.interval = window * int(max(mult, 1))
	return f, nil
}

// subscription is an open subscription; drop ends it.
type subscription struct {
	dropCh chan struct{}
	once   sync.Once
}

func (sub *subscription) drop() (first bool) {
	sub.once.Do(func() {
		close(sub.dropCh)
		first = true
	})
	return first
}

func (r *reader) subscribeStream(o *streams.ReadReq_Options_StreamOptions) error {
	name := string(o.GetStreamIdentifier().GetStreamName())
	return r.subscribe(func(log []*record, streamsByName map[string][]*record) (int, func(*record) bool) {
		switch v := o.GetRevisionOption().(type) {
		case *streams.ReadReq_Options_StreamOptions_Revision:
			after := v.Revision
			return 0, func(rec *record) bool { return rec.stream == name && rec.number > after }
		case *streams.ReadReq_Options_StreamOptions_End:
			return len(log), func(rec *record) bool { return rec.stream == name }
		}
		return 0, func(rec *record) bool { return rec.stream == name }
	}, nil)
}

func (r *reader) subscribeAll(o *streams.ReadReq_Options_AllOptions, flt *filter) error {
	return r.subscribe(func(log []*record, _ map[string][]*record) (int, func(*record) bool) {
		switch v := o.GetAllOption().(type) {
		case *streams.ReadReq_Options_AllOptions_Position:
			// Subscriptions start strictly after the position.
			c, p := v.Position.GetCommitPosition(), v.Position.GetPreparePosition()
			return sort.Search(len(log), func(i int) bool {
				pos := log[i].pos
				return !before(pos, c, p) && (pos != c || pos != p)
			}), nil
		case *streams.ReadReq_Options_AllOptions_End:
			return len(log), nil
		}
		return 0, nil
	}, flt)
}

// subscribe confirms the subscription, then sends every record from the
// start index on that is in scope (nil: all) and passes the filter, waiting
// for more at the end of the log, until the client goes away or the
// subscription is dropped.
func (r *reader) subscribe(start func([]*record, map[string][]*record) (int, func(*record) bool), flt *filter) error {
	s := r.s
	sub := &subscription{dropCh: make(chan struct{})}
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return status.Error(codes.Unavailable, "server is shutting down")
	}
	next, inScope := start(s.log, s.streams)
	s.subs[sub] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.subs, sub)
		s.mu.Unlock()
	}()

	ctx := r.out.Context()
	if err := r.out.Send(&streams.ReadResp{Content: &streams.ReadResp_Confirmation{Confirmation: &streams.ReadResp_SubscriptionConfirmation{
		SubscriptionId: uuid.NewString(),
	}}}); err != nil {
		return err
	}
	var (
		considered     int    // since the last checkpoint
		lastConsidered uint64 // position of the last record looked at
		caughtUp       bool
	)
	checkpoint := func() error {
		considered = 0
		return r.out.Send(&streams.ReadResp{Content: &streams.ReadResp_Checkpoint_{Checkpoint: &streams.ReadResp_Checkpoint{
			CommitPosition: lastConsidered, PreparePosition: lastConsidered,
		}}})
	}
	dropped := func() error {
		return status.Error(codes.Unavailable, "subscription dropped by the kurrenttest server")
	}
	for {
		select {
		case <-sub.dropCh:
			return dropped()
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		default:
		}
		s.mu.Lock()
		batch := s.log[next:min(len(s.log), next+subscriptionBatch)]
		changed := s.changed
		s.mu.Unlock()
		if len(batch) == 0 {
			if flt != nil && considered > 0 {
				if err := checkpoint(); err != nil {
					return err
				}
			}
			if !caughtUp {
				caughtUp = true
				if err := r.out.Send(&streams.ReadResp{Content: &streams.ReadResp_CaughtUp_{CaughtUp: &streams.ReadResp_CaughtUp{}}}); err != nil {
					return err
				}
			}
			select {
			case <-changed:
			case <-sub.dropCh:
				return dropped()
			case <-ctx.Done():
				return status.FromContextError(ctx.Err()).Err()
			}
			continue
		}
		next += len(batch)
		for _, rec := range batch {
			if inScope != nil && !inScope(rec) {
				continue
			}
			considered++
			lastConsidered = rec.pos
			if flt == nil || flt.match(rec) {
				if err := r.out.Send(r.event(rec)); err != nil {
					return err
				}
			}
			if flt != nil && considered >= flt.interval {
				if err := checkpoint(); err != nil {
					return err
				}
			}
		}
	}
}
