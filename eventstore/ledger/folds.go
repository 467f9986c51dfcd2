package ledger

import (
	"container/list"
	"sync"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

// maxFolds bounds the handoffs whose folded state a process keeps: the
// ones acted on lately, each a few KB plus its proofs.
const maxFolds = 1024

// folds keeps the newest folded state of the handoffs this process acted
// on, so that a command reads only the events after it rather than the
// whole stream: a callback on a ledger of 2,500 events took 24 ms
// reading and folding all of them again (docs/benchmarks.md). The events
// of a stream never change, so a state folded through revision n stays
// true and only events after n can be new, whoever wrote them. The kept
// states are never changed: a command works on a clone.
type folds struct {
	mu  sync.Mutex
	m   map[string]*list.Element
	lru list.List // of *fold, the most recently used first
}

type fold struct {
	id  string
	h   *domain.Handoff
	pos eventstore.Position // the feed position of h's last event
}

// get is id's kept state, not to be changed, and its last event's position.
func (f *folds) get(id string) (*domain.Handoff, eventstore.Position, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.m[id]
	if !ok {
		return nil, eventstore.Position{}, false
	}
	f.lru.MoveToFront(e)
	k := e.Value.(*fold)
	return k.h, k.pos, true
}

// put keeps h, which nobody changes from now on, as id's state unless a
// newer one is kept already (a timer and a command may load at once).
func (f *folds) put(id string, h *domain.Handoff, pos eventstore.Position) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]*list.Element{}
	}
	if e, ok := f.m[id]; ok {
		k := e.Value.(*fold)
		if k.h.Head.Seq <= h.Head.Seq {
			k.h, k.pos = h, pos
		}
		f.lru.MoveToFront(e)
		return
	}
	f.m[id] = f.lru.PushFront(&fold{id: id, h: h, pos: pos})
	if f.lru.Len() > maxFolds {
		last := f.lru.Back()
		f.lru.Remove(last)
		delete(f.m, last.Value.(*fold).id)
	}
}
