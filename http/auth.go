package http

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/projections"
)

func principalOf(ctx context.Context) domain.Principal {
	if st := stateOf(ctx); st != nil {
		return st.principal
	}
	return domain.Principal{}
}

// withPrincipal is r as p's: its state holds p (the front made it, with
// the request's one copy); a request that did not come through the front
// gets a state of its own.
func withPrincipal(r *http.Request, p domain.Principal) *http.Request {
	if st := stateOf(r.Context()); st != nil {
		st.principal = p
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), requestKey, &requestState{principal: p}))
}

// presentedKey takes the key from x-api-key or Authorization: Bearer; SDKs
// send one or the other, and both work on every endpoint. When both carry
// a key, the Baton key (btn_sk_...) is the one: a client may send a
// provider's key in the other header. Two different Baton keys are
// refused (conflict is true): Baton will not guess which one is meant.
func presentedKey(r *http.Request) (key string, conflict bool) {
	x := strings.TrimSpace(r.Header.Get("X-Api-Key"))
	var bearer string
	if auth := r.Header.Get("Authorization"); len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		bearer = strings.TrimSpace(auth[7:])
	}
	switch {
	case x == "" || x == bearer:
		return bearer, false
	case bearer == "":
		return x, false
	}
	xb, bb := strings.HasPrefix(x, domain.KeyPrefix), strings.HasPrefix(bearer, domain.KeyPrefix)
	switch {
	case xb && bb:
		return "", true
	case bb:
		return bearer, false
	}
	return x, false
}

// authenticate resolves the key. An unknown key may be one created a moment
// ago through another path (the CLI, another replica): while the store
// holds a key event the read model has not applied, it is given a bounded
// moment to catch up before the key is refused.
func (s *Server) authenticate(r *http.Request) (domain.Principal, error) {
	const op = "auth"
	if len(r.Header["Authorization"]) > 1 || len(r.Header["X-Api-Key"]) > 1 {
		// The first would be read: which one the client meant is a guess.
		return domain.Principal{}, domain.E(op, domain.KindUnauthorized, "conflicting_api_keys", "an API key header (x-api-key or Authorization) is sent more than once; send it once")
	}
	key, conflict := presentedKey(r)
	if conflict {
		return domain.Principal{}, domain.E(op, domain.KindUnauthorized, "conflicting_api_keys", "x-api-key and Authorization: Bearer carry two different Baton keys; send one")
	}
	if key == "" && strings.TrimSpace(r.Header.Get("Authorization")) != "" {
		// A key sent without its scheme is not missing: say what is wrong.
		return domain.Principal{}, domain.E(op, domain.KindUnauthorized, "malformed_authorization", "the Authorization header must be Bearer <key> (or send the key in the x-api-key header)")
	}
	if key == "" {
		return domain.Principal{}, domain.E(op, domain.KindUnauthorized, "missing_api_key", "send your API key in the x-api-key header or as Authorization: Bearer <key>")
	}
	if !domain.LooksLikeKey(key) {
		return domain.Principal{}, invalidKey(op)
	}
	hash := domain.HashKey(key)
	rec, err := s.proj.KeyByHash(hash)
	if errors.Is(err, projections.ErrNoKey) && !s.unknownKeys.recent(hash) {
		if werr := s.proj.WaitForKeys(r.Context(), 2*time.Second); werr == nil {
			rec, err = s.proj.KeyByHash(hash)
			if errors.Is(err, projections.ErrNoKey) {
				s.unknownKeys.add(hash) // refused with the read model caught up: remember it
			}
		}
	}
	if errors.Is(err, projections.ErrNoKey) {
		return domain.Principal{}, invalidKey(op)
	}
	if err != nil {
		return domain.Principal{}, err
	}
	return domain.Principal{KeyID: rec.KeyID, Tenant: rec.Tenant, Admin: rec.Admin}, nil
}

// invalidKey refuses a key that is not one, or no longer one.
func invalidKey(op string) error {
	return domain.E(op, domain.KindUnauthorized, "invalid_api_key", "the API key is not valid")
}

// refuseRevoked answers a request whose key was revoked while it was
// served, as authentication answers it.
func (s *Server) refuseRevoked(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="baton"`)
	s.writeError(w, r, invalidKey("auth"))
}

type access int

const (
	anyKey access = iota
	adminOnly
)

// withKey guards a handler: 401 without a valid key, 403 for a tenant key on
// an admin route.
func (s *Server) withKey(a access, h http.HandlerFunc) http.HandlerFunc {
	return s.withKeyAs(a, problemErrors, h)
}

// withKeyAs is withKey answering errors in a wire format's shape.
func (s *Server) withKeyAs(a access, f errFormat, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticate(r)
		if err != nil {
			if domain.KindOf(err) == domain.KindUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="baton"`)
			}
			s.writeErrorAs(w, r, f, err)
			return
		}
		if a == adminOnly && !p.Admin {
			s.writeErrorAs(w, r, f, domain.E("auth", domain.KindForbidden, "admin_key_required", "this endpoint needs an admin key"))
			return
		}
		if rec, ok := w.(*statusRecorder); ok {
			rec.tenant = p.Tenant
		}
		// Baton's own routes take only their parameters; so do the admin
		// model routes, which no provider's SDK calls: ignored, a sync's
		// or a batch's ?provider=oa synced or probed every provider.
		if f == problemErrors || a == adminOnly {
			if err := knownQuery(r); err != nil {
				var e *domain.Error
				if f != problemErrors && errors.As(err, &e) && len(e.Fields) > 0 {
					// OpenAI's shape has one code and one message, no
					// field errors: "see fields" would point at nothing.
					e.Code = e.Fields[0].Code
					msgs := make([]string, len(e.Fields))
					for i, fe := range e.Fields {
						msgs[i] = fe.Pointer + ": " + fe.Message
					}
					e.Message = strings.Join(msgs, "; ")
				}
				s.writeErrorAs(w, r, f, err)
				return
			}
		}
		h(w, withPrincipal(r, p))
	}
}

// unknownKeys remembers, for a second, keys that were refused after the
// read model had caught up: a client (or an attacker) repeating a wrong key
// then costs a map lookup, not a store round trip and a wait each time. A
// key created on another replica is seen once the second has passed.
type unknownKeys struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

const (
	unknownKeyTTL  = time.Second
	unknownKeysMax = 10_000
)

func (u *unknownKeys) recent(hash string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	at, ok := u.seen[hash]
	return ok && time.Since(at) < unknownKeyTTL
}

func (u *unknownKeys) add(hash string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.seen == nil || len(u.seen) >= unknownKeysMax {
		u.seen = map[string]time.Time{} // bounded: forget them all rather than grow
	}
	u.seen[hash] = time.Now()
}

// callOf is who a command runs for: the request's principal and id.
func callOf(r *http.Request) ledger.Call {
	c := ledger.Call{Principal: principalOf(r.Context()), RequestID: RequestID(r.Context())}
	if claim := claimOf(r.Context()); claim != nil {
		c.BeforeWrite = claim.TakeFor
		c.Resume, _ = claim.Resume()
	}
	return c
}
