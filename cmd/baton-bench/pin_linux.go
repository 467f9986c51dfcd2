//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinTo sets the CPU affinity of every thread of process pid to cpus and
// returns a function that gives every thread back the affinity the
// process's main thread had. Threads the process makes later inherit the
// affinity of the thread that makes them, and the Go runtime of a pinned
// process lowers its GOMAXPROCS to match within a second or so.
func pinTo(pid int, cpus []int) (restore func() error, err error) {
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &before); err != nil {
		return nil, fmt.Errorf("affinity of %d: %w", pid, err)
	}
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	restore = func() error { return setAffinity(pid, &before) }
	if err := setAffinity(pid, &set); err != nil {
		return nil, errors.Join(err, restore())
	}
	return restore, nil
}

// setAffinity sets the affinity of every thread of pid, listing the
// threads again until a pass finds none it had not set (a thread made
// during a pass inherits its maker's old affinity).
func setAffinity(pid int, set *unix.CPUSet) error {
	done := map[int]bool{}
	for pass := 0; pass < 10; pass++ {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return err
		}
		fresh := 0
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || done[tid] {
				continue
			}
			fresh++
			if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH { // ESRCH: the thread ended meanwhile
				return fmt.Errorf("affinity of thread %d of %d: %w", tid, pid, err)
			}
			done[tid] = true
		}
		if fresh == 0 {
			return nil
		}
	}
	return fmt.Errorf("affinity of %d: threads kept appearing", pid)
}
