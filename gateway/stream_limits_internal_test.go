package gateway

import (
	"bufio"
	"fmt"
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
		{fmt.Errorf("reading: %w", bufio.ErrTooLong), "a line of the stream is over 4 MiB"},
		{sse.ErrEventTooLarge, "an event of the stream is over 16 MiB"},
		{fmt.Errorf("read tcp: connection reset by peer"), "stream interrupted"},
	} {
		if got := StreamError("p", c.err).Error(); !strings.Contains(got, c.want) {
			t.Errorf("%v: %q, want it to say %q", c.err, got, c.want)
		}
	}
}
