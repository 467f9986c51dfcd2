package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultHeapFloorMB is the smallest heap goal, in MiB, `baton serve` lets
// the collector aim at (--gc-heap-floor-mb): with its few MB live, Baton
// otherwise collected several times a second under load, and those stops
// were most of its p99 (docs/operations.md, Memory).
const DefaultHeapFloorMB = 64

// MaxHeapFloorMB bounds --gc-heap-floor-mb (1 TiB), far above any heap
// Baton needs and far below where the MiB would overflow in bytes.
const MaxHeapFloorMB = 1 << 20

// maxFloorPercent bounds the percent the floor sets. The runtime's minimum
// goal already bounds it at floor*100/4 MiB, so this bites only for floors
// over about 3.9 GiB.
const maxFloorPercent = 100_000

// heapFloor keeps the collector from running while the heap is small: after
// each collection it sets the GC percent for a heap goal of floor bytes, or
// base percent over what is live if that is more. Go has no such setting.
type heapFloor struct {
	floor uint64 // bytes
	base  int    // the GC percent when the live heap is large

	mu      sync.Mutex
	stopped bool
	set     int // the percent last set
}

// goalInputs are what the runtime's heap goal is made of (Go 1.21 and
// later): goal = live + (live + stacks + globals) * percent / 100, and
// never under runtimeHeapMinimum * percent / 100.
type goalInputs struct{ live, stacks, globals uint64 }

var goalMetrics = []string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"}

func readGoalInputs() goalInputs {
	s := make([]metrics.Sample, len(goalMetrics))
	for i, name := range goalMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	return goalInputs{v(0), v(1), v(2)}
}

// runtimeHeapMinimum is the runtime's smallest heap goal at GOGC=100
// (defaultHeapMinimum in runtime/mgcpacer.go); it scales with the percent.
const runtimeHeapMinimum = 4 << 20

// percent is the GC percent whose heap goal is the floor, or the base
// percent when that is more. The goal grows with the percent through
// both of its terms, so the percent that brings the first one to the
// floor and the one that brings the second are both enough: the smaller.
func (h *heapFloor) percent(in goalInputs) int {
	if in.live >= h.floor {
		return h.base
	}
	scan := max(in.live+in.stacks+in.globals, 1)
	p := min((h.floor-in.live)*100/scan, h.floor*100/runtimeHeapMinimum, maxFloorPercent)
	return max(h.base, int(p))
}

// startHeapFloor sets the GC percent for a heap goal of floor bytes now
// and after every collection, until stop; stop gives the base percent
// back. With floor 0 or the collector off (base < 0) it does nothing.
func startHeapFloor(floor uint64, base int) (stop func()) {
	if floor == 0 || base < 0 {
		return func() {}
	}
	h := &heapFloor{floor: floor, base: base, set: base}
	h.adjust()
	// A finalizer runs once per collection that finds its object
	// unreachable; setting it again from inside re-arms it for the next.
	type sentinel struct{ _ [16]byte } // big enough not to share a tiny-alloc block
	var rearm func(*sentinel)
	rearm = func(s *sentinel) {
		if h.adjust() {
			runtime.SetFinalizer(s, rearm)
		}
	}
	runtime.SetFinalizer(&sentinel{}, rearm)
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.stopped = true
		debug.SetGCPercent(h.base)
	}
}

// adjust sets the percent for what the last collection found live; false
// once stopped.
func (h *heapFloor) adjust() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return false
	}
	if p := h.percent(readGoalInputs()); p != h.set {
		debug.SetGCPercent(p)
		h.set = p
	}
	return true
}
