package http

import "time"

// SetBodyReadTimeout sets how long a request body may take to arrive, for
// one test (not a parallel one), and returns the function that restores
// it: call it once the test's front has stopped.
func SetBodyReadTimeout(d time.Duration) (restore func()) {
	old := bodyReadTimeout
	bodyReadTimeout = d
	return func() { bodyReadTimeout = old }
}
