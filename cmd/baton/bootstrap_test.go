package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/projections"
)

// signalOnKeys is a store that, once an append to the keys stream has
// committed, sends this process SIGTERM, as an operator's Ctrl-C or a
// supervisor's stop that comes in the middle of the first start.
type signalOnKeys struct {
	eventstore.Store
	t *testing.T
}

func (s signalOnKeys) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	r, err := s.Store.Append(ctx, stream, exp, evs...)
	if stream == domain.KeysStream && err == nil {
		signalSelf(s.t, syscall.SIGTERM)
		time.Sleep(200 * time.Millisecond) // delivered: taken, or held
	}
	return r, err
}

// A stop signal that comes after the first key was made and before it was
// printed waits for the printing, and then ends the start-up: taken at
// once, the process ended with a key made that nobody ever saw, and a
// store with a key gets no other. Run in a process of its own, as the
// signal ends it without the fix.
func TestASignalWhileTheFirstKeyIsMadeWaitsForItsPrinting(t *testing.T) {
	if dir := os.Getenv("BATON_TEST_FIRST_KEY_SIGNAL"); dir != "" {
		firstKeySignalled(t, dir)
		return
	}
	signalSelf(t, 0) // skips where a process cannot signal itself
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestASignalWhileTheFirstKeyIsMadeWaitsForItsPrinting$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BATON_TEST_FIRST_KEY_SIGNAL="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "export BATON_API_KEY=btn_") || !strings.Contains(string(out), "start-up stopped:") {
		t.Fatalf("the first key was not printed before the stop (%v):\n%s", err, out)
	}
}

func firstKeySignalled(t *testing.T, dir string) {
	ctx := context.Background()
	st, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	proj, err := openReadModels(ctx, dir, storeBolt, st, zerolog.Nop(), projections.Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	lw := newLogWriter(os.Stdout, time.Hour)
	lw.Write([]byte("a log line: the next ones are gathered\n"))
	err = bootstrapKey(ctx, ledger.NewKeys(signalOnKeys{st, t}), proj, "127.0.0.1:8080", lw)
	fmt.Printf("start-up stopped: %v\n", err)
	if err == nil {
		t.Fatal("the start-up went on after the signal")
	}
}

// lostAnswer is a store whose append to the keys stream is recorded but
// answered ErrUnavailable, as a KurrentDB connection that drops after the
// append went out.
type lostAnswer struct{ eventstore.Store }

func (s lostAnswer) Append(ctx context.Context, stream string, exp eventstore.ExpectedRevision, evs ...eventstore.EventData) (eventstore.AppendResult, error) {
	r, err := s.Store.Append(ctx, stream, exp, evs...)
	if stream == domain.KeysStream && err == nil {
		return eventstore.AppendResult{}, fmt.Errorf("connection dropped: %w", eventstore.ErrUnavailable)
	}
	return r, err
}

// A first key whose append the store may have recorded without saying so
// is printed with the failure: the start failed, the key was recorded
// unseen, and no later start made another (the store had a key).
func TestAFirstKeyTheStoreMayHaveRecordedIsPrinted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	proj, err := openReadModels(ctx, dir, storeBolt, st, zerolog.Nop(), projections.Keys{})
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	var out strings.Builder
	err = bootstrapKey(ctx, ledger.NewKeys(lostAnswer{st}), proj, "127.0.0.1:8080", &out)
	if !errors.Is(err, eventstore.ErrUnavailable) {
		t.Fatalf("bootstrapKey = %v", err)
	}
	m := regexp.MustCompile(`export BATON_API_KEY=(btn_sk_\S+)`).FindStringSubmatch(out.String())
	if m == nil || !strings.Contains(out.String(), "did not answer whether it recorded it") {
		t.Fatalf("the key was not printed:\n%s", out.String())
	}
	if err := proj.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if rec, err := proj.KeyByHash(domain.HashKey(m[1])); err != nil || !rec.Admin {
		t.Fatalf("the key printed is not the one recorded: %+v %v", rec, err)
	}
}
