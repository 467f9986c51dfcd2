//go:build unix

package main

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// stopGroup stops the process group p leads: SIGTERM, so that it may
// clean up, then SIGKILL to whatever of it is left after grace. It returns
// once the group is gone or killed.
func stopGroup(p *os.Process, grace time.Duration) {
	syscall.Kill(-p.Pid, syscall.SIGTERM)
	for deadline := time.Now().Add(grace); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := syscall.Kill(-p.Pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
	}
	syscall.Kill(-p.Pid, syscall.SIGKILL)
}
