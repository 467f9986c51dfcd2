package http

import (
	"io"
	"net/http"
	"time"
)

// withBodyDeadline gives a request's body bodyReadTimeout from the end of
// its headers to arrive, and lifts the deadline once the body is read to its
// end: the deadline also bounds what net/http discards after an answer that
// did not read the body, and a streamed answer must not be cut by it.
// docs/operations.md (Connection timeouts) has the whole story.
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
		r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline when its body reaches its end.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.lifted {
		b.lifted = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
