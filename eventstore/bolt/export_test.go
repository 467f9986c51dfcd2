package bolt

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/batonhq/baton/eventstore"
)

// SmallJournal makes every journal opened from now on start at 64 KiB and
// start over at 256 KiB, so that tests (kills of writers among them) run
// across many restarts of the journal. It returns the undo.
func SmallJournal() (undo func()) {
	a, b := journalMinCap, journalWrapCap
	journalMinCap, journalWrapCap = 64<<10, 256<<10
	return func() { journalMinCap, journalWrapCap = a, b }
}

// FillToMaxSize appends events of about 4 KB to stream until the store,
// opened with a MaxSize, refuses one for it (anything else fails the
// test), and returns how many it acknowledged.
func FillToMaxSize(t testing.TB, s *Store, stream string) (acked int) {
	t.Helper()
	pad := []byte(`"` + strings.Repeat("x", 4000) + `"`)
	exp := eventstore.NoStream()
	for {
		res, err := s.Append(context.Background(), stream, exp, eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: "Fill", Data: pad})
		if err != nil {
			if !errors.Is(err, eventstore.ErrFailed) || !strings.Contains(err.Error(), "maximum size") {
				t.Fatalf("append at the limit = %v", err)
			}
			return acked
		}
		exp = eventstore.Revision(res.NextRevision)
		acked++
	}
}
