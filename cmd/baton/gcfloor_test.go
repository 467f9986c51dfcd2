package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestHeapFloorPercent(t *testing.T) {
	const mb = 1 << 20
	h := &heapFloor{floor: 64 * mb, base: 200}
	for _, c := range []struct {
		in   goalInputs
		want int
	}{
		{goalInputs{live: 4 * mb}, 1500},                                 // 4 + 4*15 = 64
		{goalInputs{live: 4 * mb, stacks: 1 * mb, globals: 3 * mb}, 750}, // 4 + 8*7.5 = 64
		{goalInputs{live: 30 * mb}, 200},                                 // 113% would do: the base is more
		{goalInputs{live: 64 * mb}, 200},
		{goalInputs{live: 500 * mb}, 200},
		{goalInputs{}, 1600},
	} {
		if got := h.percent(c.in); got != c.want {
			t.Errorf("percent(%+v) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestHeapFloorSpacesCollections allocates 256 MiB of garbage over a small
// live heap: at GOGC=100 that is dozens of collections, with a 64 MiB floor
// a handful, and the heap goal after one is near the floor.
func TestHeapFloorSpacesCollections(t *testing.T) {
	if debug.SetGCPercent(100) < 0 {
		debug.SetGCPercent(-1)
		t.Skip("GOGC=off")
	}
	defer debug.SetGCPercent(100)
	churn := func() uint32 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var keep []byte
		for range 256 << 10 {
			keep = make([]byte, 1<<10)
		}
		_ = keep
		runtime.ReadMemStats(&after)
		return after.NumGC - before.NumGC
	}
	runtime.GC()
	without := churn()

	stop := startHeapFloor(64<<20, 100)
	runtime.GC()
	with := churn()
	runtime.GC()
	// The floor is set again by a finalizer the collection queues, which
	// runs a moment after runtime.GC returns: read the goal once it has.
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	var goal uint64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		metrics.Read(s)
		if goal = s[0].Value.Uint64(); goal >= 56<<20 || time.Now().After(deadline) {
			break
		}
	}
	stop()
	t.Logf("256 MiB of garbage: %d collections at GOGC=100, %d with a 64 MiB floor; heap goal %d MiB", without, with, goal>>20)
	// 256 MiB over a goal of at least 56 MiB is at most 5 collections, and
	// a few the runtime starts on its own. How many there are without the
	// floor depends on the live heap the package's other tests left, so
	// it is compared with, not divided.
	if with > 8 || with >= without {
		t.Errorf("with the floor %d collections (at GOGC=100: %d); want at most 8, and fewer", with, without)
	}
	if goal < 56<<20 || goal > 72<<20 {
		t.Errorf("heap goal with a 64 MiB floor is %d MiB", goal>>20)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("after stop the GC percent is %d, want the base 100 back", p)
	}
}

// TestHeapFloorFollowsTheLiveHeap checks that the percent is set again
// after each collection: with 48 MiB live the floor's 64 MiB is less than
// the base percent gives, and the base comes back.
func TestHeapFloorFollowsTheLiveHeap(t *testing.T) {
	if debug.SetGCPercent(100) < 0 {
		debug.SetGCPercent(-1)
		t.Skip("GOGC=off")
	}
	defer debug.SetGCPercent(100)
	stop := startHeapFloor(64<<20, 100)
	defer stop()
	runtime.GC()
	// The finalizer runs on its own goroutine after the collection. The
	// percent is read from runtime/metrics: reading it by setting it
	// (currentGCPercent) could undo the finalizer's setting in between.
	gogc := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	waitPercent := func(want int) {
		t.Helper()
		var got int
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			metrics.Read(gogc)
			if got = int(gogc[0].Value.Uint64()); got == want {
				return
			}
			runtime.Gosched()
			time.Sleep(2 * time.Millisecond)
		}
		t.Fatalf("GC percent %d after 10 s, want %d", got, want)
	}
	in := readGoalInputs()
	waitPercent((&heapFloor{floor: 64 << 20, base: 100}).percent(in))
	live := make([]byte, 48<<20)
	for i := range live {
		live[i] = byte(i)
	}
	runtime.GC()
	runtime.GC() // the finalizer of the first may have run before the second's mark
	waitPercent(100)
	runtime.KeepAlive(live)
}
