package http

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gorilla/mux"
	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/projections"
)

// webhookRequest is the body of POST /v1/webhooks.
type webhookRequest struct {
	URL             string   `json:"url"`
	EventTypes      []string `json:"eventTypes"`
	TargetExecutors []string `json:"targetExecutors"`
}

// webhookFields are the names a registration may hold, and the refusal
// of another names them from the type, so that the two cannot drift.
var (
	webhookFields    = jsonNames[webhookRequest]()
	webhookFieldsWhy = "a registration has " + strings.Join(webhookFields, ", ") + "; no endpoint was registered"
)

// decodeWebhookRequest reads and checks a registration body.
func decodeWebhookRequest(body []byte, allowPrivate bool) (domain.WebhookRegistration, error) {
	var q webhookRequest
	if err := decodeBody(body, &q); err != nil {
		return domain.WebhookRegistration{}, err
	}
	// A filter misspelt ("targetExecutor") would register an endpoint
	// sent every handoff's events, other executors' among them.
	if err := refuseUnknown("webhooks.register", body, webhookFields, webhookFieldsWhy); err != nil {
		return domain.WebhookRegistration{}, err
	}
	reg := domain.WebhookRegistration{URL: q.URL, EventTypes: q.EventTypes, TargetExecutors: q.TargetExecutors}
	return reg, reg.Validate(allowPrivate)
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, s.maxBody)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reg, err := decodeWebhookRequest(body, s.ledger.Webhooks.AllowPrivate())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	hook, err := s.ledger.Webhooks.Register(r.Context(), callOf(r), reg)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if hook.Replayed {
		markResumed(w, r)
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", "/v1/webhooks/"+hook.WebhookID)
	writeJSON(w, http.StatusCreated, hook)
}

// noStore marks h's answers, replays of an Idempotency-Key included, as
// not to be cached: they show a secret.
func noStore(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		h(w, r)
	}
}

// listWebhooks pages through the caller's endpoints, oldest first, as
// the contracts are paged: limit, and cursor the last webhookId of the
// page before ("" from the first).
func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) {
	const op = "webhooks.list"
	// A tenant's endpoints (at most 50) in one page unless it asks for
	// less: the listing was one page of them all before it was paged.
	limit, err := pageLimit(op, r.URL.Query(), ledger.MaxWebhooksPerTenant)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	hooks, next, err := s.ledger.Webhooks.List(r.Context(), principalOf(r.Context()), r.URL.Query().Get("cursor"), limit)
	if errors.Is(err, ledger.ErrUnknownCursor) {
		err = domain.Invalid(op, domain.FieldError{Pointer: "query:cursor", Code: "unknown_cursor", Message: "is not a webhook of this tenant; pass the nextCursor of the previous page"})
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := map[string]any{"object": "list", "data": hooks, "hasMore": next != ""}
	if next != "" {
		resp["nextCursor"] = next
	}
	writeJSON(w, http.StatusOK, resp)
}

// pageLimit reads a listing's limit (1 to 100, def when absent), refusing
// a limit or cursor given more than once.
func pageLimit(op string, q url.Values, def int) (int, error) {
	for _, name := range []string{"limit", "cursor"} {
		if len(q[name]) > 1 { // read as its first value otherwise
			return 0, domain.Invalid(op, domain.FieldError{Pointer: "query:" + name, Code: "repeated", Message: "is given more than once"})
		}
	}
	if !q.Has("limit") {
		return def, nil
	}
	// Present and empty is refused too, as the document says.
	n, err := strconv.Atoi(q.Get("limit"))
	if err != nil || n < 1 || n > 100 {
		return 0, domain.Invalid(op, domain.FieldError{Pointer: "query:limit", Code: "out_of_range", Message: "must be an integer from 1 to 100"})
	}
	return n, nil
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request) {
	hook, err := s.ledger.Webhooks.Get(r.Context(), principalOf(r.Context()), mux.Vars(r)["webhookId"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, hook)
}

// webhookPatch is the body of PATCH /v1/webhooks/{webhookId}: a field
// left out is left as it is.
type webhookPatch struct {
	URL             *string   `json:"url"`
	EventTypes      *[]string `json:"eventTypes"`
	TargetExecutors *[]string `json:"targetExecutors"`
	Disabled        *bool     `json:"disabled"`
}

// webhookPatchFields are webhookPatch's fields, and what each must be.
var webhookPatchFields = map[string]string{"url": "a string", "eventTypes": "an array of strings", "targetExecutors": "an array of strings", "disabled": "a boolean"}

// decodeWebhookPatch reads an update's body. A name it does not know is
// refused, not ignored: a misspelt "disable" answered 200 and changed
// nothing, which reads as done. null is "every handoff" for
// targetExecutors (as left out at registration) and refused for the
// others, which an endpoint cannot be without.
func decodeWebhookPatch(body []byte) (domain.WebhookUpdate, error) {
	var q webhookPatch
	if err := decodeBody(body, &q); err != nil {
		return domain.WebhookUpdate{}, err
	}
	var bad []domain.FieldError
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		want, known := webhookPatchFields[k.Str]
		switch {
		case !known:
			bad = append(bad, domain.FieldError{Pointer: "/" + domain.PointerToken(k.Str), Code: "unknown_field",
				Message: fmt.Sprintf("unknown field %q: an update names url, eventTypes, targetExecutors or disabled", k.Str)})
		case v.Type == gjson.Null && k.Str == "targetExecutors":
			q.TargetExecutors = &[]string{}
		case v.Type == gjson.Null:
			bad = append(bad, domain.FieldError{Pointer: "/" + k.Str, Code: "invalid_type", Message: "must be " + want + ", not null; leave it out to keep it as it is"})
		}
		return true
	})
	if len(bad) > 0 {
		return domain.WebhookUpdate{}, domain.Invalid("webhooks.update", bad...)
	}
	return domain.WebhookUpdate{URL: q.URL, EventTypes: q.EventTypes, TargetExecutors: q.TargetExecutors, Disabled: q.Disabled}, nil
}

// updateWebhook changes an endpoint: PATCH, as it changes the fields
// named and leaves the others (Stripe's POST to the endpoint's id does
// the same; Baton's POSTs under an id are actions: rotate, redeliver).
func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, s.maxBody)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	u, err := decodeWebhookPatch(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	hook, err := s.ledger.Webhooks.Update(r.Context(), callOf(r), mux.Vars(r)["webhookId"], u)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, hook)
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	if err := s.ledger.Webhooks.Delete(r.Context(), callOf(r), mux.Vars(r)["webhookId"]); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// rotateOnce is the rotation under the request's Idempotency-Key, scoped
// to the endpoint rotated (the body is empty): a rotation retried after a
// lost answer must not rotate again, which would drop from the signatures
// the secret the receiver still holds, with no grace.
func (s *Server) rotateOnce(w http.ResponseWriter, r *http.Request) {
	s.withIdempotency("webhooks.rotate:"+mux.Vars(r)["webhookId"], s.rotateWebhook)(w, r)
}

func (s *Server) rotateWebhook(w http.ResponseWriter, r *http.Request) {
	// A rotation takes no fields: one asking for a shorter overlap
	// ({"expiresInSeconds":0}, after a secret leaked) would be ignored,
	// and the old secret sign on for 24 hours.
	body, err := readBody(w, r, 64<<10)
	if err == nil && len(bytes.TrimSpace(body)) > 0 {
		var none struct{}
		if err = decodeBody(body, &none); err == nil {
			err = refuseUnknown("webhooks.rotate", body, nil,
				"a rotation takes no fields (the previous secret signs beside the new one for 24 hours; rotating again ends it at once); nothing was rotated")
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rot, err := s.ledger.Webhooks.Rotate(r.Context(), callOf(r), mux.Vars(r)["webhookId"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if rot.Replayed {
		markResumed(w, r)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, rot)
}

// listWebhookDeliveries pages through a webhook's deliveries (oldest
// first) with their attempts, from this replica's read model.
func (s *Server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) {
	const op = "webhooks.deliveries"
	hook, err := s.ledger.Webhooks.Get(r.Context(), principalOf(r.Context()), mux.Vars(r)["webhookId"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	limit, err := pageLimit(op, q, 20)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.waitReadable(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	items, next, err := s.proj.WebhookDeliveries(hook.WebhookID, q.Get("cursor"), limit)
	if errors.Is(err, projections.ErrBadCursor) {
		err = domain.Invalid(op, domain.FieldError{Pointer: "query:cursor", Code: "unknown_cursor", Message: "is not a delivery of this webhook; pass the nextCursor of the previous page"})
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeList(w, items, next)
}

// redeliverWebhook starts a new round of attempts of one delivery, due
// at once; the dispatcher sends it with the same webhook-id.
func (s *Server) redeliverWebhook(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	d, err := s.ledger.Webhooks.Redeliver(r.Context(), callOf(r), v["webhookId"], v["deliveryId"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, d)
}
