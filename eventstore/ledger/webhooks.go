package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/domain/contextpack"
	"github.com/batonhq/baton/eventstore"
)

// MaxWebhooksPerTenant bounds a tenant's endpoints, disabled ones
// included: each active one is a delivery of every event it wants, so
// without a bound one callback could be sent out any number of times, and
// each disabled one may be enabled again (and is kept, by every
// dispatcher, until it is deleted).
const MaxWebhooksPerTenant = 50

// DefaultWebhookSecretGrace is how long a rotated-out signing secret keeps
// signing deliveries beside the new one.
const DefaultWebhookSecretGrace = 24 * time.Hour

// WebhookActor is the actor of what the delivery machinery records
// (schedules, claims, outcomes, an endpoint disabled by a 410).
const WebhookActor = "baton:webhooks"

// Webhooks registers webhook endpoints (the webhooks stream) and records
// their deliveries (one stream per delivery). The signing secrets are in
// the webhooks stream's events: whoever can read the event store can read
// them; the HTTP front shows a secret only in the answer that creates it.
type Webhooks struct {
	store        eventstore.Store
	now          func() time.Time
	allowPrivate bool
	grace        time.Duration
	redactor     contextpack.Redactor
	// turns makes this process's writes of one stream (the webhooks
	// stream, a delivery's) take turns: racing each other at its revision,
	// a burst of them (200 rotations, or 200 redeliveries, at once) ran
	// out of retries, and about half answered 500. Replicas still race;
	// the losers decide again.
	turns turns
	// folded is the webhooks stream as far as this process has read it:
	// each load reads only what was appended since. The stream only grows
	// (a deletion or rotation is one more event), and every attempt and
	// every endpoint request read it whole.
	foldMu sync.Mutex
	folded webhookSet
}

// webhooksBusy answers a change that lost the race at the webhooks
// stream's revision every time: nothing was recorded, and a retry is safe.
func webhooksBusy(op string) error {
	e := domain.E(op, domain.KindUnavailable, "busy", "the webhooks changed %d times while this request was decided; nothing was recorded, retry it", maxConflictRetries+1)
	e.RetryAfter = 1
	return e
}

// WebhookOptions tune NewWebhooks.
type WebhookOptions struct {
	Now func() time.Time // time.Now when nil
	// AllowPrivate lets endpoints name private, loopback and other
	// internal addresses (the operator's --webhook-allow-private).
	AllowPrivate bool
	SecretGrace  time.Duration // DefaultWebhookSecretGrace when 0
	// Redactor takes the secrets out of a receiver's answer before an
	// attempt records it (its events are kept for ever); none when nil.
	Redactor contextpack.Redactor
}

// NewWebhooks is the webhook service on store.
func NewWebhooks(store eventstore.Store, o WebhookOptions) *Webhooks {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SecretGrace <= 0 {
		o.SecretGrace = DefaultWebhookSecretGrace
	}
	return &Webhooks{store: store, now: o.Now, allowPrivate: o.AllowPrivate, grace: o.SecretGrace, redactor: o.Redactor}
}

// AllowPrivate reports whether endpoints may name internal addresses.
func (s *Webhooks) AllowPrivate() bool { return s.allowPrivate }

func (s *Webhooks) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// webhookSet is the webhooks stream folded: the endpoints in registration
// order and the stream's last revision.
type webhookSet struct {
	hooks  map[string]*domain.Webhook
	order  []string
	last   uint64
	exists bool
	// registered is where every endpoint ever registered, deleted ones
	// too, was registered: a listing's cursor may name one deleted since
	// its page was read (a script deleting what it lists). Not cloned:
	// read under the fold's lock.
	registered map[string]registration
}

// registration is the revision of an endpoint's registration, its place
// in the listing's order, and its tenant.
type registration struct {
	revision uint64
	tenant   string
}

func (s *Webhooks) load(ctx context.Context) (*webhookSet, error) {
	var out *webhookSet
	err := s.fold(ctx, func(set *webhookSet) { out = set.clone() })
	return out, err
}

// fold catches the fold up with the stream and calls take with it, which
// must copy what it keeps.
func (s *Webhooks) fold(ctx context.Context, take func(*webhookSet)) error {
	s.foldMu.Lock()
	from := s.folded.next()
	s.foldMu.Unlock()
	// Read unlocked: loads at once do not wait for each other's reads.
	evs, err := eventstore.ReadStreamFrom(ctx, s.store, domain.WebhooksStream, from)
	if err != nil {
		return err
	}
	s.foldMu.Lock()
	defer s.foldMu.Unlock()
	set := &s.folded
	if set.hooks == nil {
		set.hooks = map[string]*domain.Webhook{}
	}
	for _, ev := range evs {
		if ev.Revision != set.next() {
			continue // folded meanwhile by another load
		}
		if ev.Unreadable != "" {
			return fmt.Errorf("webhooks stream, revision %d: %s", ev.Revision, ev.Unreadable)
		}
		before := len(set.hooks)
		if err := domain.ApplyWebhookEvent(set.hooks, ev.Type, ev.Data); err != nil {
			return fmt.Errorf("webhooks stream, revision %d (%s): %w", ev.Revision, ev.Type, err)
		}
		switch {
		case len(set.hooks) > before:
			var e domain.WebhookRegistered
			json.Unmarshal(ev.Data, &e)
			set.order = append(set.order, e.WebhookID)
			if set.registered == nil {
				set.registered = map[string]registration{}
			}
			set.registered[e.WebhookID] = registration{revision: ev.Revision, tenant: e.Tenant}
		case ev.Type == domain.EventWebhookDeleted:
			// Forgotten: a deleted endpoint is answered as one never
			// registered, and kept it would be copied at every load.
			var e domain.WebhookDeleted
			json.Unmarshal(ev.Data, &e)
			delete(set.hooks, e.WebhookID)
			set.order = slices.DeleteFunc(set.order, func(id string) bool { return id == e.WebhookID })
		}
		set.last, set.exists = ev.Revision, true
	}
	take(set)
	return nil
}

// next is the revision of the stream's first event not folded yet.
func (set *webhookSet) next() uint64 {
	if !set.exists {
		return 0
	}
	return set.last + 1
}

// clone is a copy of set its caller may change (change applies its event
// to it).
func (set *webhookSet) clone() *webhookSet {
	out := &webhookSet{hooks: make(map[string]*domain.Webhook, len(set.hooks)), order: slices.Clone(set.order), last: set.last, exists: set.exists}
	for id, w := range set.hooks {
		out.hooks[id] = copyHook(w)
	}
	return out
}

func (set *webhookSet) expected() eventstore.ExpectedRevision {
	if !set.exists {
		return eventstore.NoStream()
	}
	return eventstore.Revision(set.last)
}

func webhookNotFound(op, id string) error {
	return domain.E(op, domain.KindNotFound, "webhook_not_found", "no webhook %s", id)
}

// visible is endpoint id if p may see it and it is not deleted.
func (set *webhookSet) visible(op string, p domain.Principal, id string) (*domain.Webhook, error) {
	w := set.hooks[id]
	if w == nil || w.Status == domain.WebhookStatusDeleted || !p.CanSee(w.Tenant) {
		return nil, webhookNotFound(op, id)
	}
	return w, nil
}

func event(typ string, v any, meta eventstore.Metadata) (eventstore.EventData, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return eventstore.EventData{}, err
	}
	return eventstore.NewEvent(typ, data, meta), nil
}

// NewWebhook is a registered endpoint with its secret, shown once.
type NewWebhook struct {
	*domain.Webhook
	Secret string `json:"secret"`
	// Replayed: the endpoint an earlier request of the call's key
	// registered and kept no answer for (Call.Resume), not a new one.
	Replayed bool `json:"-"`
}

// Register records an endpoint for call's tenant with a fresh secret.
func (s *Webhooks) Register(ctx context.Context, call Call, reg domain.WebhookRegistration) (NewWebhook, error) {
	if err := reg.Validate(s.allowPrivate); err != nil {
		return NewWebhook{}, err
	}
	id, err := call.Resume, error(nil)
	if id == "" {
		if id, err = domain.NewWebhookID(); err != nil {
			return NewWebhook{}, err
		}
	}
	secret, err := domain.NewWebhookSecret()
	if err != nil {
		return NewWebhook{}, err
	}
	e := domain.WebhookRegistered{WebhookID: id, Tenant: call.Principal.Tenant, URL: reg.URL, EventTypes: reg.EventTypes,
		TargetExecutors: reg.TargetExecutors, Secret: secret, CreatedAt: s.clock()}
	ev, err := event(domain.EventWebhookRegistered, e, eventstore.Metadata{Tenant: e.Tenant, Actor: call.Principal.Actor(), RequestID: call.RequestID, RecordedAt: e.CreatedAt})
	if err != nil {
		return NewWebhook{}, err
	}
	// Appended at the revision the count was made on, so that replicas
	// registering at once cannot pass the bound together.
	done, err := s.turns.take(ctx, domain.WebhooksStream)
	if err != nil {
		return NewWebhook{}, err
	}
	defer done()
	for attempt := 0; ; attempt++ {
		set, err := s.load(ctx)
		if err != nil {
			return NewWebhook{}, err
		}
		if w := set.hooks[id]; w != nil && call.Resume != "" && w.Tenant == e.Tenant {
			// Registered by the request of the key that kept no answer.
			return NewWebhook{Webhook: w, Secret: w.Secret, Replayed: true}, nil
		}
		if err := set.room("webhooks.register", e.Tenant); err != nil {
			return NewWebhook{}, err
		}
		if err := call.beforeWrite(ctx, id); err != nil {
			return NewWebhook{}, err
		}
		_, err = appendSettled(ctx, s.store, domain.WebhooksStream, set.expected(), ev)
		if errors.Is(err, eventstore.ErrConflict) {
			if attempt < maxConflictRetries {
				continue
			}
			return NewWebhook{}, webhooksBusy("webhooks.register")
		}
		if err != nil {
			return NewWebhook{}, err
		}
		break
	}
	hooks := map[string]*domain.Webhook{}
	if err := domain.ApplyWebhookEvent(hooks, ev.Type, ev.Data); err != nil {
		return NewWebhook{}, err
	}
	return NewWebhook{Webhook: hooks[id], Secret: secret}, nil
}

// room refuses one more endpoint of tenant when it has the most it may
// have, disabled ones counted.
func (set *webhookSet) room(op, tenant string) error {
	n := 0
	for _, w := range set.hooks {
		if w.Tenant == tenant && w.Status != domain.WebhookStatusDeleted {
			n++
		}
	}
	if n >= MaxWebhooksPerTenant {
		return domain.E(op, domain.KindConflict, "too_many_webhooks",
			"tenant %s has %d webhook endpoints (disabled ones count), the most a tenant may have; delete one first (an endpoint receives every event it subscribes to, so each one is another delivery of each event)", tenant, n)
	}
	return nil
}

// ErrUnknownCursor is a listing cursor that names no endpoint the caller
// may see.
var ErrUnknownCursor = errors.New("webhooks: unknown cursor")

// List is a page of the endpoints p may see (not deleted), oldest first:
// up to limit of them, after the endpoint after ("" from the first; one
// deleted since names its place still); next is the cursor of the
// following page ("" at the end).
func (s *Webhooks) List(ctx context.Context, p domain.Principal, after string, limit int) (out []*domain.Webhook, next string, err error) {
	out = []*domain.Webhook{}
	var cerr error
	err = s.fold(ctx, func(set *webhookSet) {
		start := 0
		if after != "" {
			r, ok := set.registered[after]
			if !ok || !p.CanSee(r.tenant) {
				cerr = ErrUnknownCursor
				return
			}
			start = sort.Search(len(set.order), func(i int) bool { return set.registered[set.order[i]].revision > r.revision })
		}
		for _, id := range set.order[start:] {
			w, err := set.visible("webhooks.list", p, id)
			if err != nil {
				continue
			}
			if len(out) == limit {
				next = out[len(out)-1].WebhookID
				return
			}
			out = append(out, copyHook(w))
		}
	})
	if err == nil {
		err = cerr
	}
	return out, next, err
}

// Get is endpoint id if p may see it.
func (s *Webhooks) Get(ctx context.Context, p domain.Principal, id string) (*domain.Webhook, error) {
	if !domain.ValidWebhookID(id) {
		return nil, webhookNotFound("webhooks.get", id)
	}
	var w *domain.Webhook
	var verr error
	if err := s.fold(ctx, func(set *webhookSet) { w, verr = set.visible("webhooks.get", p, id); w = copyHook(w) }); err != nil {
		return nil, err
	}
	return w, verr
}

// Endpoint is endpoint id with its secrets, for the sender; nil when it
// was never registered (or was deleted).
func (s *Webhooks) Endpoint(ctx context.Context, id string) (*domain.Webhook, error) {
	var w *domain.Webhook
	err := s.fold(ctx, func(set *webhookSet) { w = copyHook(set.hooks[id]) })
	return w, err
}

// copyHook is a copy of w (nil for nil) its caller may change.
func copyHook(w *domain.Webhook) *domain.Webhook {
	if w == nil {
		return nil
	}
	c := *w
	return &c
}

// change appends the event build makes for endpoint id (which p must see),
// retrying when the stream moved meanwhile.
func (s *Webhooks) change(ctx context.Context, op string, p domain.Principal, id string, build func(w *domain.Webhook) (any, string, eventstore.Metadata, error)) (*domain.Webhook, error) {
	if !domain.ValidWebhookID(id) {
		return nil, webhookNotFound(op, id)
	}
	done, err := s.turns.take(ctx, domain.WebhooksStream)
	if err != nil {
		return nil, err
	}
	defer done()
	for attempt := 0; ; attempt++ {
		set, err := s.load(ctx)
		if err != nil {
			return nil, err
		}
		w, err := set.visible(op, p, id)
		if err != nil {
			return nil, err
		}
		v, typ, meta, err := build(w)
		if err != nil || v == nil {
			return w, err
		}
		meta.Tenant = w.Tenant
		ev, err := event(typ, v, meta)
		if err != nil {
			return nil, err
		}
		_, err = s.store.Append(ctx, domain.WebhooksStream, set.expected(), ev)
		if errors.Is(err, eventstore.ErrConflict) {
			if attempt < maxConflictRetries {
				continue
			}
			return nil, webhooksBusy(op)
		}
		if err != nil {
			return nil, err
		}
		if err := domain.ApplyWebhookEvent(set.hooks, ev.Type, ev.Data); err != nil {
			return nil, err
		}
		return set.hooks[id], nil
	}
}

// Delete removes endpoint id: nothing more is delivered to it.
func (s *Webhooks) Delete(ctx context.Context, call Call, id string) error {
	_, err := s.change(ctx, "webhooks.delete", call.Principal, id, func(w *domain.Webhook) (any, string, eventstore.Metadata, error) {
		return domain.WebhookDeleted{WebhookID: id, DeletedAt: s.clock()}, domain.EventWebhookDeleted,
			eventstore.Metadata{Actor: call.Principal.Actor(), RequestID: call.RequestID}, nil
	})
	return err
}

// Update changes endpoint id as u asks: its URL, event types, target
// executors, and whether it is disabled. An update that changes nothing
// records nothing and answers the endpoint as it is.
func (s *Webhooks) Update(ctx context.Context, call Call, id string, u domain.WebhookUpdate) (*domain.Webhook, error) {
	const op = "webhooks.update"
	if err := u.Validate(s.allowPrivate); err != nil {
		return nil, err
	}
	w, err := s.change(ctx, op, call.Principal, id, func(w *domain.Webhook) (any, string, eventstore.Metadata, error) {
		e := domain.WebhookUpdated{WebhookID: id}
		changed := false
		if u.URL != nil && *u.URL != w.URL {
			e.URL, changed = *u.URL, true
		}
		if u.EventTypes != nil && !slices.Equal(*u.EventTypes, w.EventTypes) {
			e.EventTypes, changed = *u.EventTypes, true
		}
		if u.TargetExecutors != nil && !slices.Equal(*u.TargetExecutors, w.TargetExecutors) {
			e.TargetExecutors, changed = u.TargetExecutors, true
		}
		if u.Disabled != nil && *u.Disabled != (w.Status == domain.WebhookStatusDisabled) {
			e.Disabled, changed = u.Disabled, true
		}
		if !changed {
			return nil, "", eventstore.Metadata{}, nil
		}
		if err := call.beforeWrite(ctx, ""); err != nil {
			return nil, "", eventstore.Metadata{}, err
		}
		e.UpdatedAt = s.clock()
		return e, domain.EventWebhookUpdated, eventstore.Metadata{Actor: call.Principal.Actor(), RequestID: call.RequestID, RecordedAt: e.UpdatedAt}, nil
	})
	return copyHook(w), err
}

// Rotation is a new secret, shown once, and when the old one stops
// signing.
type Rotation struct {
	WebhookID         string    `json:"webhookId"`
	Secret            string    `json:"secret"`
	PreviousExpiresAt time.Time `json:"previousSecretExpiresAt"`
	// Replayed: the rotation an earlier request of the call's key made and
	// kept no answer for (Call.Resume), not a new one.
	Replayed bool `json:"-"`
}

// Rotate gives endpoint id a new secret; the current one keeps signing
// (beside the new one) for the grace period. Rotating again within it
// ends the oldest secret at once: two secrets sign at most.
func (s *Webhooks) Rotate(ctx context.Context, call Call, id string) (Rotation, error) {
	secret, err := domain.NewWebhookSecret()
	if err != nil {
		return Rotation{}, err
	}
	rotation := call.Resume
	if rotation == "" {
		rotation = uuid.Must(uuid.NewV7()).String()
	}
	var rot Rotation
	_, err = s.change(ctx, "webhooks.rotate", call.Principal, id, func(w *domain.Webhook) (any, string, eventstore.Metadata, error) {
		if call.Resume != "" && w.RotationID == call.Resume && w.PreviousExpiresAt != nil {
			// Made by the request of the key that kept no answer: rotated
			// again, the secret its receiver holds would stop at once.
			rot = Rotation{WebhookID: id, Secret: w.Secret, PreviousExpiresAt: *w.PreviousExpiresAt, Replayed: true}
			return nil, "", eventstore.Metadata{}, nil
		}
		if err := call.beforeWrite(ctx, rotation); err != nil {
			return nil, "", eventstore.Metadata{}, err
		}
		now := s.clock()
		rot = Rotation{WebhookID: id, Secret: secret, PreviousExpiresAt: now.Add(s.grace)}
		return domain.WebhookSecretRotated{WebhookID: id, Secret: secret, PreviousExpiresAt: rot.PreviousExpiresAt, RotatedAt: now, RotationID: rotation}, domain.EventWebhookSecretRotated,
			eventstore.Metadata{Actor: call.Principal.Actor(), RequestID: call.RequestID}, nil
	})
	return rot, err
}

// Disable stops deliveries to endpoint id, whose attempt to url (during
// delivery deliveryID) showed it gone or failing for too long. Disabling
// an endpoint that is not active, or whose URL is no longer url (its
// owner moved it meanwhile, maybe because of that), records nothing:
// disabled says whether this call recorded it.
func (s *Webhooks) Disable(ctx context.Context, id, url, reason string, status int, deliveryID string) (disabled bool, err error) {
	_, err = s.change(ctx, "webhooks.disable", domain.Principal{Admin: true}, id, func(w *domain.Webhook) (any, string, eventstore.Metadata, error) {
		if w.Status != domain.WebhookStatusActive || w.URL != url {
			return nil, "", eventstore.Metadata{}, nil
		}
		disabled = true
		return domain.WebhookDisabled{WebhookID: id, Reason: reason, StatusCode: status, DeliveryID: deliveryID, DisabledAt: s.clock()},
			domain.EventWebhookDisabled, eventstore.Metadata{Actor: WebhookActor}, nil
	})
	if domain.KindOf(err) == domain.KindNotFound {
		return false, nil // deleted meanwhile
	}
	return disabled && err == nil, err
}

// Schedule opens a delivery. Of several replicas scheduling the same
// delivery, one appends it; for the others scheduled is false.
func (s *Webhooks) Schedule(ctx context.Context, e domain.WebhookDeliveryScheduled) (scheduled bool, err error) {
	ev, err := event(domain.EventWebhookDeliveryScheduled, e, eventstore.Metadata{Tenant: e.Tenant, Actor: WebhookActor})
	if err != nil {
		return false, err
	}
	_, err = s.store.Append(ctx, domain.WebhookDeliveryStream(e.DeliveryID), eventstore.NoStream(), ev)
	if errors.Is(err, eventstore.ErrConflict) {
		return false, nil
	}
	return err == nil, err
}

// Delivery folds delivery id's stream; nil when it has none.
func (s *Webhooks) Delivery(ctx context.Context, id string) (*domain.WebhookDelivery, uint64, error) {
	evs, err := eventstore.ReadWholeStream(ctx, s.store, domain.WebhookDeliveryStream(id))
	if err != nil || len(evs) == 0 {
		return nil, 0, err
	}
	d := &domain.WebhookDelivery{}
	for _, ev := range evs {
		if ev.Unreadable != "" {
			return nil, 0, fmt.Errorf("delivery %s, revision %d: %s", id, ev.Revision, ev.Unreadable)
		}
		if err := d.Apply(ev.Type, ev.Data); err != nil {
			return nil, 0, fmt.Errorf("delivery %s, revision %d (%s): %w", id, ev.Revision, ev.Type, err)
		}
	}
	return d, evs[len(evs)-1].Revision, nil
}

// AttemptClaim is an attempt this replica won: it sends, then records.
type AttemptClaim struct {
	Delivery *domain.WebhookDelivery // as of the claim
	Attempt  int
	revision uint64 // the claim's revision in the delivery's stream
}

// Claim claims the next attempt of delivery id if it is due: ok is false
// when it is not (any more), or another replica's claim landed first.
// The claim holds until now+lease; after that, with no outcome recorded,
// another replica may claim the next attempt.
func (s *Webhooks) Claim(ctx context.Context, id, claimant string, lease time.Duration) (c AttemptClaim, ok bool, err error) {
	d, last, err := s.Delivery(ctx, id)
	now := s.clock()
	if err != nil || d == nil || !d.Due(now) {
		return AttemptClaim{}, false, err
	}
	attempt := len(d.Attempts) + 1
	ev, err := event(domain.EventWebhookAttemptClaimed, domain.WebhookAttemptClaimed{DeliveryID: id, Attempt: attempt, Claimant: claimant, ClaimedAt: now, LeaseUntil: now.Add(lease)},
		eventstore.Metadata{Tenant: d.Tenant, Actor: WebhookActor})
	if err != nil {
		return AttemptClaim{}, false, err
	}
	res, err := s.store.Append(ctx, domain.WebhookDeliveryStream(id), eventstore.Revision(last), ev)
	if errors.Is(err, eventstore.ErrConflict) {
		return AttemptClaim{}, false, nil
	}
	if err != nil {
		return AttemptClaim{}, false, err
	}
	if err := d.Apply(ev.Type, ev.Data); err != nil {
		return AttemptClaim{}, false, err
	}
	return AttemptClaim{Delivery: d, Attempt: attempt, revision: res.NextRevision}, true, nil
}

// Record records the outcome of a claimed attempt. An outcome that comes
// after another replica claimed again (the lease ran out) is recorded
// too, as what happened; the later claim decides the delivery's state.
func (s *Webhooks) Record(ctx context.Context, c AttemptClaim, rec domain.WebhookAttemptRecorded) error {
	rec.DeliveryID, rec.Attempt = c.Delivery.DeliveryID, c.Attempt
	if rec.ResponseBody != "" && s.redactor != nil {
		// A receiver's error page may show a credential of its own.
		rec.ResponseBody, _ = s.redactor.Redact(rec.ResponseBody)
	}
	ev, err := event(domain.EventWebhookAttemptRecorded, rec, eventstore.Metadata{Tenant: c.Delivery.Tenant, Actor: WebhookActor})
	if err != nil {
		return err
	}
	stream := domain.WebhookDeliveryStream(c.Delivery.DeliveryID)
	expected := c.revision
	for attempt := 0; ; attempt++ {
		_, err = s.store.Append(ctx, stream, eventstore.Revision(expected), ev)
		if !errors.Is(err, eventstore.ErrConflict) || attempt >= maxConflictRetries {
			return err
		}
		_, last, rerr := s.Delivery(ctx, c.Delivery.DeliveryID)
		if rerr != nil {
			return rerr
		}
		expected = last
	}
}

// Redeliver starts a new round of attempts of delivery deliveryID of
// endpoint webhookID, due at once, with the whole retry schedule again.
// MaxDeliveryAttempts bounds the attempts one delivery keeps: each attempt
// is two events of its stream, which every claim reads and every read
// model rewrites whole, so redeliveries without end (each round done in
// milliseconds by a receiver that answers at once) made every later event
// of it dearer, on the read models every tenant waits on.
const MaxDeliveryAttempts = 500

func (s *Webhooks) Redeliver(ctx context.Context, call Call, webhookID, deliveryID string) (*domain.WebhookDelivery, error) {
	const op = "webhooks.redeliver"
	w, err := s.Get(ctx, call.Principal, webhookID)
	if err != nil {
		return nil, err
	}
	notFound := domain.E(op, domain.KindNotFound, "delivery_not_found", "no delivery %s of webhook %s", deliveryID, webhookID)
	if !domain.ValidWebhookDeliveryID(deliveryID) {
		return nil, notFound
	}
	if w.Status != domain.WebhookStatusActive {
		return nil, domain.E(op, domain.KindConflict, "webhook_not_active", "webhook %s is %s (%s); enable it (PATCH /v1/webhooks/%s with {\"disabled\": false}) to receive deliveries", webhookID, w.Status, w.DisabledReason, webhookID)
	}
	done, err := s.turns.take(ctx, domain.WebhookDeliveryStream(deliveryID))
	if err != nil {
		return nil, err
	}
	defer done()
	for attempt := 0; ; attempt++ {
		d, last, err := s.Delivery(ctx, deliveryID)
		if err != nil {
			return nil, err
		}
		if d == nil || d.WebhookID != webhookID {
			return nil, notFound
		}
		if d.Status == domain.DeliverySending && !d.Due(s.clock()) {
			return nil, domain.E(op, domain.KindConflict, "delivery_in_progress", "an attempt of delivery %s is being made; redeliver once it has an outcome", deliveryID)
		}
		if len(d.Attempts) >= MaxDeliveryAttempts {
			return nil, domain.E(op, domain.KindConflict, "delivery_attempts_exhausted",
				"delivery %s has had %d attempts, the most one delivery keeps; its event is in the handoff's ledger (GET /v1/executions/%s/ledger) and on the event stream", deliveryID, len(d.Attempts), d.HandoffID)
		}
		ev, err := event(domain.EventWebhookRedeliveryRequested, domain.WebhookRedeliveryRequested{DeliveryID: deliveryID, WebhookID: webhookID, RequestedBy: call.Principal.Actor(), At: s.clock()},
			eventstore.Metadata{Tenant: d.Tenant, Actor: call.Principal.Actor(), RequestID: call.RequestID})
		if err != nil {
			return nil, err
		}
		_, err = s.store.Append(ctx, domain.WebhookDeliveryStream(deliveryID), eventstore.Revision(last), ev)
		if errors.Is(err, eventstore.ErrConflict) {
			if attempt < maxConflictRetries {
				continue
			}
			return nil, webhooksBusy(op)
		}
		if err != nil {
			return nil, err
		}
		return d, d.Apply(ev.Type, ev.Data)
	}
}
