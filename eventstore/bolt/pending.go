package bolt

import (
	"sync"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
)

// pendingEvent is an event the writer has placed but the bbolt file does
// not hold yet. Readers see it once its position is at or below the store's
// head (it is in the journal, fsynced), until the indexer has committed it
// to the bbolt file and dropped it.
type pendingEvent struct {
	pos    uint64
	rev    uint64
	stream string
	id     uuid.UUID
	rec    []byte // the encoded record, as the events bucket stores it; never changed
	// ev is the event as decodeRecord would give it, made once when it is
	// placed: every follower reads each new event from here, and decoding
	// it once per reader was most of what an event cost its readers. It
	// is shared between them, so never changed (its Data is its own copy,
	// not rec's).
	ev *eventstore.RecordedEvent
}

// pending holds the placed events in position order. The writer adds at the
// end, the indexer drops from the front; mu guards both against readers.
type pending struct {
	mu      sync.RWMutex
	events  []pendingEvent
	streams map[string][]uint64 // a stream's pending positions, in revision order
	ids     map[uuid.UUID]uint64
	bytes   int // of records held
}

func newPending() *pending {
	return &pending{streams: map[string][]uint64{}, ids: map[uuid.UUID]uint64{}}
}

func (p *pending) size() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.bytes
}

// count returns how many events wait for the indexer (placed ones whose
// group is still syncing included).
func (p *pending) count() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.events)
}

// at returns the event at pos, or nil. The caller holds mu.
func (p *pending) at(pos uint64) *pendingEvent {
	if len(p.events) == 0 || pos < p.events[0].pos {
		return nil
	}
	i := pos - p.events[0].pos
	if i >= uint64(len(p.events)) {
		return nil
	}
	return &p.events[i]
}

// add appends an event; its position follows the last one held. The caller
// holds mu for writing.
func (p *pending) add(e pendingEvent) {
	p.events = append(p.events, e)
	p.streams[e.stream] = append(p.streams[e.stream], e.pos)
	p.ids[e.id] = e.pos
	p.bytes += len(e.rec)
}

// last returns the stream's newest pending revision. The caller holds mu.
func (p *pending) last(stream string) (rev uint64, ok bool) {
	ps := p.streams[stream]
	if len(ps) == 0 {
		return 0, false
	}
	return p.at(ps[len(ps)-1]).rev, true
}

// dropThrough forgets the events at positions up to pos, which the bbolt
// file now holds. The caller holds mu for writing.
func (p *pending) dropThrough(pos uint64) {
	n := 0
	for n < len(p.events) && p.events[n].pos <= pos {
		p.forget(&p.events[n], true)
		n++
	}
	// Copy the rest down rather than reslice, so the array does not keep
	// every record ever held alive behind the slice's start.
	rest := copy(p.events, p.events[n:])
	clear(p.events[rest:])
	p.events = p.events[:rest]
}

// dropFrom forgets the events at positions from pos on: placed by a group
// commit whose journal write failed. The caller holds mu for writing.
func (p *pending) dropFrom(pos uint64) {
	for len(p.events) > 0 && p.events[len(p.events)-1].pos >= pos {
		e := &p.events[len(p.events)-1]
		p.forget(e, false)
		*e = pendingEvent{}
		p.events = p.events[:len(p.events)-1]
	}
}

// streamAfter returns the stream's pending events with revision >= from
// and position <= head, at most limit. The caller holds mu.
func (p *pending) streamAfter(stream string, from, head uint64, limit int) []pendingEvent {
	var out []pendingEvent
	for _, pos := range p.streams[stream] {
		if len(out) >= limit || pos > head {
			break
		}
		if e := p.at(pos); e.rev >= from {
			out = append(out, *e)
		}
	}
	return out
}

// feedAfter returns the pending events with positions in (after, head], at
// most limit. The caller holds mu.
func (p *pending) feedAfter(after, head uint64, limit int) []pendingEvent {
	if len(p.events) == 0 {
		return nil
	}
	start := p.events[0].pos
	i := uint64(0)
	if after+1 > start {
		i = after + 1 - start
	}
	if i >= uint64(len(p.events)) {
		return nil
	}
	out := make([]pendingEvent, 0, min(uint64(limit), uint64(len(p.events))-i))
	for ; i < uint64(len(p.events)) && len(out) < limit; i++ {
		e := p.events[i]
		if e.pos > head {
			break
		}
		out = append(out, e)
	}
	return out
}

// forget takes e out of the stream and id indexes and the byte count: it is
// its stream's oldest pending event (first) or its newest.
func (p *pending) forget(e *pendingEvent, first bool) {
	switch ps := p.streams[e.stream]; {
	case len(ps) <= 1:
		delete(p.streams, e.stream)
	case first:
		p.streams[e.stream] = ps[1:]
	default:
		p.streams[e.stream] = ps[:len(ps)-1]
	}
	delete(p.ids, e.id)
	p.bytes -= len(e.rec)
}
