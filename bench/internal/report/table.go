package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// SizeLabel names a size in bytes: "4 MiB", "1 KiB", "100 B".
func SizeLabel(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%d B", n)
}

// Columns of both tables after the mode's own; see row.
const commonColumns = "records/s\tMB/s\tp50 ms\tp99 ms\tp99.9 ms\tserver CPU s\tCPU µs/rec\tclient CPU s\tother CPU s\telections\tleaders\tno-ack 100ms\tmax gap ms\tours/this\t"

// WriteTable prints the report for a reader: durability per system, the
// peak table, the half-load table, the stalls and the comparisons with
// the aims.
func (r *Report) WriteTable(w io.Writer) error {
	s := r.Settings
	r.writeSettings(w)

	fmt.Fprintf(w, "\nPEAK: closed loop, at most %s of records outstanding; records/s over all partitions; ours/this = our client's records/s over this row's\n",
		SizeLabel(s.WindowBytes))
	r.writeRuns(w, Peak, "size\tparts\tsystem\t"+commonColumns, func(run Run) float64 { return run.RecordsPerSec })

	if r.hasMode(HalfLoad) {
		load := "half of our client's peak records/s"
		if s.FixedRate > 0 {
			load = fmt.Sprintf("%.0f records/s (forced by -rate, not half our peak)", s.FixedRate)
		}
		fmt.Fprintf(w, "\nHALF LOAD: open loop at %s; latency from each record's scheduled time; ours/this = p99 ratio (lower is better for ours)\n", load)
		r.writeRuns(w, HalfLoad, "size\tparts\tsystem\toffered/s\t"+commonColumns, func(run Run) float64 { return run.P99ms })
	}

	if busy := r.busyRuns(); busy > 0 {
		fmt.Fprintf(w, "\nWARNING: in %d run(s) other processes used more than 10%% of the machine's CPU (column \"other CPU s\"): those figures are not from a quiet machine; rerun.\n", busy)
	}
	r.writeStalls(w)
	r.writeScaling(w)
	for _, e := range r.SetupErrors {
		fmt.Fprintf(w, "\nNOT RUN: %s\n", e)
	}
	return r.writeAims(w)
}

// writeScaling prints each system's peak with many partitions over one.
func (r *Report) writeScaling(w io.Writer) {
	if len(r.Scaling) == 0 {
		return
	}
	fmt.Fprintln(w, "\nPARTITIONS: peak records/s over all partitions (streams) against one, same invocation")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tsystem\tpartitions\trecords/s\twith 1\tratio\t")
	for _, s := range r.Scaling {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.0f\t%.2fx\t\n", SizeLabel(s.RecordBytes), r.SystemByKey(s.System).Name,
			s.Partitions, s.RecordsPerSec, s.OneRecordsSec, s.Ratio)
	}
	tw.Flush()
}

// diskNote says what the disk probe saw during a stalled run.
func diskNote(run Run) string {
	if run.DiskMaxSyncMs == 0 {
		return ""
	}
	return fmt.Sprintf("disk: slowest probe sync %.0f ms, %d of %d gap(s) during a sync of 50 ms or more\t",
		run.DiskMaxSyncMs, run.AckGapsOnDiskStall, run.AckGaps)
}

// writeStalls lists the runs that went over 100 ms without an ack.
func (r *Report) writeStalls(w io.Writer) {
	var lines []string
	for _, run := range r.Runs {
		if run.Stalled() {
			lines = append(lines, fmt.Sprintf("  %s\t%s\t%s\t%d partition(s)\t%d gap(s) of over 100 ms without an ack\tlongest gap %.0f ms\t%s",
				r.SystemByKey(run.System).Name, run.Mode, SizeLabel(run.RecordBytes), run.Partitions, run.AckGaps, run.LongestGapMs, diskNote(run)))
		}
	}
	if len(lines) == 0 {
		fmt.Fprintln(w, "\nSTALLS: none (no measured period went over 100 ms without an acknowledgement)")
		return
	}
	fmt.Fprintf(w, "\nSTALLS: %d run(s) went over 100 ms without an acknowledgement (column \"no-ack 100ms\": how many times)\n", len(lines))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprintln(tw, l)
	}
	tw.Flush()
}

// writeSettings prints how the runs were made and what an ack means for
// each system.
func (r *Report) writeSettings(w io.Writer) {
	s := r.Settings
	parts := make([]string, len(s.Partitions))
	for i, p := range s.Partitions {
		parts[i] = fmt.Sprint(p)
	}
	fmt.Fprintf(w, "\n%d servers per system on loopback, %d replicas, %s partition(s) (JetStream: as many streams); %d CPUs; warm-up %s, measured %s per run\n",
		s.Servers, s.Replicas, strings.Join(parts, " and "), r.Host.CPUs, s.Warmup, s.Duration)
	if r.Host.PageReporting {
		fmt.Fprintf(w, "this VM hands freed memory back to its host (virtio-balloon free page reporting, order %d): new page-cache pages are faulted in again on first write, which shows as server CPU (docs/performance.md)\n", r.Host.PageReportingOrder)
	}
	if s.OurClient != "" {
		fmt.Fprintf(w, "our client options beyond its defaults: %s\n", s.OurClient)
	}
	if s.NodeArgs != "" {
		fmt.Fprintf(w, "extra node flags: %s\n", s.NodeArgs)
	}
	if len(s.TxnProducers) > 0 {
		fmt.Fprintf(w, "minikafka/kgo-txn: %s transactional clients (by size), each one transaction of %d records at a time\n",
			strings.Trim(fmt.Sprint(s.TxnProducers), "[]"), s.TxnRecords)
	}
	fmt.Fprintln(w, "\nWhat an ack means:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, key := range SystemOrder {
		sys := r.SystemByKey(key)
		if sys.Durability == "" || !r.measured(key) {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", sys.Name, sys.Client, sys.Durability)
	}
	tw.Flush()
}

// writeRuns prints the table of one mode's runs, by size, partitions,
// then system. Its last column is our client's metric over the row's (with
// as many partitions), "-" when either run lacks it.
func (r *Report) writeRuns(w io.Writer, mode, header string, metric func(Run) float64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, header)
	for _, size := range r.Sizes() {
		for _, parts := range r.PartitionCounts() {
			ours, okOurs := r.Find(Ours, mode, size, parts)
			for _, key := range SystemOrder {
				run, ok := r.Find(key, mode, size, parts)
				if !ok {
					continue
				}
				ratio := "-"
				if okOurs && metric(run) > 0 && ours.Error == "" {
					ratio = fmt.Sprintf("%.2fx", metric(ours)/metric(run))
				}
				r.row(tw, run, ratio)
			}
		}
	}
	tw.Flush()
}

// writeAims prints each comparison with its aim and whether it was met.
func (r *Report) writeAims(w io.Writer) error {
	fmt.Fprintln(w, "\nAIMS (issues 14 and 15; each from this one invocation)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range r.Comparisons {
		size := "all"
		if c.RecordBytes > 0 {
			size = SizeLabel(c.RecordBytes)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", size, c.What, c.Figure, c.Aim, c.Status)
	}
	return tw.Flush()
}

// busyRuns counts runs during which the rest of the machine used more
// than a tenth of its CPU time.
func (r *Report) busyRuns() int {
	n := 0
	for _, run := range r.Runs {
		if r.Host.CPUs > 0 && run.OtherCPU > 0.1*float64(r.Host.CPUs)*run.Seconds {
			n++
		}
	}
	return n
}

// measured reports whether system has a run, or was to have one and
// could not be set up.
func (r *Report) measured(system string) bool {
	for _, run := range r.Runs {
		if run.System == system {
			return true
		}
	}
	name := r.SystemByKey(system).Name + ","
	for _, e := range r.SetupErrors {
		if strings.HasPrefix(e, name) {
			return true
		}
	}
	return false
}

func (r *Report) hasMode(mode string) bool {
	for _, run := range r.Runs {
		if run.Mode == mode {
			return true
		}
	}
	return false
}

func (r *Report) row(tw *tabwriter.Writer, run Run, ratio string) {
	name := r.SystemByKey(run.System).Name
	if run.Error != "" {
		name += " (FAILED)"
	}
	fmt.Fprintf(tw, "%s\t%d\t%s\t", SizeLabel(run.RecordBytes), run.Partitions, name)
	if run.Mode == HalfLoad {
		fmt.Fprintf(tw, "%.0f\t", run.OfferedRate)
	}
	elections := "-"
	if run.Elections >= 0 {
		elections = fmt.Sprint(run.Elections)
	}
	empty := fmt.Sprint(run.AckGaps)
	if run.Stalled() {
		empty += " STALL"
	}
	fmt.Fprintf(tw, "%.0f\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f\t%.2f\t%.2f\t%s\t%s\t%s\t%.0f\t%s\t\n",
		run.RecordsPerSec, run.MBPerSec, run.P50ms, run.P99ms, run.P999ms,
		run.ServerCPU, run.ServerCPUPerRecordUs, run.ClientCPU, run.OtherCPU, elections,
		LeadersLabel(run.Leaders), empty, run.LongestGapMs, ratio)
}

// LeadersLabel shows leaders per server in server order, e.g. "4/4/4";
// "-" when unknown.
func LeadersLabel(leaders map[string]int) string {
	if len(leaders) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(leaders))
	for k := range leaders {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	counts := make([]string, len(keys))
	for i, k := range keys {
		counts[i] = fmt.Sprint(leaders[k])
	}
	return strings.Join(counts, "/")
}
