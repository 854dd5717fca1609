//go:build !linux

package checkpointtest

import "time"

var start = time.Now()

// ThreadCPU falls back to wall time where the thread's CPU time is not at
// hand.
func ThreadCPU() time.Duration { return time.Since(start) }
