package http_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is still running
// after they have all finished: no request, stream or upstream call may
// leave one behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
