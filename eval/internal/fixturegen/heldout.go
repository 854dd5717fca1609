package main

// heldOut returns the held-out fixtures: long conversations that the fold
// is measured on and never tuned on. Each is written as a real user of an
// agent would talk (facts stated once, in passing, some without any
// keyword; corrections; requests that refer back without repeating the
// fact) and not shaped after any fold's rules.
func heldOut() []*fixture {
	return []*fixture{
		kitchenRenovationDE(),
		supportEscalation(),
		pipelineIncidentJA(),
		paperCollabFR(),
		tripPatagoniaES(),
		hiringBackend(),
		contractReviewZH(),
	}
}
