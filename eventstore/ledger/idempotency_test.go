package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

// FuzzIdemState reads a key's stream made of arbitrary events (a shared
// store may hold what another writer put there): it never panics, and an
// answer it finds can be written again: a real HTTP status, a body hash to
// match retries against.
func FuzzIdemState(f *testing.F) {
	started, _ := json.Marshal(idemStarted{Endpoint: "generate", BodyHash: "h1", RequestID: "r1", StartedAt: time.Unix(1_800_000_000, 0).UTC()})
	done, _ := json.Marshal(idemCompleted{Answer: Answer{Status: 200, ContentType: "application/json", Body: `{"ok":true}`, RequestID: "r1"}, BodyHash: "h1", CompletedAt: time.Unix(1_800_000_001, 0).UTC()})
	for _, s := range []struct {
		types string // one letter an event: s(tarted), c(ompleted), r(eleased), n (renewed), o(utput), x (other)
		a, b  []byte
	}{
		{"sc", started, done},
		{"c", done, nil},
		{"src", started, done},
		{"c", []byte(`{}`), nil},
		{"c", []byte(`{"status":0,"bodyHash":"h"}`), nil},
		{"c", []byte(`{"status":1000,"bodyHash":"h"}`), nil},
		{"sc", []byte(`{"bodyHash":""}`), []byte(`{"status":200}`)},
		{"xs", []byte(`null`), []byte(`[`)},
		{"sooo", []byte(`{"step":1,"bodyHash":"h1"}`), []byte(`{"step":2,"bodyHash":"h2"}`)},
		{"oooo", []byte(`{"step":1,"bodyHash":"h1"}`), []byte(`{"step":1,"bodyHash":"h1"}`)},
	} {
		f.Add(s.types, s.a, s.b)
	}
	typeOf := map[rune]string{'s': evIdemStarted, 'c': evIdemCompleted, 'r': evIdemReleased, 'n': evIdemRenewed, 'o': evIdemOutput, 'x': "Other"}
	f.Fuzz(func(t *testing.T, types string, a, b []byte) {
		var evs []eventstore.RecordedEvent
		for i, c := range []rune(types) {
			if i >= 16 {
				break
			}
			data := a
			if i%2 == 1 {
				data = b
			}
			evs = append(evs, eventstore.RecordedEvent{StreamID: "idem-t-x", Revision: uint64(i), EventData: eventstore.EventData{Type: typeOf[c], Data: data}})
		}
		st, completed, _, outputs := idemState(evs)
		for i, o := range outputs {
			if o.Step != i+1 || o.BodyHash == "" {
				t.Fatalf("output %d of %+v", i, outputs)
			}
		}
		if completed == nil {
			return
		}
		if completed.Status < 100 || completed.Status > 599 {
			t.Fatalf("an answer with status %d", completed.Status)
		}
		if completed.BodyHash == "" && (st == nil || st.BodyHash == "") {
			t.Fatalf("an answer with nothing to match a retry's body against: %+v", completed)
		}
	})
}

// Answers kept before bodies were compared as JSON carry only the byte
// hash: a byte-identical retry still replays them, another body is still
// refused. New answers keep the byte hash where those versions look for it.
func TestIdemLookupKeepsByteHashedAnswers(t *testing.T) {
	body := []byte(`{"type":"summarize","input":{"text":"x"}}`)
	h := BodyHashes("generate", body)
	if h.JSON == "" || h.JSON == h.Raw {
		t.Fatalf("a JSON body has no JSON hash: %+v", h)
	}
	done, _ := json.Marshal(idemCompleted{Answer: Answer{Status: 200, ContentType: "application/json", Body: `{"ok":true}`, RequestID: "r1"}, BodyHash: h.Raw, CompletedAt: time.Now().UTC()})
	evs := []eventstore.RecordedEvent{{StreamID: "idem-t-x", EventData: eventstore.EventData{Type: evIdemCompleted, Data: done}}}
	s := NewIdempotency(nil, time.Hour)
	if _, kept, _, _, err := s.lookup(evs, h, false); err != nil || kept == nil || kept.Status != 200 {
		t.Fatalf("byte-identical retry of an old answer: %+v, %v", kept, err)
	}
	// The same JSON written another way does not match an answer that has
	// no JSON hash (it was kept by a version that compared bytes).
	if _, _, _, _, err := s.lookup(evs, BodyHashes("generate", []byte(`{"input":{"text":"x"},"type":"summarize"}`)), false); domain.KindOf(err) != domain.KindInvalid {
		t.Fatalf("reordered body against a byte-hashed answer: %v", err)
	}
	if _, _, _, _, err := s.lookup(evs, BodyHashes("generate", []byte(`{"type":"summarize","input":{"text":"y"}}`)), false); domain.KindOf(err) != domain.KindInvalid {
		t.Fatalf("another body against an old answer: %v", err)
	}
}

// Bodies that are the same JSON for the handlers hash alike; bodies the
// handlers could read differently, or that are not JSON, fall back to
// their bytes.
func TestIdemBodyHashes(t *testing.T) {
	same := func(a, b string) bool {
		x, y := BodyHashes("generate", []byte(a)), BodyHashes("generate", []byte(b))
		return x.match(y.Raw, y.JSON)
	}
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{`{"a":1,"b":[1,2]}`, "{ \"b\" : [1, 2],\n \"a\": 1 }", true},
		{`{"a":1}`, `{"a":1.0}`, false}, // numbers as written
		{`{"a":"x"}`, `{"a":"y"}`, false},
		{`{"Type":"x","type":"summarize"}`, `{"type":"summarize","Type":"x"}`, false}, // encoding/json folds case: last one wins
		{`{"o":{"K":1,"\u212a":2}}`, `{"o":{"\u212a":2,"K":1}}`, false},               // the Kelvin sign folds to k
		{"", "null", false},
		{" ", "", false},
		{`not json`, `not json`, true},
		{`{"a":1,"a":1}`, `{"a":1, "a":1}`, false}, // duplicate keys: bytes
	} {
		if got := same(c.a, c.b); got != c.same {
			t.Errorf("%q and %q: same %v, want %v", c.a, c.b, got, c.same)
		}
	}
	big := []byte(`{"text":"` + strings.Repeat("x", canonicalMax) + `"}`)
	if h := BodyHashes("generate", big); h.JSON != "" {
		t.Fatal("a body over the cap was canonicalized")
	}
}

// canonicalOracle is what idemCanonical replaced, kept as its oracle:
// domain.CanonicalJSON (which domain's own fuzz test holds to the token
// walk), then a second decode to refuse keys equal under case folding,
// each rune folded through its whole orbit (foldKey's ASCII shortcut
// skipped).
func canonicalOracle(body []byte) ([]byte, bool) {
	if !utf8.Valid(body) || loneSurrogateOracle(body) {
		return nil, false // the handlers refuse such a body: no form to compare
	}
	c, err := domain.CanonicalJSON(body)
	if err != nil {
		return nil, false
	}
	// (The replaced code decoded numbers as float64 here, so a body with a
	// number past float64's range fell back to its bytes; numbers are
	// compared as written, so such a body has a canonical form too.)
	dec := json.NewDecoder(bytes.NewReader(c))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	fold := foldOrbits // every key through the orbits, ASCII ones too
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case map[string]any:
			seen := map[string]bool{}
			for k, x := range v {
				if seen[fold(k)] || !walk(x) {
					return false
				}
				seen[fold(k)] = true
			}
		case []any:
			for _, x := range v {
				if !walk(x) {
					return false
				}
			}
		}
		return true
	}
	return c, walk(v)
}

// loneSurrogateOracle reports a \u escape of half a surrogate pair with
// no other half, by a regular expression over escapes that an even run of
// backslashes (not themselves escaped) leads.
func loneSurrogateOracle(body []byte) bool {
	for _, m := range surrogateEscape.FindAllSubmatchIndex(body, -1) {
		if (m[3]-m[2])%2 == 1 {
			continue // the \ is itself escaped: \\ud800 is text
		}
		hi := body[m[4]:m[5]]
		lo := m[6] >= 0
		switch {
		case strings.ContainsAny(string(hi[3:4]), "89abAB") && !lo:
			return true
		case strings.ContainsAny(string(hi[3:4]), "cdefCDEF"):
			return true // a low half that no high half led
		}
	}
	return false
}

// surrogateEscape: the backslashes before an escape, the escape of a
// surrogate half, and a low half right after it.
var surrogateEscape = regexp.MustCompile(`(\\*)(\\u[dD][0-9a-fA-F]{3})(\\u[dD][c-fC-F][0-9a-fA-F]{2})?`)

// FuzzIdemCanonical: the one-decode canonical form is the oracle's, byte
// for byte, and refuses what it refuses.
func FuzzIdemCanonical(f *testing.F) {
	for _, s := range []string{
		`{"type":"summarize","input":{"text":"x"},"options":{"maxAttempts":2,"llm":{"mode":"cheap","maxCostUsd":0.5}}}`,
		`{"a":1,"a":1}`, `{"a":1,"\u0061":2}`, `{"Type":"x","type":"y"}`, `{"o":{"K":1,"\u212a":2}}`, `{"s":1,"\u017f":2}`,
		`{"a":[{"b":1,"b":2}]}`, `{"a":"b:c","d":"\"e\":"}`, `{"a" : 1 , "b":{"c" :[1,{"d":null}]}}`, `{"a":1} {"b":2}`, `{"a":1} x`,
		`{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `[1.0,1e2,-0,12345678901234567890]`, `"<&>"`, `null`, `[]`, `{}`, `{"":1,"":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(bytes.TrimSpace(body)) == 0 {
			return // BodyHashes keeps blank bodies off JSON (not the JSON null)
		}
		want, wantOK := canonicalOracle(body)
		got, ok := canonical(body)
		if ok != wantOK || (ok && string(got) != string(want)) {
			t.Fatalf("%q: got %q %v, the oracle %q %v", body, got, ok, want, wantOK)
		}
	})
}

// A key in flight on a shared store is retried after a second while its
// claim is renewed on time; once the claim has missed its renewal (its
// process died), after the time left on its lease, at most a minute: a
// dead claim was retried every second for its whole lease.
func TestIdemInFlightRetryAfterFollowsTheLease(t *testing.T) {
	h := BodyHashes("generate", []byte(`{"a":1}`))
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	started, _ := json.Marshal(idemStarted{Endpoint: "generate", BodyHash: h.Raw, BodyJSONHash: h.JSON, RequestID: "r1", StartedAt: start})
	evs := []eventstore.RecordedEvent{{StreamID: "idem-t-x", EventData: eventstore.EventData{Type: evIdemStarted, Data: started}}}
	s := NewIdempotency(nil, time.Hour)
	for _, c := range []struct {
		after time.Duration
		want  int
	}{
		{time.Second, 1},
		{3 * time.Minute, 1},                 // its renewal is due at 200 s
		{3*time.Minute + 50*time.Second, 1},  // and may be a little late
		{4 * time.Minute, 60},                // missed: 6 minutes left, at most a minute
		{9*time.Minute + 30*time.Second, 30}, // 30 s left
		{10*time.Minute - 200*time.Millisecond, 1},
	} {
		s.now = func() time.Time { return start.Add(c.after) }
		_, _, _, _, err := s.lookup(evs, h, false)
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != "idempotency_in_flight" || de.RetryAfter != c.want {
			t.Fatalf("%v into the lease: %v, want idempotency_in_flight after %d s", c.after, retryAfterOf(err), c.want)
		}
	}
	// A renewal counts from its own time.
	renewed, _ := json.Marshal(idemRenewed{RenewedAt: start.Add(3 * time.Minute)})
	evs = append(evs, eventstore.RecordedEvent{StreamID: "idem-t-x", Revision: 1, EventData: eventstore.EventData{Type: evIdemRenewed, Data: renewed}})
	s.now = func() time.Time { return start.Add(5 * time.Minute) }
	if _, _, _, _, err := s.lookup(evs, h, false); retryAfterOf(err) != "idempotency_in_flight after 1 s" {
		t.Fatalf("2 minutes after a renewal: %v", retryAfterOf(err))
	}
}

func retryAfterOf(err error) string {
	var de *domain.Error
	if !errors.As(err, &de) {
		return fmt.Sprint(err)
	}
	return fmt.Sprintf("%s after %d s", de.Code, de.RetryAfter)
}
