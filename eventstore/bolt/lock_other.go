//go:build !unix

package bolt

import "os"

// lockFile: not taken here, so a file a failed creation left is refused
// as damaged, not made again.
func lockFile(*os.File) (unlock func(), ok bool) { return nil, false }
