// Package kurrenttest is a TEST DOUBLE of a KurrentDB (EventStoreDB) node. It
// is not a database: everything it holds lives in memory and is gone when the
// process ends. It exists so that the eventstore/kurrent adapter, and the
// official Go client underneath it, can be tested on every `go test` without a
// real server.
//
// It is an in-process gRPC server speaking the part of the client protocol
// the adapter uses, with the server's expected-revision and idempotency
// rules; tests can inspect and disturb it (Appends, DropSubscriptions,
// Restart, AnswerNotLeader). What it does as the server does, and where it
// differs: docs/eventstore.md ("The KurrentDB test double").
package kurrenttest
