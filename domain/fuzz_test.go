package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// lifecycle returns a valid, hash-chained stream built the way the ledger
// builds one, walking every event type: created, approved, started, proof,
// review, result, closed.
func lifecycle(tb testing.TB, id string) []Recorded {
	tb.Helper()
	at := time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC)
	prev := GenesisHash(id)
	h := &Handoff{}
	var recs []Recorded
	add := func(evs []Event, err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		for _, ev := range evs {
			data, err := json.Marshal(ev.Data)
			if err != nil {
				tb.Fatal(err)
			}
			seq := uint64(len(recs)) + 1
			c, err := Canonical(id, seq, ev.Type, "ops", at, data)
			if err != nil {
				tb.Fatal(err)
			}
			rec := Recorded{Seq: seq, Type: ev.Type, Data: data, Actor: "ops", RecordedAt: at, PrevHash: prev, Hash: ChainHash(prev, c)}
			if err := h.Apply(rec); err != nil {
				tb.Fatal(err)
			}
			recs, prev, at = append(recs, rec), rec.Hash, at.Add(time.Second)
		}
	}
	add(DecideCreate(CreateContract{HandoffID: id, Tenant: "acme", Objective: "refund order 7", TargetExecutor: "bot",
		ExecutorProtocol: "bot.v1", RiskLevel: "high", ProofRequired: []string{"log"}}))
	add(h.Decide(ApprovalCommand{Status: ApprovalApproved, ApprovedBy: "ann", Request: RequestRef{BodySHA256: "a1"}}))
	add(h.Decide(ProofCommand{ExecutorRunID: "run-1", Status: RunRunning, Request: RequestRef{IdempotencyKey: "k", BodySHA256: "b2"},
		Proof: &Proof{Summary: "refunded", Artifacts: []Artifact{{Type: "log", Text: "200 OK"}}}}))
	add(h.Decide(ReviewCommand{Verdict: VerdictVerified, Reviewer: "vic", Notes: "matches", Request: RequestRef{BodySHA256: "c3"}}))
	add(h.Decide(ResultCommand{ExecutorRunID: "run-1", Status: RunSucceeded, Result: &Result{Summary: "done", Output: "7"},
		Request: RequestRef{BodySHA256: "d4"}}))
	if len(recs) != len(States) || h.State != StateLedgerClosed {
		tb.Fatalf("the lifecycle stream has %d events and ends in %s", len(recs), h.State)
	}
	return recs
}

// payloads maps each handoff event type to a fresh value of its payload.
var payloads = map[string]func() any{
	EventContractCreated: func() any { return new(ContractCreated) },
	EventApprovalDecided: func() any { return new(ApprovalDecided) },
	EventExecutorStarted: func() any { return new(ExecutorStarted) },
	EventProofReceived:   func() any { return new(ProofReceived) },
	EventProofReviewed:   func() any { return new(ProofReviewed) },
	EventResultReceived:  func() any { return new(ResultReceived) },
	EventLedgerClosed:    func() any { return new(LedgerClosed) },
	// Deadlines and approval policies.
	EventApprovalExpired:   func() any { return new(ApprovalExpired) },
	EventExecutorHeartbeat: func() any { return new(ExecutorHeartbeat) },
	EventExecutorTimedOut:  func() any { return new(ExecutorTimedOut) },
	EventApprovalGranted:   func() any { return new(ApprovalGranted) },
	EventApprovalEscalated: func() any { return new(ApprovalEscalated) },
}

// machinePath says why states is not a walk of the lifecycle machine from
// its start, or returns nil.
func machinePath(states []State) error {
	for i, s := range states {
		if i == 0 {
			if s != StateContractCreated {
				return fmt.Errorf("the first state is %q", s)
			}
			continue
		}
		allowed := false
		for _, tr := range Transitions() {
			allowed = allowed || (tr.To == string(s) && slices.Contains(tr.From, string(states[i-1])))
		}
		if !allowed {
			return fmt.Errorf("%s -> %s after event %d is not a transition of the machine", states[i-1], s, i+1)
		}
	}
	return nil
}

// FuzzHandoffReplay replaces the type and payload of one event of a valid
// stream, as a writer to the shared store could, and replays it. An event
// that does not decode is refused and changes nothing; a replay that
// succeeds walks the lifecycle machine; the chain breaks exactly when a
// hashed part changed (type, or data up to canonical form); and a chain that
// verifies folds to the handoff it was built as.
func FuzzHandoffReplay(f *testing.F) {
	const id = "h-1"
	base := lifecycle(f, id)
	want, err := Fold(base)
	if err != nil {
		f.Fatal(err)
	}
	for i, ev := range base {
		f.Add(uint8(i), "", []byte(ev.Data))
		f.Add(uint8(i), "", append([]byte(" \n"), ev.Data...))
	}
	f.Add(uint8(0), "", []byte(`{"tenant":"other","handoffId":"h-1"}`))
	f.Add(uint8(1), "", []byte(`{"status":"REJECTED","decidedBy":"ann","request":{"kind":"approval","bodySha256":"a1"}}`))
	f.Add(uint8(3), "", []byte(`{"executorRunId":"run-1","status":"RUNNING","proof":{"summary":5}}`))
	f.Add(uint8(4), EventProofReceived, []byte(base[4].Data))
	f.Add(uint8(6), "LedgerReopened", []byte(base[6].Data))
	f.Add(uint8(2), "", []byte(`null`))
	f.Add(uint8(1), EventApprovalExpired, []byte(`{"deadline":"2025-03-04T05:06:27Z","timeoutSeconds":20}`))
	f.Add(uint8(3), EventExecutorHeartbeat, []byte(`{"executorRunId":"run-1"}`))
	f.Add(uint8(3), EventExecutorTimedOut, []byte(`{"executorRunId":"run-1","reason":"heartbeat_missed","deadline":"2025-03-04T05:06:27Z","action":"release"}`))
	f.Add(uint8(1), EventApprovalGranted, []byte(`{"approver":"key:a","approvedBy":"ann","count":1,"required":2}`))
	f.Add(uint8(1), EventApprovalEscalated, []byte(`{"to":"leads","deadline":"2025-03-04T05:06:27Z"}`))
	f.Add(uint8(5), "", []byte(``))
	f.Add(uint8(0), "", []byte(`{"metadata":{"b":[1,2.50,{"c":null}],"a":"\u00e9"}}`))
	f.Fuzz(func(t *testing.T, at uint8, typ string, data []byte) {
		idx := int(at) % len(base)
		evs := slices.Clone(base)
		if typ != "" {
			evs[idx].Type = typ
		}
		evs[idx].Data = data
		ev := evs[idx]

		h := &Handoff{}
		var applyErr error
		refused := -1
		for i, e := range evs {
			if err := h.Apply(e); err != nil {
				// An event after the changed one may be refused: the change
				// can move the state (a proof received again after its
				// review) to one the later event is not allowed from.
				if i < idx {
					t.Fatalf("untouched event %d refused: %v", i+1, err)
				}
				applyErr, refused = err, i
				break
			}
		}
		newPayload, known := payloads[ev.Type]
		if !known || json.Unmarshal(ev.Data, newPayload()) != nil {
			if applyErr == nil || refused != idx {
				t.Fatalf("event %d (%s) does not decode, yet the replay accepted %q", idx+1, ev.Type, ev.Data)
			}
		}
		if applyErr != nil {
			// The refused event must leave the handoff as the events before it made it.
			prefix, err := Fold(evs[:refused])
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(prefix, h) {
				t.Fatalf("refused event %d changed the handoff:\n got %+v\nwant %+v", refused+1, h, prefix)
			}
		} else {
			if err := machinePath(h.StateAfter); err != nil {
				t.Fatalf("replay accepted a stream the lifecycle forbids: %v (event %d is %s %q)", err, idx+1, ev.Type, ev.Data)
			}
			last := evs[len(evs)-1]
			if h.State != h.StateAfter[len(h.StateAfter)-1] || h.Head != (LedgerHead{Seq: last.Seq, Hash: last.Hash}) {
				t.Fatalf("state %s and head %+v disagree with the trail %v", h.State, h.Head, h.StateAfter)
			}
		}

		// What the hash covers of this event: its type and canonical data.
		hashed := ev.Type != base[idx].Type
		wantData, _ := CanonicalJSON(base[idx].Data)
		if got, err := CanonicalJSON(ev.Data); err != nil || !bytes.Equal(got, wantData) {
			hashed = true
		}
		br := VerifyChain(id, evs)
		switch {
		case hashed && br == nil:
			t.Fatalf("event %d became %s %q and the chain still verifies", idx+1, ev.Type, ev.Data)
		case hashed && br.Seq != ev.Seq:
			t.Fatalf("event %d changed, the chain breaks first at %d: %v", idx+1, br.Seq, br)
		case !hashed && br != nil:
			t.Fatalf("only insignificant bytes changed, the chain breaks: %v", br)
		}
		if br == nil {
			got, err := Fold(evs)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("the chain verifies with event %d as %q, but it folds differently (%v)", idx+1, ev.Data, err)
			}
		}
	})
}

// FuzzBuildPlan feeds model output to BuildPlan. A plan it returns has
// well-formed steps and the policy its risk level implies, whatever the
// model proposed: the model may tighten the policy, never loosen it.
func FuzzBuildPlan(f *testing.F) {
	for _, risk := range append(slices.Clone(RiskLevels), "", "extreme", "HIGH") {
		f.Add(risk, []byte(`{"summary":"s","steps":[
			{"title":"look","description":"read the logs","kind":"analysis","requiresApproval":false,"proof":[]},
			{"title":"deploy","description":"ship it","kind":"external_action","requiresApproval":false,"proof":[]},
			{"title":"pay","description":"refund","kind":"external_action","requiresApproval":true,"proof":["transaction_reference","log"]}],
			"assumptions":["a"]}`))
		f.Add(risk, []byte(`{"summary":"s","steps":[{"title":"t","description":"d","kind":"analysis","requiresApproval":false,"proof":["json"]}]}`))
	}
	f.Add("low", []byte(`{"summary":"s","steps":[{"title":"t","description":"d","kind":"analysis","requiresApproval":true,"proof":null}]}`))
	f.Add("medium", []byte(`{"summary":"s","steps":[]}`))
	f.Add("low", []byte(`{"steps":{"title":"t"}}`))
	f.Add("low", []byte(`{"summary":1}`))
	f.Add("low", []byte(`null`))
	f.Add("low", []byte(``))
	f.Fuzz(func(t *testing.T, risk string, output []byte) {
		p, err := BuildPlan("p-1", "objective", nil, "bot", risk, output)
		if !slices.Contains(RiskLevels, risk) {
			if err == nil || KindOf(err) != KindInvalid {
				t.Fatalf("risk %q: want a validation error, got %v", risk, err)
			}
			return
		}
		var out planOutput
		decErr := json.Unmarshal(output, &out)
		wellFormed := decErr == nil && len(out.Steps) > 0
		for _, s := range out.Steps {
			wellFormed = wellFormed && strings.TrimSpace(s.Title) != "" && (s.Kind == StepExternalAction || s.Kind == StepAnalysis)
		}
		if (err != nil) != !wellFormed {
			t.Fatalf("BuildPlan error %v, while the output decodes with error %v into %d steps (well formed: %v)", err, decErr, len(out.Steps), wellFormed)
		}
		if err != nil {
			return
		}
		if len(p.Steps) != len(out.Steps) || p.Constraints == nil || p.Assumptions == nil {
			t.Fatalf("%d steps from %d, constraints %v, assumptions %v", len(p.Steps), len(out.Steps), p.Constraints, p.Assumptions)
		}
		high := risk == "high" || risk == "critical"
		anyApproval, anyExternal := false, false
		union := map[string]bool{}
		for i, s := range p.Steps {
			m := out.Steps[i]
			if s.Index != i+1 || s.Title != m.Title || s.Kind != m.Kind || s.Proof == nil {
				t.Fatalf("step %d: %+v from %+v", i+1, s, m)
			}
			if s.Title == "" || (s.Kind != StepExternalAction && s.Kind != StepAnalysis) {
				t.Fatalf("step %d has title %q and kind %q; a plan step needs a title and a known kind", i+1, s.Title, s.Kind)
			}
			if m.RequiresApproval && !s.RequiresApproval {
				t.Fatalf("step %d: the approval the model asked for was dropped", i+1)
			}
			if s.Kind == StepExternalAction && (len(s.Proof) == 0 || (high && !s.RequiresApproval)) {
				t.Fatalf("step %d: external action at %s risk without proof or approval: %+v", i+1, risk, s)
			}
			anyApproval = anyApproval || s.RequiresApproval
			anyExternal = anyExternal || s.Kind == StepExternalAction
			for _, k := range s.Proof {
				union[k] = true
			}
		}
		if wantManual := high || anyApproval; (p.ApprovalPolicy.Mode == ApprovalModeManual) != wantManual ||
			!slices.Contains(ApprovalModes, p.ApprovalPolicy.Mode) {
			t.Fatalf("risk %s, a step asks for approval %v: approval mode %q", risk, anyApproval, p.ApprovalPolicy.Mode)
		}
		at := p.ProofPolicy.ArtifactTypes
		if p.ProofPolicy.Required != (anyExternal || high) || at == nil {
			t.Fatalf("risk %s, external action %v: proof policy %+v", risk, anyExternal, p.ProofPolicy)
		}
		if p.ProofPolicy.Required {
			if len(union) == 0 {
				union["log"] = true
			}
			if want := slices.Sorted(maps.Keys(union)); !slices.Equal(at, want) {
				t.Fatalf("required proof types %q, the steps name %q", at, want)
			}
		} else if len(at) != 0 {
			t.Fatalf("proof not required, yet types %q", at)
		}
	})
}

// FuzzCanonicalJSON checks what the hash chain relies on: a document is
// accepted exactly when it is valid JSON without a key twice in an object, and its canonical form is valid
// JSON with sorted keys and no insignificant whitespace, is its own
// canonical form, and does not depend on key order or formatting.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[true,false,null],"c":{"z":"x","y":1.50e3}}`,
		` { "a" : "\u00e9\u2028<&>" , "a" : 2 } `,
		`[1, -0, 1e400, 12345678901234567890, "\ud800"]`,
		`"caf\u00e9"`, `null`, `0`, `{}`, `[]`, ``, `  `, `{"a":`, `{"a" 1}`, "\"\xff\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := CanonicalJSON(in)
		blank := len(bytes.TrimSpace(in)) == 0
		switch {
		case err != nil && json.Valid(in) && !strings.Contains(err.Error(), "appears twice"):
			t.Fatalf("valid JSON %q refused: %v", in, err)
		case err != nil:
			return
		case !blank && !json.Valid(in):
			t.Fatalf("%q is not a JSON document, yet its canonical form is %q", in, out)
		}
		if !json.Valid(out) || !sortedKeys(out) {
			t.Fatalf("canonical form %q of %q is not valid JSON with sorted keys", out, in)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, out); err != nil || !bytes.Equal(compact.Bytes(), out) {
			t.Fatalf("canonical form %q holds insignificant whitespace", out)
		}
		if again, err := CanonicalJSON(out); err != nil || !bytes.Equal(again, out) {
			t.Fatalf("canonical form is not stable: %q then %q (%v)", out, again, err)
		}
		if blank {
			return
		}
		// The same value spelt differently: keys reversed, spaces added,
		// HTML characters escaped.
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		var other bytes.Buffer
		respell(&other, v)
		if got, err := CanonicalJSON(other.Bytes()); err != nil || !bytes.Equal(got, out) {
			t.Fatalf("%q and %q hold the same value but canonicalise to %q and %q (%v)", in, other.Bytes(), out, got, err)
		}
	})
}

// respell writes v as JSON with object keys in reverse order and spaces
// around every token.
func respell(buf *bytes.Buffer, v any) {
	switch v := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(v))
		slices.Reverse(keys)
		buf.WriteString("{ ")
		for i, k := range keys {
			if i > 0 {
				buf.WriteString(" ,\n")
			}
			kb, _ := json.Marshal(k)
			buf.Write(kb)
			buf.WriteString(" :\t")
			respell(buf, v[k])
		}
		buf.WriteString(" }")
	case []any:
		buf.WriteString("[ ")
		for i, e := range v {
			if i > 0 {
				buf.WriteString(" , ")
			}
			respell(buf, e)
		}
		buf.WriteString(" ]")
	default:
		b, _ := json.Marshal(v)
		buf.Write(b)
	}
}

// sortedKeys reports whether every object in the valid JSON b lists its
// keys in strictly increasing order.
func sortedKeys(b []byte) bool {
	type frame struct {
		object, wantKey bool
		last            *string
	}
	var stack []*frame
	done := func() { // a value ended: its object, if any, expects a key next
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // 1e400 is valid JSON but no float64
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return false
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey {
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				done()
				continue
			}
			top, k := stack[n-1], tok.(string)
			if top.last != nil && k <= *top.last {
				return false
			}
			top.last, top.wantKey = &k, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
		default:
			done()
		}
	}
}
