package gateway

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestSSEReader(t *testing.T) {
	in := ": comment\nevent: a\ndata: 1\ndata: 2\n\n\n\ndata: [DONE]\n\nevent: tail\ndata: x"
	r := newSSEReader(strings.NewReader(in))
	want := []sseEvent{{"a", []byte("1\n2")}, {"", []byte("[DONE]")}, {"tail", []byte("x")}}
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

// FuzzSSEStreams feeds arbitrary upstream bytes to both stream parsers: they
// must end (EOF or an error) without panicking.
func FuzzSSEStreams(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"x\"}}\n\n"))
	f.Add([]byte("data: not json\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, st := range []Stream{
			&oaStream{name: "f", body: io.NopCloser(nil), sse: newSSEReader(strings.NewReader(string(b)))},
			&anStream{name: "f", body: io.NopCloser(nil), sse: newSSEReader(strings.NewReader(string(b)))},
		} {
			for i := 0; ; i++ {
				if i > len(b)+2 {
					t.Fatal("the parser did not end")
				}
				if _, err := st.Next(); err != nil {
					break
				}
			}
		}
	})
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
		r := newSSEReader(strings.NewReader(in))
		for i, w := range []sseEvent{{"a", []byte("1")}, {"", []byte("2")}} {
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
	r := newSSEReader(pr)
	got := make(chan sseEvent, 1)
	go func() {
		ev, _ := r.Next()
		got <- ev
	}()
	select {
	case ev := <-got:
		if string(ev.Data) != "now" {
			t.Fatalf("data %q", ev.Data)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the event was held back waiting for the byte after its CR")
	}
	pw.Close()
}
