package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/kurrent/kurrenttest"
)

// A stop whose grace ends with a model call still running ends it: the
// client is told the server is stopping (503 shutting_down, not a cut
// connection), serve returns no error, and the call is billed, its usage
// appended before the process ends.
func TestStopEndsCallsStillRunningAndBillsThem(t *testing.T) {
	defer func(g time.Duration) { shutdownGrace = g }(shutdownGrace)
	shutdownGrace = 300 * time.Millisecond
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	srv := startSlowServe(t, ctx)
	addr, key, data, out, done, arrived := srv.addr, srv.key, srv.data, srv.out, srv.done, srv.arrived
	type answer struct {
		status int
		body   string
	}
	answers := make(chan answer, 2)
	for _, body := range []string{`{"model":"slowp:slow","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"slowp:slow","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`} {
		path := "/v1/chat/completions"
		if strings.Contains(body, "stream") {
			path = "/v1/messages" // translated: an error event if its stream began, else a 503
		}
		go func() {
			req, _ := http.NewRequest("POST", "http://"+addr+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- answer{0, err.Error()}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers <- answer{resp.StatusCode, string(b)}
		}()
	}
	<-arrived
	<-arrived
	stop()
	for range 2 {
		a := <-answers
		stream := strings.HasPrefix(a.body, "event:")
		if stream && (a.status != 200 || !strings.Contains(a.body, "event: error") || !strings.Contains(a.body, "The server is stopping")) ||
			!stream && (a.status != 503 || !strings.Contains(a.body, "The server is stopping")) {
			t.Fatalf("a call still running: %d %s", a.status, a.body)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\n%s", err, out.String())
	}
	s, err := bolt.Open(data, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.ReadAll(context.Background(), eventstore.Start, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	billed := false
	for _, ev := range evs {
		billed = billed || strings.HasPrefix(ev.Type, "Usage") && strings.Contains(string(ev.Data), "slowp:slow")
	}
	if !billed {
		t.Fatalf("no usage event for the call ended: %s", fmt.Sprint(len(evs)))
	}
}

// A request with an Idempotency-Key runs on when its client leaves, so
// that its answer is kept for the retry; a stop still ends it after the
// grace as it ends one without a key: 503 shutting_down, its model call
// billed. It ran on past the stop: the client's connection was closed with
// no answer, and the process ended with the call neither settled nor billed.
func TestStopEndsAKeyedGenerationAndBillsIt(t *testing.T) {
	defer func(g time.Duration) { shutdownGrace = g }(shutdownGrace)
	shutdownGrace = 300 * time.Millisecond
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	srv := startSlowServe(t, ctx)
	type answer struct {
		status int
		body   string
	}
	answered := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+srv.addr+"/v1/generate", strings.NewReader(
			`{"type":"summarize","input":{"text":"hi"},"options":{"maxAttempts":1,"llm":{"model":"slowp:slow"}}}`))
		req.Header.Set("Authorization", "Bearer "+srv.key)
		req.Header.Set("Idempotency-Key", "stop-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{0, err.Error()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answered <- answer{resp.StatusCode, string(b)}
	}()
	<-srv.arrived
	stop()
	if a := <-answered; a.status != 503 || !strings.Contains(a.body, "shutting_down") {
		t.Fatalf("the keyed generation in flight: %d %s", a.status, a.body)
	}
	if err := <-srv.done; err != nil {
		t.Fatalf("serve: %v\n%s", err, srv.out.String())
	}
	s, err := bolt.Open(srv.data, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.ReadAll(context.Background(), eventstore.Start, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	billed := false
	for _, ev := range evs {
		billed = billed || strings.HasPrefix(ev.Type, "Usage") && strings.Contains(string(ev.Data), "slowp:slow")
	}
	if !billed {
		t.Fatalf("no usage event for the generation ended")
	}
}

// On a shared store the key of a keyed request the stop ended is freed
// (IdempotencyReleased), so that the retry the 503 asks for runs on
// another replica: it was released on the request's own context, which
// the stop had cancelled, and every retry was 409 idempotency_in_flight
// until the lease ran out, 10 minutes.
func TestStopFreesTheKeyOfTheRequestItEnded(t *testing.T) {
	defer func(g time.Duration) { shutdownGrace = g }(shutdownGrace)
	shutdownGrace = 300 * time.Millisecond
	double, err := kurrenttest.Start(kurrenttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(double.Stop)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	srv := startSlowServe(t, ctx, "--store", "kurrent", "--kurrentdb-url", double.URL())
	status := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+srv.addr+"/v1/generate", strings.NewReader(
			`{"type":"summarize","input":{"text":"hi"},"options":{"maxAttempts":1,"llm":{"model":"slowp:slow"}}}`))
		req.Header.Set("Authorization", "Bearer "+srv.key)
		req.Header.Set("Idempotency-Key", "stop-2")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	<-srv.arrived
	stop()
	if st := <-status; st != 503 {
		t.Fatalf("the keyed generation in flight: %d", st)
	}
	if err := <-srv.done; err != nil {
		t.Fatalf("serve: %v\n%s", err, srv.out.String())
	}
	evs, err := openTarget(t, double.URL()).ReadAll(context.Background(), eventstore.Start, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	var idem []string
	for _, ev := range evs {
		if strings.HasPrefix(ev.Type, "Idempotency") {
			idem = append(idem, ev.Type)
		}
	}
	if len(idem) == 0 || idem[len(idem)-1] != "IdempotencyReleased" {
		t.Fatalf("the key's events: %v", idem)
	}
}

// A part of the server that stops on a fault (here the read models, on a
// key event they cannot apply, written around Baton on a shared
// KurrentDB) stops the server as a signal does: the model call in flight
// is answered 503 shutting_down once the grace ends, not cut off with no
// answer, and serve returns the fault.
func TestAFaultStopsTheServerGracefully(t *testing.T) {
	defer func(g time.Duration) { shutdownGrace = g }(shutdownGrace)
	shutdownGrace = 300 * time.Millisecond
	double, err := kurrenttest.Start(kurrenttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(double.Stop)
	srv := startSlowServe(t, context.Background(), "--store", "kurrent", "--kurrentdb-url", double.URL())
	addr, key, out, done, arrived := srv.addr, srv.key, srv.out, srv.done, srv.arrived
	type answer struct {
		status int
		body   string
	}
	answered := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions", strings.NewReader(`{"model":"slowp:slow","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{0, err.Error()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answered <- answer{resp.StatusCode, string(b)}
	}()
	<-arrived
	store := openTarget(t, double.URL())
	if _, err := store.Append(context.Background(), domain.KeysStream, eventstore.StreamExists(), eventstore.NewEvent(domain.EventKeyCreated, json.RawMessage(`"not a key"`), eventstore.Metadata{})); err != nil {
		t.Fatal(err)
	}
	var serveErr error
	select {
	case serveErr = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not stop on the fault: %s", out.String())
	}
	if serveErr == nil || !strings.Contains(serveErr.Error(), "read models stopped") {
		t.Fatalf("serve: %v", serveErr)
	}
	a := <-answered
	if a.status != 503 || !strings.Contains(a.body, "shutting_down") {
		t.Fatalf("the call in flight: %d %s", a.status, a.body)
	}
}

// SIGHUP (the terminal serve ran in closed) stops it gracefully, as
// SIGTERM does; a second signal during the grace ends the grace: the call
// still running is answered 503 at once, not after the grace.
func TestSignalsStopGracefullyAndASecondEndsTheGrace(t *testing.T) {
	defer func(g time.Duration) { shutdownGrace = g }(shutdownGrace)
	shutdownGrace = 10 * time.Minute
	srv := startSlowServe(t, context.Background())
	addr, key, out, done, arrived := srv.addr, srv.key, srv.out, srv.done, srv.arrived
	status := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions", strings.NewReader(`{"model":"slowp:slow","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	<-arrived
	signalSelf(t, syscall.SIGHUP)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "shutting down"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("SIGHUP did not stop serve:\n%s", out.String())
		}
	}
	select {
	case s := <-status:
		t.Fatalf("the call was answered %d before the grace ended", s)
	case <-time.After(200 * time.Millisecond):
	}
	signalSelf(t, syscall.SIGTERM)
	select {
	case s := <-status:
		if s != http.StatusServiceUnavailable {
			t.Fatalf("the call still running was answered %d, want 503", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("a second signal did not end the grace:\n%s", out.String())
	}
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\n%s", err, out.String())
	}
}

// slowServe is a serve whose model provider's model takes its time (it
// answers when its caller leaves, or after 60 s): its address, first admin
// key, data directory, output and end, and a channel told of each call
// that reached the model.
type slowServe struct {
	addr, key, data string
	out             *syncBuffer
	done            chan error
	arrived         chan struct{}
}

// startSlowServe starts one, args after serve's own.
func startSlowServe(t *testing.T, ctx context.Context, args ...string) *slowServe {
	t.Helper()
	return startServeWith(t, ctx, func(s *slowServe, w http.ResponseWriter, r *http.Request) {
		select { // a model that takes its time
		case <-r.Context().Done():
		case <-time.After(60 * time.Second):
		}
	}, args...)
}

// startServeWith is startSlowServe whose model answers as answer does,
// once its call has been counted in arrived.
func startServeWith(t *testing.T, ctx context.Context, answer func(*slowServe, http.ResponseWriter, *http.Request), args ...string) *slowServe {
	t.Helper()
	s := &slowServe{out: &syncBuffer{}, done: make(chan error, 1), arrived: make(chan struct{}, 4)}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s.arrived <- struct{}{}
		answer(s, w, r)
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	providers := filepath.Join(dir, "providers.json")
	os.WriteFile(providers, []byte(`{"providers":[{"name":"slowp","kind":"openai-compatible","baseUrl":"`+up.URL+`/v1","keyEnv":"",
		"models":[{"name":"slow","contextTokens":8000,"pricing":{"inputPerMTok":1000,"outputPerMTok":2000,"source":"test"}}]}]}`), 0o600)
	s.data = filepath.Join(dir, "data")
	argv := append([]string{"serve", "--data", s.data, "--addr", "127.0.0.1:0", "--providers", providers}, args...)
	go func() { s.done <- run(ctx, argv, s.out, s.out) }()
	for deadline := time.Now().Add(30 * time.Second); s.addr == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := reServing.FindStringSubmatch(s.out.String()); m != nil {
			s.addr, s.key = m[1], reBootKey.FindStringSubmatch(s.out.String())[1]
		}
	}
	if s.addr == "" {
		t.Fatalf("serve did not start: %s", s.out.String())
	}
	return s
}

// A stop with no request running lets a webhook attempt in flight finish
// within the grace, its outcome recorded: cut off with the process, the
// receiver got it again once the attempt's lease had run out (30 s).
func TestStopLetsAWebhookAttemptInFlightFinish(t *testing.T) {
	defer func(g time.Duration) { shutdownGrace = g }(shutdownGrace)
	shutdownGrace = 10 * time.Second
	arrived, finished := make(chan struct{}, 4), make(chan error, 4)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		select { // a receiver that takes its time
		case <-r.Context().Done():
			finished <- r.Context().Err()
			return
		case <-time.After(500 * time.Millisecond):
		}
		finished <- nil
	}))
	defer recv.Close()
	data := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--data", data, "--addr", "127.0.0.1:0", "--webhook-allow-private"}, &out, &out)
	}()
	var addr, key string
	for deadline := time.Now().Add(30 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := reServing.FindStringSubmatch(out.String()); m != nil {
			addr, key = m[1], reBootKey.FindStringSubmatch(out.String())[1]
		}
	}
	if addr == "" {
		t.Fatalf("serve did not start: %s", out.String())
	}
	post := func(path, body string) {
		req, _ := http.NewRequest("POST", "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("x-api-key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	post("/v1/webhooks", `{"url":"`+recv.URL+`/hook","eventTypes":["ContractCreated"]}`)
	post("/v1/handoff/contracts", `{"objective":"x","targetExecutor":"ops-bot","executorProtocol":"ops_bot.v1","riskLevel":"medium","approvalMode":"manual","proofRequired":["log"]}`)
	select {
	case <-arrived:
	case <-time.After(20 * time.Second):
		t.Fatalf("no attempt reached the receiver: %s", out.String())
	}
	stop()
	if err := <-finished; err != nil {
		t.Fatalf("the attempt in flight was cut off by the stop: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\n%s", err, out.String())
	}
	s, err := bolt.Open(data, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.ReadAll(context.Background(), eventstore.Start, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	recorded := false
	for _, ev := range evs {
		recorded = recorded || ev.Type == domain.EventWebhookAttemptRecorded && strings.Contains(string(ev.Data), `"succeeded"`)
	}
	if !recorded {
		t.Fatal("the attempt's outcome was not recorded")
	}
}

// A keyed answer whose write failed (the store away for a moment) is
// written again within the stop's grace, before the store closes: the
// retry on another replica gets it replayed. The stop closed the store
// under the write, and the key stayed in flight for its lease (10 minutes
// of 409s for a request that had answered).
func TestStopLetsAKeyedAnswerBeWrittenAgain(t *testing.T) {
	defer func(g time.Duration) { shutdownGrace = g }(shutdownGrace)
	shutdownGrace = 10 * time.Second
	double, err := kurrenttest.Start(kurrenttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(double.Stop)
	gate := make(chan struct{})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	srv := startServeWith(t, ctx, func(_ *slowServe, w http.ResponseWriter, r *http.Request) {
		<-gate
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"{\"summary\":\"s\",\"keyPoints\":[\"k\"]}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}`)
	}, "--store", "kurrent", "--kurrentdb-url", double.URL())
	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+srv.addr+"/v1/generate", strings.NewReader(
			`{"type":"summarize","input":{"text":"hi"},"options":{"maxAttempts":1,"llm":{"model":"slowp:slow"}}}`))
		req.Header.Set("Authorization", "Bearer "+srv.key)
		req.Header.Set("Idempotency-Key", "stop-3")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	<-srv.arrived
	double.AnswerNotLeader(1 << 20) // the store away: the answer's write fails
	close(gate)
	if st := <-answered; st != 200 {
		t.Fatalf("the keyed generation: %d\n%s", st, srv.out.String())
	}
	stop()
	time.Sleep(time.Second)
	double.AnswerNotLeader(0) // back within the grace
	if err := <-srv.done; err != nil {
		t.Fatalf("serve: %v\n%s", err, srv.out.String())
	}
	evs, err := openTarget(t, double.URL()).ReadAll(context.Background(), eventstore.Start, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	var idem []string
	for _, ev := range evs {
		if strings.HasPrefix(ev.Type, "Idempotency") {
			idem = append(idem, ev.Type)
		}
	}
	if len(idem) == 0 || idem[len(idem)-1] != "IdempotencyCompleted" {
		t.Fatalf("the key's events: %v\n%s", idem, srv.out.String())
	}
}
