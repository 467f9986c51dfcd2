package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// TestReplicasDeliverWebhooksOnce runs three `baton serve --store kurrent`
// processes on the test double, each with its webhook dispatcher, and a
// loopback receiver in the test: every handoff event is delivered once,
// not once per replica, signed so that the Standard Webhooks reference
// library accepts it; an event whose first attempt failed is retried once
// by one replica. An endpoint disabled through one replica gets nothing
// from any, and enabled through another, each event once.
func TestReplicasDeliverWebhooksOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four processes")
	}
	type hit struct {
		id     string
		header http.Header
		body   []byte
	}
	var mu sync.Mutex
	var hits []hit
	failedOnce := map[string]bool{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		id := r.Header.Get("webhook-id")
		hits = append(hits, hit{id: id, header: r.Header.Clone(), body: body})
		// The first attempt of the first delivery fails: a retry follows
		// after the schedule's first wait (5 s).
		if len(failedOnce) == 0 {
			failedOnce[id] = true
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer rcv.Close()

	set := startReplicaSet(t, []string{"--system-event-every", "5"}, "--webhook-allow-private")
	base := set.base
	key := ""
	for _, r := range set.replicas {
		if m := reBootKey.FindStringSubmatch(r.output()); m != nil {
			key = m[1]
		}
	}
	client := &http.Client{Timeout: 30 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	api := &apiClient{t: t, c: client, key: key}

	reg := api.do("POST", base[0]+"/v1/webhooks", map[string]any{"url": rcv.URL + "/hook", "eventTypes": []string{"ContractCreated", "ApprovalDecided"}})
	if reg.status != 201 {
		t.Fatalf("register: %d %s", reg.status, reg.raw)
	}
	webhookID, secret := reg.body["webhookId"].(string), reg.body["secret"].(string)

	const handoffs = 6
	for i := range handoffs {
		r := api.do("POST", base[i%3]+"/v1/handoff/contracts", map[string]any{
			"objective": fmt.Sprintf("Rotate certificate %d", i), "targetExecutor": "ops-bot", "executorProtocol": "ops_bot.v1",
			"riskLevel": "medium", "approvalMode": "manual",
		})
		if r.status != 201 {
			t.Fatalf("create through replica %d: %d %s", i%3+1, r.status, r.raw)
		}
		if a := api.do("POST", base[(i+1)%3]+"/v1/executions/"+r.body["handoffId"].(string)+"/approval",
			map[string]any{"status": "APPROVED", "approvedBy": "alice"}); a.status != 200 {
			t.Fatalf("approve: %d %s", a.status, a.raw)
		}
	}
	const events = 2 * handoffs
	deadline := time.Now().Add(40 * time.Second)
	for {
		mu.Lock()
		n := len(hits)
		mu.Unlock()
		if n >= events+1 { // one delivery took two attempts
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver got %d requests, want %d", n, events+1)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // a replica that would send again has had its poll
	mu.Lock()
	got := append([]hit(nil), hits...)
	mu.Unlock()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	perID := map[string]int{}
	for _, h := range got {
		perID[h.id]++
		if err := wh.Verify(h.body, h.header); err != nil {
			t.Fatalf("delivery %s: the reference library refuses it: %v", h.id, err)
		}
	}
	if len(got) != events+1 || len(perID) != events {
		t.Fatalf("%d requests for %d distinct deliveries; want %d for %d", len(got), len(perID), events+1, events)
	}
	for id, n := range perID {
		if want := map[bool]int{true: 2, false: 1}[failedOnce[id]]; n != want {
			t.Fatalf("delivery %s sent %d times, want %d", id, n, want)
		}
	}
	// Every replica lists the same deliveries, each succeeded.
	for i, b := range base {
		l := api.do("GET", b+"/v1/webhooks/"+webhookID+"/deliveries?limit=100", nil)
		data, _ := l.body["data"].([]any)
		ok := 0
		for _, d := range data {
			if d.(map[string]any)["status"] == "succeeded" {
				ok++
			}
		}
		if l.status != 200 || ok != events {
			t.Fatalf("replica %d lists %d succeeded deliveries of %d: %s", i+1, ok, len(data), l.raw)
		}
	}

	// Disabled through one replica, every replica sees it and none
	// delivers; enabled through another, one delivery follows, once.
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(hits)
	}
	contract := func(i int) {
		t.Helper()
		r := api.do("POST", base[i%3]+"/v1/handoff/contracts", map[string]any{
			"objective": fmt.Sprintf("Renew certificate %d", i), "targetExecutor": "ops-bot", "executorProtocol": "ops_bot.v1",
			"riskLevel": "medium", "approvalMode": "manual",
		})
		if r.status != 201 {
			t.Fatalf("create: %d %s", r.status, r.raw)
		}
	}
	before := count()
	if r := api.do("PATCH", base[0]+"/v1/webhooks/"+webhookID, map[string]any{"disabled": true}); r.status != 200 || r.body["status"] != "disabled" {
		t.Fatalf("disable: %d %s", r.status, r.raw)
	}
	for i, b := range base {
		if r := api.do("GET", b+"/v1/webhooks/"+webhookID, nil); r.body["status"] != "disabled" {
			t.Fatalf("replica %d after the disable: %s", i+1, r.raw)
		}
	}
	for i := range 3 {
		contract(i)
	}
	time.Sleep(2 * time.Second) // each replica has had its polls
	if n := count(); n != before {
		t.Fatalf("%d deliveries to a disabled endpoint", n-before)
	}
	if r := api.do("PATCH", base[1]+"/v1/webhooks/"+webhookID, map[string]any{"disabled": false}); r.status != 200 || r.body["status"] != "active" {
		t.Fatalf("enable: %d %s", r.status, r.raw)
	}
	contract(2)
	deadline = time.Now().Add(20 * time.Second)
	for count() < before+1 {
		if time.Now().After(deadline) {
			t.Fatal("no delivery after the endpoint was enabled")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	if n := count(); n != before+1 {
		t.Fatalf("%d deliveries of one event after the endpoint was enabled, want 1", n-before)
	}

	client.CloseIdleConnections()
	set.stop()
}
