package http

import (
	"net/http"
	"strings"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/eventstore/ledger"
)

// The console's words for a person: refusals told in their terms (what
// happened, whether anything was recorded, what to do), never the API's
// codes and JSON pointers, which are for programs.

// forPerson rewrites a refused form's problem in a person's terms; the
// code stays on the page as data for support, not as words. action is the
// form's (approve, reject, review).
func forPerson(p *Problem, action string) {
	p.Title = "Not recorded"
	switch p.Code {
	case "secret_detected":
		rule := ""
		if len(p.Findings) > 0 {
			rule = " (" + p.Findings[0].RuleID + ")"
		}
		p.Detail = "What you wrote holds what looks like a secret" + rule + ", so nothing was recorded: the ledger keeps every word for good. Write it again without the secret."
	case "handoff_changed":
		p.Detail = "This handoff changed while you had the page open, so your decision was not recorded: it would have been on what you had not seen. The page below is as it is now; read what came and decide again."
	case "separation_of_duties":
		if action == "review" {
			p.Detail = "You approved this handoff, so you may not also review its proof: separation of duties asks another verifier to. Nothing was recorded."
		} else {
			p.Detail = "You created this contract, so you may not approve it: separation of duties asks another approver to. Nothing was recorded."
		}
	case "duplicate_approver":
		p.Detail = "Your approval already stands, and this contract needs approvals from different people, so a second one from you would not count. Nothing more was recorded."
	case "approval_already_decided":
		p.Detail = "Someone decided this handoff before your decision arrived (the page below shows how). Yours was not recorded."
	case "ledger_closed":
		p.Detail = "This handoff's ledger is closed: nothing more can be recorded on it, and your decision was not."
	case "approval_expired":
		p.Detail = "The time to decide on this handoff ran out before your decision arrived, so it was not recorded; the executor may not act."
	case "no_proof", "transition_not_allowed":
		p.Detail = "This handoff is not at a step that takes this decision now (the page below shows where it is), so nothing was recorded."
	case "idempotency_key_reused":
		// Only a recorded send keeps the form's key: the page below shows
		// it, and may offer no form (an approval that stands).
		p.Detail = "The first send of this form was recorded (the page below shows it); this one, with another button or other words, was not: a form is recorded once."
	case "idempotency_in_flight":
		p.Detail = "Your first send of this form is still being recorded. Wait a moment, then reload the page to see it."
	case "validation_failed":
		words := make([]string, 0, len(p.Fields))
		for _, f := range p.Fields {
			words = append(words, fieldForPerson(f))
		}
		p.Detail = strings.Join(words, " ") + " Nothing was recorded."
	default:
		p.Detail = "Your decision was not recorded: " + p.Detail
	}
}

// againLink is where a page that could not be answered leads the person.
type againLink struct{ URL, Text string }

// unavailableForPerson rewrites a 503 (the store or the read models not
// answering, the server stopping, a handoff too busy) in a person's terms:
// what happened, whether anything changed, and to try again in a moment;
// the API's words ("read models", "replica", "Idempotency-Key") are for
// programs. It answers the link that tries again.
func unavailableForPerson(p *Problem, r *http.Request) againLink {
	what := map[string]string{
		"read_model_behind": "this server has not yet caught up with the latest changes to the ledger",
		"store_unavailable": "the ledger's store did not answer",
		"shutting_down":     "this server is restarting",
		"busy":              "the handoff kept changing while your decision was being recorded",
	}[p.Code]
	if what == "" {
		what = "a service the console needs did not answer"
	}
	p.Title = "Not available for a moment"
	switch {
	case r.Method != http.MethodPost:
		p.Detail = "This page could not be shown just now: " + what + ". Nothing was changed. Reload the page in a moment."
		return againLink{r.URL.RequestURI(), "Reload this page"}
	case r.URL.Path == "/console/signin":
		p.Detail = "Signing in did not finish: " + what + ". Open your sign-in link again in a moment; if it says the link was already used, ask an admin for a new one."
	case r.URL.Path == "/console/signout":
		p.Detail = "Signing out did not finish: " + what + ". Sign out again in a moment."
	case strings.HasSuffix(r.URL.Path, "/actions"):
		recorded := "Your decision may or may not have been recorded."
		if p.Code == "busy" {
			recorded = "Your decision was not recorded."
		}
		p.Detail = "Your decision could not be answered just now: " + what + ". " + recorded +
			" Open the handoff again in a moment: it shows your decision if it was recorded; if not, decide again."
		return againLink{strings.TrimSuffix(r.URL.EscapedPath(), "/actions"), "Open the handoff again"}
	default:
		p.Detail = "This could not be answered just now: " + what + ". Try again in a moment."
	}
	return againLink{"/console/", "Back to the inbox"}
}

// failedForPerson rewrites a 500 (a fault on the server's side, logged
// under the request id) in a person's terms: what happened, whether
// anything changed, what to do, and to quote the request id the page
// shows if it happens again. It answers the link that tries again.
func failedForPerson(p *Problem, r *http.Request) againLink {
	const report = " If it fails again, tell whoever runs Baton for you, quoting the request id below."
	p.Title = "Something went wrong"
	switch {
	case r.Method != http.MethodPost:
		p.Detail = "This page could not be shown: the server failed while answering. Nothing was changed. Reload the page." + report
		return againLink{r.URL.RequestURI(), "Reload this page"}
	case r.URL.Path == "/console/signin":
		p.Detail = "Signing in did not finish: the server failed while answering. Open your sign-in link again; if it says the link was already used, ask an admin for a new one." + report
	case r.URL.Path == "/console/signout":
		p.Detail = "Signing out did not finish: the server failed while answering. Sign out again." + report
	case strings.HasSuffix(r.URL.Path, "/actions"):
		p.Detail = "Your decision could not be answered: the server failed while answering. Your decision may or may not have been recorded. " +
			"Open the handoff again: it shows your decision if it was recorded; if not, decide again." + report
		return againLink{strings.TrimSuffix(r.URL.EscapedPath(), "/actions"), "Open the handoff again"}
	default:
		p.Detail = "This could not be answered: the server failed while answering. Try again." + report
	}
	return againLink{"/console/", "Back to the inbox"}
}

// notFoundForPerson rewrites a 404 (a handoff this person cannot see, an
// address of no page) in a person's terms: what it may mean and what to
// do. A handoff of another tenant is as unknown as one that never was,
// and the page says both. The API's words ("no handoff X", "No route for
// GET /console/x.") are for programs.
func notFoundForPerson(p *Problem, r *http.Request) {
	changed := "Nothing was changed."
	if r.Method == http.MethodPost {
		changed = "Nothing was recorded."
	}
	switch p.Code {
	case "handoff_not_found":
		p.Title = "No such handoff"
		where := ""
		if t := sessionOf(r.Context()).Tenant; t != "" {
			where = " (you are signed in to tenant " + t + ")"
		}
		p.Detail = "There is no handoff at this address that you can see: it may belong to another tenant" + where +
			", or the address may be mistyped. " + changed + " Ask whoever sent you the link, or sign in with a link for that handoff's tenant."
	case "not_found":
		p.Title = "No such page"
		p.Detail = "There is no console page at this address; it may be mistyped. " + changed + " The inbox lists the handoffs waiting for you."
	}
}

// tooLargeForPerson rewrites a 413 (a form past the bytes the console
// reads: a long log pasted into a reason or the notes) in a person's
// terms: nothing was recorded, and going back keeps what was written, to
// shorten. The API's words ("the request body is larger than 65536
// bytes") are for programs.
func tooLargeForPerson(p *Problem, r *http.Request) againLink {
	p.Title = "Too long to send"
	p.Detail = "What you sent is too long for the console to read (more than 64 KB; a reason or notes take at most 4,000 characters). " +
		"Nothing was recorded. Go back (your browser keeps what you wrote), shorten it, and send it again."
	return formAgain(r)
}

// formAgain leads from a form that was not read back to its handoff, or
// to the inbox.
func formAgain(r *http.Request) againLink {
	if strings.HasSuffix(r.URL.Path, "/actions") {
		return againLink{strings.TrimSuffix(r.URL.EscapedPath(), "/actions"), "Open the handoff again"}
	}
	return againLink{"/console/", "Back to the inbox"}
}

// badFormForPerson rewrites a 400 (a form the console cannot read, or an
// action it does not have: a form made by hand, or from a page of an
// older console) in a person's terms: what happened, that nothing was
// recorded, and to use the console's own form, drawn anew. The API's
// words ("the form could not be read", "no such action") are for
// programs. It answers the link to that form's page.
func badFormForPerson(p *Problem, r *http.Request) againLink {
	what := map[string]string{
		"bad_form":       "what was sent could not be read as one of the console's forms",
		"unknown_action": "this form asked for an action the console does not have",
		"repeated_field": "this form gave one of its fields more than once, so what it asked for is not clear",
		"no_head":        "this form does not say what its page showed when it was drawn, so it could decide on what you have not seen",
	}[p.Code]
	if what == "" {
		return againLink{"/console/", "Back to the inbox"}
	}
	what += " (it may come from an older page, or have been changed by hand)"
	p.Title = "Form not understood"
	switch {
	case r.URL.Path == "/console/signin":
		p.Detail = "Signing in did not happen: " + what + ". Nothing was recorded. Open your sign-in link again and use its button."
	case r.URL.Path == "/console/signout":
		p.Detail = "Signing out did not happen: " + what + ". Nothing was recorded. Sign out again from a page of the console."
	case strings.HasSuffix(r.URL.Path, "/actions"):
		p.Detail = "Your decision was not recorded: " + what + ". Open the handoff again and decide with the form on its page."
		return againLink{strings.TrimSuffix(r.URL.EscapedPath(), "/actions"), "Open the handoff again"}
	default:
		p.Detail = "This was not done: " + what + ". Nothing was recorded. Use the console's pages, reloaded."
	}
	return againLink{"/console/", "Back to the inbox"}
}

// fieldForPerson says what is wrong with one field of a console form, by
// the box the person sees.
func fieldForPerson(f domain.FieldError) string {
	box := map[string]string{"/reason": "The reason", "/notes": "The notes", "/verdict": "The verdict"}[f.Pointer]
	switch {
	case f.Code == "reason_required":
		return "A rejection needs a reason: write why in the Reason box."
	case f.Pointer == "/verdict":
		return "Choose a verdict: verified, needs review or rejected."
	case f.Code == "too_long" && box != "":
		return box + " is too long (" + strings.TrimPrefix(f.Message, "is ") + "); shorten it."
	case f.Pointer == "/approvedBy" || f.Pointer == "/reviewer":
		return "Your name as you signed in cannot be recorded (" + f.Message + "); ask an admin for a link under a plain name."
	case box != "":
		return box + " " + f.Message + "."
	}
	return "The form " + f.Message + "."
}

// endedWords tell a person why their session ended: Says on the sign-in
// page, Why (a clause) where a live page stops updating.
type endedWords struct{ Says, Why string }

func sessionEndedWords(e *ledger.SessionEnded) endedWords {
	at := e.At.UTC().Format("2006-01-02 15:04:05Z")
	switch e.Reason {
	case "revoked":
		return endedWords{"Your session was revoked by an admin at " + at + ", so this console no longer knows you. If you still need it, ask an admin for a new link.", "your session was revoked by an admin"}
	case ledger.SessionExpired:
		return endedWords{"Your session expired at " + at + " (a session lasts " + plural(int(domain.ConsoleSessionTTL.Hours()), "hour") + ").", "your session expired"}
	case "signed out":
		return endedWords{"You signed out of this session at " + at + ".", "you signed out"}
	case "replaced by another sign-in in the same browser":
		return endedWords{"Your session ended at " + at + ": this browser signed in with another link.", "this browser signed in with another link"}
	}
	return endedWords{"Your session ended at " + at + ".", "your session ended"}
}

// tooSlowForPerson rewrites a 408 (a form whose body did not come within
// the server's limit: a connection that stalled while it was sent) in a
// person's terms, as tooLargeForPerson does a 413.
func tooSlowForPerson(p *Problem, r *http.Request) againLink {
	p.Title = "Not received in time"
	p.Detail = "What you sent did not reach the console in time: the connection stalled while it was being sent. " +
		"Nothing was recorded. Go back (your browser keeps what you wrote) and send it again."
	return formAgain(r)
}
