package bolt_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
)

type ackLine struct {
	stream string
	rev    uint64
	id     string
}

// startChild runs this test binary as a child doing job, and returns the
// command and its stdout.
func startChild(t *testing.T, job, dir string, env ...string) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+job, childDirEnv+"="+dir)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

// readAcks collects whole "ack" lines; other whole lines go to rest. A torn
// last line (the kill landed mid-write) is dropped: it was never reported.
func readAcks(r io.Reader) (acks []ackLine, rest []string) { return readAcksUntil(r, "") }

// firstAck is a writer that says on c, once, when an acknowledgement
// line has passed through it.
type firstAck chan bool

func (f firstAck) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("ack ")) {
		select {
		case f <- true:
		default:
		}
	}
	return len(p), nil
}

// TestCrashKeepsAcknowledgedAppends kills a writer with SIGKILL at a random
// moment, again and again on the same data directory, and checks after each
// kill that every acknowledged event survived and the file is consistent.
func TestCrashKeepsAcknowledgedAppends(t *testing.T) {
	crashRounds(t, 12)
}

// TestCrashWithASmallJournal is the same with a journal that starts over
// every 256 KiB, so the kills land while it starts over with groups in
// flight and the indexer behind.
func TestCrashWithASmallJournal(t *testing.T) {
	defer bolt.SmallJournal()()
	crashRounds(t, 8, childSmall+"=1")
}

func crashRounds(t *testing.T, rounds int, env ...string) {
	dir := t.TempDir()
	// The kill moments come from seed; CRASH_SEED=n gives a failed run's
	// moments again (the child's progress at each moment still varies).
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CRASH_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("CRASH_SEED=%q: %v", v, err)
		}
		seed = n
	}
	t.Logf("kill moments from seed %d (CRASH_SEED=%d replays them)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	var total int
	for round := 0; round < rounds; round++ {
		cmd, out := startChild(t, "writer", dir, append(env, fmt.Sprintf("%s=r%d", childTagEnv, round))...)
		br := bufio.NewReader(out)
		if line, err := br.ReadString('\n'); err != nil || line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: child said %q, %v", round, line, err)
		}
		delay := time.Duration(20+rng.IntN(300)) * time.Millisecond
		// The moment is counted from the first acknowledged append, not
		// from start: on a slow disk under load the first fsync alone
		// can take longer than the shortest delay.
		first := make(chan bool, 1)
		ackc := make(chan []ackLine, 1)
		go func() {
			acks, _ := readAcksUntil(io.TeeReader(br, firstAck(first)), "")
			ackc <- acks
		}()
		select {
		case <-first:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: the child acknowledged no append in a minute", round)
		}
		time.Sleep(delay) // the random moment of the crash, not a wait for an outcome
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("round %d: kill: %v", round, err)
		}
		cmd.Wait()
		acks := <-ackc
		if len(acks) == 0 {
			t.Fatalf("round %d: child acknowledged nothing in %v", round, delay)
		}
		total += len(acks)
		verifyAfterCrash(t, dir, acks)
		t.Logf("round %d: killed after %v, %d acknowledged events all present", round, delay, len(acks))
	}
	t.Logf("summary: crash test: %d SIGKILL rounds, %d acknowledged events all present after reopen", rounds, total)
}

// TestCrashWithEventsOnlyInTheJournal kills a writer whose indexer has not
// moved anything into the bbolt file: every acknowledged event is in the
// journal alone, and the reopen moves them all over.
func TestCrashWithEventsOnlyInTheJournal(t *testing.T) {
	dir := t.TempDir()
	cmd, out := startChild(t, "journal-writer", dir)
	acks, rest := readAcksUntil(out, "done")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if len(acks) != 200 {
		t.Fatalf("child acknowledged %d events, said %q", len(acks), rest)
	}
	db, err := bbolt.Open(filepath.Join(dir, bolt.FileName), 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var inFile int
	db.View(func(tx *bbolt.Tx) error {
		inFile = tx.Bucket([]byte("events")).Stats().KeyN
		return nil
	})
	db.Close()
	if inFile != 0 {
		t.Fatalf("the bbolt file holds %d events before the reopen; the test needs them in the journal only", inFile)
	}
	verifyAfterCrash(t, dir, acks)
	t.Logf("summary: %d acknowledged events, none in the bbolt file at the kill, all present after reopen", len(acks))
}

// readAcksUntil is readAcks up to the line stop ("": to the end).
func readAcksUntil(r io.Reader, stop string) (acks []ackLine, rest []string) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return acks, rest
		}
		line = strings.TrimSuffix(line, "\n")
		if stop != "" && line == stop {
			return acks, rest
		}
		var a ackLine
		if n, _ := fmt.Sscanf(line, "ack %s %d %s", &a.stream, &a.rev, &a.id); n == 3 {
			acks = append(acks, a)
			continue
		}
		rest = append(rest, line)
	}
}

func verifyAfterCrash(t *testing.T, dir string, acks []ackLine) {
	t.Helper()
	s, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	rep, err := s.Check(ctx)
	if err != nil {
		t.Fatalf("check after kill: %v", err)
	}
	// Every acknowledged event is where the child was told it is.
	byStream := map[string]map[uint64]string{}
	for _, a := range acks {
		if byStream[a.stream] == nil {
			byStream[a.stream] = map[uint64]string{}
		}
		byStream[a.stream][a.rev] = a.id
	}
	for stream, revs := range byStream {
		var evs []eventstore.RecordedEvent
		for from := uint64(0); ; {
			page, err := s.ReadStream(ctx, stream, from, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			evs = append(evs, page...)
			from = page[len(page)-1].Revision + 1
		}
		for i, ev := range evs {
			if ev.Revision != uint64(i) {
				t.Fatalf("%s: revision gap at %d", stream, i)
			}
		}
		for rev, id := range revs {
			if rev >= uint64(len(evs)) {
				t.Fatalf("%s: acknowledged revision %d lost (stream has %d events)", stream, rev, len(evs))
			}
			if evs[rev].ID.String() != id {
				t.Fatalf("%s revision %d: id %s, acknowledged %s", stream, rev, evs[rev].ID, id)
			}
		}
	}
	// The global feed is gapless from 1 to the head.
	var n uint64
	for after := eventstore.Start; ; {
		page, err := s.ReadAll(ctx, after, 5000)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, ev := range page {
			n++
			if ev.Position.Commit != n {
				t.Fatalf("global feed gap: event %d has position %d", n, ev.Position.Commit)
			}
		}
		after = page[len(page)-1].Position
	}
	if n != rep.Events {
		t.Fatalf("feed has %d events, check counted %d", n, rep.Events)
	}
}
