package http

import (
	"net/http"

	"github.com/batonhq/baton/domain"
)

// Cell is one entry of the transition table: what a command does in a
// state. The table is published by GET /v1/executor-protocol, printed in
// docs/protocol.md, and walked cell by cell by a test.
type Cell struct {
	State   domain.State `json:"state"`
	Command string       `json:"command"`
	Status  int          `json:"status"`
	Code    string       `json:"code,omitempty"` // the problem code when refused
	Next    domain.State `json:"next,omitempty"` // the resting state when allowed
}

// Commands of the table, in column order.
var TableCommands = []string{"approve", "reject", "proof", "result", "review"}

// TransitionTable is every resting state × every command. executor_started
// is never a resting state: it is entered and left inside the first proof or
// result callback, so its row is that of approval_decided's successors.
func TransitionTable() []Cell {
	const ok = http.StatusOK
	const conflict = http.StatusConflict
	c := func(s domain.State, cmd string, status int, code string, next domain.State) Cell {
		return Cell{State: s, Command: cmd, Status: status, Code: code, Next: next}
	}
	cc, ad, pr, pv, rr, lc := domain.StateContractCreated, domain.StateApprovalDecided, domain.StateProofReceived,
		domain.StateProofReviewed, domain.StateResultReceived, domain.StateLedgerClosed
	return []Cell{
		c(cc, "approve", ok, "", ad),
		c(cc, "reject", ok, "", lc),
		c(cc, "proof", conflict, "approval_pending", ""),
		c(cc, "result", conflict, "approval_pending", ""),
		c(cc, "review", conflict, "no_proof", ""),

		c(ad, "approve", conflict, "approval_already_decided", ""),
		c(ad, "reject", conflict, "approval_already_decided", ""),
		c(ad, "proof", ok, "", pr),
		c(ad, "result", conflict, "proof_required", ""),
		c(ad, "review", conflict, "no_proof", ""),

		c(pr, "approve", conflict, "approval_already_decided", ""),
		c(pr, "reject", conflict, "approval_already_decided", ""),
		c(pr, "proof", ok, "", pr),
		c(pr, "result", ok, "", rr),
		c(pr, "review", ok, "", pv),

		c(pv, "approve", conflict, "approval_already_decided", ""),
		c(pv, "reject", conflict, "approval_already_decided", ""),
		c(pv, "proof", ok, "", pr),
		c(pv, "result", ok, "", lc),
		c(pv, "review", ok, "", pv),

		c(rr, "approve", conflict, "approval_already_decided", ""),
		c(rr, "reject", conflict, "approval_already_decided", ""),
		c(rr, "proof", conflict, "result_already_received", ""),
		c(rr, "result", conflict, "result_already_received", ""),
		c(rr, "review", ok, "", lc),

		c(lc, "approve", conflict, "ledger_closed", ""),
		c(lc, "reject", conflict, "ledger_closed", ""),
		c(lc, "proof", conflict, "ledger_closed", ""),
		c(lc, "result", conflict, "ledger_closed", ""),
		c(lc, "review", conflict, "ledger_closed", ""),
	}
}

// The table assumes a contract whose proof policy requires proof, a result
// callback that carries no proof of its own, and a review verdict of
// verified; docs/protocol.md spells out the variations.

var certificationChecklist = []string{
	"Read protocolVersion and schemaVersion before processing.",
	"Store handoffId and executorRunId for every run.",
	"Validate approvalPolicy before any external action: act only when its status is APPROVED.",
	"Return proof artifacts through POST /v1/executions/{handoffId}/proof.",
	"Return the final status through POST /v1/executions/{handoffId}/result.",
	"Never include secrets, private credentials or raw customer tokens in callbacks (they are refused with 422).",
	"Treat Baton as planner, ledger and verifier, not as the actor of external execution.",
	"Send an Idempotency-Key with every callback and retry with the same key; keep the ledgerHead receipt of every answer.",
}

func (s *Server) executorProtocol(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"protocolVersion": domain.ProtocolVersion,
		"schemaVersion":   domain.SchemaVersion,
		"requiredFields": map[string][]string{
			"contract": {"handoffId", "protocolVersion", "schemaVersion", "approvalPolicy", "proofPolicy", "callbacks", "state"},
			"approval": {"status", "approvedBy"},
			"proof":    {"executorRunId", "status", "proof"},
			"result":   {"executorRunId", "status", "result"},
			"review":   {"verdict", "reviewer"},
		},
		"callbacks": map[string]string{
			"approval": "POST /v1/executions/{handoffId}/approval",
			"proof":    "POST /v1/executions/{handoffId}/proof",
			"result":   "POST /v1/executions/{handoffId}/result",
			"review":   "POST /v1/executions/{handoffId}/review",
			"ledger":   "GET /v1/executions/{handoffId}/ledger",
		},
		"states":      domain.States,
		"transitions": domain.Transitions(),
		"table":       TransitionTable(),
		"statusSets": map[string][]string{
			"approval": domain.ApprovalStatuses,
			"proof":    domain.ProofStatuses,
			"result":   domain.ResultStatuses,
			"review":   domain.ReviewVerdicts,
		},
		"approvalModes":      domain.ApprovalModes,
		"riskLevels":         domain.RiskLevels,
		"autoApprovalPolicy": map[string]any{"approver": domain.AutoApprovalPolicy, "approvesRiskLevels": []string{"low", "medium"}},
		"rules": []string{
			"While approvalPolicy.status is PENDING_APPROVAL or REJECTED the executor must not act; proof and result callbacks are refused with 409 and nothing is stored.",
			"A rejection needs a reason and closes the ledger.",
			"When proofPolicy.required is true, a SUCCEEDED result needs proof earlier or in the same callback, covering every artifact type in proofPolicy.artifactTypes.",
			"The first proof or result callback fixes executorRunId; callbacks from another run are refused with 409.",
			"The ledger closes by itself when the result is in and, if proof is required, a verified or rejected review of the latest proof is in. FAILED and CANCELED results close it at once.",
			"A closed ledger never reopens.",
			"A retried callback (same Idempotency-Key, or a byte-identical body) returns the first answer with Idempotent-Replayed: true and appends nothing.",
			"Every callback answer carries ledgerHead {seq, hash}: hash = SHA-256(prevHash || canonical event).",
		},
		"certificationChecklist": certificationChecklist,
		"executionBoundary":      domain.Boundary,
	})
}

type previewRequest struct {
	Objective        string   `json:"objective"`
	TargetExecutor   string   `json:"targetExecutor"`
	ExecutorProtocol string   `json:"executorProtocol"`
	RiskLevel        string   `json:"riskLevel"`
	ApprovalRequired *bool    `json:"approvalRequired"`
	ProofRequired    []string `json:"proofRequired"`
	PlanID           string   `json:"planId"`
}

// handoffPreview answers what an executor would receive, storing nothing.
func (s *Server) handoffPreview(w http.ResponseWriter, r *http.Request) {
	var req previewRequest
	if _, ok := s.readJSON(w, r, &req); !ok {
		return
	}
	mode := domain.ApprovalModeManual
	if req.ApprovalRequired != nil && !*req.ApprovalRequired {
		mode = domain.ApprovalModeAuto
	}
	c := domain.CreateContract{
		HandoffID: "preview", Objective: req.Objective, TargetExecutor: req.TargetExecutor,
		ExecutorProtocol: req.ExecutorProtocol, RiskLevel: req.RiskLevel, ApprovalMode: mode,
		ProofRequired: req.ProofRequired, PlanID: req.PlanID,
	}
	if req.ApprovalRequired == nil {
		c.ApprovalMode = "" // the plan's, if any, else manual
	}
	if err := s.ledger.Handoffs.FromPlan(r.Context(), principalOf(r.Context()), &c); err != nil {
		s.writeError(w, r, err)
		return
	}
	if c.ApprovalMode == "" {
		c.ApprovalMode = domain.ApprovalModeManual
	}
	// The preview does not demand what only a stored contract needs.
	if c.ExecutorProtocol == "" {
		c.ExecutorProtocol = "executor.v1"
	}
	if c.RiskLevel == "" {
		c.RiskLevel = "medium"
	}
	evs, err := domain.DecideCreate(c)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	created := evs[0].Data.(domain.ContractCreated)
	approval := domain.ApprovalPolicy{Mode: mode, Status: domain.ApprovalPending}
	if len(evs) > 1 {
		d := evs[1].Data.(domain.ApprovalDecided)
		approval.Status, approval.DecidedBy, approval.Reason = d.Status, d.DecidedBy, d.Reason
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object":           "handoff.preview",
		"stored":           false,
		"protocolVersion":  domain.ProtocolVersion,
		"schemaVersion":    domain.SchemaVersion,
		"objective":        created.Objective,
		"targetExecutor":   created.TargetExecutor,
		"executorProtocol": created.ExecutorProtocol,
		"riskLevel":        created.RiskLevel,
		"planId":           created.PlanID,
		"approvalPolicy":   approval,
		"proofPolicy":      created.ProofPolicy,
		"callbacks": map[string]string{
			"approval": "/v1/executions/{handoffId}/approval",
			"proof":    "/v1/executions/{handoffId}/proof",
			"result":   "/v1/executions/{handoffId}/result",
		},
		"requiredFields":         []string{"handoffId", "executorRunId", "protocolVersion", "schemaVersion"},
		"certificationChecklist": certificationChecklist,
		"executionBoundary":      domain.Boundary,
		"nextStep":               "POST /v1/handoff/contracts with the same fields stores the contract and returns its handoffId and callbacks.",
	})
}
