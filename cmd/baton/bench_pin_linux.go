//go:build linux

package main

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinTo sets the CPU affinity of every thread of process pid to cpus (an
// empty list: every CPU of the machine). Threads the process makes later
// inherit it from the thread that makes them, and the Go runtime of a
// pinned Go process lowers its GOMAXPROCS to match within a second or so.
func pinTo(pid int, cpus []int) error {
	var set unix.CPUSet
	if len(cpus) == 0 {
		for i := range onlineCPUs() {
			set.Set(i)
		}
	}
	for _, c := range cpus {
		set.Set(c)
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH { // ESRCH: the thread ended meanwhile
			return fmt.Errorf("pin thread %d of %d: %w", tid, pid, err)
		}
	}
	return nil
}

// onlineCPUs is the number of CPUs the kernel reports, whatever this
// process's own affinity is.
func onlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return 0
	}
	var lo, hi int
	if n, _ := fmt.Sscanf(string(b), "%d-%d", &lo, &hi); n == 2 {
		return hi + 1
	}
	return 1
}
