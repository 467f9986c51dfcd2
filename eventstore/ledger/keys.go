package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

// Keys creates and revokes API keys in the keys stream. Only a key's
// SHA-256 is stored; the secret is returned once.
type Keys struct{ store eventstore.Store }

// NewKeys is the key service on store.
func NewKeys(store eventstore.Store) *Keys { return &Keys{store: store} }

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

// maxKeyLabel bounds a key's label (characters of UTF-8 text, counted in
// bytes as the store does).
const maxKeyLabel = 200

// CheckKeyLabel is what Create says of a key's label it refuses (nil
// when it takes it): the command line checks it before it opens a store.
func CheckKeyLabel(label string) *domain.FieldError {
	if len(label) > maxKeyLabel {
		// Counted in bytes: "200 characters" refused 101 accented ones.
		return &domain.FieldError{Pointer: "/label", Code: "too_long", Message: fmt.Sprintf("is %d bytes of UTF-8, longer than %d", len(label), maxKeyLabel)}
	}
	// A label is shown in listings and the serve banner's terminal: an
	// escape or a bidi override there means something else than written.
	if r, ok := domain.NotPlain(label); ok {
		return &domain.FieldError{Pointer: "/label", Code: "control_character", Message: fmt.Sprintf("holds the control character %U; a label is plain text", r)}
	}
	return nil
}

// Create records a new key of tenant, acting as actor.
func (s *Keys) Create(ctx context.Context, actor, requestID, tenant string, admin bool, label string) (NewKey, error) {
	if fe := CheckKeyLabel(label); fe != nil {
		return NewKey{}, domain.Invalid("keys.create", *fe)
	}
	k, e, err := mint(tenant, admin, label, eventstore.Metadata{Tenant: tenant, Actor: actor, RequestID: requestID})
	if err != nil {
		return NewKey{}, err
	}
	// Key creation depends on no earlier key, so the expectation is only
	// "first key" or "not the first key".
	_, err = s.store.Append(ctx, domain.KeysStream, eventstore.NoStream(), e)
	if errors.Is(err, eventstore.ErrConflict) {
		_, err = s.store.Append(ctx, domain.KeysStream, eventstore.StreamExists(), e)
	}
	if err != nil {
		return NewKey{}, err
	}
	return k, nil
}

// mint makes a key and the event that records it (its hash, never the key).
func mint(tenant string, admin bool, label string, meta eventstore.Metadata) (NewKey, eventstore.EventData, error) {
	secret, ev, err := domain.NewKey(tenant, admin, label)
	if err != nil {
		return NewKey{}, eventstore.EventData{}, err
	}
	e, err := keyEvent(domain.EventKeyCreated, ev, meta)
	if err != nil {
		return NewKey{}, eventstore.EventData{}, err
	}
	return NewKey{Key: secret, KeyID: ev.KeyID, Tenant: ev.Tenant, Admin: ev.Admin, Display: ev.Display, Label: ev.Label,
		Notice: "Store this key now: Baton keeps only its hash and cannot show it again."}, e, nil
}

func keyEvent(typ string, v any, meta eventstore.Metadata) (eventstore.EventData, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return eventstore.EventData{}, err
	}
	return eventstore.NewEvent(typ, data, meta), nil
}

// BootstrapTenant is the tenant of the first admin key.
const BootstrapTenant = "default"

// Bootstrap creates the first admin key when the keys stream does not exist
// yet: of several replicas starting together on an empty store, exactly
// one creates it (created is false for the others). On an error after
// which the append may have been recorded (eventstore.MayHaveCommitted),
// key is the key it tried to record, for the caller to show: recorded
// unseen, it would be an admin key nobody has, and no later start makes
// another.
func (s *Keys) Bootstrap(ctx context.Context) (key NewKey, created bool, err error) {
	k, e, err := mint(BootstrapTenant, true, "bootstrap", eventstore.Metadata{Tenant: BootstrapTenant, Actor: "baton:first-start"})
	if err != nil {
		return NewKey{}, false, err
	}
	_, err = s.store.Append(ctx, domain.KeysStream, eventstore.NoStream(), e)
	if errors.Is(err, eventstore.ErrConflict) {
		return NewKey{}, false, nil // another replica, or `keys create`, was first
	}
	if err != nil && eventstore.MayHaveCommitted(err) {
		return k, false, err
	}
	if err != nil {
		return NewKey{}, false, err
	}
	return k, true, nil
}

// Revocation is the answer to Revoke: where the key's revocation sits in
// the feed, and whether this call recorded it.
type Revocation struct {
	Position eventstore.Position
	Recorded bool
}

// Revoke ends key keyID. Revoking a revoked key records nothing and
// answers the earlier revocation's position.
func (s *Keys) Revoke(ctx context.Context, call Call, keyID string) (Revocation, error) {
	const op = "keys.revoke"
	for attempt := 0; ; attempt++ {
		evs, err := eventstore.ReadWholeStream(ctx, s.store, domain.KeysStream)
		if err != nil {
			return Revocation{}, err
		}
		var created *domain.KeyCreated
		var revokedAt *eventstore.Position
		for _, ev := range evs {
			switch ev.Type {
			case domain.EventKeyCreated:
				var k domain.KeyCreated
				if json.Unmarshal(ev.Data, &k) == nil && k.KeyID == keyID {
					created = &k
				}
			case domain.EventKeyRevoked:
				var k domain.KeyRevoked
				if json.Unmarshal(ev.Data, &k) == nil && k.KeyID == keyID {
					pos := ev.Position
					revokedAt = &pos
				}
			}
		}
		if created == nil {
			return Revocation{}, domain.E(op, domain.KindNotFound, "key_not_found", "no key has the id %q", keyID)
		}
		if revokedAt != nil {
			return Revocation{Position: *revokedAt}, nil
		}
		e, err := keyEvent(domain.EventKeyRevoked, domain.KeyRevoked{KeyID: keyID},
			eventstore.Metadata{Tenant: created.Tenant, Actor: call.Principal.Actor(), RequestID: call.RequestID})
		if err != nil {
			return Revocation{}, err
		}
		res, err := s.store.Append(ctx, domain.KeysStream, eventstore.Revision(evs[len(evs)-1].Revision), e)
		if errors.Is(err, eventstore.ErrConflict) && attempt < maxConflictRetries {
			continue // a key was created or revoked meanwhile: look again
		}
		if err != nil {
			return Revocation{}, err
		}
		return Revocation{Position: res.Position, Recorded: true}, nil
	}
}

// TenantKnown says whether tenant is one of this Baton's: a key was made
// for it, live or revoked since (its handoffs remain to be read).
func (s *Keys) TenantKnown(ctx context.Context, tenant string) (bool, error) {
	evs, err := eventstore.ReadWholeStream(ctx, s.store, domain.KeysStream)
	if err != nil {
		return false, err
	}
	for _, ev := range evs {
		if ev.Type != domain.EventKeyCreated {
			continue
		}
		var d domain.KeyCreated
		if json.Unmarshal(ev.Data, &d) == nil && d.Tenant == tenant {
			return true, nil
		}
	}
	return false, nil
}
