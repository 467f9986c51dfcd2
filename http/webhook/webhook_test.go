package webhook

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
)

func TestGuardRefusesInternalAddresses(t *testing.T) {
	for _, c := range []struct {
		addr    string
		blocked bool
	}{
		{"127.0.0.1:80", true}, {"127.5.6.7:443", true}, {"[::1]:443", true},
		{"10.0.0.1:443", true}, {"172.16.3.4:443", true}, {"192.168.1.1:443", true},
		{"169.254.169.254:80", true}, {"[fe80::1%eth0]:443", true},
		{"0.0.0.0:80", true}, {"[::]:80", true}, {"224.0.0.1:80", true}, {"[ff02::1]:80", true},
		{"100.64.0.1:443", true}, {"100.127.255.254:443", true}, {"[fc00::1]:443", true}, {"[fd12:3456::1]:443", true},
		{"[::ffff:127.0.0.1]:443", true}, {"[::ffff:10.0.0.1]:443", true}, {"[64:ff9b::a00:1]:443", true}, {"[2002:7f00:1::]:443", true},
		{"[64:ff9b:1::a00:1]:443", true}, {"[64:ff9b:1:a00:1::]:443", true}, {"[64:ff9b:1:ffff::1]:443", true}, // RFC 8215 local use
		{"[::127.0.0.1]:443", true}, {"[::93.184.215.14]:443", true}, {"[::ffff:0:7f00:1]:443", true}, {"[::ffff:0:5db8:d70e]:443", true}, // IPv4-compatible, SIIT
		{"[fec0::1]:443", true}, {"[fed3:1::a00:1]:443", true}, {"[feff:ffff::1]:443", true}, // site-local (RFC 3879: deprecated, still routed inside some networks)
		{"255.255.255.255:80", true}, {"198.18.0.1:80", true}, {"240.0.0.1:80", true},
		{"93.184.215.14:443", false}, {"1.1.1.1:443", false}, {"100.128.0.1:443", false}, {"[2606:4700::1111]:443", false},
		{"[::ffff:93.184.215.14]:443", false}, {"[64:ff9b::5db8:d70e]:443", false}, {"[64:ff9b:2::1]:443", false},
		{"not-an-address:80", true}, {"garbage", true},
	} {
		err := guardControl("tcp", c.addr, nil)
		if got := err != nil; got != c.blocked {
			t.Errorf("%s: blocked %v, want %v (%v)", c.addr, got, c.blocked, err)
		}
		if err != nil && !errors.Is(err, ErrBlockedAddress) {
			t.Errorf("%s: %v is not ErrBlockedAddress", c.addr, err)
		}
	}
	if domain.BlockedWebhookAddr(netip.MustParseAddr("8.8.8.8")) {
		t.Fatal("a public address is blocked")
	}
}

// A failed attempt's error, as the tenant reads it, names neither the
// internal address the endpoint's name resolved to nor the resolver a
// failed lookup asked; other failures read as they are.
func TestDeliveryErrorHidesTheNetwork(t *testing.T) {
	const u = "https://db.corp.example/hook"
	blocked := &url.Error{Op: "Post", URL: u, Err: &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 443}, Err: fmt.Errorf("%w: %s", ErrBlockedAddress, "10.1.2.3")}}
	lookup := &url.Error{Op: "Post", URL: u, Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.DNSError{Err: "no such host", Name: "db.corp.example", Server: "10.255.255.53:53", IsNotFound: true}}}
	refused := &url.Error{Op: "Post", URL: u, Err: &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.ParseIP("93.184.215.14"), Port: 443}, Err: errors.New("connect: connection refused")}}
	// An error on an open connection names both ends: this one is the
	// address Baton's host has inside its network (behind its NAT).
	reset := &url.Error{Op: "Post", URL: u, Err: &net.OpError{Op: "read", Net: "tcp",
		Source: &net.TCPAddr{IP: net.ParseIP("10.0.3.17"), Port: 49196},
		Addr:   &net.TCPAddr{IP: net.ParseIP("93.184.215.14"), Port: 443}, Err: errors.New("read: connection reset by peer")}}
	for _, c := range []struct {
		err       error
		want, not string
	}{
		{blocked, `Post "https://db.corp.example/hook": ` + ErrBlockedAddress.Error(), "10.1.2.3"},
		{reset, `Post "https://db.corp.example/hook": read tcp 93.184.215.14:443: read: connection reset by peer`, "10.0.3.17"},
		{lookup, `Post "https://db.corp.example/hook": dial: lookup db.corp.example: no such host`, "10.255.255.53"},
		{refused, refused.Error(), "\x00"},
	} {
		got := deliveryError(c.err)
		if got != c.want || strings.Contains(got, c.not) {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
	if de := lookup.Err.(*net.OpError).Err.(*net.DNSError); de.Server == "" {
		t.Fatal("the lookup's own error was changed")
	}
	if reset.Err.(*net.OpError).Source == nil {
		t.Fatal("the connection's own error was changed")
	}
}

// Sign agrees with the Standard Webhooks reference library, one signature
// per secret.
func TestSignMatchesTheReferenceLibrary(t *testing.T) {
	a, b := "whsec_"+base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")), "whsec_"+base64.StdEncoding.EncodeToString([]byte("another secret of 24 byte"))
	body := []byte(`{"type":"ContractCreated","timestamp":"2026-01-01T00:00:00Z","data":{}}`)
	now := time.Now()
	sig, err := Sign([]string{a, b}, "msg_1", now.Unix(), body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("webhook-id", "msg_1")
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", sig)
	for _, s := range []string{a, b} {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, h); err != nil {
			t.Fatalf("%s: %v (signature %q)", s, err, sig)
		}
		want, _ := wh.Sign("msg_1", time.Unix(now.Unix(), 0), body)
		if got, _ := Sign([]string{s}, "msg_1", now.Unix(), body); got != want {
			t.Fatalf("Sign %q, the library %q", got, want)
		}
	}
}

func TestNextWait(t *testing.T) {
	sched := []time.Duration{5 * time.Second, 5 * time.Minute}
	for _, c := range []struct {
		made   int
		ra     time.Duration
		hasRA  bool
		wait   time.Duration
		again  bool
		reason string
	}{
		{1, 0, false, 5 * time.Second, true, "the first retry"},
		{2, 0, false, 5 * time.Minute, true, "the second"},
		{3, 0, false, 0, false, "spent"},
		{1, 42 * time.Second, true, 42 * time.Second, true, "Retry-After longer than the schedule's"},
		{2, 2 * time.Second, true, 5 * time.Minute, true, "a shorter Retry-After keeps the schedule's"},
		{1, 48 * time.Hour, true, time.Hour, true, "Retry-After bounded"},
		{3, time.Second, true, 0, false, "Retry-After does not extend a spent schedule"},
	} {
		w, again := NextWait(c.made, sched, c.ra, c.hasRA, time.Hour)
		if w != c.wait || again != c.again {
			t.Errorf("%s: %v %v, want %v %v", c.reason, w, again, c.wait, c.again)
		}
	}
	if len(DefaultSchedule) != 7 || DefaultSchedule[0] != 5*time.Second || DefaultSchedule[6] != 10*time.Hour {
		t.Fatalf("DefaultSchedule %v", DefaultSchedule)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"7": 7 * time.Second, "0": 0, now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat): 0,
	} {
		if got, ok := domain.ParseRetryAfter(v, now); !ok || got != want {
			t.Errorf("%q: %v %v, want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "soon", "-3", "1.5"} {
		if _, ok := domain.ParseRetryAfter(v, now); ok {
			t.Errorf("%q read as a Retry-After", v)
		}
	}
}

// A redelivery after an attempt's lease ran out starts a round that the
// late outcome of that attempt does not end, as in the delivery's own
// fold: the dispatcher dropped the delivery (or put it back on the old
// schedule), and the redelivery was not made until a restart.
func TestLateOutcomeDoesNotEndARedelivery(t *testing.T) {
	d := New(Config{})
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	apply := func(typ string, v any) {
		b, _ := json.Marshal(v)
		d.applyDelivery("msg_1", eventstore.RecordedEvent{EventData: eventstore.EventData{Type: typ, Data: b}})
	}
	apply(domain.EventWebhookDeliveryScheduled, domain.WebhookDeliveryScheduled{DeliveryID: "msg_1", WebhookID: "wh_1", Tenant: "a", DueAt: at})
	apply(domain.EventWebhookAttemptClaimed, domain.WebhookAttemptClaimed{DeliveryID: "msg_1", Attempt: 0, LeaseUntil: at.Add(30 * time.Second)})
	apply(domain.EventWebhookRedeliveryRequested, domain.WebhookRedeliveryRequested{DeliveryID: "msg_1", WebhookID: "wh_1", At: at.Add(time.Minute)})
	apply(domain.EventWebhookAttemptRecorded, domain.WebhookAttemptRecorded{DeliveryID: "msg_1", Attempt: 0, Outcome: domain.WebhookSucceeded, At: at.Add(61 * time.Second)})
	p := d.pending["msg_1"]
	if p == nil || !p.at.Equal(at.Add(time.Minute)) {
		t.Fatalf("the redelivery after a late outcome: %+v", p)
	}
}

// A deleted or disabled endpoint is forgotten: kept, every handoff event
// on the feed was matched against every endpoint ever deleted or
// disabled, so a tenant that registered and deleted endpoints in a loop
// (or had its receivers answer 410) made each event, and each start's
// reading of the whole feed, slower without bound.
func TestDeletedEndpointsAreForgotten(t *testing.T) {
	d := New(Config{})
	apply := func(typ string, v any) {
		b, _ := json.Marshal(v)
		d.apply(t.Context(), eventstore.RecordedEvent{StreamID: domain.WebhooksStream, EventData: eventstore.EventData{Type: typ, Data: b}})
	}
	for i := range 100 {
		id := fmt.Sprintf("wh_%016x", i)
		apply(domain.EventWebhookRegistered, domain.WebhookRegistered{WebhookID: id, Tenant: "a", URL: "https://hooks.example.com/", EventTypes: []string{"*"}, Secret: "whsec_AAAA"})
		d.failing[id] = true
		apply(domain.EventWebhookDeleted, domain.WebhookDeleted{WebhookID: id})
	}
	apply(domain.EventWebhookRegistered, domain.WebhookRegistered{WebhookID: "wh_kept", Tenant: "a", URL: "https://hooks.example.com/", EventTypes: []string{"*"}, Secret: "whsec_AAAA"})
	if len(d.hooks) != 1 || d.hooks["wh_kept"] == nil || len(d.failing) != 0 {
		t.Fatalf("after 100 endpoints registered and deleted: %d endpoints, %d marked failing; want the one kept, none failing", len(d.hooks), len(d.failing))
	}
	// A disabled endpoint is kept, as disabled: its owner may enable it
	// again, and the dispatcher then delivers to it.
	d.failing["wh_kept"] = true
	apply(domain.EventWebhookDisabled, domain.WebhookDisabled{WebhookID: "wh_kept", Reason: "gone", StatusCode: 410})
	if w := d.hooks["wh_kept"]; w == nil || w.Status != domain.WebhookStatusDisabled || len(d.failing) != 0 {
		t.Fatalf("after a 410: %+v, %d marked failing", w, len(d.failing))
	}
	no := false
	apply(domain.EventWebhookUpdated, domain.WebhookUpdated{WebhookID: "wh_kept", Disabled: &no})
	if w := d.hooks["wh_kept"]; w == nil || w.Status != domain.WebhookStatusActive || w.DisabledReason != "" {
		t.Fatalf("after it was enabled: %+v", w)
	}
}
