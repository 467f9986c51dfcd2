// Package timed wraps an event store to time its appends, for the metrics:
// the wrapper sits where the store is opened, so every writer is measured
// without knowing of it.
package timed

import (
	"context"
	"time"

	"github.com/batonhq/baton/eventstore"
)

// Store is a store whose appends are timed; the rest passes through.
type Store struct {
	eventstore.Store
	observe func(time.Duration)
}

// New wraps s: observe hears how long each Append took, failed ones too.
func New(s eventstore.Store, observe func(time.Duration)) *Store {
	return &Store{Store: s, observe: observe}
}

// Append times the wrapped store's Append.
func (s *Store) Append(ctx context.Context, stream string, expected eventstore.ExpectedRevision, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	start := time.Now()
	res, err := s.Store.Append(ctx, stream, expected, events...)
	s.observe(time.Since(start))
	return res, err
}

// Exclusive passes the wrapped store's answer on: coordination in memory
// must not be lost to the wrapper.
func (s *Store) Exclusive() bool {
	x, ok := s.Store.(eventstore.Exclusive)
	return ok && x.Exclusive()
}

// Unwrap is the wrapped store.
func (s *Store) Unwrap() eventstore.Store { return s.Store }

var _ eventstore.Exclusive = (*Store)(nil)

// Failed is the wrapped store's Failed, when it tells one.
func (s *Store) Failed() error {
	if f, ok := s.Store.(interface{ Failed() error }); ok {
		return f.Failed()
	}
	return nil
}

// Full is the wrapped store's Full, when it tells one.
func (s *Store) Full() error {
	if f, ok := s.Store.(interface{ Full() error }); ok {
		return f.Full()
	}
	return nil
}
