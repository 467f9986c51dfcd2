package http

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// sendProgress is how many bytes the peer of c has acknowledged, and how
// many are in the socket's send queue (sent and not acknowledged, or not
// sent yet).
func sendProgress(c net.Conn) (acked uint64, queued int, ok bool) {
	sc, is := c.(syscall.Conn)
	if !is {
		return 0, 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	cerr := raw.Control(func(fd uintptr) {
		info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			return
		}
		n, err := unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
		if err != nil {
			return
		}
		acked, queued, ok = info.Bytes_acked, n, true
	})
	return acked, queued, ok && cerr == nil
}
