// Package http is Baton's HTTP front: the gorilla/mux router, request ids,
// access logs, error rendering and the handlers. Handlers stay thin: decode,
// call the domain or gateway, encode.
package http

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"

	"github.com/batonhq/baton/eventstore"
)

// Server holds what the handlers need.
type Server struct {
	store   eventstore.Store
	log     zerolog.Logger
	version string
	router  *mux.Router
}

// NewServer builds the router.
func NewServer(store eventstore.Store, log zerolog.Logger, version string) *Server {
	s := &Server{store: store, log: log, version: version, router: mux.NewRouter()}
	s.router.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, http.StatusNotFound, "not_found", "No route for "+r.Method+" "+r.URL.Path+".")
	})
	s.router.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed on "+r.URL.Path+".")
	})
	s.router.HandleFunc("/healthz", s.health).Methods(http.MethodGet)
	return s
}

// Handler is the whole front with its middleware.
func (s *Server) Handler() http.Handler {
	return s.withRequestID(s.withAccessLog(s.withRecover(s.router)))
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	head, err := s.store.Head(ctx)
	if err != nil {
		writeProblem(w, r, http.StatusServiceUnavailable, "store_unavailable", "The event store is not answering.")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": s.version, "storeHead": head})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
