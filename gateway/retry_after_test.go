package gateway

import (
	"net/http"
	"testing"
	"time"
)

// An upstream's Retry-After passes on in whole seconds, never above
// MaxRetryAfter, and never as a value that does not parse.
func TestRetryAfterSeconds(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0}, {"7", 7}, {" 7 ", 7}, {"0", 0}, {"3600", 3600}, {"3601", 3600},
		{"99999999999999999999", 3600}, {"-5", 0}, {"1.5", 0}, {"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), 3600},
	} {
		if got := (&UpstreamError{RetryAfter: tc.in}).RetryAfterSeconds(now); got != tc.want {
			t.Errorf("Retry-After %q: %d, want %d", tc.in, got, tc.want)
		}
	}
}

func FuzzRetryAfterSeconds(f *testing.F) {
	for _, s := range []string{"7", "99999999999999999999", "-1", "Fri, 27 Nov 2026 12:01:00 GMT", "1e9", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		if got := (&UpstreamError{RetryAfter: v}).RetryAfterSeconds(now); got < 0 || got > int(MaxRetryAfter/time.Second) {
			t.Fatalf("Retry-After %q: %d", v, got)
		}
	})
}

// A whole call waits as long as the official SDKs do (10 minutes by
// default, openai and Anthropic alike): shorter, a model answering after a
// minute was a 504, which the SDKs ran again twice.
func TestWholeCallWaitsAsLongAsTheSDKs(t *testing.T) {
	const sdkWait = 10 * time.Minute
	tr, ok := NewHTTPClient().Transport.(*http.Transport)
	if !ok || tr.ResponseHeaderTimeout < sdkWait || DefaultTimeout < sdkWait {
		t.Fatalf("headers within %v, a whole call within %v: the SDKs wait %v", tr.ResponseHeaderTimeout, DefaultTimeout, sdkWait)
	}
}
