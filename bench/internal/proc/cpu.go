// Package proc measures and manages the server processes of a benchmark:
// CPU time read from /proc/<pid>/stat, and starting and stopping child
// processes with their output sent to a log file.
//
// A caller's duties: Start each server, keep its *Process, read CPU time
// with CPUSeconds (before and after a measured window), and Stop every
// process it started; Stop sends SIGTERM and kills after a grace period.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// ticksPerSecond is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
// It is 100 on every Linux architecture Go supports (it is part of the ABI,
// independent of the kernel's CONFIG_HZ).
const ticksPerSecond = 100

// ErrBadStat means a /proc/<pid>/stat line could not be parsed.
var ErrBadStat = errors.New("proc: malformed stat line")

// ParseStatCPU returns utime+stime, in seconds, from the contents of a
// /proc/<pid>/stat file. Field 2 (comm) may hold spaces and parentheses, so
// fields are counted after its last ')'.
func ParseStatCPU(stat []byte) (float64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, ErrBadStat
	}
	// After ") " come field 3 (state) onwards; utime is field 14, stime 15.
	f := bytes.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("%w: %d fields after comm", ErrBadStat, len(f))
	}
	u, err1 := strconv.ParseUint(string(f[11]), 10, 64)
	s, err2 := strconv.ParseUint(string(f[12]), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrBadStat, err)
	}
	return float64(u+s) / ticksPerSecond, nil
}

// CPUSeconds returns the user+system CPU seconds used so far by the
// processes, all their threads included.
func CPUSeconds(pids ...int) (float64, error) {
	var total float64
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return 0, fmt.Errorf("proc: cpu of pid %d: %w", pid, err)
		}
		c, err := ParseStatCPU(b)
		if err != nil {
			return 0, fmt.Errorf("pid %d: %w", pid, err)
		}
		total += c
	}
	return total, nil
}

// ParseMachineBusy returns the busy CPU seconds (user, nice, system, irq,
// softirq, steal; not idle or iowait) summed over all CPUs, from the
// contents of /proc/stat.
func ParseMachineBusy(stat []byte) (float64, error) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 9 || string(f[0]) != "cpu" {
		return 0, fmt.Errorf("%w: /proc/stat starts %q", ErrBadStat, line)
	}
	var busy uint64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
		n, err := strconv.ParseUint(string(f[i]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", ErrBadStat, err)
		}
		busy += n
	}
	return float64(busy) / ticksPerSecond, nil
}

// MachineBusySeconds returns the busy CPU seconds of the whole machine so
// far: with the servers' and this process's CPU it shows how much other
// processes took during a run.
func MachineBusySeconds() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	return ParseMachineBusy(b)
}

// SelfCPUSeconds returns the CPU seconds (user+system) used so far by this
// process: the load generator and the clients in it.
func SelfCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}
