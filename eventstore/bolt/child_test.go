package bolt_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/storetest"
)

// The crash and resource tests re-run this test binary as a child process
// that does one job and reports on stdout. childEnv names the job.
const (
	childEnv    = "BATON_STORE_TEST_CHILD"
	childDirEnv = "BATON_STORE_TEST_DIR"
	childTagEnv = "BATON_STORE_TEST_TAG"
	childFSize  = "BATON_STORE_TEST_FSIZE"
	childSmall  = "BATON_STORE_TEST_SMALL_JOURNAL"
)

// runChild runs the child job named in the environment, if any, and reports
// whether it did.
func runChild() bool {
	job := os.Getenv(childEnv)
	if job == "" {
		return false
	}
	dir := os.Getenv(childDirEnv)
	if os.Getenv(childSmall) != "" {
		bolt.SmallJournal()
	}
	var err error
	switch job {
	case "writer":
		err = childWriter(dir, os.Getenv(childTagEnv))
	case "limited-writer":
		err = childLimitedWriter(dir)
	case "journal-writer":
		err = childJournalWriter(dir)
	case "open":
		var s *bolt.Store
		if s, err = bolt.Open(dir, bolt.Options{}); err == nil {
			s.Close()
			fmt.Println("opened")
		}
	default:
		err = fmt.Errorf("unknown child job %q", job)
	}
	if err != nil {
		fmt.Printf("error %v\n", err)
	}
	return true
}

// ack prints one acknowledged append as a whole line with one write, so that
// a kill leaves at worst a torn last line (which the parent ignores).
func ack(mu *sync.Mutex, stream string, rev uint64, ev eventstore.EventData) {
	line := fmt.Sprintf("ack %s %d %s\n", stream, rev, ev.ID)
	mu.Lock()
	os.Stdout.WriteString(line)
	mu.Unlock()
}

// childWriter appends from 8 goroutines as fast as it can until it is killed.
func childWriter(dir, tag string) error {
	s, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	errc := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			stream := fmt.Sprintf("crash-%s-%d", tag, g)
			exp := eventstore.NoStream()
			for i := 0; ; i++ {
				// Some appends carry several events: atomicity is checked too.
				evs := []eventstore.EventData{storetest.Event("Tick", map[string]any{"g": g, "i": i})}
				if i%5 == 0 {
					evs = append(evs, storetest.Event("Tock", map[string]any{"g": g, "i": i}))
				}
				res, err := s.Append(context.Background(), stream, exp, evs...)
				if err != nil {
					errc <- err
					return
				}
				first := res.NextRevision - uint64(len(evs)) + 1
				for j, ev := range evs {
					ack(&mu, stream, first+uint64(j), ev)
				}
				exp = eventstore.Revision(res.NextRevision)
			}
		}(g)
	}
	wg.Wait()
	return <-errc
}

// childLimitedWriter writes under a file-size limit (RLIMIT_FSIZE), the way a
// full disk refuses writes, and reports the error the store gives.
func childLimitedWriter(dir string) error {
	var limit uint64
	fmt.Sscan(os.Getenv(childFSize), &limit)
	if err := limitFileSize(limit); err != nil {
		return fmt.Errorf("setrlimit: %w", err)
	}
	s, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	var mu sync.Mutex
	big := make([]byte, 16<<10)
	for i := range big {
		big[i] = 'x'
	}
	exp := eventstore.NoStream()
	for i := 0; ; i++ {
		ev := storetest.Event("Fill", map[string]any{"i": i, "pad": string(big)})
		res, err := s.Append(context.Background(), "fill", exp, ev)
		if err != nil {
			fmt.Printf("full %v\n", err)
			// The store must now refuse writes rather than carry on.
			_, err2 := s.Append(context.Background(), "fill-after", eventstore.NoStream(), storetest.Event("After", nil))
			fmt.Printf("after %v\n", err2)
			return nil
		}
		ack(&mu, "fill", res.NextRevision, ev)
		exp = eventstore.Revision(res.NextRevision)
	}
}

// childJournalWriter appends with the indexer held back for an hour, so
// every acknowledged event is in the journal only, says "done" and waits to
// be killed.
func childJournalWriter(dir string) error {
	s, err := bolt.Open(dir, bolt.Options{IndexDelay: time.Hour})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	for i := 0; i < 200; i++ {
		stream := fmt.Sprintf("journal-%d", i%4)
		ev := storetest.Event("Tick", map[string]any{"i": i})
		exp := eventstore.NoStream()
		if i >= 4 {
			exp = eventstore.Revision(uint64(i/4 - 1))
		}
		res, err := s.Append(context.Background(), stream, exp, ev)
		if err != nil {
			return err
		}
		ack(&mu, stream, res.NextRevision, ev)
	}
	fmt.Println("done")
	select {} // until killed
}
