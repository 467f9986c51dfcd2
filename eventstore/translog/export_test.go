package translog

import "time"

// SetSignRetryPause shortens the signer's pause after a refused claim.
func SetSignRetryPause(d time.Duration) (restore func()) {
	old := signRetryPause
	signRetryPause = d
	return func() { signRetryPause = old }
}

// FailUpdates makes l's commits of the feed fail while fail returns an
// error (a disk full, say).
func FailUpdates(l *Log, fail func() error) { l.failUpdate = fail }
