// Package domain holds Baton's pure types and rules: the handoff aggregate,
// its events and state machine, policies, plans, context packets and errors.
// It does no I/O and imports nothing else of Baton's.
package domain
