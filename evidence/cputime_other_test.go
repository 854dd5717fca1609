//go:build !linux

package evidence

import "time"

var start = time.Now()

// threadCPU falls back to wall time where the thread's CPU time is not at
// hand.
func threadCPU() time.Duration { return time.Since(start) }
