//go:build unix

package bolt_test

import (
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
)

// asNobody runs cmd as the unprivileged user, for checks that root's
// disregard of permission bits would defeat.
func asNobody(_ *testing.T, cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}

// limitFileSize caps the size of the files this process writes
// (RLIMIT_FSIZE), the way a full disk refuses writes.
func limitFileSize(limit uint64) error {
	signal.Ignore(syscall.SIGXFSZ) // get EFBIG from write(2) instead of a signal
	return syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit})
}

func skipUnlessUnix(*testing.T) {}
