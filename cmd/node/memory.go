package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// memoryShare is the part of the machine's (or container's) memory a
// node's default memory_limit takes: the rest is for the page cache that
// serves fetches and for the kernel.
const memoryShare = 0.8

// memoryLimit is memory_limit in bytes: the configured value, or, for 0,
// memoryShare of the memory the node may use (the cgroup's limit when one
// is set, else the machine's); 0 when neither can be read.
func memoryLimit(configured int64) int64 {
	if configured > 0 {
		return configured
	}
	total := machineMemory()
	if c := cgroupMemory(); c > 0 && (total == 0 || c < total) {
		total = c
	}
	return int64(float64(total) * memoryShare)
}

// applyMemoryLimit makes limit the Go runtime's soft memory limit, so the
// collector works harder as the heap nears it instead of letting it grow
// (GOMEMLIMIT, which wins when set). It returns the limit in force.
func applyMemoryLimit(limit int64) int64 {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set || limit <= 0 {
		return debug.SetMemoryLimit(-1)
	}
	debug.SetMemoryLimit(limit)
	return limit
}

// machineMemory is MemTotal from /proc/meminfo, in bytes; 0 if unreadable.
func machineMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cgroupMemory is the memory limit of the process's cgroup (v2's
// memory.max, else v1's memory.limit_in_bytes), in bytes; 0 if there is
// none or it cannot be read.
func cgroupMemory() int64 {
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(b))
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 && n < 1<<60 {
			return n
		}
	}
	return 0
}
