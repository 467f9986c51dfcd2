package bolt

import (
	"errors"
	"os"
	"syscall"
)

// fdatasync writes f's data to the disk, not its metadata a read does not
// need (its times), which a full fsync would write too.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
