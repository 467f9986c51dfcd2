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
// One tenant holds at most share of it (429, its own doing): without a
// share, one tenant's few large bodies sent slowly, or its long calls,
// kept every other tenant's calls out.
type bodyBound struct {
	mu               sync.Mutex
	held, max, share int64
	tenants          map[string]int64
}

// take holds n bytes for tenant if they fit, or if nothing else is held
// (one body larger than the bound, or than a share, still goes, alone);
// otherwise it says which bound refused them.
func (b *bodyBound) take(tenant string, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.tenants[tenant]; t > 0 && t+n > b.share {
		return errTenantBodiesFull
	}
	if b.held > 0 && b.held+n > b.max {
		return errBodiesFull
	}
	b.held += n
	if b.tenants == nil {
		b.tenants = map[string]int64{}
	}
	b.tenants[tenant] += n
	return nil
}

func (b *bodyBound) give(tenant string, n int64) {
	if n == 0 {
		return // nothing taken: a body refused for its declared length
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= n
	if b.tenants[tenant] -= n; b.tenants[tenant] <= 0 {
		delete(b.tenants, tenant)
	}
}

// errBodiesFull ends a body's read when it passes what the bound has free
// (readBody tells every read failure as its own error: the reader's
// count says which it was).
var (
	errBodiesFull       = errors.New("model-call bodies at their bound")
	errTenantBodiesFull = errors.New("model-call bodies at the tenant's share of their bound")
)

// boundReader takes from the bound as its body arrives.
type boundReader struct {
	r          io.Reader
	b          *bodyBound
	tenant     string
	have, read int64
	refused    error // the bound that ended the read
}

func (x *boundReader) Read(p []byte) (int, error) {
	n, err := x.r.Read(p)
	x.read += int64(n)
	for x.read > x.have {
		if x.refused = x.b.take(x.tenant, bodyGrain); x.refused != nil {
			return n, x.refused
		}
		x.have += bodyGrain
	}
	return n, err
}

// readModelBody is readBody for a model call, within the server's bound
// on the bytes of such bodies held at once; its share is given back when
// the request's handler returns (requestState.release).
func (s *Server) readModelBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	tenant := principalOf(r.Context()).Tenant
	x := &boundReader{r: r.Body, b: s.bodies, tenant: tenant}
	if r.ContentLength > 0 && r.ContentLength <= s.maxModelBody {
		if err := s.bodies.take(tenant, r.ContentLength); err != nil {
			return nil, bodiesFull(err)
		}
		x.have = r.ContentLength
	}
	release := func() { s.bodies.give(tenant, x.have) }
	r.Body = struct {
		io.Reader
		io.Closer
	}{x, r.Body}
	body, err := readBody(w, r, s.maxModelBody)
	if err != nil {
		release()
		if x.refused != nil { // the bound, not the body, ended the read
			return nil, bodiesFull(x.refused)
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

func bodiesFull(why error) error {
	e := domain.E("gateway", domain.KindUnavailable, "overloaded",
		"this server holds as many model-call bodies as it takes at once (--model-bodies); nothing was done: retry shortly")
	if why == errTenantBodiesFull {
		e = domain.E("gateway", domain.KindRateLimited, "too_many_model_bodies",
			"this tenant's model calls in flight hold as many bytes of bodies on this server as one tenant may (--model-bodies-per-tenant); nothing was done: retry shortly, or send fewer large calls at once")
	}
	e.RetryAfter = 1
	return e
}
