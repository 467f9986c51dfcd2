package http

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

// Idempotency-Key on POST /v1/generate, Stripe's way: the first request's
// final answer (success or error) is kept in the event store and replayed
// byte for byte, with Idempotent-Replayed: true, to any later request with
// the same key and body; the same key with another body is a 422; a
// request while the first is still running is a 409. Keys are per tenant
// and kept for the retention (24 hours by default).
//
// One stream per key, idem-<tenant>-<sha256(key)>: IdempotencyStarted is
// appended with "no stream" (or at the revision of an expired entry), so
// of concurrent requests exactly one runs; IdempotencyCompleted holds the
// answer.
//
// Only final answers are kept: 2xx and 4xx other than 429. A 429 or a 5xx
// (an upstream failing or overloaded, the store unavailable, an internal
// error) says "try again"; kept, it would answer every retry with the same
// failure for the whole retention, and SDKs retry those with the same key.
// Such an answer is sent but the key is freed (IdempotencyReleased on a
// shared store), so the retry runs. A handler that panics frees it too.

// DefaultIdempotencyRetention is how long a key is kept.
const DefaultIdempotencyRetention = 24 * time.Hour

// idemLease bounds how long a started request holds its key: a process
// that died mid-request leaves a Started event with no Completed; after
// the lease another request may take the key over.
var idemLease = 10 * time.Minute

const (
	evIdemStarted   = "IdempotencyStarted"
	evIdemCompleted = "IdempotencyCompleted"
	evIdemReleased  = "IdempotencyReleased"
)

// idemFinal reports whether an answer is kept for the key's retries.
func idemFinal(status int) bool {
	return status < 500 && status != http.StatusTooManyRequests
}

type idemStarted struct {
	Endpoint     string    `json:"endpoint"`
	BodyHash     string    `json:"bodyHash"`               // of the body's bytes
	BodyJSONHash string    `json:"bodyJsonHash,omitempty"` // of its canonical JSON, when it has one
	RequestID    string    `json:"requestId"`
	StartedAt    time.Time `json:"startedAt"`
}

type idemCompleted struct {
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
	Body        string `json:"body"` // the answer's bytes (JSON text)
	Location    string `json:"location,omitempty"`
	RetryAfter  string `json:"retryAfter,omitempty"`
	RequestID   string `json:"requestId"`
	// Set when no Started event holds them (the claim was in memory).
	BodyHash     string    `json:"bodyHash,omitempty"`
	BodyJSONHash string    `json:"bodyJsonHash,omitempty"`
	CompletedAt  time.Time `json:"completedAt"`
}

func idemStream(tenant, key string) string {
	sum := sha256.Sum256([]byte(key))
	return "idem-" + tenant + "-" + hex.EncodeToString(sum[:16])
}

// recorder keeps a whole answer so it can be stored before it is sent.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

func (s *Server) withIdempotency(endpoint string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			h(w, r)
			return
		}
		if err := s.checkIdempotencyKey("idempotency."+endpoint, key); err != nil {
			s.writeError(w, r, err)
			return
		}
		body, err := readBody(w, r, s.maxBody)
		if err != nil {
			s.writeDecodeError(w, r, err)
			return
		}
		hashes := idemBodyHashes(endpoint, body)
		p := principalOf(r.Context())
		stream := idemStream(p.Tenant, key)
		ctx := r.Context()

		// Claim the key. On a store only this process writes (the embedded
		// one), every request for the key comes here, so the claim is held
		// in memory; on a shared store (KurrentDB, several replicas) it is
		// an append that exactly one of racing requests wins.
		var expected eventstore.ExpectedRevision
		release := func() {} // frees an in-memory claim once the answer is stored
		if exclusiveStore(s.store) {
			if other, busy := s.idemInFlight.LoadOrStore(stream, hashes); busy {
				o := other.(idemHashes)
				idemBusy(w, r, !hashes.match(o.raw, o.json))
				return
			}
			released := false
			release = func() {
				if !released {
					released = true
					s.idemInFlight.Delete(stream)
				}
			}
			defer release()
			evs, err := eventstore.ReadWholeStream(ctx, s.store, stream)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			var answered bool
			if expected, answered = s.idemLookup(w, r, evs, hashes); answered {
				return
			}
		} else {
			for try := 0; ; try++ {
				if try == 5 {
					idemBusy(w, r, false)
					return
				}
				evs, err := eventstore.ReadWholeStream(ctx, s.store, stream)
				if err != nil {
					s.writeError(w, r, err)
					return
				}
				exp, answered := s.idemLookup(w, r, evs, hashes)
				if answered {
					return
				}
				data, _ := json.Marshal(idemStarted{Endpoint: endpoint, BodyHash: hashes.raw, BodyJSONHash: hashes.json, RequestID: RequestID(ctx), StartedAt: time.Now().UTC().Truncate(time.Microsecond)})
				res, err := s.store.Append(ctx, stream, exp, eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: evIdemStarted, Data: data,
					Metadata: eventstore.Metadata{Tenant: p.Tenant, Actor: p.Actor(), RequestID: RequestID(ctx), SchemaVersion: 1}})
				if errors.Is(err, eventstore.ErrConflict) {
					continue // someone else started or finished: look again
				}
				if err != nil {
					s.writeError(w, r, err)
					return
				}
				expected = eventstore.Revision(res.NextRevision)
				break
			}
		}
		// The request runs to its end even if the client leaves, so that
		// its answer is kept for the retry.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), idemLease)
		defer cancel()
		rec := &recorder{header: http.Header{}}
		r2 := r.WithContext(rctx)
		r2.Body = io.NopCloser(bytes.NewReader(body))
		meta := eventstore.Metadata{Tenant: p.Tenant, Actor: p.Actor(), RequestID: RequestID(ctx), SchemaVersion: 1}
		// free lets the next request with the key run: in memory, or on a
		// shared store with an event after the Started one.
		free := func() {
			if !exclusiveStore(s.store) {
				if _, err := s.store.Append(rctx, stream, expected, eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: evIdemReleased,
					Data: []byte(`{}`), Metadata: meta}); err != nil {
					s.log.Error().Str("requestId", RequestID(ctx)).Err(err).Msg("idempotency key not released; it frees itself after the lease")
				}
			}
			release()
		}
		func() {
			defer func() {
				if v := recover(); v != nil {
					free()
					panic(v)
				}
			}()
			h(rec, r2)
		}()
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		if idemFinal(rec.status) {
			// The answer is kept before it is sent: whoever got it, a
			// retry gets it too.
			done := idemCompleted{Status: rec.status, ContentType: rec.header.Get("Content-Type"), Body: rec.body.String(),
				Location: rec.header.Get("Location"), RetryAfter: rec.header.Get("Retry-After"),
				RequestID: RequestID(ctx), BodyHash: hashes.raw, BodyJSONHash: hashes.json, CompletedAt: time.Now().UTC().Truncate(time.Microsecond)}
			data, _ := json.Marshal(done)
			if _, err := s.store.Append(rctx, stream, expected, eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: evIdemCompleted, Data: data,
				Metadata: meta}); err != nil {
				// The answer still goes out; a retry runs again (after the
				// lease, on a shared store).
				s.log.Error().Str("requestId", RequestID(ctx)).Err(err).Msg("idempotent answer not stored")
			}
			release() // a retry from now on reads the stored answer
		} else {
			free() // a retry runs again
		}
		for k, vs := range rec.header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.Header().Set("Content-Length", strconv.Itoa(rec.body.Len()))
		w.WriteHeader(rec.status)
		w.Write(rec.body.Bytes())
	}
}

// idemHashes name a request body for comparing it with the first request
// of its key: the hash of its bytes, and of its canonical JSON when it has
// one (keys sorted, no insignificant space). A JSON body is compared as
// JSON, as Stripe compares parameters, so a retry from a client whose
// encoder orders keys differently is the same request. The byte hash stays
// in bodyHash, where versions before the JSON comparison look for it, so a
// byte-identical retry that reaches one of those (a rolling deploy) is still
// the same request there.
type idemHashes struct{ raw, json string }

// match reports whether a body stored with hashes raw and canon (canon ""
// for none) is this one.
func (h idemHashes) match(raw, canon string) bool {
	return raw == h.raw || (canon != "" && canon == h.json)
}

// idemCanonicalMax bounds the bodies compared as JSON: canonicalizing walks
// every token, and a key holder must not buy much CPU with one header.
// Larger bodies are compared byte for byte.
const idemCanonicalMax = 64 << 10

func idemBodyHashes(endpoint string, body []byte) idemHashes {
	sum := sha256.Sum256(body)
	h := idemHashes{raw: endpoint + ":" + hex.EncodeToString(sum[:])}
	if len(body) > idemCanonicalMax || len(bytes.TrimSpace(body)) == 0 {
		return h // an empty body is not the JSON null
	}
	c, ok := idemCanonical(body)
	if !ok {
		return h
	}
	sum = sha256.Sum256(c)
	h.json = endpoint + ":json:" + hex.EncodeToString(sum[:])
	return h
}

// idemCanonical returns body's canonical JSON (domain.CanonicalJSON's),
// or false when it has none or when an object in it has two keys that
// encoding/json would take for the same field.
func idemCanonical(body []byte) ([]byte, bool) {
	c, v, err := domain.CanonicalValue(body)
	if err != nil || !foldDistinct(v) {
		return nil, false
	}
	return c, true
}

// foldDistinct reports whether no object in v, a decoded JSON value, has
// two keys that encoding/json would take for the same field (it matches
// names ignoring case: {"Type":"a","type":"b"} decodes by the order of its
// keys, so two orders of it are two requests).
func foldDistinct(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		seen := make(map[string]struct{}, len(v))
		for k, x := range v {
			f := foldKey(k)
			if _, dup := seen[f]; dup || !foldDistinct(x) {
				return false
			}
			seen[f] = struct{}{}
		}
	case []any:
		for _, x := range v {
			if !foldDistinct(x) {
				return false
			}
		}
	}
	return true
}

// foldKey maps k to one representative of the keys equal to it under
// Unicode simple case folding (what strings.EqualFold compares): each rune
// becomes the smallest rune of its folding orbit. For ASCII that is the
// upper-case letter (the orbits of k and s hold non-ASCII runes, but above
// the ASCII letters).
func foldKey(k string) string {
	ascii, upper := true, true
	for i := 0; i < len(k); i++ {
		c := k[i]
		ascii = ascii && c < utf8.RuneSelf
		upper = upper && !('a' <= c && c <= 'z')
	}
	if ascii {
		if upper {
			return k
		}
		return strings.ToUpper(k)
	}
	return foldOrbits(k)
}

// foldOrbits is foldKey rune by rune through each rune's whole orbit.
func foldOrbits(k string) string {
	b := make([]rune, 0, len(k))
	for _, r := range k {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b = append(b, m)
	}
	return string(b)
}

// exclusiveStore reports whether only this process writes the store.
func exclusiveStore(st eventstore.Store) bool {
	x, ok := st.(eventstore.Exclusive)
	return ok && x.Exclusive()
}

// idemBusy answers a request whose key another request holds: 422 when
// the bodies differ, else 409 (retry for the answer).
func idemBusy(w http.ResponseWriter, r *http.Request, otherBody bool) {
	if otherBody {
		writeProblem(w, r, http.StatusUnprocessableEntity, "idempotency_key_reused",
			"This Idempotency-Key was used with a different request body; use a new key for a new request.")
		return
	}
	w.Header().Set("Retry-After", "1")
	writeProblem(w, r, http.StatusConflict, "idempotency_in_flight",
		"A request with this Idempotency-Key is still being processed; retry after it finishes to get its answer.")
}

// idemLookup reads a key's stream: a live entry is answered (the replay,
// 422 for another body, 409 while it runs) and answered is true; else
// expected is where a new entry goes (no stream, or after an expired one).
func (s *Server) idemLookup(w http.ResponseWriter, r *http.Request, evs []eventstore.RecordedEvent, hashes idemHashes) (expected eventstore.ExpectedRevision, answered bool) {
	if len(evs) == 0 {
		return eventstore.NoStream(), false
	}
	started, completed, at := idemState(evs)
	fresh := false
	switch {
	case completed != nil:
		fresh = time.Since(completed.CompletedAt) < s.idemRetention
	case started != nil:
		fresh = time.Since(at) < idemLease
	}
	if !fresh {
		return eventstore.Revision(evs[len(evs)-1].Revision), false // expired: take the key over
	}
	raw, canon := "", ""
	if started != nil {
		raw, canon = started.BodyHash, started.BodyJSONHash
	} else if completed != nil {
		raw, canon = completed.BodyHash, completed.BodyJSONHash
	}
	if raw != "" && !hashes.match(raw, canon) {
		idemBusy(w, r, true)
		return eventstore.ExpectedRevision{}, true
	}
	if completed == nil {
		idemBusy(w, r, false)
		return eventstore.ExpectedRevision{}, true
	}
	replayIdem(w, completed)
	return eventstore.ExpectedRevision{}, true
}

// replayIdem writes a kept answer again, marked as a replay.
func replayIdem(w http.ResponseWriter, completed *idemCompleted) {
	w.Header().Set("Content-Type", completed.ContentType)
	if completed.Location != "" {
		w.Header().Set("Location", completed.Location)
	}
	if completed.RetryAfter != "" {
		w.Header().Set("Retry-After", completed.RetryAfter)
	}
	w.Header().Set("Idempotent-Replayed", "true")
	w.Header().Set("Original-Request-Id", completed.RequestID)
	w.Header().Set("Content-Length", strconv.Itoa(len(completed.Body)))
	w.WriteHeader(completed.Status)
	io.WriteString(w, completed.Body)
}

// idemState reads a key's stream: the last Started, the Completed that
// follows it (if any), and when the last Started began.
func idemState(evs []eventstore.RecordedEvent) (*idemStarted, *idemCompleted, time.Time) {
	var st *idemStarted
	var done *idemCompleted
	var at time.Time
	for _, ev := range evs {
		switch ev.Type {
		case evIdemStarted:
			var x idemStarted
			if json.Unmarshal(ev.Data, &x) == nil {
				st, done, at = &x, nil, x.StartedAt
			}
		case evIdemCompleted:
			// An answer that could not be written again (no status an
			// HTTP answer can carry, no body hash to match a retry
			// against) is not one: the key is not taken by it.
			var x idemCompleted
			if json.Unmarshal(ev.Data, &x) == nil && x.Status >= 100 && x.Status <= 599 && (st != nil && st.BodyHash != "" || x.BodyHash != "") {
				done = &x
			}
		case evIdemReleased:
			st, done = nil, nil // the key is free again
		}
	}
	return st, done, at
}
