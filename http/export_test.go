package http

import "time"

// Hooks for the tests of package http_test.

// BatchConcurrency is how many probes POST /v1/models/health/batch runs
// at once.
const BatchConcurrency = batchConcurrency

// SetPingEvery sets how often a streamed message sends ping while it waits
// for the upstream, for one test (not a parallel one), and returns the
// function that restores it: call it once the test's front has stopped.
func SetPingEvery(d time.Duration) (restore func()) {
	old := pingEvery
	pingEvery = d
	return func() { pingEvery = old }
}

// SetLedgerWaitHook sets what runs each time a ledger read found nothing new
// and is about to wait, for one test (not a parallel one), and returns the
// function that restores it.
func SetLedgerWaitHook(f func()) (restore func()) {
	old := ledgerWaitHook
	ledgerWaitHook = f
	return func() { ledgerWaitHook = old }
}

// SetLedgerReadHook sets a function run each time a ledger read reads the
// whole trail, for one test (not a parallel one), and returns the function
// that restores it.
func SetLedgerReadHook(f func()) (restore func()) {
	old := ledgerReadHook
	ledgerReadHook = f
	return func() { ledgerReadHook = old }
}

// OpenEventStreams is how many event streams tenant holds open on s.
func OpenEventStreams(s *Server, tenant string) int {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	return s.streams[tenant]
}

// SetConsoleSessionRecheck sets how often an open console event stream
// checks its session, for one test (not a parallel one), and returns the
// function that restores it.
func SetConsoleSessionRecheck(d time.Duration) (restore func()) {
	old := consoleSessionRecheck
	consoleSessionRecheck = d
	return func() { consoleSessionRecheck = old }
}

// SetModelWriteStall sets how long a model stream waits for a client that
// takes nothing, for one test (not a parallel one); restore as
// SetPingEvery's.
func SetModelWriteStall(d time.Duration) (restore func()) {
	old := modelWriteStall
	modelWriteStall = d
	return func() { modelWriteStall = old }
}

// SetListPageBytes sets the bytes of contracts that end a listing's page.
func SetListPageBytes(n int) (restore func()) {
	old := listPageBytes
	listPageBytes = n
	return func() { listPageBytes = old }
}

// SetInboxPageSize sets how many items of a queue one inbox page shows,
// for one test (not a parallel one), and returns the function that
// restores it.
func SetInboxPageSize(n int) (restore func()) {
	old := inboxPageSize
	inboxPageSize = n
	return func() { inboxPageSize = old }
}

// SetIdempotencyLease sets how long a request under an Idempotency-Key
// holds its key by a lease on a shared store.
func (s *Server) SetIdempotencyLease(d time.Duration) { s.ledger.Idempotency.Lease = d }

// SetEventsWriteStall sets how long an event stream waits for a client that
// takes nothing, for one test (not a parallel one); restore as
// SetPingEvery's.
func SetEventsWriteStall(d time.Duration) (restore func()) {
	old := eventsWriteStall
	eventsWriteStall = d
	return func() { eventsWriteStall = old }
}
