package http

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/translog"
)

// The transparency log's routes (docs/audit.md). The checkpoint, the
// verifier key and the hash tiles hold only hashes and counts: they are
// served without a key, so anyone can mirror and check the tree. Entry
// bundles hold every tenant's events: an admin key reads them. Receipts
// are a handoff's, read like its ledger.
func (s *Server) logRoutes(rt *mux.Router, l *translog.Log) {
	s.tlog = l
	rt.HandleFunc("/v1/log/checkpoint", s.logCheckpoint).Methods(http.MethodGet)
	rt.HandleFunc("/v1/log/key", s.logKey).Methods(http.MethodGet)
	rt.HandleFunc("/v1/log/tile/entries/{rest:.+}", s.withKey(adminOnly, s.logTile)).Methods(http.MethodGet)
	rt.HandleFunc("/v1/log/tile/{rest:.+}", s.logTile).Methods(http.MethodGet)
	rt.HandleFunc("/v1/log/cosignature", s.addCosignature).Methods(http.MethodPost)
	rt.HandleFunc("/v1/executions/{handoffId}/receipts", s.withKey(anyKey, s.getReceipts)).Methods(http.MethodGet)
}

// addCosignature takes a witness's cosigned copy of a checkpoint (C2SP
// tlog-cosignature). It needs no key: only the lines of the witnesses
// the server is configured with, verifying over a checkpoint it has
// taken, are kept.
func (s *Server) addCosignature(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, 64<<10) // a cosigned checkpoint is a few hundred bytes
	if err != nil {
		s.writeError(w, r, err) // 413 over the limit; 400 unreadable_body for a body that stopped coming
		return
	}
	// As every body: JSON that is not JSON is a 400, the wrong shape a 422
	// naming the field, unknown fields ignored.
	var in struct {
		Checkpoint *string `json:"checkpoint"`
	}
	if err := decodeBody(body, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	if in.Checkpoint == nil || *in.Checkpoint == "" {
		s.writeError(w, r, domain.Invalid("log.cosignature", domain.FieldError{Pointer: "/checkpoint", Code: "required",
			Message: "the witness's cosigned checkpoint, as a string (C2SP tlog-cosignature)"}))
		return
	}
	n, err := s.tlog.AddCosignatures(r.Context(), []byte(*in.Checkpoint))
	switch {
	case errors.Is(err, translog.ErrNotLatest):
		s.writeError(w, r, domain.E("log.cosignature", domain.KindConflict, "checkpoint_unknown", "The cosigned checkpoint is not one this log has signed and taken."))
		return
	case errors.Is(err, translog.ErrNoWitnesses):
		s.writeError(w, r, domain.E("log.cosignature", domain.KindNotFound, "no_witnesses", "This server takes no cosignatures: no witnesses are configured (--log-witnesses)."))
		return
	case errors.Is(err, translog.ErrInvalidCosignature):
		s.writeError(w, r, domain.E("log.cosignature", domain.KindInvalid, "invalid_cosignature", "%s", err.Error()))
		return
	case err != nil:
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"added": n})
}

func (s *Server) logCheckpoint(w http.ResponseWriter, r *http.Request) {
	signed, _ := s.tlog.Checkpoint()
	if n, f := s.tlog.Forks(); signed == nil && n > 0 {
		// Signed checkpoints exist, and none matches the tree this replica
		// built from the store: the store's events changed after they
		// were signed (or the log file did). Not "nothing signed yet".
		s.writeError(w, r, domain.E("log.checkpoint", domain.KindInternal, "log_forked",
			"The transparency log has %d signed checkpoints that do not match the log this server built from its store (the last: %s). The store's events changed after they were signed; run `baton log verify` against a kept checkpoint, and see docs/audit.md.", n, f))
		return
	}
	if signed == nil {
		s.writeError(w, r, domain.E("log.checkpoint", domain.KindNotFound, "no_checkpoint",
			"The transparency log has no signed checkpoint yet: no replica holding the signing key has signed one."))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=1") // it moves every interval
	w.Write(signed)
}

func (s *Server) logKey(w http.ResponseWriter, r *http.Request) {
	k := s.tlog.VerifierKey()
	if k == "" {
		s.writeError(w, r, domain.E("log.key", domain.KindNotFound, "no_log_key", "This server has no transparency log key."))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write([]byte(k + "\n"))
}

func (s *Server) logTile(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path[len("/v1/log/"):]
	p, err := translog.ParseTilePath(path)
	if err != nil {
		s.writeError(w, r, domain.E("log.tile", domain.KindNotFound, "no_tile", "%s is not a tile path of this log (C2SP tlog-tiles).", path))
		return
	}
	data, err := s.tlog.Tile(p)
	switch {
	case errors.Is(err, translog.ErrNotFound):
		s.writeError(w, r, domain.E("log.tile", domain.KindNotFound, "no_tile", "The log has no %s: it holds %d entries.", path, s.tlog.Size()))
		return
	case errors.Is(err, translog.ErrEntryTooLarge):
		s.writeError(w, r, domain.E("log.tile", domain.KindInvalid, "entry_too_large",
			"An entry of %s is longer than an entry bundle can carry (65,535 bytes); read it from the handoff's ledger.", path))
		return
	case err != nil:
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	// A tile never changes: a full one is final, and a partial one is
	// the first W hashes of the full one to come. Entry bundles hold
	// every tenant's events and are read with an admin key: a shared
	// cache (a CDN keyed on the URL) must not keep them for anyone else.
	scope := "public"
	if p.Entries {
		scope = "private"
		w.Header().Set("Vary", "Authorization, X-Api-Key, Accept-Encoding")
	}
	if p.Full() {
		w.Header().Set("Cache-Control", scope+", max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", scope+", max-age=3600")
	}
	// tlog-tiles: entry bundles SHOULD be compressed at the HTTP layer.
	// Only for a client that asks, so a plain curl still gets the bytes;
	// hash tiles are random bytes, not worth it.
	if p.Entries && acceptsGzip(r.Header.Values("Accept-Encoding")) {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		zw.Write(data)
		zw.Close()
		data = buf.Bytes()
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	}
	w.Write(data)
}

// acceptsGzip reads Accept-Encoding as RFC 9110 (12.5.3) does: gzip (or
// x-gzip) listed with a weight above 0, or "*" above 0 with gzip not
// listed.
func acceptsGzip(values []string) bool {
	named, star := -1, -1 // -1 not listed, 0 refused, 1 accepted
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(item, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			ok := 1
			for _, prm := range strings.Split(params, ";") {
				k, val, _ := strings.Cut(prm, "=")
				if strings.EqualFold(strings.TrimSpace(k), "q") {
					if q, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err != nil || !(q > 0) {
						ok = 0
					}
				}
			}
			switch coding {
			case "gzip", "x-gzip":
				if named != 1 {
					named = ok
				}
			case "*":
				star = ok
			}
		}
	}
	if named >= 0 {
		return named == 1
	}
	return star == 1
}

// waitLog waits, at most readWait, until the log has read the feed to
// target. A log further behind (rebuilding, halted) answers what it has.
func (s *Server) waitLog(ctx context.Context, target eventstore.Position) {
	if !s.tlog.Position().Less(target) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	// Changed tells growth only; events the log skips move its position
	// alone.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for s.tlog.Position().Less(target) {
		select {
		case <-s.tlog.Changed():
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// receiptsAnswer is GET /v1/executions/{handoffId}/receipts.
type receiptsAnswer struct {
	HandoffID string             `json:"handoffId"`
	LogSize   int64              `json:"logSize"`
	Receipts  []translog.Receipt `json:"receipts"`
}

func (s *Server) getReceipts(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["handoffId"]
	if _, err := s.visibleContract(w, r, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	// As every read, the events the store had committed when it started
	// (the read models have them now): the log follows the feed apart
	// from the read models, and a receipt asked for right after its
	// write, or through another replica, was left out.
	s.waitLog(r.Context(), s.proj.Checkpoint())
	rs, size, err := s.tlog.ReceiptsAndSize(id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if rs == nil {
		rs = []translog.Receipt{}
	}
	writeJSON(w, http.StatusOK, receiptsAnswer{HandoffID: id, LogSize: size, Receipts: rs})
}
