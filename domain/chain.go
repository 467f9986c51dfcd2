package domain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// GenesisHash is the prevHash of a handoff's first event: derived from the
// handoff id, so a chain cannot be moved onto another handoff.
func GenesisHash(handoffID string) string {
	sum := sha256.Sum256([]byte("baton.handoff.v1:" + handoffID))
	return hex.EncodeToString(sum[:])
}

// canonicalEvent is what the hash covers, in this field order.
type canonicalEvent struct {
	HandoffID  string          `json:"handoffId"`
	Seq        uint64          `json:"seq"`
	Type       string          `json:"type"`
	Actor      string          `json:"actor"`
	RecordedAt string          `json:"recordedAt"`
	Data       json.RawMessage `json:"data"`
}

// Canonical renders an event deterministically: fixed field order, the time
// in RFC 3339 UTC with nanoseconds, and data with object keys sorted and no
// insignificant whitespace (numbers are kept as written).
func Canonical(handoffID string, seq uint64, typ, actor string, recordedAt time.Time, data []byte) ([]byte, error) {
	cd, err := CanonicalJSON(data)
	if err != nil {
		return nil, err
	}
	return json.Marshal(canonicalEvent{
		HandoffID: handoffID, Seq: seq, Type: typ, Actor: actor,
		RecordedAt: recordedAt.UTC().Format(time.RFC3339Nano), Data: cd,
	})
}

// CanonicalJSON re-encodes a JSON document with sorted keys and no
// insignificant whitespace. It refuses what has no single meaning: an
// object with a key twice (decoders disagree on which one counts, so the
// hash could cover one value while a fold reads another) and anything
// after the document.
func CanonicalJSON(data []byte) ([]byte, error) {
	if c, ok := canonicalFast(data); ok {
		return c, nil
	}
	c, _, err := CanonicalValue(data)
	return c, err
}

// CanonicalValue is CanonicalJSON that also returns the decoded document
// (objects as map[string]any, arrays as []any, numbers as json.Number; nil
// for a blank one), for callers with checks of their own to make on it.
// A key twice in one object is found by counting the keys in the text
// against the entries decoded; only such a document is walked token by
// token, to name the key (docs/benchmarks.md has the timing).
func CanonicalValue(data []byte) ([]byte, any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return []byte("null"), nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, fmt.Errorf("canonical JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("canonical JSON: data after the document")
	}
	if objectEntries(v) != objectKeys(data) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		_, err := strictValue(dec, 0)
		if err == nil {
			err = errors.New("a key appears twice in an object")
		}
		return nil, nil, fmt.Errorf("canonical JSON: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), v, nil
}

// objectKeys counts the object keys in data, valid JSON: the strings
// followed by a colon.
func objectKeys(data []byte) int {
	n := 0
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			continue
		}
		for i++; i < len(data) && data[i] != '"'; i++ {
			if data[i] == '\\' {
				i++
			}
		}
		j := i + 1
		for j < len(data) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\n' || data[j] == '\r') {
			j++
		}
		if j < len(data) && data[j] == ':' {
			n++
		}
	}
	return n
}

// objectEntries counts the entries of every object in v, a decoded
// document.
func objectEntries(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			n += 1 + objectEntries(x)
		}
	case []any:
		for _, x := range v {
			n += objectEntries(x)
		}
	}
	return n
}

// maxDepth bounds nesting as encoding/json's own decoder does: deeper
// documents are refused rather than walked (a tampered event must not
// exhaust the stack of the tool that reports it).
const maxDepth = 10000

// strictValue reads one JSON value token by token, refusing duplicate keys
// (CanonicalValue walks a document with it to name the key it has twice).
func strictValue(dec *json.Decoder, depth int) (any, error) {
	if depth >= maxDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				if _, dup := obj[k]; dup {
					return nil, fmt.Errorf("key %q appears twice in an object", k)
				}
				if obj[k], err = strictValue(dec, depth+1); err != nil {
					return nil, err
				}
			}
			_, err := dec.Token() // '}'
			return obj, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := strictValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token() // ']'
			return arr, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return tok, nil // string, json.Number, bool or nil
	}
}

// ChainHash is SHA-256(prevHash || canonical event), hex encoded; prevHash
// is hashed as its hex text, as auditors are told (docs/protocol.md).
func ChainHash(prevHash string, canonical []byte) string {
	h := sha256.New()
	h.Write([]byte(prevHash))
	h.Write(canonical)
	return hex.EncodeToString(h.Sum(nil))
}

// ChainBreak names the first event whose hash does not match.
type ChainBreak struct {
	HandoffID string
	Seq       uint64
	Type      string
	Reason    string
}

func (b *ChainBreak) Error() string {
	return fmt.Sprintf("handoff %s: event %d (%s): %s", b.HandoffID, b.Seq, b.Type, b.Reason)
}

// VerifyChain recomputes a handoff's chain and returns the first break.
func VerifyChain(handoffID string, events []Recorded) *ChainBreak {
	prev := GenesisHash(handoffID)
	for i, ev := range events {
		if ev.Seq != uint64(i)+1 {
			return &ChainBreak{handoffID, ev.Seq, ev.Type, fmt.Sprintf("seq %d where %d was expected", ev.Seq, i+1)}
		}
		if ev.PrevHash != prev {
			return &ChainBreak{handoffID, ev.Seq, ev.Type, "prevHash does not match the previous event's hash"}
		}
		c, err := Canonical(handoffID, ev.Seq, ev.Type, ev.Actor, ev.RecordedAt, ev.Data)
		if err != nil {
			return &ChainBreak{handoffID, ev.Seq, ev.Type, err.Error()}
		}
		if got := ChainHash(prev, c); got != ev.Hash {
			return &ChainBreak{handoffID, ev.Seq, ev.Type, "hash does not match the event's content"}
		}
		prev = ev.Hash
	}
	return nil
}
