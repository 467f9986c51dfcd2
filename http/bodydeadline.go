package http

import (
	"io"
	"net/http"
	"time"
)

// withBodyDeadline gives a request with a body bodyReadTimeout, from the
// end of its headers, for the body to arrive, and lifts the deadline once
// the body has been read to its end. It runs before anything else, so the
// deadline also bounds what net/http reads after a handler that answered
// without reading the body (401, 403, 404, 405, 413): to reuse a kept-alive
// connection the server discards the rest of the body first, and a client
// that stopped sending would otherwise hold the connection for ever.
// Lifting it at the end of the body keeps it off the rest of the request:
// net/http then watches the connection for the client leaving, and a
// deadline left on it would cancel a long streamed answer (net/http lifts
// it there too since golang/go#70834; this does not depend on that).
func withBodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(bodyReadTimeout)) != nil {
			next.ServeHTTP(w, r) // not a connection that takes deadlines
			return
		}
		r = r.WithContext(r.Context()) // a copy: the caller's request stays as it was
		r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { rc.SetReadDeadline(time.Time{}) }}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline when its body reaches its end.
type deadlineBody struct {
	io.ReadCloser
	lift   func()
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.lifted {
		b.lifted = true
		b.lift()
	}
	return n, err
}
