package http

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/batonhq/baton/domain"
)

// Cell is one entry of the transition table as GET /v1/executor-protocol
// publishes it and docs/protocol.md prints it: the domain's cell with its
// answer's status code.
type Cell struct {
	State   domain.State `json:"state"`
	Command string       `json:"command"`
	Status  int          `json:"status"`
	Code    string       `json:"code,omitempty"` // the problem code when refused
	Next    domain.State `json:"next,omitempty"` // the resting state when allowed
}

// TransitionTable is domain.TransitionTable in HTTP terms: an allowed
// command answers 200, a refused one the status of its error's kind.
func TransitionTable() []Cell {
	cells := domain.TransitionTable()
	out := make([]Cell, len(cells))
	for i, c := range cells {
		if c.Allowed {
			out[i] = Cell{State: c.State, Command: c.Command, Status: http.StatusOK, Next: c.Next}
		} else {
			out[i] = Cell{State: c.State, Command: c.Command, Status: statusOf(c.Kind), Code: c.Code}
		}
	}
	return out
}

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
			"approval":  "POST /v1/executions/{handoffId}/approval",
			"proof":     "POST /v1/executions/{handoffId}/proof",
			"result":    "POST /v1/executions/{handoffId}/result",
			"review":    "POST /v1/executions/{handoffId}/review",
			"heartbeat": "POST /v1/executions/{handoffId}/heartbeat",
			"ledger":    "GET /v1/executions/{handoffId}/ledger",
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
			"approvalTimeoutSeconds: a contract still PENDING_APPROVAL when it passes records ApprovalExpired (approval status EXPIRED) and closes; the executor must not act.",
			"heartbeatSeconds: after approval the executor's run holds a lease, renewed by every executor callback and by POST /v1/executions/{handoffId}/heartbeat; a missed lease records ExecutorTimedOut, then onExecutorTimeout says what follows: close (final status TIMED_OUT) or release (another executorRunId may take the run over; the released run's callbacks get 409).",
			"resultTimeoutSeconds: a hard cap from approval to result, whatever the heartbeats; passed, ExecutorTimedOut closes the ledger TIMED_OUT.",
			"requiredApprovals: N distinct approvers (keys, or console people) must approve; each approval before the last is ApprovalGranted and the contract stays PENDING_APPROVAL; one rejection rejects.",
			"separationOfDuties (on by itself with requiredApprovals of 2 or more): the creating key cannot approve, and an approver's key cannot act as the executor or review; refused with 409 separation_of_duties.",
			"escalateAfterSeconds with escalateTo: a pending approval records ApprovalEscalated once when it passes; the approval stays open.",
			"A callback arriving after a deadline has passed is refused with 409 (approval_expired, lease_expired, result_timed_out) even before the timer's event is recorded: the deadline decides, not which replica is quicker.",
			"A retried callback (same Idempotency-Key, or a byte-identical body) returns the first answer with Idempotent-Replayed: true and appends nothing.",
			"Every callback answer carries ledgerHead {seq, hash}: hash = hex(SHA-256(prevHash || canonical event)), prevHash hashed as its 64 hex characters.",
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
	// ApprovalMode is a contract's name for approvalRequired: the body of
	// a create previews as it is.
	ApprovalMode string `json:"approvalMode"`
}

// previewFields are the names a preview request may hold.
var previewFields = jsonNames[previewRequest]()

// handoffPreview answers what an executor would receive, storing nothing.
func (s *Server) handoffPreview(w http.ResponseWriter, r *http.Request) {
	var req previewRequest
	body, ok := s.readJSON(w, r, &req)
	if !ok {
		return
	}
	// A field it does not read would make a preview of another handoff
	// than the one asked for: a create's approvalMode "auto", ignored,
	// previewed a manual approval.
	if err := refuseUnknown("handoff.preview", body, previewFields,
		"a preview request has "+strings.Join(previewFields, ", ")+"; deadlines and approval rules are a contract's alone (POST /v1/handoff/contracts)"); err != nil {
		s.writeError(w, r, err)
		return
	}
	mode := req.ApprovalMode // "": the plan's, if any, else manual
	if req.ApprovalRequired != nil {
		asked := domain.ApprovalModeManual
		if !*req.ApprovalRequired {
			asked = domain.ApprovalModeAuto
		}
		if mode != "" && mode != asked {
			s.writeError(w, r, domain.Invalid("handoff.preview", domain.FieldError{Pointer: "/approvalMode", Code: "conflict",
				Message: fmt.Sprintf("approvalMode %q and approvalRequired %v ask for different approvals; give one", mode, *req.ApprovalRequired)}))
			return
		}
		mode = asked
	}
	c := domain.CreateContract{
		HandoffID: "preview", Objective: req.Objective, TargetExecutor: req.TargetExecutor,
		ExecutorProtocol: req.ExecutorProtocol, RiskLevel: req.RiskLevel, ApprovalMode: mode,
		ProofRequired: req.ProofRequired, PlanID: req.PlanID,
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
	approval := domain.ApprovalPolicy{Mode: created.ApprovalMode, Status: domain.ApprovalPending}
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
		"nextStep":               "POST /v1/handoff/contracts with the same fields (approvalMode in place of approvalRequired) stores the contract and returns its handoffId and callbacks.",
	})
}
