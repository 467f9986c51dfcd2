package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

// EventResponseStored is the type of a stored response's event.
const EventResponseStored = "ResponseStored"

// EventResponseOwned says whose a passed-through response is that Baton
// does not keep whole (one not finished when answered: a background
// response, a stream cut before its end) while its provider keeps it: so
// that no other tenant's previous_response_id reaches it there.
const EventResponseOwned = "ResponseOwned"

// EventResponseDeleted ends a stored (or owned) response's stream: DELETE
// /v1/responses/{id}. Events are never removed, so the record stays in the
// ledger; from then on the response is not found, by GET or by
// previous_response_id.
const EventResponseDeleted = "ResponseDeleted"

// ResponsesStreamName is where a response is stored: one stream per
// response, named by its id alone, so that a lookup reads one stream and
// finds whose it is (the event's tenant). An id another tenant stored is
// then known as such, never taken for one the provider alone holds: a
// passed-through id goes to OpenAI under Baton's one key, where any
// tenant's response can be continued.
func ResponsesStreamName(id string) string { return "response-" + id }

// legacyStreamName is where a tenant's response was stored until
// 2026-11-26: named by its tenant too. Still read.
func legacyStreamName(tenant, id string) string { return "response-" + tenant + "-" + id }

// ErrAnotherTenants marks the 404 of an id Baton stored for another
// tenant: it must not go on to a provider as that provider's own.
var ErrAnotherTenants = errors.New("responses: the response is another tenant's")

// ErrKeptUpstream marks the 404 of an id the tenant owns that Baton does
// not keep whole (EventResponseOwned): its provider alone can continue it.
var ErrKeptUpstream = errors.New("responses: the response is kept by its provider alone")

// ResponsesRecord is a stored response: its own input items (a string
// input as one user message item), the response it continued, and the
// response object as answered (its output items, model, usage). A
// continuation reads the chain back through Previous: each record holds
// only its own turn, so a long conversation does not grow its events.
// A response passed through names its provider in Upstream, and
// UpstreamStored says that provider keeps it too (its store was on), so
// that it can be continued there by id.
type ResponsesRecord struct {
	ID             string            `json:"id"`
	Model          string            `json:"model"`
	Previous       string            `json:"previousResponseId,omitempty"`
	Input          []json.RawMessage `json:"input"`
	Response       json.RawMessage   `json:"response"`
	Upstream       string            `json:"upstream,omitempty"`
	UpstreamStored bool              `json:"upstreamStored,omitempty"`
}

// PassedThrough is the record of a response passed through to provider
// and answered as answer (a response object): the request's input items,
// as a translated call keeps them, and the response it continued. ok is
// false when there is nothing to keep: the request said store: false, or
// the answer is not a finished response Baton can name.
func PassedThrough(provider, model string, body, answer []byte) (rec ResponsesRecord, ok bool) {
	req, resp := gjson.ParseBytes(body), gjson.ParseBytes(answer)
	if req.Get("store").Type == gjson.False || resp.Get("object").Str != "response" || !responseIDRE.MatchString(resp.Get("id").Str) {
		return rec, false
	}
	if st := resp.Get("status").Str; st != "completed" && st != "incomplete" {
		return rec, false
	}
	input, err := inputItems(json.RawMessage(req.Get("input").Raw))
	if err != nil {
		input = nil // OpenAI took it; a continuation elsewhere has only the output
	}
	rec = ResponsesRecord{ID: resp.Get("id").Str, Model: model, Previous: req.Get("previous_response_id").Str, Input: input,
		Response: answer, Upstream: provider, UpstreamStored: resp.Get("store").Type != gjson.False}
	return rec, rec.Previous != rec.ID
}

// KeptUpstream is the id of a passed-through response object (answer, as
// sent to the client) that its provider keeps (its store is not false);
// ok is false when there is none.
func KeptUpstream(body, answer []byte) (id string, ok bool) {
	req, resp := gjson.ParseBytes(body), gjson.ParseBytes(answer)
	id = resp.Get("id").Str
	if req.Get("store").Type == gjson.False || resp.Get("store").Type == gjson.False || !responseIDRE.MatchString(id) {
		return "", false
	}
	return id, true
}

// EventResponseItemOwned names the tenant of an output item of a
// passed-through response that its provider keeps, in a stream of its
// own (responseItemStream). OpenAI resolves an item_reference against
// every response Baton's one key made, so a reference to an item that is
// not the tenant's must not reach it.
const EventResponseItemOwned = "ResponseItemOwned"

func responseItemStream(id string) string { return "responseitem-" + id }

// itemIDRE is a provider's item id Baton indexes: a prefix and a name of
// letters and digits (OpenAI's msg_…, rs_…, fc_…); no '-', as in
// responseIDRE.
var itemIDRE = regexp.MustCompile(`^[a-z]{1,20}_[0-9A-Za-z]{1,200}$`)

// OwnItems records that the output items of answer, a passed-through
// response its provider keeps, are tenant's; appended together, so one
// group commit on the embedded store.
func (s ResponsesStore) OwnItems(ctx context.Context, tenant string, meta eventstore.Metadata, answer []byte) error {
	resp := gjson.GetBytes(answer, "id").Str
	var ids []string
	for _, it := range gjson.GetBytes(answer, "output").Array() {
		if id := it.Get("id").Str; itemIDRE.MatchString(id) {
			ids = append(ids, id)
		}
	}
	meta.Tenant = tenant
	errs := make(chan error, len(ids))
	for _, id := range ids {
		go func() {
			data, _ := json.Marshal(map[string]string{"id": id, "response": resp})
			_, err := s.Store.Append(ctx, responseItemStream(id), eventstore.NoStream(), eventstore.NewEvent(EventResponseItemOwned, data, meta))
			if errors.Is(err, eventstore.ErrConflict) {
				err = nil // recorded already (a retried store): the first tenant keeps it
			}
			errs <- err
		}()
	}
	var first error
	for range ids {
		first = cmp.Or(first, <-errs)
	}
	return first
}

// ownsItem reports whether a provider's item id is an item of a response
// passed through for tenant (OwnItems).
func (s ResponsesStore) ownsItem(ctx context.Context, tenant, id string) (bool, error) {
	if !itemIDRE.MatchString(id) {
		return false, nil
	}
	evs, err := s.Store.ReadStream(ctx, responseItemStream(id), 0, 1)
	if err != nil {
		return false, err
	}
	return len(evs) == 1 && evs[0].Type == EventResponseItemOwned && evs[0].Metadata.Tenant == tenant, nil
}

// ResponsesStore keeps responses in the event store.
type ResponsesStore struct{ Store eventstore.Store }

// maxChain bounds how far back a continuation reads: far beyond any
// conversation, a guard against a chain that never ends.
const maxChain = 10_000

// responseIDRE is a response id: Baton's (resp_ and 32 hex digits) or a
// provider's passed through (OpenAI's are longer). No '-', so that the id
// cannot reach into the tenant's part of its stream's name.
var responseIDRE = regexp.MustCompile(`^resp_[0-9A-Za-z]{1,200}$`)

// responseNotFound is an unknown response id: a 404 for a path id, and
// for previous_response_id the 400 OpenAI answers, with its code, which a
// client may read to send its whole conversation instead.
func responseNotFound(id, param string) error {
	return responseGone(id, param, "No response with id '%s' was found (responses sent with store: false are not kept).", "Previous response with id '%s' not found.")
}

// responseDeleted is the tenant's own response that DELETE removed: not
// found, as responseNotFound, saying why.
func responseDeleted(id, param string) error {
	return responseGone(id, param, "Response with id '%s' was deleted.", "Previous response with id '%s' not found: it was deleted.")
}

// deleted says whether a response's stream holds its deletion.
func deleted(evs []eventstore.RecordedEvent) bool {
	return len(evs) > 1 && evs[1].Type == EventResponseDeleted
}

func responseGone(id, param, byPath, asPrevious string) error {
	e := domain.E("responses", domain.KindNotFound, "response_not_found", byPath, id)
	if param == "previous_response_id" {
		e = domain.E("responses", domain.KindBadRequest, "previous_response_not_found", asPrevious, id)
	}
	if param != "" {
		e.Fields = []domain.FieldError{{Pointer: param, Code: "not_found", Message: e.Message}}
	}
	return e
}

// keptUpstream is ErrKeptUpstream, with the provider that keeps the
// response.
type keptUpstream struct{ provider string }

func (k keptUpstream) Error() string        { return ErrKeptUpstream.Error() }
func (k keptUpstream) Is(target error) bool { return target == ErrKeptUpstream }

// keptAlone says why Baton holds no more than the tenant's mark of a
// response its provider keeps.
const keptAlone = "Baton did not receive it complete (its stream ended without the response completing)"

// keptUpstreamError is the error for a response of the tenant that only
// its provider keeps (EventResponseOwned): not found here, as responseNotFound,
// but saying where it is, since it was neither deleted nor sent with store:
// false.
func keptUpstreamError(id, param, provider string) error {
	e := domain.E("responses", domain.KindNotFound, "response_not_found",
		"Response with id '%s' is kept by provider %s alone: %s, so it cannot be retrieved through Baton; continue it by previous_response_id on a model of %s.", id, provider, keptAlone, provider)
	if param == "previous_response_id" {
		e = domain.E("responses", domain.KindBadRequest, "previous_response_not_found",
			"Previous response with id '%s' is kept by provider %s alone: %s, so only a model of %s can continue it; to go on with this model, send the conversation as input items.", id, provider, keptAlone, provider)
	}
	if param != "" {
		e.Fields = []domain.FieldError{{Pointer: param, Code: "not_found", Message: e.Message}}
	}
	return e
}

// Save stores a response of tenant as one event; meta carries the actor
// and request id.
func (s ResponsesStore) Save(ctx context.Context, tenant string, meta eventstore.Metadata, rec ResponsesRecord) error {
	return s.create(ctx, tenant, meta, rec.ID, EventResponseStored, rec)
}

// MarkOwned records that the response id, which Baton does not keep
// whole, is tenant's (EventResponseOwned).
func (s ResponsesStore) MarkOwned(ctx context.Context, tenant string, meta eventstore.Metadata, id, provider string) error {
	return s.create(ctx, tenant, meta, id, EventResponseOwned, map[string]string{"id": id, "upstream": provider})
}

// create starts response id's stream with one event of tenant.
func (s ResponsesStore) create(ctx context.Context, tenant string, meta eventstore.Metadata, id, typ string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	meta.Tenant = tenant
	_, err = s.Store.Append(ctx, ResponsesStreamName(id), eventstore.NoStream(), eventstore.NewEvent(typ, data, meta))
	return err
}

// Load reads a stored response of tenant. Unknown, never stored or
// another tenant's: a 404 naming param ("" for a path id); another
// tenant's is ErrAnotherTenants too, and the tenant's own that its
// provider alone keeps ErrKeptUpstream.
func (s ResponsesStore) Load(ctx context.Context, tenant, id, param string) (*ResponsesRecord, error) {
	if !responseIDRE.MatchString(id) {
		return nil, responseNotFound(id, param)
	}
	evs, _, err := s.read(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	if deleted(evs) && evs[0].Metadata.Tenant == tenant {
		return nil, responseDeleted(id, param)
	}
	if len(evs) == 0 || deleted(evs) {
		return nil, responseNotFound(id, param)
	}
	if evs[0].Unreadable != "" {
		return nil, fmt.Errorf("responses: stored response %s: %s", id, evs[0].Unreadable)
	}
	if evs[0].Metadata.Tenant != tenant {
		return nil, errors.Join(responseNotFound(id, param), ErrAnotherTenants)
	}
	if evs[0].Type != EventResponseStored {
		provider := gjson.GetBytes(evs[0].Data, "upstream").Str
		return nil, errors.Join(keptUpstreamError(id, param, provider), keptUpstream{provider})
	}
	var rec ResponsesRecord
	if err := json.Unmarshal(evs[0].Data, &rec); err != nil {
		return nil, fmt.Errorf("responses: stored response %s: %w", id, err)
	}
	return &rec, nil
}

// read is the first two events of response id's stream (its record, and
// its deletion when it was deleted) and the stream's name.
func (s ResponsesStore) read(ctx context.Context, tenant, id string) ([]eventstore.RecordedEvent, string, error) {
	name := ResponsesStreamName(id)
	evs, err := s.Store.ReadStream(ctx, name, 0, 2)
	if err == nil && len(evs) == 0 {
		name = legacyStreamName(tenant, id)
		evs, err = s.Store.ReadStream(ctx, name, 0, 2)
	}
	return evs, name, err
}

// Deleted is what Delete found of a response: the provider that keeps it
// too (a passed-through response whose store was on, or one Baton only
// marked as the tenant's), "" for none.
type Deleted struct{ Upstream string }

// Delete forgets response id of tenant (DELETE /v1/responses/{id}): its
// stream gets EventResponseDeleted. Before that, keep (when not nil) is
// given what the provider keeps, to delete it there first: its error stops
// the deletion, so that a retry does it all. Unknown, another tenant's or
// deleted already: a 404. Two deletions at once: one wins, the other is a
// 404, by the stream's expected revision.
func (s ResponsesStore) Delete(ctx context.Context, tenant string, meta eventstore.Metadata, id string, keep func(Deleted) error) error {
	if !responseIDRE.MatchString(id) {
		return responseNotFound(id, "")
	}
	evs, name, err := s.read(ctx, tenant, id)
	if err != nil {
		return err
	}
	if deleted(evs) && evs[0].Metadata.Tenant == tenant {
		return responseDeleted(id, "")
	}
	if len(evs) == 0 || len(evs) > 1 || evs[0].Metadata.Tenant != tenant {
		return responseNotFound(id, "")
	}
	var d Deleted
	switch g := gjson.ParseBytes(evs[0].Data); evs[0].Type {
	case EventResponseStored: // ResponsesRecord's fields, the response itself left unread
		if g.Get("upstreamStored").Bool() {
			d.Upstream = g.Get("upstream").Str
		}
	case EventResponseOwned:
		d.Upstream = g.Get("upstream").Str
	default:
		return responseNotFound(id, "")
	}
	if keep != nil {
		if err := keep(d); err != nil {
			return err
		}
	}
	data, _ := json.Marshal(map[string]string{"id": id})
	meta.Tenant = tenant
	_, err = s.Store.Append(ctx, name, eventstore.Revision(evs[0].Revision), eventstore.NewEvent(EventResponseDeleted, data, meta))
	if errors.Is(err, eventstore.ErrConflict) {
		return responseDeleted(id, "") // deleted meanwhile
	}
	return err
}

// History is the conversation up to and including the response id of
// tenant: each response's input, then its output, oldest first.
func (s ResponsesStore) History(ctx context.Context, tenant, id string) (ResponsesHistory, error) {
	var chain []*ResponsesRecord
	for next, param := id, "previous_response_id"; next != ""; next, param = chain[len(chain)-1].Previous, "" {
		if len(chain) == maxChain {
			// The client's conversation, not a fault of Baton's: a 400
			// that says to start a new one (or send the items instead).
			e := domain.E("responses", domain.KindBadRequest, "previous_response_chain_too_long",
				"Previous response with id '%s' continues a conversation longer than %d responses, more than Baton reads back; send the conversation as input items instead.", id, maxChain)
			e.Fields = []domain.FieldError{{Pointer: "previous_response_id", Code: "too_long", Message: e.Message}}
			return ResponsesHistory{}, e
		}
		rec, err := s.Load(ctx, tenant, next, param)
		if kept, ok := errors.AsType[keptUpstream](err); ok && param == "" {
			// An earlier response of the chain that its provider alone
			// keeps: neither deleted nor missing.
			e := domain.E("responses", domain.KindBadRequest, "previous_response_not_found",
				"Previous response with id '%s' cannot be continued on this model: the response %s before it in its conversation is kept by provider %s alone (%s); continue on a model of %s, or send the conversation as input items.", id, next, kept.provider, keptAlone, kept.provider)
			e.Fields = []domain.FieldError{{Pointer: "previous_response_id", Code: "not_found", Message: e.Message}}
			return ResponsesHistory{}, e
		}
		if param == "" && domain.KindOf(err) == domain.KindNotFound {
			// An earlier response of the chain is gone (deleted): the one
			// named cannot be continued, said of the id the client sent.
			e := domain.E("responses", domain.KindBadRequest, "previous_response_not_found",
				"Previous response with id '%s' cannot be continued: the response %s before it in its conversation is not found (deleted).", id, next)
			e.Fields = []domain.FieldError{{Pointer: "previous_response_id", Code: "not_found", Message: e.Message}}
			return ResponsesHistory{}, e
		}
		if err != nil {
			return ResponsesHistory{}, err
		}
		if gjson.GetBytes(rec.Response, "status").Str == ResponsesFailed {
			// Kept to be retrieved, as OpenAI keeps it; its output is not
			// whole, and no conversation goes on from it.
			which := "the response " + next + " before it in its conversation"
			if next == id {
				which = "it"
			}
			e := domain.E("responses", domain.KindBadRequest, "previous_response_failed",
				"Previous response with id '%s' cannot be continued: %s failed (%s), so its output is not whole; continue from the response before it, or send the conversation as input items.",
				id, which, gjson.GetBytes(rec.Response, "error.message").Str)
			e.Fields = []domain.FieldError{{Pointer: "previous_response_id", Code: "failed", Message: e.Message}}
			return ResponsesHistory{}, e
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
		input, output := rec.Input, resp.Output
		if rec.Upstream != "" {
			input, output = withoutReasoning(input), withoutReasoning(output)
		}
		if err := conv.items(input, "input"); err != nil {
			return ResponsesHistory{}, storedItemError(rec, "input", err)
		}
		if err := conv.items(output, "output"); err != nil {
			return ResponsesHistory{}, storedItemError(rec, "output", err)
		}
	}
	return ResponsesHistory{Messages: conv.msgs, System: conv.system, chain: chain}, nil
}

// itemIDs are the ids of the items of the responses of chain: their input
// items by the ids GET input_items lists them by, and their output items.
func itemIDs(chain []*ResponsesRecord) map[string]bool {
	ids := map[string]bool{}
	add := func(id gjson.Result) {
		if id.Type == gjson.String && id.Str != "" {
			ids[id.Str] = true
		}
	}
	for _, rec := range chain {
		for _, it := range InputItems(rec) {
			add(gjson.GetBytes(it, "id"))
		}
		for _, it := range gjson.GetBytes(rec.Response, "output").Array() {
			add(it.Get("id"))
		}
	}
	return ids
}

// withoutReasoning is items without their reasoning items: a provider's
// own reasoning passed through (OpenAI's encrypted_content) is opaque to
// every other provider, so a conversation continued elsewhere goes on
// without it.
func withoutReasoning(items []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(items))
	for _, it := range items {
		if gjson.GetBytes(it, "type").Str != "reasoning" {
			out = append(out, it)
		}
	}
	return out
}

// storedItemError is why a stored response's items cannot be continued,
// a 400 naming previous_response_id: for one passed through, an item only
// its provider takes (a built-in tool's call); for one Baton answered, an
// item no request may carry (a function call cut at the token cap, its
// arguments not whole; one stored before a rule was added). An error that
// is not a refusal is a broken record.
func storedItemError(rec *ResponsesRecord, part string, err error) error {
	var de *domain.Error
	if !errors.As(err, &de) {
		return fmt.Errorf("responses: stored %s of %s: %v", part, rec.ID, err)
	}
	if rec.Upstream != "" {
		return refused("previous_response_id", "response %s was answered by %s and cannot be continued on this model: its %s: %s", rec.ID, rec.Upstream, part, de.Message)
	}
	cut := ""
	if part == "output" && gjson.GetBytes(rec.Response, "status").Str == ResponsesIncomplete {
		cut = " (the response was cut at max_output_tokens; send the conversation as input without its last item)"
	}
	return refused("previous_response_id", "response %s cannot be continued: its %s: %s%s", rec.ID, part, de.Message, cut)
}

// isReference says whether an input item is an item_reference: its type
// says so, or it has none (absent or null, as OpenAI's SDKs allow) and no
// role (absent or null), so it is not a message either.
func isReference(it gjson.Result) bool {
	t := it.Get("type")
	if t.Type == gjson.String {
		return t.Str == "item_reference"
	}
	return t.Type == gjson.Null && it.IsObject() && it.Get("role").Type == gjson.Null && it.Get("id").Exists()
}

// ResolveReferences replaces, in a Responses request body, each
// item_reference to an output item Baton named (itemID) by that item, read
// from the tenant's stored response: a client that keeps its conversation
// with store on (the AI SDK does) refers to earlier items by id, and no
// provider but Baton knows Baton's. A reference Baton did not name is left
// for the provider (OpenAI's own items, passed through); one Baton named
// whose response it does not keep for the tenant is a 400 naming it. The
// body resolved is held to limit, as a body sent whole is: a reference is
// some 60 bytes and its item up to a stored response's size.
func (s ResponsesStore) ResolveReferences(ctx context.Context, tenant string, body []byte, limit int64) ([]byte, error) {
	input := gjson.GetBytes(body, "input")
	if !input.IsArray() || !slices.ContainsFunc(input.Array(), isReference) {
		return body, nil
	}
	var items []string
	size := int64(len(body) - len(input.Raw) + 1) // the body around the items and the array's brackets, less the first item's comma
	add := func(raw string) error {
		if size += int64(len(raw)) + 1; size > limit {
			return domain.E("decode", domain.KindTooLarge, "body_too_large", "the request body is larger than %d bytes with its item references resolved", limit)
		}
		items = append(items, raw)
		return nil
	}
	outputs := map[string][]gjson.Result{}   // a response's output, read once
	inputs := map[string][]json.RawMessage{} // a response's input items, as listed, read once
	changed := false
	for i, it := range input.Array() {
		id := it.Get("id")
		response, at, ours := itemOrigin(id.Str)
		listed, in := inputItemOrigin(id.Str)
		ours = ours || in
		notFound := invalid(fmt.Sprintf("input/%d/id", i), "Item with id '%s' not found (the items of responses sent with store: false are not kept).", id.Str)
		if isReference(it) && (id.Type != gjson.String || id.Str == "") {
			return nil, invalid(fmt.Sprintf("input/%d/id", i), "an item_reference needs the id of the item it refers to, a string")
		}
		if isReference(it) && !ours {
			// A provider's item: sent on only when it is of a response
			// passed through for this tenant, as its provider would
			// resolve another tenant's too.
			if owned, err := s.ownsItem(ctx, tenant, id.Str); err != nil {
				return nil, err
			} else if !owned {
				return nil, notFound
			}
		}
		if !isReference(it) || id.Type != gjson.String || !ours {
			if err := add(it.Raw); err != nil {
				return nil, err
			}
			continue
		}
		if in {
			// An input item, by the id GET input_items named it.
			items, ok := inputs[listed]
			if !ok {
				rec, err := s.Load(ctx, tenant, listed, "")
				if errors.As(err, new(*domain.Error)) && domain.KindOf(err) == domain.KindNotFound {
					return nil, notFound
				}
				if err != nil {
					return nil, err
				}
				items = InputItems(rec)
				inputs[listed] = items
			}
			j := slices.IndexFunc(items, func(raw json.RawMessage) bool { return gjson.GetBytes(raw, "id").Str == id.Str })
			if j < 0 {
				return nil, notFound
			}
			if err := add(string(items[j])); err != nil {
				return nil, err
			}
			changed = true
			continue
		}
		out, ok := outputs[response]
		if !ok {
			rec, err := s.Load(ctx, tenant, response, "")
			var de *domain.Error
			if errors.As(err, &de) && de.Kind == domain.KindNotFound {
				return nil, notFound
			}
			if err != nil {
				return nil, err
			}
			out = gjson.GetBytes(rec.Response, "output").Array()
			outputs[response] = out
		}
		if at >= len(out) || out[at].Get("id").Str != id.Str {
			return nil, notFound
		}
		if err := add(out[at].Raw); err != nil {
			return nil, err
		}
		changed = true
	}
	if !changed {
		return body, nil
	}
	return withInput(body, items)
}

// withInput is body with its input array made of items (raw JSON).
func withInput(body []byte, items []string) ([]byte, error) {
	return sjson.SetRawBytes(body, "input", []byte("["+strings.Join(items, ",")+"]"))
}

// WithoutOwnReasoning is a Responses body passed through to OpenAI without
// the reasoning items Baton answered (ownReasoning: named by itemID, or sent
// without an id and signed by another provider): theirs is another
// provider's signature (Claude's thinking), or none, which OpenAI cannot
// read. A conversation moved from one provider to the other (Codex's
// /model) goes on without them, as one continued by previous_response_id
// does.
func WithoutOwnReasoning(body []byte) []byte {
	input := gjson.GetBytes(body, "input")
	// A type spelled with an escape (reasoni\u006eg) is still reasoning.
	if !input.IsArray() || !strings.Contains(input.Raw, `"reasoning"`) && !strings.Contains(input.Raw, `\u`) {
		return body
	}
	var items []string
	dropped := false
	for _, it := range input.Array() {
		if it.Get("type").Str == "reasoning" && ownReasoning(it.Get("id").Str, it.Get("encrypted_content").Str) {
			dropped = true
			continue
		}
		items = append(items, it.Raw)
	}
	if !dropped {
		return body
	}
	out, err := withInput(body, items)
	if err != nil {
		return body
	}
	return out
}

// inputItemPrefix is the prefix of an id Baton names for an input item of
// a kind, as OpenAI prefixes its items' ids.
var inputItemPrefix = map[string]string{"message": "msg", "function_call": "fc", "function_call_output": "fco", "reasoning": "rs"}

// InputItems is a stored response's input items as GET
// /v1/responses/{id}/input_items lists them: the items its request sent
// (this turn's, not those of the responses it continued), each an item
// with an id (one Baton names, <kind>_<the response's id>_in<n>, when the
// client's had none), a message's string content as its text part.
func InputItems(rec *ResponsesRecord) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(rec.Input))
	seen := map[string]bool{}
	for i, raw := range rec.Input {
		it := gjson.ParseBytes(raw)
		if !it.IsObject() {
			continue
		}
		item := []byte(raw)
		typ := it.Get("type").Str
		switch {
		case isReference(it) && it.Get("type").Type != gjson.String:
			// Sent without its type, as the SDKs allow, and taken as a
			// reference: listed as one.
			typ = "item_reference"
			item, _ = sjson.SetBytes(item, "type", typ)
		case typ == "" && it.Get("role").Exists():
			typ = "message"
			item, _ = sjson.SetBytes(item, "type", typ)
		}
		if c := it.Get("content"); typ == "message" && c.Type == gjson.String {
			part := "input_text"
			if it.Get("role").Str == "assistant" {
				part = "output_text"
			}
			item, _ = sjson.SetBytes(item, "content", []map[string]string{{"type": part, "text": c.Str}})
		}
		if typ == "message" && !it.Get("status").Exists() {
			item, _ = sjson.SetBytes(item, "status", "completed")
		}
		// An id an earlier item already has (a translated call takes
		// duplicates, which OpenAI refuses) is named as a missing one:
		// each listed id is an after cursor, and a repeated one would
		// page back to itself for ever.
		if id := it.Get("id"); id.Type != gjson.String || id.Str == "" || seen[id.Str] {
			item, _ = sjson.SetBytes(item, "id", fmt.Sprintf("%s_%s_in%d", cmp.Or(inputItemPrefix[typ], "item"), strings.TrimPrefix(rec.ID, "resp_"), i))
		}
		seen[gjson.GetBytes(item, "id").Str] = true
		out = append(out, item)
	}
	return out
}
