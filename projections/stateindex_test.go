package projections

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"
	bbolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

// feed hands the runner events directly, positions counted from pos.
type feed struct {
	r   *Runner
	pos uint64
}

func (f *feed) apply(tb testing.TB, evs ...eventstore.RecordedEvent) {
	tb.Helper()
	for i := range evs {
		f.pos++
		evs[i].Position = eventstore.Position{Commit: f.pos, Prepare: f.pos}
		evs[i].ID = uuid.Must(uuid.NewV7())
	}
	for len(evs) > 0 {
		n := min(len(evs), batchSize)
		if err := f.r.apply(evs[:n]); err != nil {
			tb.Fatal(err)
		}
		evs = evs[n:]
	}
}

// listAll pages through ListContracts with f, limit a page.
func listAll(tb testing.TB, r *Runner, tenant string, f ContractFilter, limit int) []string {
	tb.Helper()
	var out []string
	f.Limit = limit
	for {
		page, next, err := r.ListContracts(tenant, f)
		if err != nil {
			tb.Fatal(err)
		}
		for _, v := range page {
			out = append(out, gjson.GetBytes(v, "handoffId").String())
		}
		if next == "" {
			return out
		}
		f.After = next
	}
}

// Listings by state read the state index: each handoff is listed under
// the state it is in as it moves, in id order across several states, page
// by page, and never under another tenant's.
func TestListingsByStateFollowTheHandoffs(t *testing.T) {
	_, store := tempStore(t)
	r, err := Open(filepath.Join(t.TempDir(), "readmodel.db"), store, NewHandoffs(), Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f := &feed{r: r}
	// Handoff i is left after its first i%6+1 events: one in each state.
	var all []string
	want := map[string][]string{}
	for i := range 30 {
		id := uuid.Must(uuid.NewV7()).String()
		evs := handoffEvents(t, id, "acme")
		n := i%len(evs) + 1
		f.apply(t, evs[:n]...)
		all = append(all, id)
		view, _, _, err := r.Contract(id)
		if err != nil {
			t.Fatal(err)
		}
		st := gjson.GetBytes(view, "state").String()
		want[st] = append(want[st], id)
	}
	other := uuid.Must(uuid.NewV7()).String()
	f.apply(t, handoffEvents(t, other, "beta")[:1]...)
	for _, st := range domain.States {
		got := listAll(t, r, "acme", ContractFilter{State: string(st)}, 2)
		if !slices.Equal(got, want[string(st)]) {
			t.Fatalf("state %s: %v, want %v", st, got, want[string(st)])
		}
	}
	two := []string{string(domain.States[0]), string(domain.States[3])}
	wantTwo := slices.Sorted(slices.Values(append(slices.Clone(want[two[0]]), want[two[1]]...)))
	if got := listAll(t, r, "acme", ContractFilter{States: two}, 3); !slices.Equal(got, wantTwo) {
		t.Fatalf("states %v: %v, want %v", two, got, wantTwo)
	}
	var scanned []string
	if err := r.ScanContracts("acme", ContractFilter{States: two}, func(v []byte) bool {
		scanned = append(scanned, gjson.GetBytes(v, "handoffId").String())
		return true
	}); err != nil || !slices.Equal(scanned, wantTwo) {
		t.Fatalf("scan of %v: %v (%v), want %v", two, scanned, err, wantTwo)
	}
	if got := listAll(t, r, "acme", ContractFilter{State: two[0], States: two[1:]}, 5); len(got) != 0 {
		t.Fatalf("a state and a list without it: %v", got)
	}
	if got := listAll(t, r, "acme", ContractFilter{}, 7); !slices.Equal(got, all) {
		t.Fatalf("every handoff: %v, want %v", got, all)
	}
	if got := listAll(t, r, "beta", ContractFilter{State: string(domain.States[0])}, 5); !slices.Equal(got, []string{other}) {
		t.Fatalf("beta: %v", got)
	}
}

// A read-model file written before the state index existed gets it when
// it opens, byte for byte what a rebuild from zero writes.
func TestTheStateIndexIsBuiltInAnOlderFile(t *testing.T) {
	_, store := tempStore(t)
	path := filepath.Join(t.TempDir(), "readmodel.db")
	r, err := Open(path, store, NewHandoffs(), Keys{})
	if err != nil {
		t.Fatal(err)
	}
	f := &feed{r: r}
	for i := range 12 {
		evs := handoffEvents(t, uuid.Must(uuid.NewV7()).String(), fmt.Sprint("t", i%2))
		f.apply(t, evs[:i%len(evs)+1]...)
	}
	before, err := r.Dump()
	if err != nil {
		t.Fatal(err)
	}
	// What an older Baton left: no state index.
	if err := r.db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketByState, bucketStateOf} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r, err = Open(path, store, NewHandoffs(), Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	after, err := r.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatalf("the state index built at open differs from the one kept as events came")
	}
	if got := listAll(t, r, "t0", ContractFilter{State: string(domain.StateLedgerClosed)}, 10); len(got) != 1 {
		t.Fatalf("closed handoffs of t0: %v", got)
	}
}

// BenchmarkListByState lists the handful of handoffs waiting for approval
// among 20,000 closed ones, through the state index, against the same
// listing by risk level, which reads every handoff (as a listing by state
// did before the index).
func BenchmarkListByState(b *testing.B) {
	_, store := tempStore(b)
	r, err := Open(filepath.Join(b.TempDir(), "readmodel.db"), store, NewHandoffs(), Keys{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	f := &feed{r: r}
	var evs []eventstore.RecordedEvent
	for i := range 20_000 {
		hev := handoffEvents(b, uuid.Must(uuid.NewV7()).String(), "acme")
		if i%1000 == 0 {
			hev = hev[:1]
		}
		evs = append(evs, hev...)
	}
	f.apply(b, evs...)
	for _, c := range []struct {
		name string
		f    ContractFilter
	}{
		{"state", ContractFilter{State: string(domain.StateContractCreated), Limit: 100}},
		{"risk_full_scan", ContractFilter{RiskLevel: "none-such", Limit: 100}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := r.ListContracts("acme", c.f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
