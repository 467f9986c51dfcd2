//go:build !unix

package main

import (
	"syscall"
	"testing"
)

// signalSelf: a process cannot send itself Unix signals here.
func signalSelf(t *testing.T, sig syscall.Signal) {
	t.Skipf("sending %v to oneself needs a Unix system", sig)
}

// cpuTime is not measured here; the benchmark reports 0.
func cpuTime() int64 { return 0 }
