package domain

// Commands of the transition table, in column order: the approval callback
// split by its decision, then the other three callbacks.
const (
	CommandApprove = "approve"
	CommandReject  = "reject"
	CommandProof   = "proof"
	CommandResult  = "result"
	CommandReview  = "review"
)

// TableCommands lists the table's commands in column order.
var TableCommands = []string{CommandApprove, CommandReject, CommandProof, CommandResult, CommandReview}

// Cell is one entry of the transition table: what a command does to a
// handoff resting in a state. An allowed command records Events and leaves
// the handoff in Next; a refused one records nothing and fails with an
// *Error of Kind and Code.
type Cell struct {
	State   State
	Command string
	Allowed bool
	Events  []string // the event types recorded, in order, when allowed
	Next    State    // the resting state after them, when allowed
	Kind    Kind     // the refusal's kind, when refused
	Code    string   // the refusal's code, when refused
}

// TransitionTable is every resting state × every command, rows in the
// order of States (executor_started rests only after a run's first
// heartbeat: a first proof or result enters and leaves it). It assumes a proof policy that
// requires a log, a result without proof of its own and a verified review;
// docs/protocol.md spells out the variations.
func TransitionTable() []Cell {
	ok := func(s State, cmd string, next State, events ...string) Cell {
		return Cell{State: s, Command: cmd, Allowed: true, Events: events, Next: next}
	}
	no := func(s State, cmd, code string) Cell {
		return Cell{State: s, Command: cmd, Kind: KindConflict, Code: code}
	}
	cc, ad, es, pr, pv, rr, lc := StateContractCreated, StateApprovalDecided, StateExecutorStarted, StateProofReceived,
		StateProofReviewed, StateResultReceived, StateLedgerClosed
	return []Cell{
		ok(cc, CommandApprove, ad, EventApprovalDecided),
		ok(cc, CommandReject, lc, EventApprovalDecided, EventLedgerClosed),
		no(cc, CommandProof, "approval_pending"),
		no(cc, CommandResult, "approval_pending"),
		no(cc, CommandReview, "no_proof"),

		no(ad, CommandApprove, "approval_already_decided"),
		no(ad, CommandReject, "approval_already_decided"),
		ok(ad, CommandProof, pr, EventExecutorStarted, EventProofReceived),
		no(ad, CommandResult, "proof_required"),
		no(ad, CommandReview, "no_proof"),

		no(es, CommandApprove, "approval_already_decided"),
		no(es, CommandReject, "approval_already_decided"),
		ok(es, CommandProof, pr, EventProofReceived),
		no(es, CommandResult, "proof_required"),
		no(es, CommandReview, "no_proof"),

		no(pr, CommandApprove, "approval_already_decided"),
		no(pr, CommandReject, "approval_already_decided"),
		ok(pr, CommandProof, pr, EventProofReceived),
		ok(pr, CommandResult, rr, EventResultReceived),
		ok(pr, CommandReview, pv, EventProofReviewed),

		no(pv, CommandApprove, "approval_already_decided"),
		no(pv, CommandReject, "approval_already_decided"),
		ok(pv, CommandProof, pr, EventProofReceived),
		ok(pv, CommandResult, lc, EventResultReceived, EventLedgerClosed),
		ok(pv, CommandReview, pv, EventProofReviewed),

		no(rr, CommandApprove, "approval_already_decided"),
		no(rr, CommandReject, "approval_already_decided"),
		no(rr, CommandProof, "result_already_received"),
		no(rr, CommandResult, "result_already_received"),
		ok(rr, CommandReview, lc, EventProofReviewed, EventLedgerClosed),

		no(lc, CommandApprove, "ledger_closed"),
		no(lc, CommandReject, "ledger_closed"),
		no(lc, CommandProof, "ledger_closed"),
		no(lc, CommandResult, "ledger_closed"),
		no(lc, CommandReview, "ledger_closed"),
	}
}
