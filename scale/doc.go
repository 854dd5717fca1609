// Package scale holds the measurements behind docs/scaling.md: the cost of
// one checkpoint event in recall and in Postgres (CPU, commits, WAL bytes,
// rows), from which the capacity model of one Postgres is derived. It has
// tests only; they log their figures and assert only what must hold (every
// event applied), never a time.
package scale
