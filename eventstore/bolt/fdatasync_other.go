//go:build !linux

package bolt

import "os"

// fdatasync is a full fsync where the system has no fdatasync (macOS,
// Windows), as bbolt's own is there.
func fdatasync(f *os.File) error { return f.Sync() }
