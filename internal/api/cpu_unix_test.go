//go:build unix

package api_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used, user and system: a
// benchmark's CPU per request, apart from the time it waits on a store
// in another process.
func processCPU() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
