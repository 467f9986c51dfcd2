package domain

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"7": 7 * time.Second, " 7 ": 7 * time.Second, "0": 0,
		"99999999999999999999": maxRetryAfter, "2147483649": maxRetryAfter,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):       0,
	} {
		if got, ok := ParseRetryAfter(v, now); !ok || got != want {
			t.Errorf("%q: %v %v, want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "soon", "-3", "1.5", "1e3", "+5"} {
		if got, ok := ParseRetryAfter(v, now); ok {
			t.Errorf("%q read as a Retry-After of %v", v, got)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"7", "99999999999999999999", "-1", "Fri, 27 Nov 2026 12:01:00 GMT", "Sat, 01 Jan 10000 00:00:00 GMT", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		if d, ok := ParseRetryAfter(v, now); ok && (d < 0 || d > maxRetryAfter) || !ok && d != 0 {
			t.Fatalf("%q: %v %v", v, d, ok)
		}
	})
}
