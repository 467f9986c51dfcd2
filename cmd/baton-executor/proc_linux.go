//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// ownGroup puts the command in a process group of its own, which stopGroup
// stops whole: killing the shell alone left what it had started
// (a `sh -c "a && b"`'s a) running, and the next start ran it again beside it.
// The command is also killed when the executor dies (SIGKILL, the OOM
// killer): it ran on, and the next start ran it again beside it. What it
// started survives that; the group recorded in the state file lets the next
// start kill it (killLeftover).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// groupOf identifies the process group a just started command leads: its
// number, the leader's start time and the boot. The leader is not waited
// for yet, so its /proc entry is there even if it has already exited.
func groupOf(pid int) *ProcGroup {
	p, err := readProcStat(pid)
	if err != nil {
		return nil
	}
	return &ProcGroup{ID: pid, StartTime: p.startTime, BootID: bootID()}
}

// killLeftover kills what is left of run runID's command from an executor
// that died: its group g, and any process that has the run's id in its
// environment (what the command started in the instant before its group
// was written down). It waits for them to die, ten seconds at most, and
// returns how many it killed.
func killLeftover(g *ProcGroup, runID string) (int, error) {
	n, err := killGroup(g)
	if err != nil {
		return n, err
	}
	m, err := killByRunID(runID)
	return n + m, err
}

// killByRunID kills the processes whose environment says they are run
// runID's (BATON_EXECUTOR_RUN_ID, which a run id, a UUIDv7, makes unique).
func killByRunID(runID string) (int, error) {
	if runID == "" {
		return 0, nil
	}
	mark := []byte("BATON_EXECUTOR_RUN_ID=" + runID + "\x00")
	find := func() []int {
		ents, _ := os.ReadDir("/proc")
		var out []int
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil || !(bytes.HasPrefix(env, mark) || bytes.Contains(env, append([]byte{0}, mark...))) {
				continue // gone, another user's, or another run's
			}
			if p, err := readProcStat(pid); err == nil && p.state != 'Z' {
				out = append(out, pid)
			}
		}
		return out
	}
	left := find()
	for _, pid := range left {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for deadline := time.Now().Add(10 * time.Second); len(left) > 0; time.Sleep(50 * time.Millisecond) {
		still := find()
		if len(still) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("run %s: %d processes still alive 10s after SIGKILL", runID, len(still))
		}
		for _, pid := range still {
			syscall.Kill(pid, syscall.SIGKILL) // started since the last look
		}
	}
	return len(left), nil
}

// killGroup kills what is left of group g, once it has checked the group
// is still the run's: the leader, if still there, is the one recorded;
// every member started no earlier than it (a number reused after the group
// ended belongs to a later process).
func killGroup(g *ProcGroup) (int, error) {
	if g == nil || g.ID <= 1 || g.BootID != bootID() {
		return 0, nil // rebooted since: nothing of it is left
	}
	members := func() ([]procStat, error) {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return nil, err
		}
		var out []procStat
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			p, err := readProcStat(pid)
			if err != nil || p.pgrp != g.ID {
				continue // gone since, or another group's
			}
			if pid == g.ID && p.startTime != g.StartTime || p.startTime < g.StartTime {
				return nil, nil // the number is another group's now
			}
			if p.state != 'Z' { // a zombie is dead, waiting for its parent
				out = append(out, p)
			}
		}
		return out, nil
	}
	left, err := members()
	if err != nil || len(left) == 0 {
		return 0, err
	}
	if err := syscall.Kill(-g.ID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return 0, fmt.Errorf("killing process group %d: %w", g.ID, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		still, err := members()
		if err != nil {
			return 0, err
		}
		if len(still) == 0 {
			return len(left), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("process group %d: %d processes still alive 10s after SIGKILL", g.ID, len(still))
		}
	}
}

type procStat struct {
	state     byte
	pgrp      int
	startTime uint64 // clock ticks since boot
}

// readProcStat reads /proc/<pid>/stat; the command name, in parentheses,
// may hold spaces and parentheses of its own, so fields are counted from
// the last ')'.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	pgrp, err1 := strconv.Atoi(string(f[2]))
	start, err2 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unreadable", pid)
	}
	return procStat{state: f[0][0], pgrp: pgrp, startTime: start}, nil
}

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return string(bytes.TrimSpace(b))
}
