package report

import (
	"fmt"
	"io"
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

// WriteTable prints the report for a reader: durability per system, the
// peak table, the half-load table and the comparisons with the aims.
func (r *Report) WriteTable(w io.Writer) error {
	s := r.Settings
	r.writeSettings(w)

	fmt.Fprintf(w, "\nPEAK: closed loop, at most %s of records outstanding; ours/this = our client's records/s over this row's\n",
		SizeLabel(s.WindowBytes))
	r.writeRuns(w, Peak, "size\tsystem\trecords/s\tMB/s\tp50 ms\tp99 ms\tp99.9 ms\tserver CPU s\tCPU µs/rec\tclient CPU s\tother CPU s\telections\tours/this\t",
		func(run Run) float64 { return run.RecordsPerSec })

	if r.hasMode(HalfLoad) {
		load := "half of our client's peak records/s"
		if s.FixedRate > 0 {
			load = fmt.Sprintf("%.0f records/s (forced by -rate, not half our peak)", s.FixedRate)
		}
		fmt.Fprintf(w, "\nHALF LOAD: open loop at %s; latency from each record's scheduled time; ours/this = p99 ratio (lower is better for ours)\n", load)
		r.writeRuns(w, HalfLoad, "size\tsystem\toffered/s\trecords/s\tMB/s\tp50 ms\tp99 ms\tp99.9 ms\tserver CPU s\tCPU µs/rec\tclient CPU s\tother CPU s\telections\tours/this\t",
			func(run Run) float64 { return run.P99ms })
	}

	if busy := r.busyRuns(); busy > 0 {
		fmt.Fprintf(w, "\nWARNING: in %d run(s) other processes used more than 10%% of the machine's CPU (column \"other CPU s\"): those figures are not from a quiet machine; rerun.\n", busy)
	}
	return r.writeAims(w)
}

// writeSettings prints how the runs were made and what an ack means for
// each system.
func (r *Report) writeSettings(w io.Writer) {
	s := r.Settings
	fmt.Fprintf(w, "\n%d servers per system on loopback, %d replicas, %d partition(s)/stream(s); %d CPUs; warm-up %s, measured %s per run\n",
		s.Servers, s.Replicas, s.Partitions, r.Host.CPUs, s.Warmup, s.Duration)
	if s.OurClient != "" {
		fmt.Fprintf(w, "our client options beyond its defaults: %s\n", s.OurClient)
	}
	if s.NodeArgs != "" {
		fmt.Fprintf(w, "extra node flags: %s\n", s.NodeArgs)
	}
	fmt.Fprintln(w, "\nWhat an ack means:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, key := range SystemOrder {
		sys := r.SystemByKey(key)
		if sys.Durability == "" {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", sys.Name, sys.Client, sys.Durability)
	}
	tw.Flush()
}

// writeRuns prints the table of one mode's runs, by size then system. Its
// last column is our client's metric over the row's, "-" when either run
// lacks it.
func (r *Report) writeRuns(w io.Writer, mode, header string, metric func(Run) float64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, header)
	for _, size := range r.Sizes() {
		ours, okOurs := r.Find(Ours, mode, size)
		for _, key := range SystemOrder {
			run, ok := r.Find(key, mode, size)
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
	tw.Flush()
}

// writeAims prints each comparison with its aim and whether it was met.
func (r *Report) writeAims(w io.Writer) error {
	fmt.Fprintln(w, "\nAIMS (issue 6)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range r.Comparisons {
		verdict := "SHORT"
		if c.Met {
			verdict = "met"
		}
		if c.Missing {
			fmt.Fprintf(tw, "  %s\t%s\t(not measured)\t%s\t\n", SizeLabel(c.RecordBytes), c.What, c.Aim)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%.3g vs %.3g %s = %.2fx\t%s\t%s\n",
			SizeLabel(c.RecordBytes), c.What, c.Ours, c.Peer, c.Unit, c.Ratio, c.Aim, verdict)
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
	fmt.Fprintf(tw, "%s\t%s\t", SizeLabel(run.RecordBytes), name)
	if run.Mode == HalfLoad {
		fmt.Fprintf(tw, "%.0f\t", run.OfferedRate)
	}
	elections := "-"
	if run.Elections >= 0 {
		elections = fmt.Sprint(run.Elections)
	}
	fmt.Fprintf(tw, "%.0f\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f\t%.2f\t%.2f\t%s\t%s\t\n",
		run.RecordsPerSec, run.MBPerSec, run.P50ms, run.P99ms, run.P999ms,
		run.ServerCPU, run.ServerCPUPerRecordUs, run.ClientCPU, run.OtherCPU, elections, ratio)
}
