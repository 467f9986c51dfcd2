package bolt_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
)

// BenchmarkReadAllTail is what a follower woken by a commit does: read the
// one new event, then read again and find nothing. Run with -benchmem: the
// bytes per iteration are what each subscriber pays per commit.
func BenchmarkReadAllTail(b *testing.B) {
	s, err := bolt.Open(b.TempDir(), bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var prev, last eventstore.Position
	for i := range 100 {
		expected := eventstore.NoStream()
		if i > 0 {
			expected = eventstore.Revision(uint64(i - 1))
		}
		res, err := s.Append(ctx, "usage-t", expected, eventstore.EventData{
			ID: uuid.New(), Type: "UsageRecorded", Data: json.RawMessage(`{"tokens":12}`),
		})
		if err != nil {
			b.Fatal(err)
		}
		prev, last = last, res.Position
	}
	b.ReportAllocs()
	for b.Loop() {
		evs, err := s.ReadAll(ctx, prev, 512)
		if err != nil || len(evs) != 1 {
			b.Fatalf("read %d events, %v", len(evs), err)
		}
		if evs, err = s.ReadAll(ctx, last, 512); err != nil || len(evs) != 0 {
			b.Fatalf("read %d events, %v", len(evs), err)
		}
	}
}
