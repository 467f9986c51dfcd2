package webhook

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The heap a wake takes attempts from holds each endpoint's earliest due
// deliveries, only as many as may start: a backlog of thousands for one
// endpoint was put in it whole and popped whole at every wake, to start
// one or two, and its attempts came ever slower.
func TestReadyHoldsOnlyWhatMayStart(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	d := &Dispatcher{cfg: Config{PerEndpoint: 2}, pending: map[string]*due{}, inflight: map[string]*due{}, failing: map[string]bool{}}
	add := func(id, webhook string, at time.Time, order uint64) *due {
		p := &due{at: at, webhook: webhook, tenant: "t", order: order}
		d.pending[id] = p
		return p
	}
	for i := range 1000 {
		add(fmt.Sprint("a", i), "a", now.Add(-time.Duration(1000-i)*time.Millisecond), uint64(i))
	}
	d.inflight["a0"] = d.pending["a0"] // the longest due is being attempted
	add("b-late", "b", now.Add(time.Minute), 1)
	add("b1", "b", now.Add(-time.Second), 3)
	add("b0", "b", now.Add(-time.Second), 2)
	add("b2", "b", now, 4)
	for i := range 5 {
		add(fmt.Sprint("c", i), "c", now.Add(-time.Hour), uint64(i))
	}
	d.failing["c"] = true // one attempt at a time
	for i := range 2 {
		d.inflight[fmt.Sprint("d", i)] = add(fmt.Sprint("d", i), "d", now.Add(-time.Hour), uint64(i))
	}
	add("d2", "d", now.Add(-time.Hour), 2)

	h := d.ready(now, map[string]int{"a": 1, "d": 2})
	var got []string
	for _, c := range h.c {
		got = append(got, c.id)
	}
	slices.Sort(got)
	if want := []string{"a1", "b0", "b1", "c0"}; !slices.Equal(got, want) {
		t.Fatalf("ready %v, want %v", got, want)
	}
}

// ready starts, endpoint by endpoint, the same deliveries as taking every
// due one in order and skipping an endpoint's past its share.
func TestReadyStartsWhatTheWholeOrderWould(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		d := &Dispatcher{cfg: Config{PerEndpoint: 1 + r.IntN(3)}, pending: map[string]*due{}, inflight: map[string]*due{}, failing: map[string]bool{}}
		endpoints := map[string]int{}
		for i := range r.IntN(60) {
			hook := fmt.Sprint("w", r.IntN(5))
			p := &due{at: now.Add(time.Duration(r.IntN(7)-4) * time.Second), webhook: hook, order: uint64(i)} // the feed numbers them, one by one
			id := fmt.Sprint("x", i)
			d.pending[id] = p
			if r.IntN(6) == 0 {
				d.inflight[id] = p
				endpoints[hook]++
			}
			if r.IntN(8) == 0 {
				d.failing[hook] = true
			}
		}
		// The whole order, as a wake took it before.
		var all []dueCand
		for id, p := range d.pending {
			if _, ok := d.inflight[id]; !ok && !p.at.After(now) {
				all = append(all, dueCand{id, p})
			}
		}
		slices.SortFunc(all, func(a, b dueCand) int {
			if a.before(b) {
				return -1
			}
			if b.before(a) {
				return 1
			}
			return 0
		})
		taken := map[string]int{}
		for k, v := range endpoints {
			taken[k] = v
		}
		var want []string
		for _, c := range all {
			limit := d.cfg.PerEndpoint
			if d.failing[c.p.webhook] {
				limit = 1
			}
			if taken[c.p.webhook] >= limit {
				continue
			}
			taken[c.p.webhook]++
			want = append(want, c.id)
		}
		var got []string
		for h := d.ready(now, endpoints); h.Len() > 0; {
			got = append(got, popCand(h).id)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: ready %v, the whole order %v", round, got, want)
		}
	}
}

func popCand(h *dueHeap) dueCand {
	// The heap's least, as heap.Pop gives it.
	best := 0
	for i := range h.c {
		if h.c[i].before(h.c[best]) {
			best = i
		}
	}
	c := h.c[best]
	h.c = slices.Delete(h.c, best, best+1)
	return c
}
