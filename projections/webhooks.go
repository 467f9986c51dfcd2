package projections

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

var (
	// webhookId NUL position of the delivery's first event -> the
	// delivery (domain.WebhookDelivery JSON), so a webhook's deliveries
	// list in the order they were scheduled.
	bucketWebhookDeliveries = []byte("webhook_deliveries")
	// deliveryId -> its key in webhook_deliveries.
	bucketWebhookDeliveryKeys = []byte("webhook_delivery_keys")
)

var deliveryStreamPrefix = domain.WebhookDeliveryStream("")

// WebhookDeliveries projects the delivery streams into the listing of
// each webhook's deliveries and their attempts.
type WebhookDeliveries struct{}

func (WebhookDeliveries) Buckets() [][]byte {
	return [][]byte{bucketWebhookDeliveries, bucketWebhookDeliveryKeys}
}

// Wants: the delivery streams.
func (WebhookDeliveries) Wants(ev eventstore.RecordedEvent) bool {
	return strings.HasPrefix(ev.StreamID, deliveryStreamPrefix)
}

func (WebhookDeliveries) Apply(tx *bbolt.Tx, ev eventstore.RecordedEvent) error {
	if !strings.HasPrefix(ev.StreamID, deliveryStreamPrefix) || ev.Unreadable != "" {
		return nil // a delivery's listing is not worth stopping the read models for
	}
	list, keys := tx.Bucket(bucketWebhookDeliveries), tx.Bucket(bucketWebhookDeliveryKeys)
	id := []byte(strings.TrimPrefix(ev.StreamID, deliveryStreamPrefix))
	var d domain.WebhookDelivery
	key := keys.Get(id)
	if ev.Type == domain.EventWebhookDeliveryScheduled {
		if key != nil {
			return nil // scheduled twice (written around Baton): the first stands
		}
		if err := d.Apply(ev.Type, ev.Data); err != nil {
			return nil
		}
		key = append(append([]byte(d.WebhookID), 0), encodePosition(ev.Position)...)
		if err := keys.Put(id, key); err != nil {
			return err
		}
	} else {
		if key == nil {
			return nil
		}
		key = bytes.Clone(key)
		if err := json.Unmarshal(list.Get(key), &d); err != nil {
			return fmt.Errorf("webhook delivery %s: %w", id, err)
		}
		if err := d.Apply(ev.Type, ev.Data); err != nil {
			return nil // the command side refuses such a stream too
		}
	}
	b, err := json.Marshal(&d)
	if err != nil {
		return err
	}
	return list.Put(key, b)
}

// WebhookDeliveries lists webhookID's deliveries in the order they were
// scheduled, up to limit, after the delivery id after ("" from the
// first); next is the cursor of the following page ("" at the end).
func (r *Runner) WebhookDeliveries(webhookID, after string, limit int) (out []json.RawMessage, next string, err error) {
	err = r.View(func(tx *bbolt.Tx) error {
		list, keys := tx.Bucket(bucketWebhookDeliveries), tx.Bucket(bucketWebhookDeliveryKeys)
		if list == nil || keys == nil {
			return nil
		}
		prefix := append([]byte(webhookID), 0)
		start := prefix
		if after != "" {
			k := keys.Get([]byte(after))
			if k == nil || !bytes.HasPrefix(k, prefix) {
				return ErrBadCursor
			}
			start = append(bytes.Clone(k), 0) // strictly after the cursor
		}
		c := list.Cursor()
		for k, v := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(out) == limit {
				var d struct {
					ID string `json:"deliveryId"`
				}
				json.Unmarshal(out[len(out)-1], &d)
				next = d.ID
				return nil
			}
			out = append(out, bytes.Clone(v))
		}
		return nil
	})
	return out, next, err
}

// ErrBadCursor is a listing cursor that names nothing in the listing.
var ErrBadCursor = fmt.Errorf("projections: unknown cursor")
