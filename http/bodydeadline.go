package http

import (
	"io"
	"net/http"
	"time"
)

// withBodyDeadline gives the body of r (a copy the front made) bodyReadTimeout
// from the end of its headers to arrive, and lifts the deadline once the
// body is read to its end: the deadline also bounds what net/http discards
// after an answer that did not read the body, and a streamed answer must
// not be cut by it. docs/operations.md (Connection timeouts) has the whole
// story. b is the request's own, allocated with its state.
func withBodyDeadline(w http.ResponseWriter, r *http.Request, b *deadlineBody) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	b.rc = *http.NewResponseController(w)
	if b.rc.SetReadDeadline(time.Now().Add(bodyReadTimeout)) != nil {
		return // not a connection that takes deadlines
	}
	b.ReadCloser = r.Body
	r.Body = b
}

// deadlineBody lifts the read deadline when its body reaches its end.
type deadlineBody struct {
	io.ReadCloser
	rc     http.ResponseController
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
