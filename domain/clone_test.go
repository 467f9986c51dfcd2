package domain_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/domain"
)

// A clone carries on through Apply without changing the handoff it was
// cloned from: the ledger keeps a handoff's folded state and hands each
// command a clone of it (eventstore/ledger), so a command that fails after
// applying its events must leave the kept state as it was.
func TestCloneIsIndependent(t *testing.T) {
	// Every event type Apply folds: two approvals under rules, an
	// escalation, a heartbeat, a released run, proofs, a review, a result
	// and the close.
	c := contract("log")
	c.ApprovalRules = domain.ApprovalRules{RequiredApprovals: 2, EscalateAfterSeconds: 1, EscalateTo: "leads"}
	c.Timing = domain.Timing{HeartbeatSeconds: 30, OnExecutorTimeout: domain.OnTimeoutRelease}
	l := openAs(t, "key:creator", c)
	l.fire(t0.Add(time.Hour))
	l.doAs("key:ann", approve())
	l.doAs("key:bob", approve())
	l.do(proof("run-1"), heartbeat("run-1"))
	l.fire(t0.Add(2 * time.Hour))
	l.do(proof("run-2"), review(domain.VerdictVerified), result("run-2", domain.RunSucceeded))
	seen := map[string]bool{}
	for _, r := range l.recs {
		seen[r.Type] = true
	}
	for _, typ := range []string{domain.EventContractCreated, domain.EventApprovalEscalated, domain.EventApprovalGranted, domain.EventApprovalDecided,
		domain.EventExecutorHeartbeat, domain.EventExecutorStarted, domain.EventProofReceived, domain.EventExecutorTimedOut,
		domain.EventProofReviewed, domain.EventResultReceived, domain.EventLedgerClosed} {
		if !seen[typ] {
			t.Fatalf("the test's ledger has no %s event", typ)
		}
	}
	for k := 1; k < len(l.recs); k++ {
		base, err := domain.Fold(l.recs[:k])
		if err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, base)
		// Two clones carry on from it, one after the other: neither
		// changes the base, nor the other's lists.
		a, b := base.Clone(), base.Clone()
		for _, r := range l.recs[k:] {
			if err := a.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
		aAfter := snapshot(t, a)
		for _, r := range l.recs[k : k+1] {
			r.Data = relabel(t, r)
			if err := b.Apply(r); err != nil {
				t.Fatalf("seq %d: %v", r.Seq, err)
			}
		}
		if got := snapshot(t, base); got != before {
			t.Fatalf("after %d events: applying more to a clone changed the handoff:\n%s\nwant\n%s", k, got, before)
		}
		if got := snapshot(t, a); got != aAfter {
			t.Fatalf("after %d events: a second clone's event changed the first clone:\n%s\nwant\n%s", k, got, aAfter)
		}
	}
}

// relabel is r's data with its strings changed, so that a clone's event
// differs from another's at the same place.
func relabel(t *testing.T, r domain.Recorded) []byte {
	var m map[string]any
	if err := json.Unmarshal(r.Data, &m); err != nil {
		t.Fatal(err)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if _, err := time.Parse(time.RFC3339Nano, x); err == nil {
				return x
			}
			return x + "~"
		case map[string]any:
			for k, e := range x {
				if k != "status" && k != "verdict" && k != "action" && k != "type" {
					x[k] = walk(e)
				}
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	out, err := json.Marshal(walk(m))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func snapshot(t *testing.T, h *domain.Handoff) string {
	t.Helper()
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every list in a Handoff is clipped by Clone, and every pointer and map
// is one Apply sets anew rather than changes through: a field added to
// Handoff without a thought for Clone fails here.
func TestCloneCoversEveryList(t *testing.T) {
	replaced := map[string]bool{ // set anew by Apply, never changed through
		"Metadata": true, "Review": true, "Result": true, "ClosedAt": true,
		"Approval.DecidedAt": true, "Approval.EscalatedAt": true,
	}
	setOnce := map[string]bool{ // the contract's, set by its event only
		"Approval.ApprovalRules.Approvers": true,
	}
	h := &domain.Handoff{}
	var lists []string
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		for i := range v.NumField() {
			f, fv := v.Type().Field(i), v.Field(i)
			p := f.Name
			if path != "" {
				p = path + "." + f.Name
			}
			switch fv.Kind() {
			case reflect.Struct:
				if f.Type != reflect.TypeOf(time.Time{}) {
					walk(fv, p)
				}
			case reflect.Slice:
				if setOnce[p] {
					continue
				}
				fv.Set(reflect.MakeSlice(f.Type, 1, 4)) // room to append into
				lists = append(lists, p)
			case reflect.Map, reflect.Pointer, reflect.Interface:
				if !replaced[p] {
					t.Errorf("Handoff.%s is a %s: say in this test whether Apply sets it anew or changes it (and then clone it)", p, fv.Kind())
				}
			}
		}
	}
	walk(reflect.ValueOf(h).Elem(), "")
	c := reflect.ValueOf(h.Clone()).Elem()
	for _, p := range lists {
		v := c
		for _, name := range splitPath(p) {
			v = v.FieldByName(name)
		}
		if v.Cap() != v.Len() {
			t.Errorf("Clone leaves room after Handoff.%s (len %d, cap %d): an append to the clone would write into the original's array", p, v.Len(), v.Cap())
		}
	}
}

func splitPath(p string) []string {
	var out []string
	start := 0
	for i := range len(p) {
		if p[i] == '.' {
			out = append(out, p[start:i])
			start = i + 1
		}
	}
	return append(out, p[start:])
}

// A ledger whose approval was rewritten into a rejection, its chain made
// whole again, does not fold: the executor's events after it are work
// Baton never lets an executor record unapproved.
func TestReplayRefusesWorkAfterARejection(t *testing.T) {
	l := open(t, contract("log"))
	l.do(approve(), proof("run-1"), review(domain.VerdictVerified), result("run-1", domain.RunSucceeded))
	recs := append([]domain.Recorded(nil), l.recs...)
	for i, r := range recs {
		if r.Type == domain.EventApprovalDecided {
			var d map[string]any
			json.Unmarshal(r.Data, &d)
			d["status"] = domain.ApprovalRejected
			recs[i].Data, _ = json.Marshal(d)
		}
	}
	if _, err := domain.Fold(recs); err == nil || !strings.Contains(err.Error(), "an executor acts only once approved") {
		t.Fatalf("a ledger of work after a rejection folds: %v", err)
	}
	if _, err := domain.Fold(l.recs); err != nil {
		t.Fatalf("the ledger as recorded: %v", err)
	}
}
