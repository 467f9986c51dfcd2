package domain

import "time"

// Callbacks are the routes an executor reports on for one handoff.
type Callbacks struct {
	Approval string `json:"approval"`
	Proof    string `json:"proof"`
	Result   string `json:"result"`
	Review   string `json:"review"`
	Ledger   string `json:"ledger"`
}

// CallbacksFor returns the callback routes of a handoff.
func CallbacksFor(id string) Callbacks {
	base := "/v1/executions/" + id
	return Callbacks{Approval: base + "/approval", Proof: base + "/proof", Result: base + "/result", Review: base + "/review", Ledger: base + "/ledger"}
}

// LedgerRecord summarises a handoff's execution ledger.
type LedgerRecord struct {
	Head         LedgerHead `json:"head"`
	Events       uint64     `json:"events"`
	ClosedReason string     `json:"closedReason,omitempty"`
	FinalStatus  string     `json:"finalStatus,omitempty"`
	// ReviewVerdict: the verifier's verdict a reviewed ledger closed on
	// (a SUCCEEDED result whose proof was rejected shows both).
	ReviewVerdict string     `json:"reviewVerdict,omitempty"`
	ClosedAt      *time.Time `json:"closedAt,omitempty"`
}

// ContractView is the stored handoff contract as the API shows it. It is a
// pure function of the ledger, so a replayed callback and a rebuilt read
// model render the same bytes.
type ContractView struct {
	HandoffID         string         `json:"handoffId"`
	ProtocolVersion   string         `json:"protocolVersion"`
	SchemaVersion     string         `json:"schemaVersion"`
	Objective         string         `json:"objective"`
	TargetExecutor    string         `json:"targetExecutor"`
	ExecutorProtocol  string         `json:"executorProtocol"`
	RiskLevel         string         `json:"riskLevel"`
	PlanID            string         `json:"planId,omitempty"`
	ApprovalPolicy    ApprovalPolicy `json:"approvalPolicy"`
	ProofPolicy       ProofPolicy    `json:"proofPolicy"`
	Deadlines         *LeaseView     `json:"deadlines,omitempty"`
	Callbacks         Callbacks      `json:"callbacks"`
	State             State          `json:"state"`
	ExecutorRunID     string         `json:"executorRunId,omitempty"`
	ExecutorType      string         `json:"executorType,omitempty"`
	Proofs            []ProofRecord  `json:"proofs"`
	Review            *Review        `json:"review,omitempty"`
	Result            *ResultRecord  `json:"result,omitempty"`
	Ledger            LedgerRecord   `json:"ledger"`
	LedgerHead        LedgerHead     `json:"ledgerHead"`
	CreatedAt         time.Time      `json:"createdAt"`
	UpdatedAt         time.Time      `json:"updatedAt"`
	Tenant            string         `json:"-"`
	ExecutionBoundary string         `json:"executionBoundary"`
}

// Boundary is stated on every contract: Baton records, executors act.
const Boundary = "Baton plans, records and verifies; it never performs the external action. The executor acts only while approvalPolicy.status is APPROVED."

// View renders a handoff.
func (h *Handoff) View() ContractView {
	proofs := h.Proofs
	if proofs == nil {
		proofs = []ProofRecord{}
	}
	return ContractView{
		HandoffID: h.ID, ProtocolVersion: ProtocolVersion, SchemaVersion: SchemaVersion,
		Objective: h.Objective, TargetExecutor: h.TargetExecutor, ExecutorProtocol: h.ExecutorProtocol,
		RiskLevel: h.RiskLevel, PlanID: h.PlanID, ApprovalPolicy: h.Approval, ProofPolicy: h.ProofPolicy,
		Deadlines: h.deadlinesView(), Callbacks: CallbacksFor(h.ID), State: h.State, ExecutorRunID: h.ExecutorRunID, ExecutorType: h.ExecutorType,
		Proofs: proofs, Review: h.Review, Result: h.Result,
		Ledger:     LedgerRecord{Head: h.Head, Events: h.Head.Seq, ClosedReason: h.ClosedReason, FinalStatus: h.FinalStatus, ReviewVerdict: h.ClosedVerdict, ClosedAt: h.ClosedAt},
		LedgerHead: h.Head, CreatedAt: h.CreatedAt, UpdatedAt: h.UpdatedAt, Tenant: h.Tenant,
		ExecutionBoundary: Boundary,
	}
}

// LedgerEntry is one event of the trail as auditors read it.
type LedgerEntry struct {
	Seq        uint64    `json:"seq"`
	Type       string    `json:"type"`
	StateAfter State     `json:"stateAfter"`
	RecordedAt time.Time `json:"recordedAt"`
	Actor      string    `json:"actor"`
	Data       any       `json:"data"`
	PrevHash   string    `json:"prevHash"`
	Hash       string    `json:"hash"`
}
