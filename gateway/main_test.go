package gateway

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is still running
// after they have all finished. Started as a budget replica by a test
// (replicas_test.go), the binary is that replica instead.
func TestMain(m *testing.M) {
	if os.Getenv(replicaEnv) != "" {
		os.Exit(budgetReplica())
	}
	goleak.VerifyTestMain(m)
}
