package main

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

func TestSlope(t *testing.T) {
	var ps []Point
	for i := range 10 {
		ps = append(ps, Point{At: time.Duration(i) * time.Minute, MiB: 5 + 2*float64(i)})
	}
	got, ok := slope(ps)
	if !ok || math.Abs(got-2) > 1e-9 {
		t.Fatalf("slope = %v, %v; want 2", got, ok)
	}
	if _, ok := slope(ps[:1]); ok {
		t.Fatal("slope of one point fitted")
	}
	st := stats(Series{Points: ps})
	if st.First != 5 || st.Last != 23 || st.Max != 23 || !st.Fit || math.Abs(st.Slope-2) > 1e-9 {
		t.Fatalf("stats = %+v", st)
	}
}

func testSamples() []Sample {
	var out []Sample
	for i := range 4 {
		s := Sample{At: time.Duration(i) * 10 * time.Second, Phase: phaseSteady, Acked: uint64(100 * i)}
		for n := range nodes {
			s.RSS[n] = int64(n+1) << 20
			s.Disk[n] = int64(i) << 20
		}
		out = append(out, s)
	}
	return out
}

func TestCSV(t *testing.T) {
	var b bytes.Buffer
	if err := writeCSV(&b, testSamples()); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 || len(rows[0]) != 5+3*nodes || rows[4][0] != "30.00" || rows[4][3] != "300" || rows[4][11] != "3.00" {
		t.Fatalf("csv rows %v", rows)
	}
}

func TestSVGIsWellFormed(t *testing.T) {
	var b bytes.Buffer
	smp := testSamples()
	panels := []Panel{{Title: "disk <MiB>", Series: series(smp, diskOf)}, {Title: "RSS", Series: series(smp, rssOf)}}
	if err := writeSVG(&b, "soak & test", panels); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&b)
	lines := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	if lines != 2*nodes {
		t.Fatalf("%d polylines, want %d", lines, 2*nodes)
	}
}

func TestSummaryTable(t *testing.T) {
	out := summaryTable(testSamples())
	if strings.Count(out, "\n") != 1+3*nodes || !strings.Contains(out, "+6.00") {
		t.Fatalf("summary:\n%s", out)
	}
}

func TestParseOptions(t *testing.T) {
	o, err := parseOptions(nil, func(k string) string {
		if k == "SOAK_DURATION" {
			return "3m"
		}
		return ""
	})
	if err != nil || o.duration != 3*time.Minute || o.partitions != 6 || o.segmentBytes != 1<<20 || o.retention != time.Minute {
		t.Fatalf("options %+v, %v", o, err)
	}
	if _, err := parseOptions(nil, func(string) string { return "soon" }); err == nil {
		t.Fatal("SOAK_DURATION=soon accepted")
	}
}
