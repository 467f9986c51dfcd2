package gateway

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// ReadAll must read what io.ReadAll reads whatever the declared length
// says, in reads of any size.
func TestReadAllAsDeclaredOrNot(t *testing.T) {
	body := strings.Repeat("0123456789", 100)
	for _, declared := range []int64{-1, 0, 1, 999, 1000, 1001, 5000} {
		for _, half := range []bool{false, true} {
			var r io.Reader = strings.NewReader(body)
			if half {
				r = iotest.HalfReader(r)
			}
			got, err := ReadAll(r, declared)
			if err != nil || !bytes.Equal(got, []byte(body)) {
				t.Fatalf("declared %d, half reads %v: %d bytes, %v", declared, half, len(got), err)
			}
		}
	}
	if _, err := ReadAll(iotest.ErrReader(io.ErrUnexpectedEOF), 10); err != io.ErrUnexpectedEOF {
		t.Fatalf("a failed read: %v", err)
	}
}

// A declared length is not believed past MaxPrealloc: a peer that declares
// far more than it sends gets no buffer of that size, and a body longer
// than MaxPrealloc still reads whole.
func TestReadAllPreallocatesAtMostMaxPrealloc(t *testing.T) {
	for _, declared := range []int64{1 << 40, 1<<63 - 1} {
		got, err := ReadAll(strings.NewReader("0123456789"), declared)
		if err != nil || string(got) != "0123456789" || cap(got) > MaxPrealloc+1 {
			t.Fatalf("declared %d: %q, %v, capacity %d", declared, got, err, cap(got))
		}
	}
	long := bytes.Repeat([]byte("x"), 3*MaxPrealloc+7)
	got, err := ReadAll(bytes.NewReader(long), int64(len(long)))
	if err != nil || !bytes.Equal(got, long) {
		t.Fatalf("a body past MaxPrealloc: %d bytes, %v", len(got), err)
	}
}
