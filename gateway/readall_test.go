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
