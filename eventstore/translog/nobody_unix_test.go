//go:build unix

package translog_test

import (
	"os/exec"
	"syscall"
	"testing"
)

// asNobody runs cmd as the unprivileged user, for checks that root's
// disregard of permission bits would defeat.
func asNobody(_ *testing.T, cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}
