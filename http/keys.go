package http

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/gorilla/mux"
	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

type createKeyRequest struct {
	Tenant string `json:"tenant"`
	Admin  bool   `json:"admin"`
	Label  string `json:"label"`
}

// refuseUnknown is the 422 for the first top-level name of a JSON object
// body that is not one of known (why says what the request has, and that
// nothing was made), or nil.
func refuseUnknown(op string, body []byte, known []string, why string) error {
	return refuseUnknownAt(op, "", body, known, why)
}

// refuseUnknownAt is refuseUnknown for the object obj found at the JSON
// pointer at ("" for the body itself).
func refuseUnknownAt(op, at string, obj []byte, known []string, why string) error {
	var unknown *string // a name may be "", which is unknown too
	gjson.ParseBytes(obj).ForEach(func(k, _ gjson.Result) bool {
		if !slices.Contains(known, k.Str) {
			unknown = &k.Str
			return false
		}
		return true
	})
	if unknown == nil {
		return nil
	}
	return domain.Invalid(op, domain.FieldError{Pointer: at + "/" + domain.PointerToken(*unknown), Code: "unknown_field",
		Message: fmt.Sprintf("unknown field %q: %s", *unknown, why)})
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var req createKeyRequest
	body, ok := s.readJSON(w, r, &req)
	if !ok {
		return
	}
	// A key is its tenant's, admin or not, and nothing narrower: a field
	// asking for less (scopes, permissions, an expiry) would be ignored,
	// and its caller handed a key of the tenant's whole access that it
	// takes for a restricted one. Every other name is refused, so is a
	// misspelt one.
	if err := refuseUnknown("keys.create", body, []string{"tenant", "admin", "label"},
		"a key request has tenant, admin and label; a key has its tenant's whole access (all of it with admin), with no scopes, permissions or expiry, so nothing was made"); err != nil {
		s.writeError(w, r, err)
		return
	}
	// A label is kept in the key's event for good and shown in every
	// listing, which never shows a key: a credential pasted there would be.
	if rule, found := s.scanLabel(req.Label); found {
		e := domain.E("keys.create", domain.KindInvalid, "secret_detected",
			"the label looks like it holds a secret (%s); a label names the key's holder or use. No key was made.", rule)
		e.Findings = []domain.SecretFinding{{RuleID: rule, Pointer: "/label"}}
		s.writeError(w, r, e)
		return
	}
	k, err := s.ledger.Keys.Create(r.Context(), principalOf(r.Context()).Actor(), RequestID(r.Context()), req.Tenant, req.Admin, req.Label)
	if err != nil {
		s.writeError(w, r, keyStoreError(err, req.Tenant))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, k)
}

// scanLabel is the secret scanner's rule that takes label for a credential.
func (s *Server) scanLabel(label string) (rule string, found bool) {
	if s.scanner == nil || label == "" {
		return "", false
	}
	// Keys are made rarely: a scanner that can check without keeping its
	// rules lets a server that only proxies model calls stay small.
	if r, ok := s.scanner.(interface {
		ScanTextRare(string) (string, bool)
	}); ok {
		return r.ScanTextRare(label)
	}
	return s.scanner.ScanText(label)
}

// keyStoreError is err with advice true of this route. The store's errors
// tell a client to retry with the same Idempotency-Key, which key creation
// does not take (its replay would keep the key's secret, and the store
// keeps only its hash): a retry makes another key.
func keyStoreError(err error, tenant string) error {
	return keylessStoreError(err, fmt.Sprintf("the key may or may not have been made, and its secret was not shown. GET /v1/admin/keys?tenant=%s lists the tenant's keys: revoke one this request made (its label and createdAt tell it), then create the key again. A retry makes another key: this route takes no Idempotency-Key.", tenant))
}

// revokeKey ends a key: DELETE /v1/admin/keys/{keyId}. It answers the
// key's record with revokedAt once this replica's read model has the
// revocation, so the key is refused here from the answer on (other
// replicas follow within their read-model lag). Revoking a revoked key
// answers its record again and appends nothing.
func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) {
	const op = "keys.revoke"
	id := mux.Vars(r)["keyId"]
	rev, err := s.ledger.Keys.Revoke(r.Context(), callOf(r), id)
	if errors.Is(err, eventstore.ErrUnavailable) {
		// The store's own advice names an Idempotency-Key, which this
		// route does not take; it needs none.
		e := domain.E(op, domain.KindUnavailable, "store_unavailable",
			"The event store did not answer; the revocation of key %q may or may not have been recorded. Retry in a moment: revoking again answers the same, and records nothing more.", id)
		e.RetryAfter = 1
		err = e
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readWait)
	defer cancel()
	if err := s.proj.WaitFor(ctx, rev.Position); err != nil {
		// The revocation is recorded; this replica's read model has not
		// shown it yet. Say so (a generic 503 would read as "not done").
		e := domain.E(op, domain.KindUnavailable, "revocation_pending",
			"The revocation of key %s is recorded; this server's read model has not applied it yet, so the key may still be accepted here for a moment. Retrying is safe.", id)
		e.RetryAfter = 1
		s.writeError(w, r, e)
		return
	}
	rec, err := s.proj.KeyByID(id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, keyView(rec))
}

// keyView is a key's record as the admin routes answer it: never the key
// or its hash; revokedAt once it is revoked.
func keyView(rec domain.KeyRecord) map[string]any {
	k := map[string]any{"keyId": rec.KeyID, "tenant": rec.Tenant, "admin": rec.Admin, "display": rec.Display,
		"label": rec.Label, "createdAt": rec.CreatedAt, "revoked": rec.RevokedAt != nil}
	if rec.RevokedAt != nil {
		k["revokedAt"] = rec.RevokedAt
	}
	return k
}

// listKeys is GET /v1/admin/keys: every key's record, of one tenant with
// ?tenant=, oldest first, revoked ones too, so an operator finds the id a
// revocation needs (the bootstrap key's among them). Never a secret or
// its hash: display shows the key's first and last characters.
func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tenant := q.Get("tenant")
	// Present, the filter must name one tenant: an empty tenant= (a
	// script's unset variable) or a repeated one answered every tenant's
	// keys, or the first's, as if they were the one asked for.
	if q.Has("tenant") && (!domain.ValidTenant(tenant) || len(q["tenant"]) > 1) {
		s.writeError(w, r, domain.Invalid("keys.list", domain.FieldError{Pointer: "query:tenant", Code: "invalid_format", Message: "must name one tenant, given once"}))
		return
	}
	// A key created a moment ago (here, on another replica, by the CLI) is
	// listed: the read waits for the read models as the other reads do.
	if err := s.waitReadable(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	recs, err := s.proj.KeyList(tenant)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	data := make([]map[string]any, 0, len(recs))
	for _, rec := range recs {
		data = append(data, keyView(rec))
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}
