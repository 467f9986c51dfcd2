// Package ledger is Baton's command side: store-agnostic services that
// load an aggregate's stream, fold it, let the domain decide, append with
// the expected revision and retry on a conflict. Handoffs, keys, plans,
// context packets, idempotency records and webhook endpoints and
// deliveries are written here and nowhere
// else; the HTTP front and the CLI call these services, and the read side
// (projections) follows what they append.
package ledger

import (
	"time"

	"github.com/batonhq/baton/domain/contextpack"
	"github.com/batonhq/baton/eventstore"
)

// Services are the command side's services on one store.
type Services struct {
	Handoffs    *Handoffs
	Keys        *Keys
	Plans       *Plans
	Packets     *Packets
	Idempotency *Idempotency
	Webhooks    *Webhooks
	Console     *Console
}

// Options tune New; the zero value is the defaults.
type Options struct {
	Now                  func() time.Time     // the ledger's clock; time.Now when nil
	Redactor             contextpack.Redactor // for context packets (none are built without it) and webhook answers
	IdempotencyRetention time.Duration        // DefaultIdempotencyRetention when 0
	// WebhookAllowPrivate lets webhook endpoints name private, loopback
	// and other internal addresses.
	WebhookAllowPrivate bool
}

// New builds every service on store.
func New(store eventstore.Store, o Options) *Services {
	return &Services{
		Handoffs:    NewHandoffs(store, o.Now),
		Keys:        NewKeys(store),
		Plans:       NewPlans(store),
		Packets:     NewPackets(store, o.Redactor, o.Now),
		Idempotency: NewIdempotency(store, o.IdempotencyRetention),
		Webhooks:    NewWebhooks(store, WebhookOptions{Now: o.Now, AllowPrivate: o.WebhookAllowPrivate, Redactor: o.Redactor}),
		Console:     NewConsole(store, o.Now),
	}
}
