package translog

import "time"

// SetSignRetryPause shortens the signer's pause after a refused claim.
func SetSignRetryPause(d time.Duration) (restore func()) {
	old := signRetryPause
	signRetryPause = d
	return func() { signRetryPause = old }
}
