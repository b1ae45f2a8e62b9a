package main

import (
	"fmt"
	"strings"
	"syscall"
)

// peakRSS keeps each node process's peak RSS (VmHWM) over the run. The
// kernel keeps the figure only while the process lives, so it is read
// before a node is killed (noteBeforeKill) and, for the others, when the
// check ends, before make scale stops the cluster. Not safe for
// concurrent use: the checker's main flow alone calls it.
type peakRSS struct {
	pids   []int
	bytes  []int64 // the highest VmHWM read per node; 0 if never read
	killed []bool  // the node was killed by the checker: its figure is final
}

func newPeakRSS(pids []int) *peakRSS {
	return &peakRSS{pids: pids, bytes: make([]int64, len(pids)), killed: make([]bool, len(pids))}
}

// read takes node i's current VmHWM if its process still runs.
func (p *peakRSS) read(i int) {
	if p.killed[i] || syscall.Kill(p.pids[i], 0) != nil {
		return
	}
	p.bytes[i] = max(p.bytes[i], rss(p.pids[i], "VmHWM"))
}

// noteBeforeKill reads node i's peak for the last time: call it just
// before the SIGKILL.
func (p *peakRSS) noteBeforeKill(i int) {
	p.read(i)
	p.killed[i] = true
}

// report reads every running node's peak and returns one line per node.
func (p *peakRSS) report() []string {
	lines := make([]string, len(p.pids))
	for i, pid := range p.pids {
		p.read(i)
		var note string
		switch {
		case p.killed[i]:
			note = " (read just before its SIGKILL)"
		case p.bytes[i] == 0:
			note = " (not running: unknown)"
		}
		lines[i] = fmt.Sprintf("node %d (pid %d): peak RSS over the run %d MiB%s", i+1, pid, p.bytes[i]>>20, note)
	}
	return lines
}

// print writes the report, one line per node.
func (p *peakRSS) print() {
	fmt.Println(strings.Join(p.report(), "\n"))
}
