//go:build unix

package http_test

import "syscall"

// smallReceiveBuffer is a dialer's Control that shrinks the socket's receive
// buffer, so a client that stops reading stalls the server's writes soon.
func smallReceiveBuffer(_, _ string, c syscall.RawConn) error {
	return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
}
