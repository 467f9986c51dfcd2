package http

import (
	"errors"
	"net/http"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/projections"
)

// statusOf is the one place where an error's kind becomes a status code.
func statusOf(kind domain.Kind) int {
	switch kind {
	case domain.KindInvalid:
		return http.StatusUnprocessableEntity
	case domain.KindNotFound:
		return http.StatusNotFound
	case domain.KindConflict:
		return http.StatusConflict
	case domain.KindForbidden:
		return http.StatusForbidden
	case domain.KindUnauthorized:
		return http.StatusUnauthorized
	case domain.KindUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// problemFor renders any error as a problem document. Errors that are not
// the domain's are logged and answered without their text.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var de *domain.Error
	switch {
	case errors.As(err, &de):
		p := newProblem(r, statusOf(de.Kind), de.Code, de.Message)
		p.Fields = de.Fields
		p.Findings = de.Findings
		writeProblemDoc(w, p)
	case errors.Is(err, eventstore.ErrUnavailable):
		s.log.Error().Str("requestId", RequestID(r.Context())).Err(err).Msg("store unavailable")
		w.Header().Set("Retry-After", "1")
		writeProblem(w, r, http.StatusServiceUnavailable, "store_unavailable", "The event store did not answer; a write in flight may or may not have been recorded. Retry with the same Idempotency-Key (or the same body): a recorded write is answered from the ledger, not written twice.")
	case errors.Is(err, eventstore.ErrFailed), errors.Is(err, eventstore.ErrClosed), errors.Is(err, projections.ErrBehind):
		s.log.Error().Str("requestId", RequestID(r.Context())).Err(err).Msg("store unavailable")
		writeProblem(w, r, http.StatusServiceUnavailable, "store_unavailable", "The ledger store cannot take this request now; nothing was recorded. Retry with the same Idempotency-Key.")
	case errors.Is(err, r.Context().Err()) && r.Context().Err() != nil:
		writeProblem(w, r, 499, "client_closed_request", "The client went away.")
	default:
		s.log.Error().Str("requestId", RequestID(r.Context())).Err(err).Msg("request failed")
		writeProblem(w, r, http.StatusInternalServerError, "internal_error", "The server failed on this request; it has been logged.")
	}
}
