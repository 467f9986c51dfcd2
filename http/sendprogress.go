package http

import (
	"context"
	"net"
	"time"
)

type connKey struct{}

// ConnContext is http.Server's ConnContext for this front: it keeps each
// connection in its requests' context, so that an event stream can tell a
// client that has stopped reading from one that is only quiet. A stalled
// client's kernel takes the pings, and with them megabytes of events, into
// the socket's buffers without a write ever blocking.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// netConn is the connection under wrappers that name it (NetConn, as
// crypto/tls's and the listener's do).
func netConn(ctx context.Context) net.Conn {
	c, _ := ctx.Value(connKey{}).(net.Conn)
	for c != nil {
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = u.NetConn()
	}
	return c
}

// stallWatch tells a stream whose client has acknowledged nothing of what
// waits for it for the stall bound.
type stallWatch struct {
	acked uint64
	since time.Time // when acked was last seen to move, or nothing to wait
}

// stalled reports whether the client of ctx's connection has taken none of
// the bytes queued for it for bound, as of now. Where the connection
// cannot tell (another platform, a connection without a socket), never.
func (w *stallWatch) stalled(ctx context.Context, now time.Time, bound time.Duration) bool {
	acked, queued, ok := sendProgress(netConn(ctx))
	if !ok || queued == 0 || acked != w.acked || w.since.IsZero() {
		w.acked, w.since = acked, now
		return false
	}
	return now.Sub(w.since) >= bound
}
