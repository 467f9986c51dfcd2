package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
)

// A continuation of a chain longer than Baton reads back is the client's
// request refused (a 400 naming previous_response_id), not a 500.
func TestHistoryChainTooLong(t *testing.T) {
	st, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := ResponsesStore{Store: st}
	id := func(i int) string { return fmt.Sprintf("resp_%032x", i) }
	var wg sync.WaitGroup
	errs := make(chan error, maxChain+1)
	for w := range 64 { // concurrent appends share commits
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i <= maxChain; i += 64 {
				rec := ResponsesRecord{ID: id(i), Response: json.RawMessage(`{"output":[]}`)}
				if i > 0 {
					rec.Previous = id(i - 1)
				}
				if err := s.Save(t.Context(), "t", eventstore.Metadata{}, rec); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, err := s.History(t.Context(), "t", id(maxChain-1)); err != nil {
		t.Fatalf("a chain of %d: %v", maxChain, err)
	}
	_, err = s.History(t.Context(), "t", id(maxChain))
	var e *domain.Error
	if !errors.As(err, &e) || domain.KindOf(err) != domain.KindBadRequest || len(e.Fields) != 1 || e.Fields[0].Pointer != "previous_response_id" {
		t.Fatalf("a chain of %d: %v", maxChain+1, err)
	}
}
