//go:build linux

package checkpointtest

import (
	"time"

	"golang.org/x/sys/unix"
)

// ThreadCPU returns the CPU time of the calling OS thread, so that a
// benchmark on a busy machine can measure work rather than waiting; callers
// lock their goroutine to its thread.
func ThreadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return time.Duration(ts.Nano())
}
