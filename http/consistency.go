package http

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/projections"
)

// Consistency tokens (docs/api.md): a write answers with the global
// position of its last event, and a read that names one is served once this
// replica's read models include it, so a client reads its own writes
// through any replica of a shared store.
const (
	// PositionHeader is on the answers of writes (contract creation and
	// callbacks, replays included) and of reads from the read models:
	// "<commit>/<prepare>".
	PositionHeader = "Baton-Position"
	// ReadAfterHeader on a read names a position the read must include.
	ReadAfterHeader = "Baton-Read-After"
)

// unknownPosition is a position the store could not tell (older KurrentDB
// servers report none on some reads: every bit set).
const unknownPosition = ^uint64(0)

// FormatPosition renders a position as a token.
func FormatPosition(p eventstore.Position) string {
	return strconv.FormatUint(p.Commit, 10) + "/" + strconv.FormatUint(p.Prepare, 10)
}

// ParsePosition reads a token made by FormatPosition.
func ParsePosition(s string) (eventstore.Position, error) {
	c, p, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return eventstore.Position{}, errors.New("want <commit>/<prepare>")
	}
	commit, err := strconv.ParseUint(c, 10, 64)
	if err != nil {
		return eventstore.Position{}, errors.New("commit is not an unsigned integer")
	}
	prepare, err := strconv.ParseUint(p, 10, 64)
	if err != nil {
		return eventstore.Position{}, errors.New("prepare is not an unsigned integer")
	}
	return eventstore.Position{Commit: commit, Prepare: prepare}, nil
}

// setPosition puts a token on an answer; a position the store did not tell
// leaves the header out.
func setPosition(w http.ResponseWriter, p eventstore.Position) {
	if p == eventstore.Start || p.Commit == unknownPosition {
		return
	}
	w.Header().Set(PositionHeader, FormatPosition(p))
}

// readAfter returns the position a read asked for (Start without the
// header).
func readAfter(r *http.Request) (eventstore.Position, error) {
	v := r.Header.Get(ReadAfterHeader)
	if v == "" {
		return eventstore.Start, nil
	}
	p, err := ParsePosition(v)
	if err != nil {
		return p, domain.Invalid("read", domain.FieldError{Pointer: "header:" + ReadAfterHeader, Code: "invalid_position",
			Message: "must be a position as a write answered it in " + PositionHeader + ": <commit>/<prepare> (" + err.Error() + ")"})
	}
	return p, nil
}

// waitReadable holds a read from the read models until they include every
// write committed before the read started (the store's head), for at most
// readWait: then 503 read_model_behind. A Baton-Read-After past that head
// is 409 position_ahead at once. The answer carries the position the read
// models have reached.
func (s *Server) waitReadable(w http.ResponseWriter, r *http.Request) error {
	after, err := readAfter(r)
	if err != nil {
		return err
	}
	head, err := s.store.Head(r.Context())
	if err != nil {
		if r.Context().Err() != nil {
			return err
		}
		s.log.Warn().Str("requestId", RequestID(r.Context())).Err(err).Msg("read: the store did not tell its head")
		w.Header().Set("Retry-After", "1")
		return domain.E("read", domain.KindUnavailable, "store_unavailable", "The event store did not answer; nothing was read. Retry.")
	}
	if head.Less(after) {
		// No write of this store answered it: waiting would end in a 503
		// that says retry, and every retry would wait again.
		return domain.E("read", domain.KindConflict, "position_ahead",
			"%s %s is past this store's newest event (%s): no write of this store answered it (a store restored from an older backup, or another deployment's token). Read without it, or with a position a write of this store answered in %s.", ReadAfterHeader, FormatPosition(after), FormatPosition(head), PositionHeader)
	}
	target := head // the position asked for is at or before it
	ctx, cancel := context.WithTimeout(r.Context(), readWait)
	defer cancel()
	if err := s.proj.WaitFor(ctx, target); err != nil {
		if r.Context().Err() != nil || !errors.Is(err, projections.ErrBehind) {
			return err
		}
		s.log.Warn().Str("requestId", RequestID(r.Context())).Err(err).Msg("read: read models behind")
		w.Header().Set("Retry-After", "1")
		return domain.E("read", domain.KindUnavailable, "read_model_behind",
			"this replica's read models did not reach position %s within %v; retry, or read through another replica", FormatPosition(target), readWait)
	}
	setPosition(w, s.proj.Checkpoint())
	return nil
}
