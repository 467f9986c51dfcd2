package http

import (
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/batonhq/baton/domain"
)

// DefaultModelBodies is how many bytes of model-call bodies a server
// holds at once by default: a translated call peaks at about four times
// its body (docs/operations.md), so about 1 GiB at most for these.
const DefaultModelBodies = 256 << 20

// bodyGrain is how much of the bound a body of unknown length takes at a
// time while it arrives.
const bodyGrain = 1 << 20

// bodyBound bounds the bytes of model-call bodies held at once: each is
// held whole, and several times over while translated, so that many large
// ones at once (one tenant's, or a few) would take the machine's memory.
// A body that does not fit is refused before it is read, or as soon as
// its bytes pass what was free: 503 with Retry-After, which the SDKs retry.
type bodyBound struct {
	mu        sync.Mutex
	held, max int64
}

// take holds n bytes if they fit, or if nothing else is held (one body
// larger than the bound still goes, alone).
func (b *bodyBound) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held > 0 && b.held+n > b.max {
		return false
	}
	b.held += n
	return true
}

func (b *bodyBound) give(n int64) {
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
}

// errBodiesFull ends a body's read when it passes what the bound has free
// (readBody tells every read failure as its own error: the reader's
// count says which it was).
var errBodiesFull = errors.New("model-call bodies at their bound")

// boundReader takes from the bound as its body arrives.
type boundReader struct {
	r          io.Reader
	b          *bodyBound
	have, read int64
}

func (x *boundReader) Read(p []byte) (int, error) {
	n, err := x.r.Read(p)
	x.read += int64(n)
	for x.read > x.have {
		if !x.b.take(bodyGrain) {
			return n, errBodiesFull
		}
		x.have += bodyGrain
	}
	return n, err
}

// readModelBody is readBody for a model call, within the server's bound
// on the bytes of such bodies held at once; its share is given back when
// the request's handler returns (requestState.release).
func (s *Server) readModelBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	x := &boundReader{r: r.Body, b: s.bodies}
	if r.ContentLength > 0 && r.ContentLength <= s.maxModelBody {
		if !s.bodies.take(r.ContentLength) {
			return nil, bodiesFull()
		}
		x.have = r.ContentLength
	}
	release := func() { s.bodies.give(x.have) }
	r.Body = struct {
		io.Reader
		io.Closer
	}{x, r.Body}
	body, err := readBody(w, r, s.maxModelBody)
	if err != nil {
		release()
		if x.read > x.have { // the bound, not the body, ended the read
			return nil, bodiesFull()
		}
		return nil, err
	}
	if st := stateOf(r.Context()); st != nil && st.release == nil {
		st.release = release
	} else {
		release() // no request state (a test's bare handler): nothing to hold it
	}
	return body, nil
}

func bodiesFull() error {
	e := domain.E("gateway", domain.KindUnavailable, "overloaded",
		"this server holds as many model-call bodies as it takes at once (--model-bodies); nothing was done: retry shortly")
	e.RetryAfter = 1
	return e
}
