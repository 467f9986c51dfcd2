package main

import (
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// logWriter batches the server's log lines: under load every request's
// access-log line was a write system call of its own (about 3% of the
// server's CPU per model call, docs/benchmarks.md). A line after a quiet
// spell goes out at once; lines that follow it within the window gather
// and leave together when the window ends or the buffer fills. Warnings
// and errors go out at once, with what was gathered before them.
type logWriter struct {
	out    io.Writer
	window time.Duration

	mu    sync.Mutex
	buf   []byte
	last  time.Time // the last write to out
	timer *time.Timer
	armed bool
}

const (
	logBufferMax = 32 << 10
	// logWindow is how late a gathered line may leave: what a crash of
	// the process may lose (docs/operations.md).
	logWindow = 100 * time.Millisecond
)

func newLogWriter(out io.Writer, window time.Duration) *logWriter {
	w := &logWriter{out: out, window: window}
	w.timer = time.AfterFunc(time.Hour, w.Flush)
	w.timer.Stop()
	return w
}

func (w *logWriter) Write(p []byte) (int, error) {
	return w.WriteLevel(zerolog.InfoLevel, p)
}

// WriteLevel implements zerolog.LevelWriter.
func (w *logWriter) WriteLevel(l zerolog.Level, p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if len(w.buf) == 0 && !w.armed && now.Sub(w.last) >= w.window && l < zerolog.WarnLevel {
		w.last = now
		return w.out.Write(p)
	}
	w.buf = append(w.buf, p...)
	if l >= zerolog.WarnLevel || len(w.buf) >= logBufferMax {
		w.flushLocked(now)
		return len(p), nil
	}
	if !w.armed {
		w.armed = true
		w.timer.Reset(w.window)
	}
	return len(p), nil
}

// Flush writes what is gathered.
func (w *logWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked(time.Now())
}

func (w *logWriter) flushLocked(now time.Time) {
	if w.armed {
		w.timer.Stop()
		w.armed = false
	}
	if len(w.buf) == 0 {
		return
	}
	w.out.Write(w.buf) // a log line that cannot be written has nowhere to be told
	w.last = now
	if cap(w.buf) > 4*logBufferMax {
		w.buf = nil // a burst of long lines: do not hold its buffer for ever
	} else {
		w.buf = w.buf[:0]
	}
}
