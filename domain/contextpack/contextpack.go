// Package contextpack builds context packets: the normalised, deduplicated,
// secret-free and token-counted bundle of policy hints, memory hints and
// retrieved documents that a caller attaches to generate and plan requests
// (POST /v1/context/preview).
//
// Building is pure: the tokenizer and the secret redactor are passed in,
// the packet id and time come with the request, and nothing is read or
// written. Each item, in priority order, is normalized, redacted, dropped
// when empty or a duplicate, counted, and kept if it fits what is left of
// the budget; one retrieval document may be cut to fit, hints never are.
// The rules: docs/api.md ("Context packets").
package contextpack

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/domain/secrets"
)

// Sections, in priority order.
const (
	SectionPolicy    = "policyHints"
	SectionMemory    = "memoryHints"
	SectionRetrieval = "retrievalContext"
)

// Sections lists the sections in the order their items are kept.
var Sections = []string{SectionPolicy, SectionMemory, SectionRetrieval}

// Why an item was dropped.
const (
	ReasonEmpty      = "empty"       // nothing left after normalisation
	ReasonDuplicate  = "duplicate"   // the same text came before; see duplicateOf
	ReasonOverBudget = "over_budget" // did not fit in what was left of the budget
)

// Limits and defaults.
const (
	DefaultTokenBudget = 4000
	MinTokenBudget     = 1
	MaxTokenBudget     = 200_000
	MaxItems           = 1000 // per section
	MaxIDChars         = 256  // threadId, customerId
	// MinTruncatedTokens: a retrieval document is cut to fit only if at
	// least this many tokens of its text would remain.
	MinTruncatedTokens = 32
)

// Schema names the packet's shape and what its hash covers.
const Schema = "baton.context.v1"

// EventCreated is the type of the one event of a packet's stream.
const EventCreated = "ContextPacketCreated"

// StreamID is the stream of a packet.
func StreamID(packetID string) string { return "context-" + packetID }

// Redactor replaces secrets in text; *secrets.Scanner is one.
type Redactor interface {
	Redact(text string) (string, []secrets.Finding)
}

// Document is one retrieved document.
type Document struct {
	Title string
	Text  string
}

// Request is what a packet is built from. The caller names the packet and
// the time; the domain has no clock.
type Request struct {
	PacketID         string
	CreatedAt        time.Time
	ThreadID         string
	CustomerID       string
	PolicyHints      []string
	MemoryHints      []string
	RetrievalContext []Document
	TokenBudget      int    // MinTokenBudget..MaxTokenBudget; callers default it to DefaultTokenBudget
	Encoding         string // one of Encodings; DefaultEncoding when empty
}

// Item is one kept hint or document.
type Item struct {
	Section        string `json:"section"`
	Index          int    `json:"index"` // its place in the request's array
	Title          string `json:"title,omitempty"`
	Text           string `json:"text"`
	Tokens         int    `json:"tokens"` // title plus text
	Truncated      bool   `json:"truncated,omitempty"`
	OriginalTokens int    `json:"originalTokens,omitempty"` // before it was cut
}

// Ref names an item of the request.
type Ref struct {
	Section string `json:"section"`
	Index   int    `json:"index"`
}

// Dropped is an item left out, and why.
type Dropped struct {
	Section     string `json:"section"`
	Index       int    `json:"index"`
	Title       string `json:"title,omitempty"`
	Reason      string `json:"reason"`
	Tokens      int    `json:"tokens"`
	DuplicateOf *Ref   `json:"duplicateOf,omitempty"`
}

// Redaction says that secrets of a rule were replaced in a field of an
// item (dropped items included); never the secret.
type Redaction struct {
	Section string `json:"section"`
	Index   int    `json:"index"`
	Field   string `json:"field"` // "text" or "title"
	RuleID  string `json:"ruleId"`
	Count   int    `json:"count"`
}

// Packet is a built context packet, as stored and as answered.
type Packet struct {
	Object       string      `json:"object"` // "context.packet"
	PacketID     string      `json:"packetId"`
	Schema       string      `json:"schema"`
	ThreadID     string      `json:"threadId"`
	CustomerID   string      `json:"customerId"`
	Encoding     string      `json:"encoding"`
	TokenBudget  int         `json:"tokenBudget"`
	Tokens       int         `json:"tokens"`       // sum of the items' tokens; at most TokenBudget
	PromptTokens int         `json:"promptTokens"` // tokens of PromptText, headings included
	Items        []Item      `json:"items"`
	Dropped      []Dropped   `json:"dropped"`
	Redactions   []Redaction `json:"redactions"`
	ContentHash  string      `json:"contentHash"`
	CreatedAt    time.Time   `json:"createdAt"`
}

// Validate checks the request's limits, naming each failing field by its
// JSON pointer in the preview request.
func (r Request) Validate() error {
	var bad []domain.FieldError
	if r.TokenBudget < MinTokenBudget || r.TokenBudget > MaxTokenBudget {
		bad = append(bad, domain.FieldError{Pointer: "/options/tokenBudget", Code: "out_of_range",
			Message: fmt.Sprintf("must be an integer from %d to %d", MinTokenBudget, MaxTokenBudget)})
	}
	if r.Encoding != "" && !slices.Contains(Encodings, r.Encoding) {
		bad = append(bad, domain.FieldError{Pointer: "/options/encoding", Code: "invalid_enum",
			Message: "must be one of " + strings.Join(Encodings, ", ")})
	}
	for _, f := range []struct{ ptr, v string }{{"/threadId", r.ThreadID}, {"/customerId", r.CustomerID}} {
		if utf8.RuneCountInString(f.v) > MaxIDChars {
			bad = append(bad, domain.FieldError{Pointer: f.ptr, Code: "too_long", Message: fmt.Sprintf("is longer than %d characters", MaxIDChars)})
		}
		// Ids are plain text, as every name and id: normalised, a line
		// break stayed in the id and other controls and overrides were
		// dropped, so the packet named another id than the one sent.
		if r, ok := domain.NotPlain(f.v); ok {
			bad = append(bad, domain.FieldError{Pointer: f.ptr, Code: "control_character", Message: fmt.Sprintf("holds the control character %U; names and ids are plain text", r)})
		}
	}
	for _, s := range []struct {
		section string
		n       int
	}{{SectionPolicy, len(r.PolicyHints)}, {SectionMemory, len(r.MemoryHints)}, {SectionRetrieval, len(r.RetrievalContext)}} {
		if s.n > MaxItems {
			bad = append(bad, domain.FieldError{Pointer: "/" + s.section, Code: "too_many_items", Message: fmt.Sprintf("holds %d items, at most %d", s.n, MaxItems)})
		}
	}
	if len(bad) > 0 {
		return domain.Invalid("context.preview", bad...)
	}
	return nil
}

// Build makes the packet. A request that breaks a limit, or whose
// threadId or customerId holds a secret (ids are not redacted), is
// refused with a KindInvalid error.
func Build(req Request, tok Tokenizer, red Redactor) (*Packet, error) {
	if tok == nil || red == nil {
		return nil, errors.New("contextpack: Build needs a tokenizer and a redactor")
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if req.Encoding == "" {
		req.Encoding = DefaultEncoding
	}
	p := &Packet{
		Object: "context.packet", PacketID: req.PacketID, Schema: Schema,
		ThreadID: Normalize(req.ThreadID), CustomerID: Normalize(req.CustomerID),
		Encoding: req.Encoding, TokenBudget: req.TokenBudget, CreatedAt: req.CreatedAt,
		Items: []Item{}, Dropped: []Dropped{}, Redactions: []Redaction{},
	}
	if err := refuseSecretIDs(red, p.ThreadID, p.CustomerID); err != nil {
		return nil, err
	}
	count := func(s string) int {
		if s == "" {
			return 0
		}
		return len(tok.Encode(s))
	}

	// Normalise, redact, drop empties and duplicates, count.
	type candidate struct {
		item        Item
		titleTokens int
	}
	var cands []candidate
	seen := map[string]Ref{}
	add := func(section string, index int, title, text string) {
		title = p.redact(red, section, index, "title", Normalize(title))
		text = p.redact(red, section, index, "text", Normalize(text))
		if text == "" {
			p.Dropped = append(p.Dropped, Dropped{Section: section, Index: index, Title: title, Reason: ReasonEmpty})
			return
		}
		tt := count(title)
		tokens := tt + count(text)
		if first, dup := seen[text]; dup {
			p.Dropped = append(p.Dropped, Dropped{Section: section, Index: index, Title: title, Reason: ReasonDuplicate, Tokens: tokens, DuplicateOf: &first})
			return
		}
		seen[text] = Ref{section, index}
		cands = append(cands, candidate{Item{Section: section, Index: index, Title: title, Text: text, Tokens: tokens}, tt})
	}
	for i, h := range req.PolicyHints {
		add(SectionPolicy, i, "", h)
	}
	for i, h := range req.MemoryHints {
		add(SectionMemory, i, "", h)
	}
	for i, d := range req.RetrievalContext {
		add(SectionRetrieval, i, d.Title, d.Text)
	}

	// Fit the budget in priority order.
	left, cut := req.TokenBudget, false
	for _, c := range cands {
		it := c.item
		switch {
		case it.Tokens <= left:
		case it.Section == SectionRetrieval && !cut && left-c.titleTokens >= MinTruncatedTokens:
			text, n := truncate(tok, it.Text, left-c.titleTokens)
			if text != "" {
				// The cut can end a text on what reads as a secret (a key
				// whose tail made it not match): scan again.
				if clean := p.redact(red, it.Section, it.Index, "text", text); clean != text {
					text, n = truncate(tok, clean, left-c.titleTokens)
				}
			}
			if text == "" {
				p.Dropped = append(p.Dropped, Dropped{Section: it.Section, Index: it.Index, Title: it.Title, Reason: ReasonOverBudget, Tokens: it.Tokens})
				continue
			}
			it.OriginalTokens, it.Tokens, it.Text, it.Truncated = it.Tokens, c.titleTokens+n, text, true
			cut = true
		default:
			p.Dropped = append(p.Dropped, Dropped{Section: it.Section, Index: it.Index, Title: it.Title, Reason: ReasonOverBudget, Tokens: it.Tokens})
			continue
		}
		left -= it.Tokens
		p.Tokens += it.Tokens
		p.Items = append(p.Items, it)
	}
	slices.SortStableFunc(p.Dropped, func(a, b Dropped) int {
		if d := slices.Index(Sections, a.Section) - slices.Index(Sections, b.Section); d != 0 {
			return d
		}
		return a.Index - b.Index
	})
	p.ContentHash = p.Hash()
	p.PromptTokens = count(p.PromptText())
	return p, nil
}

// refuseSecretIDs refuses ids that hold a secret: an id is matched by
// other systems, so Baton will not rewrite it.
func refuseSecretIDs(red Redactor, ids ...string) error {
	var found []domain.SecretFinding
	for i, id := range ids {
		_, fs := red.Redact(id)
		for _, f := range fs {
			found = append(found, domain.SecretFinding{RuleID: f.RuleID, Pointer: []string{"/threadId", "/customerId"}[i]})
		}
	}
	if len(found) == 0 {
		return nil
	}
	e := domain.E("context.preview", domain.KindInvalid, "secret_detected",
		"%s holds what looks like a secret (%s); ids must not carry secrets. Nothing was recorded.", found[0].Pointer, found[0].RuleID)
	e.Findings = found
	return e
}

// redact replaces the secrets in one field and notes each rule once, with
// how often it matched.
func (p *Packet) redact(red Redactor, section string, index int, field, text string) string {
	if text == "" {
		return ""
	}
	out, found := red.Redact(text)
	if len(found) == 0 {
		return text
	}
	first := len(p.Redactions)
	for _, f := range found {
		if i := slices.IndexFunc(p.Redactions[first:], func(r Redaction) bool { return r.RuleID == f.RuleID }); i >= 0 {
			p.Redactions[first+i].Count++
			continue
		}
		p.Redactions = append(p.Redactions, Redaction{Section: section, Index: index, Field: field, RuleID: f.RuleID, Count: 1})
	}
	// A marker may sit where whitespace was trimmed around the secret; keep
	// the text normalised.
	return Normalize(out)
}

// truncate cuts text to its first tokens, at most limit of them counted
// afresh, at a character boundary, normalised. It returns the text and its
// token count ("" and 0 when nothing is left).
func truncate(tok Tokenizer, text string, limit int) (string, int) {
	toks := tok.Encode(text)
	for n := min(limit, len(toks)); n > 0; {
		s := tok.Decode(toks[:n])
		if !utf8.ValidString(s) {
			n-- // the cut fell inside a character
			continue
		}
		s = Normalize(s)
		c := len(tok.Encode(s))
		if c <= limit && s != "" {
			return s, c
		}
		n -= max(c-limit, 1)
	}
	return "", 0
}

// Hash is the packet's content hash, "sha256:<hex>": SHA-256 of the compact
// JSON of {customerId, encoding, items: [{index, section, text, title,
// tokens, truncated}], schema, threadId}, keys in that (alphabetical)
// order, every key present, HTML escaping off. The id, time, budget,
// dropped items and redaction notes are not content.
func (p *Packet) Hash() string {
	type hashedItem struct {
		Index     int    `json:"index"`
		Section   string `json:"section"`
		Text      string `json:"text"`
		Title     string `json:"title"`
		Tokens    int    `json:"tokens"`
		Truncated bool   `json:"truncated"`
	}
	type hashed struct {
		CustomerID string       `json:"customerId"`
		Encoding   string       `json:"encoding"`
		Items      []hashedItem `json:"items"`
		Schema     string       `json:"schema"`
		ThreadID   string       `json:"threadId"`
	}
	h := hashed{CustomerID: p.CustomerID, Encoding: p.Encoding, Items: make([]hashedItem, len(p.Items)), Schema: p.Schema, ThreadID: p.ThreadID}
	for i, it := range p.Items {
		h.Items[i] = hashedItem{it.Index, it.Section, it.Text, it.Title, it.Tokens, it.Truncated}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(h) // cannot fail: strings and ints
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PromptText renders the kept items as text for a model prompt: a heading
// per non-empty section, hints as a list, documents under their titles.
func (p *Packet) PromptText() string {
	var b strings.Builder
	heading := map[string]string{SectionPolicy: "# Policies", SectionMemory: "# Memory", SectionRetrieval: "# Retrieved context"}
	last := ""
	for _, it := range p.Items {
		if it.Section != last {
			if last != "" {
				b.WriteString("\n")
			}
			b.WriteString(heading[it.Section] + "\n")
			last = it.Section
		}
		if it.Section != SectionRetrieval {
			b.WriteString("- " + strings.ReplaceAll(it.Text, "\n", "\n  ") + "\n")
			continue
		}
		title := it.Title
		if title == "" {
			title = "Untitled"
		}
		if it.Truncated {
			title += " (truncated)"
		}
		b.WriteString("\n## " + strings.ReplaceAll(title, "\n", " ") + "\n" + it.Text + "\n")
	}
	return b.String()
}
