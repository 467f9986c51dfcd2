package main

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// lockedBuffer counts the writes that reach the output.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.b.Write(p)
}

func (l *lockedBuffer) get() (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String(), l.writes
}

func TestLogWriterGathersABurst(t *testing.T) {
	out := &lockedBuffer{}
	w := newLogWriter(out, 50*time.Millisecond)
	log := zerolog.New(w)
	log.Info().Int("n", 0).Msg("first")
	if s, n := out.get(); n != 1 || !strings.Contains(s, `"first"`) {
		t.Fatalf("a line after a quiet spell must go out at once: %d writes, %q", n, s)
	}
	for i := 1; i <= 100; i++ {
		log.Info().Int("n", i).Msg("burst")
	}
	if _, n := out.get(); n != 1 {
		t.Fatalf("the burst must be gathered, got %d writes", n)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, n := out.get()
		if strings.Count(s, "\n") == 101 {
			if n != 2 {
				t.Fatalf("the burst left in %d writes, want one", n-1)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the burst never left: %d lines", strings.Count(s, "\n"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Order is kept.
	s, _ := out.get()
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		if !strings.Contains(l, `"n":`+strconv.Itoa(i)+`,`) {
			t.Fatalf("line %d out of order: %s", i, l)
		}
	}
}

func TestLogWriterErrorsLeaveAtOnce(t *testing.T) {
	out := &lockedBuffer{}
	w := newLogWriter(out, time.Hour)
	log := zerolog.New(w)
	log.Info().Msg("a")
	log.Info().Msg("b") // gathered: the window is an hour
	if s, _ := out.get(); strings.Contains(s, `"b"`) {
		t.Fatal("b should wait for the window")
	}
	log.Error().Msg("c")
	s, _ := out.get()
	if !strings.Contains(s, `"b"`) || !strings.Contains(s, `"c"`) || strings.Index(s, `"b"`) > strings.Index(s, `"c"`) {
		t.Fatalf("an error must go out at once, after what was gathered: %q", s)
	}
	log.Info().Msg("d")
	log.Info().Msg("e")
	w.Flush()
	if s, _ := out.get(); !strings.HasSuffix(s, "\"message\":\"e\"}\n") {
		t.Fatalf("Flush must write what is gathered: %q", s)
	}
}

func TestLogWriterFullBufferLeaves(t *testing.T) {
	out := &lockedBuffer{}
	w := newLogWriter(out, time.Hour)
	w.Write([]byte("x\n"))
	line := []byte(strings.Repeat("y", 1023) + "\n")
	for range logBufferMax / len(line) {
		w.Write(line)
	}
	if s, n := out.get(); n != 2 || len(s) != 2+logBufferMax {
		t.Fatalf("a full buffer must leave: %d writes, %d bytes", n, len(s))
	}
}
