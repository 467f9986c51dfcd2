// Package profile holds the diagnostics the commands share: `baton serve
// --cpuprofile` and `baton-bench --cpuprofile` profile their process the
// same way.
package profile

import (
	"os"
	"runtime/pprof"
)

// StartCPU profiles this process into path until stop is called; with an
// empty path it does nothing.
func StartCPU(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
