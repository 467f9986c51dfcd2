package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

// EventResponseStored is the type of a stored response's event.
const EventResponseStored = "ResponseStored"

// ResponsesStreamName is where a tenant's response is stored: one stream
// per response, named by its tenant, so that a lookup reads one stream and
// another tenant's id is simply not there.
func ResponsesStreamName(tenant, id string) string { return "response-" + tenant + "-" + id }

// ResponsesRecord is a stored response: its own input items (a string
// input as one user message item), the response it continued, and the
// response object as answered (its output items, model, usage). A
// continuation reads the chain back through Previous: each record holds
// only its own turn, so a long conversation does not grow its events.
type ResponsesRecord struct {
	ID       string            `json:"id"`
	Model    string            `json:"model"`
	Previous string            `json:"previousResponseId,omitempty"`
	Input    []json.RawMessage `json:"input"`
	Response json.RawMessage   `json:"response"`
}

// ResponsesStore keeps responses in the event store.
type ResponsesStore struct{ Store eventstore.Store }

// maxChain bounds how far back a continuation reads: far beyond any
// conversation, a guard against a chain that never ends.
const maxChain = 10_000

var responseIDRE = regexp.MustCompile(`^resp_[0-9a-f]{32}$`)

func responseNotFound(id, param string) error {
	e := domain.E("responses", domain.KindNotFound, "response_not_found", "No response with id '%s' was found (responses sent with store: false are not kept).", id)
	if param != "" {
		e.Fields = []domain.FieldError{{Pointer: param, Code: "not_found", Message: e.Message}}
	}
	return e
}

// Save stores a response of tenant as one event; meta carries the actor
// and request id.
func (s ResponsesStore) Save(ctx context.Context, tenant string, meta eventstore.Metadata, rec ResponsesRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	meta.Tenant = tenant
	_, err = s.Store.Append(ctx, ResponsesStreamName(tenant, rec.ID), eventstore.NoStream(), eventstore.NewEvent(EventResponseStored, data, meta))
	return err
}

// Load reads a stored response of tenant. Unknown, never stored or
// another tenant's: a 404 naming param ("" for a path id).
func (s ResponsesStore) Load(ctx context.Context, tenant, id, param string) (*ResponsesRecord, error) {
	if !responseIDRE.MatchString(id) {
		return nil, responseNotFound(id, param)
	}
	evs, err := s.Store.ReadStream(ctx, ResponsesStreamName(tenant, id), 0, 1)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 || evs[0].Type != EventResponseStored {
		return nil, responseNotFound(id, param)
	}
	var rec ResponsesRecord
	if err := json.Unmarshal(evs[0].Data, &rec); err != nil {
		return nil, fmt.Errorf("responses: stored response %s: %w", id, err)
	}
	return &rec, nil
}

// History is the conversation up to and including the response id of
// tenant: each response's input, then its output, oldest first.
func (s ResponsesStore) History(ctx context.Context, tenant, id string) (ResponsesHistory, error) {
	var chain []*ResponsesRecord
	for next, param := id, "previous_response_id"; next != ""; next, param = chain[len(chain)-1].Previous, "" {
		if len(chain) == maxChain {
			return ResponsesHistory{}, fmt.Errorf("responses: the chain before %s is longer than %d responses", id, maxChain)
		}
		rec, err := s.Load(ctx, tenant, next, param)
		if err != nil {
			return ResponsesHistory{}, err
		}
		chain = append(chain, rec)
	}
	var conv conversation
	for i := len(chain) - 1; i >= 0; i-- {
		rec := chain[i]
		var resp struct {
			Output []json.RawMessage `json:"output"`
		}
		if err := json.Unmarshal(rec.Response, &resp); err != nil {
			return ResponsesHistory{}, fmt.Errorf("responses: stored response %s: %w", rec.ID, err)
		}
		if err := conv.items(rec.Input, "input"); err != nil {
			return ResponsesHistory{}, fmt.Errorf("responses: stored input of %s: %v", rec.ID, err)
		}
		if err := conv.items(resp.Output, "output"); err != nil {
			return ResponsesHistory{}, fmt.Errorf("responses: stored output of %s: %v", rec.ID, err)
		}
	}
	return ResponsesHistory{Messages: conv.msgs, System: conv.system}, nil
}
