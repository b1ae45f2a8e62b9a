package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory is what /proc/<pid>/status says of a process's resident memory,
// in bytes.
type Memory struct {
	RSS  int64 // VmRSS: resident now
	Peak int64 // VmHWM: the most resident since start or the last ResetPeak
}

// ErrNoField means /proc/<pid>/status lacks a field it should hold.
var ErrNoField = errors.New("e2e: field missing from /proc status")

// ReadMemory reads process pid's resident and peak resident memory.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	var found int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("e2e: /proc/%d/status %s: %w", pid, name, err)
		}
		if name == "VmRSS" {
			m.RSS = kb << 10
		} else {
			m.Peak = kb << 10
		}
		found++
	}
	if found != 2 {
		return Memory{}, fmt.Errorf("%w: VmRSS and VmHWM of pid %d", ErrNoField, pid)
	}
	return m, nil
}

// ResetPeak sets process pid's peak resident memory (VmHWM) to what is
// resident now (Linux's clear_refs "5"), so that the next ReadMemory
// reports the peak since this call. The caller must own the process.
func ResetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// OpenFiles counts process pid's open file descriptors.
func OpenFiles(pid int) (int, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, err
	}
	return len(fds), nil
}

// Pid returns node id's process id, or ErrNotRunning.
func (c *Cluster) Pid(id int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.nodes[id-1].proc
	if p == nil || p.exited() {
		return 0, fmt.Errorf("node %d: %w", id, ErrNotRunning)
	}
	return p.cmd.Process.Pid, nil
}
