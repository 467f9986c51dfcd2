package gateway

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/batonhq/baton/gateway/internal/sse"
)

// A stream refused for Baton's own limits says so, not that the stream
// was interrupted.
func TestStreamErrorNamesBatonsLimits(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("reading: %w", sse.ErrLineTooLong), "a line of the stream is over 4 MiB"},
		{sse.ErrEventTooLarge, "an event of the stream is over 16 MiB"},
		{fmt.Errorf("read tcp: connection reset by peer"), "stream interrupted"},
	} {
		if got := StreamError("p", c.err).Error(); !strings.Contains(got, c.want) {
			t.Errorf("%v: %q, want it to say %q", c.err, got, c.want)
		}
	}
}

// An answer longer than its reader takes is told as too large, not as the
// malformed JSON its cut would be; one that ends at the limit is whole.
func TestAnswerOverTheLimitIsToldSo(t *testing.T) {
	var v map[string]any
	err := DecodeWhole(io.LimitReader(strings.NewReader(`{"a":"`+strings.Repeat("x", 3<<20)+`"}`), 2<<20), &v)
	if got := AnswerError("p", "malformed response", err, true).Error(); !strings.Contains(got, "the answer is over 2 MiB") {
		t.Fatalf("%q", got)
	}
	whole := `{"a":1}`
	if err := DecodeWhole(io.LimitReader(strings.NewReader(whole), int64(len(whole))), &v); err != nil || v["a"] != 1.0 {
		t.Fatalf("an answer of exactly the limit: %v %v", v, err)
	}
}
