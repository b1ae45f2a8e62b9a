package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"
)

// Plot geometry, in SVG user units.
const (
	plotWidth   = 900
	panelHeight = 300
	marginLeft  = 70
	marginRight = 120 // the legend
	marginTop   = 30
	marginBot   = 40
)

// lineColors are the nodes' colours, in order.
var lineColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd"}

// Panel is one chart: a title and a line per series.
type Panel struct {
	Title  string
	Series []Series
}

// writeSVG draws panels one above the other, sharing the time axis.
func writeSVG(w io.Writer, title string, panels []Panel) error {
	var sb strings.Builder
	height := len(panels)*panelHeight + marginTop
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		plotWidth, height, plotWidth, height)
	fmt.Fprintf(&sb, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&sb, `<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`+"\n", marginLeft, html.EscapeString(title))
	var tmax time.Duration
	for _, p := range panels {
		for _, s := range p.Series {
			for _, pt := range s.Points {
				tmax = max(tmax, pt.At)
			}
		}
	}
	for i, p := range panels {
		drawPanel(&sb, p, marginTop+i*panelHeight, tmax)
	}
	sb.WriteString("</svg>\n")
	_, err := io.WriteString(w, sb.String())
	return err
}

// drawPanel draws one panel whose top edge is at y0.
func drawPanel(sb *strings.Builder, p Panel, y0 int, tmax time.Duration) {
	x0, x1 := float64(marginLeft), float64(plotWidth-marginRight)
	top, bot := float64(y0+marginTop), float64(y0+panelHeight-marginBot)
	var ymax float64
	for _, s := range p.Series {
		for _, pt := range s.Points {
			ymax = math.Max(ymax, pt.MiB)
		}
	}
	ystep := niceStep(ymax / 5)
	ymax = math.Max(ystep*math.Ceil(ymax/ystep), ystep)
	minutes := math.Max(tmax.Minutes(), 1.0/60)
	xstep := niceStep(minutes / 8)
	xOf := func(d time.Duration) float64 { return x0 + (x1-x0)*d.Minutes()/minutes }
	yOf := func(v float64) float64 { return bot - (bot-top)*v/ymax }

	fmt.Fprintf(sb, `<text x="%g" y="%g" font-weight="bold">%s</text>`+"\n", x0, top-8, html.EscapeString(p.Title))
	for v := 0.0; v <= ymax+ystep/2; v += ystep {
		y := yOf(v)
		fmt.Fprintf(sb, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/>`+"\n", x0, y, x1, y)
		fmt.Fprintf(sb, `<text x="%g" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-6, y+4, trimFloat(v))
	}
	for m := 0.0; m <= minutes+xstep/100; m += xstep {
		x := xOf(time.Duration(m * float64(time.Minute)))
		fmt.Fprintf(sb, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#999"/>`+"\n", x, bot, x, bot+4)
		fmt.Fprintf(sb, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n", x, bot+16, trimFloat(m))
	}
	fmt.Fprintf(sb, `<text x="%g" y="%g" text-anchor="middle">minutes</text>`+"\n", (x0+x1)/2, bot+32)
	fmt.Fprintf(sb, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`+"\n", x0, top, x1-x0, bot-top)
	for i, s := range p.Series {
		color, dash := lineColors[i%nodes%len(lineColors)], ""
		if s.Dashed {
			dash = ` stroke-dasharray="5,3"`
		}
		var pts []string
		for _, pt := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(pt.At), yOf(pt.MiB)))
		}
		fmt.Fprintf(sb, `<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="%s"/>`+"\n", color, dash, strings.Join(pts, " "))
		ly := top + 14 + float64(18*i)
		fmt.Fprintf(sb, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"%s/>`+"\n", x1+10, ly-4, x1+30, ly-4, color, dash)
		fmt.Fprintf(sb, `<text x="%g" y="%g">%s</text>`+"\n", x1+35, ly, html.EscapeString(s.Name))
	}
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*pow {
			return m * pow
		}
	}
	return 10 * pow
}

// trimFloat prints an axis label without needless decimals.
func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}
