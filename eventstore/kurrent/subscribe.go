package kurrent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/batonhq/baton/eventstore"
)

// SubscribeAll implements eventstore.Store. The first subscription is made
// before it returns (so a server that cannot be reached is reported here);
// after that a goroutine reads ahead up to Config.SubscriptionBuffer events,
// and resubscribes from the last event it delivered whenever the server
// drops the subscription, until ctx ends or the subscription or the store is
// closed.
func (s *Store) SubscribeAll(ctx context.Context, after eventstore.Position) (eventstore.Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sctx, c, end, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(sctx)
	sub := &subscription{
		s:      s,
		parent: ctx,
		ctx:    sctx,
		cancel: cancel,
		after:  after,
		items:  make(chan item, s.cfg.SubscriptionBuffer),
		done:   make(chan struct{}),
	}
	es, c, err := sub.subscribe(c)
	if err != nil {
		cancel()
		end()
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case s.base.Err() != nil:
			return nil, eventstore.ErrClosed
		}
		return nil, fmt.Errorf("kurrent: subscribe to $all: %w", err)
	}
	go func() {
		defer end()
		defer close(sub.done)
		sub.run(es, c)
	}()
	return sub, nil
}

// item is what the pump hands to Recv: an event, or the error that ends the
// subscription.
type item struct {
	ev  eventstore.RecordedEvent
	err error
}

type subscription struct {
	s      *Store
	parent context.Context // the caller's
	ctx    context.Context // parent, store and Close
	cancel context.CancelFunc
	after  eventstore.Position // the last event handed over (pump only)
	items  chan item
	done   chan struct{} // closed when the pump has exited

	closed atomic.Bool
	mu     sync.Mutex // one Recv at a time
	failed error      // a terminal error already received
}

// subscribe subscribes from sub.after with the client c, or a new one if c
// has given up.
func (sub *subscription) subscribe(c *esdb.Client) (*esdb.Subscription, *esdb.Client, error) {
	opts := esdb.SubscribeToAllOptions{
		From:   allPosition(sub.after),
		Filter: esdb.ExcludeSystemEventsFilter(),
	}
	if p := sub.s.cfg.StreamPrefix; p != "" {
		// KurrentDB's own streams start with "$", so this leaves out
		// system events too.
		opts.Filter = &esdb.SubscriptionFilter{Type: esdb.StreamFilterType, Prefixes: []string{p}}
	}
	es, err := sub.subscribeWith(c, opts)
	if hasCode(err, esdb.ErrorCodeConnectionClosed) || errors.Is(err, errClientGone) {
		if c2, rerr := sub.s.renew(c); rerr == nil {
			c = c2
			es, err = sub.subscribeWith(c, opts)
		}
	}
	for i := 0; i < notLeaderRetries && hasCode(err, esdb.ErrorCodeNotLeader) && sub.ctx.Err() == nil; i++ {
		es, err = sub.subscribeWith(c, opts) // the client is reconnecting to the leader
	}
	return es, c, err
}

// subscribeStall is how long a subscription call may go unanswered before
// its client is taken for one that gave up and is replaced: longer than a
// whole discovery at the client's defaults (10 attempts, each up to its 5 s
// gossip timeout).
var subscribeStall = 2 * time.Minute

// subscribeWith subscribes with c, giving up (errClientGone) when c is
// replaced or does not answer within subscribeStall, and when the
// subscription ends (a Close, the store's): queued inside a client that
// gave up, the call waited for ever, and the pump with it, so the read
// models never moved again and Store.Close never returned.
func (sub *subscription) subscribeWith(c *esdb.Client, opts esdb.SubscribeToAllOptions) (*esdb.Subscription, error) {
	var es *esdb.Subscription
	stall := time.AfterFunc(subscribeStall, func() { sub.s.renew(c) })
	defer stall.Stop()
	err := sub.s.detached(c, sub.ctx.Done(), func() error {
		var err error
		es, err = c.SubscribeToAll(sub.ctx, opts)
		return err
	}, func() {
		if es != nil {
			es.Close()
		}
	})
	if err != nil {
		return nil, err
	}
	return es, nil
}

// run is the pump: it forwards events until the subscription drops, then
// resubscribes with backoff, until the subscription's context ends.
func (sub *subscription) run(es *esdb.Subscription, c *esdb.Client) {
	log := sub.s.cfg.Log
	backoff := sub.s.cfg.ResubscribeMin
	for {
		progressed, err := sub.forward(es)
		es.Close()
		if sub.ctx.Err() != nil {
			return
		}
		if progressed {
			backoff = sub.s.cfg.ResubscribeMin
		}
		log.Warn().Err(err).Uint64("commit", sub.after.Commit).Uint64("prepare", sub.after.Prepare).
			Dur("retry_in", backoff).Msg("kurrent: $all subscription dropped; resubscribing from the last delivered event")
		for {
			select {
			case <-time.After(backoff):
			case <-sub.ctx.Done():
				return
			}
			sub.s.mu.RLock()
			if sub.s.client != c && !sub.s.closed {
				c = sub.s.client // someone renewed it meanwhile
			}
			sub.s.mu.RUnlock()
			es, c, err = sub.subscribe(c)
			if err == nil {
				log.Info().Uint64("commit", sub.after.Commit).Uint64("prepare", sub.after.Prepare).
					Msg("kurrent: $all subscription resumed")
				break
			}
			if sub.ctx.Err() != nil {
				return
			}
			backoff = min(2*backoff, sub.s.cfg.ResubscribeMax)
			log.Warn().Err(err).Dur("retry_in", backoff).Msg("kurrent: resubscribing to $all failed")
		}
	}
}

// forward hands events to Recv until the subscription drops or its context
// ends. progressed reports whether the server sent anything at all.
func (sub *subscription) forward(es *esdb.Subscription) (progressed bool, err error) {
	for {
		e := es.Recv()
		switch {
		case e.SubscriptionDropped != nil:
			return progressed, e.SubscriptionDropped.Error
		case e.EventAppeared != nil:
			progressed = true
			r := e.EventAppeared.OriginalEvent()
			if r == nil {
				continue
			}
			pos := fromPosition(r.Position)
			// The server filter leaves out system events and the
			// subscription starts after sub.after; both are checked again
			// so that a resubscription can never deliver twice.
			if !sub.s.own(r) || !sub.after.Less(pos) {
				continue
			}
			if !sub.hand(item{ev: sub.s.toRecorded(r)}) {
				return progressed, sub.ctx.Err()
			}
			sub.after = pos
		default: // checkpoints, caught up, fell behind
			progressed = true
		}
	}
}

// hand gives an item to Recv, or reports false when the subscription ends
// first.
func (sub *subscription) hand(it item) bool {
	select {
	case sub.items <- it:
		return true
	case <-sub.ctx.Done():
		return false
	}
}

// Recv implements eventstore.Subscription.
func (sub *subscription) Recv() (eventstore.RecordedEvent, error) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.recv()
}

func (sub *subscription) recv() (eventstore.RecordedEvent, error) {
	if sub.closed.Load() {
		return eventstore.RecordedEvent{}, eventstore.ErrSubscriptionClosed
	}
	if sub.failed != nil {
		return eventstore.RecordedEvent{}, sub.failed
	}
	select {
	case it := <-sub.items:
		return sub.take(it)
	default:
	}
	select {
	case it := <-sub.items:
		return sub.take(it)
	case <-sub.ctx.Done():
		return eventstore.RecordedEvent{}, sub.endErr()
	}
}

func (sub *subscription) take(it item) (eventstore.RecordedEvent, error) {
	if it.err != nil {
		sub.failed = it.err
		return eventstore.RecordedEvent{}, it.err
	}
	return it.ev, nil
}

// endErr says why the subscription's context ended.
func (sub *subscription) endErr() error {
	switch {
	case sub.closed.Load():
		return eventstore.ErrSubscriptionClosed
	case sub.parent.Err() != nil:
		return sub.parent.Err()
	case sub.s.base.Err() != nil:
		return eventstore.ErrClosed
	}
	return eventstore.ErrSubscriptionClosed
}

// RecvBatch implements eventstore.Subscription.
func (sub *subscription) RecvBatch(max int) ([]eventstore.RecordedEvent, error) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	first, err := sub.recv()
	if err != nil {
		return nil, err
	}
	out := []eventstore.RecordedEvent{first}
	for len(out) < max {
		select {
		case it := <-sub.items:
			if it.err != nil {
				sub.failed = it.err // reported by the next call
				return out, nil
			}
			out = append(out, it.ev)
		default:
			return out, nil
		}
	}
	return out, nil
}

// Close implements eventstore.Subscription. It does not wait for the pump;
// Store.Close does.
func (sub *subscription) Close() error {
	sub.closed.Store(true)
	sub.cancel()
	return nil
}
