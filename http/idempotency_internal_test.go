package http

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/batonhq/baton/eventstore"
)

// FuzzIdemState reads a key's stream made of arbitrary events (a shared
// store may hold what another writer put there): it never panics, and an
// answer it finds can be written again: a real HTTP status, a body hash to
// match retries against.
func FuzzIdemState(f *testing.F) {
	started, _ := json.Marshal(idemStarted{Endpoint: "generate", BodyHash: "h1", RequestID: "r1", StartedAt: time.Unix(1_800_000_000, 0).UTC()})
	done, _ := json.Marshal(idemCompleted{Status: 200, ContentType: "application/json", Body: `{"ok":true}`, RequestID: "r1", BodyHash: "h1", CompletedAt: time.Unix(1_800_000_001, 0).UTC()})
	for _, s := range []struct {
		types string // one letter an event: s(tarted), c(ompleted), r(eleased), x (other)
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
	} {
		f.Add(s.types, s.a, s.b)
	}
	typeOf := map[rune]string{'s': evIdemStarted, 'c': evIdemCompleted, 'r': evIdemReleased, 'x': "Other"}
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
		st, completed, _ := idemState(evs)
		if completed == nil {
			return
		}
		if completed.Status < 100 || completed.Status > 599 {
			t.Fatalf("an answer with status %d", completed.Status)
		}
		if completed.BodyHash == "" && (st == nil || st.BodyHash == "") {
			t.Fatalf("an answer with nothing to match a retry's body against: %+v", completed)
		}
		replayIdem(httptest.NewRecorder(), completed)
	})
}

// Answers kept before bodies were compared as JSON carry the byte hash: a
// byte-identical retry still replays them, another body is still refused.
func TestIdemLookupKeepsByteHashedAnswers(t *testing.T) {
	body := []byte(`{"type":"summarize","input":{"text":"x"}}`)
	hash, raw := idemBodyHashes("generate", body)
	if hash == raw {
		t.Fatal("a JSON body is hashed as bytes")
	}
	done, _ := json.Marshal(idemCompleted{Status: 200, ContentType: "application/json", Body: `{"ok":true}`, RequestID: "r1", BodyHash: raw, CompletedAt: time.Now().UTC()})
	evs := []eventstore.RecordedEvent{{StreamID: "idem-t-x", EventData: eventstore.EventData{Type: evIdemCompleted, Data: done}}}
	s := &Server{idemRetention: time.Hour}
	w := httptest.NewRecorder()
	if _, answered := s.idemLookup(w, httptest.NewRequest("POST", "/v1/generate", nil), evs, hash, raw); !answered || w.Code != 200 || w.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("byte-identical retry of an old answer: answered %v, %d %s", answered, w.Code, w.Body)
	}
	otherHash, otherRaw := idemBodyHashes("generate", []byte(`{"type":"summarize","input":{"text":"y"}}`))
	w = httptest.NewRecorder()
	if _, answered := s.idemLookup(w, httptest.NewRequest("POST", "/v1/generate", nil), evs, otherHash, otherRaw); !answered || w.Code != 422 {
		t.Fatalf("another body against an old answer: answered %v, %d %s", answered, w.Code, w.Body)
	}
	if h, r := idemBodyHashes("generate", []byte("not json")); h != r {
		t.Fatal("a body that is not JSON is not compared byte for byte")
	}
}
