package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

// TimerActor is how the ledger names a timer that recorded an event.
func TimerActor(kind string) string { return "timer:" + kind }

// Fire records the events of handoff id's earliest deadline passed at
// now, if any, and returns the timer's kind ("" when none was due or
// another writer recorded it first). Every replica may fire the same
// timer: the append at the handoff's revision lets exactly one through,
// and the others, reading again, find nothing due.
func (s *Handoffs) Fire(ctx context.Context, id string, now time.Time) (string, error) {
	for attempt := 0; attempt <= maxConflictRetries; attempt++ {
		cur, err := s.load(ctx, "handoff.timer", id, domain.Principal{Admin: true})
		if err != nil || cur == nil {
			return "", err
		}
		evs, kind, err := cur.h.DecideTimers(now)
		if err != nil || len(evs) == 0 {
			return "", err
		}
		meta := eventstore.Metadata{Tenant: cur.h.Tenant, Actor: TimerActor(kind), CausationID: "timer:" + id}
		data, err := s.record(id, cur.h.Head, evs, meta, s.now())
		if err != nil {
			return "", err
		}
		_, err = s.store.Append(ctx, domain.StreamID(id), eventstore.Revision(cur.h.Head.Seq-1), data...)
		if errors.Is(err, eventstore.ErrConflict) {
			continue // someone moved it: a callback before the deadline, or another replica's timer
		}
		if err != nil {
			return "", err
		}
		return kind, nil
	}
	return "", domain.E("handoff.timer", domain.KindUnavailable, "busy", "handoff %s kept changing while its timer fired", id)
}

// TimerLoop fires the handoffs' deadlines as they fall due. Each replica
// runs one over its own read models; Fire keeps the outcome exactly once.
type TimerLoop struct {
	Handoffs *Handoffs
	// Due lists up to limit handoffs with a deadline passed at now, and
	// when the next deadline falls (zero when none): the read models'
	// timer index.
	Due func(now time.Time, limit int) (ids []string, next time.Time, err error)
	// Changed is closed when the read models move (projections.Runner.Changed).
	Changed func() <-chan struct{}
	Now     func() time.Time
	// OnFired hears each timer this replica recorded; OnError each failure.
	OnFired func(id, kind string)
	OnError func(id string, err error)

	// stale holds due entries a Fire found nothing to do for (the read
	// models lag behind the store), and when: each is tried again once
	// staleRetry has passed, or sooner when it leaves the due list.
	stale map[string]time.Time
}

const timerBatch = 100

// retryAfterError is how long the loop waits after a failed Fire.
const retryAfterError = time.Second

// staleRetry is how long a stale entry waits before it is tried again. Its
// entry moving is no sign to wait for: read models that catch up with a
// renewed lease that has run out too keep the handoff due all along.
const staleRetry = time.Second

// FireDue fires every timer due now once and returns when the next one
// falls (zero when none, or unknown after a batch was cut short).
func (l *TimerLoop) FireDue(ctx context.Context) (time.Time, error) {
	now := l.Now()
	ids, next, err := l.Due(now, timerBatch)
	if err != nil {
		return time.Time{}, err
	}
	if l.stale == nil {
		l.stale = map[string]time.Time{}
	}
	seen := map[string]bool{}
	var failed error
	var skipped int
	var retry time.Time // when the first stale entry skipped is tried again
	for _, id := range ids {
		seen[id] = true
		if at, ok := l.stale[id]; ok && now.Sub(at) < staleRetry {
			skipped++
			if r := at.Add(staleRetry); retry.IsZero() || r.Before(retry) {
				retry = r
			}
			continue
		}
		delete(l.stale, id)
		kind, err := l.Handoffs.Fire(ctx, id, now)
		switch {
		case err != nil:
			failed = err
			if l.OnError != nil {
				l.OnError(id, err)
			}
		case kind == "":
			l.stale[id] = now
			if r := now.Add(staleRetry); retry.IsZero() || r.Before(retry) {
				retry = r
			}
		case l.OnFired != nil:
			l.OnFired(id, kind)
		}
	}
	for id := range l.stale {
		if !seen[id] {
			delete(l.stale, id) // its entry moved: the read models caught up
		}
	}
	if len(ids) == timerBatch {
		if skipped < len(ids) {
			return now, failed // more due: go again at once
		}
		next = retry // the batch is all stale: what follows it waits for them
	}
	if !retry.IsZero() && (next.IsZero() || retry.Before(next)) {
		next = retry
	}
	return next, failed
}

// Run fires timers until ctx ends: at each deadline, and whenever the
// read models move (a new contract, a renewed lease, a restart's catch-up).
func (l *TimerLoop) Run(ctx context.Context) {
	for {
		changed := l.Changed()
		next, err := l.FireDue(ctx)
		now := l.Now()
		wait := time.Minute // a ceiling, should the wall clock jump
		switch {
		case err != nil && next.After(now):
			wait = min(retryAfterError, next.Sub(now))
		case err != nil:
			// More due at once (a full batch) is tried after the pause
			// too: a store refusing writes made the loop go round as fast
			// as it could, failing and logging once per handoff each time.
			wait = retryAfterError
		case !next.IsZero():
			wait = min(wait, max(next.Sub(now), 0))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}
