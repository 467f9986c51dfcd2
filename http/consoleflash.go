package http

import (
	"sync"
	"time"

	"github.com/batonhq/baton/domain"
)

// A refused console form is answered with 303 to the handoff's page, its
// refusal and the person's words held here under an unguessable id that
// the address carries (Post/Redirect/Get): a reload shows the refusal
// again instead of posting the form again. Held in this replica's memory,
// not the store, whose events are kept for good; docs/console.md says why.

const (
	flashTTL      = 10 * time.Minute
	flashMaxBytes = 16 << 20 // past it, the oldest go first
)

type consoleFlash struct {
	id, session, handoff string
	problem              Problem
	form                 map[string]string
	at                   time.Time
	size                 int
	head                 uint64 // the handoff's head when the refusal was first shown
}

type consoleFlashes struct {
	mu    sync.Mutex
	byID  map[string]*consoleFlash
	order []*consoleFlash // oldest first
	bytes int
}

// put holds a refusal for the session's next look at the handoff and
// answers its id.
func (f *consoleFlashes) put(now time.Time, session, handoff string, p Problem, form map[string]string) string {
	_, id, _ := domain.NewConsoleToken() // 256 random bits, base64url
	fl := &consoleFlash{id: id, session: session, handoff: handoff, problem: p, form: form, at: now,
		size: len(p.Detail) + len(p.Title) + 256}
	for k, v := range form {
		fl.size += len(k) + len(v)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byID == nil {
		f.byID = map[string]*consoleFlash{}
	}
	f.byID[id] = fl
	f.order = append(f.order, fl)
	f.bytes += fl.size
	for len(f.order) > 0 && (f.bytes > flashMaxBytes || now.Sub(f.order[0].at) > flashTTL) {
		old := f.order[0]
		f.order[0] = nil
		f.order = f.order[1:]
		f.bytes -= old.size
		delete(f.byID, old.id)
	}
	return id
}

// get is the refusal id holds for this session's page of this handoff;
// another session, another handoff or an old id finds nothing.
func (f *consoleFlashes) get(now time.Time, id, session, handoff string) (Problem, map[string]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl, ok := f.byID[id]
	if !ok || fl.session != session || fl.handoff != handoff || now.Sub(fl.at) > flashTTL {
		return Problem{}, nil, false
	}
	return fl.problem, fl.form, true
}

// shownAt is the handoff's head when the refusal id holds was first shown,
// head if this is that first time; ok is false when id holds none.
func (f *consoleFlashes) shownAt(id string, head uint64) (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl, ok := f.byID[id]
	if !ok {
		return 0, false
	}
	if fl.head == 0 {
		fl.head = head
	}
	return fl.head, true
}
