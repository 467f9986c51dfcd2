package http

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/projections"
)

// readWait bounds how long a read waits for the read models to include
// every write committed before it (read-your-writes).
const readWait = 2 * time.Second

type createContractRequest struct {
	Objective        string   `json:"objective"`
	TargetExecutor   string   `json:"targetExecutor"`
	ExecutorProtocol string   `json:"executorProtocol"`
	RiskLevel        string   `json:"riskLevel"`
	ApprovalMode     string   `json:"approvalMode"`
	ProofRequired    []string `json:"proofRequired"`
	PlanID           string   `json:"planId"`
	domain.Timing
	domain.ApprovalRules
}

// contractFields are the names a contract request may hold.
var (
	contractFields    = jsonNames[createContractRequest]()
	contractFieldsWhy = "a contract request has " + strings.Join(contractFields, ", ") + "; no handoff was made"
)

type heartbeatRequest struct {
	ExecutorType  string `json:"executorType"`
	ExecutorRunID string `json:"executorRunId"`
}

type approvalRequest struct {
	Status     string `json:"status"`
	ApprovedBy string `json:"approvedBy"`
	Reason     string `json:"reason"`
}

type proofRequest struct {
	ExecutorType  string        `json:"executorType"`
	ExecutorRunID string        `json:"executorRunId"`
	Status        string        `json:"status"`
	Proof         *domain.Proof `json:"proof"`
}

type resultRequest struct {
	ExecutorType  string         `json:"executorType"`
	ExecutorRunID string         `json:"executorRunId"`
	Status        string         `json:"status"`
	Result        *domain.Result `json:"result"`
	Proof         *domain.Proof  `json:"proof"`
}

type reviewRequest struct {
	Verdict  string `json:"verdict"`
	Reviewer string `json:"reviewer"`
	Notes    string `json:"notes"`
}

func (s *Server) createContract(w http.ResponseWriter, r *http.Request) {
	var req createContractRequest
	body, ok := s.readJSON(w, r, &req)
	if !ok {
		return
	}
	if err := s.scan(body); err != nil {
		s.writeError(w, r, err)
		return
	}
	// A misspelt or misplaced policy field ({"timing":{...}} for the
	// top-level approvalTimeoutSeconds) would make a handoff without the
	// deadline or quorum its creator asked for: refused, nothing made.
	if err := refuseUnknown("contracts.create", body, contractFields, contractFieldsWhy); err != nil {
		s.writeError(w, r, err)
		return
	}
	c := domain.CreateContract{
		Objective: req.Objective, TargetExecutor: req.TargetExecutor, ExecutorProtocol: req.ExecutorProtocol,
		RiskLevel: req.RiskLevel, ApprovalMode: req.ApprovalMode, ProofRequired: req.ProofRequired, PlanID: req.PlanID,
		Timing: req.Timing, ApprovalRules: req.ApprovalRules,
	}
	out, err := s.ledger.Handoffs.Create(r.Context(), callOf(r), c)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h, pos := out.Handoff, out.Position
	setPosition(w, pos)
	if out.Replayed {
		markResumed(w, r)
	}
	w.Header().Set("Location", "/v1/handoff/contracts/"+h.ID)
	writeJSON(w, http.StatusCreated, h.View())
}

// scan refuses a body holding a secret in any string value, whatever its
// field: encoding/json matches field names without regard to case, so a
// scan of some paths only ("/proof") would let "Proof" through unscanned
// into the ledger, where nothing can be taken out again.
func (s *Server) scan(body []byte) error {
	if s.scanner == nil {
		return nil
	}
	found, err := s.scanner.Scan(body)
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return nil
	}
	e := domain.E("secrets", domain.KindInvalid, "secret_detected",
		"the body holds what looks like a secret (%s at %s); executors must not send secrets, credentials or customer tokens. Nothing was recorded.", found[0].RuleID, found[0].Pointer)
	e.Findings = found
	return e
}

// callback decodes, scans and runs one executor or verifier callback.
func (s *Server) callback(kind string, build func(body []byte, ref domain.RequestRef) (domain.Command, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := mux.Vars(r)["handoffId"]
		key, err := s.idempotencyKey("handoff."+kind, r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		body, err := readBody(w, r, s.maxBody)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ref := domain.RequestRef{Kind: kind, IdempotencyKey: key, BodySHA256: bodyHash(body)}
		if key != "" {
			// Under a key the body is compared as JSON, as on generate;
			// without one, a retry is the same bytes (docs/protocol.md).
			ref.BodyJSONSHA256 = ledger.JSONHash(body)
		}
		cmd, err := build(body, ref)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := s.scan(body); err != nil {
			s.writeError(w, r, err)
			return
		}
		out, err := s.ledger.Handoffs.Handle(r.Context(), callOf(r), id, cmd)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if out.Replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		setPosition(w, out.Position)
		v := out.Handoff.View()
		if prefersMinimal(r) {
			// RFC 7240: what a client that calls often needs (a heartbeat
			// every few seconds), not every proof again each time.
			w.Header().Set("Preference-Applied", "return=minimal")
			writeJSON(w, http.StatusOK, minimalContract{HandoffID: v.HandoffID, State: v.State, ApprovalStatus: v.ApprovalPolicy.Status,
				ExecutorRunID: v.ExecutorRunID, LedgerHead: v.LedgerHead, Deadlines: v.Deadlines, UpdatedAt: v.UpdatedAt})
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// minimalContract is a callback's answer under Prefer: return=minimal.
type minimalContract struct {
	HandoffID      string            `json:"handoffId"`
	State          domain.State      `json:"state"`
	ApprovalStatus string            `json:"approvalStatus"`
	ExecutorRunID  string            `json:"executorRunId,omitempty"`
	LedgerHead     domain.LedgerHead `json:"ledgerHead"`
	Deadlines      *domain.LeaseView `json:"deadlines,omitempty"`
	UpdatedAt      time.Time         `json:"updatedAt"`
}

// prefersMinimal reports a Prefer header asking for return=minimal
// (RFC 7240), among other preferences or not.
func prefersMinimal(r *http.Request) bool {
	for _, v := range r.Header.Values("Prefer") {
		for _, p := range strings.Split(v, ",") {
			if name, _, _ := strings.Cut(strings.TrimSpace(p), ";"); strings.EqualFold(strings.TrimSpace(name), "return=minimal") {
				return true
			}
		}
	}
	return false
}

func (s *Server) approval() http.HandlerFunc {
	return s.callback(domain.KindApproval, func(body []byte, ref domain.RequestRef) (domain.Command, error) {
		var req approvalRequest
		if err := decodeBody(body, &req); err != nil {
			return nil, err
		}
		return domain.ApprovalCommand{Status: req.Status, ApprovedBy: req.ApprovedBy, Reason: req.Reason, Request: ref}, nil
	})
}

func (s *Server) proof() http.HandlerFunc {
	return s.callback(domain.KindProof, func(body []byte, ref domain.RequestRef) (domain.Command, error) {
		var req proofRequest
		if err := decodeBody(body, &req); err != nil {
			return nil, err
		}
		return domain.ProofCommand{ExecutorType: req.ExecutorType, ExecutorRunID: req.ExecutorRunID, Status: req.Status, Proof: req.Proof, Request: ref}, nil
	})
}

func (s *Server) result() http.HandlerFunc {
	return s.callback(domain.KindResult, func(body []byte, ref domain.RequestRef) (domain.Command, error) {
		var req resultRequest
		if err := decodeBody(body, &req); err != nil {
			return nil, err
		}
		return domain.ResultCommand{ExecutorType: req.ExecutorType, ExecutorRunID: req.ExecutorRunID, Status: req.Status, Result: req.Result, Proof: req.Proof, Request: ref}, nil
	})
}

// heartbeat renews the run's lease; it is recorded every time (a renewal is
// never a retry of an earlier one).
func (s *Server) heartbeat() http.HandlerFunc {
	return s.callback(domain.KindHeartbeat, func(body []byte, ref domain.RequestRef) (domain.Command, error) {
		var req heartbeatRequest
		if err := decodeBody(body, &req); err != nil {
			return nil, err
		}
		return domain.HeartbeatCommand{ExecutorType: req.ExecutorType, ExecutorRunID: req.ExecutorRunID, Request: ref}, nil
	})
}

func (s *Server) review() http.HandlerFunc {
	return s.callback(domain.KindReview, func(body []byte, ref domain.RequestRef) (domain.Command, error) {
		var req reviewRequest
		if err := decodeBody(body, &req); err != nil {
			return nil, err
		}
		return domain.ReviewCommand{Verdict: req.Verdict, Reviewer: req.Reviewer, Notes: req.Notes, Request: ref}, nil
	})
}

// visibleContract reads a contract through the read model after it has
// caught up with every write committed before this request and with the
// request's Baton-Read-After.
func (s *Server) visibleContract(w http.ResponseWriter, r *http.Request, id string) (json.RawMessage, error) {
	if err := s.waitReadable(w, r); err != nil {
		return nil, err
	}
	view, tenant, ok, err := s.proj.Contract(id)
	var q *projections.QuarantinedError
	if err != nil && !errors.As(err, &q) {
		return nil, err
	}
	p := principalOf(r.Context())
	if q != nil && (p.Admin || ok && p.CanSee(tenant)) {
		return nil, quarantinedProblem(q)
	}
	if !ok || !p.CanSee(tenant) {
		// Another tenant's handoff is as absent as an unknown one.
		return nil, domain.E("handoff.get", domain.KindNotFound, "handoff_not_found", "no handoff %s", id)
	}
	return view, nil
}

// quarantinedProblem answers for a handoff whose stream holds an event the
// read models cannot apply: a 500 that names the event, so that the client
// never takes the state before it for the handoff's state.
func quarantinedProblem(q *projections.QuarantinedError) error {
	return ledger.Quarantined(q.HandoffID, q.Seq, q.Type, q.EventID, q.Reason)
}

func (s *Server) getContract(w http.ResponseWriter, r *http.Request) {
	view, err := s.visibleContract(w, r, mux.Vars(r)["handoffId"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	writeBounded(w, append(view, '\n'))
}

// listPageBytes ends a page of contracts early, at least one contract
// in: a hundred contracts with many proofs were one answer of gigabytes.
var listPageBytes = 4 << 20

func (s *Server) listContracts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := projections.ContractFilter{State: q.Get("state"), ApprovalStatus: q.Get("approvalStatus"), TargetExecutor: q.Get("targetExecutor"), After: q.Get("cursor"), Limit: 20, MaxBytes: listPageBytes}
	var bad []domain.FieldError
	for _, name := range []string{"state", "approvalStatus", "targetExecutor", "limit", "cursor"} {
		// A filter given twice would be read as its first value, and an
		// empty one (a script's unset variable) as no filter: a page
		// quietly wider or narrower than asked for reads as the truth.
		switch vs := q[name]; {
		case len(vs) > 1:
			bad = append(bad, domain.FieldError{Pointer: "query:" + name, Code: "repeated", Message: "is given more than once"})
		case len(vs) == 1 && vs[0] == "" && name != "limit" && name != "cursor":
			bad = append(bad, domain.FieldError{Pointer: "query:" + name, Code: "empty", Message: "is empty; leave the parameter out for no filter"})
		}
	}
	if q.Has("limit") { // an empty limit= is a wrong limit, not none
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > 100 {
			bad = append(bad, domain.FieldError{Pointer: "query:limit", Code: "out_of_range", Message: "must be an integer from 1 to 100"})
		}
		f.Limit = n
	}
	if f.State != "" && !contains(domain.States, domain.State(f.State)) {
		bad = append(bad, domain.FieldError{Pointer: "query:state", Code: "invalid_enum", Message: "is not a lifecycle state"})
	}
	if f.ApprovalStatus != "" && !contains(domain.ApprovalStatuses, f.ApprovalStatus) {
		bad = append(bad, domain.FieldError{Pointer: "query:approvalStatus", Code: "invalid_enum", Message: "must be one of " + strings.Join(domain.ApprovalStatuses, ", ")})
	}
	if len(bad) > 0 {
		s.writeError(w, r, domain.Invalid("handoff.list", bad...))
		return
	}
	if err := s.waitReadable(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	items, next, err := s.proj.ListContracts(principalOf(r.Context()).Tenant, f)
	if errors.Is(err, projections.ErrBadCursor) {
		err = domain.Invalid("handoff.list", domain.FieldError{Pointer: "query:cursor", Code: "unknown_cursor", Message: "is not a handoff of this tenant; pass the nextCursor of the previous page"})
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeList(w, items, next)
}

// writeList answers one page of a listing: next is the cursor of the next
// page, "" when this is the last.
func writeList(w http.ResponseWriter, items []json.RawMessage, next string) {
	if items == nil {
		items = []json.RawMessage{}
	}
	resp := map[string]any{"object": "list", "data": items, "hasMore": next != ""}
	if next != "" {
		resp["nextCursor"] = next
	}
	writeJSON(w, http.StatusOK, resp)
}

// bodyHash identifies a callback body for retries.
func bodyHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

func contains[T comparable](xs []T, x T) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// maxLedgerWait caps GET .../ledger?wait=: a longer hold is more likely cut
// by a proxy than answered.
const maxLedgerWait = 60 * time.Second

// ledgerWaitHook, when set (tests only), runs each time a ledger read found
// nothing past after and is about to wait.
var ledgerWaitHook func()

// ledgerReadHook, when set (tests only), runs each time a ledger read reads
// the whole trail.
var ledgerReadHook func()

// ledgerQuery reads after (the last seq the client has) and wait (a Go
// duration, or whole seconds).
func ledgerQuery(r *http.Request) (after uint64, wait time.Duration, err error) {
	q := r.URL.Query()
	var bad []domain.FieldError
	if q.Has("after") {
		n, perr := strconv.ParseUint(q.Get("after"), 10, 64)
		if perr != nil {
			bad = append(bad, domain.FieldError{Pointer: "query:after", Code: "invalid_integer", Message: "must be a non-negative integer: the last seq the client has"})
		}
		after = n
	}
	if q.Has("wait") {
		v := q.Get("wait")
		d, perr := time.ParseDuration(v)
		if n, aerr := strconv.Atoi(v); aerr == nil {
			d, perr = time.Duration(n)*time.Second, nil
			if n < 0 || n > int(maxLedgerWait/time.Second) {
				d = -1 // out of range before it is scaled: n seconds in nanoseconds may wrap around into range
			}
		}
		switch {
		case perr != nil:
			bad = append(bad, domain.FieldError{Pointer: "query:wait", Code: "invalid_duration", Message: "must be a duration such as 30s, or whole seconds"})
		case d < 0 || d > maxLedgerWait:
			bad = append(bad, domain.FieldError{Pointer: "query:wait", Code: "out_of_range", Message: "must be from 0 to " + maxLedgerWait.String()})
		}
		wait = d
	}
	for _, name := range []string{"after", "wait"} {
		if len(q[name]) > 1 {
			// Read as its first value, as the listing's and the event
			// stream's parameters are refused when repeated.
			bad = append(bad, domain.FieldError{Pointer: "query:" + name, Code: "repeated", Message: "is given more than once"})
		}
	}
	if len(bad) > 0 {
		// 422 validation_failed, as the listing's query parameters answer.
		return 0, 0, domain.Invalid("ledger.read", bad...)
	}
	return after, wait, nil
}

func (s *Server) getLedger(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["handoffId"]
	after, wait, err := ledgerQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	view, err := s.visibleContract(w, r, id) // also the tenant check, before any wait
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var deadline <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		deadline = t.C
	}
	last := wait == 0 // answer what this read finds
	unwatch := func() {}
	defer func() { unwatch() }()
	for {
		// Subscribe before reading: an event applied between the read and
		// the wait closes changed, so it is never missed. Only this
		// handoff's events wake it: waking every waiting read at every
		// event made one tenant's thousands of waits slow every other
		// tenant's writes.
		unwatch()
		changed, stop := s.proj.StreamChanged(domain.StreamID(id))
		// The keys stream too: a key revoked while its read waits is
		// refused then, not held until the wait ends.
		keysChanged, stopKeys := s.proj.StreamChanged(domain.KeysStream)
		unwatch = func() { stop(); stopKeys() }
		if wait > 0 && s.revokedCaller(r) {
			s.refuseRevoked(w, r)
			return
		}
		pos := s.proj.Checkpoint()
		// A wake looks for an event past after with one key before it
		// reads the whole trail (a ledger of many proofs is tens of MB to
		// decode).
		past, err := last, error(nil)
		if !last {
			past, err = s.proj.LedgerPast(id, after)
		}
		var entries []domain.LedgerEntry
		if err == nil && past {
			if ledgerReadHook != nil {
				ledgerReadHook()
			}
			entries, err = s.proj.Ledger(id)
		}
		var q *projections.QuarantinedError
		if errors.As(err, &q) {
			err = quarantinedProblem(q) // quarantined since visibleContract read it
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if past {
			if wait > 0 {
				// A key revoked while the read waited is refused what came
				// after (the read models apply the revocation and the
				// events in the feed's order).
				if s.revokedCaller(r) {
					s.refuseRevoked(w, r)
					return
				}
				setPosition(w, pos) // the read models moved while it waited
			}
			writeLedger(w, id, view, entries, after)
			return
		}
		if ledgerWaitHook != nil {
			ledgerWaitHook()
		}
		select {
		case <-changed:
		case <-keysChanged:
		case <-deadline:
			last = true // one more read, then answer, empty or not
		case <-s.stopWaits:
			last = true
		case <-r.Context().Done():
			return // the client is gone: nobody to answer
		}
	}
}

// revokedCaller says whether the key r came with has been revoked since it
// was authenticated, as this replica's read models know.
func (s *Server) revokedCaller(r *http.Request) bool {
	p := principalOf(r.Context())
	if p.KeyID == "" {
		return false
	}
	rec, err := s.proj.KeyByID(p.KeyID)
	return err == nil && rec.RevokedAt != nil
}

// writeLedger answers the trail: state, head and chain from the whole trail,
// events only those past after.
func writeLedger(w http.ResponseWriter, id string, view json.RawMessage, entries []domain.LedgerEntry, after uint64) {
	// State and head come from the trail's last event, not from the contract
	// view, a second read that a callback landing in between could make
	// newer than the events.
	var v struct {
		State      domain.State      `json:"state"`
		LedgerHead domain.LedgerHead `json:"ledgerHead"`
	}
	json.Unmarshal(view, &v)
	if n := len(entries); n > 0 {
		last := entries[n-1]
		v.State, v.LedgerHead = last.StateAfter, domain.LedgerHead{Seq: last.Seq, Hash: last.Hash}
	}
	recs := make([]domain.Recorded, len(entries))
	for i, e := range entries {
		raw, _ := e.Data.(json.RawMessage)
		recs[i] = domain.Recorded{Seq: e.Seq, Type: e.Type, Data: raw, Actor: e.Actor, RecordedAt: e.RecordedAt, PrevHash: e.PrevHash, Hash: e.Hash}
	}
	chain := map[string]any{"intact": true}
	if br := domain.VerifyChain(id, recs); br != nil {
		chain = map[string]any{"intact": false, "firstBreak": map[string]any{"seq": br.Seq, "type": br.Type, "reason": br.Reason}}
	}
	shown := entries
	if after > 0 {
		shown = []domain.LedgerEntry{}
		for _, e := range entries {
			if e.Seq > after {
				shown = append(shown, e)
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"handoffId": id, "state": v.State, "events": shown, "head": v.LedgerHead, "chain": chain,
		"genesisHash": domain.GenesisHash(id),
	})
}
