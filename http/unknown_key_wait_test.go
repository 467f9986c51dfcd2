package http_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/ledger"
	batonhttp "github.com/batonhq/baton/http"
	"github.com/batonhq/baton/projections"
)

// A made-up key is refused at once while the read models trail writes
// that are not keys (it held its request up to 2 s, each new value, until
// it was refused); a key created a moment ago elsewhere (another replica,
// the CLI), whose event they have not applied, is still waited for and
// honoured.
func TestUnknownKeyWaitsOnlyForKeyEvents(t *testing.T) {
	f := newHeldFront(t)
	store, keys, admin, srv := f.store, f.keys, f.admin, f.srv
	run := f.run
	// The read models stop behind a write that is not a key's.
	if _, err := store.Append(context.Background(), "other-1", eventstore.NoStream(), eventstore.NewEvent("Other", json.RawMessage(`{}`), eventstore.Metadata{})); err != nil {
		t.Fatal(err)
	}
	get := func(key string) int {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/executor-protocol", nil)
		req.Header.Set("x-api-key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := get(admin.Key); s != 200 {
		t.Fatalf("the known key: %d", s)
	}
	start := time.Now()
	for range 3 {
		secret, _, err := domain.NewKey("x", false, "") // never stored
		if err != nil {
			t.Fatal(err)
		}
		if s := get(secret); s != 401 {
			t.Fatalf("a made-up key: %d", s)
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("three made-up keys took %v: each waited for the read models", d)
	}
	// A key created now, its event not applied: its first call waits and
	// is honoured once the read models move.
	fresh, err := keys.Create(context.Background(), "test", "", "a", false, "")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int)
	go func() { got <- get(fresh.Key) }()
	time.Sleep(200 * time.Millisecond)
	stop := run()
	defer stop()
	if s := <-got; s != 200 {
		t.Fatalf("a key created elsewhere a moment ago: %d", s)
	}
}

// heldFront is a front whose read models are stopped, caught up to its
// admin key: run starts them again.
type heldFront struct {
	store *bolt.Store
	keys  *ledger.Keys
	admin ledger.NewKey
	srv   *httptest.Server
	run   func() (stop func())
}

func newHeldFront(t *testing.T) heldFront {
	t.Helper()
	dir := t.TempDir()
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	proj, err := projections.Open(filepath.Join(dir, "readmodel.db"), store, projections.NewHandoffs(), projections.Keys{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proj.Close() })
	run := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { proj.Run(ctx); close(done) }()
		return func() { cancel(); <-done }
	}
	keys := ledger.NewKeys(store)
	admin, err := keys.Create(context.Background(), "test", "", "ops", true, "")
	if err != nil {
		t.Fatal(err)
	}
	stop := run()
	if err := proj.WaitForHead(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	stop()
	front := batonhttp.NewServer(batonhttp.Config{Store: store, Projections: proj, Log: zerolog.Nop(), Version: "test"})
	t.Cleanup(front.Close)
	srv := httptest.NewServer(front.Handler())
	t.Cleanup(srv.Close)
	return heldFront{store: store, keys: keys, admin: admin, srv: srv, run: run}
}
