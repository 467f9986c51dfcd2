package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/ledger"
)

// Idempotency-Key on POST /v1/generate and /v1/agent-plans, Stripe's way:
// the first request's final answer is kept (eventstore/ledger's
// Idempotency) and written again, with Idempotent-Replayed: true, to any
// later request with the same key and body. docs/api.md has the rules.

// idemFinal reports whether an answer is kept for the key's retries: a 429
// or a 5xx says "try again", and kept it would answer every retry with the
// same failure for the whole retention.
func idemFinal(status int) bool {
	return status < 500 && status != http.StatusTooManyRequests
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
		key, err := s.idempotencyKey("idempotency."+endpoint, r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if key == "" {
			h(w, r)
			return
		}
		body, err := readBody(w, r, s.maxBody)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ctx := r.Context()
		// On a shared store the claim is appended only before the
		// request's first write (takeKey): a request refused before it
		// appends nothing, not a claim and its release.
		claim, kept, err := s.ledger.Idempotency.Check(ctx, callOf(r), endpoint, key, body)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if kept != nil {
			replayIdem(w, kept)
			return
		}
		// The request runs to its end even if the client leaves, so that
		// its answer is kept for the retry. Where another replica may take
		// the key over once its lease runs out, the lease is renewed while
		// the request runs, and the request ends if a renewal fails for a
		// whole lease (a retry may then run it again): it was cut at the
		// lease, 10 minutes, however long the call had to run.
		rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
		defer cancel(nil)
		// A stop still ends it after its grace, as it ends a request
		// without a key (503 shutting_down, its model calls billed):
		// left running, the process ended in the middle of its call.
		if stop, ok := ctx.Value(stopKey{}).(context.Context); ok {
			defer context.AfterFunc(stop, func() { cancel(context.Cause(stop)) })()
		}
		if claim.Leased() {
			go claim.Hold(rctx, func(err error) {
				s.log.Error().Str("requestId", RequestID(ctx)).Err(err).Msg("idempotency key's lease lost; the request is ended")
				cancel(err)
			})
		}
		if st := stateOf(ctx); st != nil {
			st.claim = claim
		}
		rec := &recorder{header: http.Header{}}
		r2 := r.WithContext(rctx)
		r2.Body = io.NopCloser(bytes.NewReader(body))
		func() {
			defer func() {
				if v := recover(); v != nil {
					s.releaseIdem(rctx, claim, true)
					panic(v)
				}
			}()
			h(rec, r2)
		}()
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		if st := stateOf(rctx); idemFinal(rec.status) && (st == nil || !st.unkept && (rec.status < 400 || st.ran)) {
			// The answer is kept before it is sent: whoever got it, a
			// retry gets it too.
			answer := ledger.Answer{Status: rec.status, ContentType: rec.header.Get("Content-Type"), Body: rec.body.String(),
				Location: rec.header.Get("Location"), RetryAfter: rec.header.Get("Retry-After"), RequestID: RequestID(ctx)}
			if first := rec.header.Get("Original-Request-Id"); first != "" {
				answer.RequestID = first // the answer of an earlier request of the key, found made
			}
			kctx, kcancel := keyContext(rctx)
			defer kcancel()
			err := claim.Complete(kctx, answer)
			if errors.Is(err, eventstore.ErrInvalidEvent) {
				// Too large for an event: a retry is told so rather than
				// run (and billed) again.
				if err = claim.Complete(kctx, answerNotKept(r, answer)); errors.Is(err, eventstore.ErrInvalidEvent) {
					s.releaseIdem(rctx, claim, true) // still refused: the key must not stay claimed
				}
			}
			if err != nil {
				// The answer still goes out; the key stays held while
				// its write is tried again (ledger.Claim.Complete), if
				// it is.
				msg := "idempotent answer not stored yet; trying again"
				if !ledger.WrittenLater(err) {
					msg = "idempotent answer not stored; not tried again"
				}
				s.log.Error().Str("requestId", RequestID(ctx)).Err(err).Msg(msg)
			}
		} else {
			// A retry runs again; after a 5xx what the request made may
			// have been written, and the retry finds it (Abandon).
			s.releaseIdem(rctx, claim, rec.status >= 500)
		}
		for k, vs := range rec.header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.Header().Set("Content-Length", strconv.Itoa(rec.body.Len()))
		w.WriteHeader(rec.status)
		writeBounded(w, rec.body.Bytes()) // under the deadline a large answer has without a key
	}
}

// takeKey claims the request's Idempotency-Key before its first write
// that is not a ledger command (a model call); the ledger's own writes
// claim it through callOf. False: another request took the key, and the
// answer is written.
func (s *Server) takeKey(w http.ResponseWriter, r *http.Request) bool {
	if claim := claimOf(r.Context()); claim != nil {
		if err := claim.TakeFor(r.Context(), stateOf(r.Context()).target); err != nil {
			s.writeError(w, r, err)
			return false
		}
	}
	return true
}

// claimOf is the claim of the request's Idempotency-Key, nil when it was
// sent without one: the one test of whether a request holds a key.
func claimOf(ctx context.Context) *ledger.Claim {
	if st := stateOf(ctx); st != nil {
		return st.claim
	}
	return nil
}

// stopKey holds, in a request's context, the context a stop cancels.
type stopKey struct{}

// WithStop marks ctx, the context every request descends from, as the one
// a stop cancels (with ErrShuttingDown once its grace ends), so that the
// work a request goes on with when its client leaves (a request with an
// Idempotency-Key) still ends with the stop.
func WithStop(ctx context.Context) context.Context {
	return context.WithValue(ctx, stopKey{}, ctx)
}

// keyContext is the context a key is kept or freed on once its request
// is done: the request's own may have been ended (a stop after its grace,
// a lost lease), and an append on it failed, leaving the key taken on a
// shared store until its lease ran out (10 minutes of 409s for the retry
// a 503 shutting_down asks for).
func keyContext(rctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(rctx), storeTimeout)
}

func (s *Server) releaseIdem(ctx context.Context, claim *ledger.Claim, failed bool) {
	ctx, cancel := keyContext(ctx)
	defer cancel()
	free := claim.Release
	if failed {
		free = claim.Abandon
	}
	if err := free(ctx); err != nil {
		msg := "idempotency key not released yet; trying again"
		if !ledger.WrittenLater(err) {
			msg = "idempotency key not released; not tried again"
		}
		s.log.Error().Str("requestId", RequestID(ctx)).Err(err).Msg(msg)
	}
}

// markResumed marks the answer of a keyed create that found what it creates
// made by an earlier request of its key, which kept no answer (it died
// between the two appends): this is that request's answer, a replay.
func markResumed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Idempotent-Replayed", "true")
	if claim := claimOf(r.Context()); claim != nil {
		if _, first := claim.Resume(); first != "" {
			w.Header().Set("Original-Request-Id", first)
		}
	}
}

// replayIdem writes a kept answer again, marked as a replay.
// answerNotKept is what a retry gets in place of an answer too large to keep: a
// 409 saying the request ran, and what it answered.
func answerNotKept(r *http.Request, a ledger.Answer) ledger.Answer {
	p := newProblem(r, http.StatusConflict, "idempotency_answer_not_kept", fmt.Sprintf(
		"The request with this Idempotency-Key ran (request %s answered %d), but its answer of %d bytes was too large to keep for a retry; it was sent to that request only. Send a new key to run it again.",
		a.RequestID, a.Status, len(a.Body)))
	body, _ := json.Marshal(p)
	return ledger.Answer{Status: http.StatusConflict, ContentType: "application/problem+json", Body: string(body), RequestID: a.RequestID}
}

func replayIdem(w http.ResponseWriter, kept *ledger.Answer) {
	w.Header().Set("Content-Type", kept.ContentType)
	if kept.Location != "" {
		w.Header().Set("Location", kept.Location)
	}
	if kept.RetryAfter != "" {
		w.Header().Set("Retry-After", kept.RetryAfter)
	}
	w.Header().Set("Idempotent-Replayed", "true")
	w.Header().Set("Original-Request-Id", kept.RequestID)
	w.Header().Set("Content-Length", strconv.Itoa(len(kept.Body)))
	w.WriteHeader(kept.Status)
	writeBounded(w, []byte(kept.Body))
}
