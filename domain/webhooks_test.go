package domain

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// A delivery's fold: claims, outcomes (a late one included), the end of a
// round and a redelivery's new round.
func TestWebhookDeliveryFold(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	d := &WebhookDelivery{}
	apply := func(typ string, v any) {
		t.Helper()
		if err := d.Apply(typ, mustJSON(v)); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
	}
	apply(EventWebhookDeliveryScheduled, WebhookDeliveryScheduled{DeliveryID: "msg_1", WebhookID: "wh_1", DueAt: t0})
	if !d.Due(t0) || d.Status != DeliveryPending {
		t.Fatalf("scheduled: %+v", d)
	}
	apply(EventWebhookAttemptClaimed, WebhookAttemptClaimed{DeliveryID: "msg_1", Attempt: 1, ClaimedAt: t0, LeaseUntil: t0.Add(30 * time.Second)})
	if d.Due(t0.Add(29*time.Second)) || !d.Due(t0.Add(30*time.Second)) {
		t.Fatal("a claim holds for its lease, and no longer")
	}
	next := t0.Add(time.Minute)
	apply(EventWebhookAttemptRecorded, WebhookAttemptRecorded{Attempt: 1, Outcome: WebhookRetrying, StatusCode: 500, NextAttemptAt: &next})
	if d.Status != DeliveryPending || !d.NextAttemptAt.Equal(next) || d.RoundAttempts() != 1 {
		t.Fatalf("after a failure: %+v", d)
	}
	apply(EventWebhookAttemptClaimed, WebhookAttemptClaimed{Attempt: 2, ClaimedAt: next, LeaseUntil: next.Add(30 * time.Second)})
	apply(EventWebhookAttemptRecorded, WebhookAttemptRecorded{Attempt: 2, Outcome: WebhookFailed, StatusCode: 500})
	if !d.Final() || d.Status != DeliveryFailed {
		t.Fatalf("spent: %+v", d)
	}
	// A late outcome of attempt 1 changes its record, not the state.
	apply(EventWebhookAttemptRecorded, WebhookAttemptRecorded{Attempt: 1, Outcome: WebhookSucceeded, StatusCode: 200})
	if d.Status != DeliveryFailed || d.Attempts[0].StatusCode != 200 {
		t.Fatalf("late outcome: %+v", d)
	}
	apply(EventWebhookRedeliveryRequested, WebhookRedeliveryRequested{At: t0.Add(time.Hour)})
	if d.Status != DeliveryPending || d.RoundAttempts() != 0 || !d.Due(t0.Add(time.Hour)) {
		t.Fatalf("redelivery: %+v", d)
	}
	if err := d.Apply(EventWebhookAttemptRecorded, mustJSON(WebhookAttemptRecorded{Attempt: 9, Outcome: WebhookSucceeded})); err == nil {
		t.Fatal("the outcome of an attempt never claimed was folded")
	}
}

func TestWebhookWantsAndSecrets(t *testing.T) {
	hooks := map[string]*Webhook{}
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, e := range []struct {
		typ string
		v   any
	}{
		{EventWebhookRegistered, WebhookRegistered{WebhookID: "wh_1", Tenant: "a", URL: "https://h/", EventTypes: []string{"ContractCreated"}, TargetExecutors: []string{"ops-bot"}, Secret: "whsec_old"}},
		{EventWebhookRegistered, WebhookRegistered{WebhookID: "wh_2", Tenant: "a", URL: "https://h/", EventTypes: []string{"*"}, Secret: "whsec_x"}},
		{EventWebhookSecretRotated, WebhookSecretRotated{WebhookID: "wh_1", Secret: "whsec_new", PreviousExpiresAt: t0.Add(24 * time.Hour), RotatedAt: t0}},
		{EventWebhookDisabled, WebhookDisabled{WebhookID: "wh_2", Reason: "410"}},
	} {
		if err := ApplyWebhookEvent(hooks, e.typ, mustJSON(e.v)); err != nil {
			t.Fatal(err)
		}
	}
	w1, w2 := hooks["wh_1"], hooks["wh_2"]
	if !w1.Wants("ContractCreated", "ops-bot") || w1.Wants("ContractCreated", "other") || w1.Wants("ApprovalDecided", "ops-bot") {
		t.Fatal("wh_1's filters")
	}
	if w2.Wants("ApprovalExpired", "") || w2.Status != WebhookStatusDisabled {
		t.Fatal("a disabled endpoint wants nothing")
	}
	if s := w1.Secrets(t0.Add(time.Hour)); len(s) != 2 || s[0] != "whsec_new" || s[1] != "whsec_old" {
		t.Fatalf("within the grace period: %v", s)
	}
	if s := w1.Secrets(t0.Add(24 * time.Hour)); len(s) != 1 || s[0] != "whsec_new" {
		t.Fatalf("after it: %v", s)
	}
}

func TestNewWebhookSecret(t *testing.T) {
	s, err := NewWebhookSecret()
	if err != nil || len(s) != len("whsec_")+44 || s[:6] != "whsec_" {
		t.Fatalf("%q %v", s, err)
	}
	id, _ := NewWebhookID()
	if !ValidWebhookID(id) || !ValidWebhookDeliveryID(WebhookDeliveryID(id, "e")) || WebhookDeliveryID(id, "e") != WebhookDeliveryID(id, "e") || WebhookDeliveryID(id, "e") == WebhookDeliveryID(id, "f") {
		t.Fatal("ids")
	}
}

// An attempt keeps the first MaxWebhookAnswer bytes of an answer as text,
// cut at a character's end, or only that it was not text.
func TestNewWebhookAnswer(t *testing.T) {
	long := strings.Repeat("a", MaxWebhookAnswer-1) + "é" + "rest" // é straddles the cut
	for _, c := range []struct {
		in   string
		more bool
		want WebhookAnswer
	}{
		{"", false, WebhookAnswer{}},
		{`{"error":"bad signature"}`, false, WebhookAnswer{ResponseBody: `{"error":"bad signature"}`}},
		{"line 1\r\n\tline 2", false, WebhookAnswer{ResponseBody: "line 1\r\n\tline 2"}},
		{long, false, WebhookAnswer{ResponseBody: strings.Repeat("a", MaxWebhookAnswer-1), ResponseBodyTruncated: true}},
		{strings.Repeat("é", MaxWebhookAnswer/2), true, WebhookAnswer{ResponseBody: strings.Repeat("é", MaxWebhookAnswer/2), ResponseBodyTruncated: true}},
		{"\x89PNG\r\n\x1a\n", false, WebhookAnswer{ResponseBodyBinary: true}},
		{"ok\x00", false, WebhookAnswer{ResponseBodyBinary: true}},
		{"caf\xe9", false, WebhookAnswer{ResponseBodyBinary: true}},
		{"bell\x07" + strings.Repeat("x", 2000), false, WebhookAnswer{ResponseBodyBinary: true, ResponseBodyTruncated: true}},
	} {
		if got := NewWebhookAnswer([]byte(c.in), c.more); got != c.want {
			t.Errorf("%.40q: %+v, want %+v", c.in, got, c.want)
		}
	}
	// The bound is the text's size in JSON: characters it escapes count
	// as what they take there.
	for _, in := range []string{strings.Repeat("<", 1024), strings.Repeat(`a"`, 512), "<html>" + strings.Repeat("\u2028&x", 200), strings.Repeat("é\n", 400)} {
		got := NewWebhookAnswer([]byte(in), false)
		enc, _ := json.Marshal(got.ResponseBody)
		if len(enc)-2 > MaxWebhookAnswer || len(enc)-2 < MaxWebhookAnswer-6 || !got.ResponseBodyTruncated || !strings.HasPrefix(in, got.ResponseBody) {
			t.Errorf("%.20q: %d bytes in JSON, truncated %v", in, len(enc)-2, got.ResponseBodyTruncated)
		}
	}
}

// A delivery's fold keeps the answers of its latest KeptWebhookAnswers
// attempts only: redelivered to its 500 attempts it carried 500 answers,
// rewritten whole at each of its events.
func TestDeliveryKeepsTheLatestAnswers(t *testing.T) {
	var d WebhookDelivery
	apply := func(typ string, e any) {
		t.Helper()
		b, _ := json.Marshal(e)
		if err := d.Apply(typ, b); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	apply(EventWebhookDeliveryScheduled, WebhookDeliveryScheduled{DeliveryID: "d1", WebhookID: "w1", DueAt: now})
	body := strings.Repeat("x", MaxWebhookAnswer)
	for n := 1; n <= 30; n++ {
		apply(EventWebhookAttemptClaimed, WebhookAttemptClaimed{DeliveryID: "d1", Attempt: n, ClaimedAt: now, LeaseUntil: now.Add(time.Minute)})
		next := now.Add(time.Minute)
		apply(EventWebhookAttemptRecorded, WebhookAttemptRecorded{DeliveryID: "d1", Attempt: n, Outcome: WebhookRetrying, StatusCode: 500, At: now, NextAttemptAt: &next,
			WebhookAnswer: WebhookAnswer{ResponseBody: body}})
	}
	for i, a := range d.Attempts {
		if kept := a.ResponseBody != ""; kept != (i >= len(d.Attempts)-KeptWebhookAnswers) {
			t.Errorf("attempt %d of %d keeps its answer: %v", a.Attempt, len(d.Attempts), kept)
		}
	}
	if b, _ := json.Marshal(d); len(b) > KeptWebhookAnswers*MaxWebhookAnswer+300*len(d.Attempts) {
		t.Errorf("the delivery takes %d bytes", len(b))
	}
}

// A webhook URL's host must be a name a resolver can look up: an empty
// label (a..b, .a) or a Punycode prefix with nothing after it (xn--,
// which maps to no name at all) is refused, as a label over 63 bytes is.
// They were registered (201), and every delivery to them failed.
func TestWebhookURLHostIsALookupName(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"https://xn--/", false},
		{"https://xn--:8443/x", false},
		{"https://a..b/", false},
		{"https://.example.com/", false},
		{"https://" + long + ".example.com/", false},
		{"https://example.com./", true},
		{"https://münchen.example/", true},
		{"https://hooks.example.com:8443/baton", true},
	} {
		reg := WebhookRegistration{URL: c.url, EventTypes: []string{"*"}}
		err := reg.Validate(false)
		var de *Error
		if c.ok != (err == nil) || !c.ok && (!errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Code != "invalid_url") {
			t.Errorf("%s: %v", c.url, err)
		}
	}
}
