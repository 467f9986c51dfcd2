//go:build !unix

package main

import "os/exec"

// ownGroup: elsewhere the command alone is stopped.
func ownGroup(cmd *exec.Cmd) {}

// groupOf: there is no process group to record.
func groupOf(pid int) *ProcGroup { return nil }

// killLeftover: nothing is recorded to find a leftover group by.
func killLeftover(g *ProcGroup, runID string) (int, error) { return 0, nil }
