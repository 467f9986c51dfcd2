//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockState takes the state file for this process alone, by a lock on
// <state>.lock that the system lets go when the process ends, however it
// ends: two executors on one state file overwrote each other's runs.
func lockState(path string) (release func(), err error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state file %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("state file %s is in use by another baton-executor (it holds %s.lock): two would overwrite each other's runs", path, path)
		}
		return nil, fmt.Errorf("state file %s: locking %s.lock: %w", path, path, err)
	}
	return func() { f.Close() }, nil
}
