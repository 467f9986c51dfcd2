package http

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/mux"

	"github.com/batonhq/baton/domain"
)

type consoleLinkRequest struct {
	Tenant     string `json:"tenant"`
	Name       string `json:"name"`
	Role       string `json:"role"`
	TTLSeconds *int   `json:"ttlSeconds"` // absent: the default; 0 is out of range, not the default
}

// ConsoleLinkURL is the sign-in address of a link token under base (the
// console's scheme and host).
func ConsoleLinkURL(base, token string) string {
	return base + "/console/signin?" + url.Values{"token": {token}}.Encode()
}

// createConsoleLink issues a one-time console sign-in link:
// POST /v1/admin/console-links.
func (s *Server) createConsoleLink(w http.ResponseWriter, r *http.Request) {
	var req consoleLinkRequest
	body, ok := s.readJSON(w, r, &req)
	if !ok {
		return
	}
	// A link signs a person in: a field it would ignore (an expiresIn
	// meant as its lifetime) would hand out a link other than the one
	// asked for.
	if err := refuseUnknown("console.link", body, []string{"tenant", "name", "role", "ttlSeconds"},
		"a console link request has tenant, name, role and ttlSeconds; no link was made"); err != nil {
		s.writeError(w, r, err)
		return
	}
	ttl := domain.DefaultConsoleLinkTTL
	if req.TTLSeconds != nil {
		ttl = time.Duration(*req.TTLSeconds) * time.Second
	}
	// A link for a tenant that has no key would sign a person in to an
	// empty console: a misspelt tenant, told now, not found out later.
	if domain.ValidTenant(req.Tenant) {
		known, err := s.ledger.Keys.TenantKnown(r.Context(), req.Tenant)
		if err == nil && !known {
			err = unknownTenant(req.Tenant)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	link, err := s.ledger.Console.IssueLink(r.Context(), principalOf(r.Context()).Actor(), RequestID(r.Context()), req.Tenant, req.Name, req.Role, ttl)
	if err != nil {
		s.writeError(w, r, keylessStoreError(err, "the link may or may not have been made; it was not shown, so nobody can use it. Retry: a new link is made (this route takes no Idempotency-Key)."))
		return
	}
	base := s.consoleURL
	if base == "" {
		scheme := "http"
		if secureRequest(r) {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, map[string]any{
		"url": ConsoleLinkURL(base, link.Token), "linkId": link.LinkID, "tenant": link.Tenant, "name": link.Name,
		"role": link.Role, "expiresAt": link.ExpiresAt,
		"notice": "The link signs its person in once, until expiresAt; Baton stores only its hash.",
	})
}

// revokeConsoleLink ends a link and the session it started:
// DELETE /v1/admin/console-links/{linkId}.
func (s *Server) revokeConsoleLink(w http.ResponseWriter, r *http.Request) {
	if err := s.ledger.Console.RevokeLink(r.Context(), callOf(r), mux.Vars(r)["linkId"]); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func unknownTenant(tenant string) error {
	return domain.Invalid("console.link", domain.FieldError{Pointer: "/tenant", Code: "unknown_tenant",
		Message: fmt.Sprintf("names no tenant of this Baton: no key was ever made for %q; check its spelling, or make the tenant's first key (POST /v1/admin/keys)", tenant)})
}
