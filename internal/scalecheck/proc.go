package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// readPids reads the node pids from their pid files and checks that each
// process runs.
func readPids(files []string) ([]int, error) {
	pids := make([]int, len(files))
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if pids[i], err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if err := syscall.Kill(pids[i], 0); err != nil {
			return nil, fmt.Errorf("node pid %d (%s) is not running: %w", pids[i], f, err)
		}
	}
	return pids, nil
}

// cpuSeconds is the user+system CPU time of a process, from /proc/PID/stat.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// syscalls returns the read and write syscall counts of a process, from
// /proc/PID/io.
func syscalls(pid int) [2]int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return [2]int64{}
	}
	var out [2]int64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "syscr":
			out[0] = n
		case "syscw":
			out[1] = n
		}
	}
	return out
}

// rss reads a memory field of /proc/PID/status (VmRSS: now; VmHWM: the
// peak since the process started), in bytes.
func rss(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func countFDs(pid int) int {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(fds)
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
