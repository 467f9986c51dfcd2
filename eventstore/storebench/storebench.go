// Package storebench measures an eventstore backend: durable appends at
// several concurrency levels and global-feed read throughput. `baton-bench`
// runs it and writes docs/benchmarks.md; timings are reported, never
// asserted, and compared as ratios within one run.
package storebench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
)

// Open opens a fresh store in dir.
type Open func(dir string) (eventstore.Store, error)

// AppendResult is one concurrency level of the append benchmark.
type AppendResult struct {
	Writers  int
	Appends  int
	Elapsed  time.Duration
	PerSec   float64
	P50, P99 time.Duration
}

// ReadResult is the global-feed read benchmark.
type ReadResult struct {
	Events  int
	Elapsed time.Duration
	PerSec  float64
}

// payload is a typical small ledger event body.
var payload = json.RawMessage(`{"handoffId":"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","executorRunId":"run-42","status":"RUNNING","proof":{"summary":"deployed build 1284 to staging","artifacts":[{"type":"url","text":"https://ci.example/run/1284"}]}}`)

func event(i int) eventstore.EventData {
	return eventstore.EventData{
		ID:   uuid.Must(uuid.NewV7()),
		Type: "ProofReceived",
		Data: payload,
		Metadata: eventstore.Metadata{
			Tenant: "bench", Actor: "key:bench", RequestID: fmt.Sprintf("req-%d", i), SchemaVersion: eventstore.SchemaVersion,
		},
	}
}

// Appends runs writers goroutines, each appending one event per call to its
// own stream with the right expected revision, for about d.
func Appends(ctx context.Context, open Open, dir string, writers int, d time.Duration) (AppendResult, error) {
	s, err := open(dir)
	if err != nil {
		return AppendResult{}, err
	}
	defer s.Close()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		lats []time.Duration
		ferr error
	)
	deadline := time.Now().Add(d)
	start := time.Now()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			stream := fmt.Sprintf("bench-%d", w)
			exp := eventstore.NoStream()
			local := make([]time.Duration, 0, 4096)
			for i := 0; time.Now().Before(deadline); i++ {
				t0 := time.Now()
				res, err := s.Append(ctx, stream, exp, event(i))
				if err != nil {
					mu.Lock()
					ferr = err
					mu.Unlock()
					return
				}
				local = append(local, time.Since(t0))
				exp = eventstore.Revision(res.NextRevision)
			}
			mu.Lock()
			lats = append(lats, local...)
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	if ferr != nil {
		return AppendResult{}, ferr
	}
	slices.Sort(lats)
	return AppendResult{
		Writers: writers,
		Appends: len(lats),
		Elapsed: elapsed,
		PerSec:  float64(len(lats)) / elapsed.Seconds(),
		P50:     percentile(lats, 0.50),
		P99:     percentile(lats, 0.99),
	}, nil
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

// Fill writes n events in appends of 1,000 over 1,000 streams.
func Fill(ctx context.Context, s eventstore.Store, n int) error {
	const batch = 1000
	revs := map[string]uint64{}
	for i := 0; i < n; i += batch {
		stream := fmt.Sprintf("fill-%d", (i/batch)%1000)
		exp := eventstore.NoStream()
		if r, ok := revs[stream]; ok {
			exp = eventstore.Revision(r)
		}
		evs := make([]eventstore.EventData, min(batch, n-i))
		for j := range evs {
			evs[j] = event(i + j)
		}
		res, err := s.Append(ctx, stream, exp, evs...)
		if err != nil {
			return err
		}
		revs[stream] = res.NextRevision
	}
	return nil
}

// ReadAll reads the whole global feed in pages of page events.
func ReadAll(ctx context.Context, s eventstore.Store, page int) (ReadResult, error) {
	start := time.Now()
	n := 0
	for after := eventstore.Start; ; {
		evs, err := s.ReadAll(ctx, after, page)
		if err != nil {
			return ReadResult{}, err
		}
		if len(evs) == 0 {
			break
		}
		n += len(evs)
		after = evs[len(evs)-1].Position
	}
	el := time.Since(start)
	return ReadResult{Events: n, Elapsed: el, PerSec: float64(n) / el.Seconds()}, nil
}

// FsyncRate measures how many 4 KiB write+fsync pairs the disk under dir
// completes per second: the ceiling of one durable commit after another.
func FsyncRate(dir string, d time.Duration) (float64, error) {
	f, err := os.CreateTemp(dir, "fsync-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		if _, err := f.WriteAt(buf, int64(n%16)*4096); err != nil {
			return 0, err
		}
		if err := f.Sync(); err != nil {
			return 0, err
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// Machine describes where the figures were taken.
func Machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if _, v, ok := strings.Cut(l, ":"); ok {
					cpu = strings.TrimSpace(v)
				}
				break
			}
		}
	}
	return cpu
}

// TempDir makes a directory for one benchmark under base.
func TempDir(base, name string) (string, error) {
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(base, filepath.Base(name)+"-")
}
