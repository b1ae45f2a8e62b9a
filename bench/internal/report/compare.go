package report

import (
	"fmt"
	"slices"
)

// Comparison is one aim of issues 14 and 15 with the figures it was
// judged on.
type Comparison struct {
	What        string  `json:"what"`
	RecordBytes int     `json:"record_bytes"` // 0: over every size
	Ours        float64 `json:"ours"`
	Peer        float64 `json:"peer"` // the peer's figure, or the bound
	Unit        string  `json:"unit"`
	Ratio       float64 `json:"ratio"` // Ours/Peer; 0 for a count
	Aim         string  `json:"aim"`
	Figure      string  `json:"figure"` // the figures as the table shows them
	Met         bool    `json:"met"`
	Missing     bool    `json:"missing,omitempty"` // a run was absent or failed
	// Status is "met", "SHORT", "not run" (a run it needs was not made)
	// or "failed" (a run it needs failed).
	Status string `json:"status"`
}

// Sizes of the aims.
const (
	KiB1 = 1024
	B100 = 100
)

// P99AimMs is the aim for our client's p99 at half of its peak load.
const P99AimMs = 20.0

// PartitionsAim is the partition count of the scaling aim, and
// PartitionsMin its aim: that many partitions give at least this many
// times the records/s of one.
const (
	PartitionsAim = 12
	PartitionsMin = 2.0
)

// throughputAims: peak records/s of one system at least min times a
// peer's, with one partition; what, if set, names the aim.
var throughputAims = []struct {
	size       int
	ours, peer string
	min        float64
	what       string
}{
	{KiB1, Ours, JSAlways, 1.5, ""},
	{KiB1, OursCached, JSDefault, 1.3, ""},
	{B100, Ours, JSAlways, 3.0, ""},
	{B100, Ours, JSDefault, 3.0, ""},
	{KiB1, Ours, Franz, 1.0, ""},
	{B100, Ours, Franz, 1.0, ""},
	// Issue 16: the cost of security.
	{KiB1, OursTLS, Ours, 0.85, "SASL_SSL clients and mutual TLS between nodes: minikafka-tls vs minikafka"},
	// Issue 15: the cost of transactions of 100 records.
	{KiB1, FranzTxn, Franz, 0.7, "transactional peak records/s: minikafka/kgo-txn vs idempotent minikafka/kgo"},
}

// Scaling is one system's peak with many partitions against one.
type Scaling struct {
	System        string  `json:"system"`
	RecordBytes   int     `json:"record_bytes"`
	Partitions    int     `json:"partitions"`
	RecordsPerSec float64 `json:"records_per_sec"` // over all partitions
	OneRecordsSec float64 `json:"one_partition_records_per_sec"`
	Ratio         float64 `json:"ratio"`
}

// Compare judges the aims of issues 14 and 15 on the runs of this report and
// stores them in r.Comparisons, in the order the issue lists them. Aims
// compare runs with one partition, except the scaling aim. It also fills
// r.Scaling.
func (r *Report) Compare() {
	r.Comparisons, r.Scaling = nil, nil
	for _, size := range r.Sizes() {
		for _, key := range SystemOrder {
			one, miss := r.find(key, Peak, size, 1)
			for _, parts := range r.PartitionCounts() {
				many, missM := r.find(key, Peak, size, parts)
				if parts == 1 || miss != "" || missM != "" {
					continue
				}
				r.Scaling = append(r.Scaling, Scaling{System: key, RecordBytes: size, Partitions: parts,
					RecordsPerSec: many.RecordsPerSec, OneRecordsSec: one.RecordsPerSec, Ratio: many.RecordsPerSec / one.RecordsPerSec})
			}
		}
	}
	for _, a := range throughputAims {
		c := r.throughputAim(a.size, a.ours, a.peer, a.min)
		if a.what != "" {
			c.What = a.what
		}
		r.Comparisons = append(r.Comparisons, c)
	}
	for _, size := range []int{KiB1, B100} {
		r.Comparisons = append(r.Comparisons, r.p99Aim(size))
	}
	r.Comparisons = append(r.Comparisons, r.stallAim())
	for _, size := range []int{KiB1, B100} {
		r.Comparisons = append(r.Comparisons, r.scalingAim(size))
	}
}

// find returns a run and the status of an aim that needs it but lacks it
// ("" when the run is usable).
func (r *Report) find(system, mode string, size, partitions int) (Run, string) {
	run, ok := r.Find(system, mode, size, partitions)
	switch {
	case !ok:
		return run, "not run"
	case run.Error != "" || run.Records == 0:
		return run, "failed"
	}
	return run, ""
}

// judge sets c's status from met, or from missing when that is not "".
func judge(c Comparison, met bool, missing string) Comparison {
	switch {
	case missing != "":
		c.Missing, c.Status, c.Figure = true, missing, "-"
	case met:
		c.Met, c.Status = true, "met"
	default:
		c.Status = "SHORT"
	}
	return c
}

func (r *Report) throughputAim(size int, ours, peer string, min float64) Comparison {
	c := Comparison{
		What:        fmt.Sprintf("peak records/s: %s vs %s", r.SystemByKey(ours).Name, r.SystemByKey(peer).Name),
		RecordBytes: size, Unit: "records/s", Aim: fmt.Sprintf(">= %.2gx", min),
	}
	o, missO := r.find(ours, Peak, size, 1)
	p, missP := r.find(peer, Peak, size, 1)
	if missO == "" && missP == "" {
		c.Ours, c.Peer = o.RecordsPerSec, p.RecordsPerSec
		c.Ratio = c.Ours / c.Peer
		c.Figure = fmt.Sprintf("%.3g vs %.3g records/s = %.2fx", c.Ours, c.Peer, c.Ratio)
	}
	return judge(c, c.Ratio >= min, firstOf(missO, missP))
}

func (r *Report) p99Aim(size int) Comparison {
	what := "p99 latency of minikafka at half of its peak"
	if r.Settings.FixedRate > 0 {
		what = fmt.Sprintf("p99 latency of minikafka at %.0f records/s (forced by -rate)", r.Settings.FixedRate)
	}
	c := Comparison{What: what, RecordBytes: size, Unit: "ms", Peer: P99AimMs, Aim: fmt.Sprintf("<= %.0f ms", P99AimMs)}
	half, miss := r.find(Ours, HalfLoad, size, 1)
	if miss == "" {
		c.Ours = half.P99ms
		c.Ratio = c.Ours / c.Peer
		c.Figure = fmt.Sprintf("%.3g vs %.0f ms = %.2fx", c.Ours, c.Peer, c.Ratio)
	}
	return judge(c, c.Ours <= P99AimMs, miss)
}

// stallAim counts the 100ms windows without an ack over every run of a
// MiniKafka system (JetStream's stalls are in the table, not in the aim).
func (r *Report) stallAim() Comparison {
	c := Comparison{What: "100 ms windows without an ack, every minikafka run", Unit: "windows", Aim: "= 0"}
	runs, stalled := 0, 0
	var gap float64
	for _, run := range r.Runs {
		if !minikafka(run.System) || run.Records == 0 {
			continue
		}
		runs++
		c.Ours += float64(run.AckGaps)
		gap = max(gap, run.LongestGapMs)
		if run.Stalled() {
			stalled++
		}
	}
	missing := ""
	if runs == 0 {
		missing = "not run"
	}
	c.Figure = fmt.Sprintf("%.0f gap(s) over 100 ms in %d of %d runs; longest %.0f ms", c.Ours, stalled, runs, gap)
	return judge(c, c.Ours == 0, missing)
}

// scalingAim compares our client's peak with PartitionsAim partitions (or
// the most measured, if not that) against one partition.
func (r *Report) scalingAim(size int) Comparison {
	parts := PartitionsAim
	if ps := r.PartitionCounts(); !slices.Contains(ps, parts) && len(ps) > 0 && ps[len(ps)-1] > 1 {
		parts = ps[len(ps)-1]
	}
	c := Comparison{
		What:        fmt.Sprintf("peak records/s of minikafka: %d partitions vs 1", parts),
		RecordBytes: size, Unit: "records/s", Aim: fmt.Sprintf(">= %.1fx", PartitionsMin),
	}
	many, missM := r.find(Ours, Peak, size, parts)
	one, miss1 := r.find(Ours, Peak, size, 1)
	if missM == "" && miss1 == "" {
		c.Ours, c.Peer = many.RecordsPerSec, one.RecordsPerSec
		c.Ratio = c.Ours / c.Peer
		c.Figure = fmt.Sprintf("%.3g vs %.3g records/s = %.2fx", c.Ours, c.Peer, c.Ratio)
	}
	return judge(c, c.Ratio >= PartitionsMin, firstOf(missM, miss1))
}

// firstOf returns the first non-empty string.
func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
