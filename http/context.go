package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"
	"github.com/tidwall/gjson"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/domain/contextpack"
)

// contextPreviewRequest is the body of POST /v1/context/preview. Items are
// kept raw so that a wrong one is named by its index.
type contextPreviewRequest struct {
	ThreadID         string            `json:"threadId"`
	CustomerID       string            `json:"customerId"`
	PolicyHints      []json.RawMessage `json:"policyHints"`
	MemoryHints      []json.RawMessage `json:"memoryHints"`
	RetrievalContext []json.RawMessage `json:"retrievalContext"`
	Options          struct {
		TokenBudget json.RawMessage `json:"tokenBudget"`
		Encoding    string          `json:"encoding"`
	} `json:"options"`
}

// toDomain checks the shape of every item and the budget, naming each
// failing one by pointer.
func (q *contextPreviewRequest) toDomain() (contextpack.Request, error) {
	req := contextpack.Request{ThreadID: q.ThreadID, CustomerID: q.CustomerID, Encoding: q.Options.Encoding}
	var bad []domain.FieldError
	strs := func(section string, raws []json.RawMessage) []string {
		out := make([]string, len(raws))
		for i, raw := range raws {
			if err := unmarshalString(raw, &out[i]); err != nil {
				bad = append(bad, domain.FieldError{Pointer: fmt.Sprintf("/%s/%d", section, i), Code: "invalid_type", Message: "must be a string"})
			}
		}
		return out
	}
	req.PolicyHints = strs(contextpack.SectionPolicy, q.PolicyHints)
	req.MemoryHints = strs(contextpack.SectionMemory, q.MemoryHints)
	req.RetrievalContext = make([]contextpack.Document, len(q.RetrievalContext))
	for i, raw := range q.RetrievalContext {
		ptr := fmt.Sprintf("/%s/%d", contextpack.SectionRetrieval, i)
		var doc struct {
			Title json.RawMessage `json:"title"`
			Text  json.RawMessage `json:"text"`
		}
		if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &doc) != nil {
			bad = append(bad, domain.FieldError{Pointer: ptr, Code: "invalid_type", Message: "must be an object with title and text strings"})
			continue
		}
		for _, f := range []struct {
			name string
			raw  json.RawMessage
			dst  *string
		}{{"title", doc.Title, &req.RetrievalContext[i].Title}, {"text", doc.Text, &req.RetrievalContext[i].Text}} {
			if f.raw != nil && string(f.raw) != "null" && unmarshalString(f.raw, f.dst) != nil {
				bad = append(bad, domain.FieldError{Pointer: ptr + "/" + f.name, Code: "invalid_type", Message: "must be a string"})
			}
		}
	}
	budget, fe := tokenBudget(q.Options.TokenBudget)
	if fe != nil {
		bad = append(bad, *fe)
	}
	req.TokenBudget = budget
	if len(bad) > 0 {
		return req, domain.Invalid("context.preview", bad...)
	}
	return req, nil
}

// contextFields and contextOptions are the names a packet request and
// its options may hold; a document holds title and text.
var (
	contextFields  = jsonNames[contextPreviewRequest]()
	contextOptions = []string{"tokenBudget", "encoding"}
)

// unknownContextField refuses a name a packet request does not read, at
// its top, in options or in a document: ignored, a misplaced tokenBudget
// stored a packet of the default 4000 tokens where 50 were asked, and a
// document's misnamed text left it out.
func unknownContextField(body []byte) error {
	const op, nothing = "context.preview", "; no packet was stored"
	doc := gjson.ParseBytes(body)
	if err := refuseUnknownAt(op, "", body, contextFields, "a packet request has "+strings.Join(contextFields, ", ")+nothing); err != nil {
		return err
	}
	if o := doc.Get("options"); o.IsObject() {
		if err := refuseUnknownAt(op, "/options", []byte(o.Raw), contextOptions, "options has tokenBudget and encoding"+nothing); err != nil {
			return err
		}
	}
	var err error
	i := 0
	doc.Get(contextpack.SectionRetrieval).ForEach(func(_, d gjson.Result) bool {
		if d.IsObject() {
			err = refuseUnknownAt(op, fmt.Sprintf("/%s/%d", contextpack.SectionRetrieval, i), []byte(d.Raw), []string{"title", "text"}, "a document has title and text"+nothing)
		}
		i++
		return err == nil
	})
	return err
}

// unmarshalString decodes a JSON string, and nothing else (not null).
func unmarshalString(raw json.RawMessage, dst *string) error {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '"' {
		return errors.New("not a string")
	}
	return json.Unmarshal(raw, dst)
}

// tokenBudget reads options.tokenBudget: absent or null is the default; an
// integer (1000 or 1e3 or 1000.0) is passed on for the domain to
// range-check; anything else is refused here.
func tokenBudget(raw json.RawMessage) (int, *domain.FieldError) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return contextpack.DefaultTokenBudget, nil
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return 0, &domain.FieldError{Pointer: "/options/tokenBudget", Code: "invalid_type", Message: "must be an integer"}
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, &domain.FieldError{Pointer: "/options/tokenBudget", Code: "invalid_type", Message: "must be an integer"}
	}
	outOfRange := &domain.FieldError{Pointer: "/options/tokenBudget", Code: "out_of_range",
		Message: fmt.Sprintf("must be an integer from %d to %d", contextpack.MinTokenBudget, contextpack.MaxTokenBudget)}
	if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
		if i < math.MinInt32 || i > math.MaxInt32 {
			return 0, outOfRange
		}
		return int(i), nil
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return 0, outOfRange
	}
	return int(f), nil
}

// contextPreview builds, stores and answers a context packet.
func (s *Server) contextPreview(w http.ResponseWriter, r *http.Request) {
	var q contextPreviewRequest
	body, ok := s.readJSON(w, r, &q)
	if !ok {
		return
	}
	err := unknownContextField(body)
	var req contextpack.Request
	if err == nil {
		req, err = q.toDomain()
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	packet, replayed, err := s.ledger.Packets.Create(r.Context(), callOf(r), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if replayed {
		markResumed(w, r)
	}
	w.Header().Set("Location", "/v1/context/packets/"+packet.PacketID)
	writeJSON(w, http.StatusCreated, packet)
}

func (s *Server) getContextPacket(w http.ResponseWriter, r *http.Request) {
	packet, err := s.ledger.Packets.Get(r.Context(), principalOf(r.Context()), mux.Vars(r)["packetId"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, packet)
}

// contextPacketPrompt is the server's contextLoader: a tenant's packet as
// prompt text for generate and agent-plans, where an unknown or foreign
// packet is a wrong contextPacketId (422).
func (s *Server) contextPacketPrompt(ctx context.Context, tenant, id string) (string, error) {
	packet, err := s.ledger.Packets.Load(ctx, tenant, id)
	if domain.KindOf(err) == domain.KindNotFound {
		return "", domain.Invalid("context.load", domain.FieldError{Pointer: "/contextPacketId", Code: "not_found", Message: "no context packet " + id + " of this tenant"})
	}
	if err != nil {
		return "", err
	}
	return packet.PromptText(), nil
}
