//go:build unix

package bolt

import (
	"os"
	"syscall"
)

// lockFile takes the lock bbolt takes on its file (flock, exclusive)
// without waiting.
func lockFile(f *os.File) (unlock func(), ok bool) {
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return nil, false
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }, true
}
