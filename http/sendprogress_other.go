//go:build !linux

package http

import "net"

// sendProgress cannot tell on this platform: a stalled client's stream
// ends only once a write blocks for the stall bound.
func sendProgress(net.Conn) (acked uint64, queued int, ok bool) { return 0, 0, false }
