package e2e

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Summary adds up faults, failover times and verifications across a run.
// It is safe for concurrent use; the zero value is ready.
type Summary struct {
	mu           sync.Mutex     // guards the fields below
	faults       map[string]int // faults injected, by kind
	failovers    []time.Duration
	elected      []time.Duration
	verification []*Verification
	groups       []*GroupReport
	coordinator  []time.Duration // coordinator kill -> first commit sent after it acknowledged
	eos          []*TxnReport    // exactly-once checks of read_committed output
	eosControl   []int           // aborted records the read_uncommitted control read saw, per check
	txnFailover  []time.Duration // fault of a pipeline's node -> first transaction begun after it committed
	partition    partitionStats
	moves        []moveStats // replica moves (operate_test.go)
	shares       []*ShareReport
	shareFail    map[string][]time.Duration // by fault kind: kill -> first successful accept of a record delivered after it
}

// moveStats is one replica move: its kind ("reassign", "decommission",
// "replace"), how long until no partition was moving, and the produce
// latencies (send to acknowledgement) of the records sent meanwhile.
type moveStats struct {
	kind string
	took time.Duration
	p99  time.Duration
	n    int
}

// Moved records a replica move; attempts are the run's, of which those
// sent between from and to give the produce p99.
func (s *Summary) Moved(kind string, from, to time.Time, attempts []Attempt) time.Duration {
	var lat []time.Duration
	for _, a := range attempts {
		if a.Outcome == Acked && !a.Sent.Before(from) && !a.Sent.After(to) {
			lat = append(lat, a.Done.Sub(a.Sent))
		}
	}
	m := moveStats{kind: kind, took: to.Sub(from), n: len(lat)}
	if len(lat) > 0 {
		m.p99 = Percentile(lat, 99)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.moves = append(s.moves, m)
	return m.p99
}

// Fault counts one injected fault of a kind ("leader-kill", "pause", ...).
func (s *Summary) Fault(kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults == nil {
		s.faults = map[string]int{}
	}
	s.faults[kind]++
}

// Failover records the failover time of one leader kill.
func (s *Summary) Failover(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failovers = append(s.failovers, d)
}

// Elected records how long after a leader kill every running node's
// metadata showed new leaders.
func (s *Summary) Elected(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.elected = append(s.elected, d)
}

// Verified adds a Verify result.
func (s *Summary) Verified(v *Verification) {
	if v == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.verification = append(s.verification, v)
}

// Grouped adds a consumer group's CheckGroup report.
func (s *Summary) Grouped(r *GroupReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups = append(s.groups, r)
}

// CoordinatorFailover records the time from a coordinator kill to the
// acknowledgement of the first commit sent after it.
func (s *Summary) CoordinatorFailover(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.coordinator = append(s.coordinator, d)
}

// ExactlyOnce adds an exactly-once check: the report of the
// read_committed reading, and how many aborted records the
// read_uncommitted control reading saw.
func (s *Summary) ExactlyOnce(r *TxnReport, controlAbortedSeen int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eos = append(s.eos, r)
	s.eosControl = append(s.eosControl, controlAbortedSeen)
}

// TxnFailover records the time from a fault of a node a pipeline needs to
// the commit of the first transaction begun after it.
func (s *Summary) TxnFailover(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.txnFailover = append(s.txnFailover, d)
}

// Faults returns the number of faults injected.
func (s *Summary) Faults() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.faults {
		n += c
	}
	return n
}

// Failovers returns the failover times recorded, in order.
func (s *Summary) Failovers() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.failovers)
}

// Percentile returns the p-th percentile (0..100, nearest rank) of ds, or 0
// for none.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(p/100*float64(len(s))+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

// String is the run's summary: faults, records acknowledged, lost,
// duplicated, out of order, replicas compared, failover p50 and max.
func (s *Summary) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	kinds := make([]string, 0, len(s.faults))
	total := 0
	for k, n := range s.faults {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
		total += n
	}
	slices.Sort(kinds)
	var acked, unknown, present, lost, dup, ooo, other, partitions, replicas, mismatches, stale, reads int
	for _, v := range s.verification {
		r := v.Report
		acked += r.Acked
		unknown += r.Unknown
		present += r.UnknownPresent
		lost += r.Count(Lost)
		dup += r.Count(Duplicated)
		ooo += r.Count(OutOfOrder)
		other += r.Count(Misplaced) + r.Count(Phantom) + r.Count(Gap) + r.Count(BadHistory)
		stale += r.Count(StaleRead)
		reads += r.Reads
		partitions += v.Partitions
		replicas += v.Replicas
		mismatches += v.Mismatches
	}
	var b strings.Builder
	fmt.Fprintf(&b, "==== e2e summary ====\n")
	fmt.Fprintf(&b, "faults injected:      %d (%s)\n", total, strings.Join(kinds, ", "))
	fmt.Fprintf(&b, "records acknowledged: %d\n", acked)
	fmt.Fprintf(&b, "unknown outcome:      %d (%d of them present once)\n", unknown, present)
	fmt.Fprintf(&b, "lost:                 %d\n", lost)
	fmt.Fprintf(&b, "duplicated:           %d\n", dup)
	fmt.Fprintf(&b, "out of order:         %d\n", ooo)
	fmt.Fprintf(&b, "other problems:       %d (misplaced, phantom, gaps)\n", other)
	fmt.Fprintf(&b, "stale reads:          %d (of %d records read during the run)\n", stale, reads)
	fmt.Fprintf(&b, "replicas compared:    %d logs of %d partitions, %d mismatches\n", replicas, partitions, mismatches)
	fmt.Fprintf(&b, "failover (leader kill -> first ack of a new record on the partition): %d measured",
		len(s.failovers))
	if len(s.failovers) > 0 {
		fmt.Fprintf(&b, ", p50 %v, max %v", Percentile(s.failovers, 50).Round(time.Millisecond),
			Percentile(s.failovers, 100).Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "\n  node side: leader kill -> new leaders in every node's metadata: %d measured", len(s.elected))
	if len(s.elected) > 0 {
		fmt.Fprintf(&b, ", p50 %v, max %v", Percentile(s.elected, 50).Round(time.Millisecond),
			Percentile(s.elected, 100).Round(time.Millisecond))
	}
	b.WriteString("\n")
	if len(s.groups) > 0 {
		g := sumGroupReports(s.groups)
		fmt.Fprintf(&b, "consumer groups:      %d checked; %v\n", len(s.groups), g)
		fmt.Fprintf(&b, "  coordinator kill -> first commit sent after it acknowledged: %d measured", len(s.coordinator))
		if len(s.coordinator) > 0 {
			fmt.Fprintf(&b, ", p50 %v, max %v", Percentile(s.coordinator, 50).Round(time.Millisecond),
				Percentile(s.coordinator, 100).Round(time.Millisecond))
		}
		b.WriteString("\n")
	}
	if len(s.eos) > 0 {
		s.writeExactlyOnce(&b)
	}
	if len(s.shares) > 0 {
		s.writeShares(&b)
	}
	s.partition.write(&b)
	for _, m := range s.moves {
		fmt.Fprintf(&b, "replica move (%s): done in %v; produce p99 meanwhile %v over %d records\n",
			m.kind, m.took.Round(time.Millisecond), m.p99.Round(time.Millisecond), m.n)
	}
	return b.String()
}

// writeExactlyOnce adds the exactly-once checks to the summary. Called
// with s.mu held.
func (s *Summary) writeExactlyOnce(b *strings.Builder) {
	t := &TxnReport{}
	control := 0
	for i, r := range s.eos {
		t.Problems = append(t.Problems, r.Problems...)
		t.Inputs += r.Inputs
		t.Outputs += r.Outputs
		t.Committed += r.Committed
		t.Aborted += r.Aborted
		t.Deliberate += r.Deliberate
		t.Unknown += r.Unknown
		t.AbortedRecords += r.AbortedRecords
		control += s.eosControl[i]
	}
	fmt.Fprintf(b, "exactly-once:         %d checked (read_committed); %v\n", len(s.eos), t)
	fmt.Fprintf(b, "  read_uncommitted control: %d aborted records seen (must be > 0)\n", control)
	fmt.Fprintf(b, "  fault -> first transaction begun after it committed: %d measured", len(s.txnFailover))
	if len(s.txnFailover) > 0 {
		fmt.Fprintf(b, ", p50 %v, max %v", Percentile(s.txnFailover, 50).Round(time.Millisecond),
			Percentile(s.txnFailover, 100).Round(time.Millisecond))
	}
	b.WriteString("\n")
}

// Merge adds everything o recorded.
func (s *Summary) Merge(o *Summary) {
	o.mu.Lock()
	faults := make(map[string]int, len(o.faults))
	for k, n := range o.faults {
		faults[k] = n
	}
	failovers := slices.Clone(o.failovers)
	elected := slices.Clone(o.elected)
	vs := slices.Clone(o.verification)
	groups := slices.Clone(o.groups)
	coordinator := slices.Clone(o.coordinator)
	eos := slices.Clone(o.eos)
	eosControl := slices.Clone(o.eosControl)
	txnFailover := slices.Clone(o.txnFailover)
	part := o.partition.clone()
	moves := slices.Clone(o.moves)
	shares := slices.Clone(o.shares)
	shareFail := map[string][]time.Duration{}
	for k, v := range o.shareFail {
		shareFail[k] = slices.Clone(v)
	}
	o.mu.Unlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults == nil {
		s.faults = map[string]int{}
	}
	for k, n := range faults {
		s.faults[k] += n
	}
	s.failovers = append(s.failovers, failovers...)
	s.elected = append(s.elected, elected...)
	s.verification = append(s.verification, vs...)
	s.groups = append(s.groups, groups...)
	s.coordinator = append(s.coordinator, coordinator...)
	s.eos = append(s.eos, eos...)
	s.eosControl = append(s.eosControl, eosControl...)
	s.txnFailover = append(s.txnFailover, txnFailover...)
	s.partition.merge(part)
	s.moves = append(s.moves, moves...)
	s.shares = append(s.shares, shares...)
	for k, v := range shareFail {
		s.addShareFailover(k, v...)
	}
}

// PartitionFailover records, for a partition scenario of a kind, the time
// from the cut to the first acknowledgement of a record produced after it
// (necessarily by the majority side).
func (s *Summary) PartitionFailover(kind string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.partition.firstAck == nil {
		s.partition.firstAck = map[string][]time.Duration{}
	}
	s.partition.firstAck[kind] = append(s.partition.firstAck[kind], d)
}

// Probes records the writes sent only to a leader isolated during w.
func (s *Summary) Probes(w IsolationWindow, ps []ProbeResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.partition
	st.probes += len(ps)
	st.isolatedAcks += len(IsolatedAcks(w, ps))
	for _, p := range ps {
		switch {
		case p.TimedOut:
			st.probeTimeouts++
		case !p.Acked:
			st.probeRefused++
			if p.Code == kerr.NotLeaderForPartition.Code {
				st.probeNotLeader++
			}
		case !p.Done.Before(w.Healed):
			st.probeAckedAfterHeal++
		}
	}
}

// Epochs records an EpochWatch's result.
func (s *Summary) Epochs(conflicts []EpochConflict, answers int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partition.epochConflicts = append(s.partition.epochConflicts, conflicts...)
	s.partition.epochAnswers += answers
}

// partitionStats are the network-partition scenarios' findings.
type partitionStats struct {
	firstAck            map[string][]time.Duration // by scenario kind: cut -> first majority-side ack
	probes              int                        // writes sent only to an isolated leader
	isolatedAcks        int                        // of those, acknowledged while it was isolated: violations
	probeRefused        int                        // answered with an error code
	probeNotLeader      int                        // of those, NOT_LEADER_OR_FOLLOWER
	probeTimeouts       int                        // not answered
	probeAckedAfterHeal int                        // acknowledged after the heal (checked in the final log)
	epochConflicts      []EpochConflict
	epochAnswers        int             // Metadata answers the EpochWatch checked
	rejoined            []time.Duration // heal -> every node's Metadata agrees on the leaders
}

func (p partitionStats) clone() partitionStats {
	c := p
	c.firstAck = map[string][]time.Duration{}
	for k, v := range p.firstAck {
		c.firstAck[k] = slices.Clone(v)
	}
	c.epochConflicts = slices.Clone(p.epochConflicts)
	c.rejoined = slices.Clone(p.rejoined)
	return c
}

func (p *partitionStats) merge(o partitionStats) {
	if p.firstAck == nil {
		p.firstAck = map[string][]time.Duration{}
	}
	for k, v := range o.firstAck {
		p.firstAck[k] = append(p.firstAck[k], v...)
	}
	p.probes += o.probes
	p.isolatedAcks += o.isolatedAcks
	p.probeRefused += o.probeRefused
	p.probeNotLeader += o.probeNotLeader
	p.probeTimeouts += o.probeTimeouts
	p.probeAckedAfterHeal += o.probeAckedAfterHeal
	p.epochConflicts = append(p.epochConflicts, o.epochConflicts...)
	p.epochAnswers += o.epochAnswers
	p.rejoined = append(p.rejoined, o.rejoined...)
}

// write adds the partition section to a summary, if there was any.
func (p *partitionStats) write(b *strings.Builder) {
	if len(p.firstAck) == 0 && p.probes == 0 && p.epochAnswers == 0 {
		return
	}
	fmt.Fprintf(b, "network partitions:   cut -> first acknowledgement on the majority side, by scenario:\n")
	kinds := make([]string, 0, len(p.firstAck))
	for k := range p.firstAck {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		ds := p.firstAck[k]
		fmt.Fprintf(b, "  %-28s %d measured, p50 %v, max %v\n", k, len(ds),
			Percentile(ds, 50).Round(time.Millisecond), Percentile(ds, 100).Round(time.Millisecond))
	}
	fmt.Fprintf(b, "  writes sent only to an isolated leader: %d; acknowledged while isolated: %d; refused %d (%d NOT_LEADER_OR_FOLLOWER), timed out %d, acknowledged after the heal %d\n",
		p.probes, p.isolatedAcks, p.probeRefused, p.probeNotLeader, p.probeTimeouts, p.probeAckedAfterHeal)
	fmt.Fprintf(b, "  heal -> every node's Metadata agrees on the leaders again: %d measured, p50 %v, max %v\n", len(p.rejoined),
		Percentile(p.rejoined, 50).Round(time.Millisecond), Percentile(p.rejoined, 100).Round(time.Millisecond))
	fmt.Fprintf(b, "  two leaders with one epoch in Metadata: %d (of %d answers)\n", len(p.epochConflicts), p.epochAnswers)
	for i, c := range p.epochConflicts {
		if i == maxListed {
			break
		}
		fmt.Fprintf(b, "    %v\n", c)
	}
}

// partitionProbes is the number of writes sent only to isolated leaders.
func (s *Summary) partitionProbes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.partition.probes
}

// partitionFaultPrefix starts the kind of every network-partition fault.
const partitionFaultPrefix = "partition-"

// PartitionFaults returns the number of network-partition faults
// injected.
func (s *Summary) PartitionFaults() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, c := range s.faults {
		if strings.HasPrefix(k, partitionFaultPrefix) {
			n += c
		}
	}
	return n
}

// Rejoined records the time from a heal until every node's Metadata
// agreed on the leaders again.
func (s *Summary) Rejoined(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partition.rejoined = append(s.partition.rejoined, d)
}
