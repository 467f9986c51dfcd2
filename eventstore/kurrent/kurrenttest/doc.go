// Package kurrenttest is a TEST DOUBLE of a KurrentDB (EventStoreDB) node. It
// is not a database: everything it holds lives in memory and is gone when the
// process ends. It exists so that the eventstore/kurrent adapter, and the
// official Go client underneath it, can be tested on every `go test` without a
// real server.
//
// It is an in-process gRPC server that speaks the subset of the KurrentDB
// client protocol the adapter uses, built on the protobuf definitions shipped
// inside github.com/EventStore/EventStore-Client-Go/v4 (protos/...):
//
//   - event_store.client.server_features.ServerFeatures/GetSupportedMethods,
//     which the client calls on every (re)connection;
//   - event_store.client.gossip.Gossip/Read, which the client calls in cluster
//     mode (esdb+discover:// or several hosts); the double reports itself as
//     the single, alive leader;
//   - event_store.client.streams.Streams/Append;
//   - event_store.client.streams.Streams/Read: stream reads (both directions),
//     $all reads (both directions, with or without a filter), and
//     subscriptions to a stream or to $all (with event-type or stream-name
//     filters by prefix or regular expression, checkpoints and caught-up
//     notifications).
//
// Delete, Tombstone, BatchAppend, persistent subscriptions, projections,
// users, operations and monitoring answer codes.Unimplemented.
//
// # What it implements as the server does
//
// Expected revisions follow the server's commit check (IndexWriter.CheckCommit
// in KurrentDB): NoStream, Any, StreamExists (which a stream with only
// metadata, "$$name", also satisfies) and an exact revision. A mismatch is
// answered with a WrongExpectedVersion result naming the stream's current
// revision (or no stream), in both the current and the 20.6.0 fields.
//
// Idempotent appends follow the same rules. With an exact expectation (or
// NoStream) that is behind the stream, the proposed events are compared one
// by one with the events stored after the expected revision: all equal ids is
// a success that writes nothing and reports the original last revision and
// position; a first event that differs is a wrong expected version; a later
// one that differs (part written, part new) is "corrupted idempotency", which
// the server also reports as a wrong expected version. With Any or
// StreamExists, ids already stored in that stream make the append idempotent.
//
// $all positions are log positions: every event is a self-committed record
// whose commit and prepare positions are both its byte offset in an imaginary
// transaction file, so they are strictly increasing in commit order and never
// zero (the log starts with an imaginary epoch record). Forward reads of $all
// include the event at the requested position; backward reads and
// subscriptions start strictly before and strictly after it, as the server
// does. An append reports the position of its last event, idempotent retries
// included (Options.NoIdempotentPosition answers those without a position, as
// older servers did).
//
// Like a fresh node, the log starts with a few system events ($-prefixed types
// in $-prefixed streams) unless Options.Empty is set, and
// Options.SystemEventEvery interleaves more, so clients must skip them.
// Appends larger than Options.MaxAppendSize (default 1 MiB, the server's
// default --max-append-size, counted as the server counts: data + metadata +
// two bytes per character of the type) are refused with InvalidArgument, and
// so are proposed events without the "type" or "content-type" metadata.
//
// # Where it differs from a real server
//
//   - No persistence, no cluster, no TLS, no authentication or ACLs; the
//     gRPC server is plaintext only (connect with ?tls=false).
//   - Idempotency with Any/StreamExists looks ids up in a complete index;
//     the server only remembers recently committed ids (a bounded cache), so
//     an old retry with Any may be written twice there.
//   - No stream metadata semantics ($maxCount, $tb, ACLs ...), no deletes,
//     no link resolution ($> events are stored but never resolved).
//   - Any position given to a read or subscription is accepted; the server
//     may refuse a position that is not on a record boundary.
//   - Subscriptions are always served from the log (there is no separate
//     live phase), so a slow subscriber is never dropped and never "falls
//     behind"; checkpoints are sent every maxSearchWindow x multiplier
//     considered events and whenever the subscription reaches the end of
//     the log, which is close to, but not exactly, the server's timing.
//   - Reported versions, ids and timestamps are made up ("created" is the
//     wall clock at append, in .NET ticks since the Unix epoch, as the server
//     sends it).
//
// Tests can see what clients sent (Appends), drop every subscription
// (DropSubscriptions), restart the server on the same address with its
// data (Restart), and make it answer calls that require the leader as a
// node that just lost leadership does (AnswerNotLeader: "not-leader" with
// the leader's endpoint, which is the double itself; there is no second
// node, so a real election, its timing and a follower's lag are not
// reproduced). The Server is reusable with any listener (Serve), so it can
// also run as a standalone process (Serve(ln, opts) is all a main needs).
package kurrenttest
