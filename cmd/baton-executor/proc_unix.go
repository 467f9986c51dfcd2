//go:build unix && !linux

package main

import (
	"os/exec"
	"syscall"
)

// ownGroup puts the command in a process group of its own, which stopGroup
// stops whole: killing the shell alone left what it had started
// (a `sh -c "a && b"`'s a) running, and the next start ran it again beside it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// groupOf: only Linux lets a later start prove that a group is the run's.
func groupOf(pid int) *ProcGroup { return nil }

// killLeftover: nothing is recorded to find a leftover group by.
func killLeftover(g *ProcGroup, runID string) (int, error) { return 0, nil }
