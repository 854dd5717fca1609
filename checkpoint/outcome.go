package checkpoint

// Outcome says what handling an event, or folding a history, did. It is the
// one vocabulary of the core's decisions, the store's results, the worker's
// handling and the metrics' outcome labels (its String).
type Outcome int

const (
	// Applied: messages were summarised and the cursor moved.
	Applied Outcome = iota
	// NothingToSummarise: the lineage matches but there is no user request
	// after the cursor; at most MessageCount changes.
	NothingToSummarise
	// Stale: the history is shorter than the cursor, or conflicts with a
	// longer (or as long, earlier accepted) unsummarised tail; nothing
	// changes.
	Stale
	// PrefixMismatch: the history's first messages are not the ones recall
	// holds; the event is rejected and nothing changes.
	PrefixMismatch
	// Accepted: the event extended the history recall holds, or replaced a
	// shorter unsummarised tail of it.
	Accepted
	// Duplicate: recall already holds everything the event carries.
	Duplicate
	// Gap: an append event starts after the end of the history recall
	// holds; it is retried for a while, then rejected.
	Gap
	// Deleted: the conversation was deleted (by this event, or before).
	Deleted
	// Rejected: the event was recorded as rejected.
	Rejected
	// Retried: the event could not be handled now (Postgres unreachable,
	// say) and comes back later.
	Retried
	// GapRetried: an event with a gap comes back later, in case the
	// messages before it arrive.
	GapRetried
)

var outcomeNames = [...]string{
	Applied:            "applied",
	NothingToSummarise: "nothing",
	Stale:              "stale",
	PrefixMismatch:     "prefix_mismatch",
	Accepted:           "accepted",
	Duplicate:          "duplicate",
	Gap:                "gap",
	Deleted:            "deleted",
	Rejected:           "rejected",
	Retried:            "retried",
	GapRetried:         "gap_retried",
}

func (o Outcome) String() string {
	if o < 0 || int(o) >= len(outcomeNames) {
		return "unknown"
	}
	return outcomeNames[o]
}
