package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestSSEReader(t *testing.T) {
	in := ": comment\nevent: a\ndata: 1\ndata: 2\n\n\n\ndata: [DONE]\n\nevent: tail\ndata: x"
	r := NewReader(strings.NewReader(in))
	want := []Event{{"a", []byte("1\n2")}, {"", []byte("[DONE]")}, {"tail", []byte("x")}}
	for i, w := range want {
		got, err := r.Next()
		if err != nil || got.Event != w.Event || string(got.Data) != string(w.Data) {
			t.Fatalf("event %d = %q %q, %v; want %q %q", i, got.Event, got.Data, err, w.Event, w.Data)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last event: %v", err)
	}
}

// Lines may end with CRLF, LF or CR alone; an event with no data is not
// delivered (the HTML standard's rule).
func TestSSEReaderLineEndsAndEmptyEvents(t *testing.T) {
	for name, in := range map[string]string{
		"CRLF": "event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n",
		"CR":   "event: a\rdata: 1\r\rdata: 2\r\r",
		"mixed and empty events": "event: a\ndata: 1\r\n\r" +
			"event: nothing\n\n" + // an event with no data
			"data:\n\n" + // an empty data line
			"data: 2\n\n",
	} {
		r := NewReader(strings.NewReader(in))
		for i, w := range []Event{{"a", []byte("1")}, {"", []byte("2")}} {
			got, err := r.Next()
			if err != nil || got.Event != w.Event || string(got.Data) != string(w.Data) {
				t.Fatalf("%s: event %d = %q %q, %v; want %q %q", name, i, got.Event, got.Data, err, w.Event, w.Data)
			}
		}
		if _, err := r.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("%s: after the last event: %v", name, err)
		}
	}
}

// An event ended by CR is delivered at once, not when the next byte
// arrives (a stream may pause there for as long as the model thinks).
func TestSSEReaderCRDoesNotWait(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte("data: now\r\r"))
	r := NewReader(pr)
	got := make(chan Event, 1)
	go func() {
		ev, _ := r.Next()
		got <- ev
	}()
	select {
	case ev := <-got:
		if string(ev.Data) != "now" {
			t.Fatalf("data %q", ev.Data)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the event was held back waiting for the byte after its CR")
	}
	pw.Close()
}

// stopReader gives its bytes, then errStop: a read past what was there.
type stopReader struct{ b []byte }

var errStop = errors.New("read past what was there")

func (s *stopReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, errStop
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// FuzzBuffered holds Buffered to its promise: when it says the next event
// is there, Next gives it without reading further.
func FuzzBuffered(f *testing.F) {
	f.Add([]byte("data: a\n\ndata: b\n\ndata: c"))
	f.Add([]byte("data: a\r\n\r\n: keep-alive\r\n\r\ndata:\n\ndata: b\r\rdata"))
	f.Add([]byte("event: x\ndata: a\ndata:\n\nevent: y\n\ndata: \n\n"))
	f.Add([]byte("data: a\r"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Half reads: the scanner's buffer holds some of what is there.
		r := NewReader(iotest.HalfReader(&stopReader{b: b}))
		for range 1000 {
			if _, err := r.Next(); err != nil {
				return
			}
			if r.Buffered() {
				if _, err := r.Next(); err != nil {
					t.Fatalf("%q: Buffered said the next event was there; Next: %v", b, err)
				}
			}
		}
	})
}

func TestBufferedSeesTheNextEvent(t *testing.T) {
	r := NewReader(strings.NewReader("data: a\n\n: keep-alive\n\ndata:\n\ndata: b\r\n\r\ndata: c"))
	for i, want := range []bool{true, false} {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		if got := r.Buffered(); got != want {
			t.Fatalf("after event %d: Buffered = %v", i, got)
		}
	}
}

// One byte order mark before the stream is skipped, as the standard says
// (the first field read as unknown and the first event was lost); one
// later is part of a field.
func TestSSEReaderSkipsALeadingBOM(t *testing.T) {
	r := NewReader(strings.NewReader("\xEF\xBB\xBFdata: 1\n\n\xEF\xBB\xBFdata: 2\n\ndata: 3\n\n"))
	got, err := r.Next()
	if err != nil || string(got.Data) != "1" {
		t.Fatalf("first event %q, %v", got.Data, err)
	}
	if got, err = r.Next(); err != nil || string(got.Data) != "3" {
		t.Fatalf("after a BOM mid-stream: %q, %v", got.Data, err)
	}
}

// FuzzLineEnd holds lineEnd to bytes.IndexAny(b, "\r\n").
func FuzzLineEnd(f *testing.F) {
	for _, s := range []string{"", "a", "\r", "\n", "ab\r\ncd", "ab\ncd\r", "\n\r", "data: x\r"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := lineEnd(b), bytes.IndexAny(b, "\r\n"); got != want {
			t.Fatalf("lineEnd(%q) = %d, want %d", b, got, want)
		}
	})
}

// Lines ending in CR alone, behind a long first line that grew the
// reader's buffer to megabytes, are read in time linear in the stream:
// finding each line's end scanned the whole buffer for a LF first (about
// two minutes for this stream; under a second before that change, and
// after its fix).
func TestCROnlyLinesAfterALongLineAreLinear(t *testing.T) {
	const events = 1 << 21
	body := ":" + strings.Repeat("c", maxLine-64) + "\r" + strings.Repeat("data: x\r\r", events)
	done := make(chan int, 1)
	go func() {
		r, n := NewReader(strings.NewReader(body)), 0
		for {
			if _, err := r.Next(); err != nil {
				break
			}
			n++
		}
		done <- n
	}()
	select {
	case n := <-done:
		if n != events {
			t.Fatalf("%d events, want %d", n, events)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("not read within 30 s: each line scans the whole buffer")
	}
}

// An event's data lines are bounded together, not only each line: an
// upstream that never ends its event is refused, not held in memory.
func TestSSEReaderBoundsAnEvent(t *testing.T) {
	line := "data: " + strings.Repeat("x", 1<<20) + "\n"
	endless := strings.Repeat(line, MaxEvent>>20+1)
	if _, err := NewReader(strings.NewReader(endless)).Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("an event of %d data lines of 1 MiB: %v, want ErrEventTooLarge", MaxEvent>>20+1, err)
	}
	r := NewReader(strings.NewReader(strings.Repeat(line, 4) + "\n" + strings.Repeat(line, 4) + "\n"))
	for i := range 2 {
		if ev, err := r.Next(); err != nil || len(ev.Data) != 4<<20+3 {
			t.Fatalf("event %d of 4 MiB: %d bytes, %v", i, len(ev.Data), err)
		}
	}
}
