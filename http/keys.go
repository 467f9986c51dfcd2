package http

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/projections"
)

// NewKey is a key as shown to its owner, once.
type NewKey struct {
	Key     string `json:"key"`
	KeyID   string `json:"keyId"`
	Tenant  string `json:"tenant"`
	Admin   bool   `json:"admin"`
	Display string `json:"display"`
	Label   string `json:"label,omitempty"`
	Notice  string `json:"notice"`
}

// CreateKey records a new key in the keys stream and returns its secret.
// Only the key's SHA-256 is stored. `baton keys create` and the admin
// endpoint both use it.
func CreateKey(ctx context.Context, store eventstore.Store, tenant string, admin bool, label, actor string) (NewKey, error) {
	secret, ev, err := domain.NewKey(tenant, admin, label)
	if err != nil {
		return NewKey{}, err
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return NewKey{}, err
	}
	e := eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: domain.EventKeyCreated, Data: data,
		Metadata: eventstore.Metadata{Tenant: tenant, Actor: actor, SchemaVersion: 1}}
	// Key creation depends on no earlier key, so the expectation is only
	// "first key" or "not the first key".
	_, err = store.Append(ctx, domain.KeysStream, eventstore.NoStream(), e)
	if errors.Is(err, eventstore.ErrConflict) {
		_, err = store.Append(ctx, domain.KeysStream, eventstore.StreamExists(), e)
	}
	if err != nil {
		return NewKey{}, err
	}
	return NewKey{Key: secret, KeyID: ev.KeyID, Tenant: ev.Tenant, Admin: ev.Admin, Display: ev.Display, Label: label,
		Notice: "Store this key now: Baton keeps only its hash and cannot show it again."}, nil
}

type createKeyRequest struct {
	Tenant string `json:"tenant"`
	Admin  bool   `json:"admin"`
	Label  string `json:"label"`
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var req createKeyRequest
	if _, ok := s.readJSON(w, r, &req); !ok {
		return
	}
	if len(req.Label) > 200 {
		s.writeError(w, r, domain.Invalid("keys.create", domain.FieldError{Pointer: "/label", Code: "too_long", Message: "is longer than 200 characters"}))
		return
	}
	k, err := CreateKey(r.Context(), s.store, req.Tenant, req.Admin, req.Label, principalOf(r.Context()).Actor())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, k)
}

// revokeKey ends a key: DELETE /v1/admin/keys/{keyId}. It answers the
// key's record with revokedAt once this replica's read model has the
// revocation, so the key is refused here from the answer on (other
// replicas follow within their read-model lag). Revoking a revoked key
// answers its record again and appends nothing.
func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) {
	const op = "keys.revoke"
	id := mux.Vars(r)["keyId"]
	rec, err := s.proj.KeyByID(id)
	if errors.Is(err, projections.ErrNoKey) {
		// A key created a moment ago (another replica, the CLI, or an
		// answer the read model has not caught up with) is waited for.
		if werr := s.proj.WaitForHead(r.Context(), 2*time.Second); werr == nil {
			rec, err = s.proj.KeyByID(id)
		}
	}
	if errors.Is(err, projections.ErrNoKey) {
		s.writeError(w, r, domain.E(op, domain.KindNotFound, "key_not_found", "no key has the id %q", id))
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if rec.RevokedAt == nil {
		data, err := json.Marshal(domain.KeyRevoked{KeyID: id})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		res, err := s.store.Append(r.Context(), domain.KeysStream, eventstore.StreamExists(), eventstore.EventData{
			ID: uuid.Must(uuid.NewV7()), Type: domain.EventKeyRevoked, Data: data,
			Metadata: eventstore.Metadata{Tenant: rec.Tenant, Actor: principalOf(r.Context()).Actor(), RequestID: RequestID(r.Context()), SchemaVersion: 1}})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), readWait)
		defer cancel()
		if err := s.proj.WaitFor(ctx, res.Position); err != nil {
			// The revocation is recorded; this replica's read model has
			// not shown it yet. Say so (a generic 503 would read as "not
			// done", and a retry would record it again).
			w.Header().Set("Retry-After", "1")
			writeProblem(w, r, http.StatusServiceUnavailable, "revocation_pending",
				"The revocation of key "+id+" is recorded; this server's read model has not applied it yet, so the key may still be accepted here for a moment. Retrying is safe.")
			return
		}
		if rec, err = s.proj.KeyByID(id); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"keyId": rec.KeyID, "tenant": rec.Tenant, "admin": rec.Admin, "display": rec.Display,
		"label": rec.Label, "createdAt": rec.CreatedAt, "revoked": true, "revokedAt": rec.RevokedAt})
}
