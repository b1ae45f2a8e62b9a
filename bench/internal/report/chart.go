package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteChart draws, for every record size (one column each), the peak
// throughput per system (top row) and the latency percentiles per system
// at half load (bottom row; at peak when no half-load run was made), and
// writes the figure to path. The format follows the extension: .png or
// .svg.
func (r *Report) WriteChart(path string) error {
	sizes := r.Sizes()
	if len(sizes) == 0 {
		return fmt.Errorf("report: chart: no runs")
	}
	latMode := Peak
	if r.hasMode(HalfLoad) {
		latMode = HalfLoad
	}
	plots := [][]*plot.Plot{make([]*plot.Plot, len(sizes)), make([]*plot.Plot, len(sizes))}
	for i, size := range sizes {
		var err error
		if plots[0][i], err = r.throughputPlot(size); err != nil {
			return err
		}
		if plots[1][i], err = r.latencyPlot(size, latMode); err != nil {
			return err
		}
	}
	// 13 cm per size, wider for many runs; taller for slanted labels.
	col, h := 13.0, 18*vg.Centimeter
	for _, size := range sizes {
		if n := len(r.systemsIn(Peak, size)); n > 5 {
			col, h = max(col, 1.6*float64(n)), 22*vg.Centimeter
		}
	}
	w := vg.Length(float64(len(sizes))*col) * vg.Centimeter
	var c vg.CanvasSizer
	var save func(*os.File) error
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		img := vgimg.New(w, h)
		c = img
		save = func(f *os.File) error { _, err := vgimg.PngCanvas{Canvas: img}.WriteTo(f); return err }
	case ".svg":
		svg := vgsvg.New(w, h)
		c = svg
		save = func(f *os.File) error { _, err := svg.WriteTo(f); return err }
	default:
		return fmt.Errorf("report: chart format of %s: want .png or .svg", path)
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 2, Cols: len(sizes), PadX: vg.Centimeter, PadY: vg.Centimeter,
		PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	canvases := plot.Align(plots, tiles, dc)
	for j := range plots {
		for i := range plots[j] {
			plots[j][i].Draw(canvases[j][i])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := save(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// systemsIn returns the runs in mode at size, by partitions then system.
func (r *Report) systemsIn(mode string, size int) []Run {
	var runs []Run
	for _, parts := range r.PartitionCounts() {
		for _, key := range SystemOrder {
			if run, ok := r.Find(key, mode, size, parts); ok {
				runs = append(runs, run)
			}
		}
	}
	return runs
}

// nominalX labels the x axis with the runs' systems, and their partitions
// when more than one count was measured; labels of more than five runs
// are slanted so that they do not overlap.
func (r *Report) nominalX(p *plot.Plot, runs []Run) {
	many := len(r.PartitionCounts()) > 1
	names := make([]string, len(runs))
	for i, run := range runs {
		names[i] = r.SystemByKey(run.System).Name
		if many {
			names[i] += fmt.Sprintf(" %dp", run.Partitions)
		}
	}
	p.NominalX(names...)
	p.X.Tick.Label.Font.Size = vg.Points(9)
	if len(runs) > 5 {
		p.X.Tick.Label.Rotation = math.Pi / 4
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YTop
	}
}

func (r *Report) throughputPlot(size int) (*plot.Plot, error) {
	runs := r.systemsIn(Peak, size)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Peak throughput, %s records", SizeLabel(size))
	if len(runs) == 0 {
		p.Title.Text += ": no runs"
		return p, nil
	}
	p.Y.Label.Text = "MB/s (acknowledged)"
	vals := make(plotter.Values, len(runs))
	labels := make([]string, len(runs))
	xys := make(plotter.XYs, len(runs))
	for i, run := range runs {
		vals[i] = run.MBPerSec
		labels[i] = fmt.Sprintf("%.0fk rec/s", run.RecordsPerSec/1000)
		xys[i] = plotter.XY{X: float64(i), Y: run.MBPerSec}
	}
	bars, err := plotter.NewBarChart(vals, vg.Centimeter)
	if err != nil {
		return nil, err
	}
	bars.Color = plotutil.Color(0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return nil, err
	}
	for i := range lbl.TextStyle {
		lbl.TextStyle[i].XAlign = draw.XCenter
		lbl.TextStyle[i].Font.Size = vg.Points(8)
	}
	lbl.Offset = vg.Point{Y: vg.Points(3)}
	p.Add(lbl)
	r.nominalX(p, runs)
	p.Y.Min = 0
	p.Y.Max *= 1.12 // room for the labels
	return p, nil
}

// latencyPlot draws p50, p99 and p99.9 per system as points on a log
// scale, since latencies of different systems differ by orders of
// magnitude (bars cannot start at zero on a log axis).
func (r *Report) latencyPlot(size int, mode string) (*plot.Plot, error) {
	runs := r.systemsIn(mode, size)
	p := plot.New()
	what := "at peak"
	if mode == HalfLoad {
		what = "at half our peak rate"
	}
	p.Title.Text = fmt.Sprintf("Produce-to-ack latency %s, %s", what, SizeLabel(size))
	if len(runs) == 0 {
		p.Title.Text += ": no runs"
		return p, nil
	}
	p.Y.Label.Text = "ms (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	const floor = 0.01 // ms; a log axis cannot show 0
	for k, q := range []struct {
		name  string
		get   func(Run) float64
		shape draw.GlyphDrawer
	}{
		{"p50", func(r Run) float64 { return r.P50ms }, draw.CircleGlyph{}},
		{"p99", func(r Run) float64 { return r.P99ms }, draw.TriangleGlyph{}},
		{"p99.9", func(r Run) float64 { return r.P999ms }, draw.SquareGlyph{}},
	} {
		xys := make(plotter.XYs, len(runs))
		for i, run := range runs {
			xys[i] = plotter.XY{X: float64(i) + 0.15*float64(k-1), Y: max(q.get(run), floor)}
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: plotutil.Color(k + 1), Radius: vg.Points(4), Shape: q.shape}
		p.Add(sc)
		p.Legend.Add(q.name, sc)
	}
	r.nominalX(p, runs)
	p.X.Min, p.X.Max = -0.5, float64(len(runs))-0.5
	p.Y.Max *= 3 // room for the legend
	return p, nil
}
