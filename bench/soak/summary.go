package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// mib converts bytes to MiB.
func mib(b int64) float64 { return float64(b) / (1 << 20) }

// Series is one node's measure over time.
type Series struct {
	Name   string
	Dashed bool // drawn dashed
	Points []Point
}

// Point is a measure (MiB) at a time.
type Point struct {
	At  time.Duration
	MiB float64
}

// series extracts per-node series of a measure from samples.
func series(samples []Sample, pick func(Sample, int) int64) []Series {
	out := make([]Series, nodes)
	for i := range nodes {
		out[i].Name = fmt.Sprintf("node %d", i+1)
		for _, s := range samples {
			out[i].Points = append(out[i].Points, Point{At: s.At, MiB: mib(pick(s, i))})
		}
	}
	return out
}

func rssOf(s Sample, i int) int64  { return s.RSS[i] }
func anonOf(s Sample, i int) int64 { return s.Anon[i] }
func diskOf(s Sample, i int) int64 { return s.Disk[i] }

// Stats summarise a Series.
type Stats struct {
	First, Last, Max float64 // MiB
	// Slope is the least-squares slope over the second half of the points,
	// in MiB per minute; Fit is false when that half has under 2 points.
	Slope float64
	Fit   bool
}

// stats computes a Series' Stats.
func stats(s Series) Stats {
	var st Stats
	if len(s.Points) == 0 {
		return st
	}
	st.First, st.Last = s.Points[0].MiB, s.Points[len(s.Points)-1].MiB
	for _, p := range s.Points {
		st.Max = max(st.Max, p.MiB)
	}
	st.Slope, st.Fit = slope(s.Points[len(s.Points)/2:])
	return st
}

// slope is the least-squares slope of MiB over minutes.
func slope(ps []Point) (float64, bool) {
	n := float64(len(ps))
	if len(ps) < 2 {
		return 0, false
	}
	var sx, sy, sxx, sxy float64
	for _, p := range ps {
		x := p.At.Minutes()
		sx += x
		sy += p.MiB
		sxx += x * x
		sxy += x * p.MiB
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0, false
	}
	return (n*sxy - sx*sy) / den, true
}

// writeCSV writes one row per sample.
func writeCSV(w io.Writer, samples []Sample) error {
	cw := csv.NewWriter(w)
	head := []string{"elapsed_s", "phase", "produced", "acked", "failed"}
	for _, m := range []string{"rss_mib", "rss_anon_mib", "disk_mib"} {
		for i := 1; i <= nodes; i++ {
			head = append(head, fmt.Sprintf("node%d_%s", i, m))
		}
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	for _, s := range samples {
		row := []string{f(s.At.Seconds()), s.Phase, strconv.FormatUint(s.Produced, 10),
			strconv.FormatUint(s.Acked, 10), strconv.FormatUint(s.Failed, 10)}
		for i := range nodes {
			row = append(row, f(mib(s.RSS[i])))
		}
		for i := range nodes {
			row = append(row, f(mib(s.Anon[i])))
		}
		for i := range nodes {
			row = append(row, f(mib(s.Disk[i])))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// summaryTable renders first/last/max and the second-half slope of each
// node's disk use and RSS.
func summaryTable(samples []Sample) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-6s %-6s %10s %10s %10s %18s\n", "", "node", "first MiB", "last MiB", "max MiB", "slope MiB/min (2nd half)")
	for _, m := range []struct {
		name string
		pick func(Sample, int) int64
	}{{"disk", diskOf}, {"rss", rssOf}, {"anon", anonOf}} {
		for _, s := range series(samples, m.pick) {
			st := stats(s)
			sl := "-"
			if st.Fit {
				sl = fmt.Sprintf("%+.2f", st.Slope)
			}
			fmt.Fprintf(&sb, "%-6s %-6s %10.1f %10.1f %10.1f %18s\n", m.name, s.Name, st.First, st.Last, st.Max, sl)
		}
	}
	return sb.String()
}
