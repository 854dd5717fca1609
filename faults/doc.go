// Package faults is recall's fault suite (issues 3 and 7): it proves, with
// real processes, a real Postgres and a real NATS JetStream, that nothing
// accepted is lost, nothing is duplicated and no one reads what is not
// theirs.
//
// The package holds tests only. TestMain builds the real binary once
// (go build ./cmd/recall) and the scenarios run it as child processes:
//
//  1. Kill loop: three `recall worker` processes over a stream of growing
//     snapshots; every second or two one of them is SIGKILLed and restarted.
//  2. Rolling drain: the same with SIGTERM; every drain exits 0 within
//     RECALL_SHUTDOWN_TIMEOUT and no event acknowledged before a drain is
//     delivered again after it.
//  3. Postgres outage: a private cluster the test owns (initdb and pg_ctl,
//     run as the postgres OS user) is stopped mid-stream and started again;
//     and, on the shared server, pg_terminate_backend of the workers'
//     connections mid-stream.
//  4. NATS outage: the in-process JetStream server is restarted mid-stream
//     (same port, file store kept).
//  5. Poison and flood: a corpus of bad events interleaved with good ones at
//     full speed: one rejection row each, the good ones all applied, the
//     worker's memory bounded.
//  6. Isolation: every route of the read API with other users' tokens,
//     tampered tokens, alg none, expired tokens and tokens without exp; and
//     a scan of every log line, /metrics and every error body for a marker
//     carried inside every message.
//  7. Erasure: conversations carrying a marker of the run, with bad events
//     for the same keys, are deleted (through the API and with delete
//     events) and then receive late valid and bad events; every column of
//     every table (River's job table included), every message the stream
//     still stores and every log line are scanned: the marker is found
//     before the deletion and 0 times after it.
//  8. Stream recreated: bad events, then the stream is deleted and
//     recreated with the database kept and the same bad events sent again:
//     one new rejection row each.
//  9. Waiter flood: many concurrent long-polls from one token against a
//     small RECALL_MAX_WAITERS while the pipeline ingests: at most the cap
//     wait, the rest are answered 429 with Retry-After, the API stays within
//     its own pool's bound and nothing is left over.
//  10. JetStream cluster: three clustered in-process servers (routes on
//     loopback, sync_interval always), a stream of three replicas that
//     recall creates (RECALL_STREAM_REPLICAS=3) and two workers; while
//     events flow at about half load, the stream's leader is killed and
//     restarted, a worker is SIGKILLed with events in flight and restarted,
//     and another node restarts with its store wiped. Every event the
//     stream acknowledged is handled and every state equals its oracle; the
//     test logs the leader election, the publish stall, the ingest lag
//     around each fault and the time to recover (docs/scaling.md).
//     TestJetStreamClusterThroughput measures the pipeline with one, two
//     and three workers on the same cluster.
//
// TestDeployNATSUsers runs deploy/nats.conf: only the publisher user
// publishes, only recall's user consumes, anonymous connections are
// refused.
//
// Each scenario has an oracle: the pure fold (evidence.Fold) of the longest
// history published for each conversation, compared with what Postgres
// holds at the end (all but version). Each reports a row of figures (events
// published, accepted by the stream, states matching the oracle,
// duplicated entries, lost conversations, time to recover) with t.Log, and
// TestMain prints the table at the end (go test -v shows it; set
// RECALL_FAULTS_REPORT=FILE to have it written to a file as well).
//
// # Running
//
// The short version runs by default and takes a few minutes on two cores:
//
//	go test ./faults
//
// The long version uses issue 7's sizes (3 workers, 20,000 events for 500
// conversations, a kill every few seconds) and takes tens of minutes:
//
//	RECALL_FAULTS=long go test -v -timeout 60m ./faults
//
// Run one scenario with -run, for instance
// RECALL_FAULTS=long go test -v -timeout 60m -run TestKillLoop ./faults.
//
// The suite needs Postgres (TEST_DATABASE_URL, default
// postgres://postgres@127.0.0.1:5432/postgres) and the PostgreSQL server
// binaries (/usr/lib/postgresql/*/bin) for the private cluster of scenario
// 3, which it runs as the postgres OS user when the tests run as root. NATS
// runs in the test process. Nothing is skipped: a missing dependency fails
// the test that needs it.
package faults
