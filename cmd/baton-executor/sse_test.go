package main

import (
	"strings"
	"testing"
)

func TestSSEReader(t *testing.T) {
	in := ": ping\n\nid: 1/1\nevent: ApprovalDecided\ndata: {\"a\":1}\n\n" +
		"data: line one\r\ndata: line two\r\n\r\n" +
		"id: 2/2\nevent: x\n\n" + // no data: no event, but the id stays
		"data: tail\n\n" +
		"data: cut mid-event"
	r := newSSEReader(strings.NewReader(in))
	want := []sseEvent{
		{ID: "1/1", Type: "ApprovalDecided", Data: `{"a":1}`},
		{ID: "1/1", Data: "line one\nline two"},
		{ID: "2/2", Data: "tail"},
	}
	for i, w := range want {
		got, err := r.Next()
		if err != nil || got != w {
			t.Fatalf("event %d: %+v %v, want %+v", i, got, err, w)
		}
	}
	if _, err := r.Next(); err != errStreamEnded {
		t.Fatalf("after the last event: %v", err)
	}
}

// FuzzSSEReader feeds the executor's stream reader arbitrary bodies: it
// never panics, ends, and yields only events with the data lines given.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{"id: 1/1\nevent: A\ndata: {}\n\n", ": ping\n\n", "data:x\r\n\r\n", "id: a\x00b\ndata: y\n\n", strings.Repeat("data: z\n", 100) + "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := newSSEReader(strings.NewReader(body))
		for i := 0; ; i++ {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if strings.ContainsRune(ev.ID, 0) {
				t.Fatalf("an id with a NUL: %q", ev.ID)
			}
			if i > len(body) {
				t.Fatal("more events than bytes")
			}
		}
	})
}
