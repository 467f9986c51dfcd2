package domain

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter bounds a Retry-After read: far beyond any wait a caller
// honours (each caps it further), small enough that no sum overflows.
const maxRetryAfter = time.Duration(1<<31) * time.Second

// ParseRetryAfter reads a Retry-After value (RFC 9110, section 10.2.3):
// delay-seconds, or an HTTP date taken against now (a past one is 0). A
// delay too large to hold reads as the bound; anything else, false. The
// webhook dispatcher and the model gateway read it alike.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if strings.Trim(v, "0123456789") == "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true // only digits: too many of them
		}
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter), true
	}
	return 0, false
}
