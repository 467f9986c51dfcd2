package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore"
	"github.com/batonhq/baton/eventstore/bolt"
)

// FuzzEventsQuery: GET /v1/events' query and Last-Event-ID, whatever they
// hold, either parse to a query within its bounds or are refused as a 422
// naming the parameter; never anything else.
func FuzzEventsQuery(f *testing.F) {
	for _, s := range []struct {
		query, lastID string
		has           bool
	}{
		{"", "", false}, {"after=12/12", "", false}, {"after=1%2F2&after=3/4", "", false}, {"after=x", "", false},
		{"", "5/5", true}, {"", " 5/5 ", true}, {"", "", true}, {"", "1/x", true}, {"after=1/1", "2/2", true},
		{"type=ApprovalDecided,LedgerClosed&type=ExecutorHeartbeat", "", false}, {"type=approval", "", false}, {"type=", "", false},
		{"handoffId=a,b&handoffId=c", "", false}, {"handoffId=%00", "", false}, {"handoffId=,", "", false},
		{"targetExecutor=ops-bot&targetExecutor=a,b", "", false}, {"targetExecutor=%0a", "", false},
		{"type=A&handoffId=h&targetExecutor=t&after=0/0", "", false}, {"%zz=1&type", "", false},
	} {
		f.Add(s.query, s.lastID, s.has)
	}
	f.Fuzz(func(t *testing.T, rawQuery, lastID string, has bool) {
		q, _ := url.ParseQuery(rawQuery)
		got, err := parseEventsQuery(q, lastID, has)
		if err != nil {
			var de *domain.Error
			if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Code != "validation_failed" || len(de.Fields) == 0 {
				t.Fatalf("%q %q: refused with %v", rawQuery, lastID, err)
			}
			for _, fe := range de.Fields {
				if !strings.HasPrefix(fe.Pointer, "query:") && fe.Pointer != "header:"+LastEventIDHeader {
					t.Fatalf("%q %q: refusal names %q", rawQuery, lastID, fe.Pointer)
				}
			}
			return
		}
		if has && strings.TrimSpace(lastID) != "" {
			p, err := ParsePosition(lastID)
			if err != nil || !got.resume || got.after != p {
				t.Fatalf("Last-Event-ID %q: resume %v after %v (%v)", lastID, got.resume, got.after, err)
			}
		}
		if got.resume {
			if back, err := ParsePosition(FormatPosition(got.after)); err != nil || back != got.after {
				t.Fatalf("position %v does not round-trip: %v %v", got.after, back, err)
			}
		} else if got.after != eventstore.Start {
			t.Fatalf("a position %v without resume", got.after)
		}
		for name, set := range map[string]map[string]bool{"handoffId": got.handoffs, "targetExecutor": got.executors, "type": got.types} {
			if _, given := q[name]; given != (set != nil) {
				t.Fatalf("%s: given %v, filter %v", name, given, set)
			}
			if len(set) > maxFilterValues || set != nil && len(set) == 0 {
				t.Fatalf("%s: %d values", name, len(set))
			}
			for v := range set {
				bad := v == "" || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f })
				switch name {
				case "type":
					bad = bad || !eventTypeRE.MatchString(v)
				case "handoffId":
					bad = bad || strings.Contains(v, ",") || !printable(v)
				}
				if bad {
					t.Fatalf("%s: value %q taken", name, v)
				}
			}
		}
	})
}

// A handoff's contract is found in its stream when neither the cache nor
// the read models have it (a server without read models here), and is
// kept in the cache.
func TestContractOfFromStore(t *testing.T) {
	store, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s := NewServer(Config{Store: store})
	defer s.Close()
	ctx := context.Background()
	put := func(id string, data any) {
		b, _ := json.Marshal(data)
		ev := eventstore.NewEvent(domain.EventContractCreated, b, eventstore.Metadata{Tenant: "a"})
		if _, err := store.Append(ctx, domain.StreamID(id), eventstore.NoStream(), ev); err != nil {
			t.Fatal(err)
		}
	}
	put("h1", domain.ContractCreated{HandoffID: "h1", Tenant: "a", TargetExecutor: "deploy-bot"})
	put("h2", domain.ContractCreated{HandoffID: "h3", Tenant: "a", TargetExecutor: "deploy-bot"}) // names another handoff
	c, ok := s.contractOf(ctx, "h1")
	if !ok || c != (streamContract{tenant: "a", target: "deploy-bot"}) {
		t.Fatalf("h1: %+v %v", c, ok)
	}
	if c, ok := s.contracts.get("h1"); !ok || c.target != "deploy-bot" {
		t.Fatalf("h1 not cached: %+v %v", c, ok)
	}
	for _, id := range []string{"h2", "missing"} {
		if c, ok := s.contractOf(ctx, id); ok {
			t.Fatalf("%s: %+v", id, c)
		}
	}
}

// The contract cache stays within its bound and keeps what was used last.
func TestContractCacheBounded(t *testing.T) {
	var c contractCache
	c.put("first", streamContract{tenant: "a"})
	for i := range 3 * contractCacheSize {
		c.put(fmt.Sprint("h", i), streamContract{tenant: "a"})
		if i%1000 == 0 {
			if _, ok := c.get("first"); !ok {
				t.Fatalf("after %d: the entry in use was dropped", i)
			}
		}
		if n := len(c.cur) + len(c.old); n > contractCacheSize {
			t.Fatalf("%d entries, bound %d", n, contractCacheSize)
		}
	}
}
